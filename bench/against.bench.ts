/**
 * This tree's decoders against another checkout's, paired in one process:
 * the regression check for a refactoring.
 *
 *   npm run build && npm run build:bench
 *   node build/bench/bench/against.bench.js --old ../other-checkout [--corpus FILE] [--rounds 7]
 *
 * `--old` is a checkout with a built `dist/` (its `npm run build`). Both
 * packages' `createDecoder` backends run the kernel, lazy and full cases of
 * bench/cases.ts over the same 64 KB chunks, old and new alternating with
 * the order rotated each round; printed per backend and case: MB/s of each
 * (median) and the new ÷ old ratio (median and range of the per-round
 * ratios).
 *
 * In one process both packages go through the same `decoderPass` call
 * site, and runs of this comparison have been bimodal: some processes keep
 * one side 10% slower for every round, the A/A comparison (a checkout
 * against a clone of itself) not. `--alone DIR` (or `--alone .` for this
 * tree) measures one package by itself, the wasm backend's cases, median
 * and range of `--rounds` rounds; alternate processes of each for a
 * comparison without the shared call site:
 *
 *   for i in 1 2 3 4; do node build/bench/bench/against.bench.js --alone ../other-checkout; node build/bench/bench/against.bench.js --alone .; done
 *
 * `--cases jsonl,compat` measures the output paths instead, paired the same
 * way: the JSON Lines bytes of `decode --changes` (JsonLinesWriter over
 * push()) and the pg-logical-replication drop-in's `parse()` per pre-split
 * message. Both sides are loaded from their `dist/` by module path
 * (dist/jsonl/writer.js, dist/pipeline/*.js, dist/compat/plugin.js), this
 * tree's included, so run `npm run build` here too.
 */
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import type { PgoutputDecoder } from "../bindings/index.ts";
import { fullTouch, lazyTouch } from "./cases.ts";
import { decoderPass } from "./competitors.ts";
import { loadInput } from "./input.ts";
import * as ours from "../bindings/index.ts";
import { arg, numberArg } from "./args.ts";

const alone = arg("alone");
const oldDir = arg("old");
if (oldDir === undefined && alone === undefined) throw new Error("--old DIR (or --alone DIR): a checkout with a built dist/");
const rounds = numberArg("rounds", alone === undefined ? 7 : 12);
const input = loadInput(arg("corpus") ?? "bench/corpus/proto1-text-pg15-small.bin");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cases = { kernel: undefined, lazy: lazyTouch, full: fullTouch } as const;

/** MB/s of one pass loop of at least 300 ms (and two passes). */
function measure(decoder: PgoutputDecoder, touch: (typeof cases)[keyof typeof cases]): number {
  const t0 = performance.now();
  let ms = 0;
  let passes = 0;
  while ((ms = performance.now() - t0) < 300 || passes < 2) {
    decoderPass(decoder, input.chunks, touch);
    passes++;
  }
  return (passes * input.messageBytes) / 1e6 / (ms / 1000);
}

if (alone !== undefined) {
  const pkg = alone === "." ? ours : ((await import(pathToFileURL(resolve(alone, "dist/index.js")).href)) as typeof ours);
  const decoder = await pkg.createDecoder({ backend: "wasm" });
  for (const [name, touch] of Object.entries(cases)) {
    measure(decoder, touch); // warm-up
    const mbs = Array.from({ length: rounds }, () => measure(decoder, touch)).sort((a, b) => a - b);
    console.log(`${alone} wasm ${name}: ${median(mbs).toFixed(0)} MB/s (range ${mbs[0]!.toFixed(0)}-${mbs[mbs.length - 1]!.toFixed(0)}, ${rounds} rounds)`);
  }
  process.exit(0);
}

const theirs = (await import(pathToFileURL(resolve(oldDir!, "dist/index.js")).href)) as typeof ours;
const output = (arg("cases") ?? "").split(",").filter((c) => c !== "");
if (output.length > 0) {
  await compareOutput(output);
  process.exit(0);
}
for (const backend of ["wasm", "baseline"] as const) {
  const decoders: Record<"old" | "new", PgoutputDecoder> = {
    old: await theirs.createDecoder({ backend }),
    new: await ours.createDecoder({ backend }),
  };
  for (const [name, touch] of Object.entries(cases)) report(`${backend} ${name}`, (who) => measure(decoders[who], touch));
}

