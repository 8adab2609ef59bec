/**
 * The baseline's copy of each call's input, as the wasm decoder copies its
 * input into linear memory: one growable buffer the decoder owns and reuses,
 * so views and values never alias the caller's bytes (which `pg` rewrites on
 * its next socket read) and go STALE_VIEW at the next call, when this buffer
 * is overwritten, instead of reading whatever the caller wrote since.
 * One memcpy per call.
 */

/** Above this, a buffer four times larger than the call needs is given back (as the wasm decoder shrinks its memory). */
const SHRINK_ABOVE = 64 << 20;
const INITIAL = 64 << 10;

export class InputBuffer {
  #buf = new Uint8Array(0);

  /**
   * Room for `n` bytes; returns the buffer to write them to at [0, n).
   * Its old contents are dropped (the previous call's views are stale by now).
   */
  reserve(n: number): Uint8Array {
    const size = this.#buf.length;
    if (n > size) this.#buf = new Uint8Array(Math.max(n, 2 * size, INITIAL));
    else if (size > SHRINK_ABOVE && n < size >> 2) this.#buf = new Uint8Array(Math.max(n, INITIAL));
    return this.#buf;
  }

  /** A copy of `bytes` at [0, bytes.length) of the buffer. */
  copy(bytes: Uint8Array): Uint8Array {
    const buf = this.reserve(bytes.length);
    buf.set(bytes);
    return buf;
  }

  /** The `list` one after the other; returns the buffer and each one's start in it (in `starts`, reused). */
  copyAll(list: readonly Uint8Array[], count: number, starts: number[]): Uint8Array {
    let total = 0;
    for (let i = 0; i < count; i++) total += list[i]!.length;
    const buf = this.reserve(total);
    starts.length = count;
    let at = 0;
    for (let i = 0; i < count; i++) {
      const m = list[i]!;
      buf.set(m, at);
      starts[i] = at;
      at += m.length;
    }
    return buf;
  }
}
