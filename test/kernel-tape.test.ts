/**
 * The two builds of the tape writer, word for word: the wasm kernel
 * (assembly/index.ts) and the TS build of the same source
 * (bindings/baseline/kernel.ts), run on the same
 * memory image with the same arguments, must return the same status and
 * write the same result words, tape words and width table (the twin kernel,
 * test/support/twin-kernel.ts). Inputs: random valid streams in every
 * framing, corrupted copies of them, every tape capacity from 0 up (so every
 * TAPE_FULL point), a width table too small (TABLE_FULL), and the worked
 * example of bindings/tape.ts run through the TS kernel alone.
 */
import { describe, expect, it } from "vitest";
import * as T from "../bindings/tape.ts";
import { createKernel } from "../bindings/baseline/kernel.ts";
import { instantiate, kernelModule } from "../bindings/wasm/module.ts";
import { twinKernel, twinStats, TwinDecoder, KernelMismatch } from "./support/twin-kernel.ts";
import { Random, randomSplits, randomStream } from "../devkit/fuzz/random.ts";
import { encode, frame } from "../devkit/encoder/encoder.ts";
import { wal, backendFrame, backendStream } from "../devkit/encoder/walsender-encoder.ts";
import { isPgoutputError } from "../bindings/errors.ts";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { KernelExports } from "../bindings/kernel/exports.ts";

const SEEDS = [1, 7, 0xdeadbeef, 20240607];

/** Runs fn; a PgoutputError is an outcome like any other (both kernels reported it alike), a mismatch fails. */
function run(fn: () => unknown): string {
  try {
    fn();
    return "ok";
  } catch (e) {
    if (isPgoutputError(e)) return e.code;
    throw e;
  }
}

/** A corrupted copy: a few bytes set at random, or a cut. */
function corrupt(r: Random, bytes: Uint8Array): Uint8Array {
  const b = bytes.slice();
  if (b.length === 0) return r.bytes(r.int(1, 8));
  if (r.float() < 0.2) return b.subarray(0, r.int(0, b.length - 1));
  for (let i = r.int(1, 3); i > 0; i--) b[r.int(0, b.length - 1)] = r.int(0, 255);
  return b;
}

/** Every framing the decoder has, on one stream. */
function everyFraming(d: PgoutputDecoder, r: Random, messages: readonly Uint8Array[]): string[] {
  const out: string[] = [];
  const header = { walStart: 1n, walEnd: 2n, sendTime: 3n };
  const framed = frame(messages);
  const payloads = messages.map((m) => wal.xlogData(m, header).bytes);
  const backend = backendStream([...payloads.map((p) => backendFrame("d", p)), backendFrame("k", new Uint8Array(17))]);
  d.reset();
  for (const m of messages) out.push(run(() => d.decode(m)));
  d.reset();
  out.push(run(() => d.decodeBatch(messages)));
  d.reset();
  out.push(run(() => d.decodeFramed(framed)));
  d.reset();
  out.push(run(() => d.decodeCopyData(payloads)));
  for (const [bytes, push] of [[framed, (c: Uint8Array) => d.push(c)], [backend, (c: Uint8Array) => d.pushBackend(c)]] as const) {
    d.reset();
    let p = 0;
    for (const cut of [...randomSplits(r, bytes.length), bytes.length]) {
      const chunk = bytes.subarray(p, cut);
      out.push(run(() => push(chunk)));
      p = cut;
    }
    out.push(run(() => d.end()));
  }
  return out;
}

