/**
 * One decode call's result (both backends): the kernel memory views, the tape
 * records of its messages, and the relation each change message saw. Views
 * created from it check `live()` before every read.
 */
import type { Batch } from "../decoder.ts";
import type { WalMessage } from "../walsender.ts";
import type { Relation } from "../relation.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import { kindOfTag } from "../messages.ts";
import { FLAG_BACKEND, FLAG_KEEPALIVE, H_SIZE } from "../tape.ts";
import { PgoutputError } from "../errors.ts";
import { createView } from "./views.ts";
import type { BatchMemory } from "./batch-memory.ts";
import type { RegionHost } from "../kernel/memory-layout.ts";

/** Up to how many records recordAt() walks to a message rather than index the whole batch (once, then every access is one read). */
const WALK_MAX = 1024;

/** Shared by a decoder and its batches: bumped on every decode call, so older views know they are stale. */
export interface Clock {
  generation: number;
}

/** A Relation message of a batch: at which message, what it defined, and what the cache held before. */
export interface RelationDefinition {
  index: number;
  relation: Relation;
  previous: Relation | undefined;
}

export class TapeBatch implements Batch<WalMessage>, BatchMemory {
  readonly length: number;
  readonly consumed: number;
  /** Memory as bytes; tape offsets index it directly. */
  readonly u8: Uint8Array;
  readonly dv: DataView;
  /** Memory as i32 words; record positions index it directly. */
  readonly t: Int32Array;
  /** Word position of message 0's record. */
  readonly #first: number;
  /** The message recordAt() answered last, and its record: the next one's follows from its size word. */
  #at = 0;
  #word: number;
  /** Where recordAt() was before its last jump: a reader that scanned ahead and comes back (the pipeline's run, then its lines) walks on from there. */
  #backAt = 0;
  #backWord: number;
  /** Every message's record, built on the first access that no cursor reaches by a short walk. */
  #index: Int32Array | undefined;
  /** The decoder's relation cache (as it is at the end of the batch). */
  readonly #cache: ReadonlyMap<number, Relation>;
  /** The batch's Relation messages, in order. */
  readonly #definitions: readonly RelationDefinition[];
  /** The decoder's value parsers. */
  readonly values: ValueDecoder;
  readonly #clock: Clock;
  readonly #generation: number;

  constructor(
    clock: Clock, u8: Uint8Array, dv: DataView, t: Int32Array, first: number, length: number,
    consumed: number, values: ValueDecoder, cache: ReadonlyMap<number, Relation>, definitions: readonly RelationDefinition[],
    /** Where a reader asks the decoder for a region of its memory (the JSON Lines writer's JSON area, kernel/json-area.ts). */
    readonly host?: RegionHost,
  ) {
    this.values = values;
    this.#cache = cache;
    this.#definitions = definitions;
    this.#clock = clock;
    this.#generation = clock.generation;
    this.u8 = u8;
    this.dv = dv;
    this.t = t;
    this.#first = first;
    this.#word = first;
    this.#backWord = first;
    this.length = length;
    this.consumed = consumed;
  }

  /**
   * The relation `oid` as message `index` saw it: defined by the last
   * Relation message before it in this batch, else as the cache held it
   * before the batch (the cache's current entry unless a later Relation
   * message of this batch replaced it).
   */
  relationOf(index: number, oid: number): Relation | undefined {
    const defs = this.#definitions;
    if (defs.length === 0) return this.#cache.get(oid);
    let seen: Relation | undefined;
    for (const d of defs) {
      if (d.relation.relationId !== oid) continue;
      if (d.index < index) seen = d.relation;
      else return seen ?? d.previous;
    }
    return seen ?? this.#cache.get(oid);
  }

  /**
   * Word position of message `index`'s record (0 <= index < length). In
   * order, each follows from the last, and a jump ahead (of either the last
   * answer or where it was before its last jump) is walked, record by
   * record, up to WALK_MAX: a batch read front to back, by one reader or by
   * two taking turns (as nearly all are), builds no index.
   */
  recordAt(index: number): number {
    const at = this.#at;
    if (index === at) return this.#word;
    if (index === at + 1) {
      this.#at = index;
      return (this.#word += this.t[this.#word + H_SIZE]!);
    }
    if (this.#index === undefined) {
      const back = index < at;
      let i = back ? this.#backAt : at;
      if (index >= i && index - i <= WALK_MAX) {
        const t = this.t;
        let w = back ? this.#backWord : this.#word;
        for (; i < index; i++) w += t[w + H_SIZE]!;
        this.#backAt = at;
        this.#backWord = this.#word;
        this.#at = index;
        return (this.#word = w);
      }
    }
    const records = (this.#index ??= this.#records());
    this.#at = index;
    return (this.#word = records[index]!);
  }

  #records(): Int32Array {
    const t = this.t;
    const records = new Int32Array(this.length);
    for (let i = 0, w = this.#first; i < records.length; i++, w += t[w + H_SIZE]!) records[i] = w;
    return records;
  }

  /** The relation the Relation message at `index` defined. */
  definedAt(index: number): Relation {
    return this.#definitions.find((d) => d.index === index)!.relation;
  }

  /** Throws STALE_VIEW once the decoder has moved on. */
  live(): void {
    if (this.#generation !== this.#clock.generation) {
      throw new PgoutputError("message view used after its decoder decoded new input; materialize() what must outlive a batch", {
        code: "STALE_VIEW",
      });
    }
  }

  get(index: number): WalMessage {
    this.live();
    if (!(index >= 0 && index < this.length)) throw new RangeError(`message index ${index} out of range 0..${this.length - 1}`);
    return createView(this, index);
  }

  kind(index: number): WalMessage["kind"] {
    this.live();
    if (!(index >= 0 && index < this.length)) throw new RangeError(`message index ${index} out of range 0..${this.length - 1}`);
    const head = this.t[this.recordAt(index)]!;
    if (head & (FLAG_KEEPALIVE << 8)) return "PrimaryKeepalive";
    if (head & (FLAG_BACKEND << 8)) return "BackendMessage";
    return kindOfTag(head & 0xff)!;
  }

  materialize(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = new Array(this.length);
    for (let i = 0; i < this.length; i++) out[i] = this.get(i).materialize();
    return out;
  }

  *[Symbol.iterator](): Iterator<WalMessage> {
    for (let i = 0; i < this.length; i++) yield this.get(i);
  }
}
