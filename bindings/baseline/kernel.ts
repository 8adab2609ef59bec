/**
 * The pgoutput kernel in TypeScript: the kernel's own source
 * (bindings/kernel/decode.ts, json-columns.ts, json-lines.ts, text-timestamp.ts), which asc compiles to the
 * wasm kernel, compiled by tsc over a LinearMemory's typed arrays, with the
 * same exports as the wasm instance (KernelExports). It writes the same Int32
 * tape records (bindings/tape.ts), result words, error codes, offsets and
 * fields; test/kernel-tape.test.ts and the fuzz suites compare the two
 * builds word for word on the same memory image. It runs where WebAssembly
 * does not (`node --jitless`, a sandbox without the global).
 *
 * What follows from the language, not the algorithm: the kernel's globals
 * are module state shared by every TS kernel, which is sound because each
 * call sets them all before it reads them (as a wasm call does) and calls
 * do not nest; its memory is this kernel's LinearMemory, whose views are
 * handed to portable.ts before each call (re-acquired when it grew); the
 * tape, the result words and the width table are Int32Array words, so their
 * addresses must be 4-aligned (the decoder's layout always is; wasm would
 * accept any address).
 */
import { NOT_PARSED, type KernelExports } from "../kernel/exports.ts";
import { heapBase, useMemory } from "../kernel/portable.ts";
import { decode } from "../kernel/decode.ts";
import { jsonColumns } from "../kernel/json-columns.ts";
import { jsonLines } from "../kernel/json-lines.ts";
import { parseTextTimestamp, timestampDays, timestampSeconds, timestampFraction } from "../kernel/text-timestamp.ts";
import { LinearMemory } from "./memory.ts";

const NO_BYTES = new Uint8Array(0);
const NO_WORDS = new Int32Array(0);
const NO_VIEW = new DataView(NO_BYTES.buffer);

/** The kernel code holds no kernel's memory past a call (a dropped decoder's memory is freed). */
function release(): void {
  useMemory(NO_BYTES, NO_WORDS, NO_VIEW);
}

/** A fresh TS kernel: its own memory (one page, as asconfig.json's initialMemory), like a wasm instance. */
export function createKernel(): KernelExports {
  const memory = new LinearMemory(1);

  // Views of memory, re-acquired when it grew.
  let buffer: ArrayBufferLike | undefined;
  let u8 = new Uint8Array(0);
  let dv = new DataView(u8.buffer);
  let i32 = new Int32Array(0);

  /** Re-acquires the views if memory grew. */
  function views(): void {
    if (memory.buffer === buffer) return;
    buffer = memory.buffer;
    u8 = new Uint8Array(buffer);
    dv = new DataView(buffer);
    i32 = new Int32Array(buffer);
  }

  /** Hands this kernel's memory to the kernel code for one call (`release` after it). */
  function enter(): void {
    views();
    useMemory(u8, i32, dv);
  }

  return {
    memory,
    heapBase,
    decode: (input, from, length, framing, tape, tapeFrom, tapeCapacity, state, maxMessage, result, widths) => {
      if (((tape | result | widths) & 3) !== 0) throw new RangeError("the TS kernel needs 4-aligned tape, result and table addresses");
      enter();
      const status = decode(input, from, length, framing, tape, tapeFrom, tapeCapacity, state, maxMessage, result, widths);
      release();
      return status;
    },
    textTimestamp: (offset, length, withZone) => {
      enter();
      const parsed = parseTextTimestamp(offset, length, withZone);
      release();
      if (!parsed) return NOT_PARSED;
      // The wasm build's i64 (assembly/values.ts) as a bigint: one conversion
      // while the µs are exact in a double (years 1685-2255), two past that.
      const seconds = timestampDays * 86400 + timestampSeconds;
      const us = seconds * 1e6 + timestampFraction;
      if (us <= Number.MAX_SAFE_INTEGER && us >= -Number.MAX_SAFE_INTEGER) return BigInt(us);
      return BigInt(seconds) * 1_000_000n + BigInt(timestampFraction);
    },
    jsonColumns: (tuple, old, columns, from, flags, out, outCapacity, result) => {
      enter();
      const status = jsonColumns(tuple, old, columns, from, flags, out, outCapacity, result);
      release();
      return status;
    },
    jsonLines: (records, count, flags, area, out, outCapacity, lines, linesCapacity, result) => {
      enter();
      const status = jsonLines(records, count, flags, area, out, outCapacity, lines, linesCapacity, result);
      release();
      return status;
    },
  };
}
