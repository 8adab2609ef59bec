/**
 * What an initial snapshot yields before the stream's messages (made by
 * pg/snapshot.ts; read by the pipeline and the formats, which need no pg).
 */
import type { Relation } from "./relation.ts";
import type { Tuple } from "./tuple.ts";

/** A row of the snapshot: a view (valid until the next item is asked for) with the relation it belongs to. */
export interface SnapshotRow {
  readonly kind: "SnapshotRow";
  readonly relation: Relation;
  readonly tuple: Tuple;
}

/** After the last snapshot row, before the first streamed change. */
export interface SnapshotComplete {
  readonly kind: "SnapshotComplete";
  readonly slot: string;
  /** The exported snapshot's name. */
  readonly snapshotName: string;
  /** The slot's consistent point: streaming starts here. */
  readonly consistentPoint: bigint;
  readonly tables: number;
  readonly rows: number;
  readonly bytes: number;
}

export type SnapshotItem = SnapshotRow | SnapshotComplete;
