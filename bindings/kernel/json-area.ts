/**
 * The JSON area: a region of kernel memory behind the width table
 * (memory-layout.ts) where the JSON Lines writer has the kernel write
 * tuples as JSON (`jsonColumns`, spec: bindings/jsonl-tape.ts) and whole
 * lines (`jsonLines`, spec: bindings/line-templates.ts):
 *   [ result: JR_WORDS words | line area (state, programs, relation map) | literals: LITERALS bytes
 *     | column tables and relation templates: TABLES bytes | line entries: LINES | output: OUTPUT bytes ]
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
import {
  JR_LINES, JR_RECORD, LE_WORDS, LP_HEADER_WORDS, LP_KINDS, LP_MAX_OPS, LP_OP_WORDS, LP_OPS, LP_PROGRAM_WORDS, LS_STATE_BYTES,
  RT_COLUMNS, RT_COLUMNS_1, RT_FLAGS, RT_HEAD, RT_HEAD_1, RT_HEAD_1_LENGTH, RT_HEAD_LENGTH, RT_INDEX, RT_WANTED, RT_WORDS,
} from "../line-templates.ts";
import { TABLE_HASH } from "../tape.ts";
import type { KernelExports } from "./exports.ts";
import type { MemoryRegion, RegionHost } from "./memory-layout.ts";

const TABLES = 256 * 1024;
const OUTPUT = 448 * 1024;
/** Relation map entries (a power of 2); half full, the tables start over. */
const MAP = 1024;
const LINE_AREA = LS_STATE_BYTES + LP_KINDS * LP_PROGRAM_WORDS * 4 + 4 + MAP * 8;
const LITERALS = 4096;
/** Line entries per call. */
const LINES = 8192;

const EMPTY = new Uint8Array(0);

/** A relation's template (line-templates.ts): its column tables' addresses in the area, heads, RT_FLAGS. */
export interface TemplateParts {
  /** The column table (RT_COLUMNS). */
  readonly columns: number;
  /** More tables of the same columns (RT_COLUMNS_1..3). */
  readonly tables?: readonly number[];
  readonly wanted: boolean;
  readonly head: Uint8Array;
  /** The second head (OP_HEAD 1). */
  readonly head1?: Uint8Array;
  /** RTF_* */
  readonly flags: number;
}

/** The decoder's JSON area, when it has one laid out; else it is asked for (laid out from the decoder's next call) and `undefined`. */
export function jsonArea(host: RegionHost): JsonArea | undefined {
  const region = host.region;
  if (region instanceof JsonArea) return region;
  if (region === undefined) host.request(new JsonArea());
  return undefined;
}

/** Where a relation's entry is looked for first in the relation map (line-templates.ts): its probe starts there. */
const homeSlot = (oid: number): number => (Math.imul(oid, TABLE_HASH) >>> 16) & (MAP - 1);

export class JsonArea implements MemoryRegion {
  readonly bytes = JR_WORDS * 4 + LINE_AREA + LITERALS + TABLES + LINES * LE_WORDS * 4 + OUTPUT;
  /** Bumped whenever the area moves or starts over: column tables and relation templates written before are gone. */
  generation = 0;
  /** Bumped whenever the area moves: programs and literals written before are gone. */
  layouts = 0;
  /** Whose programs it holds (kernel lines of a format: one area may serve formats in turn). */
  programmer: unknown;
  /** The line area (line-templates.ts), and where the line entries are. */
  line = 0;
  entries = 0;
  /** The last jsonLines call's result words (JR_WRITTEN is `written`). */
  record = 0;
  lineCount = 0;
  #tables = 0;
  #literals = 0;
  #nextLiteral = 0;
  #templates = 0;
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
    this.line = at + JR_WORDS * 4;
    this.#literals = this.#nextLiteral = this.line + LINE_AREA;
    this.#tables = this.#next = this.#literals + LITERALS;
    this.entries = this.#tables + TABLES;
    this.out = this.entries + LINES * LE_WORDS * 4;
    this.generation++;
    this.layouts++;
    const buffer = kernel.memory.buffer;
    this.u8 = new Uint8Array(buffer);
    this.#dv = new DataView(buffer);
    this.#i32 = new Int32Array(buffer);
    this.u8.fill(0, this.line, this.#literals);
    this.#emptyMap();
  }

  get i32(): Int32Array {
    return this.#i32;
  }

  /** The kernel's jsonLines over `count` records from byte address `records`; its result words land in written/record/lineCount. */
  lines(records: number, count: number, flags: number): number {
    const status = this.#k!.jsonLines(records, count, flags, this.line, this.out, OUTPUT, this.entries, LINES, this.#at);
    const r = this.#at >> 2;
    this.written = this.#i32[r + JR_WRITTEN]!;
    this.record = this.#i32[r + JR_RECORD]!;
    this.lineCount = this.#i32[r + JR_LINES]!;
    return status;
  }

  /** Writes the program of line kind `kind`: ops as [code, a, b] triples (literals from literal()). */
  program(kind: number, ops: readonly (readonly [number, number, number])[]): void {
    if (ops.length > LP_MAX_OPS) throw new RangeError(`a line program has at most ${LP_MAX_OPS} ops`);
    const w = (this.line + LS_STATE_BYTES >> 2) + kind * LP_PROGRAM_WORDS;
    const i32 = this.#i32;
    i32[w + LP_OPS] = ops.length;
    ops.forEach((op, i) => i32.set(op, w + LP_HEADER_WORDS + i * LP_OP_WORDS));
  }

