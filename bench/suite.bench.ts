/**
 * The benchmark suite: every case × competitor (cases.ts, competitors.ts)
 * on real PostgreSQL corpora (corpus.ts), in one process and one
 * Benchmark.js run per corpus. Writes bench/results/<corpus>.json and .svg.
 *
 *   npm run bench                     # default-scale corpora, BENCH_MAX_TIME (3 s)
 *   npm run bench:quick               # small proto1-text corpus, maxTime 0.3 s (CI)
 *   node --expose-gc build/bench/bench/suite.bench.js [capture files...]
 *       [--variants proto1-text,binary,...] [--scale default|small|<MB>]
 *       [--max-time S] [--quick] [--out DIR] [--cases kernel,lazy,...] [--paired N]
 *
 * After Benchmark.js, `--paired` rounds (default 5, quick 3, 0 for none):
 * per case every competitor does one pass per round in a rotated order;
 * targets use the median per-round ratios (see report.ts for why).
 *
 * Runs as tsc output under plain node (`npm run build:bench`): loaders such
 * as tsx turn every imported binding into a getter call and distort the
 * figures several times over.
 */
import Benchmark from "benchmark";
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { CASES, entries, type CaseName, type Entry } from "./cases.ts";
import { makeCompetitors, sink } from "./competitors.ts";
import { CHUNK, loadInput, type BenchInput } from "./input.ts";
import {
  gitState, machine, median, packages, printReport, repoRoot, resultRows, targets, type BenchReport, type Measured, type PairedTimes,
} from "./report.ts";
import { renderChart } from "./chart.ts";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    quick: { type: "boolean", default: false },
    variants: { type: "string" },
    scale: { type: "string" },
    "max-time": { type: "string" },
    out: { type: "string" },
    cases: { type: "string" },
    paired: { type: "string" },
  },
});

const quick = args.quick!;
const maxTime = Number(args["max-time"] ?? (quick ? "0.3" : (process.env.BENCH_MAX_TIME ?? "3")));
const scale = args.scale ?? (quick ? "small" : "default");
const variants = (args.variants ?? (quick ? "proto1-text" : "proto1-text,binary,proto2-stream,proto4-parallel")).split(",");
const outDir = path.resolve(args.out ?? path.join(repoRoot(), "bench", "results"));
const onlyCases = args.cases?.split(",") as CaseName[] | undefined;
const pairedRounds = Number(args.paired ?? (quick ? "3" : "5"));
const gc = (globalThis as { gc?: () => void }).gc;

Benchmark.options.maxTime = maxTime;

async function corpusFiles(): Promise<string[]> {
  if (positionals.length > 0) return positionals;
  const { ensureCorpus } = await import("../devkit/capture/corpus.ts");
  const files: string[] = [];
  for (const v of variants) files.push(await ensureCorpus(v as Parameters<typeof ensureCorpus>[0], { scale }));
  return files;
}

/**
 * One untimed pass per entry: checks every competitor sees every message
 * and warms V8 up (small corpora get a few passes). A competitor other
 * than ours that cannot decode the corpus is reported, not measured.
 */
function verify(input: BenchInput, list: Entry[], unsupported: BenchReport["unsupported"]): Entry[] {
  const passes = Math.min(5, Math.max(1, Math.ceil(200_000 / input.messages)));
  const ok: Entry[] = [];
  for (const e of list) {
    if (unsupported.some((u) => u.competitor === e.competitor)) continue;
    try {
      for (let i = 0; i < passes; i++) {
        const n = e.run();
        if (n !== input.messages) throw new Error(`${e.case}/${e.competitor} saw ${n} of ${input.messages} messages`);
      }
      ok.push(e);
    } catch (err) {
      if (e.competitor !== "pg-logical-replication") throw err;
      unsupported.push({ competitor: e.competitor, reason: err instanceof Error ? err.message : String(err) });
    }
  }
  return ok;
}

/**
 * Paired rounds: per case, each competitor runs once per round, the order
 * rotated every round. A turn repeats its pass enough times to last about
 * `turnSeconds` (from its Benchmark.js median), so short passes of a small
 * corpus are not dominated by timer and warm-up effects.
 */
