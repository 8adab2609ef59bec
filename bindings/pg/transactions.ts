/**
 * Whole transactions out of a pgoutput message stream: sans-IO, fed one
 * message at a time (in stream order), each copied out with `materialize()`
 * as it arrives, so the result outlives the decoder's batches.
 *
 * - A plain transaction: Begin, its messages, Commit.
 * - A prepared one (two-phase): BeginPrepare ... Prepare, then later a
 *   CommitPrepared or RollbackPrepared on its own.
 * - A streamed (in-progress) one: blocks (StreamStart ... StreamStop) of one
 *   or more transactions interleave with each other and with plain
 *   transactions; it ends with StreamCommit, StreamPrepare or StreamAbort.
 *   `assemble` (default) collects its blocks and yields it once, at
 *   StreamCommit / StreamPrepare, without the changes of subtransactions
 *   that a StreamAbort(xid, subXid) rolled back; an aborted transaction is
 *   dropped. `passthrough` yields each block as it ends, and the end
 *   messages as `StreamEnd` items, for consumers that apply blocks
 *   themselves (nothing is held in memory).
 *
 * A non-transactional logical decoding message comes as a `LogicalMessage`.
 * Relation and Type messages stay in the transaction's `messages`, where
 * PostgreSQL sent them, and so do the stream's RelationChanged and Ddl items
 * (`kind` "RelationChanged", "Ddl"), right where they were derived.
 *
 * @example
 * ```ts
 * const assembler = new TransactionAssembler();
 * for (const msg of batch) {
 *   const item = assembler.push(msg);
 *   if (item?.kind === "commit") console.log(item.xid, item.messages.length);
 * }
 * ```
 */
import type { PgoutputMessage } from "../messages.ts";
import { streamAbortLsn } from "../ack.ts";
import { StreamedTransactions } from "../streamed-transactions.ts";
import type { RelationChanged } from "../relation-changes.ts";
import type { Ddl } from "./ddl.ts";

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
  /** The end of the deciding record: the position to acknowledge once the transaction is processed. */
  readonly endLsn: bigint;
  /** Commit, prepare or rollback time, µs since the Unix epoch. */
  readonly time: bigint;
  /** The Origin message's fields, when the transaction came from another node. */
  readonly origin: { name: string; lsn: bigint } | undefined;
  /** The Begin / BeginPrepare, materialized; `undefined` for streamed transactions and decisions. */
  readonly begin: MaterializedMessage | undefined;
  /** The message that ended it, materialized. */
  readonly end: MaterializedMessage;
  /** Its messages in order (Relation, RelationChanged, Type, Insert, Update, Delete, Truncate, transactional Message, Ddl), materialized. */
  readonly messages: MaterializedMessage[];
  /**
   * Delivered before, by the same `ReplicationStream`, over a connection
   * that failed before the acknowledgement reached the server: its `endLsn`
   * is at most the highest one handed over before the reconnect. Set by
   * `ReplicationStream.transactions()`; always false from the assembler.
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

export interface AssemblerOptions {
  /** Streamed transactions: `assemble` (default) or `passthrough`. */
  streams?: "assemble" | "passthrough";
}

interface Open {
  begin: MaterializedMessage | undefined;
  xid: number;
  gid: string | undefined;
  origin: { name: string; lsn: bigint } | undefined;
  messages: MaterializedMessage[];
}

/** Kinds that are changes of a (sub)transaction: dropped when their subtransaction aborts. */
const CHANGE_KINDS = new Set(["Insert", "Update", "Delete", "Truncate", "Message", "Ddl"]);

export class TransactionAssembler {
  readonly streams: "assemble" | "passthrough";
  /** The plain or prepared transaction between Begin/BeginPrepare and Commit/Prepare. */
  #open: Open | undefined;
  /** Streamed transactions by top-level xid; passthrough holds only the block being read (taken at its StreamStop). */
  readonly #streamed = new StreamedTransactions<MaterializedMessage>();

  constructor(options: AssemblerOptions = {}) {
    this.streams = options.streams ?? "assemble";
    if (this.streams !== "assemble" && this.streams !== "passthrough") {
      throw new RangeError(`streams must be "assemble" or "passthrough", not ${String(this.streams)}`);
    }
  }

  /** Streamed transactions being assembled (assemble mode). */
  get pendingStreams(): number {
    return this.#streamed.size;
  }

  /** Forgets everything partial (e.g. after a reconnect, when the server starts over). */
  reset(): void {
    this.#open = undefined;
    this.#streamed.reset();
  }

