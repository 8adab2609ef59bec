/**
 * Binary forms of bool, the integer types, floats, numeric and money.
 *
 *   bool     1 byte, 0 or 1
 *   int2/4/8 big-endian two's complement; oid, xid, cid: UInt32; xid8: UInt64
 *   float4/8 IEEE 754 big-endian
 *   numeric  Int16 ndigits, Int16 weight, UInt16 sign, UInt16 dscale, Int16 digits[ndigits] (base 10000)
 *   money    Int64 minor units
 */
import { expectLength, float32, float64, int16, int32, int64, invalid, uint16, uint32, uint64 } from "../bytes.ts";
import { int8ToNumber } from "../text/numbers.ts";

export function binaryBool(b: Uint8Array, off: number, len: number): boolean {
  expectLength("bool", b, off, len, 1);
  return b[off] !== 0;
}

export function binaryInt2(b: Uint8Array, off: number, len: number): number {
  expectLength("int2", b, off, len, 2);
  return int16(b, off);
}

export function binaryInt4(b: Uint8Array, off: number, len: number): number {
  expectLength("int4", b, off, len, 4);
  return int32(b, off);
}

/** oid, xid, cid, and the reg* types' binary form (an oid). */
export function binaryUint32(b: Uint8Array, off: number, len: number): number {
  expectLength("oid", b, off, len, 4);
  return uint32(b, off);
}

export function binaryInt8(b: Uint8Array, off: number, len: number): bigint {
  expectLength("int8", b, off, len, 8);
  return int64(b, off);
}

export function binaryInt8Number(b: Uint8Array, off: number, len: number): number {
  return int8ToNumber(binaryInt8(b, off, len));
}

export function binaryInt8String(b: Uint8Array, off: number, len: number): string {
  return String(binaryInt8(b, off, len));
}

export function binaryUint64(b: Uint8Array, off: number, len: number): bigint {
  expectLength("xid8", b, off, len, 8);
  return uint64(b, off);
}

export function binaryFloat4(b: Uint8Array, off: number, len: number): number {
  expectLength("float4", b, off, len, 4);
  return float32(b, off);
}

export function binaryFloat8(b: Uint8Array, off: number, len: number): number {
  expectLength("float8", b, off, len, 8);
  return float64(b, off);
}

const NUMERIC_POS = 0x0000;
const NUMERIC_NEG = 0x4000;
const NUMERIC_NAN = 0xc000;
const NUMERIC_PINF = 0xd000;
const NUMERIC_NINF = 0xf000;
const NUMERIC_DSCALE_MAX = 0x3fff;

function group4(d: number): string {
  return d >= 1000 ? `${d}` : d >= 100 ? `0${d}` : d >= 10 ? `00${d}` : `000${d}`;
}

/**
 * numeric → the text PostgreSQL's `numeric_out` prints for it: integer part
 * without leading zeros (`0` when there is none), then exactly `dscale`
 * fraction digits (trailing zeros kept).
 */
export function binaryNumeric(b: Uint8Array, off: number, len: number): string {
  if (len < 8) throw invalid("numeric", b, off, len, "shorter than its 8-byte header");
  const ndigits = int16(b, off);
  const weight = int16(b, off + 2);
  const sign = uint16(b, off + 4);
  const dscale = uint16(b, off + 6);
  if (ndigits < 0 || len !== 8 + 2 * ndigits) throw invalid("numeric", b, off, len, "digit count does not match its length");
  if (sign === NUMERIC_NAN) return "NaN";
  if (sign === NUMERIC_PINF) return "Infinity";
  if (sign === NUMERIC_NINF) return "-Infinity";
  if (sign !== NUMERIC_POS && sign !== NUMERIC_NEG) throw invalid("numeric", b, off, len, "bad sign");
  // As numeric_recv: a 14-bit display scale, base-10000 digits (anything else would print as wrong digits).
  if (dscale > NUMERIC_DSCALE_MAX) throw invalid("numeric", b, off, len, "bad display scale");
  const d0 = off + 8;
  for (let k = 0; k < ndigits; k++) {
    const d = int16(b, d0 + 2 * k);
    if (d < 0 || d > 9999) throw invalid("numeric", b, off, len, "bad digit");
  }
  let s = sign === NUMERIC_NEG ? "-" : "";
  if (weight < 0) s += "0";
  else {
    for (let k = 0; k <= weight; k++) {
      const d = k < ndigits ? int16(b, d0 + 2 * k) : 0;
      s += k === 0 ? `${d}` : group4(d);
    }
  }
  if (dscale > 0) {
    let frac = "";
    // Digit k weighs 10000^(weight − k): the fraction starts at k = weight + 1.
    for (let k = weight + 1; frac.length < dscale; k++) {
      frac += k >= 0 && k < ndigits ? group4(int16(b, d0 + 2 * k)) : "0000";
    }
    s += `.${frac.length === dscale ? frac : frac.slice(0, dscale)}`;
  }
  return s;
}

export function binaryMoney(b: Uint8Array, off: number, len: number): bigint {
  expectLength("money", b, off, len, 8);
  return int64(b, off);
}

/** money → `$1,234.56` / `-$1,234.56`, as `cash_out` prints it under lc_monetary C (or en_US). */
export function binaryMoneyString(b: Uint8Array, off: number, len: number): string {
  return formatMoneyC(binaryMoney(b, off, len));
}

export function formatMoneyC(v: bigint): string {
  const neg = v < 0n;
  const digits = String(neg ? -v : v).padStart(3, "0");
  const int = digits.slice(0, -2);
  let grouped = "";
  for (let i = int.length; i > 0; i -= 3) grouped = i > 3 ? `,${int.slice(i - 3, i)}${grouped}` : `${int.slice(0, i)}${grouped}`;
  return `${neg ? "-" : ""}$${grouped}.${digits.slice(-2)}`;
}

