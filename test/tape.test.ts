// The worked example of bindings/tape.ts, run through the real kernel, and
// the boundary rules of the wasm module (bindings/tape.ts is the spec).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as T from "../bindings/tape.ts";
import { instantiate, kernelModule } from "../bindings/wasm/module.ts";

describe("tape", () => {
  it("matches the worked example in bindings/tape.ts", () => {
    const k = instantiate(kernelModule());
    const begin = [0x42, ...new Array(20).fill(0)];
    const insert = [0x49, 0, 0, 0x40, 0, 0x4e, 0, 1, 0x74, 0, 0, 0, 2, 0x68, 0x69];
    const input = [0, 0, 0, 21, ...begin, 0, 0, 0, 15, ...insert];
    const base = k.heapBase();
    const result = base;
    const inputAt = base + 64;
    const tapeAt = inputAt + 128;
    new Uint8Array(k.memory.buffer).set(input, inputAt);
    // Offsets on the tape are relative to the `input` argument: pass the input's address.
    const status = k.decode(inputAt, 0, input.length, T.FRAMING_LENGTH, tapeAt, 0, 64, 0, 1 << 30, result, 0);
    expect(status).toBe(T.STATUS_OK);
    const words = new Int32Array(k.memory.buffer, result, T.RESULT_WORDS);
    expect(words[T.R_COUNT]).toBe(2);
    expect(words[T.R_CONSUMED]).toBe(input.length);
    expect(words[T.R_STATE]).toBe(0);
    expect([...new Int32Array(k.memory.buffer, tapeAt, words[T.R_TAPE_USED])]).toEqual([66, 4, 4, 21, 73, 6, 29, 15, 1, 37]);
  });

  it("the kernel imports nothing and exports only memory and its six functions", () => {
    const module = new WebAssembly.Module(readFileSync(new URL("../build/release.wasm", import.meta.url)));
    expect(WebAssembly.Module.imports(module)).toEqual([]);
    expect(WebAssembly.Module.exports(module).map((e) => e.name).sort()).toEqual(["decode", "heapBase", "jsonColumns", "jsonLines", "memory", "rowValues", "textTimestamp"]);
  });

  it("reports a frame longer than the input as not yet arrived, not as an error", () => {
    const k = instantiate(kernelModule());
    const base = k.heapBase();
    new Uint8Array(k.memory.buffer).set([0, 0, 0, 21, 0x42, 1, 2], base + 64);
    const status = k.decode(base + 64, 0, 7, T.FRAMING_LENGTH, base + 256, 0, 64, 0, 1 << 30, base, 0);
    const words = new Int32Array(k.memory.buffer, base, T.RESULT_WORDS);
    expect(status).toBe(T.STATUS_OK);
    expect(words[T.R_COUNT]).toBe(0);
    expect(words[T.R_CONSUMED]).toBe(0);
  });
});
