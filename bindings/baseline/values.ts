/**
 * Port of assembly/values.ts `textTimestamp`: a text timestamp
 * `YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM[:SS]]]` at memory[offset, offset +
 * length) → µs since 1970-01-01 UTC, or NOT_PARSED for every form the wasm
 * kernel leaves to the JS parser (infinity, BC, more than six fraction
 * digits, malformed text). Line by line the AssemblyScript, so both kernels
 * accept exactly the same texts. Its i64 arithmetic fits doubles exactly
 * (days ≤ 2^27, µs within a day plus a zone < 2^40) until the last
 * multiply, which is done in bigint.
 */
import { NOT_PARSED } from "../kernel/exports.ts";

// The parser's cursor, as the module globals of values.ts.
let u8: Uint8Array = new Uint8Array(0);
let p = 0;
let end = 0;
let bad = false;

function digit(): number {
  if (p >= end) { bad = true; return 0; }
  const d = u8[p]! - 48;
  if (d < 0 || d > 9) { bad = true; return 0; }
  p++;
  return d;
}

function two(): number {
  const hi = digit();
  return hi * 10 + digit();
}

function expect(c: number): void {
  if (p >= end || u8[p] !== c) bad = true;
  else p++;
}

/** Days from 1970-01-01 to a proleptic Gregorian date (astronomical year); i64 division truncates, hence Math.trunc. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.trunc((y >= 0 ? y : y - 399) / 400);
  const yoe = y - era * 400;
  const doy = Math.trunc((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.trunc(yoe / 4) - Math.trunc(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** assembly/values.ts `textTimestamp`, over the bytes of `memory`. */
export function textTimestamp(memory: Uint8Array, offset: number, length: number, withZone: number): bigint {
  // Never read outside memory, whatever the caller passes.
  if (offset < 0 || length < 19 || offset + length > memory.length) return NOT_PARSED;
  u8 = memory;
  try {
    return parse(offset, length, withZone);
  } finally {
    u8 = EMPTY; // hold no decoder's memory past the call
  }
}

const EMPTY = new Uint8Array(0);

function parse(offset: number, length: number, withZone: number): bigint {
  p = offset;
  end = offset + length;
  bad = false;
  // Year: digits (PostgreSQL prints at least 4).
  let year = 0;
  let n = 0;
  while (p < end && n < 10) {
    const d = u8[p]! - 48;
    if (d < 0 || d > 9) break;
    year = year * 10 + d;
    p++;
    n++;
  }
  // Near PostgreSQL's last year (294276) µs since 1970 pass 2^63: bigint's job, not i64's.
  if (n === 0 || year > 200000) return NOT_PARSED;
  expect(0x2d);
  const month = two();
  expect(0x2d);
  const day = two();
  expect(0x20);
  const h = two();
  expect(0x3a);
  const mi = two();
  expect(0x3a);
  const s = two();
  if (bad || month < 1 || month > 12 || day < 1 || day > 31) return NOT_PARSED;
  let us = ((h * 60 + mi) * 60 + s) * 1000000;
  if (p < end && u8[p] === 0x2e) {
    p++;
    let scale = 100000;
    let k = 0;
    while (p < end) {
      const d = u8[p]! - 48;
      if (d < 0 || d > 9) break;
      if (++k > 6) return NOT_PARSED;
      us += d * scale;
      scale = Math.trunc(scale / 10);
      p++;
    }
    if (k === 0) return NOT_PARSED;
  }
  if (withZone) {
    const c = p < end ? u8[p]! : 0;
    if (c !== 0x2b && c !== 0x2d) return NOT_PARSED;
    p++;
    let secs = two() * 3600;
    if (p < end && u8[p] === 0x3a) {
      p++;
      secs += two() * 60;
      if (p < end && u8[p] === 0x3a) {
        p++;
        secs += two();
      }
    }
    us -= (c === 0x2d ? -secs : secs) * 1000000;
  }
  if (bad || p !== end) return NOT_PARSED;
  return BigInt(daysFromCivil(year, month, day)) * 86400000000n + BigInt(us);
}
