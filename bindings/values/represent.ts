/**
 * The date/time representations offered by the options, from the canonical
 * numbers both formats parse into. Each is exact except `"Date"` (ms).
 */
import { clock6, iso8601DatePart, offsetText, pgDateText, timeOfDay, US_PER_DAY, US_PER_DAY_N } from "./calendar.ts";
import { TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY } from "./text/datetime.ts";

/** date as PostgreSQL prints it (DateStyle ISO). */
export function dateString(days: number): string {
  if (days === Infinity) return "infinity";
  if (days === -Infinity) return "-infinity";
  return pgDateText(days);
}

/** date in ISO 8601 (`2024-02-29`, `-000043-03-15`, `+10000-01-01`); `infinity`/`-infinity`. */
export function dateISO(days: number): string {
  if (days === Infinity) return "infinity";
  if (days === -Infinity) return "-infinity";
  return iso8601DatePart(days);
}

/** date as a `Date` at UTC midnight; ±Infinity (numbers) for ±infinity, as pg-types does. */
export function dateDate(days: number): Date | number {
  if (days === Infinity || days === -Infinity) return days;
  return new Date(days * 86_400_000);
}

/** Splits µs since 1970 into whole days and µs within the day (scratch result). */
const split = { days: 0, us: 0 };
function splitMicros(us: bigint): typeof split {
  if (us > -9_007_199_254_740_991n && us < 9_007_199_254_740_991n) {
    const n = Number(us);
    split.days = Math.floor(n / US_PER_DAY);
    split.us = n - split.days * US_PER_DAY;
  } else {
    let days = us / US_PER_DAY_N;
    let rest = us % US_PER_DAY_N;
    if (rest < 0n) {
      rest += US_PER_DAY_N;
      days -= 1n;
    }
    split.days = Number(days);
    split.us = Number(rest);
  }
  return split;
}

/** timestamp(tz) as ISO 8601 with six fraction digits; `Z` for timestamptz; `infinity`/`-infinity`. */
export function timestampISO(us: bigint, utc: boolean): string {
  if (us === TIMESTAMP_INFINITY) return "infinity";
  if (us === TIMESTAMP_NEG_INFINITY) return "-infinity";
  const s = splitMicros(us);
  return `${iso8601DatePart(s.days)}T${clock6(s.us)}${utc ? "Z" : ""}`;
}

/** timestamp(tz) as a `Date` (ms, µs floored); ±Infinity (numbers) for ±infinity, as pg-types does. */
export function timestampDate(us: bigint): Date | number {
  if (us === TIMESTAMP_INFINITY) return Infinity;
  if (us === TIMESTAMP_NEG_INFINITY) return -Infinity;
  const s = splitMicros(us);
  return new Date(s.days * 86_400_000 + Math.floor(s.us / 1000));
}

/** time as PostgreSQL prints it. */
export function timeString(us: number): string {
  return timeOfDay(us);
}

/** timetz as PostgreSQL prints it. */
export function timetzString(us: number, eastSeconds: number): string {
  return timeOfDay(us) + offsetText(eastSeconds);
}

/** timetz with `time: "microseconds"`. */
export interface TimeTz {
  /** µs since midnight (local to the offset). */
  microseconds: number;
  /** Offset in seconds east of UTC (`+05:30` → 19800). */
  offset: number;
}
