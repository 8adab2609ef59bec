/**
 * TupleData: the columns of one row in an Insert, Update or Delete.
 *
 * Each column is one of four kinds, from the byte PostgreSQL sends before it:
 * `n` null, `u` unchanged TOASTed value (not sent; the row kept its old value —
 * never the same as null), `t` text format, `b` binary format (option `binary`).
 * Columns are addressed by index or, when the relation is known, by name.
 *
 * @example
 * ```ts
 * const row = insert.newTuple;
 * row.kind("title");          // "text"
 * row.text("title");          // "hello"
 * row.text(2) === unchangedToast; // an unchanged TOASTed column
 * ```
 */
import type { Relation } from "./relation.ts";
import { toBase64 } from "./utf8.ts";

export type ColumnKind = "null" | "unchanged" | "text" | "binary";

/**
 * The marker for an unchanged TOASTed column (`u`): PostgreSQL did not send
 * the value because it did not change. Distinct from `null` and `undefined`.
 */
export const unchangedToast: unique symbol = Symbol.for("pgoutput-wasm.unchangedToast");
export type UnchangedToast = typeof unchangedToast;

/** A column reference: its 0-based index, or its name in the relation. */
export type ColumnRef = number | string;

/** A column copied out of a tuple. */
export type MaterializedColumn =
  | { kind: "null" }
  | { kind: "unchanged" }
  | { kind: "text"; text: string }
  | { kind: "binary"; bytes: Uint8Array };

/** A column in JSON form: text, base64 bytes, `null`, or the unchanged marker object. */
export type JsonColumn =
  | null
  | { kind: "unchanged" }
  | { kind: "text"; text: string }
  | { kind: "binary"; base64: string };

export interface Tuple {
  /** Number of columns. */
  readonly length: number;
  /** The relation the row belongs to, when known. */
  readonly relation: Relation | undefined;
  /** The 0-based index of a column; throws `UNKNOWN_COLUMN` for a name the relation lacks. */
  index(column: ColumnRef): number;
  /** The column's kind. */
  kind(column: ColumnRef): ColumnKind;
  /** True for a NULL column (not for an unchanged TOASTed one). */
  isNull(column: ColumnRef): boolean;
  /** The text of a text-format column, `null` for NULL, `unchangedToast` for an unchanged TOASTed value; throws `WRONG_COLUMN_KIND` for a binary column. */
  text(column: ColumnRef): string | null | UnchangedToast;
  /** A copy of the column's raw bytes (text or binary format), `null` for NULL, `unchangedToast` for unchanged. */
  bytes(column: ColumnRef): Uint8Array | null | UnchangedToast;
  /** Byte length of the column's value (0 for null and unchanged). */
  byteLength(column: ColumnRef): number;
  /** Indexes of the columns sent as unchanged TOAST. */
  unchangedColumns(): number[];
  /**
   * The column as a JS value, parsed on this call from its text or binary
   * form by its type (see `values/options.ts` for what each type becomes and
   * the decoder's `values` option to change it); `null` for NULL,
   * `unchangedToast` for an unchanged TOASTed value.
   */
  value(column: ColumnRef): unknown;
  /** Every column's value; with `{ old }` (the change's old tuple), unchanged TOAST is filled from it where it carries the value. */
  values(options?: { old?: Tuple | null | undefined }): unknown[];
  /** The values by column name (needs the relation); `{ old }` as in `values()`. */
  toObject(options?: { old?: Tuple | null | undefined }): Record<string, unknown>;
  /** Every column copied out. */
  materialize(): MaterializedColumn[];
  /** Every column in JSON-safe form. */
  toJSON(): JsonColumn[];
}

/** Copies every column of a tuple out (shared by both backends). */
export function materializeTuple(t: Tuple): MaterializedColumn[] {
  const out: MaterializedColumn[] = new Array(t.length);
  for (let i = 0; i < t.length; i++) {
    const kind = t.kind(i);
    if (kind === "text") out[i] = { kind, text: t.text(i) as string };
    else if (kind === "binary") out[i] = { kind, bytes: t.bytes(i) as Uint8Array };
    else out[i] = { kind };
  }
  return out;
}

/** Every column of a tuple in JSON-safe form (shared by both backends). */
export function tupleToJSON(t: Tuple): JsonColumn[] {
  const out: JsonColumn[] = new Array(t.length);
  for (let i = 0; i < t.length; i++) {
    const kind = t.kind(i);
    if (kind === "text") out[i] = { kind, text: t.text(i) as string };
    else if (kind === "binary") out[i] = { kind, base64: toBase64(t.bytes(i) as Uint8Array) };
    else if (kind === "unchanged") out[i] = { kind };
    else out[i] = null;
  }
  return out;
}
