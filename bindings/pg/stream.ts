/**
 * A running replication stream: the public API. Its parts and their life
 * are wired in lifecycle.ts:
 *
 * - socket-reader.ts: after START_REPLICATION the stream reads the
 *   connection's socket itself; the bytes are queued and decoded lazily, in
 *   one `pushBackend` call per batch; backpressure (`highWaterMark`,
 *   `lowWaterMark`) and the gathering pause (`coalesceMs`).
 * - liveness.ts: standby status updates, keepalive replies, the receive
 *   timeout, as PostgreSQL's walreceiver does them.
 * - iteration.ts: the message and transaction iterations in stream order,
 *   and the acknowledgements iterating makes (ack.ts).
 * - reconnect.ts: with a policy, a retryable error reached in stream order
 *   does not end the iteration; redelivery.ts marks what comes a second
 *   time (`redelivering`, `Transaction.redelivered`).
 *
 * Errors come in stream order: everything received before an ErrorResponse,
 * a frame the decoder rejects, or the connection's end is delivered first,
 * then the error is thrown.
 *
 * Created by `replicate()`; see there for an example.
 */
import type { PgoutputDecoder } from "../decoder.ts";
import { parseLsn } from "../lsn.ts";
import { ReplicationError } from "./errors.ts";
import type { AssemblerOptions, TransactionItem } from "./transactions.ts";
import type { HealthMonitor, ReplicationHealth, StreamProgress } from "./health.ts";
import type { MessageIteration, StreamItem } from "./iteration.ts";
import { Lifecycle, type StreamSetup } from "./lifecycle.ts";
import type { ReplicationStats } from "./stream-state.ts";
import { metricsText, type MetricFamily, type MetricLabels } from "../metrics/exposition.ts";
import { sampleSlot, streamFamilies, streamLabels, type StreamMetricsOptions } from "./stream-metrics.ts";
import { startBackfill, type Backfill, type BackfillOptions, type BackfillRun, type BackfillSetup } from "./backfill.ts";
import { refused } from "./backfill-catalog.ts";

export type { ReplicationStats, StreamItem };

let underivedOf: (stream: ReplicationStream) => void;

/**
 * Makes the stream's message iteration yield the messages as sent, nothing
 * derived (no RelationChanged, DDL messages as Messages): for a pipeline,
 * which derives them after replaying streamed transactions. Not public API.
 */
export function underived(stream: ReplicationStream): void {
  underivedOf(stream);
}

let messagesOf: (stream: ReplicationStream) => MessageIteration;

/** The stream's message iteration with `takeReady()`, `readyBatch()` and `skipReady()` (iteration.ts), for a pipeline's source. Not public API. */
export function messageIteration(stream: ReplicationStream): MessageIteration {
  return messagesOf(stream);
}

export class ReplicationStream implements AsyncIterable<StreamItem> {
  /** PostgreSQL's `server_version_num` (e.g. 150018). */
  readonly serverVersion: number;
  /** The slot streamed from. */
  readonly slotName: string;
  /** The decoder (its `relations` and `types` caches are the stream's). */
  readonly decoder: PgoutputDecoder;
  /** Resolves when the stream has ended: with the error that ended it, or `undefined` after `stop()`. Never rejects. */
  readonly closed: Promise<ReplicationError | undefined>;

  readonly #life: Lifecycle;
  readonly #keepalives: boolean;
  /** Slot health (health.ts), reading the stream's positions, counters and progress. */
  readonly #monitor: HealthMonitor | undefined;
  /** The labels of its metrics: slot and publication(s). */
  readonly #labels: MetricLabels;
  readonly #backfillSetup: BackfillSetup | undefined;
  #backfill: Backfill | undefined;

