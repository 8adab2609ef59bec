// Text timestamps parsed in the kernel: `YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM[:SS]]]`
// straight from the column bytes in memory, with no string made. Anything
// else (infinity, BC, more than six fraction digits, malformed text) is not
// parsed here and the binding falls back to the JS parser, which handles
// every form and reports errors: the two agree on every input this one
// accepts (test/kernel-values.test.ts). Built twice from this source, as
// decode.ts is (portable.ts); each build makes its own 64-bit integer of the
// answer (assembly/values.ts an i64, bindings/baseline/kernel.ts a bigint),
// the one step past doubles' exact range.
import { loadU8, memoryBytes, gtU32, divI32 } from "./portable.ts";

// The answer of a parse, in three i32s: whole days since 1970-01-01,
// seconds from that midnight UTC (the zone applied, so it may pass either
// end of the day) and the fraction's µs.
export let timestampDays: i32 = 0;
export let timestampSeconds: i32 = 0;
export let timestampFraction: i32 = 0;

// The parser's cursor.
let p: i32 = 0;
let end: i32 = 0;
let bad: bool = false;

/** Two digits → their value; anything else sets bad (and the parse fails however it goes on). */
function two(): i32 {
  if (end - p < 2) { bad = true; return 0; }
  const hi = loadU8(<usize>p) - 48;
  const lo = loadU8(<usize>(p + 1)) - 48;
  if (gtU32(hi, 9) || gtU32(lo, 9)) { bad = true; return 0; }
  p += 2;
  return hi * 10 + lo;
}

function expect(c: i32): void {
  if (p >= end || loadU8(<usize>p) != c) bad = true;
  else p++;
}

/** Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm; astronomical year 0-200000, so i32 throughout). */
function daysFromCivil(year: i32, month: i32, day: i32): i32 {
  const y = month <= 2 ? year - 1 : year;
  const era = divI32(y >= 0 ? y : y - 399, 400);
  const yoe = y - era * 400;
  const doy = divI32(153 * (month + (month > 2 ? -3 : 9)) + 2, 5) + day - 1;
  const doe = yoe * 365 + divI32(yoe, 4) - divI32(yoe, 100) + doy;
  return era * 146097 + doe - 719468;
}

/**
 * A text timestamp (withZone: timestamptz) at memory[offset, offset + length):
 * true with timestampDays, timestampSeconds and timestampFraction set, or
 * false to leave it to the JS parser. Every value stays far inside i32.
 */
export function parseTextTimestamp(offset: i32, length: i32, withZone: i32): bool {
  // Never read outside memory, whatever the caller passes.
  if (offset < 0 || length < 19 || <u64>offset + <u64>length > memoryBytes()) return false;
  p = offset;
  end = offset + length;
  bad = false;
  // Year: digits (PostgreSQL prints at least 4). Near PostgreSQL's last
  // year (294276) µs since 1970 pass 2^63: bigint's job, not i64's.
  let year: i32 = 0;
  let n = 0;
  while (p < end && n < 10) {
    const d = loadU8(<usize>p) - 48;
    if (gtU32(d, 9)) break;
    year = year * 10 + d;
    if (year > 200000) return false;
    p++;
    n++;
  }
  if (n == 0) return false;
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
  if (bad || month < 1 || month > 12 || day < 1 || day > 31) return false;
  let secs = (h * 60 + mi) * 60 + s;
  // The fraction's digits as µs, scaled up by multiplying: a division per digit cost both builds speed.
  let frac = 0;
  if (p < end && loadU8(<usize>p) == 0x2e) {
    p++;
    let k = 0;
    while (p < end) {
      const d = loadU8(<usize>p) - 48;
      if (gtU32(d, 9)) break;
      if (++k > 6) return false;
      frac = frac * 10 + d;
      p++;
    }
    if (k == 0) return false;
    for (; k < 6; k++) frac *= 10;
  }
  if (withZone) {
    const c = p < end ? loadU8(<usize>p) : 0;
    if (c != 0x2b && c != 0x2d) return false;
    p++;
    let zone = two() * 3600;
    if (p < end && loadU8(<usize>p) == 0x3a) {
      p++;
      zone += two() * 60;
      if (p < end && loadU8(<usize>p) == 0x3a) {
        p++;
        zone += two();
      }
    }
    secs -= c == 0x2d ? -zone : zone;
  }
  if (bad || p != end) return false;
  timestampDays = daysFromCivil(year, month, day);
  timestampSeconds = secs;
  timestampFraction = frac;
  return true;
}
