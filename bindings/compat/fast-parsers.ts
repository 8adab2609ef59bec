/**
 * Column parsers straight from the value's bytes for the drop-in plugin,
 * each giving exactly what pg-types' default text parser gives for the same
 * text (pg-types 2.x, postgres-date 1.x), without making the string first.
 *
 * Each handles PostgreSQL's canonical output for its type and returns
 * `NOT_FAST` for anything else (`infinity`, an unexpected shape), on which
 * the caller runs pg-types' own parser on the text: the fast path only
 * covers inputs where its equality with pg-types is plain to check
 * (test/compat-fast-parsers.test.ts checks it both on edge values and on
 * many random ones).
 */

/** "Use the pg-types parser on the text instead." */
export const NOT_FAST: unique symbol = Symbol("NOT_FAST");
export type FastParser = (u8: Uint8Array, off: number, len: number) => unknown;

const MINUS = 0x2d;
const ZERO = 0x30;

/** int2 / int4 / oid: pg-types' `parseInt(text, 10)` (so `-0` stays `-0`). */
export function fastInt(u8: Uint8Array, off: number, len: number): unknown {
  let i = off;
  const end = off + len;
  const neg = u8[i] === MINUS;
  if (neg) i++;
  // 15 digits stay exact in a double; oid and int4 need at most 10.
  if (i === end || end - i > 15) return NOT_FAST;
  let v = 0;
  for (; i < end; i++) {
    const d = u8[i]! - ZERO;
    if (d < 0 || d > 9) return NOT_FAST;
    v = v * 10 + d;
  }
  return neg ? -v : v;
}

/** Powers of ten that are exact doubles. */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);
/** Above this a mantissa times 10, plus a digit, may pass 2^53 (and stop being exact). */
const MANTISSA_MAX = Math.floor((2 ** 53 - 9) / 10);
const DOT = 0x2e;

/**
 * float4 / float8: pg-types' `parseFloat`, for plain decimals
 * (`-12.5`, `3`, `0.000123`) of at most ~15 significant digits: the digits
 * as an integer `m` (exact below 2^53) divided by `10^k` (exact up to
 * 10^22) is one correctly rounded operation on exact operands, so it is
 * the double nearest the decimal, which is what parseFloat returns
 * (Clinger's fast path). Exponents, NaN, Infinity and longer mantissas
 * (PostgreSQL writes float8 with up to 17 digits) go to parseFloat.
 */
export function fastFloat(u8: Uint8Array, off: number, len: number): unknown {
  let i = off;
  const end = off + len;
  const neg = u8[i] === MINUS;
  if (neg) i++;
  let m = 0;
  let scale = -1; // digits after the point, -1 before it
  let any = false;
  for (; i < end; i++) {
    const c = u8[i]!;
    if (c === DOT) {
      if (scale >= 0) return NOT_FAST;
      scale = 0;
      continue;
    }
    const d = c - ZERO;
    if (d < 0 || d > 9 || m > MANTISSA_MAX) return NOT_FAST;
    m = m * 10 + d;
    any = true;
    if (scale >= 0) scale++;
  }
  if (!any || scale > 22) return NOT_FAST;
  const v = scale > 0 ? m / POW10[scale]! : m;
  return neg ? -v : v;
}

/** bool: pg-types' parseBool is true for `t` (PostgreSQL's output) and false for `f`. */
export function fastBool(u8: Uint8Array, off: number, len: number): unknown {
  if (len !== 1) return NOT_FAST;
  const c = u8[off];
  return c === 0x74 ? true : c === 0x66 ? false : NOT_FAST;
}

