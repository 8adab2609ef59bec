/**
 * Binary forms of bit/varbit, tid, pg_lsn, int2vector and oidvector, as the
 * strings (or number lists) their text forms give.
 *
 *   bit/varbit   Int32 bit count, then the bits, most significant first
 *   tid          UInt32 block, UInt16 offset
 *   pg_lsn       UInt64
 *   int2vector, oidvector   a 1-D array (array_send), lower bound 0
 */
import { int16, int32, invalid, uint16, uint32 } from "../bytes.ts";

export function binaryBit(b: Uint8Array, off: number, len: number): string {
  if (len < 4) throw invalid("bit", b, off, len);
  const bits = int32(b, off);
  if (bits < 0 || len !== 4 + ((bits + 7) >> 3)) throw invalid("bit", b, off, len);
  let s = "";
  for (let i = 0; i < bits; i++) s += (b[off + 4 + (i >> 3)]! >> (7 - (i & 7))) & 1 ? "1" : "0";
  return s;
}

export function binaryTid(b: Uint8Array, off: number, len: number): string {
  if (len !== 6) throw invalid("tid", b, off, len);
  return `(${uint32(b, off)},${uint16(b, off + 4)})`;
}

/** pg_lsn: `XXXXXXXX/XXXXXXXX`, upper-case hex halves without leading zeros. */
export function binaryPgLsn(b: Uint8Array, off: number, len: number): string {
  if (len !== 8) throw invalid("pg_lsn", b, off, len);
  return `${uint32(b, off).toString(16).toUpperCase()}/${uint32(b, off + 4).toString(16).toUpperCase()}`;
}

/** int2vector, oidvector text: numbers separated by spaces. */
export function textNumberList(b: Uint8Array, off: number, len: number): number[] {
  const out: number[] = [];
  let n = 0;
  let neg = false;
  let any = false;
  for (let p = off, end = off + len; p <= end; p++) {
    const c = p < end ? b[p]! : 0x20;
    if (c === 0x20) {
      if (any) out.push(neg ? 0 - n : n);
      n = 0;
      neg = false;
      any = false;
    } else if (c === 0x2d && !any) neg = true;
    else {
      const d = c - 48;
      if (d < 0 || d > 9) throw invalid("int2vector", b, off, len);
      n = n * 10 + d;
      any = true;
    }
  }
  return out;
}

function vector(b: Uint8Array, off: number, len: number, width: 2 | 4, typeName: string): number[] {
  if (len < 12) throw invalid(typeName, b, off, len);
  const ndim = int32(b, off);
  if (ndim === 0) return [];
  if (ndim !== 1 || len < 20) throw invalid(typeName, b, off, len);
  const n = int32(b, off + 12);
  // The declared count must be what the bytes hold (checked before allocating for it).
  if (n < 0 || n !== (len - 20) / (4 + width)) throw invalid(typeName, b, off, len, `declares ${n} elements, its ${len} bytes hold ${Math.floor((len - 20) / (4 + width))}`);
  const out = new Array<number>(n);
  let p = off + 20;
  for (let i = 0; i < n; i++) {
    if (p + 4 + width > off + len || int32(b, p) !== width) throw invalid(typeName, b, off, len);
    out[i] = width === 2 ? int16(b, p + 4) : uint32(b, p + 4);
    p += 4 + width;
  }
  return out;
}

export function binaryInt2vector(b: Uint8Array, off: number, len: number): number[] {
  return vector(b, off, len, 2, "int2vector");
}

export function binaryOidvector(b: Uint8Array, off: number, len: number): number[] {
  return vector(b, off, len, 4, "oidvector");
}
