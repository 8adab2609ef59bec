/**
 * Replays every fuzz case saved under test/fuzz-regressions/ (by
 * `npm run fuzz`, or FUZZ_SAVE=1 with test/fuzz.test.ts): each must now pass
 * every check of the fuzzer (devkit/fuzz/fuzz.ts) — a saved case fails here
 * until the bug it found is fixed. Also runs a fixed sample of fresh cases
 * over the golden captures, and checks that a case survives saving and
 * loading unchanged.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import {
  describeCase, FORMS, FuzzRunner, generateCase, loadCase, loadGoldenSources, runForm, saveCase, trackWasmMemory,
  type SavedCase,
} from "../devkit/fuzz/fuzz.ts";

const dir = fileURLToPath(new URL("./fuzz-regressions/", import.meta.url));
const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();

let runner: FuzzRunner;
let memory: ReturnType<typeof trackWasmMemory>;
beforeAll(() => {
  memory = trackWasmMemory();
  runner = new FuzzRunner(new WasmDecoder(), new BaselineDecoder(), {
    wasmMemory: memory.takePeak,
    limited: (maxMessageSize) => [new WasmDecoder({ maxMessageSize }), new BaselineDecoder({ maxMessageSize })],
  });
});
afterAll(() => memory.restore());

describe("saved fuzz cases", () => {
  it("the folder is readable and holds only saved cases", () => {
    for (const f of readdirSync(dir)) expect(f.endsWith(".json") || f === "README.md", f).toBe(true);
  });

  for (const file of files) {
    const saved = JSON.parse(readFileSync(`${dir}${file}`, "utf8")) as SavedCase;
    it(`${file}: ${saved.failures.map((f) => f.signature).join("; ")}`, () => {
      const c = loadCase(saved);
      const failures = runner.run(c);
      expect(failures, `${describeCase(c)}\nfailed when saved with: ${saved.failures.map((f) => f.detail).join("; ")}`).toEqual([]);
    });
  }
});

describe("a known sample", () => {
  const sources = loadGoldenSources(fixtures);

  // Every input form, decode() per message included.
  const forms = FORMS;

  it("600 fresh cases over the golden captures pass", () => {
    const failing: string[] = [];
    for (let i = 0; i < 600; i++) {
      const c = generateCase(sources, 7, i, forms[i % forms.length]);
      const f = runner.run(c);
      if (f.length > 0) failing.push(`${describeCase(c)}: ${f.map((x) => x.detail).join("; ")}`);
    }
    expect(failing).toEqual([]);
  });

  it("a case survives saving and loading, and runs the same", () => {
    for (const form of FORMS) {
      const c = generateCase(sources, 11, 3, form);
      const back = loadCase(JSON.parse(JSON.stringify(saveCase(c, []))) as SavedCase);
      expect(back).toEqual(c);
      const a = new WasmDecoder();
      expect(runForm(a, back)).toEqual(runForm(a, c));
    }
  });
});
