/**
 * A backfill (incremental snapshot) of tables while the stream runs:
 * `stream.backfill({ tables })`. Each table is read in key order, in chunks
 * of `chunkRows`, each between a low and a high watermark written into the
 * WAL (backfill-chunk.ts); the stream hands a chunk's rows over where its
 * high watermark is, as `BackfillRow` items among the live changes, and a
 * `BackfillComplete` after a table's last row.
 *
 * Which rows of a chunk are handed over (DBLog's rule, made exact with the
 * chunk's snapshot): a live change between the watermarks from a
 * transaction the chunk's snapshot does not see is newer than the chunk's
 * row, so that row is dropped (the live change wins); a change the
 * snapshot sees is already in the row, which is kept. Every transaction
 * before the low watermark is visible to the chunk (backfill-chunk.ts), and
 * every one the chunk sees is before the high watermark, so a row handed
 * over is the row as it is at that point of the stream: never older than a
 * change before it.
 *
 * Read again (the table's `reread` keys), so that the consumer ends with
 * every column: a dropped row whose newer change is an Update with
 * unchanged TOASTed columns (pgoutput leaves out what did not change, and
 * the consumer may not hold the row yet), and the new key of an Update
 * that changes the key with unchanged TOASTed columns (its old row may not
 * be handed over yet). A change whose place cannot be settled — a streamed
 * or prepared transaction (its changes come before its commit), a key that
 * is itself unchanged TOAST, a window too busy to hold — makes the chunk be
 * read again, whole.
 *
 * Memory: one chunk (at most `chunkRows` rows, plus the keys read again)
 * and the changes of its window until the chunk is held; the next chunk is
 * read once the consumer has taken the rows of the last one.
 */