/** Paired rounds of the output cases (`--cases`), old and new from their dist/. */
async function compareOutput(names: string[]): Promise<void> {
  const sides = { old: await outputModules(oldDir!), new: await outputModules(".") };
  for (const backend of ["wasm", "baseline"] as const) {
    for (const name of names) {
      if (name !== "jsonl" && name !== "compat") throw new Error(`--cases: jsonl or compat, not ${name}`);
      const passes = { old: await outputPass(sides.old, backend, name), new: await outputPass(sides.new, backend, name) };
      const time = (who: "old" | "new"): number => {
        const t0 = performance.now();
        let ms = 0;
        let n = 0;
        while ((ms = performance.now() - t0) < 300 || n < 2) {
          passes[who]();
          n++;
        }
        return (n * input.messageBytes) / 1e6 / (ms / 1000);
      };
      report(`${backend} ${name}`, time);
    }
  }
}

/** Warm-up (tier-up of the wasm and the JS), then `rounds` paired rounds with the order rotated; prints medians and the ratio. */
function report(label: string, time: (who: "old" | "new") => number): void {
  time("old");
  time("new");
  const mbs: Record<"old" | "new", number[]> = { old: [], new: [] };
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const got: Partial<Record<"old" | "new", number>> = {};
    for (const who of r % 2 === 0 ? (["old", "new"] as const) : (["new", "old"] as const)) got[who] = time(who);
    mbs.old.push(got.old!);
    mbs.new.push(got.new!);
    ratios.push(got.new! / got.old!);
  }
  console.log(
    `${label}: old ${median(mbs.old).toFixed(0)} MB/s, new ${median(mbs.new).toFixed(0)} MB/s, ` +
      `new ÷ old ${median(ratios).toFixed(2)}x (range ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}, ${rounds} paired rounds)`,
  );
}

type OutputModules = Awaited<ReturnType<typeof outputModules>>;

/** What the output cases use of a package, by module path (stable across the entry points' changes). */
async function outputModules(dir: string) {
  const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(resolve(dir, "dist", path)).href)) as T;
  return {
    index: await load<typeof ours>("index.js"),
    writer: await load<typeof import("../bindings/jsonl/writer.ts")>("jsonl/writer.js"),
    text: await load<typeof import("../bindings/jsonl/json-text.ts")>("jsonl/json-text.js"),
    records: await load<typeof import("../bindings/pipeline/records.ts")>("pipeline/records.js"),
    resequence: await load<typeof import("../bindings/pipeline/resequence.ts")>("pipeline/resequence.js"),
    plugin: await load<typeof import("../bindings/compat/plugin.ts")>("compat/plugin.js"),
  };
}

/** One pass of an output case over the whole corpus, with decoders of `m` made once. */
async function outputPass(m: OutputModules, backend: "wasm" | "baseline", name: "jsonl" | "compat"): Promise<() => void> {
  if (name === "compat") {
    const plugin = new m.plugin.PgoutputWasmPlugin({ protoVersion: 1, publicationNames: ["p"], decoder: await m.index.createDecoder({ backend }) });
    const messages = input.split;
    return () => {
      let sum = 0;
      for (let i = 0; i < messages.length; i++) sum += plugin.parse(messages[i]!).tag.length;
      if (sum < 0) console.log(sum);
    };
  }
  const values = m.text.changeValueOptions();
  const d = await m.index.createDecoder({ backend, values });
  const replay = new m.resequence.StreamResequencer(await m.index.createDecoder({ backend, values }));
  const writer = new m.writer.JsonLinesWriter({ types: d.types });
  const records = new m.records.Records();
  return () => {
    let bytes = 0;
    for (const chunk of input.chunks) {
      const batch = d.push(chunk);
      for (let i = 0; i < batch.length; i++) {
        const msg = batch.get(i);
        if (replay.takes(msg)) for (const plain of replay.push(msg)) writer.push(plain, records);
        else writer.push(msg, records);
      }
      bytes += records.bytes.len;
      records.clear();
    }
    d.end();
    if (bytes < 0) console.log(bytes);
  };
}
