/**
 * How much of a framed input (decodeFramed, push, pushBackend) a decoder
 * needs to copy. Both backends refuse a frame by its header alone (a declared
 * length above the limit, or a backend length below 4), so nothing after
 * that header can matter: copying it into wasm memory or the baseline's
 * input buffer would only cost memory (a 200 MiB chunk whose first frame is
 * refused must not grow memory by 200 MiB). The headers are walked only for
 * inputs larger than `WALK_ABOVE`, so a normal 64 KB socket chunk pays nothing. (The walk
 * costs ~4 ns a frame, ~10% of the kernel's time on frames of ~130 bytes.)
 */

/** Inputs up to this size are copied whole: at most this much is copied past a refused frame. */
export const WALK_ABOVE = 1 << 20;

/**
 * The input is `head` followed by `tail` (for push: the unfinished frame
 * kept from the previous push, whose header may itself be split between the
 * two, then the new chunk). Returns how many of its bytes to copy: up to the
 * end of the header of the first frame the kernel refuses, else all of them.
 * `header` is 4 (`[uint32 length][body]`) or 5 (backend: `[type][Int32
 * length counting itself][body]`); `limit` is the largest body the kernel
 * takes (its check, in kernel/decode.ts `decode`, restated here).
 */
export function framedCopyLength(head: Uint8Array, tail: Uint8Array, header: 4 | 5, limit: number): number {
  const h = head.length;
  const total = h + tail.length;
  const byte = (p: number): number => (p < h ? head[p]! : tail[p - h]!);
  let p = 0;
  // Frames whose header starts in `head`: the pending frame's (its header may straddle into `tail`).
  while (p < h) {
    if (total - p < header) return total;
    const q = header === 5 ? p + 1 : p;
    // Unsigned, as the kernel reads it (`>>> 0`); no int32 wrap for lengths of 2 GiB or more.
    const declared = ((byte(q) << 24) | (byte(q + 1) << 16) | (byte(q + 2) << 8) | byte(q + 3)) >>> 0;
    let body = declared;
    if (header === 5) {
      // Int32 counting itself: below 4 (as a signed number) is INVALID_LENGTH in the kernel.
      if ((declared | 0) < 4) return p + header;
      body = declared - 4;
    }
    if (body > limit) return p + header;
    p += header + body;
  }
  // The hot loop, over headers wholly in `tail`: direct reads, one loop per framing.
  const n = tail.length;
  const dv = new DataView(tail.buffer, tail.byteOffset, n);
  let t = p - h;
  if (header === 4) {
    while (n - t >= 4) {
      const body = dv.getUint32(t);
      if (body > limit) return h + t + 4;
      t += 4 + body;
    }
  } else {
    while (n - t >= 5) {
      const declared = dv.getInt32(t + 1); // signed: a length of 2^31 or more is below 4 too
      if (declared < 4 || declared - 4 > limit) return h + t + 5;
      t += 1 + declared;
    }
  }
  return total;
}