function runPaired(list: Entry[], measured: readonly Measured[], rounds: number, turnSeconds: number): PairedTimes {
  const times: PairedTimes = new Map();
  for (const c of CASES) {
    const group = list.filter((e) => e.case === c);
    const reps = group.map((e) => {
      const m = measured.find((x) => x.case === e.case && x.competitor === e.competitor);
      const sec = m ? median(m.target.stats!.sample) : turnSeconds;
      return Math.max(1, Math.round(turnSeconds / sec));
    });
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < group.length; k++) {
        const j = (k + r) % group.length;
        const e = group[j]!;
        const t0 = performance.now();
        for (let i = 0; i < reps[j]!; i++) e.run();
        const s = (performance.now() - t0) / 1000 / reps[j]!;
        const key = `${e.case}/${e.competitor}`;
        if (!times.has(key)) times.set(key, []);
        times.get(key)!.push(s);
      }
    }
  }
  return times;
}

function notesFor(input: BenchInput, unsupported: BenchReport["unsupported"]): string[] {
  const notes = [
    "pg-logical-replication's parse() takes one whole message per call (as its service hands it XLogData payloads), so it is fed the corpus pre-split before timing; wasm, baseline and js-walk get the capture file in 64 KB chunks and keep unfinished frames across chunks.",
    "pg-logical-replication parses every value in parse(), so kernel, lazy and full cost it the same; its full figure uses pg's default type parsers (int8 and numeric as strings, timestamps as Date, json parsed).",
    "compat: every competitor emits pg-logical-replication's message objects through parse(buffer) per message; wasm/baseline are this package's drop-in plugin (bindings/compat) over that backend.",
  ];
  if (input.info?.options.binary === "true") {
    notes.push("binary corpus: pg-logical-replication does not parse binary-format columns (it hands out the raw bytes), so its full/compat figures do less work than ours (typed values).");
  }
  if (unsupported.length > 0) notes.push("ratios to pg-logical-replication are absent where it cannot decode the corpus (protocol 2+ streaming messages).");
  return notes;
}

function runCorpus(file: string): BenchReport {
  const input = loadInput(file);
  const competitors = makeCompetitors(input);
  const unsupported: BenchReport["unsupported"] = [];
  const chosen = entries(input, competitors).filter((e) => onlyCases === undefined || onlyCases.includes(e.case));
  console.log(`${input.name}: ${(input.messageBytes / 1e6).toFixed(1)} MB, ${input.messages} messages; verifying and warming up ${chosen.length} entries`);
  const list = verify(input, chosen, unsupported);

  const measured: Measured[] = [];
  const suite = new Benchmark.Suite(input.name);
  for (const e of list) {
    suite.add(`${e.case}/${e.competitor}`, e.run, {
      onStart: () => gc?.(),
      onComplete: (ev: Benchmark.Event) => {
        const t = ev.target;
        measured.push({ case: e.case, competitor: e.competitor, form: e.form, target: t, ...(e.output ? { outputBytes: e.output.bytes } : {}) });
        console.log(`  ${String(t)}`);
      },
    });
  }
  suite.run({ async: false });
  // Report in the fixed case order, whatever order Benchmark.js completed in.
  measured.sort((a, b) => CASES.indexOf(a.case) - CASES.indexOf(b.case));
  let paired: PairedTimes | undefined;
  if (pairedRounds > 0) {
    console.log(`  paired rounds: ${pairedRounds}`);
    paired = runPaired(list, measured, pairedRounds, quick ? 0.05 : 0.5);
  }

  const rows = resultRows(input, measured, paired);
  return {
    corpus: {
      name: input.name,
      variant: input.info?.variant,
      serverVersion: input.info?.serverVersion,
      options: input.info?.options,
      scale: input.info?.scale,
      messages: input.messages,
      messageBytes: input.messageBytes,
      frameBytes: input.frameBytes,
    },
    machine: machine(),
    packages: packages(),
    git: gitState(),
    settings: { maxTimeSeconds: maxTime, chunkBytes: CHUNK, pairedRounds: paired ? pairedRounds : 0, runner: `node ${process.version} (tsc output, no loader)${gc ? ", --expose-gc" : ""}` },
    date: new Date().toISOString(),
    results: rows,
    unsupported,
    targets: targets(rows, paired, input.name.startsWith("binary")),
    notes: notesFor(input, unsupported),
  };
}

const files = await corpusFiles();
mkdirSync(outDir, { recursive: true });
for (const file of files) {
  const report = runCorpus(file);
  printReport(report);
  const base = path.join(outDir, report.corpus.name);
  writeFileSync(`${base}.json`, JSON.stringify(report, null, 2) + "\n");
  writeFileSync(`${base}.svg`, renderChart(report));
  console.log(`wrote ${base}.json and ${base}.svg`);
  gc?.();
}
if (sink.value === 0.5) console.log(sink.value); // keeps the checksums observable