describe("the TS kernel writes the wasm kernel's tape, word for word", () => {
  it("the worked example of bindings/tape.ts", () => {
    const k = createKernel();
    const begin = [0x42, ...new Array(20).fill(0)];
    const insert = [0x49, 0, 0, 0x40, 0, 0x4e, 0, 1, 0x74, 0, 0, 0, 2, 0x68, 0x69];
    const input = [0, 0, 0, 21, ...begin, 0, 0, 0, 15, ...insert];
    const base = k.heapBase();
    const inputAt = base + 64;
    const tapeAt = inputAt + 128;
    new Uint8Array(k.memory.buffer).set(input, inputAt);
    expect(k.decode(inputAt, 0, input.length, T.FRAMING_LENGTH, tapeAt, 0, 64, 0, 1 << 30, base, 0)).toBe(T.STATUS_OK);
    const words = new Int32Array(k.memory.buffer, base, T.RESULT_WORDS);
    expect(words[T.R_COUNT]).toBe(2);
    expect([...new Int32Array(k.memory.buffer, tapeAt, words[T.R_TAPE_USED])]).toEqual([66, 4, 4, 21, 73, 6, 29, 15, 1, 37]);
  });

  it("the twin kernel notices a difference in one tape word", () => {
    // A TS kernel that writes one wrong word: the twin must refuse, not agree silently.
    const wrong = (): KernelExports => {
      const k = createKernel();
      return {
        ...k,
        decode(...args: Parameters<KernelExports["decode"]>) {
          const status = k.decode(...args);
          new Int32Array(k.memory.buffer, args[4], 4)[3]! += 1; // the first record's length
          return status;
        },
      };
    };
    const k = twinKernel(wrong);
    const base = k.heapBase();
    new Uint8Array(k.memory.buffer).set([0, 0, 0, 1, 0x45], base + 64);
    expect(() => k.decode(base + 64, 0, 5, T.FRAMING_LENGTH, base + 256, 0, 64, 0, 1 << 30, base, 0)).toThrow(KernelMismatch);
    expect(() => k.decode(base + 64, 0, 5, T.FRAMING_LENGTH, base + 256, 0, 64, 0, 1 << 30, base, 0)).toThrow(/tape word 3: wasm 1, ts 2/);
    // A misaligned tape the TS kernel refuses (RangeError) rather than writing elsewhere.
    expect(() => twinKernel().decode(base + 64, 0, 5, T.FRAMING_LENGTH, base + 258, 0, 64, 0, 1 << 30, base, 0)).toThrow(RangeError);
  });

  it("the result words depend on the call alone, not on an earlier call's error (both kernels)", () => {
    for (const k of [instantiate(kernelModule()), createKernel()]) {
      const base = k.heapBase();
      const u8 = new Uint8Array(k.memory.buffer);
      u8.set([0, 0, 0, 3, 0x42, 1, 2], base + 64); // a Begin cut short: INCOMPLETE at offset 5
      expect(k.decode(base + 64, 0, 7, T.FRAMING_LENGTH, base + 256, 0, 64, 0, 1 << 30, base, 0)).toBe(T.STATUS_ERROR);
      const words = new Int32Array(k.memory.buffer, base, T.RESULT_WORDS);
      expect([words[T.R_ERROR_CODE], words[T.R_ERROR_OFFSET], words[T.R_ERROR_FIELD]]).toEqual([T.E_INCOMPLETE, 5, T.F_LSN]);
      u8.set([0, 0, 0, 1, 0x45], base + 64); // a Stream Stop
      expect(k.decode(base + 64, 0, 5, T.FRAMING_LENGTH, base + 256, 0, 64, 0, 1 << 30, base, 0)).toBe(T.STATUS_OK);
      expect([T.R_ERROR_CODE, T.R_ERROR_OFFSET, T.R_ERROR_FIELD, T.R_ERROR_COLUMN, T.R_ERROR_TUPLE].map((i) => words[i])).toEqual([0, 0, 0, -1, 0]);
    }
  });

  for (const seed of SEEDS) {
    it(`seed ${seed}: random valid streams in every framing`, () => {
      const before = twinStats.calls;
      const messages = randomStream(seed, { messages: 1500 }).map((m) => m.bytes);
      const d = new TwinDecoder();
      const outs = everyFraming(d, new Random(seed), messages);
      expect(outs.every((o) => o === "ok"), outs.filter((o) => o !== "ok").join()).toBe(true);
      expect(twinStats.calls - before).toBeGreaterThan(messages.length);
    });

    it(`seed ${seed}: corrupted windows in every framing`, () => {
      const r = new Random(seed ^ 0x5eed);
      const messages = randomStream(seed, { messages: 600 }).map((m) => m.bytes);
      const d = new TwinDecoder();
      const codes = new Set<string>();
      for (let round = 0; round < 60; round++) {
        const start = r.int(0, messages.length - 1);
        const window = messages.slice(start, start + r.int(1, 40));
        const k = r.int(0, window.length - 1);
        window[k] = corrupt(r, window[k]!);
        for (const o of everyFraming(d, r, window)) codes.add(o);
      }
      // The corruptions reached the kernels' error paths, not only the happy one.
      expect(codes.size).toBeGreaterThan(2);
    });
  }

  it("every tape capacity: the same TAPE_FULL point and the same partial tape", () => {
    const messages = randomStream(3, { messages: 60 }).map((m) => m.bytes);
    const framed = frame(messages);
    const k = twinKernel();
    const base = k.heapBase();
    const input = base + 64;
    const tape = input + Math.ceil(framed.length / 16) * 16 + 16;
    const need = tape + 4 * (framed.length + 64);
    if (need > k.memory.buffer.byteLength) k.memory.grow(Math.ceil((need - k.memory.buffer.byteLength) / 65536));
    new Uint8Array(k.memory.buffer).set(framed, input);
    const statuses = new Set<number>();
    for (let cap = 0; cap < framed.length / 2; cap += 1 + (cap >> 6)) {
      statuses.add(k.decode(input, 0, framed.length, T.FRAMING_LENGTH, tape, 0, cap, 0, 1 << 30, base, 0));
    }
    expect([...statuses].sort()).toEqual([T.STATUS_OK, T.STATUS_TAPE_FULL]);
  });

  it("a full width table: the same TABLE_FULL point, then the same table", () => {
    const rels = Array.from({ length: 8 }, (_, i) => encode.relation({
      relationId: 16384 + i * 977, namespace: "public", relationName: `t${i}`,
      columns: [{ name: "id", typeId: 23, isKey: true }, ...Array.from({ length: i }, (_, c) => ({ name: `c${c}`, typeId: 25 }))],
    }));
    const framed = frame(rels);
    const k = twinKernel();
    const base = k.heapBase();
    const input = base + 64;
    const tape = input + Math.ceil(framed.length / 16) * 16;
    const table = tape + 4 * 4096;
    const u8 = new Uint8Array(k.memory.buffer);
    u8.set(framed, input);
    const t = new Int32Array(k.memory.buffer, table, T.TABLE_HEADER_WORDS + 2 * 8);
    t.fill(0);
    t[T.TABLE_CAPACITY] = 8; // room for 6 at a load of 3/4
    const status = k.decode(input, 0, framed.length, T.FRAMING_LENGTH, tape, 0, 4096, 0, 1 << 30, base, table);
    expect(status).toBe(T.STATUS_TABLE_FULL);
    expect(t[T.TABLE_COUNT]).toBe(6);
  });
});
