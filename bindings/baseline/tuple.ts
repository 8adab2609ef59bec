/**
 * TupleData: the columns of one row, parsed eagerly into a column table
 * (kind, value offset, value length per column) and decoded lazily on access.
 */
import type { ColumnKind, ColumnRef, JsonColumn, MaterializedColumn, Tuple, UnchangedToast } from "../tuple.ts";
import type { ParseContext } from "./context.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import { columnValue } from "../values/column.ts";
import { tupleObject, tupleValues, type TupleValuesOptions } from "../values/toast.ts";
import { materializeTuple, tupleToJSON, unchangedToast } from "../tuple.ts";
import { type Relation, resolveColumn } from "../relation.ts";
import { PgoutputError } from "../errors.ts";
import { readString } from "../utf8.ts";
import type { Reader } from "./reader.ts";
import { type Lease, staleView } from "./view.ts";
import { copyBytes } from "../copy-bytes.ts";

const KIND_NULL = 0x6e; // n
const KIND_UNCHANGED = 0x75; // u
const KIND_TEXT = 0x74; // t
const KIND_BINARY = 0x62; // b

/** Words per column in the table: kind byte, value offset, value length. */
const WORDS = 3;

/**
 * The column table of one decode call, shared by its tuples. The decoder
 * clears it at each call: the tuples of the previous call are stale by then.
 * Growing starts a fresh array instead of copying: tuples keep the array
 * their columns were written to.
 */
export class ColumnTable {
  words = new Int32Array(3 * 256);
  used = 0;

  /** Room for `n` words; returns where they start in `words` (read `words` after the call). */
  reserve(n: number): number {
    const at = this.used;
    if (this.words.length - at >= n) {
      this.used = at + n;
      return at;
    }
    this.words = new Int32Array(Math.max(n, 2 * this.words.length));
    this.used = n;
    return 0;
  }

  clear(): void {
    this.used = 0;
  }
}

export type TupleName = "newTuple" | "oldTuple";

function columnField(which: TupleName, i: number, sub: string): string {
  return `${which}.column[${i}].${sub}`;
}

/** Reads a TupleData at the cursor: Int16 ncols, then per column `n`, `u`, or `t`/`b` + Int32 length + bytes. */
export function parseTupleData(r: Reader, ctx: ParseContext, which: TupleName, relation: Relation | undefined): BaselineTuple {
  const table = ctx.columns;
  const n = r.i16(which === "newTuple" ? "newTuple.columnCount" : "oldTuple.columnCount");
  if (n < 0) throw r.error("INVALID_LENGTH", `${which}.columnCount`, r.pos - 2, `negative column count ${n}`);
  const b = r.bytes;
  const view = r.view;
  const shift = r.shift;
  const end = r.end;
  const base = table.reserve(WORDS * n);
  const t = table.words;
  let p = r.pos;
  for (let i = 0, k = base; i < n; i++, k += WORDS) {
    if (p >= end) throw r.error("INCOMPLETE", columnField(which, i, "kind"), p, "message ends before a column");
    const kind = b[p]!;
    if (kind === KIND_TEXT || kind === KIND_BINARY) {
      if (end - p < 5) throw r.error("INCOMPLETE", columnField(which, i, "length"), p + 1, "message ends inside a column length");
      const len = view.getInt32(shift + p + 1);
      if (len < 0) throw r.error("INVALID_LENGTH", columnField(which, i, "length"), p + 1, `negative column length ${len}`);
      // Compare with the room left rather than computing p + 5 + len.
      if (len > end - p - 5) throw r.error("INCOMPLETE", columnField(which, i, "value"), p + 5, `column value of ${len} bytes runs past the message end`);
      t[k] = kind;
      t[k + 1] = p + 5;
      t[k + 2] = len;
      p += 5 + len;
    } else if (kind === KIND_NULL || kind === KIND_UNCHANGED) {
      t[k] = kind;
      t[k + 1] = p + 1;
      t[k + 2] = 0;
      p++;
    } else {
      throw r.error("INVALID_COLUMN_KIND", columnField(which, i, "kind"), p, `invalid column kind 0x${kind.toString(16)} (expected n, u, t or b)`);
    }
  }
  r.pos = p;
  return new BaselineTuple(ctx.lease, b, t, base, n, relation, ctx.values);
}

/**
 * Checks the column count of the TupleData whose Int16 ncols is at `at`
 * against its relation. Called once the whole message was read, so
 * structural errors are reported first, as the wasm kernel does.
 */
