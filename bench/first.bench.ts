/**
 * First benchmark: the wasm decoder against the pure-TS baseline on a real
 * capture, fed in 64 KB chunks as from a socket. Two cases:
 *   kernel  decode only (wasm: copy + kernel + tape walk; baseline: its structural parse)
 *   lazy    kind + relation name + one column's text per change
 *
 *   npm run bench -- [capture-file] [--max-time SECONDS] [--scale small|default]
 * The bench runs as tsc output under plain node: loaders such as tsx
 * transform every module (imports become getter calls) and distort the
 * figures several times over.
 * Without a file it uses (and if needed generates) the small proto1-text corpus.
 * Prints MB/s and messages/s per case and backend, and wasm/baseline ratios
 * from the same run.
 */
import Benchmark from "benchmark";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { gunzipSync } from "node:zlib";
import { BaselineDecoder, WasmDecoder } from "../bindings/index.ts";
import type { PgoutputDecoder, PgoutputMessage } from "../bindings/index.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { "max-time": { type: "string", default: process.env.BENCH_MAX_TIME ?? "3" }, scale: { type: "string", default: "small" } },
});
Benchmark.options.maxTime = Number(values["max-time"]);

async function corpusPath(): Promise<string> {
  if (positionals[0]) return positionals[0];
  const { ensureCorpus } = await import("./corpus.ts");
  return ensureCorpus("proto1-text", { scale: values.scale as "small" });
}

const path = await corpusPath();
let bytes: Uint8Array = readFileSync(path);
if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
const CHUNK = 64 * 1024;
const chunks: Uint8Array[] = [];
for (let i = 0; i < bytes.length; i += CHUNK) chunks.push(bytes.subarray(i, Math.min(i + CHUNK, bytes.length)));

let sink = 0;

function kernelPass(d: PgoutputDecoder): number {
  let n = 0;
  for (const c of chunks) n += d.push(c).length;
  d.end();
  return n;
}

function lazyTouch(msg: PgoutputMessage): number {
  switch (msg.kind) {
    case "Insert":
      return msg.relation!.name.length + (msg.newTuple.text(0) as string).length;
    case "Update":
      return msg.relation!.name.length + (msg.newTuple.text(0) as string).length;
    case "Delete":
      return msg.relation!.name.length + msg.oldTuple.byteLength(0);
    default:
      return msg.kind.length;
  }
}

function lazyPass(d: PgoutputDecoder): number {
  let n = 0;
  for (const c of chunks) {
    const batch = d.push(c);
    for (let i = 0; i < batch.length; i++) n += lazyTouch(batch.get(i));
  }
  d.end();
  return n;
}

const decoders = { wasm: new WasmDecoder(), baseline: new BaselineDecoder() };
const messages = kernelPass(decoders.wasm);
if (kernelPass(decoders.baseline) !== messages) throw new Error("backends disagree on the message count");
// Warm up: let V8 tier up both the wasm and the JS before measuring.
for (let i = 0; i < 3; i++) for (const d of Object.values(decoders)) sink += lazyPass(d);

const results = new Map<string, Benchmark.Target>();
const suite = new Benchmark.Suite("first");
for (const [name, d] of Object.entries(decoders)) {
  suite.add(`kernel/${name}`, () => { sink += kernelPass(d); });
  suite.add(`lazy/${name}`, () => { sink += lazyPass(d); });
}
suite.on("cycle", (e: Benchmark.Event) => results.set(e.target.name!, e.target)).run({ async: false });

const mb = bytes.length / 1e6;
console.log(`corpus: ${path}, ${mb.toFixed(1)} MB, ${messages} messages, 64 KB chunks, maxTime ${Benchmark.options.maxTime}s`);
console.log(`${"case".padEnd(18)}${"MB/s".padStart(10)}${"msgs/s".padStart(14)}${"±%".padStart(8)}${"runs".padStart(6)}`);
for (const [name, t] of results) {
  const hz = t.hz!;
  console.log(`${name.padEnd(18)}${(hz * mb).toFixed(1).padStart(10)}${Math.round(hz * messages).toLocaleString("en").padStart(14)}${t.stats!.rme.toFixed(1).padStart(8)}${String(t.stats!.sample.length).padStart(6)}`);
}
for (const c of ["kernel", "lazy"]) {
  const ratio = results.get(`${c}/wasm`)!.hz! / results.get(`${c}/baseline`)!.hz!;
  console.log(`${c}: wasm / baseline = ${ratio.toFixed(2)}x`);
}
if (sink === -1) console.log(sink);
