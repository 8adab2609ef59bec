/**
 * Whole transactions out of a pgoutput message stream: sans-IO but for the
 * temporary files of large streamed transactions, fed one message at a
 * time (in stream order), each copied out with `materialize()`, so the
 * result outlives the decoder's batches.
 *
 * - A plain transaction: Begin, its messages, Commit.
 * - A prepared one (two-phase): BeginPrepare ... Prepare, then later a
 *   CommitPrepared or RollbackPrepared on its own.
 * - A streamed (in-progress) one: blocks (StreamStart ... StreamStop) of one
 *   or more transactions interleave with each other and with plain
 *   transactions; it ends with StreamCommit, StreamPrepare or StreamAbort.
 *   `assemble` (default) holds its blocks and yields it at StreamCommit /
 *   StreamPrepare, without the changes of subtransactions that a
 *   StreamAbort(xid, subXid) rolled back; an aborted transaction is
 *   dropped. `passthrough` yields each block as it ends, and the end
 *   messages as `StreamEnd` items, for consumers that apply blocks
 *   themselves.
 *
 * Memory is bounded by `maxTransactionBytes` (default 16 MiB, counted as
 * the bytes PostgreSQL sent plus a small overhead per message): a larger
 * transaction comes as several `Transaction` items in order, its
 * fragments, `final` on the last (`fragment` counts them from 0); only the
 * final one has the end message and an `endLsn` to acknowledge (0n before
 * it), so a transaction is acknowledged only once its last fragment is
 * finished. A plain transaction's fragments come as its changes arrive; a
 * streamed one's after its StreamCommit (its changes may still be rolled
 * back until then), its blocks held as the server sent them — in memory
 * up to the same bound, beyond in a temporary file (held-log.ts) — and
 * decoded again at the end by a decoder of the assembler's own
 * (`replayDecoder`). A passthrough block larger than the bound comes as
 * several `StreamBlock` items, `final` on the last.
 *
 * After `push()` returned an item, `pull()` returns the further fragments
 * of a streamed transaction that the same message completed, until it
 * returns `undefined`; push the next message only then.
 *
 * A non-transactional logical decoding message comes as a `LogicalMessage`.
 * Relation and Type messages stay in the transaction's `messages`, where
 * PostgreSQL sent them, and so do the stream's RelationChanged and Ddl items
 * (`kind` "RelationChanged", "Ddl"), right where they were derived.
 *
 * @example
 * ```ts
 * const assembler = new TransactionAssembler({ maxTransactionBytes: 64 << 20 });
 * for (const msg of batch) {
 *   for (let item = assembler.push(msg); item; item = assembler.pull()) {
 *     if (item.kind === "commit") apply(item.messages, item.final);
 *   }
 * }
 * ```
 */
import type { PgoutputMessage } from "../messages.ts";
import type { PgoutputDecoder } from "../decoder.ts";
import { streamAbortLsn } from "../ack.ts";
import { createDecoderSync } from "../create-decoder.ts";
import { HeldBudget } from "../held-log.ts";
import { StreamedTransactions } from "../streamed-transactions.ts";
import { hold, replayed } from "../streamed-replay.ts";
import type { RelationChanged } from "../relation-changes.ts";
import { ddlOf, type Ddl } from "./ddl.ts";
import type { BackfillItem } from "../backfill-items.ts";

export type { LogicalMessage, MaterializedMessage, StreamBlock, StreamEnd, Transaction, TransactionItem } from "./transaction-items.ts";
import type { MaterializedMessage, StreamBlock, Transaction, TransactionItem } from "./transaction-items.ts";

export interface AssemblerOptions {
  /** Streamed transactions: `assemble` (default) or `passthrough`. */
  streams?: "assemble" | "passthrough";
  /**
   * The most of a transaction held before it is handed over as a fragment,
   * in bytes as sent plus a small overhead per message (default 16 MiB);
   * also the memory the streamed transactions being held share before
   * they go to temporary files.
   */
  maxTransactionBytes?: number;
  /**
   * Decodes held streamed transactions again at their end: a decoder made
   * like the stream's (its values options), used for nothing else.
   * `ReplicationStream.transactions()` forks the stream's; default a wasm
   * decoder with default options.
   */
  replayDecoder?: PgoutputDecoder;
  /** Where the temporary files of large streamed transactions are made (default the OS temp directory). */
  tempDir?: string;
  /** The DDL trigger's messages of a held streamed transaction become Ddl items again when decoded back (the stream sets it with its `ddl`). */
  ddl?: boolean;
}