  /** Use `replicate()`. */
  constructor(setup: StreamSetup) {
    this.serverVersion = setup.serverVersion;
    this.slotName = setup.options.slot.name;
    this.decoder = setup.decoder;
    this.#keepalives = setup.options.keepalives;
    const life = (this.#life = new Lifecycle(setup));
    this.closed = life.closed;
    this.#monitor = setup.monitor;
    this.#monitor?.bind(this, (e) => life.lose(e));
    this.#labels = streamLabels(this.slotName, setup.options.publications);
    const c = setup.connection;
    this.#backfillSetup = c === undefined ? undefined : { connection: c.target, pg: c.pg, options: setup.options, serverVersion: setup.serverVersion, decoder: setup.decoder };
  }

  /**
   * Backfills tables while streaming (an incremental snapshot, backfill.ts):
   * each table read in key order in chunks between watermarks written into
   * the WAL, its rows handed over as `BackfillRow` items among the live
   * changes, then `BackfillComplete`. From a table's BackfillComplete on, a
   * consumer that upserted its BackfillRows by key and applied the live
   * changes (an Update of a row it lacks as an upsert, a Delete of one as
   * nothing) holds exactly the table. Needs `messages: true`. Resolves once
   * the tables are checked (published, with a usable key: INVALID_OPTION
   * otherwise); one backfill at a time.
   *
   * @example
   * ```ts
   * const stream = await replicate({ connection, slot: "app", publications: "app", messages: true });
   * const backfill = await stream.backfill({ tables: ["public.orders"], progress: saved });
   * for await (const item of stream) {
   *   if (item.kind === "BackfillRow") upsert(item.relation.name, item.tuple.toObject()), save(item.progress);
   *   else if (item.kind === "Insert") upsert(item.relation!.name, item.newTuple.toObject());
   * }
   * ```
   */
  async backfill(options: BackfillOptions): Promise<BackfillRun> {
    const setup = this.#backfillSetup;
    if (setup === undefined) throw refused("this stream opens no other connection (it was not made by replicate())");
    if (this.#backfill !== undefined && !this.#backfill.done && this.#backfill.error === undefined && !this.#backfill.stopped) {
      throw refused("a backfill is running on this stream: stop it, or wait for its tables to complete");
    }
    const backfill = await startBackfill({ ...setup, serverVersion: this.serverVersion, wakeUp: () => this.#life.reader.wakeUp() }, options);
    try {
      this.#life.iteration.backfill = backfill;
    } catch (e) {
      await backfill.stop();
      throw e;
    }
    this.#backfill = backfill;
    return backfill;
  }

  /**
   * The stream's metrics in the Prometheus text exposition format
   * (docs/metrics.md): its counters, and the server's view of the slot
   * (lag, WAL retained), read on the side connection for each call unless
   * `{ slot: false }`.
   *
   * @example
   * ```ts
   * import { createServer } from "node:http";
   * createServer(async (_, res) => res.setHeader("content-type", METRICS_CONTENT_TYPE).end(await stream.metrics())).listen(9187, "127.0.0.1");
   * ```
   */
  metrics(options: StreamMetricsOptions = {}): Promise<string> {
    return metricsText({ collectMetrics: () => this.collectMetrics(options) });
  }

  /** The metrics as families, for `metricsText()` with other sources (a pipeline, a sink). */
  async collectMetrics(options: StreamMetricsOptions = {}): Promise<MetricFamily[]> {
    const monitor = this.#monitor;
    const open = monitor !== undefined && !monitor.closed && this.#life.state.phase !== "closed";
    return streamFamilies({
      labels: this.#labels,
      stats: this.stats,
      progress: this.progress,
      lastReceivedLsn: this.lastReceivedLsn,
      lastAckedLsn: this.lastAckedLsn,
      heartbeats: monitor?.heartbeats,
      health: await sampleSlot(open ? () => monitor.health({ rates: false }) : undefined, options),
    });
  }

  /**
   * The slot's health: the server's view of the slot (read on a side
   * connection, opened on the first call) with the stream's own counters.
   * Rejects with SLOT_MISSING when the slot is gone. See health.ts.
   */
  health(): Promise<ReplicationHealth> {
    if (this.#monitor === undefined) return Promise.reject(new ReplicationError("this stream has no health monitor", { code: "INVALID_OPTION" }));
    return this.#monitor.health();
  }

  /** Timestamps of the last commit and keepalive reached, and the heartbeat messages filtered out. */
  get progress(): StreamProgress {
    return this.#life.iteration.progress;
  }

  /**
   * Message iteration: whether the transaction the consumer is in (from its
   * Begin / BeginPrepare to its Commit / Prepare) is one whose Begin was
   * handed over before the latest reconnect — delivered again, whole or
   * after a partial first delivery. Transactions use `redelivered` instead.
   */
  get redelivering(): boolean {
    return this.#life.redelivery.redelivering;
  }

  /**
   * Takes the socket over from pg, sends START_REPLICATION and resolves once
   * the server entered CopyBoth mode. Used by `replicate()`, after the last
   * query it runs through pg.
   */
  start(command: string): Promise<void> {
    return this.#life.start(command);
  }

  /**
   * The acknowledged position: flushed/applied in the status updates, never
   * moving backwards. Resume from here after an error.
   */
  get lastAckedLsn(): bigint {
    return this.#life.tracker.confirmed;
  }

  /** The highest WAL position decoded (written in the status updates). */
  get lastReceivedLsn(): bigint {
    return this.#life.tracker.written;
  }

  /** `auto` or `manual`. */
  get ackMode(): "auto" | "manual" {
    return this.#life.tracker.mode;
  }

  /** The error that ended the stream, if any. */
  get error(): ReplicationError | undefined {
    return this.#life.state.error;
  }

  /** Whether something received is not handed over yet: the next item needs no wait for the server. */
  get ready(): boolean {
    return this.#life.reader.ready;
  }

  /** Reconnects so far: when it changes, the stream started over from `lastAckedLsn`. */
  get generation(): number {
    return this.#life.stats.reconnects;
  }

  get stats(): ReplicationStats {
    return { ...this.#life.stats, bufferedBytes: this.#life.reader.buffered(), bufferedHighWater: this.#life.reader.bufferedHighWater };
  }

  /**
   * Confirms everything up to `lsn` — a transaction's `endLsn` (bigint or
   * `X/Y`), or a `Transaction` / end message with an `endLsn` — in either
   * ack mode. Clamped to what was received; never moves backwards. Reported
   * with the next status update (`sendStatus()` sends one now). Returns the
   * acknowledged position.
   */
  ack(lsn: bigint | string | { readonly endLsn?: bigint | undefined }): bigint {
    const at = typeof lsn === "bigint" ? lsn : typeof lsn === "string" ? parseLsn(lsn) : lsn.endLsn;
    if (at === undefined) throw new TypeError("ack() needs an LSN or an object with an endLsn");
    return this.#life.tracker.ack(at);
  }

  /** Sends a standby status update now (e.g. right after a manual `ack`). */
  sendStatus(replyRequested = false): void {
    this.#life.liveness.send(replyRequested);
  }

  /**
   * Ends the stream: a final status update with the acknowledged position,
   * CopyDone, waits (up to `stopTimeoutMs`) for the server to finish, closes
   * the connection. A pending `next()` returns `done`. The item being
   * processed when `stop()` is called is not acknowledged by it, nor by the
   * loop's last `next()` on its way out: call `ack()` first if it was
   * finished. From the call on, `lastAckedLsn` does not move: it is what the
   * final status update reported (when the stream is between connections,
   * none can be sent, and the slot's confirmed position may trail it; it
   * still never passes what the consumer finished). Idempotent.
   */
  stop(): Promise<void> {
    const stopping = this.#life.stop(); // at once: from the call on, lastAckedLsn does not move
    const backfill = this.#backfill;
    return backfill === undefined ? stopping : Promise.all([stopping, backfill.stop()]).then(() => undefined);
  }

  static {
    underivedOf = (s) => s.#life.iteration.underived();
    messagesOf = (s) => s.#life.iteration.messages(s.#keepalives);
  }

  /**
   * Iterates pgoutput messages (views valid until the next `next()`), with
   * a `RelationChanged` after a Relation message that changed its table
   * (`relationChanges`) and `Ddl` items (`ddl`); breaking out stops the stream.
   */
  [Symbol.asyncIterator](): AsyncIterator<StreamItem> {
    return this.#life.iteration.messages(this.#keepalives);
  }


  /**
   * Iterates whole transactions, materialized (they outlive the decoder's
   * batches): streamed transactions assembled from their blocks, minus
   * aborted subtransactions (or, with `streams: "passthrough"`, their blocks
   * and ends as they come), non-transactional messages as `LogicalMessage`.
   * With `ack: "auto"` a transaction is acknowledged when the consumer asks
   * for the next item. A stream is iterated once: messages or transactions.
   */
  transactions(options: AssemblerOptions = {}): AsyncIterable<TransactionItem> {
    return this.#life.iteration.transactions(options);
  }
}
