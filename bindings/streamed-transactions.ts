/**
 * Streamed (in-progress) transactions, held until they end: the bookkeeping
 * `TransactionAssembler` and the pipeline's `StreamResequencer` share, so
 * both read PostgreSQL's streaming protocol the same way.
 *
 * With `streaming` on, the changes of a large transaction come in blocks
 * (StreamStart xid ... StreamStop) that interleave with other transactions'
 * blocks and with plain transactions; every change in a block carries the
 * xid of the (sub)transaction that made it. The transaction ends with
 * StreamCommit / StreamPrepare (keep its messages), or StreamAbort(xid, subXid):
 * the whole transaction when subXid = xid, else only that subtransaction's
 * messages.
 *
 * What is held is each message as the server sent it (an XLogData payload,
 * streamed-replay.ts), in a `HeldLog` per transaction: in memory up to the
 * holder's budget, beyond it in a temporary file, so a transaction of any
 * size is held in bounded memory. Each message is added with the
 * subtransaction it belongs to (0 for messages no abort removes, such as a
 * Relation sent inside a block).
 */
import { HeldBudget, HeldLog } from "./held-log.ts";

/** A transaction being held. */
export interface HeldTransaction {
  /** Xid of the top-level transaction. */
  readonly xid: number;
  /** Whether the block that opened this entry was the transaction's first. */
  readonly firstSegment: boolean;
  /** Set by the consumer from an Origin message inside one of its blocks. */
  origin: { name: string; lsn: bigint } | undefined;
  /** Its messages, in stream order; `close()` it once read. */
  readonly log: HeldLog;
}

export class StreamedTransactions {
  readonly #held = new Map<number, HeldTransaction>();
  readonly budget: HeldBudget;
  #blockXid: number | undefined;

  /** `budget`: the memory every transaction held here shares (see HeldBudget). */
  constructor(budget: HeldBudget) {
    this.budget = budget;
  }

  /** The top-level xid of the block being read; `undefined` outside blocks. */
  get blockXid(): number | undefined {
    return this.#blockXid;
  }

  /** Transactions held. */
  get size(): number {
    return this.#held.size;
  }

  /** The transaction of the block being read. */
  get current(): HeldTransaction | undefined {
    return this.#blockXid === undefined ? undefined : this.#held.get(this.#blockXid);
  }

  /** StreamStart. A first segment starts its transaction over: anything held for the xid is from a stream that ended mid-transaction. */
  start(xid: number, firstSegment: boolean): void {
    this.#blockXid = xid;
    const held = this.#held.get(xid);
    if (held !== undefined && !firstSegment) return;
    held?.log.close();
    this.#held.set(xid, { xid, firstSegment, origin: undefined, log: new HeldLog(this.budget) });
  }

  /** StreamStop. */
  stop(): void {
    this.#blockXid = undefined;
  }

  /** Adds a message (`head` then `body`, copied) to the transaction of the block being read (outside a block: nothing, as PostgreSQL sends no such change). */
  add(head: Uint8Array, body: Uint8Array, sub: number): void {
    this.current?.log.add(head, body, sub);
  }

  /** StreamAbort: drops the transaction (subXid = xid) or that subtransaction's messages. */
  abort(xid: number, subXid: number): void {
    const held = this.#held.get(xid);
    if (held === undefined) return;
    if (subXid !== xid) {
      held.log.abort(subXid);
      return;
    }
    held.log.close();
    this.#held.delete(xid);
  }

  /** Removes and returns a transaction at its StreamCommit / StreamPrepare: the caller reads and closes its log. */
  take(xid: number): HeldTransaction | undefined {
    const held = this.#held.get(xid);
    this.#held.delete(xid);
    return held;
  }

  /** Forgets everything (e.g. after a reconnect, when the server starts over). */
  reset(): void {
    for (const held of this.#held.values()) held.log.close();
    this.#held.clear();
    this.#blockXid = undefined;
  }
}
