/**
 * The copy side of the initial snapshot (snapshot.ts): `parallel` ordinary
 * connections, each importing the exported snapshot (`BEGIN ISOLATION
 * LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT`) before anything else
 * happens, then copying the publications' tables (or ctid ranges of them,
 * snapshot-catalog.ts) one task at a time; the COPY rows are re-framed as
 * pgoutput Inserts (copy-reframe.ts) and queued in chunks for the decoder.
 *
 * Backpressure: a copy connection's socket is paused while the rows copied
 * and not yet taken reach `highWaterMark`, and resumed at `lowWaterMark`;
 * memory is bounded whatever the table size.
 */
import type { Client } from "pg";
import { connectClient, pgConnection, type PgModule, type ResolvedConnection } from "./client.ts";
import { quoteLiteral } from "./commands.ts";
import { copyOut } from "./copy-out.ts";
import { CopyReframer } from "./copy-reframe.ts";
import { connectionLimits } from "./defaults.ts";
import type { NormalizedOptions } from "./options.ts";
import { copyCommand, planTasks, readSnapshotTables, type CopyTask, type SnapshotTable } from "./snapshot-catalog.ts";
import { invalid, type NormalizedSnapshot, type SnapshotProgress } from "./snapshot-options.ts";

/** Frames of one table (or part) copied and not yet decoded. */
export interface Chunk {
  frames: Uint8Array;
  /** Set on the last chunk of a task. */
  taskDone?: CopyTask;
}

/** What the copy needs: where to connect, what to copy, and the snapshot to import. */
export interface CopySetup {
  connection: ResolvedConnection;
  pg: PgModule | undefined;
  options: NormalizedOptions;
  snapshot: NormalizedSnapshot;
  snapshotName: string;
  serverVersion: number;
}

interface Worker {
  client: Client;
  paused: boolean;
}

const PROGRESS_MS = 100;

/** The output settings of a walsender, so that text COPY (and `::text`) prints values as pgoutput does. */
export const WALSENDER_OUTPUT_SETTINGS = "SET DateStyle = 'ISO, YMD'; SET IntervalStyle = postgres; SET extra_float_digits = 1; SET bytea_output = hex; SET lc_monetary = 'C';";

export class SnapshotCopy {
  /** Tables, rows and bytes so far (the snapshot hands out copies). */
  readonly progress: SnapshotProgress = { tables: 0, tablesDone: 0, rows: 0, bytes: 0, estimatedRows: 0 };
  readonly #setup: CopySetup;
  /** Whether chunks are still wanted (false once the snapshot is complete or abandoned). */
  readonly #copying: () => boolean;
  /** Fails the snapshot with what a copy connection threw. */
  readonly #abort: (cause: unknown) => Promise<void>;
  /** Tells the consumer a chunk was queued, or a worker finished. */
  readonly #wakeUp: () => void;
  #workers: Worker[] = [];
  #tables: SnapshotTable[] = [];
  #tasks: CopyTask[] = [];
  readonly #tasksLeft = new Map<number, number>();
  readonly #queue: Chunk[] = [];
  #queuedBytes = 0;
  #queuedHighWater = 0;
  #running = 0;
  #lastProgress = 0;

  constructor(setup: CopySetup, host: { copying: () => boolean; abort: (cause: unknown) => Promise<void>; wakeUp: () => void }) {
    this.#setup = setup;
    this.#copying = host.copying;
    this.#abort = host.abort;
    this.#wakeUp = host.wakeUp;
  }

  /** The tables copied. */
  get tables(): number {
    return this.#tables.length;
  }

  /** Every worker has finished (or failed). */
  get finished(): boolean {
    return this.#running === 0;
  }