import type { Client } from "pg";
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import type { Insert, PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import type { BackfillComplete, BackfillItem, BackfillProgress, BackfillRow } from "../backfill-items.ts";
import { createDecoder } from "../create-decoder.ts";
import { connectClient, type PgModule, type ResolvedConnection } from "./client.ts";
import { connectionLimits } from "./defaults.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import type { NormalizedOptions } from "./options.ts";
import { WALSENDER_OUTPUT_SETTINGS } from "./snapshot-copy.ts";
import { qualifiedName, readBackfillTable, refused, type BackfillTable } from "./backfill-catalog.ts";
import { BACKFILL_PREFIX, emitHigh, parseWatermark, readChunk, type ChunkRead } from "./backfill-chunk.ts";

export type { BackfillComplete, BackfillItem, BackfillProgress, BackfillRow } from "../backfill-items.ts";

/** `stream.backfill()`'s options. */
export interface BackfillOptions {
  /** Tables of the stream's publications (`schema.table`, or `table` in public), backfilled one after another in this order. */
  tables: readonly string[];
  /** Rows per chunk (default 1024): the memory a chunk takes, and how long a watermark window stays open. */
  chunkRows?: number;
  /** An SQL condition on the rows to backfill: one for every table, or by table name. */
  where?: string | Readonly<Record<string, string>>;
  /** Where an earlier backfill got to (the `progress` of the last item made durable): resumes each table after it. */
  progress?: readonly BackfillProgress[];
  /**
   * Decodes the chunks' rows (they outlive the stream's own batches): made
   * like the stream's decoder, used for nothing else. Default: one of the
   * same backend with default value options.
   */
  decoder?: PgoutputDecoder;
}

/** What a backfill needs of its stream (replicate() provides it). */
export interface BackfillSetup {
  connection: ResolvedConnection;
  pg: PgModule | undefined;
  options: NormalizedOptions;
  serverVersion: number;
  decoder: PgoutputDecoder;
  /** Wakes the stream's waiting pull (a failure is thrown by the iteration without waiting for the next message). */
  wakeUp?: () => void;
}

/** What the stream's iteration asks of a backfill (iteration.ts). */
export interface BackfillHook {
  /** A message reached in stream order; true when it was a watermark of this backfill (not handed over). */
  observe(msg: PgoutputMessage): boolean;
  /** The next backfill item, to hand over before the stream's next message; throws what failed the backfill. */
  take(): BackfillItem | undefined;
}

/** A change's keys as the window holds them until the chunk is read. */
interface Touch {
  xid: number;
  /** Key strings (keyString) the change touches; undefined: not known (a key column sent as unchanged TOAST). */
  keys: (string | undefined)[];
  /** The new row's key, when the change leaves it with every column (an Insert, an Update without unchanged TOAST), or not. */
  newKey: string | undefined;
  complete: boolean;
  /** A Delete: its old key. */
  removed: string | undefined;
}

/** More changes than this in one window before the chunk is read make it be read again (memory stays bounded). */
const MAX_PENDING_TOUCHES = 65_536;

interface TableState {
  table: BackfillTable;
  lastKey: readonly string[] | null;
  /** Keys to read again, by key string of their texts. */
  reread: Map<string, readonly string[]>;
  done: boolean;
  rows: number;
  chunks: number;
  /** Positions of the key columns in the stream's relation (by name), cached per Relation object. */
  live: { relation: Relation; positions: number[] | undefined } | undefined;
}

/** A chunk between its watermarks. */
class Window {
  lowSeen = false;
  closed = false;
  dirty = false;
  chunk: ChunkRead | undefined;
  batch: Batch | undefined;
  /** Message index in `batch` of each row. */
  rowIndex: number[] = [];
  /** Key string → row number. */
  keyIndex = new Map<string, number>();
  pending: Touch[] = [];
  dropped = new Set<number>();
  /** Rows dropped for an Update with unchanged TOAST: read again. */
  incomplete = new Set<number>();
  outcome!: (o: "dirty" | "more" | "done") => void;
  readonly done = new Promise<"dirty" | "more" | "done">((resolve) => (this.outcome = resolve));

  constructor(readonly seq: number, readonly state: TableState, readonly planned: readonly (readonly string[])[]) {}
}

/** A chunk's rows being handed over. */
interface Delivery {
  window: Window;
  rows: number[];
  next: number;
  lsn: bigint;
  /** Each row's lastKey (the last key read after the previous bound, up to it). */
  lastKeys: (readonly string[] | null)[];
  reread: readonly (readonly string[])[];
  complete: BackfillComplete | undefined;
}

let runs = 0;

/** A backfill running on a stream (`stream.backfill()`): its items come with the stream's message iteration. */
export interface BackfillRun {
  /** Every table's progress now (copies): what to pass back as `progress` to resume. */
  readonly progress: BackfillProgress[];
  readonly stats: BackfillStats;
  /** Every table is complete. */
  readonly done: boolean;
  /** `stop()` was called, or a failure stopped it. */
  readonly stopped: boolean;
  /** The failure that ended it, if any (also thrown by the stream's iteration, in stream order). */
  readonly error: ReplicationError | undefined;
  /** Ends it (the stream goes on); what was handed over stays handed over. */
  stop(): Promise<void>;
}

/** What a backfill did so far. */
export interface BackfillStats {
  /** Chunks read (including those read again). */
  chunks: number;
  /** Rows handed over. */
  rows: number;
  /** Rows of chunks dropped because a live change the chunk did not see touched them. */
  dropped: number;
  /** Keys queued to be read again (a row a live change left without its unchanged TOASTed values). */
  reread: number;
  /** Chunks read again whole (a change whose place could not be settled). */
  repeated: number;
}

export class Backfill implements BackfillHook, BackfillRun {
  /** This backfill's id in its watermarks (other runs' watermarks are ignored). */
  readonly run: string;
  readonly #setup: BackfillSetup;
  readonly #states: TableState[];
  readonly #chunkRows: number;
  readonly #where: BackfillOptions["where"];
  readonly #decoder: PgoutputDecoder;
  #client: Client | undefined;
  #current: TableState | undefined;
  #window: Window | undefined;
  #delivery: Delivery | undefined;
  /** A row was handed over and the consumer has not asked for the next item yet. */
  #outstanding = false;
  #drained: (() => void) | undefined;
  #failure: ReplicationError | undefined;
  #stopped = false;
  #seq = 0;
  readonly #stats: BackfillStats = { chunks: 0, rows: 0, dropped: 0, reread: 0, repeated: 0 };
  /** Transaction context in stream order. */
  #xid: number | undefined;
  #deferredXid: number | undefined;
  /**
   * Streamed and prepared transactions open (their changes come before
   * their commit), and whether they touched a table of this backfill; one
   * that began before the backfill is not here (unknown).
   */
  readonly #deferred = new Map<number, boolean>();
  readonly finished: Promise<void>;

  constructor(setup: BackfillSetup, states: TableState[], options: BackfillOptions, decoder: PgoutputDecoder, client: Client) {
    this.#setup = setup;
    this.#states = states;
    this.#chunkRows = options.chunkRows ?? 1024;
    this.#where = options.where;
    this.#decoder = decoder;
    this.#client = client;
    this.run = `${Date.now().toString(36)}.${(++runs).toString(36)}.${Math.random().toString(36).slice(2, 10)}`;
    this.finished = this.#drive();
  }

  /** Every table's progress now (copies). */
  get progress(): BackfillProgress[] {
    return this.#states.map((s) => progressOf(s, s.lastKey, [...s.reread.values()], s.done));
  }

  get stats(): BackfillStats {
    return { ...this.#stats };
  }

  /** Whether every table is complete. */
  get done(): boolean {
    return this.#states.every((s) => s.done);
  }

  /** Whether `stop()` was called (or a failure stopped it). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** The failure that ended the backfill, if any. */
  get error(): ReplicationError | undefined {
    return this.#failure;
  }

  /** Ends the backfill (the stream goes on); what was handed over stays handed over. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#window?.outcome("done");
    this.#drained?.();
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
    await this.finished;
  }

  observe(msg: PgoutputMessage): boolean {
    switch (msg.kind) {
      case "Message": {
        if (msg.prefix !== BACKFILL_PREFIX) return false;
        const w = parseWatermark(msg.contentText);
        const window = this.#window;
        if (w !== undefined && w.run === this.run && window !== undefined && w.seq === window.seq && !window.closed) {
          if (w.mark === "low") window.lowSeen = true;
          else this.#close(window, msg.lsn);
        }
        return true;
      }
      case "Begin":
        this.#xid = msg.xid;
        return false;
      case "Commit":
        this.#xid = undefined;
        return false;
      case "BeginPrepare":
        this.#deferredXid = msg.xid;
        this.#deferred.set(msg.xid, false);
        return false;
      case "Prepare":
        this.#deferredXid = undefined;
        return false;
      case "StreamStart":
        this.#deferredXid = msg.xid;
        if (msg.firstSegment) this.#deferred.set(msg.xid, false);
        return false;
      case "StreamStop":
        this.#deferredXid = undefined;
        return false;
      case "StreamCommit":
      case "CommitPrepared":
        this.#deferredEnd(msg.xid, true);
        return false;
      case "StreamAbort":
        if (msg.subXid === msg.xid) this.#deferredEnd(msg.xid, false);
        return false;
      case "RollbackPrepared":
        this.#deferredEnd(msg.xid, false);
        return false;
      case "Insert":
      case "Update":
      case "Delete":
        this.#change(msg);
        return false;
      default:
        return false;
    }
  }

  take(): BackfillItem | undefined {
    const d = this.#delivery;
    if (d !== undefined) {
      if (d.next < d.rows.length) {
        const i = d.next++;
        const row = d.rows[i]!;
        const msg = d.window.batch!.get(d.window.rowIndex[row]!) as Insert;
        this.#outstanding = true;
        const item: BackfillRow = {
          kind: "BackfillRow", relation: msg.relation!, tuple: msg.newTuple, lsn: d.lsn,
          progress: progressOf(d.window.state, d.lastKeys[i]!, d.reread, false),
        };
        return item;
      }
      this.#delivery = undefined;
      if (d.complete !== undefined) {
        this.#outstanding = true;
        return d.complete;
      }
    }
    this.#outstanding = false;
    const drained = this.#drained;
    this.#drained = undefined;
    drained?.();
    if (this.#failure !== undefined) {
      const e = this.#failure;
      this.#failure = undefined;
      throw e;
    }
    return undefined;
  }

  async #drive(): Promise<void> {
    try {
      for (const state of this.#states) {
        if (state.done) continue;
        this.#current = state;
        // What an open streamed or prepared transaction did to this table before it was current is unknown.
        for (const xid of this.#deferred.keys()) this.#deferred.set(xid, true);
        for (;;) {
          await this.#drain();
          if (this.#stopped) return;
          const outcome = await this.#chunk(state);
          if (this.#stopped) return;
          if (outcome === "done") break;
        }
      }
    } catch (e) {
      if (this.#stopped) return;
      this.#stopped = true;
      const table = this.#current?.table.qualified ?? "";
      this.#failure = fromPgError(e, `backfill of ${table}`, "CONNECTION_LOST", this.#setup.connection.secrets);
      this.#setup.wakeUp?.();
    } finally {
      this.#current = undefined;
      this.#window = undefined;
      const client = this.#client;
      this.#client = undefined;
      await client?.end().catch(() => {});
    }
  }

  /** Waits until the consumer took every row of the last chunk (and came back: the last view is released). */
  #drain(): Promise<void> {
    if (this.#delivery === undefined && !this.#outstanding) return Promise.resolve();
    return new Promise((resolve) => (this.#drained = resolve));
  }

  async #chunk(state: TableState): Promise<"dirty" | "more" | "done"> {
    const planned = [...state.reread.values()];
    state.reread.clear();
    const window = (this.#window = new Window(++this.#seq, state, planned));
    const where = typeof this.#where === "string" ? this.#where : this.#where?.[state.table.qualified] ?? this.#where?.[state.table.name];
    const client = this.#client!;
    const chunk = await readChunk(client, {
      table: state.table, run: this.run, seq: window.seq, format: this.#setup.options.binary ? "binary" : "text",
      chunkRows: this.#chunkRows, where, lastKey: state.lastKey, reread: planned,
      maxTupleBytes: this.#setup.options.maxMessageSize, stopped: () => this.#stopped,
    });
    state.chunks++;
    this.#stats.chunks++;
    this.#hold(window, chunk);
    await emitHigh(client, this.run, window.seq);
    const outcome = await window.done;
    if (outcome === "dirty") {
      this.#stats.repeated++;
      for (const k of planned) state.reread.set(keyText(k), k);
    }
    return outcome;
  }

  /** The chunk is read: its rows decoded and indexed by key; the window's changes so far settled against it. */
  #hold(window: Window, chunk: ChunkRead): void {
    const batch = this.#decoder.decodeFramed(chunk.frames);
    window.chunk = chunk;
    window.batch = batch;
    const positions = window.state.table.key.map((k) => k.position);
    for (let i = 0; i < batch.length; i++) {
      if (batch.kind(i) !== "Insert") continue;
      const row = window.rowIndex.length;
      window.rowIndex.push(i);
      const key = keyString((batch.get(i) as Insert).newTuple, positions);
      if (key !== undefined) window.keyIndex.set(key, row);
    }
    if (window.rowIndex.length !== chunk.keys.length) throw new Error(`backfill chunk of ${window.state.table.qualified}: ${window.rowIndex.length} rows decoded for ${chunk.keys.length} keys`);
    for (const t of window.pending) this.#settle(window, t);
    window.pending = [];
  }

  #change(msg: Extract<PgoutputMessage, { kind: "Insert" | "Update" | "Delete" }>): void {
    const state = this.#current;
    if (state === undefined || msg.relationId !== state.table.relationId || msg.relation === undefined) return;
    const positions = livePositions(state, msg.relation);
    if (positions === undefined) {
      this.#dirty(); // the key's columns are not in the stream's relation (a schema change): read the chunk again
      return;
    }
    const newTuple = msg.kind === "Delete" ? undefined : msg.newTuple;
    const oldTuple = msg.kind === "Insert" ? null : msg.oldTuple;
    const newKey = newTuple === undefined ? undefined : keyString(newTuple, positions);
    const oldKey = oldTuple === null ? undefined : keyString(oldTuple, positions);
    const unchanged = newTuple !== undefined && newTuple.unchangedColumns().length > 0;
    // A key change with unchanged TOAST: the consumer fills those columns from the old row, which it may not hold yet.
    if (msg.kind === "Update" && unchanged && oldTuple !== null && oldKey !== newKey) {
      const texts = newKey === undefined ? undefined : keyTexts(newTuple!, positions);
      if (texts === undefined) this.#fail(`an Update changed a key of ${state.table.qualified} to one whose text cannot be read from the stream (use a text-format stream)`);
      else {
        state.reread.set(keyText(texts), texts);
        this.#stats.reread++;
      }
    }
    // The block's xid (its StreamStart's): a streamed change's own is its subtransaction's when it is in one.
    const deferred = this.#deferredXid ?? msg.xid;
    if (deferred !== undefined) {
      if (this.#deferred.has(deferred)) this.#deferred.set(deferred, true); // settled at its commit (#deferredEnd)
      return;
    }
    const window = this.#window;
    if (window === undefined || window.state !== state || !window.lowSeen || window.closed) return;
    if (this.#xid === undefined) return;
    const keys = msg.kind === "Insert" ? [newKey] : msg.kind === "Delete" ? [oldKey] : oldTuple === null ? [newKey] : [oldKey, newKey];
    if (newTuple !== undefined && newKey === undefined) keys.push(undefined);
    const touch: Touch = { xid: this.#xid, keys, newKey, complete: !unchanged, removed: msg.kind === "Delete" ? oldKey : undefined };
    if (window.chunk !== undefined) this.#settle(window, touch);
    else if (window.pending.length < MAX_PENDING_TOUCHES) window.pending.push(touch);
    else {
      window.dirty = true;
      window.pending = [];
    }
  }

  /** A change between the watermarks, against the chunk: from a transaction the chunk did not see, it wins. */
  #settle(window: Window, t: Touch): void {
    if (window.dirty || window.chunk!.snapshot.sees(t.xid)) return;
    for (const k of t.keys) {
      if (k === undefined) {
        window.dirty = true;
        return;
      }
      const row = window.keyIndex.get(k);
      if (row === undefined) continue;
      window.dropped.add(row);
      if (k === t.newKey) {
        if (t.complete) window.incomplete.delete(row);
        else window.incomplete.add(row);
      } else if (k === t.removed) window.incomplete.delete(row);
    }
  }

  /** A streamed or prepared transaction ended: committed between the watermarks and unseen by the chunk, its changes (not kept) may be newer. */
  #deferredEnd(xid: number, committed: boolean): void {
    const touched = this.#deferred.get(xid);
    this.#deferred.delete(xid);
    const window = this.#window;
    if (!committed || touched === false || window === undefined || !window.lowSeen || window.closed) return;
    // Its changes are not kept (a transaction can be any size): unseen by the chunk, any of them may be newer.
    if (window.chunk === undefined || !window.chunk.snapshot.sees(xid)) window.dirty = true;
  }

  #dirty(): void {
    const w = this.#window;
    if (w !== undefined && w.lowSeen && !w.closed) w.dirty = true;
  }

  #fail(message: string): void {
    this.#failure ??= new ReplicationError(`backfill: ${message}`, { code: "SERVER_ERROR" });
    this.#stopped = true;
    this.#window?.outcome("done");
    this.#setup.wakeUp?.();
  }

  /** The high watermark reached: the chunk's rows that no newer change touched are handed over here. */
  #close(window: Window, lsn: bigint): void {
    window.closed = true;
    this.#window = undefined;
    const state = window.state;
    const chunk = window.chunk;
    if (chunk === undefined || window.dirty) {
      window.outcome("dirty");
      return;
    }
    const rows: number[] = [];
    const lastKeys: (readonly string[] | null)[] = [];
    let lastKey = state.lastKey;
    for (let row = 0; row < chunk.keys.length; row++) {
      const key = chunk.keys[row]!;
      if (key.fresh) lastKey = key.texts;
      if (window.dropped.has(row)) {
        this.#stats.dropped++;
        if (window.incomplete.has(row)) {
          state.reread.set(keyText(key.texts), key.texts);
          this.#stats.reread++;
        }
        continue;
      }
      rows.push(row);
      lastKeys.push(lastKey);
    }
    state.lastKey = lastKey;
    state.rows += rows.length;
    this.#stats.rows += rows.length;
    const done = chunk.last && state.reread.size === 0;
    const reread = [...window.planned, ...state.reread.values()];
    let complete: BackfillComplete | undefined;
    if (done) {
      state.done = true;
      complete = {
        kind: "BackfillComplete", table: state.table.qualified, relation: this.#decoder.relations.get(state.table.relationId)!,
        rows: state.rows, chunks: state.chunks, lsn, progress: progressOf(state, lastKey, [], true),
      };
    }
    this.#delivery = { window, rows, next: 0, lsn, lastKeys, reread, complete };
    window.outcome(done ? "done" : "more");
  }
}

