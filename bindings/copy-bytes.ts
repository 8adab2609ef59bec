/**
 * The one way this package copies bytes out: a real copy whatever the
 * input's class. Node's `Buffer#slice` returns a view, not a copy (unlike
 * `Uint8Array#slice`), inputs are often Buffers, and `pg` reuses its parser
 * buffer for later socket reads; so a `.slice(` on bytes would keep a window
 * onto memory the caller rewrites. test/no-buffer-slice.test.ts holds every
 * library file to this helper.
 */

/** A copy of `bytes[start, end)` as a plain `Uint8Array` (never a Buffer, never a view). */
export function copyBytes(bytes: Uint8Array, start = 0, end = bytes.length): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(end - start);
  out.set(bytes.subarray(start, end));
  return out;
}

/** `parts` one after another in one new `Uint8Array`; `total` when the caller already knows the sum of their lengths. */
export function concatBytes(parts: readonly Uint8Array[], total = parts.reduce((n, p) => n + p.length, 0)): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
