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
 *    to it — all of them before anything else happens.
 * 3. they `COPY` every table of the publications (column lists and row
 *    filters applied, as pgoutput applies them to changes), the rows
 *    re-framed as pgoutput Inserts (copy-reframe.ts) and decoded by the
 *    stream's own decoder against Relation messages built from the
 *    catalogs (snapshot-catalog.ts): the same tuple views and values.
 * 4. after the last row was handed over, `START_REPLICATION` from the
 *    consistent point.
 *
 * Backpressure: a copy connection's socket is paused while the rows copied
 * and not yet handed over reach `highWaterMark`; memory is bounded whatever
 * the table size.
 *
 * A snapshot that fails or is stopped before its end never turns into a
 * stream: the error is SNAPSHOT_INCOMPLETE, and the slot (whose snapshot
 * can never be completed) is dropped when the replication connection still
 * works; otherwise the message says to drop it. Start again with a new slot.
 */
import type { Client } from "pg";
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage, Insert } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import { materializeMessage } from "../materialize.ts";
import { parseLsn } from "../lsn.ts";
import { connectClient, pgConnection, type PgModule, type ResolvedConnection } from "./client.ts";
import { quoteIdent, quoteLiteral } from "./commands.ts";
import { copyOut } from "./copy-out.ts";
import { CopyReframer, type CopyFormat } from "./copy-reframe.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import type { NormalizedOptions, ReplicateOptions } from "./options.ts";
import { copyCommand, planTasks, readSnapshotTables, type CopyTask, type SnapshotTable } from "./snapshot-catalog.ts";
import type { ReplicationStream, StreamItem } from "./stream.ts";
import type { AssemblerOptions, TransactionItem } from "./transactions.ts";
import { connectionLimits } from "./defaults.ts";

/**
 * `replicate()`'s options with `snapshot`: copy every row the publications
 * hold first, then stream the changes after them, with no gap and no
 * duplicate (README "Initial snapshot"). The slot must not exist yet: it is
 * created with an exported snapshot. `replicate()` then resolves to a
 * `SnapshotReplication` (`snapshot: false` to a `ReplicationStream`).
 */
export interface SnapshotReplicateOptions extends ReplicateOptions {
  snapshot: boolean | SnapshotOptions;
}

/** The `snapshot` option of `replicate()`. */
export interface SnapshotOptions {
  /** Only these tables of the publications (`schema.table`, or `table` in public). Default: all. */
  tables?: readonly string[];
  /** Copy connections, each copying one table (or ctid range) at a time. Default 2. */
  parallel?: number;
  /** Rows decoded per batch at most (each batch is one decoder call). Default 1000. */
  batchRows?: number;
  /**
   * `binary`: COPY binary, values in their binary (send) format, the faster;
   * `text`: COPY text, values as pgoutput's text. Default: the stream's
   * format (`binary` option), so that snapshot rows and changes carry every
   * value in the same form (a type without a binary parser is bytes in one
   * and text in the other otherwise).
   */
  format?: CopyFormat;
  /** With `parallel > 1`, tables of more heap pages than this are copied in ctid ranges of about this size. Default 16384 (128 MiB). */
  chunkPages?: number;
  /** Called as the copy goes on (at most every 100 ms, and when a table is done). */
  onProgress?: (progress: SnapshotProgress) => void;
}

export interface SnapshotProgress {
  tables: number;
  tablesDone: number;
  /** Rows copied. */
  rows: number;
  /** COPY bytes received. */
  bytes: number;
  /** Rows expected, from `pg_class.reltuples` (0 for tables never analyzed). */
  estimatedRows: number;
}

/** A row of the snapshot: a view (valid until the next item is asked for) with the relation it belongs to. */
export interface SnapshotRow {
  readonly kind: "SnapshotRow";
  readonly relation: Relation;
  readonly tuple: Tuple;
}

/** After the last snapshot row, before the first streamed change. */
export interface SnapshotComplete {
  readonly kind: "SnapshotComplete";
  readonly slot: string;
  /** The exported snapshot's name. */
  readonly snapshotName: string;
  /** The slot's consistent point: streaming starts here. */
  readonly consistentPoint: bigint;
  readonly tables: number;
  readonly rows: number;
  readonly bytes: number;
}

