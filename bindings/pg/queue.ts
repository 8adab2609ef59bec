/**
 * The CopyData payloads that arrived and were not decoded yet.
 *
 * `pg` hands each payload over as a Buffer that views its parser's buffer,
 * and the parser reuses that memory for later socket reads, so a payload
 * kept past its event must be copied. Copies go into large blocks (one
 * allocation per block, not per message); `drain()` hands every queued
 * payload to one function call (one `decodeCopyData`), after which the
 * blocks are reused.
 *
 * `bytes` is what the socket's backpressure watches; `highWater` is the
 * largest it ever was.
 */

const DEFAULT_BLOCK = 1 << 20;

export class CopyDataQueue {
  readonly #blockSize: number;
  /** Blocks holding the queued payloads, the last one being filled. */
  #blocks: Uint8Array[] = [];
  /** A drained block kept for reuse. */
  #spare: Uint8Array | undefined;
  #fill = 0; // bytes used in the last block
  #payloads: Uint8Array[] = [];
  #bytes = 0;
  #highWater = 0;

  constructor(blockSize = DEFAULT_BLOCK) {
    this.#blockSize = blockSize;
  }

  /** Payload bytes queued. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Payloads queued. */
  get length(): number {
    return this.#payloads.length;
  }

  /** The most payload bytes ever queued at once. */
  get highWater(): number {
    return this.#highWater;
  }

  /** Queues a copy of `payload`. */
  push(payload: Uint8Array): void {
    const n = payload.length;
    let copy: Uint8Array;
    if (n > this.#blockSize >> 2) {
      copy = payload.slice(); // a large payload gets its own allocation
    } else {
      let block = this.#blocks[this.#blocks.length - 1];
      if (block === undefined || this.#fill + n > block.length) {
        block = this.#spare ?? new Uint8Array(this.#blockSize);
        this.#spare = undefined;
        this.#blocks.push(block);
        this.#fill = 0;
      }
      block.set(payload, this.#fill);
      copy = block.subarray(this.#fill, this.#fill + n);
      this.#fill += n;
    }
    this.#payloads.push(copy);
    this.#bytes += n;
    if (this.#bytes > this.#highWater) this.#highWater = this.#bytes;
  }

  /**
   * Calls `fn` with every queued payload (valid only during the call), then
   * empties the queue, also when `fn` throws.
   */
  drain<T>(fn: (payloads: readonly Uint8Array[]) => T): T {
    const payloads = this.#payloads;
    this.#payloads = [];
    try {
      return fn(payloads);
    } finally {
      this.#bytes = 0;
      this.#spare = this.#blocks[0] ?? this.#spare;
      this.#blocks = [];
      this.#fill = 0;
    }
  }

  /** Drops everything queued. */
  clear(): void {
    this.drain(() => undefined);
  }
}