  /** Copies literal bytes of a program into the area; returns [address, length]. Programs are written again after the area moved. */
  literal(bytes: Uint8Array): [number, number] {
    if (this.#nextLiteral + bytes.length > this.#literals + LITERALS) throw new RangeError("line programs' literals exceed the area");
    const at = this.#nextLiteral;
    this.u8.set(bytes, at);
    this.#nextLiteral += bytes.length;
    return [at, bytes.length];
  }

  /** Forgets the programs' literals (before writing programs again). */
  clearLiterals(): void {
    this.#nextLiteral = this.#literals;
  }

  /**
   * Adds relation `oid`'s template (line-templates.ts) to the map; returns
   * false when it does not fit (the area starts over: generation changes,
   * and the caller writes what it needs again).
   */
  template(relationId: number, t: TemplateParts, index: number): boolean {
    const oid = relationId | 0; // as the kernel reads it
    if (this.#templates >= MAP >> 1) {
      this.#startOver();
      return false;
    }
    const head = t.head;
    const head1 = t.head1 ?? EMPTY;
    const bytes = (RT_WORDS * 4 + head.length + head1.length + 3) & ~3;
    if (this.#next + bytes > this.#tables + TABLES) {
      this.#startOver();
      return false;
    }
    const at = this.#next;
    this.#next += bytes;
    const i32 = this.#i32;
    const w = at >> 2;
    i32[w + RT_COLUMNS] = t.columns;
    i32[w + RT_WANTED] = t.wanted ? 1 : 0;
    i32[w + RT_HEAD] = at + RT_WORDS * 4;
    i32[w + RT_HEAD_LENGTH] = head.length;
    i32[w + RT_INDEX] = index;
    i32[w + RT_FLAGS] = t.flags;
    for (let k = 0; k < 3; k++) i32[w + RT_COLUMNS_1 + k] = t.tables?.[k] ?? 0;
    i32[w + RT_HEAD_1] = at + RT_WORDS * 4 + head.length;
    i32[w + RT_HEAD_1_LENGTH] = head1.length;
    this.u8.set(head, at + RT_WORDS * 4);
    this.u8.set(head1, at + RT_WORDS * 4 + head.length);
    const map = this.#map;
    let slot = homeSlot(oid);
    // An entry for the same OID (a relation defined again) is replaced.
    while (i32[map + 2 + slot * 2] !== 0 && i32[map + 1 + slot * 2] !== oid) slot = (slot + 1) & (MAP - 1);
    if (i32[map + 2 + slot * 2] === 0) this.#templates++;
    i32[map + 1 + slot * 2] = oid;
    i32[map + 2 + slot * 2] = at;
    return true;
  }

  /** Empties the relation map (its templates stay where they are until the tables start over). */
  forgetTemplates(): void {
    this.#emptyMap();
  }

  /**
   * Takes relation `relationId`'s template out of the map, if it has one
   * (a relation defined again: the others stay). Linear probing's deletion
   * by backward shift: each later entry of the same run whose home slot is
   * not between the freed slot and its own moves back into the gap, so
   * every lookup still finds its entry before an empty slot.
   */
  forgetTemplate(relationId: number): void {
    const oid = relationId | 0;
    const i32 = this.#i32;
    const map = this.#map;
    const mask = MAP - 1;
    let gap = homeSlot(oid);
    while (i32[map + 2 + gap * 2] !== 0 && i32[map + 1 + gap * 2] !== oid) gap = (gap + 1) & mask;
    if (i32[map + 2 + gap * 2] === 0) return;
    this.#templates--;
    for (let next = (gap + 1) & mask; i32[map + 2 + next * 2] !== 0; next = (next + 1) & mask) {
      // The entry at `next` may fill the gap when its home is not cyclically within (gap, next].
      const h = homeSlot(i32[map + 1 + next * 2]!);
      if (((next - h) & mask) < ((next - gap) & mask)) continue;
      i32[map + 1 + gap * 2] = i32[map + 1 + next * 2]!;
      i32[map + 2 + gap * 2] = i32[map + 2 + next * 2]!;
      gap = next;
    }
    i32[map + 1 + gap * 2] = 0;
    i32[map + 2 + gap * 2] = 0;
  }

  /** The relation map's first word (line-templates.ts): after the line state and the programs. */
  get #map(): number {
    return (this.line + LS_STATE_BYTES >> 2) + LP_KINDS * LP_PROGRAM_WORDS;
  }

  #emptyMap(): void {
    const map = this.#map;
    this.#i32.fill(0, map, map + 1 + MAP * 2);
    this.#i32[map] = MAP;
    this.#templates = 0;
  }

  #startOver(): void {
    this.#next = this.#tables;
    this.generation++;
    this.#emptyMap();
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
   * Writes a column table (kinds: the JC_KIND words; prefixes: UTF-8 bytes; elements: the
   * JC_ELEMENT words, 0 where none; names: the JC_NAME_LENGTH words, by default each prefix's
   * length) and returns its address, or -1 when it alone exceeds the room
   * for tables. When the room is used up the area starts over (generation
   * changes) first.
   */
  table(kinds: readonly number[], prefixes: readonly Uint8Array[], elements: readonly number[], names?: readonly number[]): number {
    const n = kinds.length;
    let bytes = (JC_HEADER_WORDS + JC_WORDS * n) * 4;
    for (const p of prefixes) bytes += p.length;
    bytes = (bytes + 3) & ~3;
    if (bytes > TABLES) return -1;
    if (this.#next + bytes > this.#tables + TABLES) this.#startOver();
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
      dv.setInt32(w + 12, elements[i]!, true);
      dv.setInt32(w + 16, names?.[i] ?? prefix.length, true);
      this.u8.set(prefix, p);
      p += prefix.length;
    }
    this.#next = at + bytes;
    return at;
  }
}
