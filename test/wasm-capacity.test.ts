/**
 * The wasm decoder's address-space guard (bindings/wasm/capacity.ts): the
 * kernel addresses memory with i32 offsets, so a call whose layout would end
 * past 2^31 bytes is a typed OUT_OF_MEMORY — found by arithmetic, before any
 * memory grows or any byte is copied — never an int32 wrap into a RangeError,
 * and the decoder goes on working. Up to the limit, a call still gets room
 * (without the usual slack). Inputs of 2 GiB are not allocated: the unit
 * tests give sizes, and the end-to-end ones hand decodeBatch and
 * decodeCopyData one 64 MiB array many times over.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADDRESSABLE, grownTape, layoutEnd, planCapacities } from "../bindings/kernel/capacity.ts";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import { encode, frame } from "../devkit/encoder/encoder.ts";
import { trackWasmMemory } from "../devkit/fuzz/fuzz.ts";
import { errorOf } from "./support/error-of.ts";

const MiB = 2 ** 20;
const PAGE = 65536;
const START = 1088; // an input region's address, as after the kernel's heap base and the result words
const TABLE = (4 + 2 * 1024) * 4;
const NONE = { input: 0, tape: 0 };


describe("planCapacities", () => {
  it("a 64 KB chunk gets the generous layout (1/8 input slack, a tape of a word per 4 bytes)", () => {
    expect(planCapacities(START, 65536, 0, NONE, TABLE)).toEqual({ input: 2 * PAGE, tape: 32768 });
    expect(planCapacities(START, 65536, 0, { input: 2 * PAGE, tape: 32768 }, TABLE), "already room").toBeUndefined();
    expect(planCapacities(START, 10, 5000, NONE, TABLE)).toEqual({ input: PAGE, tape: 16384 });
  });

  it("1 GiB (the largest message) and just under 2 GiB still fit, without the slack, with a tape of what is left", () => {
    for (const bytes of [2 ** 30, ADDRESSABLE - 2 * PAGE]) {
      const plan = planCapacities(START, bytes, 64, NONE, TABLE)!;
      expect(plan.input).toBeGreaterThanOrEqual(bytes);
      expect(plan.tape).toBeGreaterThanOrEqual(1024);
      expect(layoutEnd(START, plan, TABLE)).toBeLessThanOrEqual(ADDRESSABLE);
    }
  });

  it("beyond what the kernel addresses is OUT_OF_MEMORY (a PgoutputError, offset 0), not a RangeError", () => {
    for (const bytes of [ADDRESSABLE - PAGE + 1, ADDRESSABLE, 2.2 * 2 ** 30, 2 ** 32 + 5, 2 ** 40]) {
      const e = errorOf(() => planCapacities(START, bytes, 0, NONE, TABLE));
      expect([e.code, e.offset], String(bytes)).toEqual(["OUT_OF_MEMORY", 0]);
      expect(e.message).toMatch(/addresses/);
    }
  });

  it("never shrinks the input region (it may hold a pushed partial frame)", () => {
    const plan = planCapacities(START, 100, 0, { input: 64 * MiB, tape: 16 }, TABLE)!;
    expect(plan.input).toBe(64 * MiB);
  });
});

describe("grownTape", () => {
  it("doubles, then takes what is left below the limit, then is OUT_OF_MEMORY", () => {
    expect(grownTape(START, { input: PAGE, tape: 16384 }, TABLE, 10)).toBe(32768);
    const input = 2 ** 30;
    const near = grownTape(START, { input, tape: 2 ** 27 + 2 ** 26 }, TABLE, input);
    expect(near).toBeGreaterThan(2 ** 27 + 2 ** 26);
    expect(layoutEnd(START, { input, tape: near }, TABLE)).toBeLessThanOrEqual(ADDRESSABLE);
    expect(errorOf(() => grownTape(START, { input, tape: near }, TABLE, input)).code).toBe("OUT_OF_MEMORY");
  });
});

describe("WasmDecoder: a list of more than 2 GiB", () => {
  let memory: ReturnType<typeof trackWasmMemory>;
  beforeAll(() => {
    memory = trackWasmMemory();
  });
  afterAll(() => memory.restore());

  it("decodeBatch and decodeCopyData of 33 × 64 MiB are OUT_OF_MEMORY before memory grows; the decoder goes on", () => {
    const d = new WasmDecoder();
    const big = new Uint8Array(64 * MiB);
    big[0] = 0x4d; // 'M'
    const list = Array.from({ length: 33 }, () => big);
    memory.takePeak();
    for (const call of [() => d.decodeBatch(list), () => d.decodeCopyData(list)]) {
      const e = errorOf(call);
      expect([e.code, e.offset]).toEqual(["OUT_OF_MEMORY", 0]);
    }
    expect(memory.takePeak(), "the largest wasm memory grown to").toBeLessThan(4 * MiB);
    const begin = encode.begin({ finalLsn: 1n, commitTime: 2n, xid: 3 });
    expect(d.decodeBatch([begin.bytes]).materialize()).toEqual([begin.expected]);
    expect(d.push(frame([begin])).materialize()).toEqual([begin.expected]);
    d.end();
  });
});