  /**
   * Feeds one message; returns the item it completes, if any. The items the
   * stream derives (a RelationChanged, a Ddl) join the transaction's messages
   * where they came, materialized.
   */
  push(msg: PgoutputMessage | RelationChanged | Ddl): TransactionItem | undefined {
    switch (msg.kind) {
      case "Begin":
        this.#open = { begin: msg.materialize(), xid: msg.xid, gid: undefined, origin: undefined, messages: [] };
        return undefined;
      case "BeginPrepare":
        this.#open = { begin: msg.materialize(), xid: msg.xid, gid: msg.gid, origin: undefined, messages: [] };
        return undefined;
      case "Origin": {
        const origin = { name: msg.name, lsn: msg.originLsn };
        const held = this.#streamed.current;
        if (held !== undefined) held.origin = origin;
        else if (this.#streamed.blockXid === undefined && this.#open) this.#open.origin = origin;
        return undefined;
      }
      case "Commit":
      case "Prepare": {
        const open = this.#open ?? { begin: undefined, xid: 0, gid: undefined, origin: undefined, messages: [] };
        this.#open = undefined;
        const end = msg.materialize();
        if (msg.kind === "Commit") {
          return transaction("commit", open, false, msg.commitLsn, msg.endLsn, msg.commitTime, end);
        }
        return transaction("prepare", { ...open, xid: msg.xid, gid: msg.gid }, false, msg.prepareLsn, msg.endLsn, msg.prepareTime, end);
      }
      case "CommitPrepared":
      case "RollbackPrepared": {
        const decision = { begin: undefined, xid: msg.xid, gid: msg.gid, origin: undefined, messages: [] };
        return msg.kind === "CommitPrepared"
          ? transaction("commitPrepared", decision, false, msg.commitLsn, msg.endLsn, msg.commitTime, msg.materialize())
          : transaction("rollbackPrepared", decision, false, msg.prepareEndLsn, msg.rollbackEndLsn, msg.rollbackTime, msg.materialize());
      }
      case "StreamStart":
        // passthrough takes each block at its StreamStop, so every block opens an entry of its own.
        this.#streamed.start(msg.xid, msg.firstSegment);
        return undefined;
      case "StreamStop": {
        const xid = this.#streamed.blockXid;
        this.#streamed.stop();
        if (this.streams !== "passthrough" || xid === undefined) return undefined;
        const block = this.#streamed.take(xid)!;
        return { kind: "streamBlock", xid, firstSegment: block.firstSegment, origin: block.origin, messages: block.items };
      }
      case "StreamCommit":
      case "StreamPrepare": {
        const end = msg.materialize();
        if (this.streams === "passthrough") {
          return { kind: msg.kind === "StreamCommit" ? "streamCommit" : "streamPrepare", xid: msg.xid, subXid: undefined, endLsn: msg.endLsn, end };
        }
        const held = this.#streamed.take(msg.xid);
        const open: Open = { begin: undefined, xid: msg.xid, gid: undefined, origin: held?.origin, messages: held?.items ?? [] };
        return msg.kind === "StreamCommit"
          ? transaction("commit", open, true, msg.commitLsn, msg.endLsn, msg.commitTime, end)
          : transaction("prepare", { ...open, gid: msg.gid }, true, msg.prepareLsn, msg.endLsn, msg.prepareTime, end);
      }
      case "StreamAbort": {
        if (this.streams === "passthrough") {
          return { kind: "streamAbort", xid: msg.xid, subXid: msg.subXid, endLsn: streamAbortLsn(msg), end: msg.materialize() };
        }
        this.#streamed.abort(msg.xid, msg.subXid);
        return undefined;
      }
      case "Message":
        if (!msg.transactional) {
          return { kind: "message", lsn: msg.lsn, prefix: msg.prefix, content: msg.content, message: msg.materialize() };
        }
        this.#add(msg);
        return undefined;
      default:
        // Relation, Type, Insert, Update, Delete, Truncate
        this.#add(msg);
        return undefined;
    }
  }

  #add(msg: PgoutputMessage | RelationChanged | Ddl): void {
    if (this.#streamed.blockXid !== undefined) {
      // A change belongs to the (sub)transaction in its xid; a Relation or Type no abort removes.
      this.#streamed.add(msg.materialize(), CHANGE_KINDS.has(msg.kind) ? (msg as { xid?: number }).xid : undefined);
    } else if (this.#open) {
      this.#open.messages.push(msg.materialize());
    }
    // Outside any transaction (not sent by PostgreSQL): the decoder's caches already have it.
  }
}

function transaction(
  kind: Transaction["kind"], open: Open, streamed: boolean, lsn: bigint, endLsn: bigint, time: bigint, end: MaterializedMessage,
): Transaction {
  return { kind, xid: open.xid, gid: open.gid, streamed, lsn, endLsn, time, origin: open.origin, begin: open.begin, end, messages: open.messages, redelivered: false };
}
