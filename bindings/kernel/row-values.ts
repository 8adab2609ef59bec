/**
 * The binding of the kernel's side table (spec: bindings/row-values.ts):
 * one `rowValues` call per row a reader reads, and views of the slots,
 * re-taken when memory grew or a fresh instance took over.
 */
import type { RowValues } from "../values/registry.ts";
import { ROW_VALUE_COLUMNS } from "../row-values.ts";
import type { MemoryLayout } from "./memory-layout.ts";

export class KernelRowValues implements RowValues {
  f64: Float64Array<ArrayBufferLike> = new Float64Array(0);
  i64: BigInt64Array<ArrayBufferLike> = new BigInt64Array(0);
  readonly #m: MemoryLayout;
  #buffer: ArrayBufferLike | undefined;

  constructor(m: MemoryLayout) {
    this.#m = m;
  }

  read(u8: Uint8Array, w: number, plan0: number, plan1: number, plan2: number, plan3: number): number {
    const m = this.#m;
    // The layout's buffer follows every grow and new instance; a tuple of any other memory is not the kernel's to read.
    if (u8.buffer !== m.buffer) return 0;
    if (this.#buffer !== m.buffer) {
      this.#buffer = m.buffer;
      this.f64 = new Float64Array(m.buffer, m.rowValues, ROW_VALUE_COLUMNS);
      this.i64 = new BigInt64Array(m.buffer, m.rowValues, ROW_VALUE_COLUMNS);
    }
    return m.k.rowValues!(w << 2, plan0, plan1, plan2, plan3, m.rowValues);
  }
}

/** The side table of the kernel laid out in `m`, if that kernel has one (the wasm kernel; not the TS build). */
export function kernelRowValues(m: MemoryLayout): RowValues | undefined {
  return m.k.rowValues === undefined ? undefined : new KernelRowValues(m);
}
