/**
 * One decode call's result in the wasm backend: the memory views, the tape
 * records of its messages, and the relation each change message saw. Views
 * created from it check `live()` before every read.
 */
import type { Batch } from "../decoder.ts";
import type { WalMessage } from "../walsender.ts";
import type { Relation } from "../relation.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import { kindOfTag } from "../messages.ts";
import { FLAG_BACKEND, FLAG_KEEPALIVE } from "../tape.ts";
import { PgoutputError } from "../errors.ts";
import { createView } from "./views.ts";

/** Shared by a decoder and its batches: bumped on every decode call, so older views know they are stale. */
export interface Clock {
  generation: number;
}

export class WasmBatch implements Batch<WalMessage> {
  readonly length: number;
  readonly consumed: number;
  /** Memory as bytes; tape offsets index it directly. */
  readonly u8: Uint8Array;
  readonly dv: DataView;
  /** Memory as i32 words; record positions index it directly. */
  readonly t: Int32Array;
  /** Word position of each message's record. */
  readonly records: Int32Array;
  /** Per message: its relation (changes), relations (Truncate), or the Relation it defines. */
  readonly relations: (Relation | (Relation | undefined)[] | undefined)[];
  /** The decoder's value parsers. */
  readonly values: ValueDecoder;
  readonly #clock: Clock;
  readonly #generation: number;

  constructor(
    clock: Clock, u8: Uint8Array, dv: DataView, t: Int32Array, records: Int32Array, length: number,
    relations: (Relation | (Relation | undefined)[] | undefined)[], consumed: number, values: ValueDecoder,
  ) {
    this.values = values;
    this.#clock = clock;
    this.#generation = clock.generation;
    this.u8 = u8;
    this.dv = dv;
    this.t = t;
    this.records = records;
    this.length = length;
    this.relations = relations;
    this.consumed = consumed;
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
    const head = this.t[this.records[index]!]!;
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
