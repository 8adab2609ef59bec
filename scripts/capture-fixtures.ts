// Captures every scenario of devkit/capture/scenarios.ts on PostgreSQL 15 and
// 18 into test/fixtures/:
//   pg<major>-<scenario>.bin.gz  gzipped capture ([uint32 BE length][message]...)
//   index.json                   what each file holds, with the scenario's
//                                `expected` (see scenarios.ts for its shape)
//
// Run: npx tsx scripts/capture-fixtures.ts [scenario ...]
// (with names, only those scenarios are captured again; index.json keeps the others)

import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { decodeCapture, encodeCapture } from "../devkit/capture/slot.ts";
import { scenarios } from "../devkit/capture/scenarios.ts";

const MAJORS: PgMajor[] = [15, 18];
const fixturesDir = fileURLToPath(new URL("../test/fixtures/", import.meta.url));

export interface FixtureEntry {
  file: string;
  scenario: string;
  description: string;
  major: PgMajor;
  serverVersion: string;
  options: Record<string, string>;
  twoPhaseSlot: boolean;
  messageCount: number;
  /** Bytes of all messages (without the 4-byte length prefixes). */
  messageBytes: number;
  gzipBytes: number;
  /** Message tags in order, runs of one tag written as X*n. */
  tags: string;
  expected: unknown;
}

export interface FixtureIndex {
  format: string;
  generatedBy: string;
  fixtures: FixtureEntry[];
}

function runLengthTags(messages: Uint8Array[]): string {
  const t = messages.map((m) => String.fromCharCode(m[0]!)).join("");
  return t.replace(/(.)\1{3,}/g, (run, c: string) => `${c}*${run.length}`);
}

async function captureOn(c: Cluster, only: Set<string>): Promise<FixtureEntry[]> {
  const out: FixtureEntry[] = [];
  for (const s of scenarios) {
    if (!s.majors.includes(c.major) || (only.size > 0 && !only.has(s.name))) continue;
    const t0 = performance.now();
    const r = await s.run(c);
    const messages = r.rows.map((x) => x.data);
    const gz = gzipSync(encodeCapture(messages), { level: 9 });
    // Paranoia: the file must read back to the very same messages.
    const back = decodeCapture(new Uint8Array(gz.buffer, gz.byteOffset, gz.byteLength));
    if (back.length !== messages.length || back.some((m, i) => !Buffer.from(m).equals(messages[i]!))) {
      throw new Error(`capture of ${s.name} on ${c.major} does not round-trip`);
    }
    const file = `pg${c.major}-${s.name}.bin.gz`;
    fs.writeFileSync(path.join(fixturesDir, file), gz);
    out.push({
      file,
      scenario: s.name,
      description: s.description,
      major: c.major,
      serverVersion: c.version,
      options: r.options,
      twoPhaseSlot: r.twoPhase,
      messageCount: messages.length,
      messageBytes: messages.reduce((n, m) => n + m.length, 0),
      gzipBytes: gz.length,
      tags: runLengthTags(messages),
      expected: r.expected,
    });
    console.log(`pg${c.major} ${s.name.padEnd(17)} ${String(messages.length).padStart(5)} messages ${String(gz.length).padStart(7)} B gz  ${Math.round(performance.now() - t0)} ms`);
  }
  return out;
}

async function main(): Promise<void> {
  const only = new Set(process.argv.slice(2));
  for (const n of only) if (!scenarios.some((s) => s.name === n)) throw new Error(`no scenario ${n}`);
  fs.mkdirSync(fixturesDir, { recursive: true });
  const t0 = performance.now();
  const clusters = await Promise.all(MAJORS.map((m) => startCluster(m)));
  console.log(`started ${clusters.map((c) => `PostgreSQL ${c.version}`).join(", ")} in ${Math.round(performance.now() - t0)} ms`);
  let entries: FixtureEntry[];
  try {
    entries = (await Promise.all(clusters.map((c) => captureOn(c, only)))).flat();
  } finally {
    await Promise.all(clusters.map((c) => c.stop()));
  }

  const indexPath = path.join(fixturesDir, "index.json");
  if (only.size > 0 && fs.existsSync(indexPath)) {
    const old = JSON.parse(fs.readFileSync(indexPath, "utf8")) as FixtureIndex;
    const fresh = new Set(entries.map((e) => e.file));
    entries = [...old.fixtures.filter((e) => !fresh.has(e.file)), ...entries];
  }
  const order = (e: FixtureEntry) => MAJORS.indexOf(e.major) * 1000 + scenarios.findIndex((s) => s.name === e.scenario);
  entries.sort((a, b) => order(a) - order(b));

  // Drop capture files no scenario produces any more.
  const keep = new Set(entries.map((e) => e.file));
  for (const f of fs.readdirSync(fixturesDir)) {
    if (/^pg\d+-.+\.bin\.gz$/.test(f) && !keep.has(f)) fs.rmSync(path.join(fixturesDir, f));
  }

  const index: FixtureIndex = {
    format: "gzip of repeated [uint32 big-endian length][pgoutput message]; read with decodeCapture() from devkit/capture/slot.ts",
    generatedBy: "npx tsx scripts/capture-fixtures.ts",
    fixtures: entries,
  };
  // One line per fixture: readable enough, and a third of the indented size
  // (the 1,600-column relation alone is 1,600 column descriptions).
  const head = JSON.stringify({ format: index.format, generatedBy: index.generatedBy }, null, 1).replace(/\n}$/, "");
  fs.writeFileSync(indexPath, `${head},\n "fixtures": [\n${entries.map((e) => `  ${JSON.stringify(e)}`).join(",\n")}\n ]\n}\n`);
  const total = entries.reduce((n, e) => n + e.gzipBytes, 0) + fs.statSync(indexPath).size;
  console.log(`wrote ${entries.length} captures and index.json to ${path.relative(process.cwd(), fixturesDir) || "."} (${(total / 1024).toFixed(0)} KiB in all) in ${Math.round(performance.now() - t0)} ms`);
}

await main();
