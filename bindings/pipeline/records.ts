/**
 * What a format hands a sink: records — one output line, event or document
 * each — as bytes back to back in one buffer, with what each is about kept
 * in parallel arrays (no object per record: a sink that only writes the
 * bytes, such as stdout, never makes one), and the transaction ends they
 * complete.
 *
 * A format writes a record's bytes into `bytes` and calls `end()`; the
 * record belongs to the transaction the pipeline set in `txn` and takes the
 * next position in it (its id, change-id.ts). A record at or before `skip`
 * (what the destination already holds, after a restart or a reconnect) is
 * taken back as soon as it ends: it is neither written nor counted.
 *
 * `acks` say which positions may be confirmed to the slot once these
 * records (and every earlier batch) are durable: after `after` records,
 * transaction end `lsn`.
 */
import type { Relation } from "../relation.ts";
import { ByteSink } from "../jsonl/sink.ts";
import { formatLsn } from "../lsn.ts";
import { compareChangePositions, ROW_ID_PREFIXES, type ChangePosition } from "./change-id.ts";

/** What a record is. */
export type RecordKind =
  | "insert" | "update" | "delete" | "truncate" | "message"
  | "begin" | "commit" | "prepare" | "commitPrepared" | "rollbackPrepared"
  | "snapshot";

/** The transaction records belong to (one object per transaction, shared by its records). */
export class RecordTransaction {
  /** The next record's position. */
  next = 0;
  /** Whether its records have a place in commit order (not a snapshot's, nor outside any transaction). */
  readonly ordered: boolean;
  readonly #idPrefix: string;

  constructor(
    /** Top-level xid; `undefined` for a non-transactional message or a snapshot row. */
    readonly xid: number | undefined,
    /** Commit LSN (prepare LSN of a prepared transaction; a non-transactional message's own LSN; a snapshot's consistent point). */
    readonly lsn: bigint,
    /** Commit (prepare) time, µs since the Unix epoch; `undefined` where none is known. */
    readonly time: bigint | undefined,
    /** Snapshot (or backfill) rows: ids that cannot collide with a change's. */
    readonly snapshot = false,
    /** Whose rows: the initial snapshot's or a backfill chunk's (change-id.ts). */
    rows: keyof typeof ROW_ID_PREFIXES = "snapshot",
  ) {
    this.#idPrefix = `${snapshot ? ROW_ID_PREFIXES[rows] : ""}${formatLsn(lsn)}:`;
    this.ordered = lsn > 0n && !snapshot;
  }

  id(index: number): string {
    return this.#idPrefix + index;
  }
}

/** Records outside any transaction (Relation-only output, say). */
export const NO_TRANSACTION = new RecordTransaction(undefined, 0n, undefined);

/** One record's facts, made on request (records.record(i)). */
export interface RecordInfo {
  /** `X/Y:N`, the same after any restart. */
  readonly id: string;
  readonly kind: RecordKind;
  readonly schema: string | undefined;
  readonly table: string | undefined;
  readonly relation: Relation | undefined;
  readonly xid: number | undefined;
  /** The transaction's commit LSN and the record's position in it. */
  readonly position: ChangePosition;
  /** Commit time, µs since the Unix epoch. */
  readonly time: bigint | undefined;
  /** The record's bytes (a view into the batch's buffer, valid while the sink holds the batch). */
  readonly bytes: Uint8Array;
}

export class Records {
  readonly bytes: ByteSink = new ByteSink();
  /** Where each record's bytes end in `bytes.buf`. */
  readonly ends: number[] = [];
  readonly kinds: RecordKind[] = [];
  readonly relations: (Relation | undefined)[] = [];
  readonly txns: RecordTransaction[] = [];
  readonly positions: number[] = [];
  /** Transaction ends these records complete, in order. */
  readonly acks: { after: number; lsn: bigint }[] = [];
  /** The transaction of the records a format ends now (set by the pipeline). */
  txn: RecordTransaction = NO_TRANSACTION;
  /** Records at or before this position are taken back (the destination has them). */
  skip: ChangePosition | undefined;
  /** Records taken back for `skip`. */
  skipped = 0;

  get length(): number {
    return this.ends.length;
  }

  /** Ends the record whose bytes were written since the previous `end()`. */
  end(kind: RecordKind, relation?: Relation): void {
    const txn = this.txn;
    const index = txn.next++;
    const skip = this.skip;
    if (skip !== undefined && txn.ordered && compareChangePositions({ lsn: txn.lsn, index }, skip) <= 0) {
      this.bytes.len = this.start(this.ends.length);
      this.skipped++;
      return;
    }
    this.ends.push(this.bytes.len);
    this.kinds.push(kind);
    this.relations.push(relation);
    this.txns.push(txn);
    this.positions.push(index);
  }

  /** Where record i's bytes start. */
  start(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1]!;
  }

  /** Record i's bytes (a view, valid while this batch lives). */
  bytesOf(i: number): Uint8Array {
    return this.bytes.buf.subarray(this.start(i), this.ends[i]);
  }

  /**
   * Record i's bytes without the newline that ends a line (a view, as
   * bytesOf): what a message-oriented sink sends as one message.
   */
  payloadOf(i: number): Uint8Array {
    const start = this.start(i);
    const end = this.ends[i]!;
    return this.bytes.buf.subarray(start, end > start && this.bytes.buf[end - 1] === 0x0a ? end - 1 : end);
  }

  id(i: number): string {
    return this.txns[i]!.id(this.positions[i]!);
  }

  record(i: number): RecordInfo {
    const txn = this.txns[i]!;
    const rel = this.relations[i];
    return {
      id: txn.id(this.positions[i]!),
      kind: this.kinds[i]!,
      schema: rel?.namespace,
      table: rel?.name,
      relation: rel,
      xid: txn.xid,
      position: { lsn: txn.lsn, index: this.positions[i]! },
      time: txn.time,
      bytes: this.bytesOf(i),
    };
  }

  /** The position of the last record (for what the destination holds after this batch). */
  get lastPosition(): ChangePosition | undefined {
    const n = this.ends.length;
    if (n === 0) return undefined;
    const txn = this.txns[n - 1]!;
    return txn.ordered ? { lsn: txn.lsn, index: this.positions[n - 1]! } : undefined;
  }

  /** Keeps the first n records (and the acks within them). */
  truncate(n: number): void {
    if (n >= this.ends.length) return;
    this.bytes.len = this.start(n);
    for (const a of [this.ends, this.kinds, this.relations, this.txns, this.positions]) a.length = n;
    while (this.acks.length > 0 && this.acks[this.acks.length - 1]!.after > n) this.acks.pop();
  }

  /** Empties it for reuse; the transaction context stays. */
  clear(): void {
    this.bytes.len = 0;
    for (const a of [this.ends, this.kinds, this.relations, this.txns, this.positions, this.acks]) a.length = 0;
    this.skipped = 0;
  }
}
