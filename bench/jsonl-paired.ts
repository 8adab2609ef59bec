/**
 * The JSON Lines path against its competitor and its floors, paired in one
 * process (paired-rounds.ts); printed: each entry's median input and output MB/s and
 * the median and range of its per-round ratio to pg-logical-replication's
 * parse and to the baseline's lines.
 *
 *   npm run build:bench
 *   node build/bench/bench/jsonl-paired.js [capture] [--rounds 9] [--write]   (--write: bench/results/pipeline.table.json)
 *
 * Entries: `wasm lines` / `baseline lines` (pushBatch: whole lines from
 * each backend's kernel), `pipeline` (`decode --changes` between its
 * read and its write: a Pipeline over the chunks, pipelinePass), `wasm columns` (push() per message, the kernel
 * writing the columns: the path before pushBatch), `js` (the JS path
 * alone), `plr parse` (pg-logical-replication's parse per message), and
 * floors over the same bytes: `memcpy` (the output's bytes copied once per
 * 64 KB chunk), `js-walk` (walk.ts), `TextDecoder per value` (one decode
 * of every text column value: what any JS consumer that makes strings pays).
 */
import { parseArgs } from "node:util";
import { jsonlPass, makeCompetitors, pipelinePass, plrPass, walkPass, sink, type OutputCount } from "./competitors.ts";
import { loadInput } from "./input.ts";
import { WasmDecoder } from "../bindings/index.ts";
import { changeValueOptions } from "../bindings/pipeline/index.ts";
import { KIND_TEXT } from "../bindings/tape.ts";
import { median, pairedRatio, pairedRounds } from "./paired-rounds.ts";
import { OUTPUT_TARGET_MB, writeTable } from "./report.ts";

const { values: args, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: "string", default: "9" }, write: { type: "boolean", default: false } } });
const input = loadInput(positionals[0] ?? "bench/corpus/proto1-text-pg15-small.bin");
const c = makeCompetitors(input);
const output: OutputCount = { bytes: 0 };
jsonlPass(c.jsonlWasm, input.chunks, output);
const outBytes = output.bytes;

// Floors.
const target = new Uint8Array(1 << 20);
function memcpyPass(): void {
  // The output's bytes, 64 KB at a time, from one source buffer into another.
  const src = input.chunks[0]!;
  let left = outBytes;
  let at = 0;
  while (left > 0) {
    const n = Math.min(left, src.length);
    if (at + n > target.length) at = 0;
    target.set(n === src.length ? src : src.subarray(0, n), at);
    at += n;
    left -= n;
  }
}
const textDecoder = new TextDecoder();
const valueDecoder = new WasmDecoder({ values: changeValueOptions() });
function textDecoderPass(): void {
  let n = 0;
  for (const chunk of input.chunks) {
    const batch = valueDecoder.push(chunk) as unknown as { length: number; recordAt(i: number): number; t: Int32Array; u8: Uint8Array; dv: DataView };
    const { t, u8, dv } = batch;
    for (let i = 0; i < batch.length; i++) {
      const w = batch.recordAt(i);
      const tag = t[w]! & 0xff;
      if (tag !== 0x49 && tag !== 0x55 && tag !== 0x44) continue;
      // Every tuple of the record: the body after the header (and the old-tuple type word of U/D).
      let p = w + 4;
      let tuples = 1;
      if (tag !== 0x49) {
        tuples = t[p] !== 0 ? (tag === 0x55 ? 2 : 1) : 1;
        p++;
      }
      for (let k = 0; k < tuples; k++) {
        const ncols = t[p]!;
        for (let j = 1; j <= ncols; j++) {
          const at = t[p + j]!;
          if (u8[at] === KIND_TEXT) n += textDecoder.decode(u8.subarray(at + 5, at + 5 + dv.getInt32(at + 1))).length;
        }
        p += 1 + ncols;
      }
    }
  }
  valueDecoder.end();
  sink.value = (sink.value + n) | 0;
}

