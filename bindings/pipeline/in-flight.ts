/**
 * The pipeline's batches from the moment they are handed to the sink until
 * they resolve: at most `records` and `bytes` in flight (the pipeline stops
 * pulling until there is room), and each transaction end confirmed, in
 * order, once the batch holding its last record and every batch before it
 * resolved (run.ts, "Acknowledgement"). A write's failure is kept: nothing
 * after it is confirmed.
 */
import { Records } from "./records.ts";
import type { PipelineStats } from "./run-options.ts";
import type { Sink } from "./sink.ts";

interface InFlight {
  records: number;
  bytes: number;
  /** The last transaction end in the batch. */
  ack: bigint | undefined;
  done: boolean;
  batch: Records;
}

export interface InFlightOptions {
  readonly sink: Sink;
  /** The window: records and bytes in flight beyond which `full` is true. */
  readonly records: number;
  readonly bytes: number;
  /** The pipeline's counters: records, bytes, writes, inFlight(Bytes), durable, acked, acks. */
  readonly stats: PipelineStats;
  /** A transaction end every batch up to it made durable. */
  confirm(lsn: bigint): void;
  /** A write failed (`failure` is set). */
  failed(): void;
}

export class InFlightWindow {
  readonly #o: InFlightOptions;
  readonly #entries: InFlight[] = [];
  /** Batches that settled, emptied for reuse. */
  readonly #spare: Records[] = [];
  /** Wakes whoever waits for a batch to settle (untilRoom, drain). */
  #settled: (() => void) | undefined;
  /** The first write's failure, if one failed. */
  failure: unknown;

  constructor(options: InFlightOptions) {
    this.#o = options;
  }

  /** An empty batch for the records that come next. */
  spare(): Records {
    return this.#spare.pop() ?? new Records();
  }

  /** Hands `batch` to the sink; a batch of acks alone settles in turn, without a write. Returns whether it was written. */
  hand(batch: Records): boolean {
    const entry: InFlight = { records: batch.length, bytes: batch.bytes.len, ack: batch.acks[batch.acks.length - 1]?.lsn, done: false, batch };
    this.#entries.push(entry);
    const sink = this.#o.sink;
    if (batch.length === 0 && sink.transactionEnds !== true) {
      entry.done = true;
      queueMicrotask(() => this.#settle());
      return false;
    }
    const stats = this.#o.stats;
    stats.records += entry.records;
    stats.bytes += entry.bytes;
    stats.inFlight += entry.records;
    stats.inFlightBytes += entry.bytes;
    stats.writes++;
    sink.write(batch).then(() => this.#done(entry), (e: unknown) => this.#fail(e));
    return true;
  }

  /** More in flight than the window takes (and no write failed). */
  get full(): boolean {
    const s = this.#o.stats;
    return this.failure === undefined && (s.inFlight > this.#o.records || s.inFlightBytes > this.#o.bytes);
  }

  /** Settles once the window has room or a write failed. */
  async untilRoom(): Promise<void> {
    while (this.full) await new Promise<void>((resolve) => (this.#settled = resolve));
  }

  /** Settles once nothing is in flight, a write failed, or at `deadline` (Date.now() time). */
  async drain(deadline: number): Promise<void> {
    while (this.#entries.length > 0 && this.failure === undefined && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        this.#settled = resolve;
        setTimeout(resolve, Math.max(1, deadline - Date.now())).unref?.();
      });
    }
  }

  #done(entry: InFlight): void {
    entry.done = true;
    this.#o.stats.durable += entry.records;
    this.#settle();
  }

  /** Confirms, in order, the transaction ends of the batches that resolved. */
  #settle(): void {
    const stats = this.#o.stats;
    let ack: bigint | undefined;
    while (this.#entries.length > 0 && this.#entries[0]!.done) {
      const e = this.#entries.shift()!;
      stats.inFlight -= e.records;
      stats.inFlightBytes -= e.bytes;
      if (e.ack !== undefined) ack = e.ack;
      if (this.#spare.length < 4) {
        e.batch.clear();
        this.#spare.push(e.batch);
      }
    }
    if (ack !== undefined && this.failure === undefined) {
      stats.acked = ack;
      stats.acks++;
      this.#o.confirm(ack);
    }
    this.#wake();
  }

  #fail(e: unknown): void {
    this.failure ??= e;
    this.#o.failed();
    this.#wake();
  }

  #wake(): void {
    const wake = this.#settled;
    this.#settled = undefined;
    wake?.();
  }
}
