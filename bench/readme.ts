/**
 * The README's `## Benchmarks` section, from the results files:
 *
 *   node build/bench/bench/readme.js [--write] [--results DIR] [corpus names...]
 *
 * Prints the section (or with --write replaces it in README.md, from its
 * heading to the next `## ` heading or the end, and writes the targets
 * table to bench/targets.md). Default corpora: every
 * bench/results/*.json of default scale, proto1-text first. Refuses (exit 1)
 * results measured on uncommitted changes.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import type { BenchReport, TableReport } from "./report.ts";
import { OUTPUT_TARGET_MB, repoRoot } from "./report.ts";

interface MemoryReport {
  corpus: { name: string; messageBytes: number };
  stream: { backend: string; path: string; seconds: number; baseRssMB: number; peakRssMB: number; rssGrowthMB: number; peakHeapMB: number; baseHeapMB: number; retainedHeapMB: number }[];
  alloc: { backend: string; path: string; bytesPerMessage: number; windowsUsed: number; windowsDiscarded: number; calibrationBytesPerObject: number }[];
  targets: { name: string; targetMB: number; measuredMB: number; met: boolean }[];
}

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { write: { type: "boolean", default: false }, results: { type: "string" } },
});
const dir = args.results ?? path.join(repoRoot(), "bench", "results");

const fmt = (x: number, d = 1) => x.toLocaleString("en", { minimumFractionDigits: d, maximumFractionDigits: d });
const ratio = (x: number | null) => (x === null ? "—" : `${fmt(x, 2)}×`);

function corpora(): string[] {
  if (positionals.length > 0) return positionals;
  const names = readdirSync(dir).filter((f) => f.endsWith("-default.json")).map((f) => f.replace(/\.json$/, ""));
  const order = ["proto1-text", "binary", "proto2-stream", "proto4-parallel"];
  return names.sort((a, b) => order.findIndex((o) => a.startsWith(o)) - order.findIndex((o) => b.startsWith(o)));
}

/**
 * The README states which commit its figures are of, so every results file
 * must come from the same committed tree: a run on uncommitted changes (or
 * outside git) measured code nobody can check out.
 */
function refuseUnlessCommitted(names: readonly string[], reports: readonly BenchReport[]): void {
  const problems = reports.flatMap((r, i) =>
    r.git === undefined ? [`${names[i]}: not measured in a git checkout`] : r.git.dirty ? [`${names[i]}: measured at ${r.git.commit} with uncommitted changes`] : [],
  );
  const commits = [...new Set(reports.map((r) => r.git?.commit))];
  if (problems.length === 0 && commits.length > 1) problems.push(`the results come from different commits (${commits.join(", ")})`);
  if (problems.length > 0) {
    console.error(`bench/readme: refusing to write figures of code nobody can check out:\n  ${problems.join("\n  ")}\nCommit, then run \`npm run bench\` on the clean tree.`);
    process.exit(1);
  }
}

function table(r: BenchReport): string[] {
  const out = [
    "| case | competitor | input | MB/s | output MB/s | messages/s | ±% | × pg-logical-replication | × baseline | paired × p-l-r | paired × baseline |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const x of r.results) {
    out.push(
      `| ${x.case} | ${x.competitor} | ${x.form} | ${fmt(x.mbPerSec)} | ${x.outputMbPerSec === undefined ? "—" : fmt(x.outputMbPerSec)} | ` +
        `${Math.round(x.messagesPerSec).toLocaleString("en")} | ${fmt(x.rme)} | ` +
        `${ratio(x.vsPgLogicalReplication)} | ${ratio(x.vsBaseline)} | ${ratio(x.paired?.vsPgLogicalReplication ?? null)} | ${ratio(x.paired?.vsBaseline ?? null)} |`,
    );
  }
  return out;
}

/** The targets tables, written to bench/targets.md beside the README's section. */
const targets: string[] = [
  "# Benchmark targets",
  "",
  "Judged on the paired ratios of the README's run (Benchmark.js's block-by-block ratio beside them), per corpus;",
  "pg-logical-replication decodes protocol 1 only, so its ratios exist on the text and binary corpora alone.",
  "Written by `node build/bench/bench/readme.js --write`.",
];

/** Enough decimals that a figure just short of its target does not print as the target. */
function short(v: number, target: number, digits = 2): string {
  let d = digits;
  while (d < 5 && v < target && fmt(v, d) === fmt(target, d)) d++;
  return fmt(v, d);
}

/** One corpus's targets: its ratios, and the JSON Lines kernel's output rate. */
function targetTable(r: BenchReport): void {
  const x = (v: number | null, target: number) => (v === null ? "—" : `${short(v, target)}×`);
  const met = (m: boolean) => (m ? "met" : "not met");
  targets.push("", `## ${r.corpus.name} (commit ${r.git!.commit})`, "", "| target | wanted | paired | Benchmark.js | |", "|---|---:|---:|---:|---|");
  // A ratio to a competitor that cannot decode the corpus is not a target there.
  for (const t of r.targets.filter((y) => y.measured !== null)) targets.push(`| ${t.name} | ≥ ${t.target}× | ${x(t.paired, t.target)} | ${x(t.benchmarkJs, t.target)} | ${met(t.met!)} |`);
  const out = r.results.find((y) => y.case === "jsonl" && y.competitor === "wasm")?.outputMbPerSec;
  if (out !== undefined) {
    targets.push(`| jsonl: wasm output, MB/s written | ≥ ${OUTPUT_TARGET_MB} | — | ${short(out, OUTPUT_TARGET_MB, 1)} | ${met(out >= OUTPUT_TARGET_MB)} |`);
  }
}

