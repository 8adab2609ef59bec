/**
 * What a tape kernel offers the decoder: the exports of the wasm instance
 * (assembly/index.ts) and, with the same names, arguments and results, of
 * the TS build of the same source (bindings/baseline/kernel.ts). The
 * decoder (decoder.ts) is written against this alone, so both backends
 * share one binding.
 */

/** A kernel's linear memory: `grow` may replace `buffer` (wasm detaches the old one), so readers compare its identity. */
export interface KernelMemory {
  readonly buffer: ArrayBufferLike;
  /** Adds `delta` 64 KiB pages; returns the previous size in pages; throws when it cannot. */
  grow(delta: number): number;
}

/** The kernel's exports (see assembly/index.ts and bindings/tape.ts). */
export interface KernelExports {
  readonly memory: KernelMemory;
  heapBase(): number;
  decode(
    input: number, from: number, length: number, framing: number,
    tape: number, tapeFrom: number, tapeCapacity: number,
    state: number, maxMessage: number, result: number, widths: number,
  ): number;
  /** A text timestamp at memory[offset, offset + length) → µs since the Unix epoch, or NOT_PARSED (i64 min + 1). */
  textTimestamp(offset: number, length: number, withZone: number): bigint;
  /** A tuple's numbers, booleans and timestamps into slots (spec: bindings/row-values.ts); the wasm kernel's only. */
  rowValues?(tuple: number, plan0: number, plan1: number, plan2: number, plan3: number, out: number): number;
  /** A tuple's columns as JSON bytes (spec: bindings/jsonl-tape.ts); returns a JSON_* status. */
  jsonColumns(tuple: number, old: number, columns: number, from: number, flags: number, out: number, outCapacity: number, result: number): number;
  /** Whole lines for a run of tape records, from the binding's templates (spec: bindings/line-templates.ts); returns a LINES_* status. */
  jsonLines(records: number, count: number, flags: number, area: number, out: number, outCapacity: number, lines: number, linesCapacity: number, result: number): number;
}

/** The kernel's textTimestamp() answer for text it leaves to the JS parser (assembly/values.ts NOT_PARSED). */
export const NOT_PARSED = -0x7fff_ffff_ffff_ffffn;
