/**
 * Byte copies that are real copies whatever the input's class: Node's
 * `Buffer#slice` returns a view, not a copy, and inputs are often Buffers.
 * The result is a plain `Uint8Array`.
 */

/** A copy of `bytes[start, end)`. */
export function copyBytes(bytes: Uint8Array, start: number, end: number): Uint8Array {
  const out = new Uint8Array(end - start);
  out.set(bytes.subarray(start, end));
  return out;
}

