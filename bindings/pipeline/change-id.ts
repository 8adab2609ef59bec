/**
 * A change's id: the commit LSN of its transaction and its position among
 * the records the transaction produced, written `X/Y:N` (`0/16B3748:3`).
 * The same after any restart: the server sends a transaction again with the
 * same commit LSN and the same changes in the same order, so a broker can
 * drop a redelivery by id (JetStream `Nats-Msg-Id`, a Redis entry id, an
 * idempotency key). Ids sort as the changes were committed: by LSN, then
 * position.
 *
 * Snapshot rows are not changes of a transaction: their ids start with
 * `snapshot:` (the initial snapshot's, at its consistent point) or
 * `backfill:` (a backfill chunk's, at its high watermark) and cannot collide
 * with a change's, nor with each other (no two chunks share a watermark).
 */
import { formatLsn, parseLsn } from "../lsn.ts";

/** Where a change is: its transaction's commit (or prepare) LSN and its position in the transaction's records. */
export interface ChangePosition {
  readonly lsn: bigint;
  readonly index: number;
}

export function changeId(lsn: bigint, index: number): string {
  return `${formatLsn(lsn)}:${index}`;
}

/** The id prefixes of rows that are no change: an initial snapshot's, a backfill's. */
export const ROW_ID_PREFIXES = { snapshot: "snapshot:", backfill: "backfill:" } as const;

/** Whether `id` is a snapshot or backfill row's (it says nothing about where the changes are). */
export function isRowId(id: string): boolean {
  return id.startsWith(ROW_ID_PREFIXES.snapshot) || id.startsWith(ROW_ID_PREFIXES.backfill);
}

/** The position of an `X/Y:N` id, or `undefined` for any other text (a snapshot row's id, say). */
export function parseChangeId(id: string): ChangePosition | undefined {
  const colon = id.lastIndexOf(":");
  if (colon < 0 || !/^\d+$/.test(id.slice(colon + 1))) return undefined;
  try {
    return { lsn: parseLsn(id.slice(0, colon)), index: Number(id.slice(colon + 1)) };
  } catch {
    return undefined;
  }
}

/** Negative, 0 or positive as `a` comes before, at or after `b` in commit order. */
export function compareChangePositions(a: ChangePosition, b: ChangePosition): number {
  return a.lsn < b.lsn ? -1 : a.lsn > b.lsn ? 1 : a.index - b.index;
}
