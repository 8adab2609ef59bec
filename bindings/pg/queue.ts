/**
 * The socket bytes that arrived and were not decoded yet, kept contiguous
 * so that everything queued goes to the decoder in ONE `pushBackend` call.
 *
 * Every chunk is copied in on arrival: a chunk handed to a 'data' listener
 * may be a view of memory someone else reuses (`Buffer#slice` is a view,
 * and pg's parser reuses its buffer), and nothing this package keeps may
 * alias such memory.
 *
 * Two buffers alternate: `take()` hands out the bytes of one and starts
 * filling the other, so what the decoder was given is left untouched until
 * the following `take()` — after which the decoder has been called again and
 * no view of the previous batch is valid anyway. A backend that reads its
 * input in place therefore never sees it overwritten under a live view.
 */

const INITIAL = 1 << 16;

export class ByteQueue {
  #filling = new Uint8Array(INITIAL);
  #taken = new Uint8Array(INITIAL);
  #fill = 0;
  #highWater = 0;

  /** Bytes queued. */
  get bytes(): number {
    return this.#fill;
  }

  /** The most bytes ever queued at once. */
  get highWater(): number {
    return this.#highWater;
  }

  /** Queues a copy of `chunk`. */
  push(chunk: Uint8Array): void {
    const need = this.#fill + chunk.length;
    if (need > this.#filling.length) {
      let size = this.#filling.length * 2;
      while (size < need) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(this.#filling.subarray(0, this.#fill));
      this.#filling = grown;
    }
    this.#filling.set(chunk, this.#fill);
    this.#fill = need;
    if (need > this.#highWater) this.#highWater = need;
  }

  /** Everything queued, as one view valid until the next `take()`; the queue is empty after it. */
  take(): Uint8Array {
    const full = this.#filling;
    const out = full.subarray(0, this.#fill);
    // The other buffer is filled next; one that grew for a burst is not kept at that size forever.
    this.#filling = this.#taken.length > 4 * INITIAL && this.#fill <= INITIAL ? new Uint8Array(INITIAL) : this.#taken;
    this.#taken = full;
    this.#fill = 0;
    return out;
  }

  /** Drops everything queued. */
  clear(): void {
    this.#fill = 0;
  }
}
