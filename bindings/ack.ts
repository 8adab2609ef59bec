/**
 * What a logical replication client may report in its standby status
 * updates (`r`): sans-IO, no socket, no `pg` — a state machine fed with what
 * arrived, what was handed to the consumer, and what the consumer confirmed.
 *
 * The three positions of a status update:
 * - **written**: the highest WAL position received (XLogData start/end,
 *   keepalive end of WAL). Informational for logical slots.
 * - **flushed** and **applied**: what the server may consider done. For a
 *   logical slot the flushed position becomes `confirmed_flush_lsn`: after a
 *   reconnect the server skips every transaction whose commit record starts
 *   before it. So it must never pass a transaction the consumer has not
 *   finished with, and it never moves backwards.
 *
 * A transaction is finished (its end position may be confirmed) when:
 * - `auto` mode: the message that ends it — Commit, StreamCommit, Prepare,
 *   StreamPrepare, CommitPrepared, RollbackPrepared, or a StreamAbort of the
 *   top-level transaction — was handed over *and* the consumer came back for
 *   the next item (`next()`);
 * - `manual` mode: the consumer called `ack(lsn)` with its end (or later).
 *
 * The end position of a transaction is the end of the WAL record that decided
 * it: `endLsn` of Commit / StreamCommit / Prepare / StreamPrepare /
 * CommitPrepared, `rollbackEndLsn` of RollbackPrepared, and for a StreamAbort
 * its `abortLsn` (protocol 4) or the XLogData start it came in.
 *
 * Idle: no transaction is open (a Begin, BeginPrepare or StreamStart was
 * seen and its end was not) and every end handed over is confirmed. While
 * idle, a keepalive's end of WAL is confirmed too — the server has sent
 * everything before it, and the consumer has finished all of it — so the slot
 * does not hold WAL that nobody needs. (Keepalives must be fed in stream
 * order, i.e. when the consumer reaches them, not when they arrive.)
 *
 * @example
 * ```ts
 * const acks = new AckTracker({ mode: "auto" });
 * acks.received(walEnd);               // on every CopyData that arrives
 * acks.observe(commit, true);          // a Commit handed to the consumer
 * acks.next();                         // the consumer asks for the next item: the commit is confirmed
 * acks.keepalive(keepalive.walEnd);    // idle: the keepalive's position is confirmed too
 * send(encodeStandbyStatusUpdate(acks.status()));
 * ```
 */

/** `auto`: a transaction is confirmed when the consumer comes back after it; `manual`: through `ack(lsn)`. */
export type AckMode = "auto" | "manual";

/**
 * The fields of a message the tracker reads. Decoded pgoutput messages (views
 * or materialized objects) have them; absent fields are `undefined`.
 */
export interface AckMessage {
  readonly kind: string;
  readonly xid?: number | undefined;
  readonly subXid?: number;
  readonly endLsn?: bigint;
  readonly rollbackEndLsn?: bigint;
  readonly abortLsn?: bigint | null;
  readonly walStart?: bigint;
}

/**
 * Where a StreamAbort of a whole transaction is, for acknowledging: its
 * `abortLsn` (protocol 4), else the start of the XLogData it came in (0, as
 * in a capture without XLogData headers, is no position).
 */
export function streamAbortLsn(msg: Pick<AckMessage, "abortLsn" | "walStart">): bigint | undefined {
  return msg.abortLsn ?? (msg.walStart !== undefined && msg.walStart > 0n ? msg.walStart : undefined);
}

/**
 * Where the transaction a message ends may be confirmed: the end of the WAL
 * record that decided it (Commit, StreamCommit, Prepare, StreamPrepare,
 * CommitPrepared: `endLsn`; RollbackPrepared: `rollbackEndLsn`; a StreamAbort
 * of the whole transaction: `streamAbortLsn()`), or `undefined` for a
 * message that ends none. The one place that says which messages end a
 * transaction.
 */
export function transactionEnd(msg: AckMessage): bigint | undefined {
  switch (msg.kind) {
    case "Commit":
    case "Prepare":
    case "StreamCommit":
    case "StreamPrepare":
    case "CommitPrepared":
      return msg.endLsn;
    case "RollbackPrepared":
      return msg.rollbackEndLsn;
    case "StreamAbort":
      return msg.subXid === msg.xid ? streamAbortLsn(msg) : undefined;
    default:
      return undefined;
  }
}

/** The positions of a standby status update. */
export interface AckPositions {
  written: bigint;
  flushed: bigint;
  applied: bigint;
}

export interface AckTrackerOptions {
  /** Default `auto`. */
  mode?: AckMode;
  /**
   * A position already confirmed: the slot's `confirmed_flush_lsn` or the
   * start LSN the client asked for (everything before it is done). Default 0.
   */
  start?: bigint;
}