/** The benches' own tables (report.ts TableReport), in this order, those that were run. */
const TABLES = ["pipeline", "formats", "sinks", "end-to-end"];

function tableReports(): TableReport[] {
  const reports = TABLES.map((n) => path.join(dir, `${n}.table.json`)).filter((f) => existsSync(f)).map((f) => JSON.parse(readFileSync(f, "utf8")) as TableReport);
  const dirty = reports.filter((t) => t.git === undefined || t.git.dirty);
  if (dirty.length > 0) {
    console.error(`bench/readme: refusing tables measured on uncommitted changes: ${dirty.map((t) => t.title).join(", ")}`);
    process.exit(1);
  }
  return reports;
}

/** A bench's table: its paragraphs, the table, the commit and command that measured it; its targets go to bench/targets.md. */
function benchTable(t: TableReport): string[] {
  const lines = [`### ${t.title}`, "", ...t.about, "", `| ${t.columns.join(" | ")} |`, `|${t.columns.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`];
  for (const r of t.rows) lines.push(`| ${r.join(" | ")} |`);
  lines.push("", `Measured at commit ${t.git!.commit} (${t.machine.cpu}, ${t.machine.cores} cores): \`${t.command}\`.`, "");
  if (t.targets.length > 0) {
    targets.push("", `## ${t.title} (commit ${t.git!.commit})`, "", "| target | wanted | measured | |", "|---|---:|---:|---|");
    for (const x of t.targets) {
      const value = x.unit === "×" ? `${short(x.measured, x.target)}×` : `${short(x.measured, x.target, 1)} ${x.unit}`;
      targets.push(`| ${x.name} | ${x.atMost ? "≤" : "≥"} ${x.target}${x.unit === "×" ? "×" : ` ${x.unit}`} | ${value} | ${x.met ? "met" : "not met"} |`);
    }
  }
  return lines;
}

