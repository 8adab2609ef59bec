/**
 * Text forms of date, time, timetz, timestamp, timestamptz (DateStyle ISO)
 * and interval (IntervalStyle postgres), read from the bytes into canonical
 * numbers: days since 1970-01-01, µs since midnight, µs since 1970-01-01.
 *
 *   date          2024-02-29 | 0044-03-15 BC | 5874897-12-31 | infinity | -infinity
 *   time          04:05:06.789 | 24:00:00
 *   timetz        04:05:06.789+05:30 | 00:00:00-00:25:21
 *   timestamp     2024-02-29 04:05:06.789 | 0044-03-15 12:00:00 BC | 294276-12-31 23:59:59.999999
 *   timestamptz   2024-02-29 04:05:06.789+00 | 1850-01-01 00:00:00-04:56:02 | 0044-03-15 12:00:00+00 BC
 *   interval      1 year 2 mons -3 days +04:05:06.789 | -00:00:01 | 00:00:00 | infinity
 */
import { invalid } from "../bytes.ts";
import { daysFromCivil, US_PER_DAY, US_PER_DAY_N } from "../calendar.ts";

/** ±infinity of timestamp/timestamptz (and of time.ts): the int64 extremes PostgreSQL uses. */
export const TIMESTAMP_INFINITY = 0x7fff_ffff_ffff_ffffn;
export const TIMESTAMP_NEG_INFINITY = -0x8000_0000_0000_0000n;

// One value is parsed at a time: the cursor lives here rather than in an object per call.
let b: Uint8Array = new Uint8Array(0);
let p = 0;
let end = 0;
let start0 = 0;
let kind = "";

function start(bytes: Uint8Array, off: number, len: number, typeName: string): void {
  b = bytes;
  p = off;
  end = off + len;
  start0 = off;
  kind = typeName;
}

function fail(): never {
  throw invalid(kind, b, start0, end - start0);
}

function digit(): number {
  const d = p < end ? b[p]! - 48 : -1;
  if (d < 0 || d > 9) fail();
  p++;
  return d;
}

function two(): number {
  return digit() * 10 + digit();
}

function expect(c: number): void {
  if (p >= end || b[p] !== c) fail();
  p++;
}

/** Digits up to the first non-digit (at least one). */
function digits(): number {
  let n = digit();
  while (p < end) {
    const d = b[p]! - 48;
    if (d < 0 || d > 9) break;
    n = n * 10 + d;
    p++;
  }
  return n;
}

/** `.ffffff` if present: microseconds (1-6 digits, more are cut). */
function fraction(): number {
  if (p >= end || b[p] !== 0x2e) return 0;
  p++;
  let us = 0;
  let scale = 100_000;
  digit();
  p--;
  while (p < end) {
    const d = b[p]! - 48;
    if (d < 0 || d > 9) break;
    us += d * scale;
    scale /= 10;
    p++;
  }
  return Math.round(us);
}

/** `HH:MM:SS[.ffffff]` → µs. */
function clock(): number {
  const h = two();
  expect(0x3a);
  const m = two();
  expect(0x3a);
  const s = two();
  return ((h * 60 + m) * 60 + s) * 1_000_000 + fraction();
}

/** `+HH[:MM[:SS]]` → seconds east of UTC. */
function zone(): number {
  const c = p < end ? b[p] : 0;
  if (c !== 0x2b && c !== 0x2d) fail();
  p++;
  let secs = two() * 3600;
  if (p < end && b[p] === 0x3a) {
    p++;
    secs += two() * 60;
    if (p < end && b[p] === 0x3a) {
      p++;
      secs += two();
    }
  }
  return c === 0x2d ? -secs : secs;
}

/** `YYYY-MM-DD` (year of 4+ digits) → days since 1970, astronomical year stored in `year`. */
let year = 0;
let month = 0;
let day = 0;
function ymd(): void {
  year = digits();
  expect(0x2d);
  month = two();
  expect(0x2d);
  day = two();
  if (month < 1 || month > 12 || day < 1 || day > 31) fail();
}

/** ` BC` if present. */
function bc(): boolean {
  if (p + 3 === end && b[p] === 0x20 && b[p + 1] === 0x42 && b[p + 2] === 0x43) {
    p += 3;
    return true;
  }
  return false;
}

/** 1 for `infinity`, -1 for `-infinity`, 0 otherwise. */
function infinity(bytes: Uint8Array, off: number, len: number): number {
  let i = off;
  let sign = 1;
  if (len === 9 && bytes[off] === 0x2d) {
    sign = -1;
    i++;
  } else if (len !== 8) return 0;
  // "infinity"
  return bytes[i] === 0x69 && bytes[i + 1] === 0x6e && bytes[i + 2] === 0x66 && bytes[i + 3] === 0x69 &&
    bytes[i + 4] === 0x6e && bytes[i + 5] === 0x69 && bytes[i + 6] === 0x74 && bytes[i + 7] === 0x79
    ? sign
    : 0;
}

