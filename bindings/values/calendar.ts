/**
 * Proleptic Gregorian calendar arithmetic on plain numbers (no `Date`, whose
 * range stops at year 275760 while PostgreSQL's timestamps reach 294276 and
 * dates 5874897), and the text forms PostgreSQL prints with DateStyle ISO.
 * Years are astronomical here: 1 BC is year 0, 44 BC is year -43.
 */
import { POSTGRES_EPOCH_US } from "../time.ts";
import { civilOfDays, civilYear, civilMonth, civilDay } from "../kernel/civil.ts";

export const US_PER_DAY = 86_400_000_000;
export const US_PER_DAY_N = 86_400_000_000n;
/** Microseconds from 1970-01-01 to 2000-01-01 (PostgreSQL's epoch, time.ts), as a double (exact). */
export const PG_EPOCH_US = Number(POSTGRES_EPOCH_US);
/** Days from 1970-01-01 to 2000-01-01. */
export const PG_EPOCH_DAYS = PG_EPOCH_US / US_PER_DAY;

export { daysOfCivil as daysFromCivil } from "../kernel/civil.ts";

/** Scratch result of `civilFromDays` (year, month, day), reused to avoid an allocation per value. */
export const civil = { year: 0, month: 0, day: 0 };

/** Fills `civil` with the date `days` after 1970-01-01 (the kernel's civil.ts). */
export function civilFromDays(days: number): typeof civil {
  civilOfDays(days);
  civil.year = civilYear;
  civil.month = civilMonth;
  civil.day = civilDay;
  return civil;
}

export function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

function pad4(n: number): string {
  return n < 10 ? `000${n}` : n < 100 ? `00${n}` : n < 1000 ? `0${n}` : `${n}`;
}

/** A date as PostgreSQL prints it with DateStyle ISO: `YYYY-MM-DD`, BC years as `0044-03-15 BC`, years past 9999 in full. */
export function pgDateText(days: number): string {
  const c = civilFromDays(days);
  if (c.year > 0) return `${pad4(c.year)}-${pad2(c.month)}-${pad2(c.day)}`;
  return `${pad4(1 - c.year)}-${pad2(c.month)}-${pad2(c.day)} BC`;
}

/** `YYYY-MM-DD` in ISO 8601: years outside 0000-9999 expanded to a sign and six digits (`-000043-03-15`). */
export function iso8601DatePart(days: number): string {
  const c = civilFromDays(days);
  const y = c.year;
  const year = y >= 0 && y <= 9999 ? pad4(y) : `${y < 0 ? "-" : "+"}${String(Math.abs(y)).padStart(6, "0")}`;
  return `${year}-${pad2(c.month)}-${pad2(c.day)}`;
}

/** Fractional seconds as PostgreSQL prints them: `.` and up to six digits, trailing zeros dropped; "" for none. */
export function fraction(us: number): string {
  if (us === 0) return "";
  let s = String(us).padStart(6, "0");
  let end = 6;
  while (s.charCodeAt(end - 1) === 48) end--;
  if (end < 6) s = s.slice(0, end);
  return `.${s}`;
}

/** `HH:MM:SS` of microseconds since midnight, and the microseconds left. */
function hms(us: number): { text: string; frac: number } {
  const secs = Math.floor(us / 1_000_000);
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs - h * 3600) / 60);
  const s = secs - h * 3600 - m * 60;
  return { text: `${pad2(h)}:${pad2(m)}:${pad2(s)}`, frac: us - secs * 1_000_000 };
}

/** `HH:MM:SS[.ffffff]` of microseconds since midnight (0 ≤ us ≤ 24h), as PostgreSQL prints a time. */
export function timeOfDay(us: number): string {
  const { text, frac } = hms(us);
  return `${text}${fraction(frac)}`;
}

/** `+HH[:MM[:SS]]` of an offset in seconds east of UTC, as PostgreSQL prints a time zone. */
export function offsetText(eastSeconds: number): string {
  const sign = eastSeconds < 0 ? "-" : "+";
  let a = Math.abs(eastSeconds);
  const h = Math.floor(a / 3600);
  a -= h * 3600;
  const m = Math.floor(a / 60);
  const s = a - m * 60;
  if (s !== 0) return `${sign}${pad2(h)}:${pad2(m)}:${pad2(s)}`;
  if (m !== 0) return `${sign}${pad2(h)}:${pad2(m)}`;
  return `${sign}${pad2(h)}`;
}

/** `HH:MM:SS.ffffff` (always six fractional digits) of microseconds since midnight. */
export function clock6(us: number): string {
  const { text, frac } = hms(us);
  return `${text}.${String(frac).padStart(6, "0")}`;
}
