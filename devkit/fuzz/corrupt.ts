/**
 * One corruption of a message's bytes, for the differential suites: bit
 * flips, truncation, garbage appended or written over, a forged 32-bit
 * length or count, or another tag. Each suite weighs them its own way and
 * says where a tag byte is (a walsender payload has two).
 */
import type { Random } from "./random.ts";

export interface Corruption {
  /** Cumulative odds of: bit flips, truncation, appended garbage, garbage written over, a forged u32; the rest is a tag. */
  readonly odds: readonly [number, number, number, number, number];
  /** The u32 values forged (a random one is added). */
  readonly forged: readonly number[];
  /** What a tag byte becomes. */
  readonly tags: string;
  /** Where the tag byte to change is. */
  tagAt?(r: Random, b: Uint8Array): number;
}

/** Corrupts a copy of `bytes`; returns it and a description for failure messages. */
export function corrupt(r: Random, bytes: Uint8Array, c: Corruption): { bytes: Uint8Array; how: string } {
  const roll = r.float();
  const b = bytes.slice();
  if (b.length === 0) return { bytes: r.bytes(r.int(1, 8)), how: "garbage" };
  const [flip, cut, append, over, forge] = c.odds;
  if (roll < flip) {
    const flips: number[] = [];
    for (let i = r.int(1, 3); i > 0; i--) {
      const bit = r.int(0, b.length * 8 - 1);
      b[bit >> 3]! ^= 1 << (bit & 7);
      flips.push(bit);
    }
    return { bytes: b, how: `bit flips ${flips.join(",")}` };
  }
  if (roll < cut) {
    const n = r.int(0, b.length - 1);
    return { bytes: b.slice(0, n), how: `truncated to ${n}` };
  }
  if (roll < append) {
    const extra = r.bytes(r.int(1, 20));
    const out = new Uint8Array(b.length + extra.length);
    out.set(b);
    out.set(extra, b.length);
    return { bytes: out, how: `${extra.length} garbage bytes appended` };
  }
  if (roll < over) {
    const at = r.int(0, b.length - 1);
    const n = Math.min(b.length - at, r.int(1, 8));
    b.set(r.bytes(n), at);
    return { bytes: b, how: `${n} garbage bytes at ${at}` };
  }
  if (roll < forge && b.length >= 4) {
    const at = r.int(0, b.length - 4);
    const v = r.pick([...c.forged, r.u32()]);
    new DataView(b.buffer).setUint32(at, v);
    return { bytes: b, how: `u32 0x${v.toString(16)} at ${at}` };
  }
  const at = c.tagAt?.(r, b) ?? 0;
  b[at] = c.tags.charCodeAt(r.int(0, c.tags.length - 1));
  return { bytes: b, how: `byte ${at} set to ${String.fromCharCode(b[at]!)}` };
}