  /** Bytes copied and not yet taken now, and the most ever (what `highWaterMark` bounds). */
  get buffered(): { bytes: number; highWater: number } {
    return { bytes: this.#queuedBytes, highWater: this.#queuedHighWater };
  }

  /**
   * Opens the copy connections, imports the snapshot on every one of them
   * (before the replication connection may run anything else), reads the
   * tables and plans the tasks. Throws what failed (the caller abandons the
   * snapshot, which closes what was opened).
   */
  async prepare(): Promise<void> {
    const s = this.#setup;
    const n = s.snapshot.parallel;
    const open = () => connectClient(s.connection, s.pg, { replication: false, limits: connectionLimits(s.options), applicationName: "pgoutput-wasm snapshot" });
    const clients = await Promise.all(Array.from({ length: n }, () => open().catch((e: unknown) => e)));
    this.#workers = clients.filter((c): c is Client => !(c instanceof Error) && typeof (c as Client).query === "function").map((client) => ({ client, paused: false }));
    const failed = clients.find((c) => c instanceof Error);
    if (failed !== undefined) throw failed;
    const importSql = `${WALSENDER_OUTPUT_SETTINGS} ` +
      `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT ${quoteLiteral(s.snapshotName)}`;
    await Promise.all(this.#workers.map((w) => w.client.query(importSql)));
    this.#tables = await readSnapshotTables(this.#workers[0]!.client, s.options.publications, s.serverVersion, s.snapshot.tables);
    if (s.snapshot.tables !== undefined) {
      const found = new Set(this.#tables.flatMap((t) => [`${t.schema}.${t.name}`, t.schema === "public" ? t.name : ""]));
      const missing = s.snapshot.tables.filter((t) => !found.has(t));
      if (missing.length > 0) throw invalid(`not tables of the publications: ${missing.join(", ")}`);
    }
    this.#tasks = planTasks(this.#tables, n, s.snapshot.chunkPages);
    for (const t of this.#tasks) this.#tasksLeft.set(t.table.relationId, (this.#tasksLeft.get(t.table.relationId) ?? 0) + 1);
    this.progress.tables = this.#tables.length;
    this.progress.estimatedRows = this.#tables.reduce((sum, t) => sum + t.estimatedRows, 0);
  }

  /** Every worker starts copying. */
  start(): void {
    this.#running = this.#workers.length;
    for (const w of this.#workers) void this.#work(w);
  }

  /** The next chunk copied, if one is queued; a paused connection resumes once the queue is down to `lowWaterMark`. */
  take(): Chunk | undefined {
    const chunk = this.#queue.shift();
    if (chunk === undefined) return undefined;
    this.#queuedBytes -= chunk.frames.length;
    if (this.#queuedBytes <= this.#setup.options.lowWaterMark) this.resume();
    return chunk;
  }

  /** A task's last chunk was handed over: its table may be done. */
  taskDone(task: CopyTask): void {
    const id = task.table.relationId;
    const left = (this.#tasksLeft.get(id) ?? 1) - 1;
    this.#tasksLeft.set(id, left);
    if (left === 0) this.progress.tablesDone++;
    this.report(left === 0);
  }

  /** `onProgress`, at most every 100 ms unless `force`. */
  report(force: boolean): void {
    const cb = this.#setup.snapshot.onProgress;
    if (cb === undefined) return;
    const now = Date.now();
    if (!force && now - this.#lastProgress < PROGRESS_MS) return;
    this.#lastProgress = now;
    cb({ ...this.progress });
  }

  /** Drops what is queued and resumes paused connections (a paused socket would never see its connection end). */
  clear(): void {
    this.#queue.length = 0;
    this.resume();
  }

  /** Paused connections read again. */
  resume(): void {
    for (const w of this.#workers) {
      if (!w.paused) continue;
      w.paused = false;
      pgConnection(w.client)?.stream.resume();
    }
  }

  /** Closes the copy connections. */
  async close(): Promise<void> {
    const workers = this.#workers;
    this.#workers = [];
    await Promise.all(workers.map((w) => w.client.end().catch(() => {})));
  }

  async #work(w: Worker): Promise<void> {
    const { format, batchRows } = this.#setup.snapshot;
    // A batch is at most a quarter of the high-water mark, so that backpressure bounds the queue to about it.
    const batchBytes = Math.max(4096, Math.min(1 << 20, this.#setup.options.highWaterMark / 4));
    try {
      for (let task = this.#tasks.shift(); task !== undefined; task = this.#tasks.shift()) {
        if (!this.#copying()) return;
        const table = task.table;
        const reframer = new CopyReframer({ relationId: table.relationId, columns: table.columns.length, format, maxTupleBytes: this.#setup.options.maxMessageSize });
        let rowsTaken = 0;
        this.#enqueue(w, { frames: table.metadata }); // the Relation message precedes the rows it describes
        const flush = (last: boolean): void => {
          const frames = reframer.take();
          this.progress.rows += reframer.rows - rowsTaken;
          rowsTaken = reframer.rows;
          if (frames.length > 0 || last) this.#enqueue(w, last ? { frames, taskDone: task } : { frames });
        };
        let seen = 0;
        const copy = copyOut(w.client, copyCommand(task, format), (payload) => {
          reframer.push(payload);
          this.progress.bytes += payload.length;
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
    if (!this.#copying()) return;
    this.#queue.push(chunk);
    this.#queuedBytes += chunk.frames.length;
    if (this.#queuedBytes > this.#queuedHighWater) this.#queuedHighWater = this.#queuedBytes;
    if (this.#queuedBytes >= this.#setup.options.highWaterMark && !w.paused) {
      w.paused = true;
      // The connection's socket, not the copy: a pause outlasts the COPY it began in
      // (its CommandComplete, the next COPY, the COMMIT are read only once resumed).
      pgConnection(w.client)?.stream.pause();
    }
    this.#wakeUp();
  }
}
