/**
 * What a backfill (an incremental snapshot taken while streaming, made by
 * pg/backfill.ts) interleaves with a stream's messages; read by the
 * pipeline and the formats, which need no pg.
 */
import type { Relation } from "./relation.ts";
import type { Tuple } from "./tuple.ts";

/**
 * Where a table's backfill is: the key of the last row handed over (each
 * column's text, in key order) and the keys to read again (rows a live
 * change left incomplete: an Update whose unchanged TOASTed values the
 * consumer may not hold). Pass it back (`backfill({ progress })`) to resume
 * after a restart. Plain JSON: store it with what the consumer made durable.
 */
export interface BackfillProgress {
  /** `schema.table`. */
  readonly table: string;
  /** The last key handed over, `null` before the first chunk. */
  readonly lastKey: readonly string[] | null;
  /** Keys to read again before the table is complete. */
  readonly reread: readonly (readonly string[])[];
  /** Every row was handed over (BackfillComplete). */
  readonly done: boolean;
}

/**
 * A row of a backfill chunk: the row as it is at this point of the stream
 * (no live change before it is newer). A view, valid until the next item is
 * asked for; upsert it by its key.
 */
export interface BackfillRow {
  readonly kind: "BackfillRow";
  readonly relation: Relation;
  readonly tuple: Tuple;
  /** The high watermark the chunk was handed over at: rows of a chunk share it. */
  readonly lsn: bigint;
  /** The table's progress once this row is finished. */
  readonly progress: BackfillProgress;
}

/** After the last row of a table: from here on, upserted rows and applied changes are exactly the table. */
export interface BackfillComplete {
  readonly kind: "BackfillComplete";
  /** `schema.table`. */
  readonly table: string;
  readonly relation: Relation;
  /** Rows handed over for the table. */
  readonly rows: number;
  /** Chunks read (including those read again). */
  readonly chunks: number;
  readonly lsn: bigint;
  readonly progress: BackfillProgress;
}

export type BackfillItem = BackfillRow | BackfillComplete;
