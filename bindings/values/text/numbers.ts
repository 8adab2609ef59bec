/**
 * Text forms of bool, the integer types, floats, numeric and money, read
 * straight from the bytes where no string is needed.
 */
import { ascii, invalid, invalidText } from "../bytes.ts";

/** bool: `t` or `f`. */
export function textBool(b: Uint8Array, off: number, len: number): boolean {
  const c = b[off];
  if (len === 1) {
    if (c === 0x74) return true;
    if (c === 0x66) return false;
  }
  throw invalid("bool", b, off, len);
}

/**
 * A decimal integer of at most 15 digits (|v| < 10^15 < 2^53), optional `-`:
 * int2, int4, and the short int8 case. `typeName` only names errors.
 */
function smallInt(b: Uint8Array, off: number, len: number, typeName: string): number {
  let p = off;
  const end = off + len;
  const neg = b[p] === 0x2d;
  if (neg) p++;
  if (p === end || end - p > 15) throw invalid(typeName, b, off, len);
  let n = 0;
  for (; p < end; p++) {
    const d = b[p]! - 48;
    if (d < 0 || d > 9) throw invalid(typeName, b, off, len);
    n = n * 10 + d;
  }
  return neg ? 0 - n : n;
}

/** int2, int4: `-123`. */
export function textInt(b: Uint8Array, off: number, len: number): number {
  return smallInt(b, off, len, "integer");
}

/** oid, xid, cid, regproc-like unsigned 32-bit numbers. */
export function textUint32(b: Uint8Array, off: number, len: number): number {
  return smallInt(b, off, len, "unsigned integer");
}

/** int8 as a bigint. */
export function textInt8(b: Uint8Array, off: number, len: number): bigint {
  const neg = b[off] === 0x2d;
  const digits = neg ? len - 1 : len;
  if (digits <= 15) return BigInt(smallInt(b, off, len, "int8"));
  if (digits > 19) return bigDecimal(b, off, len, "int8");
  // 16-19 digits: the leading ones and the last 15 as two exact numbers.
  const split = off + len - 15;
  const hi = smallInt(b, neg ? off + 1 : off, neg ? split - off - 1 : split - off, "int8");
  const lo = smallInt(b, split, 15, "int8");
  const v = BigInt(hi) * 1_000_000_000_000_000n + BigInt(lo);
  return neg ? -v : v;
}

/** xid8: unsigned 64-bit decimal as a bigint. */
export function textUint64(b: Uint8Array, off: number, len: number): bigint {
  if (len <= 15) return BigInt(smallInt(b, off, len, "xid8"));
  return bigDecimal(b, off, len, "xid8");
}

function bigDecimal(b: Uint8Array, off: number, len: number, typeName: string): bigint {
  const end = off + len;
  for (let p = b[off] === 0x2d ? off + 1 : off; p < end; p++) {
    const d = b[p]! - 48;
    if (d < 0 || d > 9) throw invalid(typeName, b, off, len);
  }
  return BigInt(ascii(b, off, len));
}

/** int8 as a number; throws when it is not exactly representable. */
export function textInt8Number(b: Uint8Array, off: number, len: number): number {
  const digits = b[off] === 0x2d ? len - 1 : len;
  if (digits <= 15) return smallInt(b, off, len, "int8");
  return int8ToNumber(bigDecimal(b, off, len, "int8"));
}

/** int8 as its decimal text. */
export function textInt8String(b: Uint8Array, off: number, len: number): string {
  if (len === 0) throw invalid("int8", b, off, len);
  return ascii(b, off, len);
}

export function int8ToNumber(v: bigint): number {
  if (v > 9007199254740991n || v < -9007199254740991n) {
    throw invalidText("int8", String(v), 'beyond ±(2^53−1), no JS number holds it exactly (option int8: "bigint" does)');
  }
  return Number(v);
}

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];

/** float8: `1.5`, `-1e+300`, `NaN`, `Infinity`, `-Infinity`. */
export function textFloat8(b: Uint8Array, off: number, len: number): number {
  if (len === 0) throw invalid("float8", b, off, len);
  // Fast path, `[-]digits[.digits]` whose digits as an integer are below
  // 2^53 (all 15-digit ones, most 16-digit ones): the integer and 10^k are
  // exact doubles, so one division rounds correctly (Clinger). Rounding is
  // monotone, so a computed n below 2^53 was exact at every step.
  const end = off + len;
  let p = off;
  const neg = b[p] === 0x2d;
  if (neg) p++;
  let n = 0;
  let scale = -1;
  for (; p < end; p++) {
    const c = b[p]!;
    const d = c - 48;
    if (d >= 0 && d <= 9) {
      n = n * 10 + d;
      if (scale >= 0) scale++;
    } else if (c === 0x2e && scale < 0) scale = 0;
    else break;
  }
  if (p === end && scale !== 0 && p > off + (neg ? 1 : 0)) {
    if (n < 9007199254740992 && scale <= 22) {
      const v = scale > 0 ? n / POW10[scale]! : n;
      return neg ? -v : v;
    }
    // Still `[-]digits[.digits]` (checked above), the form float8out prints
    // for 16-17 significant digits beyond 2^53: parseFloat reads it exactly as Number
    // would (same correctly rounded conversion), at about half the cost.
    return parseFloat(ascii(b, off, len));
  }
  const x = Number(ascii(b, off, len));
  if (x !== x && !(len === 3 && b[off] === 0x4e)) throw invalid("float8", b, off, len);
  return x;
}

/**
 * float4: the float32 the text denotes. PostgreSQL prints the shortest
 * decimal that reads back as the same float32, so `Math.fround` of it is
 * exactly the value binary mode sends.
 */
export function textFloat4(b: Uint8Array, off: number, len: number): number {
  return Math.fround(textFloat8(b, off, len));
}

/** numeric: the text as sent (exact; `NaN`, `Infinity`, `-Infinity`). */
export function textNumeric(b: Uint8Array, off: number, len: number): string {
  if (len === 0) throw invalid("numeric", b, off, len);
  return ascii(b, off, len);
}

/**
 * money as bigint minor units. `cash_out` prints every digit of the int64
 * (only separators and the currency symbol depend on lc_monetary), so the
 * digits alone are the value; `-` or `(` anywhere means negative.
 */
export function textMoney(b: Uint8Array, off: number, len: number): bigint {
  let n = 0;
  let count = 0;
  let neg = false;
  let digits = "";
  for (let p = off, end = off + len; p < end; p++) {
    const c = b[p]!;
    const d = c - 48;
    if (d >= 0 && d <= 9) {
      if (count < 15) n = n * 10 + d;
      else digits += String.fromCharCode(c);
      count++;
    } else if (c === 0x2d || c === 0x28) neg = true;
  }
  if (count === 0) throw invalid("money", b, off, len);
  const v = count <= 15 ? BigInt(n) : BigInt(`${n}${digits}`);
  return neg ? -v : v;
}
