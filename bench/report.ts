/**
 * Benchmark results: the machine-readable form written to
 * bench/results/<corpus>.json, the console table, and the targets.
 *
 * Rates come from the median of Benchmark.js's samples (seconds per corpus
 * pass): on a shared 2-core machine the median resists the odd slow sample
 * better than the mean. `hz` (Benchmark.js's mean rate) and the relative
 * margin of error (`rme`, % of the mean at 95% confidence) are kept beside it.
 * MB/s counts message bytes (the 4-byte frame lengths excluded), so every
 * competitor is measured against the same bytes whatever form it is fed.
 *
 * Benchmark.js measures one competitor after another, so a burst of load
 * from other jobs lands on some competitors and not others, and ratios
 * between its blocks swing by tens of percent on a shared machine. The
 * suite therefore also runs paired rounds (`paired`): per case, every
 * competitor does one pass per round, in an order rotated each round; the
 * ratio of two competitors is the median over rounds of their per-round
 * ratio. Load that lasts a round hits both sides of each ratio alike. The
 * targets use the paired ratios when they were measured.
 */
import { execSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import type Benchmark from "benchmark";
import type { CaseName } from "./cases.ts";
import type { CompetitorId, InputForm } from "./competitors.ts";
import type { BenchInput } from "./input.ts";

export interface Machine {
  os: string;
  cpu: string;
  cores: number;
  memoryGB: number;
  node: string;
  v8: string;
}

export interface ResultRow {
  case: CaseName;
  competitor: CompetitorId;
  form: InputForm;
  /** Megabytes (1e6) of message bytes per second, from the median sample. */
  mbPerSec: number;
  /** Messages per second, from the median sample. */
  messagesPerSec: number;
  /** Megabytes (1e6) of output per second (the jsonl case's JSON Lines), from the median sample. */
  outputMbPerSec?: number;
  /** Median seconds per corpus pass. */
  medianSeconds: number;
  /** Benchmark.js's mean rate (corpus passes per second). */
  hz: number;
  /** Relative margin of error, % (95% confidence). */
  rme: number;
  samples: number;
  /** Rate ÷ pg-logical-replication's in the same case (null where it cannot decode the corpus). */
  vsPgLogicalReplication: number | null;
  /** Rate ÷ the baseline's in the same case (null without one, e.g. js-walk). */
  vsBaseline: number | null;
  /** The same two ratios from the paired rounds (median of per-round ratios), when run. */
  paired?: { vsPgLogicalReplication: number | null; vsBaseline: number | null; rounds: number };
}

/** Seconds per pass of each competitor in each paired round of one case. */
export type PairedTimes = Map<string, number[]>;

export interface TargetResult {
  name: string;
  /** The ratio asked for (≥). */
  target: number;
  /** The ratio judged: the paired one when measured, else Benchmark.js's; null when a side was not measured. */
  measured: number | null;
  /** From Benchmark.js's median rates. */
  benchmarkJs: number | null;
  /** From the paired rounds. */
  paired: number | null;
  met: boolean | null;
}

export interface BenchReport {
  corpus: {
    name: string;
    variant: string | undefined;
    serverVersion: string | undefined;
    options: Record<string, string> | undefined;
    scale: string | undefined;
    messages: number;
    messageBytes: number;
    frameBytes: number;
  };
  machine: Machine;
  packages: Record<string, string>;
  git: { commit: string; dirty: boolean } | undefined;
  settings: { maxTimeSeconds: number; chunkBytes: number; pairedRounds: number; runner: string };
  date: string;
  results: ResultRow[];
  /** Competitors that could not decode this corpus, and why. */
  unsupported: { competitor: CompetitorId; reason: string }[];
  targets: TargetResult[];
  notes: string[];
}

const ROOT = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, "package.json")) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
})();

export const repoRoot = (): string => ROOT;

export function machine(): Machine {
  const cpus = os.cpus();
  return {
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    cpu: cpus[0]?.model.trim() ?? "unknown",
    cores: cpus.length,
    memoryGB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    v8: process.versions.v8,
  };
}

