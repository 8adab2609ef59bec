/**
 * Memory the drop-in plugin owns for binary column values: each row's
 * binary values are copied once, in one piece, to the next free bytes of a
 * slab, and every value is handed out as a Buffer view of that copy. A slab
 * is only ever appended to, never rewritten, and a full one is dropped for a
 * new one (the Buffers kept by the application keep theirs alive, as Node's
 * own Buffer pool does), so a value never changes after it was handed out
 * and never aliases the decoder's input (test/aliasing.test.ts).
 *
 * One ArrayBuffer per row (or per value, as before) made allocation and GC
 * the main cost of a binary stream.
 */

/** Slab size: big enough for many rows, small enough that a kept value holds little memory alive. */
const SLAB_BYTES = 16 * 1024;

type BufferCtor = { allocUnsafeSlow(size: number): Uint8Array };
const NodeBuffer = (globalThis as { Buffer?: BufferCtor }).Buffer;

function allocate(size: number): Uint8Array {
  // A Buffer slab, so that subarray() gives Buffers (what pg-logical-replication hands out).
  return NodeBuffer === undefined ? new Uint8Array(size) : NodeBuffer.allocUnsafeSlow(size);
}

export class Slab {
  #slab: Uint8Array = allocate(SLAB_BYTES);
  #used = 0;

  /** The memory the last `copy` placed its bytes in. */
  held: Uint8Array = this.#slab;

  /**
   * Copies `bytes[start, end)` into owned memory: `held` then holds them,
   * and the offset returned is where `start` went (so byte `x` of the input
   * is at `x - start + offset`). No result object: this runs per row.
   */
  copy(bytes: Uint8Array, start: number, end: number): number {
    const n = end - start;
    if (n > SLAB_BYTES / 4) {
      // A big row gets its own memory, rather than wasting most of a slab.
      const own = allocate(n);
      own.set(bytes.subarray(start, end));
      this.held = own;
      return 0;
    }
    if (this.#used + n > SLAB_BYTES) {
      this.#slab = allocate(SLAB_BYTES);
      this.#used = 0;
    }
    const slab = this.#slab;
    const offset = this.#used;
    // Short rows byte by byte: cheaper than the subarray object set() needs.
    if (n <= 64) for (let i = 0; i < n; i++) slab[offset + i] = bytes[start + i]!;
    else slab.set(bytes.subarray(start, end), offset);
    // Keep views 8-byte aligned, as Node's pool does.
    this.#used = (offset + n + 7) & ~7;
    this.held = slab;
    return offset;
  }
}