export class AckTracker {
  readonly mode: AckMode;
  #received: bigint;
  #confirmed: bigint;
  /** A Begin / BeginPrepare seen, its Commit / Prepare not yet. */
  #inTransaction = false;
  /** Streamed transactions (top-level xids) with a StreamStart seen and no end yet. */
  readonly #openStreams = new Set<number>();
  /** The highest end position handed over (0 when none). */
  #handedEnd = 0n;
  /** freeze() was called: `confirmed` no longer moves. */
  #frozen = false;

  constructor(options: AckTrackerOptions = {}) {
    this.mode = options.mode ?? "auto";
    if (this.mode !== "auto" && this.mode !== "manual") throw new RangeError(`ack mode must be "auto" or "manual", not ${String(this.mode)}`);
    const start = options.start ?? 0n;
    if (start < 0n) throw new RangeError(`negative start position ${start}`);
    this.#received = start;
    this.#confirmed = start;
  }

  /** Flushed / applied: the position confirmed so far (`lastAckedLsn`). */
  get confirmed(): bigint {
    return this.#confirmed;
  }

  /** Written: the highest WAL position received (never below `confirmed`). */
  get written(): bigint {
    return this.#received > this.#confirmed ? this.#received : this.#confirmed;
  }

  /** True when nothing handed over is unconfirmed and no transaction is open. */
  get idle(): boolean {
    return !this.#inTransaction && this.#openStreams.size === 0 && this.#handedEnd <= this.#confirmed;
  }

  /** Whether a transaction (plain, prepared or streamed) is open. */
  get inTransaction(): boolean {
    return this.#inTransaction || this.#openStreams.size > 0;
  }

  /** Whether a plain or prepared transaction is open (between its Begin and its Commit / Prepare): streamed blocks aside. */
  get inPlainTransaction(): boolean {
    return this.#inTransaction;
  }

  /** The end of the last transaction handed over (0 when none). */
  get handedOver(): bigint {
    return this.#handedEnd;
  }

  /** A WAL position arrived (XLogData start or end, keepalive end of WAL). */
  received(position: bigint): void {
    if (position > this.#received) this.#received = position;
  }

  /**
   * A message reached in stream order. `handedOver` tells whether the
   * consumer got it (directly, or inside a materialized transaction); a
   * transaction end that was consumed internally (e.g. an aborted streamed
   * transaction that an assembler dropped) closes the transaction without
   * waiting for a confirmation.
   */
  observe(msg: AckMessage, handedOver: boolean): void {
    switch (msg.kind) {
      case "Begin":
      case "BeginPrepare":
        this.#inTransaction = true;
        return;
      case "StreamStart":
        if (msg.xid !== undefined) this.#openStreams.add(msg.xid);
        return;
      case "Commit":
      case "Prepare":
        this.#inTransaction = false;
        break;
      case "StreamCommit":
      case "StreamPrepare":
      case "StreamAbort":
        // A subtransaction's abort leaves the transaction open.
        if (msg.xid !== undefined && (msg.kind !== "StreamAbort" || msg.subXid === msg.xid)) this.#openStreams.delete(msg.xid);
        break;
    }
    const end = transactionEnd(msg);
    if (end === undefined) return;
    this.received(end);
    if (handedOver && end > this.#handedEnd) this.#handedEnd = end;
  }

  /** The consumer came back for the next item: in `auto` mode, what it was handed is confirmed. */
  next(): void {
    if (this.mode === "auto" && !this.#frozen && this.#handedEnd > this.#confirmed) this.#confirmed = this.#handedEnd;
  }

  /**
   * A keepalive reached in stream order: its end of WAL counts as received,
   * and is confirmed when idle. Returns whether `confirmed` moved.
   */
  keepalive(walEnd: bigint): boolean {
    this.received(walEnd);
    if (this.idle && !this.#frozen && walEnd > this.#confirmed) {
      this.#confirmed = walEnd;
      return true;
    }
    return false;
  }

  /**
   * The consumer confirms everything up to `lsn` (a transaction's `endLsn`).
   * Clamped to what was received: a position the server never sent cannot be
   * confirmed. Never moves backwards. Returns the confirmed position.
   */
  ack(lsn: bigint): bigint {
    const limit = this.written;
    const at = lsn < limit ? lsn : limit;
    if (at > this.#confirmed && !this.#frozen) this.#confirmed = at;
    return this.#confirmed;
  }

  /**
   * The client is stopping: `confirmed` stays where it is, so that what the
   * final status update reports is what `confirmed` says afterwards. (A
   * consumer that stops inside its loop asks for the next item once more on
   * the way out; that must not confirm the transaction it stopped in.)
   */
  freeze(): void {
    this.#frozen = true;
  }

  /**
   * A new connection starts streaming from `confirmed`: open transactions
   * are forgotten (the server sends them again, whole); what was confirmed
   * and handed over stays.
   */
  restart(): void {
    this.#inTransaction = false;
    this.#openStreams.clear();
  }

  /** The positions to report now. */
  status(): AckPositions {
    const c = this.#confirmed;
    return { written: this.written, flushed: c, applied: c };
  }
}
