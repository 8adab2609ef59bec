// Debezium's JSON of the text values PostgreSQL prints (jsonl-tape.ts
// JK_DBZ_*), as formats/debezium-values.ts writes the JS values a decoder
// made with debeziumValueOptions() reads from the same text: built by asc
// and by tsc as json-columns.ts is. A text these rules do not read exactly
// as the JS path does (an invalid date, a seventh fraction digit, a year
// outside 1-9999) is declined: false, and the caller drops what was
// written. Every number here is an integer below 2^53, exact in a double.
import {
  JK_DBZ_DATE, JK_DBZ_TIMESTAMP_US, JK_DBZ_TIMESTAMP_MS, JK_DBZ_TIME_US, JK_DBZ_TIME_MS, JK_DBZ_TIMESTAMPTZ, JK_DBZ_DECIMAL, JK_DBZ_BASE64,
  JK_DBZ_BASE64_URL, JK_DBZ_HEX, JK_DBZ_INTERVAL, JK_DBZ_FLOAT4,
} from "../jsonl-tape.ts";
import { loadU8, divI32, fround } from "./portable.ts";
import { civilOfDaysInt, civilYear, civilMonth, civilDay, daysOfCivil } from "./civil.ts";
import { putByte, putSigned, putDecimal, copy, writeString, isDigit, putFraction } from "./json-out.ts";
import { floatText, layoutFloat, fNeg, fFirst, fLast, fDigits, fPoint, readInterval, intervalMonths, intervalDays, intervalMicros, two, decimalOf } from "./json-float.ts";

const QUOTE: i32 = 0x22;
const US_PER_DAY: f64 = 86400000000.0;
const EXACT: f64 = 9007199254740992.0; // 2^53

function u8at(p: i32): i32 {
  return loadU8(<usize>p);
}

/** Whether the n bytes at p are ASCII digits. */
function digitsAt(p: i32, n: i32): bool {
  for (let i = p; i < p + n; i++) if (!isDigit(u8at(i))) return false;
  return true;
}

// What date() and clock() read.
let days: f64 = 0;
let micros: f64 = 0;

/** `YYYY-MM-DD` at p, a real date of years 1-9999, into `days` (since 1970-01-01); else false. */
function date(p: i32): bool {
  if (!digitsAt(p, 4) || u8at(p + 4) != 0x2d || !digitsAt(p + 5, 2) || u8at(p + 7) != 0x2d || !digitsAt(p + 8, 2)) return false;
  const year = two(p) * 100 + two(p + 2);
  const month = two(p + 5);
  const day = two(p + 8);
  if (year == 0 || month < 1 || month > 12 || day < 1) return false;
  const d = <i32>daysOfCivil(<f64>year, <f64>month, <f64>day);
  // A day past its month's end would run into the next month: the date back from its days says.
  civilOfDaysInt(d);
  if (<i32>civilDay != day || <i32>civilMonth != month || <i32>civilYear != year) return false;
  days = <f64>d;
  return true;
}

/** `HH:MM:SS[.f{1,6}]`, hours to 23, filling [p, end) into `micros` (since midnight); else false. */
function clock(p: i32, end: i32): bool {
  const n = end - p;
  if (n < 8 || n == 9 || n > 15 || !digitsAt(p, 2) || u8at(p + 2) != 0x3a || !digitsAt(p + 3, 2) || u8at(p + 5) != 0x3a || !digitsAt(p + 6, 2)) return false;
  const h = two(p);
  const m = two(p + 3);
  const s = two(p + 6);
  if (h > 23 || m > 59 || s > 59) return false;
  let f = 0;
  if (n > 8) {
    if (u8at(p + 8) != 0x2e || !digitsAt(p + 9, n - 9)) return false;
    for (let i = 0; i < 6; i++) f = f * 10 + (9 + i < n ? u8at(p + 9 + i) - 0x30 : 0);
  }
  micros = <f64>((h * 60 + m) * 60 + s) * 1000000.0 + <f64>f;
  return true;
}

