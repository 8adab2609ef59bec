// The kernel's JSON output: the cursor its writers share (json-columns.ts,
// json-debezium.ts, json-lines.ts) and what writes bytes, numbers and
// strings at it. Built twice from this source, as decode.ts is (portable.ts).
// The writers check room before they write: these do not.
import { loadU8, storeU8, memoryCopy, copyShort, memoryBytes, gtU32, divI32, plainEnd } from "./portable.ts";

const QUOTE: i32 = 0x22;
const BACKSLASH: i32 = 0x5c;

// The output cursor of the call, and what copy() may overwrite and read (columnsAt's end, the memory's).
let o: usize = 0;
let writable: usize = 0;
let readable: usize = 0;

/** Where copy() may write up to and read up to: the output's end and the memory's. */
export function setBounds(writeEnd: usize, readEnd: usize): void {
  writable = writeEnd;
  readable = readEnd;
}

function u8at(p: i32): i32 {
  return loadU8(<usize>p);
}

/** One byte at the cursor. */
export function putByte(c: i32): void {
  storeU8(o++, c);
}

/** The n bytes at p at the cursor. */
export function copy(p: i32, n: i32): void {
  copyShort(o, <usize>p, <usize>n, writable, readable);
  o += <usize>n;
}

function hexDigit(d: i32): i32 {
  return d < 10 ? 0x30 + d : 0x57 + d;
}

/** A byte as two lowercase hex digits. */
export function putHex(x: i32): void {
  putByte(hexDigit(x >> 4));
  putByte(hexDigit(x & 15));
}

/** The output cursor: json-lines.ts writes a line's other fields around the columns. */
export function cursor(): usize {
  return o;
}

export function setCursor(at: usize): void {
  o = at;
}

export function putBytes(p: usize, n: i32): void {
  memoryCopy(o, p, <usize>n);
  o += <usize>n;
}

/** putBytes where memory from the cursor up to `limit` is the caller's output space (copyShort may write there). */
export function putBytesUpTo(p: usize, n: i32, limit: usize): void {
  copyShort(o, p, <usize>n, limit, <usize>memoryBytes());
  o += <usize>n;
}

export function isDigit(c: i32): bool {
  return !gtU32(c - 0x30, 9);
}

/** An integer v (|v| < 2^53) in decimal. */
export function putSigned(v: f64): void {
  if (v < 0) putByte(0x2d);
  putDecimal(v < 0 ? -v : v);
}

/**
 * v (an integer, 0 <= v < 2^53) in decimal: below 10^9 in i32 arithmetic
 * (whose divisions by 10 are multiplies, not a double's division), above
 * as its part above 10^9 and its last nine digits.
 */
export function putDecimal(v: f64): void {
  if (v < 1000000000.0) {
    putSmall(<i32>v);
    return;
  }
  const high = Math.floor(v / 1000000000.0);
  putSmall(<i32>high);
  putDigits(<i32>(v - high * 1000000000.0), 9);
}

/** 0 <= x < 10^9 in decimal. */
function putSmall(x: i32): void {
  let n = 1;
  for (let t = x; t >= 10; t = divI32(t, 10)) n++;
  putDigits(x, n);
}

/** The last n decimal digits of 0 <= x < 10^9, zero-padded. */
function putDigits(x: i32, n: i32): void {
  o += <usize>n;
  let at = o;
  let y = x;
  for (let i = 0; i < n; i++) {
    const q = divI32(y, 10);
    storeU8(--at, 0x30 + y - q * 10);
    y = q;
  }
}

/** ASCII text (a literal). */
export function putText(s: string): void {
  for (let i = 0; i < s.length; i++) putByte(s.charCodeAt(i));
}

/** An i32 in decimal, -2^31 too (a binary interval's months or days): negated as a double, where it cannot wrap. */
export function putInt(v: i32): void {
  if (v < 0) putByte(0x2d);
  const x = <f64>v;
  putDecimal(v < 0 ? -x : x);
}

