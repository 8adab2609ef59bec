// Text timestamps parsed in the kernel: `YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM[:SS]]]`
// straight from the column bytes in memory to µs since the Unix epoch, with
// no string made. Anything else (infinity, BC, more than six fraction
// digits, malformed text) returns NOT_PARSED and the binding falls back to
// the JS parser, which handles every form and reports errors: the two agree
// on every input this one accepts (test/kernel-values.test.ts).

/** Not parsed here; let the JS parser decide. No timestamp maps to it (the earliest, 4713 BC, is about -2^57.5). */
export const NOT_PARSED: i64 = i64.MIN_VALUE + 1;

let p: i32 = 0;
let end: i32 = 0;
let bad: bool = false;

@inline function digit(): i64 {
  if (p >= end) { bad = true; return 0; }
  const d = <i32>load<u8>(<usize>p) - 48;
  if (<u32>d > 9) { bad = true; return 0; }
  p++;
  return <i64>d;
}

@inline function two(): i64 {
  const hi = digit();
  return hi * 10 + digit();
}

@inline function expect(c: i32): void {
  if (p >= end || <i32>load<u8>(<usize>p) != c) bad = true;
  else p++;
}

/** Days from 1970-01-01 to a proleptic Gregorian date (astronomical year). */
function daysFromCivil(year: i64, month: i64, day: i64): i64 {
  const y = month <= 2 ? year - 1 : year;
  const era = (y >= 0 ? y : y - 399) / 400;
  const yoe = y - era * 400;
  const doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/** A text timestamp (withZone: timestamptz) at memory[offset, offset + length) → µs since 1970-01-01 UTC, or NOT_PARSED. */
export function textTimestamp(offset: i32, length: i32, withZone: i32): i64 {
  // Never read outside memory, whatever the caller passes.
  if (offset < 0 || length < 19 || <u64>offset + <u64>length > (<u64>memory.size() << 16)) return NOT_PARSED;
  p = offset;
  end = offset + length;
  bad = false;
  // Year: digits (PostgreSQL prints at least 4).
  let year: i64 = 0;
  let n = 0;
  while (p < end && n < 10) {
    const d = <i32>load<u8>(<usize>p) - 48;
    if (<u32>d > 9) break;
    year = year * 10 + d;
    p++;
    n++;
  }
  // Near PostgreSQL's last year (294276) µs since 1970 pass 2^63: bigint's job, not i64's.
  if (n == 0 || year > 200000) return NOT_PARSED;
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
  let us: i64 = ((h * 60 + mi) * 60 + s) * 1000000;
  if (p < end && load<u8>(<usize>p) == 0x2e) {
    p++;
    let scale: i64 = 100000;
    let k = 0;
    while (p < end) {
      const d = <i32>load<u8>(<usize>p) - 48;
      if (<u32>d > 9) break;
      if (++k > 6) return NOT_PARSED;
      us += <i64>d * scale;
      scale /= 10;
      p++;
    }
    if (k == 0) return NOT_PARSED;
  }
  if (withZone) {
    const c = p < end ? <i32>load<u8>(<usize>p) : 0;
    if (c != 0x2b && c != 0x2d) return NOT_PARSED;
    p++;
    let secs = two() * 3600;
    if (p < end && load<u8>(<usize>p) == 0x3a) {
      p++;
      secs += two() * 60;
      if (p < end && load<u8>(<usize>p) == 0x3a) {
        p++;
        secs += two();
      }
    }
    us -= (c == 0x2d ? -secs : secs) * 1000000;
  }
  if (bad || p != end) return NOT_PARSED;
  return daysFromCivil(year, month, day) * 86400000000 + us;
}
