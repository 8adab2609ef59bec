/**
 * The JSON area: a fixed region of kernel memory behind the width table
 * (tape.ts, "Memory") where the JSON Lines writer has the kernel write
 * tuples as JSON (`jsonColumns`, spec: bindings/jsonl-tape.ts):
 *   [ result: JR_WORDS words | column tables: TABLES bytes | output: OUTPUT bytes ]
 * Column tables are written once per relation (per writer) and stay until
 * the decoder lays its memory out again (it moves the area: `generation`
 * changes) or the tables fill up (the area starts over). The output is
 * taken by the writer after every call, so it never grows: a tuple larger
 * than it is written in several calls (JSON_FULL), and a single value
 * larger than it is declined to the writer's JS path.
 *   Why fixed and inside the layout: memory only grows before a decode
 *   call (a grown wasm memory detaches the buffer every view of the batch
 *   reads), and capacity.ts then counts the area with the table, so the
 *   address limit holds.
 */
import { JC_HEADER_WORDS, JC_WORDS, JR_WORDS } from "../jsonl-tape.ts";
import type { KernelExports } from "./exports.ts";

const TABLES = 64 * 1024;
const OUTPUT = 192 * 1024;
/** Bytes the decoder reserves for the area. */
export const JSON_AREA_BYTES = JR_WORDS * 4 + TABLES + OUTPUT;

export class JsonArea {
  /** Bumped whenever the area moves or starts over: column tables written before are gone. */
  generation = 0;
  #k: KernelExports | undefined;
  #at = 0;
  #next = 0;
  #buffer: ArrayBufferLike | undefined;
  #u8: Uint8Array = new Uint8Array(0);
  #dv: DataView = new DataView(this.#u8.buffer);

  /** The decoder laid out memory: the area is at `at` of `kernel`'s memory now. */
  moved(kernel: KernelExports, at: number): void {
    this.#k = kernel;
    this.#at = at;
    this.#next = at + JR_WORDS * 4;
    this.generation++;
  }

  get u8(): Uint8Array {
    this.#views();
    return this.#u8;
  }

  /** Where the output starts, and how many bytes it holds. */
  get out(): number {
    return this.#at + JR_WORDS * 4 + TABLES;
  }
  readonly outCapacity = OUTPUT;
  /** The result words' byte address. */
  get result(): number {
    return this.#at;
  }

  /** The kernel's jsonColumns (bindings/jsonl-tape.ts), on this area's output. */
  columns(tuple: number, old: number, table: number, from: number, flags: number): number {
    return this.#k!.jsonColumns(tuple, old, table, from, flags, this.out, OUTPUT, this.#at);
  }

  /** A result word of the last call. */
  resultWord(word: number): number {
    this.#views();
    return this.#dv.getInt32(this.#at + word * 4, true);
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
    this.#views();
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
      this.#u8.set(prefix, p);
      p += prefix.length;
    }
    this.#next = at + bytes;
    return at;
  }

  #views(): void {
    const buffer = this.#k!.memory.buffer;
    if (buffer === this.#buffer) return;
    this.#buffer = buffer;
    this.#u8 = new Uint8Array(buffer);
    this.#dv = new DataView(buffer);
  }
}