function versionOf(pkg: string): string {
  try {
    const file = pkg === "." ? path.join(ROOT, "package.json") : path.join(ROOT, "node_modules", pkg, "package.json");
    return (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

export function packages(): Record<string, string> {
  return {
    "pgoutput-wasm": versionOf("."),
    "pg-logical-replication": versionOf("pg-logical-replication"),
    pg: versionOf("pg"),
    "pg-types": versionOf("pg-types"),
    benchmark: versionOf("benchmark"),
    assemblyscript: versionOf("assemblyscript"),
    typescript: versionOf("typescript"),
  };
}

export function gitState(): { commit: string; dirty: boolean } | undefined {
  try {
    const commit = execSync("git rev-parse --short HEAD", { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] }).toString().trim();
    // bench/results is what this run writes (after its first corpus): not a change to the code measured.
    const dirty = execSync("git status --porcelain -- . ':(exclude)bench/results'", { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] }).toString().trim() !== "";
    return { commit, dirty };
  } catch {
    return undefined;
  }
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export interface Measured {
  case: CaseName;
  competitor: CompetitorId;
  form: InputForm;
  target: Benchmark.Target;
  /** Bytes of output per pass (cases that write some). */
  outputBytes?: number;
}

/** Result rows with rates and ratios, in the order measured; `paired` maps `case/competitor` to its per-round seconds. */
export function resultRows(input: BenchInput, measured: readonly Measured[], paired?: PairedTimes): ResultRow[] {
  const rows: ResultRow[] = measured.map((m) => {
    const stats = m.target.stats!;
    const med = median(stats.sample);
    return {
      case: m.case,
      competitor: m.competitor,
      form: m.form,
      mbPerSec: input.messageBytes / 1e6 / med,
      messagesPerSec: input.messages / med,
      ...(m.outputBytes === undefined ? {} : { outputMbPerSec: m.outputBytes / 1e6 / med }),
      medianSeconds: med,
      hz: m.target.hz!,
      rme: stats.rme,
      samples: stats.sample.length,
      vsPgLogicalReplication: null,
      vsBaseline: null,
    };
  });
  for (const r of rows) {
    const plr = rows.find((o) => o.case === r.case && o.competitor === "pg-logical-replication");
    const base = rows.find((o) => o.case === r.case && o.competitor === "baseline");
    r.vsPgLogicalReplication = plr ? r.mbPerSec / plr.mbPerSec : null;
    r.vsBaseline = base ? r.mbPerSec / base.mbPerSec : null;
    if (paired?.has(`${r.case}/${r.competitor}`)) {
      r.paired = {
        vsPgLogicalReplication: pairedRatio(paired, r.case, r.competitor, "pg-logical-replication"),
        vsBaseline: pairedRatio(paired, r.case, r.competitor, "baseline"),
        rounds: paired.get(`${r.case}/${r.competitor}`)!.length,
      };
    }
  }
  return rows;
}

/** Median over rounds of (b's seconds ÷ a's seconds): how many times faster a is than b. */
export function pairedRatio(paired: PairedTimes, c: string, a: string, b: string): number | null {
  const ta = paired.get(`${c}/${a}`);
  const tb = paired.get(`${c}/${b}`);
  if (ta === undefined || tb === undefined || ta.length === 0 || ta.length !== tb.length) return null;
  return median(ta.map((t, i) => tb[i]! / t));
}

/**
 * Issue 13's targets. The drop-in (`compat`) and `full` targets are lower
 * on binary corpora, where pg-logical-replication's own parsing is cheaper.
 * The wasm ÷ baseline targets compare the same algorithm in two languages
 * (the baseline is the kernel's source built by tsc).
 */
function targetList(binary: boolean): { name: string; case: CaseName; a: CompetitorId; b: CompetitorId; target: number }[] {
  return [
    { name: "full: wasm ÷ pg-logical-replication", case: "full", a: "wasm", b: "pg-logical-replication", target: binary ? 3 : 6 },
    { name: "compat: wasm ÷ pg-logical-replication", case: "compat", a: "wasm", b: "pg-logical-replication", target: binary ? 1.5 : 3 },
    { name: "lazy: wasm ÷ pg-logical-replication", case: "lazy", a: "wasm", b: "pg-logical-replication", target: 20 },
    { name: "kernel: wasm ÷ js-walk", case: "kernel", a: "wasm", b: "js-walk", target: 1 },
    { name: "full: wasm ÷ baseline", case: "full", a: "wasm", b: "baseline", target: 2 },
    { name: "lazy: wasm ÷ baseline", case: "lazy", a: "wasm", b: "baseline", target: 3 },
    { name: "jsonl: wasm ÷ js-formatter", case: "jsonl", a: "wasm", b: "js-formatter", target: 20 },
    { name: "jsonl: wasm ÷ baseline", case: "jsonl", a: "wasm", b: "baseline", target: 3 },
    { name: "jsonl: wasm ÷ pg-logical-replication", case: "jsonl", a: "wasm", b: "pg-logical-replication", target: 4 },
  ];
}

/** Issue 24's rate target: the JSON Lines kernel's output, in MB/s of bytes written (wasm). */
export const OUTPUT_TARGET_MB = 600;

/** The issue's speed targets, from one run (RSS is memory.bench.ts's): paired ratios where measured. */
export function targets(rows: readonly ResultRow[], paired: PairedTimes | undefined, binary: boolean): TargetResult[] {
  return targetList(binary).map((t) => {
    const a = rows.find((r) => r.case === t.case && r.competitor === t.a);
    const b = rows.find((r) => r.case === t.case && r.competitor === t.b);
    const benchmarkJs = a && b ? a.mbPerSec / b.mbPerSec : null;
    const p = paired && a && b ? pairedRatio(paired, t.case, t.a, t.b) : null;
    const measured = p ?? benchmarkJs;
    return { name: t.name, target: t.target, measured, benchmarkJs, paired: p, met: measured === null ? null : measured >= t.target };
  });
}

const fmt = (x: number, digits = 1) => x.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (x: number | null) => (x === null ? "—" : `${fmt(x, 2)}×`);

/**
 * A bench's table for the README's report (readme.ts), beside the suite's:
 * `bench/results/<name>.table.json`, written by the benches that measure
 * one thing end to end (the pipeline, the formats, the sinks, the
 * streaming client), each from its own run.
 */
export interface TableReport {
  title: string;
  /** Paragraphs before the table: what is measured, how. */
  about: string[];
  /** The command that measured it. */
  command: string;
  git: { commit: string; dirty: boolean } | undefined;
  machine: Machine;
  date: string;
  columns: string[];
  rows: string[][];
  /** Targets judged on this run (a ratio or a rate; `atMost`: lower is better). */
  targets: { name: string; target: number; measured: number; unit: string; atMost?: boolean; met: boolean }[];
}

/** Writes a TableReport to bench/results/<name>.table.json (or `file`). */
export function writeTable(name: string, t: Omit<TableReport, "git" | "machine" | "date">, file?: string): void {
  const report: TableReport = { ...t, git: gitState(), machine: machine(), date: new Date().toISOString() };
  const out = file ?? path.join(ROOT, "bench", "results", `${name}.table.json`);
  writeFileSync(out, JSON.stringify(report, null, 2) + "\n");
  console.log(`wrote ${out}`);
}

/** The console table of one corpus. */
export function printReport(r: BenchReport, log: (line: string) => void = console.log): void {
  const c = r.corpus;
  log("");
  log(`corpus ${c.name}: ${fmt(c.messageBytes / 1e6)} MB of messages, ${c.messages.toLocaleString("en")} messages` +
    `${c.serverVersion ? `, PostgreSQL ${c.serverVersion}` : ""}`);
  log(`${r.machine.cpu}, ${r.machine.cores} cores, ${r.machine.memoryGB} GB; Node ${r.machine.node} (V8 ${r.machine.v8}); maxTime ${r.settings.maxTimeSeconds} s`);
  const head = ["case", "competitor", "input", "MB/s", "msgs/s", "×plr", "×baseline", "±%", "n", "paired ×plr", "×baseline"];
  const w = [8, 24, 20, 10, 14, 10, 11, 7, 4, 13, 11];
  const line = (cells: string[]) => cells.map((s, i) => (i < 3 ? s.padEnd(w[i]!) : s.padStart(w[i]!))).join("");
  log(line(head));
  for (const x of r.results) {
    log(line([
      x.case, x.competitor, x.form, fmt(x.mbPerSec), Math.round(x.messagesPerSec).toLocaleString("en"),
      ratio(x.vsPgLogicalReplication), ratio(x.vsBaseline), fmt(x.rme), String(x.samples),
      ratio(x.paired?.vsPgLogicalReplication ?? null), ratio(x.paired?.vsBaseline ?? null),
    ]));
  }
  for (const x of r.results) if (x.outputMbPerSec !== undefined) log(`${x.case}/${x.competitor}: ${fmt(x.outputMbPerSec)} MB/s of output (target ≥ ${OUTPUT_TARGET_MB} for wasm)`);
  for (const u of r.unsupported) log(`${u.competitor}: not measured on this corpus (${u.reason})`);
  log(`targets (${r.settings.pairedRounds > 0 ? `paired ratios over ${r.settings.pairedRounds} rounds; Benchmark.js's in brackets` : "ratios of Benchmark.js median rates"}):`);
  for (const t of r.targets) {
    const verdict = t.met === null ? "n/a" : t.met ? "met" : "NOT met";
    const bjs = t.paired !== null && t.benchmarkJs !== null ? ` [${fmt(t.benchmarkJs, 2)}×]` : "";
    log(`  ${t.name.padEnd(40)} ≥ ${String(t.target).padEnd(4)} measured ${t.measured === null ? "—" : fmt(t.measured, 3) + "×"}${bjs}  ${verdict}`);
  }
  for (const n of r.notes) log(`note: ${n}`);
}
