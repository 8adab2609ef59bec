/**
 * Redelivery marks. After a reconnect the server streams again from
 * `lastAckedLsn`, so what was handed over and not acknowledged before the
 * failure comes a second time. The stream marks it: `redelivering` for the
 * message iteration (while the consumer is inside a transaction whose Begin
 * / BeginPrepare was handed over before the latest reconnect, whole or
 * after a partial first delivery), `Transaction.redelivered` for the
 * transaction iteration (its end was handed over before).
 */
import type { PgoutputMessage } from "../messages.ts";

export class Redelivery {
  /** The highest end handed over before the latest reconnect: a transaction ending at or before it is redelivered. */
  #end = 0n;
  /** The highest Begin finalLsn / BeginPrepare prepareLsn handed over, and its value at the latest reconnect. */
  #beginSeen = 0n;
  #begin = 0n;
  #redelivering = false;
  /** The highest `lsn` of a transaction some of whose fragments were handed over, and its value at the latest reconnect. */
  #fragmentSeen = 0n;
  #fragment = 0n;
  /** The Commit / Prepare ending a redelivered span was handed over: the next message is outside it. */
  #spanEnded = false;

  /** Whether the transaction the consumer is in was handed over (begun) before the latest reconnect. */
  get redelivering(): boolean {
    return this.#redelivering;
  }

  /** A reconnect begins: `handedOver` is the end of the last transaction handed over. */
  outage(handedOver: bigint): void {
    this.#end = handedOver;
    this.#begin = this.#beginSeen;
    this.#fragment = this.#fragmentSeen;
  }

  /** Message iteration: `m` is handed over; keeps `redelivering` for the transaction the consumer is in. */
  mark(m: PgoutputMessage): void {
    this.passed();
    const kind = m.kind;
    if (kind === "Begin" || kind === "BeginPrepare") {
      const lsn = kind === "Begin" ? m.finalLsn : m.prepareLsn;
      this.#redelivering = lsn <= this.#begin;
      if (lsn > this.#beginSeen) this.#beginSeen = lsn;
    } else if (kind === "Commit" || kind === "Prepare") this.#spanEnded = this.#redelivering;
  }

  /** A message handed over that is neither a transaction's start nor its end (what mark() does for one). */
  passed(): void {
    if (this.#spanEnded) {
      this.#spanEnded = false;
      this.#redelivering = false;
    }
  }

  /** Transaction iteration: a fragment of the transaction at `lsn` (its commit or prepare LSN) is handed over. */
  fragment(lsn: bigint): void {
    if (lsn > this.#fragmentSeen) this.#fragmentSeen = lsn;
  }

  /**
   * Transaction iteration: whether the transaction was handed over, whole or
   * some of its fragments, before the latest reconnect. Transactions come in
   * commit order, so one at or before the latest fragment handed over was
   * handed over too.
   */
  redeliveredTransaction(t: { readonly lsn: bigint; readonly endLsn: bigint; readonly final: boolean }): boolean {
    return (t.final && t.endLsn <= this.#end) || (t.lsn > 0n && t.lsn <= this.#fragment);
  }
}
