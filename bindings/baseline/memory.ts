/**
 * The TS kernel's linear memory: an ArrayBuffer of 64 KiB pages that
 * `grow` replaces with a larger copy, as `WebAssembly.Memory.grow` does (the
 * old buffer is dropped, so a caller re-acquires its typed arrays by
 * comparing `buffer` identity, exactly as with wasm). Kept apart from the
 * kernel so the decoder treats both kernels' memories alike.
 */
import type { KernelMemory } from "../kernel/exports.ts";

export const PAGE = 65536;
/** What wasm32 memory can hold; the decoder never asks beyond ADDRESSABLE (2 GiB) anyway. */
const MAX_PAGES = 65536;

export class LinearMemory implements KernelMemory {
  #buffer: ArrayBuffer;

  constructor(initialPages: number) {
    this.#buffer = new ArrayBuffer(initialPages * PAGE);
  }

  get buffer(): ArrayBuffer {
    return this.#buffer;
  }

  /** Adds `delta` pages, keeping the contents; returns the previous size in pages. Throws RangeError like wasm when it cannot. */
  grow(delta: number): number {
    const before = this.#buffer.byteLength / PAGE;
    if (!(delta >= 0) || before + delta > MAX_PAGES) throw new RangeError("LinearMemory.grow(): maximum size exceeded");
    if (delta === 0) return before;
    const next = new ArrayBuffer((before + delta) * PAGE);
    new Uint8Array(next).set(new Uint8Array(this.#buffer));
    this.#buffer = next;
    return before;
  }
}
