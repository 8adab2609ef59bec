/**
 * The initial snapshot (`replicate({ ..., snapshot: true })`): every row
 * that exists when the slot is created, then every change after it, with
 * no gap and no duplicate at the hand-off.
 *
 * How the hand-off is made consistent (PostgreSQL docs, "Exported
 * Snapshots" and "Replication Protocol"):
 * 1. the replication connection creates the slot with `SNAPSHOT 'export'`;
 *    the server answers with the slot's consistent point and a snapshot
 *    name. The snapshot sees exactly the transactions committed before the
 *    consistent point; the slot streams exactly those committed after it.
 * 2. the replication connection then stays idle (its next command would
 *    end the export) while `parallel` ordinary connections each
 *    `BEGIN ISOLATION LEVEL REPEATABLE READ` and `SET TRANSACTION SNAPSHOT`
 *    to it — all of them before anything else happens (snapshot-copy.ts).
 * 3. they `COPY` every table of the publications (column lists and row
 *    filters applied, as pgoutput applies them to changes), the rows
 *    re-framed as pgoutput Inserts (copy-reframe.ts) and decoded here by the
 *    stream's own decoder against Relation messages built from the
 *    catalogs (snapshot-catalog.ts): the same tuple views and values. A
 *    copy connection is paused at `highWaterMark`: memory is bounded
 *    whatever the table size.
 * 4. after the last row was handed over, `START_REPLICATION` from the
 *    consistent point.
 *
 * A snapshot that fails or is stopped before its end never turns into a
 * stream: the error is SNAPSHOT_INCOMPLETE, and the slot (whose snapshot
 * can never be completed) is dropped when the replication connection still
 * works; otherwise the message says to drop it. Start again with a new slot.
 */
import type { Client } from "pg";
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage, Insert } from "../messages.ts";
import { materializeMessage } from "../materialize.ts";
import { quoteIdent } from "./commands.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import type { CopyTask } from "./snapshot-catalog.ts";
import { SnapshotCopy, type CopySetup } from "./snapshot-copy.ts";
import type { ExportedSnapshot, SnapshotProgress } from "./snapshot-options.ts";
import { metricsText, type MetricFamily } from "../metrics/exposition.ts";
import { snapshotFamilies, streamLabels, type StreamMetricsOptions } from "./stream-metrics.ts";
import type { ReplicationStream, StreamItem } from "./stream.ts";
import type { AssemblerOptions, TransactionItem } from "./transactions.ts";

/** The option type with the class that reads it (the CLI imports it from here). */
export type { SnapshotReplicateOptions } from "./snapshot-options.ts";

export type { SnapshotComplete, SnapshotItem, SnapshotRow } from "../snapshot-items.ts";
import type { SnapshotComplete, SnapshotItem } from "../snapshot-items.ts";

/** A snapshot row materialized, as `transactions()` yields it: the Insert's fields, and `kind: "SnapshotRow"`. */
export interface MaterializedSnapshotRow extends Record<string, unknown> {
  kind: "SnapshotRow";
}

/** What `replicate()` hands the snapshot. */
export interface SnapshotSetup extends Omit<CopySetup, "snapshotName"> {
  stream: ReplicationStream;
  /** The START_REPLICATION command, sent once the snapshot is complete. */
  startCommand: string;
  /** The replication connection (idle until START_REPLICATION). */
  replicationClient: Client;
  exported: ExportedSnapshot;
}

/**
 * `replicate()` with `snapshot`: snapshot items first, then the stream's
 * items. The replication stream (`stream`) is started after the
 * SnapshotComplete item was handed over.
 */
export class SnapshotReplication implements AsyncIterable<SnapshotItem | StreamItem> {
  /** The replication stream; started once the snapshot is complete. */
  readonly stream: ReplicationStream;
  readonly slotName: string;
  readonly snapshotName: string;
  /** Where streaming starts: the slot's consistent point. */
  readonly consistentPoint: bigint;

  readonly #setup: SnapshotSetup;
  readonly #decoder: PgoutputDecoder;
  readonly #copy: SnapshotCopy;
  #batch: Batch | undefined;
  #index = 0;
  #pendingTaskDone: CopyTask | undefined;
  #error: ReplicationError | undefined;
  #phase: "copying" | "complete" | "streaming" | "closed" = "copying";
  #wake: (() => void) | undefined;
  #claimed = false;
  /** Set when the snapshot is being abandoned; resolves once the slot is dropped and the error set. */
  #abortDone: Promise<void> | undefined;
  #stopped = false;
  #delivered = 0;

