/**
 * Where a tape decoder's regions sit in its kernel's memory (tape.ts,
 * "Memory"), from the kernel's heapBase():
 *   [ result | row values | input | tape | relation width table | region ]
 * (row values: the side table's slots, bindings/row-values.ts).
 * The region is optional: memory a user of the decoder has the kernel work
 * in, asked for with `request()` (the JSON Lines writer's JSON area,
 * json-area.ts). A decoder nobody asks for one lays out none.
 *
 * Only this object grows memory, and only when the decoder lays it out
 * before a kernel call (a grown wasm memory detaches the buffer every view
 * of the last batch reads): so a requested region is laid out at the
 * decoder's next call, never during one.
 */
import { PgoutputError } from "../errors.ts";
import { ROW_VALUE_BYTES } from "../row-values.ts";
import { TABLE_CAPACITY, TABLE_COUNT, TABLE_HASH, TABLE_HEADER_WORDS } from "../tape.ts";
import { ADDRESSABLE, layoutEnd, planCapacities, unaddressable } from "./capacity.ts";
import type { KernelExports } from "./exports.ts";

/** Memory a decoder's user has the kernel work in, behind the width table. */
export interface MemoryRegion {
  readonly bytes: number;
  /** The decoder laid out memory: the region is at `at` of `kernel`'s memory now (its contents are gone). */
  moved(kernel: KernelExports, at: number): void;
}

/** How a batch's reader asks its decoder for a region (json-area.ts). */
export interface RegionHost {
  /** The region laid out, if any. */
  readonly region: MemoryRegion | undefined;
  /** Asks for `region`, laid out from the decoder's next call on (one region per decoder: a later request is ignored). */
  request(region: MemoryRegion): void;
}

const PAGE = 65536;

export class MemoryLayout implements RegionHost {
  k!: KernelExports;
  /** Byte addresses of the result words, the row-value slots, the input region, the tape and the width table; capacities in bytes, words and entries. */
  result = 0;
  rowValues = 0;
  input = 0;
  inputCapacity = 0;
  tape = 0;
  tapeCapacity = 0;
  table = 0;
  tableCapacity = 0;
  /** The memory's buffer when the views were taken: reading it costs nothing, where WebAssembly.Memory's getter is a native call. */
  buffer: ArrayBufferLike | undefined;
  u8!: Uint8Array;
  i32!: Int32Array;
  dv!: DataView;
  region: MemoryRegion | undefined;
  #wanted: MemoryRegion | undefined;

  request(region: MemoryRegion): void {
    if (this.region === undefined) this.#wanted ??= region;
  }

  /** Lays out a requested region (before a kernel call, when nothing may read the old buffer any more). */
  grant(): void {
    const wanted = this.#wanted;
    if (wanted === undefined) return;
    this.#wanted = undefined;
    this.region = wanted;
    this.layout(this.inputCapacity, this.tapeCapacity);
  }

  /** A fresh kernel instance with a small initial layout, knowing `widths` (pairs of relation OID and column count). */
  start(kernel: KernelExports, widths: number[]): void {
    this.k = kernel;
    this.result = kernel.heapBase();
    this.rowValues = this.result + 64;
    this.input = this.rowValues + ROW_VALUE_BYTES;
    this.inputCapacity = 0;
    this.tapeCapacity = 0;
    this.tableCapacity = 0;
    this.buffer = undefined;
    this.#views();
    this.reserve(PAGE, 4096);
    this.layout(this.inputCapacity, this.tapeCapacity, tableCapacityFor(widths.length >> 1), widths);
  }

  /** Makes room for `bytes` of input and `words` of tape (tape sized from input when 0); OUT_OF_MEMORY beyond what the kernel addresses. */
  reserve(bytes: number, words: number): void {
    const current = { input: this.inputCapacity, tape: this.tapeCapacity };
    const plan = planCapacities(this.input, bytes, words, current, this.tableBytes());
    if (plan !== undefined) this.layout(plan.input, plan.tape);
  }

