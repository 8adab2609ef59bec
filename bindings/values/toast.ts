/**
 * Typed values of a whole tuple, and unchanged TOAST made explicit.
 *
 * An Update's new tuple may carry `u` for a TOASTed column whose value did
 * not change: PostgreSQL does not send it. Its value is the `unchangedToast`
 * marker (from `bindings/tuple.ts`), never `null`. On request, it is filled
 * from the old tuple — but only from a column the old tuple really carries
 * (`t` or `b`): an old tuple of kind `K` (key only) sends the other columns
 * as `n`, which does not mean NULL, so those stay `unchangedToast`. An old
 * tuple of kind `O` (REPLICA IDENTITY FULL) carries every column.
 *
 * These are pure functions over the `Tuple` interface; `read` decides how a
 * column's value is produced (`columnReader(values)` goes through the public
 * API; a backend may pass a reader that avoids the byte copy).
 *
 * @example
 * ```ts
 * const read = columnReader(new ValueDecoder());
 * tupleObject(update.newTuple, read, { old: update.oldTuple });
 * // { id: 1, body: "…from the old tuple…", note: unchangedToast }
 * unchangedColumnNames(update.newTuple); // ["body", "note"]
 * ```
 */
import { PgoutputError } from "../errors.ts";
import { unchangedToast, type Tuple } from "../tuple.ts";
import { columnValue } from "./column.ts";
import type { ValueDecoder } from "./decoder.ts";
import { KIND_BINARY as KIND_B, KIND_TEXT as KIND_T } from "../tape.ts";

/** Produces the value of column `index` of a tuple: `null`, `unchangedToast`, or the parsed value. */
export type ColumnReader = (tuple: Tuple, index: number) => unknown;

/** A reader over the public `Tuple` API: types from the tuple's relation (unknown without one: text/bytes). */
export function columnReader(values: ValueDecoder): ColumnReader {
  return (t, i) => {
    const kind = t.kind(i);
    if (kind === "null") return null;
    if (kind === "unchanged") return unchangedToast;
    const bytes = t.bytes(i) as Uint8Array;
    // The tuples' own dispatch, so errors name the column the same way.
    return columnValue(values, t.relation, i, kind === "text" ? KIND_T : KIND_B, bytes, 0, bytes.length);
  };
}

export interface TupleValuesOptions {
  /** The old tuple of the same change (Update `K`/`O`), to fill unchanged TOAST from. */
  old?: Tuple | null | undefined;
}

/**
 * The tuple to read column `index` from: the old tuple when the new one has
 * unchanged TOAST there and the old one carries the value, else the new one.
 */
export function sourceOf(tuple: Tuple, index: number, old: Tuple | null | undefined): Tuple {
  if (old == null || tuple.kind(index) !== "unchanged" || index >= old.length) return tuple;
  const k = old.kind(index);
  return k === "text" || k === "binary" ? old : tuple;
}

/** Every column's value, in column order; unchanged TOAST filled from `options.old` where it carries the value. */
export function tupleValues(tuple: Tuple, read: ColumnReader, options: TupleValuesOptions = {}): unknown[] {
  const out: unknown[] = new Array(tuple.length);
  for (let i = 0; i < tuple.length; i++) out[i] = read(sourceOf(tuple, i, options.old), i);
  return out;
}

/** The values by column name (needs the relation); unchanged TOAST filled as in `tupleValues`. */
export function tupleObject(tuple: Tuple, read: ColumnReader, options: TupleValuesOptions = {}): Record<string, unknown> {
  const relation = tuple.relation;
  if (relation === undefined) {
    throw new PgoutputError("values by column name need the Relation message of this row, and none was seen", { code: "UNKNOWN_COLUMN" });
  }
  const columns = relation.columns;
  const out: Record<string, unknown> = {};
  for (let i = 0; i < tuple.length; i++) out[columns[i]!.name] = read(sourceOf(tuple, i, options.old), i);
  return out;
}

/** Names of the columns sent as unchanged TOAST (indexes: `tuple.unchangedColumns()`). */
export function unchangedColumnNames(tuple: Tuple): string[] {
  const idx = tuple.unchangedColumns();
  const columns = tuple.relation?.columns;
  return idx.map((i) => columns?.[i]?.name ?? String(i));
}

/** Indexes still unchanged TOAST after filling from `old` (what `tupleValues` leaves as `unchangedToast`). */
export function unresolvedUnchanged(tuple: Tuple, old: Tuple | undefined): number[] {
  return tuple.unchangedColumns().filter((i) => sourceOf(tuple, i, old) === tuple);
}
