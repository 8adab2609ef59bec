/**
 * bytea in PostgreSQL's hex output (`\x0aff…`) straight from its bytes, as
 * pg-types' postgres-bytea gives it: `Buffer.from(hex, "hex")`, a new Buffer
 * from Node's pool (`Buffer.allocUnsafe` is that allocation), every byte
 * written. Without the hex prefix, with odd length or a non-hex digit (where
 * Node's decoder stops early) it returns `NOT_FAST` and postgres-bytea runs.
 */
import { NOT_FAST } from "./fast-parsers.ts";

type BufferCtor = { allocUnsafe(size: number): Uint8Array };
const NodeBuffer = (globalThis as { Buffer?: BufferCtor }).Buffer;

/** A hex digit's value, -1 for any other byte. */
const HEX = new Int8Array(256).fill(-1);
for (let c = 0; c < 10; c++) HEX[0x30 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX[0x41 + c] = 10 + c;
  HEX[0x61 + c] = 10 + c;
}

export function fastBytea(u8: Uint8Array, off: number, len: number): unknown {
  if (NodeBuffer === undefined || len < 2 || (len & 1) !== 0 || u8[off] !== 0x5c || u8[off + 1] !== 0x78) return NOT_FAST;
  const n = (len - 2) >> 1;
  const out = NodeBuffer.allocUnsafe(n);
  for (let i = 0, p = off + 2; i < n; i++, p += 2) {
    const hi = HEX[u8[p]!]!;
    const lo = HEX[u8[p + 1]!]!;
    if ((hi | lo) < 0) return NOT_FAST;
    out[i] = (hi << 4) | lo;
  }
  return out;
}
