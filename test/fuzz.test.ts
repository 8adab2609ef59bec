/**
 * Mutation fuzzing in CI (devkit/fuzz/fuzz.ts): ≥ 100,000 mutated inputs
 * made from the golden captures and the small bench corpus, split evenly
 * over the six input forms (decode per message, decodeBatch, decodeFramed,
 * push in random chunks, decodeCopyData of XLogData payloads, pushBackend of
 * CopyData frames). For each: the wasm decoder and the baseline agree exactly
 * (values or PgoutputError code, offset, incomplete, index, kind, field; then
 * caches and stream state), nothing else is thrown, no case takes long, the
 * wasm memory stays bounded, and both decoders still decode a known-good
 * probe afterwards. Each case also runs on the twin kernel
 * (support/twin-kernel.ts): the wasm kernel and its TS build on one memory
 * image, whose status, result words, tape and width table must be equal
 * word for word on every kernel call.
 *
 * FUZZ_SEED and FUZZ_CASES override the seed and the case count; with
 * FUZZ_SAVE=1 failing cases are written to test/fuzz-regressions/ as
 * `npm run fuzz` does. Longer runs: `npm run fuzz -- --cases 1000000 --seed N`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import { TwinDecoder, twinStats } from "./support/twin-kernel.ts";
import { ensureCorpus } from "../devkit/capture/corpus.ts";
import {
  describeCase, FORMS, FuzzRunner, generateCase, loadCaptureSource, loadGoldenSources, saveCase, trackWasmMemory,
  type Source,
} from "../devkit/fuzz/fuzz.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20261129) >>> 0;
const CASES = Number(process.env.FUZZ_CASES ?? 102_000);
const PER_FORM = Math.ceil(CASES / FORMS.length);
const SAVE = process.env.FUZZ_SAVE === "1";
const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));
const regressions = fileURLToPath(new URL("./fuzz-regressions/", import.meta.url));

describe(`mutation fuzzing (seed ${SEED}, ${PER_FORM * FORMS.length} cases)`, () => {
  let sources: Source[];
  let runner: FuzzRunner;
  let memory: ReturnType<typeof trackWasmMemory>;

  beforeAll(async () => {
    memory = trackWasmMemory();
    const corpus = await ensureCorpus("proto1-text", { scale: "small", log: () => {} });
    sources = [...loadGoldenSources(fixtures), loadCaptureSource(corpus)];
    runner = new FuzzRunner(new WasmDecoder(), new BaselineDecoder(), {
      wasmMemory: memory.takePeak,
      limited: (maxMessageSize) => [new WasmDecoder({ maxMessageSize }), new BaselineDecoder({ maxMessageSize })],
      twin: (maxMessageSize) => new TwinDecoder({ maxMessageSize }),
    });
  });
  afterAll(() => memory?.restore());

  it("the sources are the golden captures and the corpus", () => {
    expect(sources.length).toBeGreaterThan(20);
    expect(sources.reduce((s, x) => s + x.messages.length, 0)).toBeGreaterThan(20_000);
  });

  FORMS.forEach((form, k) => {
    it(`${form}: ${PER_FORM} cases`, () => {
      const groups = new Map<string, { count: number; first: string; saved: string }>();
      let inputBytes = 0;
      for (let i = 0; i < PER_FORM; i++) {
        const index = k * PER_FORM + i;
        const c = generateCase(sources, SEED, index, form);
        for (const m of c.input) inputBytes += m.length;
        const failures = runner.run(c);
        if (failures.length === 0) continue;
        const saved = JSON.stringify(saveCase(c, failures));
        if (SAVE) {
          mkdirSync(regressions, { recursive: true });
          writeFileSync(`${regressions}seed-${SEED}-case-${index}.json`, saved + "\n");
        }
        for (const f of failures) {
          const g = groups.get(f.signature);
          if (g !== undefined) g.count++;
          else groups.set(f.signature, { count: 1, first: `${describeCase(c)} :: ${f.detail}`, saved });
        }
      }
      expect(inputBytes).toBeGreaterThan(PER_FORM * 20);
      if (groups.size > 0) {
        const lines = [...groups].map(([sig, g]) => `${sig} (${g.count}×)\n  e.g. ${g.first}\n  case: ${g.saved.slice(0, 4000)}`);
        expect.fail(`${form}: failing cases —\n${lines.join("\n")}`);
      }
    }, 180_000);
  });

  it("the twin kernel compared the kernels on every case", () => {
    expect(twinStats.calls).toBeGreaterThan(PER_FORM * FORMS.length);
  });

  it("the cases end in every way: decoded, and each kind of error", () => {
    const total = [...runner.outcomes.values()].reduce((a, b) => a + b, 0);
    const seen = JSON.stringify(Object.fromEntries(runner.outcomes));
    expect(total, seen).toBe(PER_FORM * FORMS.length);
    expect(runner.outcomes.get("ok") ?? 0, seen).toBeGreaterThan(total * 0.05);
    for (const code of ["INCOMPLETE", "UNKNOWN_MESSAGE", "INVALID_COLUMN_KIND", "INVALID_VALUE", "INVALID_LENGTH", "TRAILING_BYTES", "MESSAGE_TOO_LARGE", "COLUMN_COUNT_MISMATCH"]) {
      expect(runner.outcomes.get(code) ?? 0, `${code} in ${seen}`).toBeGreaterThan(total / 1000);
    }
  });
});
