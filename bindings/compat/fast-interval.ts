/**
 * interval straight from its bytes, exactly as pg-types' postgres-interval
 * (1.x) builds it: a `PostgresInterval` (its prototype, so toPostgres() and
 * toISO() work) with own properties, in the order years, months, days,
 * hours, minutes, seconds, milliseconds, for the non-zero fields only, the
 * time fields negated when the time part is. Only PostgreSQL's default
 * IntervalStyle output (`1 year 2 mons -3 days -04:05:06.789`) takes this
 * path; anything else returns `NOT_FAST` and goes to postgres-interval.
 */
import { NOT_FAST, type FastParser } from "./fast-parsers.ts";

const SPACE = 0x20;
const MINUS = 0x2d;
const PLUS = 0x2b;
const COLON = 0x3a;

/** A `[+-]digits` run at `at` (ended by `end` or a non-digit) as parseInt reads it, and where it ends; undefined when there is none. */
function signedInt(u8: Uint8Array, at: number, end: number): { v: number; next: number } | undefined {
  let i = at;
  const neg = u8[i] === MINUS;
  if (neg || u8[i] === PLUS) i++;
  const start = i;
  let v = 0;
  while (i < end && i - start < 15) {
    const d = u8[i]! - 0x30;
    if (d < 0 || d > 9) break;
    v = v * 10 + d;
    i++;
  }
  if (i === start) return undefined;
  return { v: neg ? -v : v, next: i };
}

/** The ASCII `word` at `at`. */
function isWord(u8: Uint8Array, at: number, end: number, word: string): boolean {
  if (at + word.length > end) return false;
  for (let k = 0; k < word.length; k++) if (u8[at + k] !== word.charCodeAt(k)) return false;
  return true;
}

const UNITS = [
  { plural: " years", single: " year" },
  { plural: " mons", single: " mon" },
  { plural: " days", single: " day" },
] as const;

export function makeFastInterval(prototype: object): FastParser {
  return (u8, off, len) => {
    const end = off + len;
    if (len === 0) return NOT_FAST;
    const out = Object.create(prototype) as Record<string, number>;
    const fields = [0, 0, 0];
    let i = off;
    let unit = 0;
    // The date part: up to three `N unit` items, in order, each followed by a space or the end.
    while (i < end && unit < 3) {
      const n = signedInt(u8, i, end);
      if (n === undefined) break;
      let matched = -1;
      for (let u = unit; u < 3; u++) {
        const w = isWord(u8, n.next, end, UNITS[u]!.plural) ? UNITS[u]!.plural : isWord(u8, n.next, end, UNITS[u]!.single) ? UNITS[u]!.single : "";
        if (w !== "" && (n.next + w.length === end || u8[n.next + w.length] === SPACE)) {
          matched = u;
          fields[u] = n.v;
          i = n.next + w.length;
          break;
        }
      }
      if (matched < 0) break; // a time part, or not ours
      unit = matched + 1;
      if (i < end) i++; // the space
    }
    let hours = 0;
    let minutes = 0;
    let seconds = 0;
    let ms = 0;
    let negative = false;
    if (i < end) {
      // The time part: [+-]H…:MM:SS[.f{1,6}] to the end.
      negative = u8[i] === MINUS;
      if (negative || u8[i] === PLUS) i++;
      const hStart = i;
      while (i < end && u8[i]! >= 0x30 && u8[i]! <= 0x39) hours = hours * 10 + (u8[i++]! - 0x30);
      if (i - hStart > 15 || u8[i] !== COLON || i + 6 > end || u8[i + 3] !== COLON) return NOT_FAST;
      const m = two(u8, i + 1);
      const s = two(u8, i + 4);
      if (m < 0 || s < 0) return NOT_FAST;
      minutes = m;
      seconds = s;
      i += 6;
      if (i < end) {
        if (u8[i] !== 0x2e) return NOT_FAST;
        const fStart = ++i;
        let micros = 0;
        while (i < end && u8[i]! >= 0x30 && u8[i]! <= 0x39) micros = micros * 10 + (u8[i++]! - 0x30);
        const digits = i - fStart;
        if (i !== end || digits === 0 || digits > 6) return NOT_FAST;
        // postgres-interval pads the fraction to microseconds and divides by 1000.
        ms = (micros * 10 ** (6 - digits)) / 1000;
      }
    }
    // parseInt's -0 is falsy: postgres-interval leaves zero fields out, -0 too.
    if (fields[0]) out.years = fields[0];
    if (fields[1]) out.months = fields[1];
    if (fields[2]) out.days = fields[2];
    const sign = negative ? -1 : 1;
    if (hours) out.hours = hours * sign;
    if (minutes) out.minutes = minutes * sign;
    if (seconds) out.seconds = seconds * sign;
    if (ms) out.milliseconds = ms * sign;
    return out;
  };
}

function two(u8: Uint8Array, at: number): number {
  const a = u8[at]! - 0x30;
  const b = u8[at + 1]! - 0x30;
  return a < 0 || a > 9 || b < 0 || b > 9 ? -1 : a * 10 + b;
}