function progressOf(state: TableState, lastKey: readonly string[] | null, reread: readonly (readonly string[])[], done: boolean): BackfillProgress {
  return { table: state.table.qualified, lastKey, reread: reread.map((k) => [...k]), done };
}

/** Positions of the key's columns in the stream's Relation (by name), or undefined when one is missing. */
function livePositions(state: TableState, relation: Relation): number[] | undefined {
  if (state.live?.relation !== relation) {
    const names = relation.columns.map((c) => c.name);
    const positions = state.table.key.map((k) => names.indexOf(k.name));
    state.live = { relation, positions: positions.some((p) => p < 0) ? undefined : positions };
  }
  return state.live.positions;
}

/**
 * A row's key as one string of its columns' bytes (text or binary, as
 * sent: the chunk is copied in the stream's format, so equal keys are equal
 * bytes); undefined when a key column is unchanged TOAST.
 */
function keyString(tuple: Tuple, positions: readonly number[]): string | undefined {
  let out = "";
  for (const p of positions) {
    const kind = tuple.kind(p);
    if (kind === "unchanged") return undefined;
    if (kind === "null") {
      out += "n;";
      continue;
    }
    const bytes = tuple.bytes(p) as Uint8Array;
    let s = "";
    for (let i = 0; i < bytes.length; i += 4096) s += String.fromCharCode(...bytes.subarray(i, i + 4096));
    out += `${bytes.length}:${s}`;
  }
  return out;
}

