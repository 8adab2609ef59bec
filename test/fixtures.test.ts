// The golden captures in test/fixtures (made by scripts/capture-fixtures.ts
// from real PostgreSQL 15 and 18): each decodes with both backends to the same
// messages — deep-equal materialize() and identical toJSON() strings — whether
// the whole file goes through decodeFramed(), is pushed in 64 KB or in 7-byte
// chunks, or its messages go through decodeBatch(); the message count and
// kinds are index.json's; and the content is what the capture recorded in
// index.json's `expected` (devkit/capture/expect-scenario.ts).

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import { backend, backends, onceAcrossBackends } from "./support/backends.ts";
import { checkScenario } from "../devkit/capture/expect-scenario.ts";
import { decodeCapture } from "../devkit/capture/slot.ts";

interface FixtureEntry {
  file: string;
  scenario: string;
  major: number;
  messageCount: number;
  messageBytes: number;
  /** Tag letters in order, a run of n > 1 equal tags written as X*n. */
  tags: string;
  expected: any;
}

const dir = fileURLToPath(new URL("./fixtures/", import.meta.url));
const index = JSON.parse(readFileSync(`${dir}index.json`, "utf8")) as { fixtures: FixtureEntry[] };

const TAG: Record<string, string> = {
  Begin: "B", Commit: "C", Origin: "O", Message: "M", Relation: "R", Type: "Y", Insert: "I", Update: "U", Delete: "D",
  Truncate: "T", StreamStart: "S", StreamStop: "E", StreamCommit: "c", StreamAbort: "A", BeginPrepare: "b", Prepare: "P",
  CommitPrepared: "K", RollbackPrepared: "r", StreamPrepare: "p",
};

function expandTags(s: string): string {
  return s.replace(/(.)\*(\d+)/g, (_, t: string, n: string) => t.repeat(Number(n)));
}

function raw(entry: FixtureEntry): Uint8Array {
  const z = gunzipSync(readFileSync(`${dir}${entry.file}`));
  return new Uint8Array(z.buffer, z.byteOffset, z.byteLength);
}

interface Decoded {
  materialized: Record<string, unknown>[];
  json: string[];
}

function collect(into: Decoded, batch: Iterable<PgoutputMessage>): void {
  for (const m of batch) {
    into.materialized.push(m.materialize());
    into.json.push(JSON.stringify(m.toJSON()));
  }
}

function viaFramed(d: PgoutputDecoder, bytes: Uint8Array): Decoded {
  const out: Decoded = { materialized: [], json: [] };
  const batch = d.decodeFramed(bytes);
  expect(batch.consumed, "decodeFramed consumed every byte").toBe(bytes.length);
  collect(out, batch);
  expect(batch.materialize()).toEqual(out.materialized);
  return out;
}

function viaPush(d: PgoutputDecoder, bytes: Uint8Array, chunk: number): Decoded {
  const out: Decoded = { materialized: [], json: [] };
  for (let off = 0; off < bytes.length; off += chunk) collect(out, d.push(bytes.subarray(off, off + chunk)));
  d.end();
  return out;
}

function viaBatch(d: PgoutputDecoder, bytes: Uint8Array): Decoded {
  const out: Decoded = { materialized: [], json: [] };
  collect(out, d.decodeBatch(decodeCapture(bytes)));
  return out;
}

describe.each(index.fixtures.map((f) => [f.file, f] as const))("%s", (_file, entry) => {
  const bytes = raw(entry);
  const frames = decodeCapture(bytes);

  if (onceAcrossBackends) it("is what index.json says", () => {
    expect(frames.length).toBe(entry.messageCount);
    expect(frames.reduce((n, f) => n + f.length, 0)).toBe(entry.messageBytes);
    expect(frames.map((f) => String.fromCharCode(f[0]!)).join("")).toBe(expandTags(entry.tags));
  });

  if (onceAcrossBackends) it("decodes identically with both backends: decodeFramed, push in 64 KB and 7-byte chunks, decodeBatch", async () => {
    const results: { name: string; path: string; decoded: Decoded }[] = [];
    for (const each of backends) {
      results.push({ name: each.name, path: "decodeFramed", decoded: viaFramed(await each.create(), bytes) });
      results.push({ name: each.name, path: "push 64 KB", decoded: viaPush(await each.create(), bytes, 64 * 1024) });
      results.push({ name: each.name, path: "push 7 B", decoded: viaPush(await each.create(), bytes, 7) });
      results.push({ name: each.name, path: "decodeBatch", decoded: viaBatch(await each.create(), bytes) });
    }
    const ref = results[0]!;
    expect(ref.decoded.materialized.length).toBe(entry.messageCount);
    expect(ref.decoded.materialized.map((m) => TAG[m.kind as string]).join("")).toBe(expandTags(entry.tags));
    for (const r of results.slice(1)) {
      const what = `${r.name} ${r.path} vs ${ref.name} ${ref.path}`;
      expect(r.decoded.materialized.length, what).toBe(entry.messageCount);
      expect(r.decoded.materialized, what).toEqual(ref.decoded.materialized);
      expect(r.decoded.json, what).toEqual(ref.decoded.json);
    }
  });

  it(`${backend.name}: content matches the recorded expected`, async () => {
    const d = await backend.create();
    const batch = d.decodeFramed(bytes);
    expect(batch.length).toBe(entry.messageCount);
    checkScenario(
      { scenario: entry.scenario, major: entry.major, expected: entry.expected, label: `${entry.file} ${backend.name}` },
      batch as Iterable<PgoutputMessage>,
      d,
    );
  });
});
