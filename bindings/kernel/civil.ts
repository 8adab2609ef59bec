// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's
// civil_from_days) and back (days_from_civil) in exact integer doubles: one source for the kernel's
// timestamps (json-lines.ts, built by asc and by tsc as decode.ts is) and
// for the JS value writers (values/calendar.ts's civilFromDays).
// `number` is f64 to asc.
import { divI32 } from "./portable.ts";

export let civilYear: number = 0;
export let civilMonth: number = 0;
export let civilDay: number = 0;

/**
 * civilOfDays for days from 0000-03-01 on (days >= -719468) that fit an
 * i32: the same steps in i32 arithmetic, whose divisions by constants are
 * multiplies (the kernel's dates and timestamps; z is never negative, so
 * truncating is flooring).
 */
export function civilOfDaysInt(days: i32): void {
  const z = days + 719468;
  const era = divI32(z, 146097);
  const doe = z - era * 146097;
  const yoe = divI32(doe - divI32(doe, 1460) + divI32(doe, 36524) - divI32(doe, 146096), 365);
  const doy = doe - (365 * yoe + divI32(yoe, 4) - divI32(yoe, 100));
  const mp = divI32(5 * doy + 2, 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  civilDay = <f64>(doy - divI32(153 * mp + 2, 5) + 1);
  civilMonth = <f64>month;
  civilYear = <f64>(yoe + era * 400 + (month <= 2 ? 1 : 0));
}

/** Days since 1970-01-01 of a civil date (any year, month 1-12, day 1-31; a day past its month's end runs into the next). */
export function daysOfCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400; // [0, 399]
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1; // March-based day of year
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy; // [0, 146096]
  return era * 146097 + doe - 719468;
}

export function civilOfDays(days: number): void {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  civilDay = doy - Math.floor((153 * mp + 2) / 5) + 1;
  civilMonth = mp < 10 ? mp + 3 : mp - 9;
  civilYear = yoe + era * 400 + (civilMonth <= 2 ? 1 : 0);
}