function section(): string {
  const names = corpora();
  const reports = names.map((n) => JSON.parse(readFileSync(path.join(dir, `${n}.json`), "utf8")) as BenchReport);
  refuseUnlessCommitted(names, reports);
  const main = reports[0]!;
  const m = main.machine;
  const p = main.packages;
  const lines: string[] = [
    "## Benchmarks",
    "",
    "Throughput of decoding real pgoutput streams captured from PostgreSQL (`devkit/capture/corpus.ts`: OLTP single-row",
    "transactions, bulk inserts into a 20-column table of mixed types, 10-100 KB documents with TOAST and",
    "unchanged-TOAST updates, a REPLICA IDENTITY FULL table, truncates and logical messages; about 190 MB of messages",
    "per corpus). Every competitor runs in the same process and the same Benchmark.js run; one op decodes the whole",
    "corpus. MB/s (of message bytes) are medians of Benchmark.js's samples, ±% its relative margin of error. Benchmark.js",
    "runs one competitor after another, and on a shared machine a burst of load can land on one block and not the",
    "other, so the suite also runs paired rounds (each competitor one turn per round, order rotated; ratio = median of",
    "per-round ratios): the `paired` columns, which the targets use.",
    "",
    "- **kernel**: decode only (ours: `push()` per 64 KB chunk and count the messages).",
    "- **lazy**: per message its kind; per change also the relation name and one column's typed value.",
    "- **full**: every field of every message and every column's typed value (`tuple.value(i)`) of the new and old rows.",
    "- **compat**: pg-logical-replication's message objects, from its `PgoutputPlugin.parse()` and from this package's drop-in plugin (`bindings/compat`) over each backend.",
    "- **jsonl**: the JSON Lines bytes of `decode --changes` (`changesToJsonLines`); `js-formatter` is the CLI's former formatter; pg-logical-replication's figure is its `parse()` of every message, what its users pay before writing any JSON. Output MB/s is reported beside the input MB/s.",
    "",
    "Competitors: `wasm` (`WasmDecoder`), `baseline` (`BaselineDecoder`, pure TS), `pg-logical-replication`",
    `${p["pg-logical-replication"]} (\`PgoutputPlugin.parse(buffer)\`, its public entry, with \`pg\` ${p.pg}'s default type parsers), and`,
    "`js-walk`, a plain-JS structural walk (every tag, every column's kind and length, no strings) as the floor for",
    "`kernel`. Ours and the walk are fed the capture file in 64 KB chunks as from a socket; pg-logical-replication's",
    "`parse()` takes one whole message per call, so it gets the messages pre-split (splitting untimed), and so does",
    "the compat case for everyone. It decodes protocol 1 only: on streaming corpora it is not measured.",
    "",
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGB} GB, ${m.os}; Node ${m.node} (V8 ${m.v8}); shared and noisy (other`,
    `jobs ran alongside), so read the ratios, not the absolute rates. Versions: pgoutput-wasm ${p["pgoutput-wasm"]}` +
      ` (commit ${main.git!.commit}), pg-logical-replication ${p["pg-logical-replication"]},`,
    `pg ${p.pg}, benchmark ${p.benchmark}, assemblyscript ${p.assemblyscript}; maxTime ${main.settings.maxTimeSeconds} s per case. Run: \`npm run bench\``,
    "(all corpora, memory, then `decode --changes` and the formats on the text corpus; `BENCH_MAX_TIME` sets maxTime), `npm run bench:e2e`",
    "(the streaming client and the sinks: a real walsender, real brokers) or `npm run bench:quick` (small corpus, CI).",
    "Results: `bench/results/<corpus>.json`; chart: `node build/bench/bench/chart.js bench/results/<corpus>.json`.",
    "",
  ];
  for (const r of reports) {
    const c = r.corpus;
    lines.push(`### ${c.name} (${fmt(c.messageBytes / 1e6, 0)} MB, ${c.messages.toLocaleString("en")} messages${c.serverVersion ? `, PostgreSQL ${c.serverVersion.split(" ")[0]}` : ""})`, "");
    if (existsSync(path.join(dir, `${c.name}.svg`))) lines.push(`![${c.name} throughput](bench/results/${c.name}.svg)`, "");
    lines.push(...table(r), "");
    for (const u of r.unsupported) lines.push(`${u.competitor} cannot decode this corpus: \`${u.reason}\`.`, "");
    for (const n of r.notes) if (n.startsWith("binary corpus")) lines.push(`Note: ${n.replace(/^binary corpus: /, "")}`, "");
    if (r === main) lines.push("The targets, judged on the paired ratios of this run, on every corpus and of the benches below: [bench/targets.md](bench/targets.md).", "");
    targetTable(r);
  }
  for (const t of tableReports()) lines.push(...benchTable(t));
  const memFile = path.join(dir, `${main.corpus.name}.memory.json`);
  if (existsSync(memFile)) {
    const mem = JSON.parse(readFileSync(memFile, "utf8")) as MemoryReport;
    lines.push(
      `### Memory (${mem.corpus.name})`,
      "",
      "`bench/memory.bench.ts`: each run in a fresh `node --expose-gc` process, the corpus streamed from disk in 64 KB",
      "chunks and consumed chunk by chunk; RSS and heap sampled every 50 ms. Growth = peak RSS − RSS after setup.",
      "",
      "| backend / path | seconds | RSS base → peak (MB) | RSS growth (MB) | heap peak (MB) | heap retained (MB) |",
      "|---|---:|---:|---:|---:|---:|",
    );
    for (const s of mem.stream) {
      lines.push(`| ${s.backend} / ${s.backend === "pg-logical-replication" ? "parse" : s.path} | ${fmt(s.seconds)} | ${fmt(s.baseRssMB, 0)} → ${fmt(s.peakRssMB, 0)} | ${fmt(s.rssGrowthMB)} | ${fmt(s.peakHeapMB)} | ${fmt(s.retainedHeapMB, 2)} |`);
    }
    const worst = Math.max(...mem.targets.map((t) => t.measuredMB));
    const allMet = mem.targets.every((t) => t.met);
    lines.push(
      "",
      `Target: RSS growth < 64 MB while streaming the ${fmt(mem.corpus.messageBytes / 1e6, 0)} MB corpus: ${allMet ? "met" : "not met"} ` +
        `for ${allMet ? "every" : "some"} backend and path (largest growth ${fmt(worst)} MB). pg-logical-replication is shown for reference.`,
    );
    lines.push(
      "",
      "Bytes allocated on the JS heap per message (`v8.getHeapStatistics().used_heap_size` around each chunk's",
      "push and touch after warm-up; windows with a GC discarded; checked against a known allocation):",
      "",
      "| backend / path | bytes per message |",
      "|---|---:|",
    );
    for (const a of mem.alloc) lines.push(`| ${a.backend} / ${a.path} | ${fmt(a.bytesPerMessage)} |`);
    lines.push("");
  }
  return lines.join("\n");
}

const text = section();
if (args.write) {
  const readme = path.join(repoRoot(), "README.md");
  const old = readFileSync(readme, "utf8");
  const start = old.indexOf("\n## Benchmarks\n");
  let next: string;
  if (start < 0) next = old.replace(/\n*$/, "\n\n") + text;
  else {
    const after = old.indexOf("\n## ", start + 1);
    next = old.slice(0, start + 1) + text + (after < 0 ? "" : "\n" + old.slice(after + 1));
  }
  writeFileSync(readme, next.replace(/\n*$/, "\n"));
  const targetsFile = path.join(repoRoot(), "bench", "targets.md");
  writeFileSync(targetsFile, targets.join("\n") + "\n");
  console.log(`updated ${readme} and ${targetsFile}`);
} else {
  process.stdout.write(text + "\n");
}