/** date → days since 1970-01-01; ±Infinity for ±infinity. */
export function textDateDays(bytes: Uint8Array, off: number, len: number): number {
  const inf = infinity(bytes, off, len);
  if (inf !== 0) return inf * Infinity;
  start(bytes, off, len, "date");
  ymd();
  if (bc()) year = 1 - year;
  if (p !== end) fail();
  return daysFromCivil(year, month, day);
}

/** time → µs since midnight. */
export function textTimeMicros(bytes: Uint8Array, off: number, len: number): number {
  start(bytes, off, len, "time");
  const us = clock();
  if (p !== end) fail();
  return us;
}

/** timetz → µs since midnight, and the offset (seconds east of UTC) in `lastZone`. */
export let lastZone = 0;
export function textTimetzMicros(bytes: Uint8Array, off: number, len: number): number {
  start(bytes, off, len, "timetz");
  const us = clock();
  lastZone = zone();
  if (p !== end) fail();
  return us;
}

function timestamp(bytes: Uint8Array, off: number, len: number, withZone: boolean): bigint {
  const inf = infinity(bytes, off, len);
  if (inf !== 0) return inf > 0 ? TIMESTAMP_INFINITY : TIMESTAMP_NEG_INFINITY;
  start(bytes, off, len, withZone ? "timestamptz" : "timestamp");
  ymd();
  expect(0x20);
  let us = clock();
  if (withZone) us -= zone() * 1_000_000;
  if (bc()) year = 1 - year;
  if (p !== end) fail();
  const days = daysFromCivil(year, month, day);
  // |days| < 100000 (years 1696-2243) keeps days·86400e6 + us below 2^53.
  if (days > -100_000 && days < 100_000) return BigInt(days * US_PER_DAY + us);
  return BigInt(days) * US_PER_DAY_N + BigInt(us);
}

/** timestamp → µs since 1970-01-01 of its wall-clock time read as UTC. */
export function textTimestamp(bytes: Uint8Array, off: number, len: number): bigint {
  return timestamp(bytes, off, len, false);
}

/** timestamptz → µs since 1970-01-01 UTC (the text's offset applied). */
export function textTimestamptz(bytes: Uint8Array, off: number, len: number): bigint {
  return timestamp(bytes, off, len, true);
}

export interface Interval {
  months: number;
  days: number;
  microseconds: bigint;
}

/** PostgreSQL 17+'s infinite intervals, as their binary form stores them. */
export const INTERVAL_INFINITY: Readonly<Interval> = { months: 0x7fffffff, days: 0x7fffffff, microseconds: TIMESTAMP_INFINITY };
export const INTERVAL_NEG_INFINITY: Readonly<Interval> = { months: -0x80000000, days: -0x80000000, microseconds: TIMESTAMP_NEG_INFINITY };

/** interval in IntervalStyle postgres: `[±N year(s)] [±N mon(s)] [±N day(s)] [±H+:MM:SS[.f]]`. */
export function textInterval(bytes: Uint8Array, off: number, len: number): Interval {
  const inf = infinity(bytes, off, len);
  if (inf !== 0) return inf > 0 ? { ...INTERVAL_INFINITY } : { ...INTERVAL_NEG_INFINITY };
  start(bytes, off, len, "interval");
  let months = 0;
  let days = 0;
  let micros: bigint | undefined;
  while (p < end) {
    if (b[p] === 0x20) {
      p++;
      continue;
    }
    let neg = false;
    if (b[p] === 0x2d || b[p] === 0x2b) {
      neg = b[p] === 0x2d;
      p++;
    }
    const n = digits();
    if (p < end && b[p] === 0x3a) {
      // The time part: hours (any number of digits), minutes, seconds.
      p++;
      const m = two();
      expect(0x3a);
      const s = two();
      const rest = (m * 60 + s) * 1_000_000 + fraction();
      // 2^53 / 3.6e9 ≈ 2.5e6 hours fit a double exactly.
      const total = n < 2_000_000 ? BigInt(n * 3_600_000_000 + rest) : BigInt(n) * 3_600_000_000n + BigInt(rest);
      micros = neg ? -total : total;
      continue;
    }
    expect(0x20);
    const v = neg ? -n : n;
    const unit = p < end ? b[p] : 0;
    if (unit === 0x79) months += v * 12; // year(s)
    else if (unit === 0x6d) months += v; // mon(s)
    else if (unit === 0x64) days += v; // day(s)
    else fail();
    while (p < end && b[p] !== 0x20) p++;
  }
  return { months, days, microseconds: micros ?? 0n };
}
