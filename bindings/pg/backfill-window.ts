/**
 * A backfill chunk between its watermarks, merged with the stream's
 * changes of that window: which of the chunk's rows are handed over at the
 * high watermark.
 *
 * DBLog's rule, made exact with the chunk's snapshot: a live change
 * between the watermarks from a transaction the chunk's snapshot does not
 * see is newer than the chunk's row, so that row is dropped (the live
 * change wins); a change the snapshot sees is already in the row, which is
 * kept. Every transaction before the low watermark is visible to the chunk
 * (backfill-chunk.ts), and every one the chunk sees is before the high
 * watermark, so a row handed over is the row as it is at that point of the
 * stream: never older than a change before it.
 *
 * A dropped row whose newer change is an Update with unchanged TOASTed
 * columns is read again (the table's `reread` keys); a change whose place
 * cannot be settled makes the whole chunk be read again ("dirty").
 */
import type { Batch } from "../decoder.ts";
import type { Insert } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { BackfillComplete } from "../backfill-items.ts";
import type { ChunkRead } from "./backfill-chunk.ts";
import { keyString, keyText } from "./backfill-keys.ts";
import type { BackfillStats } from "./backfill-options.ts";
import { progressOf, type TableState } from "./backfill-state.ts";

/** A change's keys as the window holds them until the chunk is read. */
export interface Touch {
  xid: number;
  /** Key strings (keyString) the change touches; undefined: not known (a key column sent as unchanged TOAST). */
  keys: (string | undefined)[];
  /** The new row's key, when the change leaves it with every column (an Insert, an Update without unchanged TOAST), or not. */
  newKey: string | undefined;
  complete: boolean;
  /** A Delete: its old key. */
  removed: string | undefined;
}

/** How a chunk ended: read again whole, handed over with more to read, or the table's last. */
export type WindowOutcome = "dirty" | "more" | "done";

/** A chunk's rows being handed over. */
export interface Delivery {
  window: Window;
  rows: number[];
  next: number;
  lsn: bigint;
  /** Each row's lastKey (the last key read after the previous bound, up to it). */
  lastKeys: (readonly string[] | null)[];
  reread: readonly (readonly string[])[];
  complete: BackfillComplete | undefined;
}

/** More changes than this in one window before the chunk is read make it be read again (memory stays bounded). */
const MAX_PENDING_TOUCHES = 65_536;

/** A chunk between its watermarks. */
export class Window {
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
  outcome!: (o: WindowOutcome) => void;
  readonly done = new Promise<WindowOutcome>((resolve) => (this.outcome = resolve));

  constructor(readonly seq: number, readonly state: TableState, readonly planned: readonly (readonly string[])[], readonly stats: BackfillStats) {}

  /** Between its watermarks: a change now may be newer than the chunk's rows. */
  get open(): boolean {
    return this.lowSeen && !this.closed;
  }

  /** The chunk is read: its rows (decoded in `batch`) indexed by key; the window's changes so far settled against it. */
  hold(chunk: ChunkRead, batch: Batch): void {
    this.chunk = chunk;
    this.batch = batch;
    const positions = this.state.table.key.map((k) => k.position);
    for (let i = 0; i < batch.length; i++) {
      if (batch.kind(i) !== "Insert") continue;
      const row = this.rowIndex.length;
      this.rowIndex.push(i);
      const key = keyString((batch.get(i) as Insert).newTuple, positions);
      if (key !== undefined) this.keyIndex.set(key, row);
    }
    if (this.rowIndex.length !== chunk.keys.length) throw new Error(`backfill chunk of ${this.state.table.qualified}: ${this.rowIndex.length} rows decoded for ${chunk.keys.length} keys`);
    for (const t of this.pending) this.#settle(t);
    this.pending = [];
  }

  /** A change of the table between the watermarks: settled now if the chunk is held, else kept until it is. */
  touch(t: Touch): void {
    if (this.chunk !== undefined) this.#settle(t);
    else if (this.pending.length < MAX_PENDING_TOUCHES) this.pending.push(t);
    else {
      this.dirty = true;
      this.pending = [];
    }
  }

  /** A streamed or prepared transaction that touched the table (or may have) committed. */
  deferredCommit(xid: number): void {
    if (!this.open) return;
    // Its changes are not kept (a transaction can be any size): unseen by the chunk, any of them may be newer.
    if (this.chunk === undefined || !this.chunk.snapshot.sees(xid)) this.dirty = true;
  }

  /** A change whose place cannot be settled came between the watermarks: the chunk is read again, whole. */
  readAgain(): void {
    if (this.open) this.dirty = true;
  }

  /** A change between the watermarks, against the chunk: from a transaction the chunk did not see, it wins. */
  #settle(t: Touch): void {
    if (this.dirty || this.chunk!.snapshot.sees(t.xid)) return;
    for (const k of t.keys) {
      if (k === undefined) {
        this.dirty = true;
        return;
      }
      const row = this.keyIndex.get(k);
      if (row === undefined) continue;
      this.dropped.add(row);
      if (k === t.newKey) {
        if (t.complete) this.incomplete.delete(row);
        else this.incomplete.add(row);
      } else if (k === t.removed) this.incomplete.delete(row);
    }
  }

  /**
   * The high watermark reached (at `lsn`): the chunk's rows that no newer
   * change touched, to hand over here; undefined when the chunk is read
   * again. `relations`: the decoder's, for the table's BackfillComplete.
   */
  close(lsn: bigint, relations: ReadonlyMap<number, Relation>): Delivery | undefined {
    this.closed = true;
    const state = this.state;
    const chunk = this.chunk;
    if (chunk === undefined || this.dirty) {
      this.outcome("dirty");
      return undefined;
    }
    const rows: number[] = [];
    const lastKeys: (readonly string[] | null)[] = [];
    let lastKey = state.lastKey;
    for (let row = 0; row < chunk.keys.length; row++) {
      const key = chunk.keys[row]!;
      if (key.fresh) lastKey = key.texts;
      if (this.dropped.has(row)) {
        this.stats.dropped++;
        if (this.incomplete.has(row)) {
          state.reread.set(keyText(key.texts), key.texts);
          this.stats.reread++;
        }
        continue;
      }
      rows.push(row);
      lastKeys.push(lastKey);
    }
    state.lastKey = lastKey;
    state.rows += rows.length;
    this.stats.rows += rows.length;
    const done = chunk.last && state.reread.size === 0;
    const reread = [...this.planned, ...state.reread.values()];
    let complete: BackfillComplete | undefined;
    if (done) {
      state.done = true;
      complete = {
        kind: "BackfillComplete", table: state.table.qualified, relation: relations.get(state.table.relationId)!,
        rows: state.rows, chunks: state.chunks, lsn, progress: progressOf(state, lastKey, [], true),
      };
    }
    this.outcome(done ? "done" : "more");
    return { window: this, rows, next: 0, lsn, lastKeys, reread, complete };
  }
}