/** `YYYY-MM-DD HH:MM:SS[.f]` filling [p, end) into `days` and `micros`; else false. */
function timestamp(p: i32, end: i32): bool {
  return end - p >= 19 && date(p) && u8at(p + 10) == 0x20 && clock(p + 11, end);
}

/** One value of a JK_DBZ_* kind at the cursor; false: the JS path's. */
export function debeziumValue(kind: i32, p: i32, n: i32): bool {
  switch (kind) {
    case JK_DBZ_DATE:
      if (n != 10 || !date(p)) return false;
      putSigned(days);
      return true;
    case JK_DBZ_TIMESTAMP_US: {
      if (!timestamp(p, p + n)) return false;
      const us = days * US_PER_DAY + micros;
      if (us >= EXACT || us <= -EXACT) return false;
      putSigned(us);
      return true;
    }
    case JK_DBZ_TIMESTAMP_MS:
      // The day's ms are whole: flooring the µs of the day floors the whole.
      if (!timestamp(p, p + n)) return false;
      putSigned(days * 86400000.0 + Math.floor(micros / 1000.0));
      return true;
    case JK_DBZ_TIME_US:
    case JK_DBZ_TIME_MS:
      if (!clock(p, p + n)) return false;
      putDecimal(kind == JK_DBZ_TIME_MS ? Math.floor(micros / 1000.0) : micros);
      return true;
    case JK_DBZ_TIMESTAMPTZ:
      return zonedTimestamp(p, n);
    case JK_DBZ_DECIMAL:
      // numeric's text, NaN and ±Infinity aside (Debezium names them: the JS path's).
      if (n == 0 || !(isDigit(u8at(p)) || (u8at(p) == 0x2d && n > 1 && isDigit(u8at(p + 1))))) return false;
      return writeString(p, n);
    case JK_DBZ_BASE64:
    case JK_DBZ_BASE64_URL:
    case JK_DBZ_HEX:
      return bytea(kind, p, n);
    case JK_DBZ_INTERVAL:
      return interval(p, n);
    case JK_DBZ_FLOAT4:
      return writeFloat4Digits(p, n);
    default:
      return false;
  }
}

/** timestamptz `…+00` as ZonedTimestamp prints it in UTC: `"YYYY-MM-DDTHH:MM:SS.ffffffZ"`. */
function zonedTimestamp(p: i32, n: i32): bool {
  const end = p + n - 3;
  if (n < 22 || u8at(end) != 0x2b || u8at(end + 1) != 0x30 || u8at(end + 2) != 0x30 || !timestamp(p, end)) return false;
  putByte(QUOTE);
  copy(p, 10);
  putByte(0x54);
  copy(p + 11, 8);
  putByte(0x2e);
  for (let i = p + 19 + 1; i < p + 19 + 7; i++) putByte(i < end ? u8at(i) : 0x30);
  putByte(0x5a);
  putByte(QUOTE);
  return true;
}

function hexValue(c: i32): i32 {
  if (isDigit(c)) return c - 0x30;
  return c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
}

/** bytea `\x` and lowercase hex as Debezium's bytes: base64 (URL-safe: `-_` for `+/`, padded still) or hex. */
function bytea(kind: i32, p: i32, n: i32): bool {
  if (n < 2 || u8at(p) != 0x5c || u8at(p + 1) != 0x78 || (n & 1) != 0) return false;
  for (let i = p + 2; i < p + n; i++) if (hexValue(u8at(i)) < 0) return false;
  putByte(QUOTE);
  if (kind == JK_DBZ_HEX) copy(p + 2, n - 2);
  else {
    const url = kind == JK_DBZ_BASE64_URL;
    const bytes = (n - 2) >> 1;
    let i = p + 2;
    let left = bytes;
    for (; left >= 3; left -= 3, i += 6) {
      const v = (byteAt(i) << 16) | (byteAt(i + 2) << 8) | byteAt(i + 4);
      sextets(v, 4, url);
    }
    if (left == 2) {
      sextets((byteAt(i) << 16) | (byteAt(i + 2) << 8), 3, url);
      putByte(0x3d);
    } else if (left == 1) {
      sextets(byteAt(i) << 16, 2, url);
      putByte(0x3d);
      putByte(0x3d);
    }
  }
  putByte(QUOTE);
  return true;
}

