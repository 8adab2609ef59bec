/**
 * Streamed (in-progress) transactions, held until they end: the bookkeeping
 * `TransactionAssembler` (materialized messages) and the CLI's
 * `ChangeFormatter` (rendered lines) share, so both read PostgreSQL's
 * streaming protocol the same way.
 *
 * With `streaming` on, the changes of a large transaction come in blocks
 * (StreamStart xid ... StreamStop) that interleave with other transactions'
 * blocks and with plain transactions; every change in a block carries the
 * xid of the (sub)transaction that made it. The transaction ends with
 * StreamCommit / StreamPrepare (keep its items), or StreamAbort(xid, subXid):
 * the whole transaction when subXid = xid, else only that subtransaction's
 * items.
 *
 * Items are whatever the consumer keeps per message; each is added with the
 * subtransaction it belongs to (`undefined` for items no abort removes, such
 * as a Relation sent inside a block).
 */

/** A transaction being held. */
export interface HeldTransaction<T> {
  /** Xid of the top-level transaction. */
  readonly xid: number;
  /** Whether the block that opened this entry was the transaction's first. */
  readonly firstSegment: boolean;
  /** Set by the consumer from an Origin message inside one of its blocks. */
  origin: { name: string; lsn: bigint } | undefined;
  /** In stream order, without those of aborted subtransactions. */
  items: T[];
}

interface Entry<T> extends HeldTransaction<T> {
  /** The subtransaction of each item (parallel to `items`). */
  subs: (number | undefined)[];
}

export class StreamedTransactions<T> {
  readonly #held = new Map<number, Entry<T>>();
  #blockXid: number | undefined;

  /** The top-level xid of the block being read; `undefined` outside blocks. */
  get blockXid(): number | undefined {
    return this.#blockXid;
  }

  /** Transactions held. */
  get size(): number {
    return this.#held.size;
  }

  /** The transaction of the block being read. */
  get current(): HeldTransaction<T> | undefined {
    return this.#blockXid === undefined ? undefined : this.#held.get(this.#blockXid);
  }

  /** StreamStart. A first segment starts its transaction over: anything held for the xid is from a stream that ended mid-transaction. */
  start(xid: number, firstSegment: boolean): void {
    this.#blockXid = xid;
    if (firstSegment || !this.#held.has(xid)) this.#held.set(xid, { xid, firstSegment, origin: undefined, items: [], subs: [] });
  }

  /** StreamStop. */
  stop(): void {
    this.#blockXid = undefined;
  }

  /** Adds an item to the transaction of the block being read (outside a block: nothing, as PostgreSQL sends no such change). */
  add(item: T, sub: number | undefined): void {
    const entry = this.#blockXid === undefined ? undefined : this.#held.get(this.#blockXid);
    if (entry === undefined) return;
    entry.items.push(item);
    entry.subs.push(sub);
  }

  /** StreamAbort: drops the transaction (subXid = xid) or that subtransaction's items. */
  abort(xid: number, subXid: number): void {
    if (subXid === xid) {
      this.#held.delete(xid);
      return;
    }
    const entry = this.#held.get(xid);
    if (entry === undefined) return;
    const items: T[] = [];
    const subs: (number | undefined)[] = [];
    for (let i = 0; i < entry.items.length; i++) {
      if (entry.subs[i] === subXid) continue;
      items.push(entry.items[i]!);
      subs.push(entry.subs[i]);
    }
    entry.items = items;
    entry.subs = subs;
  }

  /** Removes and returns a transaction: at its StreamCommit / StreamPrepare, or a block passed through at its StreamStop. */
  take(xid: number): HeldTransaction<T> | undefined {
    const entry = this.#held.get(xid);
    this.#held.delete(xid);
    return entry;
  }

  /** Forgets everything (e.g. after a reconnect, when the server starts over). */
  reset(): void {
    this.#held.clear();
    this.#blockXid = undefined;
  }
}
