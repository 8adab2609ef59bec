/**
 * Socket reads that land in a tape decoder's memory, decoded where they
 * landed: the stream's one copy from socket to kernel (pg/in-place-reads.ts
 * points the socket's reads here). `pushBackend` copies each chunk in; this
 * area instead hands out the memory after the last byte received as the
 * buffer of the next read.
 *
 * The undecoded bytes are [from, end) of the decoder's input region: the
 * unfinished frame the last decode left, then what landed since. A decode
 * walks them in place, so its batch's views read the input region until the
 * next decode; reads meanwhile land after `end` and never touch them.
 *
 * Only a decode moves anything (the last batch is stale then): the input
 * region grows, so that the frame at `from` fits and room stays for the
 * following ones, and when the room left after `end` runs low the undecoded
 * bytes move to the region's start (at most one batch's bytes, once per
 * several batches: the one copy left). The region never shrinks in the same
 * memory, so a read handed out before a move still lands inside it, after
 * what the live batch reads (`landed()` then moves those bytes to `end`).
 * When the memory itself changes (grown, or a fresh instance), the socket
 * must be given a new buffer before it reads again (`buffer`).
 */
import type { Batch } from "../decoder.ts";
import type { WalMessage } from "../walsender.ts";
import { XLOGDATA_HEADER } from "../tape.ts";
import type { DecoderInternals } from "./decoder-internals.ts";

/** Reads are not offered less room than this: below it the area is full until the next decode (reads land elsewhere meanwhile). */
export const MIN_READ = 16 << 10;
/**
 * The most one read is offered: a reader checks its backpressure after each
 * read, so a read may pass its mark by this much (a loopback socket can
 * hold several MB).
 */
export const MAX_READ = 256 << 10;
/** The input region's least capacity while receiving. */
const MIN_CAPACITY = 1 << 20;

export class ReceiveArea {
  readonly #d: DecoderInternals;
  /** Undecoded bytes are [from, end) of memory. */
  #from: number;
  #end: number;
  /** Bytes landed since the last decode. */
  #fresh = 0;

  constructor(decoder: DecoderInternals) {
    this.#d = decoder;
    this.#from = this.#end = decoder.memory.input;
  }

  /** Bytes landed since the last decode. */
  get fresh(): number {
    return this.#fresh;
  }

  /** The memory the area is in: a socket buffer taken from an older one must be replaced. */
  get buffer(): ArrayBufferLike {
    return this.#d.memory.buffer!;
  }

  /** Room for reads after the last byte landed. */
  get room(): number {
    const m = this.#d.memory;
    return m.input + m.inputCapacity - this.#end;
  }

  /** Too little room to offer a read: reads wait for the next decode. */
  get full(): boolean {
    return this.room < MIN_READ;
  }

  /**
   * Where the next read should land: the memory after the last byte landed
   * (check `full` first), at most MAX_READ of it.
   */
  offer(): Uint8Array {
    const m = this.#d.memory;
    return m.u8.subarray(this.#end, Math.min(m.input + m.inputCapacity, this.#end + MAX_READ));
  }

  /**
   * `n` bytes were read into `view`: an `offer()` (then nothing is copied),
   * or any other buffer, whose bytes are copied to the end. Returns them, as
   * a view of memory valid until the next decode.
   */
  landed(view: Uint8Array, n: number): Uint8Array {
    const m = this.#d.memory;
    const at = this.#end;
    if (view.buffer !== m.buffer || view.byteOffset !== at) {
      // A detached view (memory changed without the socket being given a new buffer) would lose the bytes.
      if (view.length < n || n > this.room) {
        throw new Error(`${n} bytes were read where the decoder cannot take them (was the stream's decoder used for another call?)`);
      }
      m.u8.set(view.subarray(0, n), at);
    }
    this.#end = at + n;
    this.#fresh += n;
    return m.u8.subarray(at, at + n);
  }

  /**
   * Decodes every whole frame of the undecoded bytes in place, followed by
   * `after` (bytes read elsewhere while the area was full; copied in), and
   * the views of the last batch go stale; the unfinished frame stays for
   * the next decode. Throws the decoder's error for a bad frame, after which the
   * area is empty (nothing after it can be framed).
   */
  decode(after?: Uint8Array): Batch<WalMessage> {
    const d = this.#d;
    const m = d.memory;
    // `kept` bytes in memory, then `after`.
    const kept = this.#end - this.#from;
    const length = kept + (after?.length ?? 0);
    let from = d.begin(this.#from, kept);
    const need = Math.max(length, this.#frameAt(from, kept, after));
    const want = Math.max(MIN_CAPACITY, 3 * need + 4 * MIN_READ);
    if (m.inputCapacity < want) m.reserve(want, 0);
    const end = m.input + m.inputCapacity;
    if (from !== m.input && (from + need + MIN_READ > end || end - (from + length) < m.inputCapacity / 4)) {
      m.u8.copyWithin(m.input, from, from + kept);
      from = m.input;
    }
    if (after !== undefined) m.u8.set(after, from + kept);
    this.#from = from;
    this.#end = from + length;
    this.#fresh = 0;
    try {
      const batch = d.decodeBackend(from, length);
      this.#from = from + batch.consumed;
      return batch;
    } catch (e) {
      this.reset();
      throw e;
    }
  }

  /** Drops everything received (a reconnect, or a bad frame). */
  reset(): void {
    this.#from = this.#end = this.#d.memory.input;
    this.#fresh = 0;
  }

  /**
   * The whole size of the frame that starts the undecoded bytes (`kept` of
   * them at `at` of memory, then `after`) when its header is there and the
   * decoder would take it (a frame it refuses by its header must not grow
   * memory); else 0.
   */
  #frameAt(at: number, kept: number, after: Uint8Array | undefined): number {
    if (kept + (after?.length ?? 0) < 5) return 0;
    const u8 = this.#d.memory.u8;
    const byte = (i: number): number => (i < kept ? u8[at + i]! : after![i - kept]!);
    const declared = (byte(1) << 24) | (byte(2) << 16) | (byte(3) << 8) | byte(4);
    return declared >= 4 && declared - 4 <= this.#d.maxMessageSize + 1 + XLOGDATA_HEADER ? 1 + declared : 0;
  }
}