/** A key's column texts from a live row: as sent in text format; in binary, from values whose JS text is a valid input of the type. */
function keyTexts(tuple: Tuple, positions: readonly number[]): string[] | undefined {
  const out: string[] = [];
  for (const p of positions) {
    const kind = tuple.kind(p);
    if (kind === "text") out.push(tuple.text(p) as string);
    else if (kind === "binary") {
      const v = tuple.value(p);
      if (typeof v !== "number" && typeof v !== "bigint" && typeof v !== "string" && typeof v !== "boolean") return undefined;
      out.push(String(v));
    } else return undefined;
  }
  return out;
}

/** The map key of a key's texts. */
function keyText(texts: readonly string[]): string {
  return JSON.stringify(texts);
}

/**
 * Checks the tables (published, with a usable key), opens the backfill's
 * connection and starts it. Refusals are INVALID_OPTION errors naming the
 * table and what to change.
 */
export async function startBackfill(setup: BackfillSetup, options: BackfillOptions): Promise<Backfill> {
  if (options === null || typeof options !== "object") throw refused("options must be an object with tables");
  if (!Array.isArray(options.tables) || options.tables.length === 0 || options.tables.some((t) => typeof t !== "string" || t.length === 0)) {
    throw refused("tables must be a non-empty list of table names");
  }
  const chunkRows = options.chunkRows;
  if (chunkRows !== undefined && (!Number.isInteger(chunkRows) || chunkRows < 1)) throw refused(`chunkRows must be a positive integer, not ${String(chunkRows)}`);
  if (!setup.options.messages) {
    throw refused("the stream was started without messages: true (the watermarks are logical decoding messages); replicate({ messages: true, ... })");
  }
  if (setup.serverVersion < 130000) throw refused("needs PostgreSQL 13 or later (pg_current_snapshot, pg_current_xact_id)");
  const limits = connectionLimits(setup.options);
  let client: Client;
  try {
    client = await connectClient(setup.connection, setup.pg, { replication: false, limits, applicationName: "pgoutput-wasm backfill" });
  } catch (e) {
    throw fromPgError(e, "backfill: could not connect", "CONNECT_FAILED", setup.connection.secrets);
  }
  try {
    await client.query(WALSENDER_OUTPUT_SETTINGS);
    const resume = new Map((options.progress ?? []).map((p) => [qualifiedName(p.table), p]));
    const states: TableState[] = [];
    for (const name of options.tables) {
      const table = await readBackfillTable(client, setup.options.publications, setup.serverVersion, name);
      const p = resume.get(table.qualified);
      const reread = new Map((p?.reread ?? []).map((k) => [keyText(k), [...k]] as const));
      states.push({ table, lastKey: p?.lastKey ?? null, reread, done: p?.done === true, rows: 0, chunks: 0, live: undefined });
    }
    const decoder = options.decoder ?? (await createDecoder({ backend: setup.decoder.backend, maxMessageSize: setup.options.maxMessageSize }));
    return new Backfill(setup, states, options, decoder, client);
  } catch (e) {
    await client.end().catch(() => {});
    throw e instanceof ReplicationError ? e : fromPgError(e, "backfill", "SERVER_ERROR", setup.connection.secrets);
  }
}
