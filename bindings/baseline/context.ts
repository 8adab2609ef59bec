/**
 * The decoder state a parse function may read or change: the relation and
 * type caches, the column table and lease of the current call, and whether
 * the message at hand is inside a streamed block (it then carries an xid).
 */
import type { TypeInfo } from "../decoder.ts";
import type { Relation } from "../relation.ts";
import type { ColumnTable } from "./tuple.ts";
import type { Lease } from "./view.ts";
import type { ValueDecoder } from "../values/decoder.ts";

export interface ParseContext {
  readonly relations: Map<number, Relation>;
  readonly types: Map<number, TypeInfo>;
  readonly columns: ColumnTable;
  /** Turns column bytes into JS values for `tuple.value()`. */
  readonly values: ValueDecoder;
  /** The lease of the current decode call. */
  lease: Lease;
  /** Whether the message being parsed is inside a Stream Start / Stream Stop block. */
  inStream: boolean;
}