  /** Use `replicate()`. */
  constructor(setup: SnapshotSetup) {
    this.#setup = setup;
    this.stream = setup.stream;
    this.#decoder = setup.stream.decoder;
    this.slotName = setup.options.slot.name;
    this.snapshotName = setup.exported.snapshotName;
    this.consistentPoint = setup.exported.consistentPoint;
    this.#copy = new SnapshotCopy({ ...setup, snapshotName: setup.exported.snapshotName }, {
      copying: () => this.#phase === "copying",
      abort: (cause) => this.#abort(cause),
      wakeUp: () => this.#wakeUp(),
    });
  }

  /** Bytes copied and not yet handed over now, and the most ever (what `highWaterMark` bounds). */
  get buffered(): { bytes: number; highWater: number } {
    return this.#copy.buffered;
  }

  /** The snapshot's metrics (rows, tables) and its stream's, in the Prometheus text exposition format (docs/metrics.md). */
  metrics(options: StreamMetricsOptions = {}): Promise<string> {
    return metricsText({ collectMetrics: () => this.collectMetrics(options) });
  }

  /** The metrics as families, for `metricsText()` with other sources. */
  async collectMetrics(options: StreamMetricsOptions = {}): Promise<MetricFamily[]> {
    return [...snapshotFamilies(streamLabels(this.slotName, this.#setup.options.publications), this.progress), ...(await this.stream.collectMetrics(options))];
  }

  /** Progress so far (a copy). */
  get progress(): SnapshotProgress {
    return { ...this.#copy.progress };
  }

  /**
   * Opens the copy connections, imports the snapshot on every one of them
   * (before the replication connection may run anything else), reads the
   * tables and starts copying (snapshot-copy.ts). Used by `replicate()`.
   */
  async prepare(): Promise<void> {
    try {
      await this.#copy.prepare();
    } catch (e) {
      await this.#abort(e);
      throw this.#error ?? e;
    }
    this.#copy.start();
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** The next snapshot item, or undefined once the SnapshotComplete item was handed over. */
  async #nextSnapshot(): Promise<SnapshotItem | undefined> {
    const copy = this.#copy;
    for (;;) {
      if (this.#abortDone !== undefined) await this.#abortDone; // the error is set once the slot is dropped
      if (this.#error !== undefined) throw this.#error;
      if (this.#phase !== "copying") return undefined;
      while (this.#batch !== undefined && this.#index < this.#batch.length) {
        const i = this.#index++;
        const kind = this.#batch.kind(i);
        if (kind !== "Insert") continue; // Relation and Type messages: cached by the decoder
        const msg = this.#batch.get(i) as Insert;
        this.#delivered++;
        return { kind: "SnapshotRow", relation: msg.relation!, tuple: msg.newTuple };
      }
      this.#batch = undefined;
      if (this.#pendingTaskDone !== undefined) copy.taskDone(this.#pendingTaskDone);
      this.#pendingTaskDone = undefined;
      const chunk = copy.take();
      if (chunk !== undefined) {
        this.#pendingTaskDone = chunk.taskDone;
        if (chunk.frames.length > 0) {
          try {
            this.#batch = this.#decoder.decodeFramed(chunk.frames);
          } catch (e) {
            await this.#abort(e);
            throw this.#error ?? e;
          }
          this.#index = 0;
        }
        copy.report(false);
        continue;
      }
      if (copy.finished) return this.#complete();
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  async #complete(): Promise<SnapshotComplete> {
    this.#phase = "complete";
    await this.#copy.close();
    this.#copy.report(true);
    return {
      kind: "SnapshotComplete",
      slot: this.slotName,
      snapshotName: this.snapshotName,
      consistentPoint: this.consistentPoint,
      tables: this.#copy.tables,
      rows: this.#delivered,
      bytes: this.#copy.progress.bytes,
    };
  }

  /** Fails the snapshot: copy connections closed, the slot dropped if possible, the replication connection closed. */
  #abort(cause: unknown): Promise<void> {
    return (this.#abortDone ??= this.#abortOnce(cause));
  }

  async #abortOnce(cause: unknown): Promise<void> {
    if (this.#phase === "closed") return;
    const slot = this.slotName;
    this.#phase = "closed";
    this.#copy.clear();
    this.#batch = undefined;
    const dropped = await this.#dropSlot();
    if (this.#stopped) {
      // stop(): the iteration ends without an error.
    } else if (cause instanceof ReplicationError && cause.code === "INVALID_OPTION") this.#error = cause;
    else {
      const recovery = dropped
        ? "the slot was dropped; start again with snapshot (a new slot)"
        : `do not stream from it: drop it (SELECT pg_drop_replication_slot('${slot}')) and start again with snapshot (a new slot)`;
      const context = `snapshot of slot "${slot}" was never completed`;
      const what = fromPgError(cause, context, "CONNECTION_LOST", this.#setup.connection.secrets);
      const text = cause instanceof ReplicationError ? `${context}: ${what.message}` : what.message; // fromPgError keeps those as they are
      this.#error = new ReplicationError(`${text}; ${recovery}`, { code: "SNAPSHOT_INCOMPLETE", sqlstate: what.sqlstate, cause });
    }
    this.#wakeUp();
  }

  async #dropSlot(): Promise<boolean> {
    const s = this.#setup;
    await this.#copy.close();
    let dropped = s.options.slot.temporary; // dropped with its connection
    if (!dropped) {
      try {
        await s.replicationClient.query(`DROP_REPLICATION_SLOT ${quoteIdent(this.slotName)}`);
        dropped = true;
      } catch {
        dropped = false;
      }
    }
    await this.stream.stop().catch(() => {});
    return dropped;
  }

  async #startStreaming(): Promise<void> {
    this.#phase = "streaming";
    try {
      await this.stream.start(this.#setup.startCommand);
    } catch (e) {
      await this.stream.stop().catch(() => {});
      throw fromPgError(e, "could not start replication after the snapshot", "CONNECTION_LOST", this.#setup.connection.secrets);
    }
  }

  #claim(): void {
    if (this.#claimed) throw new ReplicationError("a snapshot replication is iterated once", { code: "INVALID_OPTION" });
    this.#claimed = true;
  }

  /** Snapshot rows (views), SnapshotComplete, then the stream's messages. Breaking out stops everything. */
  [Symbol.asyncIterator](): AsyncIterator<SnapshotItem | StreamItem> {
    this.#claim();
    let inner: AsyncIterator<StreamItem> | undefined;
    return {
      next: async (): Promise<IteratorResult<SnapshotItem | StreamItem>> => {
        if (inner === undefined) {
          const item = await this.#nextSnapshot();
          if (item !== undefined) return { done: false, value: item };
          if (this.#stopped) return { done: true, value: undefined };
          if (this.#phase === "complete") await this.#startStreaming();
          inner = this.stream[Symbol.asyncIterator]();
        }
        return inner.next();
      },
      return: async (): Promise<IteratorResult<SnapshotItem | StreamItem>> => {
        await this.stop();
        return { done: true, value: undefined };
      },
    };
  }

  /** Snapshot rows materialized, SnapshotComplete, then `stream.transactions(options)`. */
  transactions(options: AssemblerOptions = {}): AsyncIterable<MaterializedSnapshotRow | SnapshotComplete | TransactionItem> {
    this.#claim();
    let inner: AsyncIterator<TransactionItem> | undefined;
    const iterator: AsyncIterableIterator<MaterializedSnapshotRow | SnapshotComplete | TransactionItem> = {
      next: async () => {
        if (inner === undefined) {
          const item = await this.#nextSnapshot();
          if (item?.kind === "SnapshotRow") return { done: false, value: materializeRow(this.#batch!.get(this.#index - 1)) };
          if (item !== undefined) return { done: false, value: item };
          if (this.#stopped) return { done: true, value: undefined };
          if (this.#phase === "complete") await this.#startStreaming();
          inner = this.stream.transactions(options)[Symbol.asyncIterator]();
        }
        return inner.next();
      },
      return: async () => {
        await this.stop();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** See `ReplicationStream.ack`; snapshot rows need no acknowledgement. */
  ack(lsn: Parameters<ReplicationStream["ack"]>[0]): bigint {
    return this.stream.ack(lsn);
  }

  get lastAckedLsn(): bigint {
    return this.stream.lastAckedLsn;
  }

  /**
   * Stops. Before the snapshot is complete this abandons it: the slot is
   * dropped (its snapshot can never be completed) and the iteration ends.
   */
  async stop(): Promise<void> {
    if (this.#phase === "copying") {
      this.#stopped = true;
      await this.#abort(new Error("stopped before the snapshot was complete"));
      return;
    }
    this.#phase = this.#phase === "complete" ? "closed" : this.#phase;
    await this.#copy.close();
    await this.stream.stop();
  }
}

function materializeRow(msg: PgoutputMessage): MaterializedSnapshotRow {
  return { ...materializeMessage(msg), kind: "SnapshotRow" };
}