/**
 * The default `maxTransactionBytes`. A fragment's materialized objects take
 * about twice its bytes, and the one before it is garbage not yet collected
 * while the next is made: at 32 MiB a 2 GB transaction peaked at 230 MiB of
 * RSS (npm run test:large); 16 MiB keeps a client well under 256 MiB.
 */
export const DEFAULT_MAX_TRANSACTION_BYTES = 16 << 20;
/** Counted per message held on top of its bytes: what its materialized object costs beyond them, roughly. */
const MESSAGE_OVERHEAD = 64;

/** A transaction being gathered: the fields its fragments share, and the current fragment's messages. */
interface Open {
  kind: Transaction["kind"];
  begin: MaterializedMessage | undefined;
  xid: number;
  gid: string | undefined;
  lsn: bigint;
  time: bigint;
  streamed: boolean;
  origin: { name: string; lsn: bigint } | undefined;
  messages: MaterializedMessage[];
  bytes: number;
  fragment: number;
}

/** A passthrough block being gathered. */
interface Block {
  xid: number;
  firstSegment: boolean;
  origin: { name: string; lsn: bigint } | undefined;
  messages: MaterializedMessage[];
  bytes: number;
}

const sizeOf = (msg: PgoutputMessage): number => msg.bytes().length + MESSAGE_OVERHEAD;

export class TransactionAssembler {
  readonly streams: "assemble" | "passthrough";
  readonly maxTransactionBytes: number;
  /** The plain or prepared transaction between Begin/BeginPrepare and Commit/Prepare. */
  #open: Open | undefined;
  /** Streamed transactions by top-level xid (assemble), their messages as sent. */
  readonly #streamed: StreamedTransactions;
  /** passthrough: the block being read. */
  #block: Block | undefined;
  /** The fragments of a streamed transaction that a StreamCommit / StreamPrepare completed, not all pulled yet. */
  #delivery: Generator<Transaction, void> | undefined;
  #replay: PgoutputDecoder | undefined;
  /** The DDL trigger's messages are Ddl items (the stream's `ddl`). */
  readonly #ddl: boolean;

