/**
 * TupleData view over the tape (both backends). Word `w` of the tape holds ncols, the
 * next ncols words the offset of each column's kind byte; a text or binary
 * value's Int32 length follows its kind byte, the value follows the length.
 */
import type { Relation } from "../relation.ts";
import {
  type ColumnKind, type ColumnRef, type MaterializedColumn, type JsonColumn, type Tuple,
  unchangedToast, materializeTuple, tupleToJSON,
} from "../tuple.ts";
import { PgoutputError } from "../errors.ts";
import { readString } from "../utf8.ts";
import { columnValue } from "../values/column.ts";
import { sourceOf, tupleObject, tupleValues, type TupleValuesOptions } from "../values/toast.ts";
import { rowReader } from "../values/row-reader.ts";
import type { RegionHost } from "../kernel/memory-layout.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import type { BatchMemory } from "./batch-memory.ts";
import { copyBytes } from "../copy-bytes.ts";
import { KIND_BINARY as KIND_B, KIND_NULL, KIND_TEXT as KIND_T, KIND_UNCHANGED as KIND_U } from "../tape.ts";

export class TapeTuple implements Tuple {
  // Declared, not defined: this object is made per touched row, and on Node
  // 20's V8 class field definitions cost far more than assignments.
  declare readonly relation: Relation | undefined;
  declare readonly length: number;
  declare private readonly b: BatchMemory;
  declare private readonly w: number;

  constructor(b: BatchMemory, w: number, relation: Relation | undefined) {
    this.b = b;
    this.w = w;
    this.relation = relation;
    this.length = b.t[w]!;
  }