export type SnapshotItem = SnapshotRow | SnapshotComplete;

/** A snapshot row materialized, as `transactions()` yields it: the Insert's fields, and `kind: "SnapshotRow"`. */
export interface MaterializedSnapshotRow extends Record<string, unknown> {
  kind: "SnapshotRow";
}

interface Normalized {
  tables: readonly string[] | undefined;
  parallel: number;
  batchRows: number;
  format: CopyFormat;
  chunkPages: number;
  onProgress: SnapshotOptions["onProgress"];
}

function invalid(message: string): ReplicationError {
  return new ReplicationError(`snapshot: ${message}`, { code: "INVALID_OPTION" });
}

function count(name: string, v: number | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || v < 1) throw invalid(`${name} must be a positive integer, not ${String(v)}`);
  return v;
}

/** The `snapshot` option checked, or undefined for none. */
export function normalizeSnapshot(o: SnapshotReplicateOptions["snapshot"] | undefined, streamBinary: boolean): Normalized | undefined {
  if (o === undefined || o === false) return undefined;
  const s: SnapshotOptions = o === true ? {} : o;
  if (s === null || typeof s !== "object") throw invalid("must be true or an options object");
  if (s.format !== undefined && s.format !== "binary" && s.format !== "text") throw invalid(`format must be binary or text, not ${String(s.format)}`);
  if (s.tables !== undefined && (!Array.isArray(s.tables) || s.tables.some((t) => typeof t !== "string" || t.length === 0))) {
    throw invalid("tables must be a list of table names");
  }
  return {
    tables: s.tables,
    parallel: count("parallel", s.parallel, 2),
    batchRows: count("batchRows", s.batchRows, 1000),
    format: s.format ?? (streamBinary ? "binary" : "text"),
    chunkPages: count("chunkPages", s.chunkPages, 16384),
    onProgress: s.onProgress,
  };
}

/** What the slot creation answered. */
export interface ExportedSnapshot {
  consistentPoint: bigint;
  snapshotName: string;
}

/** The row `CREATE_REPLICATION_SLOT` returns. */
export function exportedSnapshot(row: { consistent_point?: string; snapshot_name?: string | null } | undefined): ExportedSnapshot {
  if (row?.consistent_point === undefined || typeof row.snapshot_name !== "string") {
    throw new ReplicationError("CREATE_REPLICATION_SLOT returned no exported snapshot", { code: "SERVER_ERROR" });
  }
  return { consistentPoint: parseLsn(row.consistent_point), snapshotName: row.snapshot_name };
}

/** What `replicate()` hands the snapshot. */
export interface SnapshotSetup {
  stream: ReplicationStream;
  /** The START_REPLICATION command, sent once the snapshot is complete. */
  startCommand: string;
  /** The replication connection (idle until START_REPLICATION). */
  replicationClient: Client;
  exported: ExportedSnapshot;
  options: NormalizedOptions;
  snapshot: Normalized;
  connection: ResolvedConnection;
  pg: PgModule | undefined;
  serverVersion: number;
}

/** Frames of one table (or part) copied and not yet decoded. */
interface Chunk {
  frames: Uint8Array;
  /** Set on the last chunk of a task. */
  taskDone?: CopyTask;
}

interface Worker {
  client: Client;
  paused: boolean;
}

const PROGRESS_MS = 100;

