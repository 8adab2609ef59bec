/**
 * Binary forms (the `*_send` functions) of date, time, timetz, timestamp,
 * timestamptz and interval, into the same canonical numbers as the text
 * parsers: days since 1970-01-01, µs since midnight, µs since 1970-01-01.
 *
 *   date          Int32 days since 2000-01-01; INT32_MIN/MAX = -infinity/infinity
 *   time          Int64 µs since midnight
 *   timetz        Int64 µs since midnight, Int32 zone in seconds WEST of UTC
 *   timestamp(tz) Int64 µs since 2000-01-01 (UTC for tz); INT64_MIN/MAX = ∓infinity
 *   interval      Int64 µs, Int32 days, Int32 months
 */
import { expectLength, int32, int64, int64Number, invalid } from "../bytes.ts";
import { PG_EPOCH_DAYS, PG_EPOCH_US } from "../calendar.ts";
import { TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, type Interval } from "../text/datetime.ts";

/** date → days since 1970-01-01; ±Infinity for ±infinity. */
export function binaryDateDays(b: Uint8Array, off: number, len: number): number {
  expectLength("date", b, off, len, 4);
  const d = int32(b, off);
  if (d === -0x80000000) return -Infinity;
  if (d === 0x7fffffff) return Infinity;
  return d + PG_EPOCH_DAYS;
}

/** time → µs since midnight. */
export function binaryTimeMicros(b: Uint8Array, off: number, len: number): number {
  expectLength("time", b, off, len, 8);
  const us = int64Number(b, off);
  if (us === undefined || us < 0) throw invalid("time", b, off, len);
  return us;
}

/** timetz → µs since midnight; the offset (seconds east of UTC) in `lastZone`. */
export let lastZone = 0;
export function binaryTimetzMicros(b: Uint8Array, off: number, len: number): number {
  expectLength("timetz", b, off, len, 12);
  const us = int64Number(b, off);
  if (us === undefined || us < 0) throw invalid("timetz", b, off, len);
  lastZone = 0 - int32(b, off + 8);
  return us;
}

const US_2000 = BigInt(PG_EPOCH_US);

/** timestamp, timestamptz → µs since 1970-01-01; ±infinity stay at the int64 extremes. */
export function binaryTimestamp(b: Uint8Array, off: number, len: number): bigint {
  expectLength("timestamp", b, off, len, 8);
  const n = int64Number(b, off);
  // Both terms below 2^53 and the sum too (|n| < 2^53 − 2^50): exact.
  if (n !== undefined && n < 8_000_000_000_000_000 && n > -8_000_000_000_000_000) return BigInt(n + PG_EPOCH_US);
  const v = int64(b, off);
  if (v === TIMESTAMP_INFINITY || v === TIMESTAMP_NEG_INFINITY) return v;
  return v + US_2000;
}

/** interval → its three fields. */
export function binaryInterval(b: Uint8Array, off: number, len: number): Interval {
  expectLength("interval", b, off, len, 16);
  // PostgreSQL 17+'s ±infinity intervals are the fields' extremes, as the text parser gives them.
  return { months: int32(b, off + 12), days: int32(b, off + 8), microseconds: int64(b, off) };
}