  /** Offset of column i's kind byte. */
  #pos(column: ColumnRef): number {
    this.b.live();
    const i = typeof column === "number" && column >>> 0 === column && column < this.length ? column : resolveColumn(this.relation, this.length, column);
    return this.b.t[this.w + 1 + i]!;
  }

  index(column: ColumnRef): number {
    return resolveColumn(this.relation, this.length, column);
  }

  kind(column: ColumnRef): ColumnKind {
    const k = this.b.u8[this.#pos(column)]!;
    return k === KIND_T ? "text" : k === KIND_B ? "binary" : k === KIND_U ? "unchanged" : "null";
  }

  isNull(column: ColumnRef): boolean {
    return this.b.u8[this.#pos(column)] === KIND_NULL;
  }

  text(column: ColumnRef): string | null | typeof unchangedToast {
    const p = this.#pos(column);
    const b = this.b;
    const k = b.u8[p]!;
    if (k === KIND_T) return readString(b.u8, p + 5, b.dv.getInt32(p + 1));
    if (k === KIND_U) return unchangedToast;
    if (k === KIND_B) throw wrongKind(column);
    return null;
  }

  bytes(column: ColumnRef): Uint8Array | null | typeof unchangedToast {
    const p = this.#pos(column);
    const b = this.b;
    const k = b.u8[p]!;
    if (k === KIND_T || k === KIND_B) return copyBytes(b.u8, p + 5, p + 5 + b.dv.getInt32(p + 1));
    return k === KIND_U ? unchangedToast : null;
  }

  byteLength(column: ColumnRef): number {
    const p = this.#pos(column);
    const k = this.b.u8[p]!;
    return k === KIND_T || k === KIND_B ? this.b.dv.getInt32(p + 1) : 0;
  }

  value(column: ColumnRef): unknown {
    // A whole-number index in range needs no name resolution (the common, hot case).
    const i = typeof column === "number" && column >>> 0 === column && column < this.length ? column : this.index(column);
    const p = this.#pos(i);
    const b = this.b;
    return columnValue(b.values, this.relation, i, b.u8[p]!, b.u8, p + 5, b.dv.getInt32(p + 1));
  }

  values(options?: TupleValuesOptions): unknown[] {
    const relation = this.relation;
    if (relation === undefined || relation.columnCount !== this.length) return tupleValues(this, readValue, options);
    const b = this.b;
    b.live();
    const out = rowReader(b.values, relation)(b.u8, b.dv, b.t, this.w, relation);
    const old = options?.old;
    if (old != null) fillUnchanged(this, out, old);
    return out;
  }

  toObject(options?: TupleValuesOptions): Record<string, unknown> {
    const relation = this.relation;
    if (relation === undefined || relation.columnCount !== this.length) return tupleObject(this, readValue, options);
    const values = this.values(options);
    const columns = relation.columns;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < values.length; i++) out[columns[i]!.name] = values[i];
    return out;
  }

  unchangedColumns(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.length; i++) if (this.b.u8[this.#pos(i)] === KIND_U) out.push(i);
    return out;
  }

  materialize(): MaterializedColumn[] {
    return materializeTuple(this);
  }

  toJSON(): JsonColumn[] {
    return tupleToJSON(this);
  }
}

const readValue = (t: Tuple, i: number): unknown => t.value(i);

/** Unchanged TOAST in `values` taken from `old` where it carries the column (toast.ts's sourceOf). */
function fillUnchanged(t: Tuple, values: unknown[], old: Tuple): void {
  for (let i = 0; i < values.length; i++) {
    if (values[i] === unchangedToast && sourceOf(t, i, old) === old) values[i] = old.value(i);
  }
}

/**
 * Where a tape tuple's columns sit: the bytes, and `tape[first + i]` the
 * offset of column i's kind byte (its Int32 length follows, then the value).
 * For the JSON Lines writer, which copies values from there without making
 * strings. `undefined` for a tuple of another kind (a materialized one).
 */
export function tapeColumns(t: Tuple): TapeColumns | undefined {
  if (!(t instanceof TapeTuple)) return undefined;
  const inner = t as unknown as { b: BatchMemory; w: number };
  const b = inner.b;
  b.live();
  return { u8: b.u8, dv: b.dv, tape: b.t, first: inner.w + 1, host: b.host, values: b.values };
}

export interface TapeColumns {
  u8: Uint8Array;
  dv: DataView;
  tape: Int32Array;
  /** Word index of column 0's offset (the TUPLE's ncols word is the one before). */
  first: number;
  /** Where the JSON Lines writer asks the decoder for its JSON area (kernel/json-area.ts), for the kernel's jsonColumns. */
  host: RegionHost | undefined;
  /** The decoder's value parsers. */
  values: ValueDecoder;
}

function wrongKind(column: ColumnRef): PgoutputError {
  return new PgoutputError(`column ${JSON.stringify(column)} is in binary format; use bytes()`, { code: "WRONG_COLUMN_KIND" });
}

/**
 * Raw access to a tape tuple for the pg-logical-replication drop-in
 * (bindings/compat), which reads every column of every row: column i's kind
 * byte is at `u8[t[base + i]]`, a text or binary value's Int32 length
 * follows it (`dv`) and the value follows the length. `rawTuple` fills the
 * caller's scratch object (one per converter, not one per row) after
 * checking the view is live, so the caller must read it before the
 * decoder's next call; false for a tuple that is not a tape view.
 */
export interface RawTuple {
  u8: Uint8Array;
  dv: DataView;
  t: Int32Array;
  base: number;
  length: number;
}

export function rawTuple(tuple: Tuple, into: RawTuple): boolean {
  if (!(tuple instanceof TapeTuple)) return false;
  const raw = tuple as unknown as { b: BatchMemory; w: number; length: number };
  const b = raw.b;
  b.live();
  into.u8 = b.u8;
  into.dv = b.dv;
  into.t = b.t;
  into.base = raw.w + 1;
  into.length = raw.length;
  return true;
}

/** Resolves a column reference against a relation (UNKNOWN_COLUMN when it names none). */
function resolveColumn(relation: Relation | undefined, length: number, column: number | string): number {
  if (typeof column === "number") {
    if (column >= 0 && column < length && Number.isInteger(column)) return column;
    throw new PgoutputError(`column index ${column} out of range 0..${length - 1}`, { code: "UNKNOWN_COLUMN" });
  }
  if (relation === undefined) {
    throw new PgoutputError(`column "${column}" asked by name, but no Relation message was seen for this row`, {
      code: "UNKNOWN_COLUMN",
    });
  }
  const i = relation.columnIndex(column);
  if (i < 0) {
    throw new PgoutputError(`relation ${relation.namespace}.${relation.name} has no column "${column}"`, {
      code: "UNKNOWN_COLUMN",
    });
  }
  return i;
}