function pow10(k: i32): i32 {
  let v = 1;
  for (let i = 0; i < k; i++) v *= 10;
  return v;
}

/** µs of a second (0 to 999999) as `.f…` without trailing zeros; nothing for 0. */
export function putFraction(us: i32): void {
  if (us == 0) return;
  putByte(0x2e);
  let digits = 6;
  while (us - divI32(us, 10) * 10 == 0) {
    us = divI32(us, 10);
    digits--;
  }
  for (let scale = pow10(digits - 1); scale > 0; scale = divI32(scale, 10)) {
    const d = divI32(us, scale);
    putByte(0x30 + d);
    us -= d * scale;
  }
}

/** 0 <= v < 100 as two digits. */
export function put2(v: i32): void {
  const tens = divI32(v, 10);
  putByte(0x30 + tens);
  putByte(0x30 + v - tens * 10);
}

/** After the run of ASCII digits at i. */
export function afterDigits(i: i32, end: i32): i32 {
  while (i < end && isDigit(u8at(i))) i++;
  return i;
}

/**
 * A JSON string of UTF-8 text, escaped as JSON.stringify escapes; invalid
 * UTF-8: false. `unescape`: a backslash stands for the byte after it (a
 * quoted array element's escapes, as values/arrays.ts unescapes them).
 */
export function writeString(p: i32, n: i32, unescape: bool = false): bool {
  const end = p + n;
  putByte(QUOTE);
  let i = p;
  while (i < end) {
    const c = u8at(i);
    if (c >= 0x20 && c != QUOTE && c != BACKSLASH && c < 0x80) {
      // A run of plain ASCII: one copy.
      const j = plainEnd(i + 1, end);
      copy(i, j - i);
      i = j;
    } else if (c < 0x80) {
      let x = c;
      if (unescape && c == BACKSLASH) {
        if (++i == end) return false;
        x = u8at(i);
        if (x >= 0x80) {
          i = copySequence(i, end);
          if (i < 0) return false;
          continue;
        }
      }
      if (x >= 0x20 && x != QUOTE && x != BACKSLASH) putByte(x);
      else {
        putByte(BACKSLASH);
        const short = x == QUOTE ? QUOTE : x == BACKSLASH ? BACKSLASH : x == 8 ? 0x62 : x == 9 ? 0x74 : x == 10 ? 0x6e : x == 12 ? 0x66 : x == 13 ? 0x72 : 0;
        if (short != 0) putByte(short);
        else {
          putByte(0x75); putByte(0x30); putByte(0x30);
          putHex(x);
        }
      }
      i++;
    } else {
      i = copySequence(i, end);
      if (i < 0) return false;
    }
  }
  putByte(QUOTE);
  return true;
}

function cont(j: i32, end: i32, lo: i32, hi: i32): bool {
  return j < end && u8at(j) >= lo && u8at(j) <= hi;
}

/** Copies the well-formed UTF-8 sequence at i; returns the index after it, or -1 (invalid). */
export function copySequence(i: i32, end: i32): i32 {
  const len = utf8Sequence(i, end);
  if (len == 0) return -1;
  copy(i, len);
  return i + len;
}

/** Length of the well-formed UTF-8 sequence at a byte ≥ 0x80 (Unicode table 3-7), or 0. */
function utf8Sequence(i: i32, end: i32): i32 {
  const c = u8at(i);
  if (c >= 0xc2 && c <= 0xdf) return cont(i + 1, end, 0x80, 0xbf) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const lo = c == 0xe0 ? 0xa0 : 0x80;
    const hi = c == 0xed ? 0x9f : 0xbf;
    return cont(i + 1, end, lo, hi) && cont(i + 2, end, 0x80, 0xbf) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const lo = c == 0xf0 ? 0x90 : 0x80;
    const hi = c == 0xf4 ? 0x8f : 0xbf;
    return cont(i + 1, end, lo, hi) && cont(i + 2, end, 0x80, 0xbf) && cont(i + 3, end, 0x80, 0xbf) ? 4 : 0;
  }
  return 0;
}
