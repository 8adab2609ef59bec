/**
 * Inputs the way `pg` hands them over: views (`Buffer#subarray`) of one
 * pooled Buffer that the next socket read overwrites. A test puts each
 * call's bytes into the pool, passes the views, and scribbles over the whole
 * pool after the call, so anything a decoder kept that still views its input
 * shows up as garbage instead of passing by luck.
 *
 * @example
 * ```ts
 * const pool = new Pool();
 * const msg = decoder.decode(pool.put(bytes));
 * const kept = msg.materialize();
 * pool.scribble();
 * expect(kept).toEqual(expected); // fails if materialize() kept a view of the input
 * ```
 */

export class Pool {
  /** One allocation, larger than Node's own pool slab, so every view shares this ArrayBuffer. */
  readonly buffer: Buffer;
  #at = 0;
  #round = 0;
  #seed = 0x2545f491;

  constructor(size = 256 << 10) {
    this.buffer = Buffer.allocUnsafe(size);
    this.scribble();
  }

  /**
   * Copies `bytes` into the pool and returns the view of them. Successive
   * puts lie next to each other (a few bytes apart, as messages in pg's
   * buffer), wrapping to the pool's start when they no longer fit.
   */
  put(bytes: Uint8Array): Buffer {
    if (bytes.length + 7 > this.buffer.length) throw new RangeError(`pool of ${this.buffer.length} bytes is too small for ${bytes.length}`);
    // An odd gap, varying, so views start at unaligned offsets too.
    let at = this.#at + 1 + (this.#round % 7);
    if (at + bytes.length > this.buffer.length) at = 1 + (this.#round % 7);
    this.buffer.set(bytes, at);
    this.#at = at + bytes.length;
    this.#round++;
    return this.buffer.subarray(at, at + bytes.length);
  }

  /** `put` for each of a list: the views of one read. */
  putAll(list: readonly Uint8Array[]): Buffer[] {
    return list.map((b) => this.put(b));
  }

  /**
   * Overwrites the whole pool, as pg's next read does; cycles through 0xff,
   * 0x00 and pseudo-random bytes so no garbage can pass for a value by
   * chance (0x00 for a zero, 0xff for a -1, ...). The next put starts over.
   */
  scribble(): void {
    const kind = this.#round++ % 3;
    if (kind === 0) this.buffer.fill(0xff);
    else if (kind === 1) this.buffer.fill(0x00);
    else {
      let s = this.#seed;
      for (let i = 0; i < this.buffer.length; i++) {
        // xorshift32: cheap, seeded, reproducible
        s ^= s << 13;
        s ^= s >>> 17;
        s ^= s << 5;
        this.buffer[i] = s & 0xff;
      }
      this.#seed = s;
    }
    this.#at = 0;
  }
}
