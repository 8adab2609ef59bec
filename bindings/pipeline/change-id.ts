/**
 * A change's id: the commit LSN of its transaction and its position among
 * the records the transaction produced, written `X/Y:N` (`0/16B3748:3`).
 * The same after any restart: the server sends a transaction again with the
 * same commit LSN and the same changes in the same order, so a broker can
 * drop a redelivery by id (JetStream `Nats-Msg-Id`, a Redis entry id, an
 * idempotency key). Ids sort as the changes were committed: by LSN, then
 * position.
 *
 * Records the pipeline derives from what this process has seen, not from
 * the transaction alone — a RelationChanged (a table's shape against the
 * one seen before), the Relation and Type messages of a raw format (sent
 * again in each new session) — may come after a restart where the first
 * run had none. They take no position of their own: the k-th of them
 * before the record at position N is `X/Y:N.k` (sub-position k), sorting
 * after the record before N and before N itself. So the records made from
 * the transaction keep their ids whatever a restart derives in between.
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
  /** A derived record's sub-position (1, 2, ...: before the record at `index`); 0 or absent for the others. */
  readonly sub?: number;
}

export function changeId(lsn: bigint, index: number, sub = 0): string {
  return `${formatLsn(lsn)}:${index}${sub === 0 ? "" : `.${sub}`}`;
}

/** The id prefixes of rows that are no change: an initial snapshot's, a backfill's. */
export const ROW_ID_PREFIXES = { snapshot: "snapshot:", backfill: "backfill:" } as const;

/** Whether `id` is a snapshot or backfill row's (it says nothing about where the changes are). */
export function isRowId(id: string): boolean {
  return id.startsWith(ROW_ID_PREFIXES.snapshot) || id.startsWith(ROW_ID_PREFIXES.backfill);
}

/** The position of an `X/Y:N` (or `X/Y:N.k`) id, or `undefined` for any other text (a snapshot row's id, say). */
export function parseChangeId(id: string): ChangePosition | undefined {
  const colon = id.lastIndexOf(":");
  const m = colon < 0 ? null : /^(\d+)(?:\.([1-9]\d*))?$/.exec(id.slice(colon + 1));
  if (m === null) return undefined;
  try {
    const position = { lsn: parseLsn(id.slice(0, colon)), index: Number(m[1]) };
    return m[2] === undefined ? position : { ...position, sub: Number(m[2]) };
  } catch {
    return undefined;
  }
}

/** Negative, 0 or positive as `a` comes before, at or after `b` in commit order (a derived record before the one at its index). */
export function compareChangePositions(a: ChangePosition, b: ChangePosition): number {
  if (a.lsn !== b.lsn) return a.lsn < b.lsn ? -1 : 1;
  if (a.index !== b.index) return a.index - b.index;
  // At one index: the derived records first, in turn, then the record itself.
  const as = a.sub ?? 0;
  const bs = b.sub ?? 0;
  if (as === bs) return 0;
  return as === 0 ? 1 : bs === 0 ? -1 : as - bs;
}
