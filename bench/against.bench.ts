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
 */
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import type { PgoutputDecoder } from "../bindings/index.ts";
import { fullTouch, lazyTouch } from "./cases.ts";
import { decoderPass } from "./competitors.ts";
import { loadInput } from "./input.ts";
import * as ours from "../bindings/index.ts";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const alone = arg("alone");
const oldDir = arg("old");
if (oldDir === undefined && alone === undefined) throw new Error("--old DIR (or --alone DIR): a checkout with a built dist/");
const rounds = Number(arg("rounds") ?? (alone === undefined ? 7 : 12));
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
for (const backend of ["wasm", "baseline"] as const) {
  const decoders: Record<"old" | "new", PgoutputDecoder> = {
    old: await theirs.createDecoder({ backend }),
    new: await ours.createDecoder({ backend }),
  };
  for (const [name, touch] of Object.entries(cases)) {
    const mbs: Record<"old" | "new", number[]> = { old: [], new: [] };
    const ratios: number[] = [];
    const time = (who: "old" | "new"): number => measure(decoders[who], touch);
    time("old"); // warm both up (tier-up of the wasm and the JS)
    time("new");
    for (let r = 0; r < rounds; r++) {
      const order: ("old" | "new")[] = r % 2 === 0 ? ["old", "new"] : ["new", "old"];
      const got: Partial<Record<"old" | "new", number>> = {};
      for (const who of order) got[who] = time(who);
      mbs.old.push(got.old!);
      mbs.new.push(got.new!);
      ratios.push(got.new! / got.old!);
    }
    console.log(
      `${backend} ${name}: old ${median(mbs.old).toFixed(0)} MB/s, new ${median(mbs.new).toFixed(0)} MB/s, ` +
        `new ÷ old ${median(ratios).toFixed(2)}x (range ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}, ${rounds} paired rounds)`,
    );
  }
}