export function checkColumnCount(r: Reader, relation: Relation | undefined, which: TupleName, at: number): void {
  if (relation === undefined) return;
  const n = r.view.getInt16(r.shift + at);
  if (n !== relation.columnCount) {
    throw r.error(
      "COLUMN_COUNT_MISMATCH", `${which}.columnCount`, at,
      `${which} has ${n} columns, relation ${relation.relationId} has ${relation.columnCount}`,
    );
  }
}

const readValue = (t: Tuple, i: number): unknown => t.value(i);

const KIND_NAMES: Record<number, ColumnKind> = {
  [KIND_NULL]: "null",
  [KIND_UNCHANGED]: "unchanged",
  [KIND_TEXT]: "text",
  [KIND_BINARY]: "binary",
};

/** A row of an Insert, Update or Delete: a view over the input and the column table. */
export class BaselineTuple implements Tuple {
  readonly #lease: Lease;
  readonly #bytes: Uint8Array;
  readonly #table: Int32Array;
  readonly #base: number;
  readonly #length: number;
  readonly #relation: Relation | undefined;
  readonly #values: ValueDecoder;

  constructor(
    lease: Lease, bytes: Uint8Array, table: Int32Array, base: number, length: number, relation: Relation | undefined,
    values: ValueDecoder,
  ) {
    this.#values = values;
    this.#lease = lease;
    this.#bytes = bytes;
    this.#table = table;
    this.#base = base;
    this.#length = length;
    this.#relation = relation;
  }

  get length(): number {
    this.#live();
    return this.#length;
  }

  get relation(): Relation | undefined {
    this.#live();
    return this.#relation;
  }

  index(column: ColumnRef): number {
    this.#live();
    return resolveColumn(this.#relation, this.#length, column);
  }

  kind(column: ColumnRef): ColumnKind {
    return KIND_NAMES[this.#table[this.#slot(column)]!]!;
  }

  isNull(column: ColumnRef): boolean {
    return this.#table[this.#slot(column)] === KIND_NULL;
  }

  text(column: ColumnRef): string | null | UnchangedToast {
    const k = this.#slot(column);
    const t = this.#table;
    switch (t[k]) {
      case KIND_TEXT:
        return readString(this.#bytes, t[k + 1]!, t[k + 2]!);
      case KIND_NULL:
        return null;
      case KIND_UNCHANGED:
        return unchangedToast;
      default:
        throw new PgoutputError(`column ${String(column)} is in binary format: read it with bytes()`, {
          code: "WRONG_COLUMN_KIND",
        });
    }
  }

  bytes(column: ColumnRef): Uint8Array | null | UnchangedToast {
    const k = this.#slot(column);
    const t = this.#table;
    switch (t[k]) {
      case KIND_NULL:
        return null;
      case KIND_UNCHANGED:
        return unchangedToast;
      default: {
        const offset = t[k + 1]!;
        return copyBytes(this.#bytes, offset, offset + t[k + 2]!);
      }
    }
  }

  byteLength(column: ColumnRef): number {
    return this.#table[this.#slot(column) + 2]!;
  }

  value(column: ColumnRef): unknown {
    const i = this.index(column);
    const k = this.#slot(i);
    const t = this.#table;
    return columnValue(this.#values, this.#relation, i, t[k]!, this.#bytes, t[k + 1]!, t[k + 2]!);
  }

  values(options?: TupleValuesOptions): unknown[] {
    return tupleValues(this, readValue, options);
  }

  toObject(options?: TupleValuesOptions): Record<string, unknown> {
    return tupleObject(this, readValue, options);
  }

  unchangedColumns(): number[] {
    this.#live();
    const out: number[] = [];
    const t = this.#table;
    for (let i = 0, k = this.#base; i < this.#length; i++, k += WORDS) {
      if (t[k] === KIND_UNCHANGED) out.push(i);
    }
    return out;
  }

  materialize(): MaterializedColumn[] {
    this.#live();
    return materializeTuple(this);
  }

  toJSON(): JsonColumn[] {
    this.#live();
    return tupleToJSON(this);
  }

  #live(): void {
    if (!this.#lease.live) throw staleView();
  }

  /** The table position of a column, after the staleness check and the column lookup. */
  #slot(column: ColumnRef): number {
    this.#live();
    return this.#base + WORDS * resolveColumn(this.#relation, this.#length, column);
  }
}
