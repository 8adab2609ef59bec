/**
 * The JSON area: a region of kernel memory behind the width table
 * (memory-layout.ts) where the JSON Lines writer has the kernel write
 * tuples as JSON (`jsonColumns`, spec: bindings/jsonl-tape.ts):
 *   [ result: JR_WORDS words | column tables: TABLES bytes | output: OUTPUT bytes ]
 * A decoder has one only once a writer asked for it (`jsonArea()`): the
 * first tuple a writer sees of a decoder asks, and the area is laid out at
 * that decoder's next call (memory grows only before a call: a grown wasm
 * memory detaches the buffer every view of the batch reads); until then the
 * writer takes its JS path, whose bytes are the same. A decoder no writer
 * reads carries no area.
 *   Column tables are written once per relation (per writer) and stay until
 * the decoder lays its memory out again (it moves the area: `generation`
 * changes) or the tables fill up (the area starts over). The output is
 * taken by the writer after every call, so it never grows: a tuple larger
 * than it is written in several calls (JSON_FULL), and a single value
 * larger than it is declined to the writer's JS path.
 */
import { JC_HEADER_WORDS, JC_WORDS, JR_COLUMN, JR_FLAGS, JR_WORDS, JR_WRITTEN } from "../jsonl-tape.ts";
import type { KernelExports } from "./exports.ts";
import type { MemoryRegion, RegionHost } from "./memory-layout.ts";

const TABLES = 64 * 1024;
const OUTPUT = 448 * 1024;

/** The decoder's JSON area, when it has one laid out; else it is asked for (laid out from the decoder's next call) and `undefined`. */
export function jsonArea(host: RegionHost): JsonArea | undefined {
  const region = host.region;
  if (region instanceof JsonArea) return region;
  if (region === undefined) host.request(new JsonArea());
  return undefined;
}

export class JsonArea implements MemoryRegion {
  readonly bytes = JR_WORDS * 4 + TABLES + OUTPUT;
  /** Bumped whenever the area moves or starts over: column tables written before are gone. */
  generation = 0;
  /** The last call's result words (JR_WRITTEN, JR_COLUMN, JR_FLAGS). */
  written = 0;
  column = 0;
  flags = 0;
  #k: KernelExports | undefined;
  #at = 0;
  #next = 0;
  // Views of the kernel's memory, taken when the decoder lays it out: memory grows only then (and the kernel never grows it).
  u8: Uint8Array = new Uint8Array(0);
  #dv: DataView = new DataView(this.u8.buffer);
  #i32: Int32Array = new Int32Array(0);
  /** Where the output starts (OUTPUT bytes). */
  out = 0;

  /** The decoder laid out memory: the area is at `at` of `kernel`'s memory now. */
  moved(kernel: KernelExports, at: number): void {
    this.#k = kernel;
    this.#at = at;
    this.#next = at + JR_WORDS * 4;
    this.out = at + JR_WORDS * 4 + TABLES;
    this.generation++;
    const buffer = kernel.memory.buffer;
    this.u8 = new Uint8Array(buffer);
    this.#dv = new DataView(buffer);
    this.#i32 = new Int32Array(buffer);
  }

  /** The kernel's jsonColumns (bindings/jsonl-tape.ts) on this area's output; its result words land in written/column/flags. */
  columns(tuple: number, old: number, table: number, from: number, flags: number): number {
    const status = this.#k!.jsonColumns(tuple, old, table, from, flags, this.out, OUTPUT, this.#at);
    const r = this.#at >> 2;
    this.written = this.#i32[r + JR_WRITTEN]!;
    this.column = this.#i32[r + JR_COLUMN]!;
    this.flags = this.#i32[r + JR_FLAGS]!;
    return status;
  }

  /**
   * Writes a column table (kinds: kind | isKey << 8; prefixes: UTF-8
   * bytes) and returns its address, or -1 when it alone exceeds the room
   * for tables. When the room is used up the area starts over (generation
   * changes) first.
   */
  table(kinds: readonly number[], prefixes: readonly Uint8Array[]): number {
    const n = kinds.length;
    let bytes = (JC_HEADER_WORDS + JC_WORDS * n) * 4;
    for (const p of prefixes) bytes += p.length;
    bytes = (bytes + 3) & ~3;
    if (bytes > TABLES) return -1;
    const start = this.#at + JR_WORDS * 4;
    if (this.#next + bytes > start + TABLES) {
      this.#next = start;
      this.generation++;
    }
    const at = this.#next;
    const dv = this.#dv;
    dv.setInt32(at, n, true);
    let p = at + (JC_HEADER_WORDS + JC_WORDS * n) * 4;
    for (let i = 0; i < n; i++) {
      const w = at + (JC_HEADER_WORDS + JC_WORDS * i) * 4;
      const prefix = prefixes[i]!;
      dv.setInt32(w, kinds[i]!, true);
      dv.setInt32(w + 4, p, true);
      dv.setInt32(w + 8, prefix.length, true);
      this.u8.set(prefix, p);
      p += prefix.length;
    }
    this.#next = at + bytes;
    return at;
  }
}