  constructor(options: AssemblerOptions = {}) {
    this.streams = options.streams ?? "assemble";
    if (this.streams !== "assemble" && this.streams !== "passthrough") {
      throw new RangeError(`streams must be "assemble" or "passthrough", not ${String(this.streams)}`);
    }
    const max = (this.maxTransactionBytes = options.maxTransactionBytes ?? DEFAULT_MAX_TRANSACTION_BYTES);
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`maxTransactionBytes must be a positive integer, not ${String(max)}`);
    this.#streamed = new StreamedTransactions(new HeldBudget(max, options.tempDir));
    this.#replay = options.replayDecoder;
    this.#ddl = options.ddl === true;
  }

  /** Streamed transactions being assembled (assemble mode). */
  get pendingStreams(): number {
    return this.#streamed.size;
  }

  /** Memory the streamed transactions being held take now and at most, and those that went to a file. */
  get heldStats(): { bytes: number; highWater: number; spills: number } {
    const b = this.#streamed.budget;
    return { bytes: b.used, highWater: b.highWater, spills: b.spills };
  }

  /** Forgets everything partial (e.g. after a reconnect, when the server starts over). */
  reset(): void {
    this.#open = undefined;
    this.#block = undefined;
    this.#delivery?.return();
    this.#delivery = undefined;
    this.#streamed.reset();
  }

  /** The next fragment of what the last `push()` completed (a large streamed transaction), or `undefined`. */
  pull(): Transaction | undefined {
    const delivery = this.#delivery;
    if (delivery === undefined) return undefined;
    const r = delivery.next();
    if (r.done === true || r.value.final) this.#delivery = undefined;
    return r.done === true ? undefined : r.value;
  }

  /**
   * Feeds one message; returns the item it completes, if any (then `pull()`
   * the rest). The items the stream derives (a RelationChanged, a Ddl with
   * the trigger's message it stands for) join the transaction's messages
   * where they came, materialized.
   */
  push(msg: PgoutputMessage | RelationChanged | Ddl | BackfillItem, source?: PgoutputMessage): TransactionItem | undefined {
    if (this.#delivery !== undefined) throw new TypeError("pull() the rest of the streamed transaction before pushing the next message");
    switch (msg.kind) {
      case "Begin":
        this.#open = opened("commit", msg.materialize(), msg.xid, undefined, msg.finalLsn, msg.commitTime, false);
        return undefined;
      case "BeginPrepare":
        this.#open = opened("prepare", msg.materialize(), msg.xid, msg.gid, msg.prepareLsn, msg.prepareTime, false);
        return undefined;
      case "Origin": {
        const origin = { name: msg.name, lsn: msg.originLsn };
        const held = this.#streamed.current;
        if (this.#block !== undefined) this.#block.origin = origin;
        else if (held !== undefined) held.origin = origin;
        else if (this.#streamed.blockXid === undefined && this.#open) this.#open.origin = origin;
        return undefined;
      }
      case "Commit":
      case "Prepare": {
        const commit = msg.kind === "Commit";
        const open = this.#open ?? opened(commit ? "commit" : "prepare", undefined, 0, undefined, 0n, 0n, false);
        this.#open = undefined;
        const end = msg.materialize();
        if (commit) return final({ ...open, lsn: msg.commitLsn, time: msg.commitTime }, msg.endLsn, end);
        return final({ ...open, xid: msg.xid, gid: msg.gid, lsn: msg.prepareLsn, time: msg.prepareTime }, msg.endLsn, end);
      }
      case "CommitPrepared":
      case "RollbackPrepared": {
        const end = msg.materialize();
        return msg.kind === "CommitPrepared"
          ? final(opened("commitPrepared", undefined, msg.xid, msg.gid, msg.commitLsn, msg.commitTime, false), msg.endLsn, end)
          : final(opened("rollbackPrepared", undefined, msg.xid, msg.gid, msg.prepareEndLsn, msg.rollbackTime, false), msg.rollbackEndLsn, end);
      }
      case "StreamStart":
        if (this.streams === "passthrough") this.#block = { xid: msg.xid, firstSegment: msg.firstSegment, origin: undefined, messages: [], bytes: 0 };
        else this.#streamed.start(msg.xid, msg.firstSegment);
        return undefined;
      case "StreamStop": {
        this.#streamed.stop();
        const block = this.#block;
        this.#block = undefined;
        return block === undefined ? undefined : blockPart(block, true);
      }
      case "StreamCommit":
      case "StreamPrepare": {
        const end = msg.materialize();
        if (this.streams === "passthrough") {
          return { kind: msg.kind === "StreamCommit" ? "streamCommit" : "streamPrepare", xid: msg.xid, subXid: undefined, endLsn: msg.endLsn, end };
        }
        const open = msg.kind === "StreamCommit"
          ? opened("commit", undefined, msg.xid, undefined, msg.commitLsn, msg.commitTime, true)
          : opened("prepare", undefined, msg.xid, msg.gid, msg.prepareLsn, msg.prepareTime, true);
        this.#delivery = this.#deliver(open, msg.endLsn, end);
        return this.pull();
      }
      case "StreamAbort": {
        if (this.streams === "passthrough") {
          return { kind: "streamAbort", xid: msg.xid, subXid: msg.subXid, endLsn: streamAbortLsn(msg), end: msg.materialize() };
        }
        this.#streamed.abort(msg.xid, msg.subXid);
        return undefined;
      }
      case "RelationChanged":
      case "Ddl":
        this.#derived(msg, source);
        return undefined;
      case "BackfillRow":
      case "BackfillComplete":
        return undefined; // a backfill's rows are no transaction's (they come with the message iteration)
      case "Message":
        if (!msg.transactional) {
          return { kind: "message", lsn: msg.lsn, prefix: msg.prefix, content: msg.content, message: msg.materialize() };
        }
        return this.#add(msg);
      default:
        // Relation, Type, Insert, Update, Delete, Truncate
        return this.#add(msg);
    }
  }

  /** A message of a transaction: held, or added to the current fragment (handed over once the fragment is full). */
  #add(msg: PgoutputMessage): TransactionItem | undefined {
    const block = this.#block;
    if (block !== undefined) {
      block.messages.push(msg.materialize());
      block.bytes += sizeOf(msg);
      return block.bytes >= this.maxTransactionBytes ? blockPart(block, false) : undefined;
    }
    if (this.#streamed.blockXid !== undefined) {
      hold(this.#streamed, msg);
      return undefined;
    }
    const open = this.#open;
    // Outside any transaction (not sent by PostgreSQL): the decoder's caches already have it.
    if (open === undefined) return undefined;
    open.messages.push(msg.materialize());
    open.bytes += sizeOf(msg);
    return open.bytes >= this.maxTransactionBytes ? fragmentOf(open) : undefined;
  }

  /**
   * A derived item joins the messages. A held streamed transaction keeps
   * bytes only: a Ddl's message is held and becomes a Ddl again when decoded
   * back; a RelationChanged is not kept there (its Relation message is).
   */
  #derived(item: RelationChanged | Ddl, source: PgoutputMessage | undefined): void {
    if (this.#block !== undefined) this.#block.messages.push(item.materialize());
    else if (this.#streamed.blockXid !== undefined) {
      if (item.kind === "Ddl" && source !== undefined) hold(this.#streamed, source);
    } else this.#open?.messages.push(item.materialize());
  }

  /** A streamed transaction's fragments, decoded again from what was held. */
  *#deliver(open: Open, endLsn: bigint, end: MaterializedMessage): Generator<Transaction, void> {
    const held = this.#streamed.take(open.xid);
    if (held !== undefined) {
      open.origin = held.origin;
      this.#replay ??= createDecoderSync();
      for (const m of replayed(held.log, this.#replay)) {
        const ddl = this.#ddl && m.kind === "Message" ? ddlOf(m) : undefined;
        open.messages.push((ddl ?? m).materialize());
        open.bytes += sizeOf(m);
        if (open.bytes >= this.maxTransactionBytes) yield fragmentOf(open);
      }
    }
    yield final(open, endLsn, end);
  }
}

function opened(
  kind: Transaction["kind"], begin: MaterializedMessage | undefined, xid: number, gid: string | undefined, lsn: bigint, time: bigint, streamed: boolean,
): Open {
  return { kind, begin, xid, gid, lsn, time, streamed, origin: undefined, messages: [], bytes: 0, fragment: 0 };
}

/** The fragment gathered so far (not the final one); the next starts empty. */
function fragmentOf(open: Open): Transaction {
  const t = transaction(open, false, 0n, undefined);
  open.messages = [];
  open.bytes = 0;
  open.fragment++;
  return t;
}

function final(open: Open, endLsn: bigint, end: MaterializedMessage): Transaction {
  return transaction(open, true, endLsn, end);
}

function transaction(open: Open, isFinal: boolean, endLsn: bigint, end: MaterializedMessage | undefined): Transaction {
  return {
    kind: open.kind, xid: open.xid, gid: open.gid, streamed: open.streamed, lsn: open.lsn, endLsn, time: open.time, origin: open.origin,
    begin: open.begin, end, messages: open.messages, final: isFinal, fragment: open.fragment, redelivered: false,
  };
}

/** A passthrough block's part; after a part that is not the last, the block goes on as a continuation. */
function blockPart(block: Block, isFinal: boolean): StreamBlock {
  const part: StreamBlock = { kind: "streamBlock", xid: block.xid, firstSegment: block.firstSegment, origin: block.origin, messages: block.messages, final: isFinal };
  block.messages = [];
  block.bytes = 0;
  block.firstSegment = false;
  return part;
}
