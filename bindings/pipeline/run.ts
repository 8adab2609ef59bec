/**
 * The pipeline: source → format → sink, with durability flowing backwards.
 *
 * Items are pulled from the source in stream order and formatted into a
 * batch of records (records.ts); streamed transactions are replayed as
 * plain ones first (resequence.ts). A batch goes to the sink when a
 * transaction ended and nothing more is waiting at the source, when it
 * holds `batchBytes`, or, in the middle of a large transaction, when it
 * holds `holdBytes`. Writes are pipelined: up to `window` records and
 * bytes in flight, after which the pipeline stops pulling (and the
 * replication socket is paused by its own backpressure), so memory stays
 * bounded whatever the destination's speed.
 *
 * Acknowledgement: a transaction's end is confirmed to the source only
 * once the batch holding its last record and every batch before it have
 * resolved (`Sink.write` resolves when durable). So the slot never passes
 * what the destination holds.
 *
 * Redelivery: records are positioned (change-id.ts). After a reconnect the
 * source sends again what was not confirmed; records at or before the last
 * one handed to the sink are taken back as the format ends them, and what
 * was formatted but not handed over is dropped and comes again. At start,
 * a sink that can tell where its destination is (`delivered()`) sets the
 * same bound, so a restarted process adds no duplicate either.
 *
 * Ending (`stop()`, `limit` records, the source's end or failure): the
 * source is no longer read; the records of a transaction not finished are
 * dropped (written, never confirmed, when cut by `limit` or with
 * `writePartial`), what is in flight is awaited for at most
 * `drainTimeoutMs`, what was confirmed is acknowledged, and the source is
 * stopped. A source's failure is thrown after that; a sink's failure ends
 * the run at once: nothing after the failed batch is confirmed.
 *
 * What a message makes (its transaction context, the items derived from
 * it) is message-feed.ts's.
 */
import type { ChangePosition } from "./change-id.ts";
import { NO_TRANSACTION, Records, RecordTransaction } from "./records.ts";
import { StreamResequencer } from "./resequence.ts";
import type { PipelineSource, SourceItem } from "./sources.ts";
import { family, metricsText, type MetricFamily } from "../metrics/exposition.ts";
import { MessageFeed } from "./message-feed.ts";
import { InFlightWindow } from "./in-flight.ts";
import { LINGER, SourceReads, STOP } from "./source-reads.ts";
import type { PgoutputMessage } from "../messages.ts";
import { TapeBatch } from "../views/batch.ts";

export type { PipelineSource, SourceItem } from "./sources.ts";

export type { PipelineOptions, PipelineResult, PipelineStats } from "./run-options.ts";
import type { PipelineOptions, PipelineResult, PipelineStats } from "./run-options.ts";

/** At most this many messages in one run (#takeRun): a batch's worth of small transactions, not a socket read's worth. */
const RUN_MESSAGES = 4096;
/** The messages a run (#takeRun) is made of. */
const RUN_KINDS: ReadonlySet<string> = new Set(["Begin", "Insert", "Update", "Delete", "Commit"]);
/** What #takeRun asks the resequencer: whether a row change now would be held (a streamed block is open). */
const ROW = { kind: "Insert" };

export class Pipeline {
  readonly #o: Required<Pick<PipelineOptions, "batchBytes" | "holdBytes" | "drainTimeoutMs">> & PipelineOptions;
  readonly #window: InFlightWindow;
  readonly #resequencer: StreamResequencer | undefined;
  #records = new Records();
  readonly #stats: PipelineStats = { items: 0, records: 0, bytes: 0, durable: 0, inFlight: 0, inFlightBytes: 0, writes: 0, skipped: 0, acked: undefined, acks: 0 };
  /** The last position handed to the sink: what a restarted source sends again up to here is taken back. */
  #delivered: ChangePosition | undefined;
  #generation: number | undefined;
  #snapshotTxn: RecordTransaction | undefined;
  readonly #feed: MessageFeed;
  #backfillTxn: RecordTransaction | undefined;
  #stopRequested = false;
  readonly #reads = new SourceReads(() => this.#window.failure !== undefined || this.#stopRequested);