function openCopyClient(setup: SnapshotSetup): Promise<Client> {
  return connectClient(setup.connection, setup.pg, { replication: false, limits: connectionLimits(setup.options), applicationName: "pgoutput-wasm snapshot" });
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
  readonly #highWater: number;
  readonly #lowWater: number;
  #workers: Worker[] = [];
  #tables: SnapshotTable[] = [];
  #tasks: CopyTask[] = [];
  #tasksLeft = new Map<number, number>();
  readonly #queue: Chunk[] = [];
  #queuedBytes = 0;
  #queuedHighWater = 0;
  #running = 0;
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
  #lastProgress = 0;
  readonly #progress: SnapshotProgress = { tables: 0, tablesDone: 0, rows: 0, bytes: 0, estimatedRows: 0 };
  #delivered = 0;

  /** Use `replicate()`. */
  constructor(setup: SnapshotSetup) {
    this.#setup = setup;
    this.stream = setup.stream;
    this.#decoder = setup.stream.decoder;
    this.slotName = setup.options.slot.name;
    this.snapshotName = setup.exported.snapshotName;
    this.consistentPoint = setup.exported.consistentPoint;
    this.#highWater = setup.options.highWaterMark;
    this.#lowWater = setup.options.lowWaterMark;
  }

  /** Bytes copied and not yet handed over now, and the most ever (what `highWaterMark` bounds). */
  get buffered(): { bytes: number; highWater: number } {
    return { bytes: this.#queuedBytes, highWater: this.#queuedHighWater };
  }

  /** Progress so far (a copy). */
  get progress(): SnapshotProgress {
    return { ...this.#progress };
  }

  /**
   * Opens the copy connections, imports the snapshot on every one of them
   * (before the replication connection may run anything else), reads the
   * tables and starts copying. Used by `replicate()`.
   */
  async prepare(): Promise<void> {
    const s = this.#setup;
    try {
      const n = s.snapshot.parallel;
      const clients = await Promise.all(Array.from({ length: n }, () => openCopyClient(s).catch((e: unknown) => e)));
      this.#workers = clients.filter((c): c is Client => !(c instanceof Error) && typeof (c as Client).query === "function").map((client) => ({ client, paused: false }));
      const failed = clients.find((c) => c instanceof Error);
      if (failed !== undefined) throw failed;
      // The output settings of a walsender, so that text COPY prints values as pgoutput does.
      const importSql = `SET DateStyle = 'ISO, YMD'; SET IntervalStyle = postgres; SET extra_float_digits = 1; SET bytea_output = hex; SET lc_monetary = 'C'; ` +
        `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT ${quoteLiteral(s.exported.snapshotName)}`;
      await Promise.all(this.#workers.map((w) => w.client.query(importSql)));
      this.#tables = await readSnapshotTables(this.#workers[0]!.client, s.options.publications, s.serverVersion, s.snapshot.tables);
      if (s.snapshot.tables !== undefined) {
        const found = new Set(this.#tables.flatMap((t) => [`${t.schema}.${t.name}`, t.schema === "public" ? t.name : ""]));
        const missing = s.snapshot.tables.filter((t) => !found.has(t));
        if (missing.length > 0) throw invalid(`not tables of the publications: ${missing.join(", ")}`);
      }
      this.#tasks = planTasks(this.#tables, n, s.snapshot.chunkPages);
      for (const t of this.#tasks) this.#tasksLeft.set(t.table.relationId, (this.#tasksLeft.get(t.table.relationId) ?? 0) + 1);
      this.#progress.tables = this.#tables.length;
      this.#progress.estimatedRows = this.#tables.reduce((sum, t) => sum + t.estimatedRows, 0);
    } catch (e) {
      await this.#abort(e);
      throw this.#error ?? e;
    }
    this.#running = this.#workers.length;
    for (const w of this.#workers) void this.#work(w);
  }

  async #work(w: Worker): Promise<void> {
    const format = this.#setup.snapshot.format;
    const batchRows = this.#setup.snapshot.batchRows;
    // A batch is at most a quarter of the high-water mark, so that backpressure bounds the queue to about it.
    const batchBytes = Math.max(4096, Math.min(1 << 20, this.#highWater / 4));
    try {
      for (let task = this.#tasks.shift(); task !== undefined; task = this.#tasks.shift()) {
        if (this.#phase !== "copying") return;
        const table = task.table;
        const reframer = new CopyReframer({ relationId: table.relationId, columns: table.columns.length, format, maxTupleBytes: this.#setup.options.maxMessageSize });
        let rowsTaken = 0;
        this.#enqueue(w, { frames: table.metadata }); // the Relation message precedes the rows it describes
        const flush = (last: boolean): void => {
          const frames = reframer.take();
          this.#progress.rows += reframer.rows - rowsTaken;
          rowsTaken = reframer.rows;
          if (frames.length > 0 || last) this.#enqueue(w, last ? { frames, taskDone: task } : { frames });
        };
        let seen = 0;
        const copy = copyOut(w.client, copyCommand(task, format), (payload) => {
          reframer.push(payload);
          this.#progress.bytes += payload.length;
          if (reframer.rows - seen >= batchRows || reframer.pending >= batchBytes) {
            seen = reframer.rows;
            flush(false);
          }
        });
        await copy.done;
        reframer.end();
        flush(true);
      }
      await w.client.query("COMMIT");
    } catch (e) {
      await this.#abort(e);
    } finally {
      this.#running--;
      this.#wakeUp();
    }
  }

  #enqueue(w: Worker, chunk: Chunk): void {
    if (this.#phase !== "copying") return;
    this.#queue.push(chunk);
    this.#queuedBytes += chunk.frames.length;
    if (this.#queuedBytes > this.#queuedHighWater) this.#queuedHighWater = this.#queuedBytes;
    if (this.#queuedBytes >= this.#highWater && !w.paused) {
      w.paused = true;
      // The connection's socket, not the copy: a pause outlasts the COPY it began in
      // (its CommandComplete, the next COPY, the COMMIT are read only once resumed).
      pgConnection(w.client)?.stream.pause();
    }
    this.#wakeUp();
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #report(force: boolean): void {
    const cb = this.#setup.snapshot.onProgress;
    if (cb === undefined) return;
    const now = Date.now();
    if (!force && now - this.#lastProgress < PROGRESS_MS) return;
    this.#lastProgress = now;
    cb(this.progress);
  }

  /** The next snapshot item, or undefined once the SnapshotComplete item was handed over. */
  async #nextSnapshot(): Promise<SnapshotItem | undefined> {
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
      if (this.#pendingTaskDone !== undefined) this.#taskDone(this.#pendingTaskDone);
      this.#pendingTaskDone = undefined;
      const chunk = this.#queue.shift();
      if (chunk !== undefined) {
        this.#queuedBytes -= chunk.frames.length;
        if (this.#queuedBytes <= this.#lowWater) this.#resumeWorkers();
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
        this.#report(false);
        continue;
      }
      if (this.#running === 0) return this.#complete();
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #taskDone(task: CopyTask): void {
    const id = task.table.relationId;
    const left = (this.#tasksLeft.get(id) ?? 1) - 1;
    this.#tasksLeft.set(id, left);
    if (left === 0) this.#progress.tablesDone++;
    this.#report(left === 0);
  }

  #resumeWorkers(): void {
    for (const w of this.#workers) {
      if (!w.paused) continue;
      w.paused = false;
      pgConnection(w.client)?.stream.resume();
    }
  }

  async #complete(): Promise<SnapshotComplete> {
    this.#phase = "complete";
    await this.#closeWorkers();
    this.#report(true);
    return {
      kind: "SnapshotComplete",
      slot: this.slotName,
      snapshotName: this.snapshotName,
      consistentPoint: this.consistentPoint,
      tables: this.#tables.length,
      rows: this.#delivered,
      bytes: this.#progress.bytes,
    };
  }

  async #closeWorkers(): Promise<void> {
    const workers = this.#workers;
    this.#workers = [];
    await Promise.all(workers.map((w) => w.client.end().catch(() => {})));
  }

  /** Fails the snapshot: copy connections closed, the slot dropped if possible, the replication connection closed. */
  #abort(cause: unknown): Promise<void> {
    return (this.#abortDone ??= this.#abortOnce(cause));
  }

  async #abortOnce(cause: unknown): Promise<void> {
    if (this.#phase === "closed") return;
    const slot = this.slotName;
    this.#phase = "closed";
    this.#queue.length = 0;
    this.#batch = undefined;
    this.#resumeWorkers(); // a paused socket would never see its connection end
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
    await this.#closeWorkers();
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
    await this.#closeWorkers();
    await this.stream.stop();
  }
}

function materializeRow(msg: PgoutputMessage): MaterializedSnapshotRow {
  return { ...materializeMessage(msg), kind: "SnapshotRow" };
}