const pipelineDecoder = new WasmDecoder({ values: changeValueOptions() });
const replayDecoder = new WasmDecoder({ values: changeValueOptions() });
const entries: [string, () => void | Promise<unknown>, boolean][] = [
  ["wasm lines", () => void jsonlPass(c.jsonlWasm, input.chunks, output), true],
  ["pipeline", () => pipelinePass(pipelineDecoder, replayDecoder, input.chunks, output), true],
  ["baseline lines", () => void jsonlPass(c.jsonlBaseline, input.chunks, output), true],
  ["wasm columns", () => void jsonlPass(c.jsonlWasm, input.chunks, output, true, false), true],
  ["js", () => void jsonlPass(c.jsonlWasm, input.chunks, output, false), true],
  ["plr parse", () => void plrPass(c.plr, input.split, () => 1), false],
  ["memcpy", memcpyPass, false],
  ["js-walk", () => void walkPass(c.walk, input.chunks), false],
  ["TextDecoder per value", textDecoderPass, false],
];

const rounds = Number(args.rounds);
const secs = await pairedRounds(entries.map((e) => e[1]), rounds);
const mb = input.messageBytes / 1e6;
const plr = entries.findIndex((e) => e[0] === "plr parse");
const base = entries.findIndex((e) => e[0] === "baseline lines");
console.log(`${input.name}: ${mb.toFixed(1)} MB in, ${(outBytes / 1e6).toFixed(1)} MB of JSON Lines out; ${rounds} paired rounds, medians (ranges of per-round ratios)`);
const ratio = (i: number, j: number) => pairedRatio(secs, i, j);
const rows: string[][] = [];
for (let i = 0; i < entries.length; i++) {
  const [name, , writes] = entries[i]!;
  const s = median(secs[i]!);
  const out = writes || name === "memcpy" ? `, ${(outBytes / 1e6 / s).toFixed(0)} MB/s out` : "";
  console.log(`${name.padEnd(22)} ${(mb / s).toFixed(0).padStart(6)} MB/s in${out}; ÷ plr parse ${ratio(i, plr)}; ÷ baseline lines ${ratio(i, base)}`);
  rows.push([name, (mb / s).toFixed(0), writes || name === "memcpy" ? (outBytes / 1e6 / s).toFixed(0) : "—", ratio(i, plr), ratio(i, base)]);
}
if (sink.value === 0.5) console.log(sink.value);
if (args.write) {
  const pipeline = entries.findIndex((e) => e[0] === "pipeline");
  const perRound = (i: number, j: number) => median(secs[i]!.map((s, r) => secs[j]![r]! / s));
  const pipelineOut = outBytes / 1e6 / median(secs[pipeline]!);
  writeTable("pipeline", {
    title: `decode --changes (${input.name})`,
    about: [
      "`decode --changes` between its read and its write (`pipeline`: a Pipeline over the capture's 64 KB chunks into a sink that",
      "counts the bytes), beside its parts and floors, in one process: `wasm lines` / `baseline lines` (the JSON Lines format's",
      "pushBatch alone: whole lines from each backend's kernel), `wasm columns` (push() per message, the kernel writing the columns),",
      "`js` (the JS path alone), pg-logical-replication's parse() of every message (what its users pay before writing any JSON),",
      "`memcpy` of the output's bytes, `js-walk`, and one `TextDecoder` call per text value. Paired rounds, medians; ratios are",
      `medians of per-round ratios (their range). ${(outBytes / 1e6).toFixed(1)} MB of JSON Lines out.`,
    ],
    command: `node build/bench/bench/jsonl-paired.js bench/corpus/${input.name}.bin --rounds ${rounds} --write`,
    columns: ["entry", "MB/s in", "MB/s out", "÷ plr parse", "÷ baseline lines"],
    rows,
    targets: [
      { name: "decode --changes (pipeline) ÷ pg-logical-replication's parse", target: 4, measured: perRound(pipeline, plr), unit: "×", met: perRound(pipeline, plr) >= 4 },
      { name: "decode --changes (pipeline): output", target: OUTPUT_TARGET_MB, measured: pipelineOut, unit: "MB/s", met: pipelineOut >= OUTPUT_TARGET_MB },
    ],
  });
}