function byteAt(i: i32): i32 {
  return (hexValue(u8at(i)) << 4) | hexValue(u8at(i + 1));
}

/** The first `count` of the four base64 digits of the 24 bits v. */
function sextets(v: i32, count: i32, url: bool): void {
  for (let k = 0; k < count; k++) {
    const x = (v >> (18 - 6 * k)) & 63;
    putByte(x < 26 ? 0x41 + x : x < 52 ? 0x47 + x : x < 62 ? x - 4 : x == 62 ? (url ? 0x2d : 0x2b) : (url ? 0x5f : 0x2f));
  }
}

/**
 * interval as io.debezium.time.Interval prints it: `"P<y>Y<m>M<d>DT<h>H<min>M<s>S"`,
 * years and months from the months, hours, minutes and seconds from the µs,
 * each truncated toward zero with the sign of its part; the seconds'
 * fraction without trailing zeros.
 */
function interval(p: i32, n: i32): bool {
  if (!readInterval(p, n)) return false;
  const months = intervalMonths;
  const us = intervalMicros;
  putByte(QUOTE);
  putByte(0x50);
  // Truncated toward zero, the remainder with the months' sign (JS's `/` truncated and `%`).
  const years = divI32(months, 12);
  putSigned(<f64>years);
  putByte(0x59);
  putSigned(<f64>(months - years * 12));
  putByte(0x4d);
  putSigned(<f64>intervalDays);
  putByte(0x44);
  putByte(0x54);
  // Its parts, truncated toward zero as a bigint's division is, in doubles: µs below 3.6e15 (hours of six
  // digits), so a quotient short of an integer by 1/b at least never rounds up to it.
  const neg = us < 0;
  const abs = neg ? -us : us;
  const hours = Math.floor(abs / 3600000000.0);
  const minutes = Math.floor((abs - hours * 3600000000.0) / 60000000.0);
  const rest = abs - hours * 3600000000.0 - minutes * 60000000.0;
  putSigned(neg ? -hours : hours);
  putByte(0x48);
  putSigned(neg ? -minutes : minutes);
  putByte(0x4d);
  if (neg && rest != 0) putByte(0x2d);
  const whole = Math.floor(rest / 1000000.0);
  putDecimal(whole);
  putFraction(<i32>(rest - whole * 1000000.0));
  putByte(0x53);
  putByte(QUOTE);
  return true;
}

/**
 * float4 text → Debezium's number (formats/debezium-values.ts float32Text:
 * the first of 1 to 8 digits whose rounding of the float reads back as it,
 * what Java's Float.toString gives), when that is the text's own digits.
 * At most six always are: two such decimals lie at least eight float ulps
 * apart. Seven or eight are when neither decimal of one digit fewer beside
 * the text reads as the same float, and the float lies strictly between
 * the midpoints to the text's neighbours of as many digits (else one of
 * those is nearer): compared in doubles, each decimal read exactly with
 * powers of ten within ±22 (Clinger), so the float's place against it is
 * exact. Else false, nothing written.
 */
export function writeFloat4Digits(p: i32, n: i32): bool {
  if (!floatText(p, n) || fDigits > 8 || fPoint > 30 || fPoint < -30) return false;
  if (fDigits > 6) {
    let m: f64 = 0;
    for (let i = fFirst; i <= fLast; i++) if (u8at(i) != 0x2e) m = m * 10 + <f64>(u8at(i) - 0x30);
    const k = fPoint - fDigits;
    if (k - 1 < -22 || k + 1 > 22) return false;
    const v = fround(decimalOf(m, k));
    const shorter = Math.floor(m / 10);
    if (fround(decimalOf(shorter, k + 1)) == v || fround(decimalOf(shorter + 1, k + 1)) == v) return false;
    if (!(decimalOf(m * 10 - 5, k - 1) < v && v < decimalOf(m * 10 + 5, k - 1))) return false;
  }
  layoutFloat(fFirst, fLast, fDigits, fPoint, fNeg);
  return true;
}
