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
 *
 * Keys and headers, for sinks that carry them (docs/sinks.md): a format
 * may give a record a key — bytes written into `keys` before its `end()`
 * (Debezium's key struct: the replica identity columns) — and headers:
 * its own (`header()` before `end()`), or every record's at once, made on
 * request from the batch's facts by the function the format sets in
 * `headers` (CloudEvents binary mode's `ce-*` attributes). Sinks read them
 * with `keyOf(i)` and `headersOf(i)`. Both are kept only once a format
 * uses them: for one that does not (JSON Lines), `end()` checks one field.
 */
import type { Relation } from "../relation.ts";
import { ByteSink } from "../jsonl/sink.ts";
import { formatLsn, lsnFromHalves } from "../lsn.ts";
import { timeOfHalves } from "../time.ts";
import { compareChangePositions, ROW_ID_PREFIXES, type ChangePosition } from "./change-id.ts";
import { copyBytes } from "../copy-bytes.ts";

/** What a record is. */
export type RecordKind =
  | "insert" | "update" | "delete" | "truncate" | "message" | "relationChanged" | "ddl"
  | "begin" | "commit" | "prepare" | "commitPrepared" | "rollbackPrepared"
  | "snapshot"
  /** A delete's follow-up with no value, only its key (Debezium's `tombstones`: what Kafka log compaction drops a key by). */
  | "tombstone";

/** The transaction records belong to (one object per transaction, shared by its records). */
export class RecordTransaction {
  /** The next record's position. */
  next = 0;
  /** Derived records ended since the last record that took a position (their sub-positions, change-id.ts). */
  derived = 0;
  /** Whether its records have a place in commit order (not a snapshot's, nor outside any transaction). */
  readonly ordered: boolean;
  /** Made on the first id() (a sink that writes only the bytes never asks; formatLsn per transaction cost decode --changes 2%). */
  #idPrefix: string | undefined;
  readonly #rows: keyof typeof ROW_ID_PREFIXES;
  #lsn: bigint | undefined;
  #time: bigint | undefined;
  /** Whether lsn and time are to be made from the halves below (ofHalves), on their first read. */
  #fromHalves = false;
  #lsnHi = 0;
  #lsnLo = 0;
  #timeHi = 0;
  #timeLo = 0;

  constructor(
    /** Top-level xid; `undefined` for a non-transactional message or a snapshot row. */
    readonly xid: number | undefined,
    lsn: bigint,
    time: bigint | undefined,
    /** Snapshot (or backfill) rows: ids that cannot collide with a change's. */
    readonly snapshot = false,
    /** Whose rows: the initial snapshot's or a backfill chunk's (change-id.ts). */
    rows: keyof typeof ROW_ID_PREFIXES = "snapshot",
  ) {
    this.#rows = rows;
    this.#lsn = lsn;
    this.#time = time;
    this.ordered = lsn > 0n && !snapshot;
  }

  /**
   * A plain transaction's, from its Begin's fields as 32-bit halves (the
   * time as the wire's µs since 2000): the pipeline makes one per
   * transaction, and a sink that writes only the bytes never reads them,
   * so their bigints (three per transaction, 2% of decode --changes) wait.
   */
  static ofHalves(xid: number, lsnHi: number, lsnLo: number, timeHi: number, timeLo: number): RecordTransaction {
    // `ordered` is worked out from a stand-in LSN of the same sign; the real one is made on its first read.
    const t = new RecordTransaction(xid, (lsnHi | lsnLo) === 0 ? 0n : 1n, undefined);
    t.#lsn = undefined;
    t.#fromHalves = true;
    t.#lsnHi = lsnHi;
    t.#lsnLo = lsnLo;
    t.#timeHi = timeHi;
    t.#timeLo = timeLo;
    return t;
  }

  /** Commit LSN (prepare LSN of a prepared transaction; a non-transactional message's own LSN; a snapshot's consistent point). */
  get lsn(): bigint {
    return (this.#lsn ??= lsnFromHalves(this.#lsnHi, this.#lsnLo));
  }

  /** Commit (prepare) time, µs since the Unix epoch; `undefined` where none is known. */
  get time(): bigint | undefined {
    if (this.#time === undefined && this.#fromHalves) this.#time = timeOfHalves(this.#timeHi, this.#timeLo);
    return this.#time;
  }

  id(index: number, sub = 0): string {
    const prefix = (this.#idPrefix ??= `${this.snapshot ? ROW_ID_PREFIXES[this.#rows] : ""}${formatLsn(this.lsn)}:`);
    return sub === 0 ? prefix + index : `${prefix}${index}.${sub}`;
  }

  /** The position of the next record: a derived one (see change-id.ts) takes a sub-position before it. */
  take(derived: boolean): number {
    if (derived) return ++this.derived;
    this.derived = 0;
    this.next++;
    return 0;
  }
}

/** A transaction end among a batch's acks (Records.acks), its LSN made a bigint on the first read (the pipeline reads a batch's last only). */
export class TransactionEnd {
  readonly #hi: number;
  readonly #lo: number;
  #lsn: bigint | undefined;

  constructor(readonly after: number, lsnHi: number, lsnLo: number) {
    this.#hi = lsnHi;
    this.#lo = lsnLo;
  }

  get lsn(): bigint {
    return (this.#lsn ??= lsnFromHalves(this.#hi, this.#lo));
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
  // The records' facts, one array each, written by index up to #n. clear() and truncate() keep the arrays'
  // room for the next batch (a JS array cut to 0 gives its store back, and six regrown per batch were 2% of
  // decode --changes): what they hold past #n is cut off before anyone else reads them (the getters below).
  readonly #ends: number[] = [];
  readonly #kinds: RecordKind[] = [];
  readonly #relations: (Relation | undefined)[] = [];
  readonly #txns: RecordTransaction[] = [];
  readonly #positions: number[] = [];
  readonly #subs: number[] = [];
  #n = 0;
  /** Whether the arrays hold entries past #n. */
  #stale = false;

  /** Where each record's bytes end in `bytes.buf`. */
  get ends(): number[] {
    return this.#fresh(this.#ends);
  }

  get kinds(): RecordKind[] {
    return this.#fresh(this.#kinds);
  }

  get relations(): (Relation | undefined)[] {
    return this.#fresh(this.#relations);
  }

  get txns(): RecordTransaction[] {
    return this.#fresh(this.#txns);
  }

  get positions(): number[] {
    return this.#fresh(this.#positions);
  }

  /** Each record's sub-position: 0, or k for the k-th derived record before `positions[i]` (change-id.ts). */
  get subs(): number[] {
    return this.#fresh(this.#subs);
  }

  /** `facts` (one of the arrays), after the arrays were cut to #n if they hold more. */
  #fresh<T>(facts: T): T {
    if (this.#stale) this.#cut();
    return facts;
  }

  #cut(): void {
    const n = this.#n;
    this.#ends.length = n;
    this.#kinds.length = n;
    this.#relations.length = n;
    this.#txns.length = n;
    this.#positions.length = n;
    this.#subs.length = n;
    this.#stale = false;
  }

  /** Record #n's facts (over what a cleared batch left there, or after the last). */
  #add(end: number, kind: RecordKind, relation: Relation | undefined, txn: RecordTransaction, position: number, sub: number): void {
    const n = this.#n++;
    this.#ends[n] = end;
    this.#kinds[n] = kind;
    this.#relations[n] = relation;
    this.#txns[n] = txn;
    this.#positions[n] = position;
    this.#subs[n] = sub;
  }

  /** Transaction ends these records complete, in order. */
  readonly acks: { readonly after: number; readonly lsn: bigint }[] = [];
  /** The transaction of the records a format ends now (set by the pipeline). */
  txn: RecordTransaction = NO_TRANSACTION;
  /** Records at or before this position are taken back (the destination has them). */
  skip: ChangePosition | undefined;
  /** Records taken back for `skip`. */
  skipped = 0;
  /**
   * Every record's headers, made on request (`headersOf(i)`) from the
   * batch's facts: set by a format whose records have them (CloudEvents
   * binary mode). Kept across `clear()`.
   */
  headers: ((records: Records, i: number) => Readonly<Record<string, string>>) | undefined;
  /**
   * The media type of each record and of a JSON array of them, for sinks
   * whose protocol names it (HTTP's content-type, a NATS Content-Type
   * header): set by a format whose records are of a type of their own
   * (CloudEvents structured mode). Kept across `clear()`.
   */
  mediaType: { readonly record: string; readonly array: string } | undefined;
  /** Keys and the records' own headers, from the first a format writes on. */
  #extras: Extras | undefined;

  get length(): number {
    return this.#n;
  }

  /**
   * Where the next record's key is written (before its `end()`); nothing
   * written: it has none. Records ended before a key was first written
   * have none either.
   */
  get keys(): ByteSink {
    return (this.#extras ??= new Extras(this.#n)).keys;
  }

  /** Adds a header to the next record (before its `end()`). */
  header(name: string, value: string): void {
    ((this.#extras ??= new Extras(this.#n)).next ??= {})[name] = value;
  }

  /**
   * Ends the record whose bytes were written since the previous `end()`.
   * `derived`: made from what this process saw rather than from the
   * transaction alone (a RelationChanged; a raw format's Relation and Type
   * messages), so a restart may make it where the first run did not: it
   * takes a sub-position (change-id.ts).
   */
  end(kind: RecordKind, relation?: Relation, derived = kind === "relationChanged"): void {
    const txn = this.txn;
    const index = txn.next;
    const sub = txn.take(derived);
    const skip = this.skip;
    if (skip !== undefined && txn.ordered && compareChangePositions({ lsn: txn.lsn, index, sub }, skip) <= 0) {
      this.bytes.len = this.start(this.#n);
      this.#extras?.truncate(this.#n);
      this.skipped++;
      return;
    }
    this.#extras?.ended(this.#n);
    this.#add(this.bytes.len, kind, relation, txn, index, sub);
  }

  /**
   * Ends a record whose bytes end at `end` of `bytes`: a format that wrote
   * several records' bytes at once ends them in turn. Never one at or
   * before `skip` (taking a record back would cut the ones after it).
   */
  endAt(end: number, kind: RecordKind, relation?: Relation, derived = kind === "relationChanged"): void {
    const txn = this.txn;
    // Its key and headers, as end() takes them (the kernel's lines write none: an empty key is none).
    this.#extras?.ended(this.#n);
    const position = txn.next;
    this.#add(end, kind, relation, txn, position, txn.take(derived));
  }

  /** Where record i's bytes start. */
  start(i: number): number {
    return i === 0 ? 0 : this.#ends[i - 1]!;
  }

  /** Record i's bytes (a view, valid while this batch lives). */
  bytesOf(i: number): Uint8Array {
    return this.bytes.buf.subarray(this.start(i), this.#ends[i]);
  }

  /**
   * Record i's bytes without the newline that ends a line (a view, as
   * bytesOf): what a message-oriented sink sends as one message.
   */
  payloadOf(i: number): Uint8Array {
    const start = this.start(i);
    const end = this.#ends[i]!;
    return this.bytes.buf.subarray(start, end > start && this.bytes.buf[end - 1] === 0x0a ? end - 1 : end);
  }

  id(i: number): string {
    return this.#txns[i]!.id(this.#positions[i]!, this.#subs[i]);
  }

  /** Record i's position in its transaction (change-id.ts). */
  positionOf(i: number): ChangePosition {
    const sub = this.#subs[i]!;
    const at = { lsn: this.#txns[i]!.lsn, index: this.#positions[i]! };
    return sub === 0 ? at : { ...at, sub };
  }

  /** Record i's key (a view, valid while this batch lives), or `undefined` when it has none. */
  keyOf(i: number): Uint8Array | undefined {
    return this.#extras?.keyOf(i);
  }

  /** Record i's headers (the format's for every record, then its own), or `undefined` when it has none. */
  headersOf(i: number): Readonly<Record<string, string>> | undefined {
    const all = this.headers?.(this, i);
    const own = this.#extras?.own?.get(i);
    return own === undefined ? all : all === undefined ? own : { ...all, ...own };
  }

  /**
   * Rewrites the bytes of the records from `from` on, for a format that
   * wraps another's records (CloudEvents' structured mode): `wrap(i, body)`
   * writes record i's new bytes into `bytes`, given its old ones (a copy).
   */
  rewrite(from: number, wrap: (i: number, body: Uint8Array) => void): void {
    const n = this.#n;
    if (from >= n) return;
    const base = this.start(from);
    const old = copyBytes(this.bytes.buf, base, this.bytes.len);
    const oldEnds = this.#ends.slice(from, n);
    this.bytes.len = base;
    let at = 0;
    for (let i = from; i < n; i++) {
      const end = oldEnds[i - from]! - base;
      wrap(i, old.subarray(at, end));
      at = end;
      this.#ends[i] = this.bytes.len;
    }
  }

  record(i: number): RecordInfo {
    const txn = this.#txns[i]!;
    const rel = this.#relations[i];
    return {
      id: this.id(i),
      kind: this.#kinds[i]!,
      schema: rel?.namespace,
      table: rel?.name,
      relation: rel,
      xid: txn.xid,
      position: this.positionOf(i),
      time: txn.time,
      bytes: this.bytesOf(i),
    };
  }

  /** The position of the last record (for what the destination holds after this batch). */
  get lastPosition(): ChangePosition | undefined {
    const n = this.#n;
    if (n === 0) return undefined;
    return this.#txns[n - 1]!.ordered ? this.positionOf(n - 1) : undefined;
  }

  /** Keeps the first n records (and the acks, keys and headers within them). */
  truncate(n: number): void {
    if (n >= this.#n) return;
    this.bytes.len = this.start(n);
    this.#n = n;
    this.#stale = true;
    while (this.acks.length > 0 && this.acks[this.acks.length - 1]!.after > n) this.acks.pop();
    this.#extras?.truncate(n);
  }

  /** Empties it for reuse; the transaction context (and the `headers` function) stays. */
  clear(): void {
    this.bytes.len = 0;
    this.#n = 0;
    this.#stale = true;
    this.acks.length = 0;
    this.skipped = 0;
    this.#extras?.truncate(0);
  }
}

/**
 * A batch's keys (back to back in `keys`, each record's end in `keyEnds`:
 * an empty one is no key) and the headers records have of their own: made
 * when a format writes the first, for records ended before then too.
 */
class Extras {
  readonly keys = new ByteSink();
  readonly keyEnds: number[];
  /** The next record's headers (`header()` before its `end()`). */
  next: Record<string, string> | undefined;
  own: Map<number, Readonly<Record<string, string>>> | undefined;

  constructor(records: number) {
    this.keyEnds = new Array<number>(records).fill(0);
  }

  /** Record i ended: its key is what was written since the previous one's, its headers `next`. */
  ended(i: number): void {
    this.keyEnds.push(this.keys.len);
    if (this.next !== undefined) {
      (this.own ??= new Map()).set(i, this.next);
      this.next = undefined;
    }
  }

  #start(i: number): number {
    return i === 0 ? 0 : this.keyEnds[i - 1]!;
  }

  keyOf(i: number): Uint8Array | undefined {
    const start = this.#start(i);
    const end = this.keyEnds[i]!;
    return end > start ? this.keys.buf.subarray(start, end) : undefined;
  }

  /** Keeps the first n records' (and drops what was written for the next one). */
  truncate(n: number): void {
    this.keys.len = this.#start(n);
    this.keyEnds.length = n;
    if (this.own !== undefined) for (const i of this.own.keys()) if (i >= n) this.own.delete(i);
    this.next = undefined;
  }
}