  /**
   * Copies a list into the input region as [uint32 length][bytes]... up to
   * the first item over `limit`, of which only the length prefix (the
   * kernel refuses it there); returns the bytes copied.
   */
  copyList(list: readonly Uint8Array[], limit: number): number {
    let total = 0;
    let count = 0;
    for (const m of list) {
      count++;
      if (m.length > limit) {
        total += 4;
        break;
      }
      total += 4 + m.length;
    }
    this.reserve(total, 0);
    let p = this.input;
    for (let i = 0; i < count; i++) {
      const m = list[i]!;
      this.dv.setUint32(p, m.length);
      if (m.length <= limit) this.u8.set(m, p + 4);
      p += 4 + m.length;
    }
    return total;
  }

  /** What the layout holds after the tape: the width table's bytes and the region's. */
  tableBytes(capacity = this.tableCapacity): number {
    return (TABLE_HEADER_WORDS + 2 * capacity) * 4 + (this.region?.bytes ?? 0);
  }

  /**
   * Lays out [input | tape | width table | region] for these capacities,
   * growing memory as needed. The table moves behind the tape, keeping its
   * entries (or `widths`, pairs of OID and column count, when given).
   */
  layout(inputCapacity: number, tapeCapacity: number, tableCapacity = this.tableCapacity, widths?: number[]): void {
    const tape = roundUp(this.input + inputCapacity, 16);
    const table = tape + tapeCapacity * 4;
    const needed = layoutEnd(this.input, { input: inputCapacity, tape: tapeCapacity }, this.tableBytes(tableCapacity));
    // Checked before anything changes, so a refused layout leaves the decoder as it was.
    if (needed > ADDRESSABLE) throw unaddressable(inputCapacity, needed);
    const entries = widths ?? this.#readTable();
    const memory = this.k.memory;
    if (needed > memory.buffer.byteLength) {
      try {
        memory.grow(Math.ceil((needed - memory.buffer.byteLength) / PAGE));
      } catch {
        throw new PgoutputError(`cannot grow kernel memory to ${needed} bytes`, { code: "OUT_OF_MEMORY", offset: 0 });
      }
    }
    this.inputCapacity = inputCapacity;
    this.tape = tape;
    this.tapeCapacity = tapeCapacity;
    this.table = table;
    this.#views();
    this.writeTable(tableCapacity, entries);
    this.region?.moved(this.k, table + (TABLE_HEADER_WORDS + 2 * tableCapacity) * 4);
  }

  /** The width table's entries as pairs of OID and column count. */
  #readTable(): number[] {
    const out: number[] = [];
    if (this.tableCapacity === 0) return out;
    const t = this.i32;
    const first = (this.table >> 2) + TABLE_HEADER_WORDS;
    for (let i = 0; i < this.tableCapacity; i++) {
      const width = t[first + 2 * i + 1]!;
      if (width !== 0) out.push(t[first + 2 * i]!, width - 1);
    }
    return out;
  }

  /** Writes an empty table of `capacity` entries at `table` and adds `widths` (hashing as the kernel does). */
  writeTable(capacity: number, widths: number[]): void {
    const t = this.i32;
    const at = this.table >> 2;
    t.fill(0, at, at + TABLE_HEADER_WORDS + 2 * capacity);
    t[at + TABLE_CAPACITY] = capacity;
    t[at + TABLE_COUNT] = widths.length >> 1;
    this.tableCapacity = capacity;
    const mask = capacity - 1;
    for (let k = 0; k < widths.length; k += 2) {
      let i = Math.imul(widths[k]!, TABLE_HASH) & mask;
      while (t[at + TABLE_HEADER_WORDS + 2 * i + 1] !== 0) i = (i + 1) & mask;
      t[at + TABLE_HEADER_WORDS + 2 * i] = widths[k]!;
      t[at + TABLE_HEADER_WORDS + 2 * i + 1] = widths[k + 1]! + 1;
    }
  }

  /** Re-acquires the typed-array views after memory grew (growth detaches the old buffer). */
  #views(): void {
    const buffer = this.k.memory.buffer;
    if (buffer === this.buffer) return;
    this.buffer = buffer;
    this.u8 = new Uint8Array(buffer);
    this.i32 = new Int32Array(buffer);
    this.dv = new DataView(buffer);
  }
}

/** The number of table entries that keeps `n` relations at most half full (a power of 2, at least 1024). */
function tableCapacityFor(n: number): number {
  let capacity = 1024;
  while (capacity < n * 2) capacity *= 2;
  return capacity;
}

function roundUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}