/** `count` decimal digits at `at` as a number, or -1 if one is not a digit. */
function digits(u8: Uint8Array, at: number, count: number): number {
  let v = 0;
  for (let i = at; i < at + count; i++) {
    const d = u8[i]! - ZERO;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

/** postgres-date's 0..99 test: such years need a set*FullYear after the Date constructor (it maps them to 19xx). */
function is0To99(year: number): boolean {
  return year >= 0 && year < 100;
}

/** " BC" at `at`, ending the text at `end`. */
function isBC(u8: Uint8Array, at: number, end: number): boolean {
  return end - at === 3 && u8[at] === 0x20 && u8[at + 1] === 0x42 && u8[at + 2] === 0x43;
}

const DAY_MS = 86_400_000;
/** Days before each month (1-12) in a common year, and each month's length. */
const DAYS_BEFORE = [0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
const MONTH_DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

/**
 * `Date.UTC(year, month - 1, day, hour, minute, second, ms)` by integer
 * arithmetic, for a valid date and time of the years 1000-9999 (the
 * builtin's MakeDay and MakeTime cost more than the rest of the parse);
 * `undefined` for anything else (a 60th second, a day past its month's
 * end, which Date.UTC rolls over), left to Date.UTC. `ms` is truncated as
 * MakeTime truncates it; no TimeClip is needed in these years.
 */
function plainUtc(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number): number | undefined {
  if (year < 1000 || year > 9999 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const leap = isLeap(year);
  if (day > MONTH_DAYS[month]! + (leap && month === 2 ? 1 : 0)) return undefined;
  // Days from 1970-01-01 to January 1st of `year` (proleptic Gregorian), then to the day.
  const y = year - 1;
  const yearDays = 365 * (year - 1970) + (Math.floor(y / 4) - 492) - (Math.floor(y / 100) - 19) + (Math.floor(y / 400) - 4);
  const days = yearDays + DAYS_BEFORE[month]! + (leap && month > 2 ? 1 : 0) + day - 1;
  return days * DAY_MS + hour * 3_600_000 + minute * 60_000 + second * 1000 + Math.trunc(ms);
}

/**
 * date, timestamp, timestamptz in ISO DateStyle (`YYYY-MM-DD[ HH:MM:SS[.f…][±HH[:MM[:SS]]]][ BC]`)
 * as postgres-date builds the `Date`: the very same Date constructor and
 * setter calls on the same numbers (local time without a zone, so the
 * process's TZ applies as in pg-types; the fraction as `1000 * parseFloat`).
 */
export function fastDate(u8: Uint8Array, off: number, len: number): unknown {
  const end = off + len;
  let i = off;
  let year = 0;
  while (i < end && i - off < 9) {
    const d = u8[i]! - ZERO;
    if (d < 0 || d > 9) break;
    year = year * 10 + d;
    i++;
  }
  if (i === off || u8[i] !== MINUS || u8[i + 3] !== MINUS || i + 6 > end) return NOT_FAST;
  const month = digits(u8, i + 1, 2);
  const day = digits(u8, i + 4, 2);
  if (month < 0 || day < 0) return NOT_FAST;
  i += 6;
  if (i === end || isBC(u8, i, end)) {
    // postgres-date's getDate: a date alone is local midnight.
    if (i !== end) year = -(year - 1);
    const date = new Date(year, month - 1, day);
    if (is0To99(year)) date.setFullYear(year);
    return date;
  }
  if (i + 9 > end || u8[i] !== 0x20 || u8[i + 3] !== 0x3a || u8[i + 6] !== 0x3a) return NOT_FAST;
  const hour = digits(u8, i + 1, 2);
  const minute = digits(u8, i + 4, 2);
  const second = digits(u8, i + 7, 2);
  if (hour < 0 || minute < 0 || second < 0) return NOT_FAST;
  i += 9;
  let ms = 0;
  if (u8[i] === 0x2e && i < end) {
    const start = ++i;
    let frac = 0;
    while (i < end && i - start < 15) {
      const d = u8[i]! - ZERO;
      if (d < 0 || d > 9) break;
      frac = frac * 10 + d;
      i++;
    }
    if (i === start) return NOT_FAST;
    // frac / 10^n is the double nearest the decimal, as parseFloat(".f…") is.
    ms = 1000 * (frac / POW10[i - start]!);
  }
  let offset: number | undefined;
  if (i < end && (u8[i] === 0x2b || u8[i] === MINUS)) {
    const sign = u8[i] === MINUS ? -1 : 1;
    const zh = digits(u8, i + 1, 2);
    if (zh < 0 || i + 3 > end) return NOT_FAST;
    i += 3;
    let zm = 0;
    let zs = 0;
    if (u8[i] === 0x3a && i < end) {
      zm = digits(u8, i + 1, 2);
      if (zm < 0 || i + 3 > end) return NOT_FAST;
      i += 3;
      if (u8[i] === 0x3a && i < end) {
        zs = digits(u8, i + 1, 2);
        if (zs < 0 || i + 3 > end) return NOT_FAST;
        i += 3;
      }
    }
    offset = (zh * 3600 + zm * 60 + zs) * sign * 1000;
  }
  if (i !== end) {
    if (!isBC(u8, i, end)) return NOT_FAST;
    year = -(year - 1);
  }
  let date: Date;
  if (offset !== undefined) {
    if (!is0To99(year)) {
      const utc = plainUtc(year, month, day, hour, minute, second, ms);
      // = setTime(getTime() - offset): both TimeClip.
      return new Date((utc === undefined ? Date.UTC(year, month - 1, day, hour, minute, second, ms) : utc) - offset);
    }
    date = new Date(Date.UTC(year, month - 1, day, hour, minute, second, ms));
    date.setUTCFullYear(year);
    if (offset !== 0) date.setTime(date.getTime() - offset);
  } else {
    date = new Date(year, month - 1, day, hour, minute, second, ms);
    if (is0To99(year)) date.setFullYear(year);
  }
  return date;
}