  constructor(options: PipelineOptions) {
    this.#o = { batchBytes: 64 << 10, holdBytes: 1 << 20, drainTimeoutMs: 10_000, ...options };
    this.#feed = new MessageFeed(options);
    this.#window = new InFlightWindow({
      sink: options.sink, records: options.window?.records ?? 10_000, bytes: options.window?.bytes ?? 16 << 20, stats: this.#stats,
      confirm: (lsn) => {
        this.#o.source.ack(lsn);
        this.#feed.confirmed(lsn);
        this.#o.onAck?.(lsn);
      },
      failed: () => this.#reads.stop(),
    });
    this.#resequencer = options.replayDecoder === undefined ? undefined : new StreamResequencer(options.replayDecoder, { maxHeldBytes: options.maxHeldBytes, tempDir: options.tempDir });
  }

  get stats(): PipelineStats {
    return { ...this.#stats };
  }

  /** The pipeline's metrics and its sink's, in the Prometheus text exposition format (docs/metrics.md). */
  metrics(): Promise<string> {
    return metricsText(this);
  }

  /** The same as families, for `metricsText()` with the source's (`stream`, `snapshot`). */
  collectMetrics(): MetricFamily[] {
    const sink = this.#o.sink;
    const l = { sink: sink.name };
    const s = this.#stats;
    return [
      family("pgoutput_wasm_pipeline_items_total", "counter", "Items read from the source.", l, s.items),
      family("pgoutput_wasm_pipeline_acks_total", "counter", "Transaction ends confirmed to the source once the sink held them and everything before.", l, s.acks),
      family("pgoutput_wasm_pipeline_skipped_records_total", "counter", "Records not written again because the destination had them (after a restart or reconnect).", l, s.skipped),
      ...(sink.collectMetrics?.() ?? []),
    ];
  }

  /** Ends the run: nothing more is read; see the file's comment. */
  stop(): void {
    this.#stopRequested = true;
    this.#reads.stop();
  }

  async run(): Promise<PipelineResult> {
    const { source, sink } = this.#o;
    this.#delivered = (await sink.delivered?.()) ?? undefined;
    this.#feed.startedAt = this.#delivered;
    this.#records.skip = this.#delivered;
    const it = source[Symbol.asyncIterator]();
    let reason: PipelineResult["reason"] = "ended";
    let sourceError: unknown;
    try {
      for (;;) {
        this.#throwFailure();
        if (this.#stopRequested) {
          reason = "stopped";
          break;
        }
        const pending = it.next();
        pending.catch(() => {}); // lost to a stop request: its outcome no longer matters
        let r = await this.#reads.read(pending, this.#reads.lingering);
        if (r === LINGER) {
          await this.#flush();
          r = await this.#reads.read(pending, false);
        }
        if (r === STOP || r === LINGER) {
          reason = "stopped"; // (LINGER: not from a read without linger)
          break;
        }
        if (r.done) break;
        // A batch's first message of a plain transaction goes back to it, for the format to take with the rest (#takeRun).
        const first = RUN_KINDS.has(r.value.kind) && source.putBack?.() === true;
        if (!first) this.#stats.items++;
        // Then what the source holds already, each item without a promise of its own.
        if ((!first && (await this.#item(r.value))) || (await this.#takeReady())) {
          reason = "limit";
          break;
        }
      }
    } catch (e) {
      if (e !== this.#window.failure) sourceError = e;
    }
    await this.#finish(reason === "limit" || this.#o.writePartial === true);
    this.#throwFailure();
    if (sourceError !== undefined) throw sourceError;
    return { reason, stats: this.stats };
  }

  /**
   * The items the source holds already (`takeReady`), until it has none,
   * a stop, a failure or the limit; returns true at the limit. Only an item
   * that must wait (for the sink's window, say) makes a promise.
   */
  #takeReady(): boolean | Promise<boolean> {
    const source = this.#o.source;
    if (source.takeReady === undefined) return false;
    for (;;) {
      if (this.#window.failure !== undefined || this.#stopRequested) return false;
      const run = this.#takeRun();
      let limited: boolean | Promise<boolean>;
      if (run > 0) limited = this.#itemDone();
      else {
        const item = source.takeReady();
        if (item === undefined) return false;
        this.#stats.items++;
        limited = this.#item(item);
      }
      if (limited === true) return true;
      if (limited !== false) return limited.then((atLimit) => atLimit || this.#takeReady());
    }
  }

  /**
   * Plain transactions' messages that the format writes from the source's
   * batch without a view each (Format.pushBatch): from the next item on, a
   * transaction's Begin, row changes and Commit, then the next ones the
   * batch holds (up to RUN_MESSAGES; one with a limit), as far as the
   * format takes them (it stops at the first message of another kind). The
   * format tells of each Begin and Commit it takes where it is among the
   * records, and the pipeline does there what it does when they come one by
   * one (feed.boundaryAt, feed.boundary). Returns the items taken (0:
   * take the next one by one). Not with onItem (it is given every item), a
   * raw format, a streamed block held or a backfill; the format declines a
   * transaction whose records a restart's redelivery may take back
   * (Records.skip).
   */
  #takeRun(): number {
    const o = this.#o;
    const format = o.format;
    const source = o.source;
    if (format.pushBatch === undefined || source.readyBatch === undefined || o.onItem !== undefined || o.raw === true) return 0;
    const records = this.#records;
    if (this.#backfillTxn !== undefined || source.generation !== this.#generation || this.#resequencer?.takes(ROW) === true) return 0;
    const ready = source.readyBatch();
    if (ready === undefined) return 0;
    const { batch, index: from } = ready;
    let to = from;
    if (o.limit === undefined) {
      // The format stops at the first message that is not a plain transaction's (its kernel does: any other
      // kind, a streamed row), so the run is not scanned here; only its first message is looked at, so that
      // the items push() takes one by one do not each cost a call that takes none.
      if (RUN_KINDS.has(batch.kind(from))) to = Math.min(batch.length, from + RUN_MESSAGES);
    } else {
      // With a limit, one transaction at a time: the limit is checked after each.
      if (batch.kind(to) === "Begin") to++;
      for (; to < batch.length; to++) {
        const kind = batch.kind(to);
        if (kind !== "Insert" && kind !== "Update" && kind !== "Delete") break;
      }
      if (to < batch.length && batch.kind(to) === "Commit") to++;
    }
    if (to === from) return 0;
    const feed = this.#feed;
    // The first Begin's transaction is set before: the format decides from it whether a redelivery may take its
    // records back (then it takes none); the later transactions commit after it, so none of theirs can be.
    const begun = batch.kind(from) === "Begin" ? from : -1;
    const tape = batch instanceof TapeBatch ? batch : undefined;
    const boundary = (i: number): void => {
      if (tape !== undefined) feed.boundaryAt(tape, i, records);
      else feed.boundary(batch.get(i) as PgoutputMessage & { kind: "Begin" | "Commit" }, records);
    };
    if (begun >= 0) boundary(from);
    const taken = format.pushBatch(batch, from, records, to, (i) => {
      if (i !== begun) boundary(i);
    });
    source.skipReady!(taken - from);
    this.#stats.items += taken - from;
    return taken - from;
  }

  /**
   * One item; returns true when the limit was reached. A message of a plain
   * transaction (nearly every item) is handled without a promise unless
   * its batch must wait for the sink; the others take #special.
   */
  #item(item: SourceItem): boolean | Promise<boolean> {
    const kind = item.kind;
    if (
      this.#backfillTxn !== undefined || this.#o.source.generation !== this.#generation || kind === "PrimaryKeepalive" ||
      kind === "SnapshotRow" || kind === "SnapshotComplete" || kind === "BackfillRow" || kind === "BackfillComplete" ||
      kind.startsWith("Stream") || (this.#o.raw !== true && this.#resequencer?.takes(item) === true)
    ) return this.#special(item);
    this.#o.onItem?.(item);
    this.#feed.message(item, this.#records);
    return this.#itemDone();
  }

  /** An item other than a plain transaction's message (see #item). */
  async #special(item: SourceItem): Promise<boolean> {
    const source = this.#o.source;
    if (this.#backfillTxn !== undefined && item.kind !== "BackfillRow") {
      // A chunk's rows are handed to the sink before anything else: a reconnect drops what was not,
      // and the source sends changes again, never backfill rows.
      this.#backfillTxn = undefined;
      await this.#flush();
    }
    if (source.generation !== this.#generation) this.#restarted(source.generation);
    this.#o.onItem?.(item);
    switch (item.kind) {
      case "PrimaryKeepalive":
        if (this.#records.length > 0 && !source.ready) await this.#flush();
        return false;
      case "SnapshotComplete":
        await this.#flush();
        return false;
      case "SnapshotRow":
        this.#records.txn = this.#snapshotTxn ??= new RecordTransaction(undefined, source.consistentPoint ?? 0n, undefined, true);
        this.#o.format.push(item, this.#records);
        break;
      case "BackfillComplete":
        return false; // its chunk's rows were flushed above
      case "BackfillRow":
        // A chunk's rows are written as snapshot rows, ids at its high watermark (change-id.ts).
        if (this.#backfillTxn?.lsn !== item.lsn) this.#backfillTxn = new RecordTransaction(undefined, item.lsn, undefined, true, "backfill");
        this.#records.txn = this.#backfillTxn;
        this.#o.format.push({ kind: "SnapshotRow", relation: item.relation, tuple: item.tuple }, this.#records);
        this.#records.txn = NO_TRANSACTION;
        break;
      default:
        if (this.#o.raw === true) this.#feed.message(item, this.#records);
        else if (this.#resequencer?.takes(item) === true) {
          for (const m of this.#resequencer.push(item)) {
            this.#feed.message(m, this.#records);
            // A streamed transaction is replayed whole at its commit: written as it goes, as a plain one is.
            if (this.#records.bytes.len < this.#o.holdBytes) continue;
            if (await this.#atLimit()) return true; // (leaving the loop closes what is held)
            await this.#flush();
          }
          if (item.kind === "StreamAbort") this.#feed.abortEnd(item, this.#records);
        } else if (item.kind === "StreamAbort") {
          // Nothing was held to drop. PostgreSQL 18 sends a stray Stream Abort to a client that never asked for
          // streaming (estuary/connectors#5228): it ends no transaction this pipeline saw.
          this.#feed.abortEnd(item, this.#records);
        } else {
          if (item.kind.startsWith("Stream")) throw new TypeError("a streamed transaction reached a pipeline made without replayDecoder");
          this.#feed.message(item, this.#records);
        }
    }
    return this.#itemDone();
  }

  /** After an item's records: the limit, then the batch written when it is due (or the linger armed). */
  #itemDone(): boolean | Promise<boolean> {
    const limited = this.#atLimit();
    if (limited !== false) return limited;
    const records = this.#records;
    const ended = records.acks.length > 0 && records.acks[records.acks.length - 1]!.after === records.length;
    if (records.bytes.len >= this.#o.holdBytes || (ended && (records.bytes.len >= this.#o.batchBytes || !this.#o.source.ready))) {
      const waiting = this.#flush();
      if (waiting !== undefined) return waiting.then(() => false);
    } else if (ended && !this.#reads.lingering) this.#reads.arm();
    return false;
  }

  /** Counts what the batch took back; at the limit, cuts the batch there and writes it (then the run ends). */
  #atLimit(): boolean | Promise<boolean> {
    const records = this.#records;
    this.#stats.skipped += records.skipped;
    records.skipped = 0;
    const limit = this.#o.limit;
    if (limit === undefined || this.#stats.records + records.length < limit) return false;
    records.truncate(limit - this.#stats.records);
    const waiting = this.#flush();
    return waiting === undefined ? true : waiting.then(() => true);
  }

  /** The source started over from what was confirmed: drop what was not handed over; take back what was. */
  #restarted(generation: number | undefined): void {
    const first = this.#generation === undefined;
    this.#generation = generation;
    if (first) return;
    this.#reads.disarm();
    this.#records.clear();
    this.#records.txn = NO_TRANSACTION;
    this.#records.skip = this.#delivered;
    this.#o.format.reset();
    this.#resequencer?.reset();
    this.#feed.restart();
  }

  /**
   * Hands the batch to the sink (in-flight.ts); a promise only when the
   * window is full, settled once it has room. Throws (or rejects with) the
   * sink's failure.
   */
  #flush(): Promise<void> | undefined {
    this.#reads.disarm();
    const batch = this.#records;
    if (batch.length === 0 && batch.acks.length === 0) return undefined;
    const next = this.#window.spare();
    next.txn = batch.txn;
    this.#records = next;
    if (this.#window.hand(batch)) this.#delivered = batch.lastPosition ?? this.#delivered;
    next.skip = this.#delivered;
    if (this.#window.full) return this.#untilRoom();
    this.#throwFailure();
    return undefined;
  }

  async #untilRoom(): Promise<void> {
    await this.#window.untilRoom();
    this.#throwFailure();
  }

  #throwFailure(): void {
    if (this.#window.failure !== undefined) throw this.#window.failure;
  }

  /** The end of a run: what is finished is written and awaited, acknowledged, and the source stopped. */
  async #finish(cut: boolean): Promise<void> {
    const records = this.#records;
    if (this.#window.failure === undefined) {
      if (!cut) records.truncate(records.acks.length === 0 ? 0 : records.acks[records.acks.length - 1]!.after);
      try {
        await this.#flush();
      } catch {
        /* the failure is thrown below */
      }
      await this.#window.drain(Date.now() + this.#o.drainTimeoutMs);
    }
    this.#resequencer?.reset(); // closes the files of what was held
    await this.#o.source.stop();
    await this.#o.sink.close().catch(() => {});
  }
}
