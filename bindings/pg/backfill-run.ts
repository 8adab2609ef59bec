/**
 * A running backfill (`Backfill`): drives its tables' chunks one after
 * another (each read once the consumer has taken the last one's rows),
 * follows the stream's transactions to place each live change in the
 * chunk's window (backfill-window.ts), and hands the rows over as
 * `BackfillRow` and `BackfillComplete` items.
 */
import type { Client } from "pg";
import type { PgoutputDecoder } from "../decoder.ts";
import type { Insert, PgoutputMessage } from "../messages.ts";
import type { BackfillItem, BackfillProgress, BackfillRow } from "../backfill-items.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import { BACKFILL_PREFIX, emitHigh, parseWatermark, readChunk } from "./backfill-chunk.ts";
import { keyString, keyText, keyTexts } from "./backfill-keys.ts";
import type { BackfillHook, BackfillOptions, BackfillRun, BackfillSetup, BackfillStats } from "./backfill-options.ts";
import { livePositions, progressOf, type TableState } from "./backfill-state.ts";
import { Window, type Delivery, type WindowOutcome } from "./backfill-window.ts";

let runs = 0;

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
      // A block of a streamed or prepared transaction: its changes come before its commit.
      case "BeginPrepare":
      case "StreamStart":
        this.#deferredXid = msg.xid;
        if (msg.kind === "BeginPrepare" || msg.firstSegment) this.#deferred.set(msg.xid, false);
        return false;
      case "Prepare":
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

  async #chunk(state: TableState): Promise<WindowOutcome> {
    const planned = [...state.reread.values()];
    state.reread.clear();
    const window = (this.#window = new Window(++this.#seq, state, planned, this.#stats));
    const where = typeof this.#where === "string" ? this.#where : this.#where?.[state.table.qualified] ?? this.#where?.[state.table.name];
    const client = this.#client!;
    const chunk = await readChunk(client, {
      table: state.table, run: this.run, seq: window.seq, format: this.#setup.options.binary ? "binary" : "text",
      chunkRows: this.#chunkRows, where, lastKey: state.lastKey, reread: planned,
      maxTupleBytes: this.#setup.options.maxMessageSize, stopped: () => this.#stopped,
    });
    state.chunks++;
    this.#stats.chunks++;
    window.hold(chunk, this.#decoder.decodeFramed(chunk.frames));
    await emitHigh(client, this.run, window.seq);
    const outcome = await window.done;
    if (outcome === "dirty") {
      this.#stats.repeated++;
      for (const k of planned) state.reread.set(keyText(k), k);
    }
    return outcome;
  }

  #change(msg: Extract<PgoutputMessage, { kind: "Insert" | "Update" | "Delete" }>): void {
    const state = this.#current;
    if (state === undefined || msg.relationId !== state.table.relationId || msg.relation === undefined) return;
    const positions = livePositions(state, msg.relation);
    if (positions === undefined) {
      this.#window?.readAgain(); // the key's columns are not in the stream's relation (a schema change)
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
    if (window === undefined || window.state !== state || !window.open) return;
    if (this.#xid === undefined) return;
    const keys = msg.kind === "Insert" ? [newKey] : msg.kind === "Delete" ? [oldKey] : oldTuple === null ? [newKey] : [oldKey, newKey];
    if (newTuple !== undefined && newKey === undefined) keys.push(undefined);
    window.touch({ xid: this.#xid, keys, newKey, complete: !unchanged, removed: msg.kind === "Delete" ? oldKey : undefined });
  }

  /** A streamed or prepared transaction ended: committed between the watermarks and unseen by the chunk, its changes (not kept) may be newer. */
  #deferredEnd(xid: number, committed: boolean): void {
    const touched = this.#deferred.get(xid);
    this.#deferred.delete(xid);
    if (committed && touched !== false) this.#window?.deferredCommit(xid);
  }

  #fail(message: string): void {
    this.#failure ??= new ReplicationError(`backfill: ${message}`, { code: "SERVER_ERROR" });
    this.#stopped = true;
    this.#window?.outcome("done");
    this.#setup.wakeUp?.();
  }

  /** The high watermark reached: the chunk's rows that no newer change touched are handed over here. */
  #close(window: Window, lsn: bigint): void {
    this.#window = undefined;
    const delivery = window.close(lsn, this.#decoder.relations);
    if (delivery !== undefined) this.#delivery = delivery;
  }
}
