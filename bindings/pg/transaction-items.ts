/**
 * What `transactions()` and the TransactionAssembler (transactions.ts) hand
 * over: whole transactions (or their fragments), non-transactional
 * messages, and a streamed transaction's blocks and ends in passthrough.
 */
/** A materialized message (see `materialize()`): plain fields, bigints kept. */
export type MaterializedMessage = Record<string, unknown>;

/** A finished transaction, or the decision on a prepared one. */
export interface Transaction {
  /**
   * What happened: `commit` (Commit or StreamCommit), `prepare` (Prepare or
   * StreamPrepare: the changes of a transaction prepared for two-phase
   * commit), `commitPrepared` / `rollbackPrepared` (the decision on an
   * earlier prepare; no messages).
   */
  readonly kind: "commit" | "prepare" | "commitPrepared" | "rollbackPrepared";
  /** Xid of the (top-level) transaction. */
  readonly xid: number;
  /** GID of a prepared transaction. */
  readonly gid: string | undefined;
  /** Whether it came in StreamStart / StreamStop blocks. */
  readonly streamed: boolean;
  /** The LSN of the deciding record: commitLsn, prepareLsn, or for rollbackPrepared the prepare's end. */
  readonly lsn: bigint;
  /** The end of the deciding record: the position to acknowledge once the transaction is processed (0n on a fragment before the final one). */
  readonly endLsn: bigint;
  /** Commit, prepare or rollback time, µs since the Unix epoch. */
  readonly time: bigint;
  /** The Origin message's fields, when the transaction came from another node. */
  readonly origin: { name: string; lsn: bigint } | undefined;
  /** The Begin / BeginPrepare, materialized; `undefined` for streamed transactions and decisions. */
  readonly begin: MaterializedMessage | undefined;
  /** The message that ended it, materialized; `undefined` on a fragment before the final one. */
  readonly end: MaterializedMessage | undefined;
  /** Its messages in order (Relation, RelationChanged, Type, Insert, Update, Delete, Truncate, transactional Message, Ddl), materialized: this fragment's. */
  readonly messages: MaterializedMessage[];
  /** Whether this is the transaction's last (or only) fragment: the one with its end. */
  readonly final: boolean;
  /** Which fragment this is, from 0 (a transaction within `maxTransactionBytes` is fragment 0, final). */
  readonly fragment: number;
  /**
   * Delivered before (whole, or some of its fragments), by the same
   * `ReplicationStream`, over a connection that failed before the
   * acknowledgement reached the server: it comes again whole, from
   * fragment 0. Set by `ReplicationStream.transactions()`; always false
   * from the assembler.
   */
  readonly redelivered: boolean;
}

/** A non-transactional logical decoding message (`pg_logical_emit_message(false, ...)`). */
export interface LogicalMessage {
  readonly kind: "message";
  readonly lsn: bigint;
  readonly prefix: string;
  readonly content: Uint8Array;
  /** The Message, materialized. */
  readonly message: MaterializedMessage;
}

/** `passthrough`: one StreamStart ... StreamStop block. */
export interface StreamBlock {
  readonly kind: "streamBlock";
  /** Xid of the top-level transaction. */
  readonly xid: number;
  /** The first block of this transaction (since the connection started). */
  readonly firstSegment: boolean;
  readonly origin: { name: string; lsn: bigint } | undefined;
  /** The block's messages; changes carry the xid of the (sub)transaction that made them. */
  readonly messages: MaterializedMessage[];
  /** Whether this is the block's last (or only) part: a block over `maxTransactionBytes` comes in parts. */
  readonly final: boolean;
}

/** `passthrough`: the end of a streamed transaction (or, for streamAbort with subXid ≠ xid, of a subtransaction). */
export interface StreamEnd {
  readonly kind: "streamCommit" | "streamPrepare" | "streamAbort";
  readonly xid: number;
  /** streamAbort: the aborted subtransaction (equal to `xid` when the whole transaction aborted). */
  readonly subXid: number | undefined;
  /** The position to acknowledge, when the message has one. */
  readonly endLsn: bigint | undefined;
  /** The StreamCommit / StreamPrepare / StreamAbort, materialized. */
  readonly end: MaterializedMessage;
}

export type TransactionItem = Transaction | LogicalMessage | StreamBlock | StreamEnd;
