/**
 * Profiles one case × competitor of the suite, and summarizes CPU profiles.
 *
 *   node --cpu-prof --cpu-prof-dir=.tmp/prof build/bench/bench/profile.js run <case> <competitor> [capture] [--passes N]
 *   node build/bench/bench/profile.js top <file.cpuprofile> [--top 25]
 *
 *   node build/bench/bench/profile.js kernel [capture] [--passes N]
 *
 * `run` warms up with two passes, then runs `--passes` (default 5) more, so
 * the profile is dominated by optimized code. `top` prints self time per
 * function (name, file:line), summed over the profile's nodes, as % of the
 * samples. `kernel` measures the bare wasm kernel: the same 64 KB chunks
 * copied into its memory (an unfinished frame moved to the front, as the
 * binding does) and one `decode` call per chunk, with no JS walk of the tape
 * and no batch objects; beside it the js-walk over the same chunks.
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { entries, type CaseName } from "./cases.ts";
import { makeCompetitors, sink } from "./competitors.ts";
import { loadInput, type BenchInput } from "./input.ts";
import { instantiate, kernelModule } from "../bindings/wasm/module.ts";
import { FRAMING_LENGTH, R_CONSUMED, R_COUNT, RESULT_WORDS, STATUS_OK } from "../bindings/tape.ts";
import { StructuralWalk } from "./walk.ts";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { passes: { type: "string", default: "5" }, top: { type: "string", default: "25" } },
});

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function top(file: string, n: number): void {
  const prof = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(prof.nodes.map((x) => [x.id, x]));
  const self = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    const node = byId.get(prof.samples[i]!)!;
    const f = node.callFrame;
    const where = f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : "";
    const key = `${f.functionName || "(anonymous)"} ${where}`.trim();
    const dt = prof.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, n);
  console.log(`${file}: ${(total / 1e6).toFixed(2)} s sampled`);
  for (const [k, us] of rows) console.log(`${((100 * us) / total).toFixed(1).padStart(6)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
}

async function run(c: CaseName, competitor: string, file: string | undefined, passes: number): Promise<void> {
  const input = loadInput(await corpusOf(file));
  const e = entries(input, makeCompetitors(input)).find((x) => x.case === c && x.competitor === competitor);
  if (e === undefined) throw new Error(`no entry ${c}/${competitor}`);
  e.run();
  e.run();
  const t0 = performance.now();
  for (let i = 0; i < passes; i++) e.run();
  const s = (performance.now() - t0) / 1000 / passes;
  console.log(`${c}/${competitor} on ${input.name}: ${(input.messageBytes / 1e6 / s).toFixed(1)} MB/s (${s.toFixed(3)} s per pass, ${passes} passes)`);
  if (sink.value === 0.5) console.log(sink.value);
}

async function corpusOf(file: string | undefined): Promise<string> {
  if (file !== undefined) return file;
  const { ensureCorpus } = await import("../devkit/capture/corpus.ts");
  return ensureCorpus("proto1-text", { scale: "default" });
}

/** One pass of the bare kernel over the chunks; returns [messages, seconds inside decode()]. */
function kernelPass(input: BenchInput, k: ReturnType<typeof instantiate>, layout: { result: number; input: number; tape: number; tapeWords: number }): [number, number] {
  const u8 = new Uint8Array(k.memory.buffer);
  const i32 = new Int32Array(k.memory.buffer);
  let pending = 0;
  let pendingFrom = layout.input;
  let messages = 0;
  let inKernel = 0;
  for (const chunk of input.chunks) {
    u8.copyWithin(layout.input, pendingFrom, pendingFrom + pending);
    u8.set(chunk, layout.input + pending);
    const length = pending + chunk.length;
    const t0 = performance.now();
    const status = k.decode(0, layout.input, layout.input + length, FRAMING_LENGTH, layout.tape, 0, layout.tapeWords, 0, 1 << 30, layout.result, 0);
    inKernel += performance.now() - t0;
    if (status !== STATUS_OK) throw new Error(`kernel status ${status}`);
    const consumed = i32[(layout.result >> 2) + R_CONSUMED]! - layout.input;
    messages += i32[(layout.result >> 2) + R_COUNT]!;
    pendingFrom = layout.input + consumed;
    pending = length - consumed;
  }
  return [messages, inKernel / 1000];
}

async function kernelOnly(file: string | undefined, passes: number): Promise<void> {
  const input = loadInput(await corpusOf(file));
  const k = instantiate(kernelModule());
  const result = k.heapBase();
  const inputAt = result + RESULT_WORDS * 4 + 64;
  const inputBytes = 8 << 20; // a chunk plus the largest unfinished frame of these corpora
  const tape = (inputAt + inputBytes + 15) & ~15;
  const tapeWords = 4 << 20;
  k.memory.grow(Math.ceil((tape + tapeWords * 4 - k.memory.buffer.byteLength) / 65536));
  const layout = { result, input: inputAt, tape, tapeWords };
  const walk = new StructuralWalk();
  const mb = input.messageBytes / 1e6;
  kernelPass(input, k, layout);
  kernelPass(input, k, layout);
  const total: number[] = [];
  const inside: number[] = [];
  const walked: number[] = [];
  for (let i = 0; i < passes; i++) {
    const t0 = performance.now();
    const [n, s] = kernelPass(input, k, layout);
    total.push((performance.now() - t0) / 1000);
    inside.push(s);
    if (n !== input.messages) throw new Error(`kernel saw ${n} of ${input.messages} messages`);
    const t1 = performance.now();
    for (const c of input.chunks) walk.push(c);
    walk.end();
    walked.push((performance.now() - t1) / 1000);
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  console.log(`${input.name}, ${passes} passes (medians):`);
  console.log(`  bare kernel, decode() calls only: ${(mb / med(inside)).toFixed(0)} MB/s`);
  console.log(`  bare kernel with the input copies: ${(mb / med(total)).toFixed(0)} MB/s`);
  console.log(`  js-walk:                           ${(mb / med(walked)).toFixed(0)} MB/s`);
  if (walk.sum === 0.5) console.log(walk.sum);
}

const [cmd, ...rest] = positionals;
if (cmd === "top") for (const f of rest) top(f, Number(args.top));
else if (cmd === "run") await run(rest[0] as CaseName, rest[1]!, rest[2], Number(args.passes));
else if (cmd === "kernel") await kernelOnly(rest[0], Number(args.passes));
else console.error("usage: profile.js run <case> <competitor> [capture] | top <file.cpuprofile> | kernel [capture]");
