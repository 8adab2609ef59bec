// Reading PostgreSQL's float and interval texts for the kernel's JSON
// writers (json-columns.ts, json-debezium.ts), the digit and decimal
// helpers they share, and laying out a float's digits as Number::toString
// does. Built twice from this source, as decode.ts is (portable.ts).
import { loadU8 } from "./portable.ts";
import { putByte as put, putDecimal, afterDigits, isDigit } from "./json-out.ts";

function u8at(p: i32): i32 {
  return loadU8(<usize>p);
}

/** The two ASCII digits at i as a number. */
export function two(i: i32): i32 {
  return (u8at(i) - 0x30) * 10 + u8at(i + 1) - 0x30;
}

/** m × 10^k for an integer m and |k| <= 22, each power of ten exact: one rounding, the double nearest, when m < 2^53 (Clinger); past it m is rounded first, and the result is within a unit or two. */
export function decimalOf(m: f64, k: i32): f64 {
  let scale = 1.0;
  for (let i = k < 0 ? -k : k; i > 0; i--) scale *= 10;
  return k < 0 ? m / scale : m * scale;
}

// What floatText() read: the sign, the significant digits at [fFirst, fLast] (a '.' among them
// is skipped), how many, and where the point goes: the value is 0.d1d2…dk × 10^fPoint.
export let fNeg = false;
export let fFirst = 0;
export let fLast = 0;
export let fDigits = 0;
export let fPoint = 0;

/** A float text `-?\d+(\.\d+)?(e[+-]\d{1,3})?` of a non-zero value into the f* globals; else false. */
export function floatText(p: i32, n: i32): bool {
  const end = p + n;
  if (n == 0) return false;
  const neg = u8at(p) == 0x2d;
  let i = neg ? p + 1 : p;
  // The mantissa's digits [i, mantissaEnd), a '.' at `dot` (or none: dot == mantissaEnd).
  const intStart = i;
  i = afterDigits(i, end);
  const dot = i;
  if (i == intStart) return false;
  if (i < end && u8at(i) == 0x2e) {
    const frac = i + 1;
    i = afterDigits(frac, end);
    if (i == frac) return false;
  }
  const mantissaEnd = i;
  let exponent = 0;
  if (i < end) {
    if (u8at(i) != 0x65 || i + 2 >= end || (u8at(i + 1) != 0x2b && u8at(i + 1) != 0x2d)) return false;
    const eStart = i + 2;
    i = afterDigits(eStart, end);
    if (i != end || i - eStart > 3) return false;
    for (let k = eStart; k < end; k++) exponent = exponent * 10 + u8at(k) - 0x30;
    if (u8at(eStart - 1) == 0x2d) exponent = -exponent;
  }
  // The significant digits: from the first non-zero one to the last.
  let first = intStart;
  while (first < mantissaEnd && (u8at(first) == 0x30 || u8at(first) == 0x2e)) first++;
  if (first == mantissaEnd) return false; // zero: 0 is the JS path's (and -0 prints as 0)
  let last = mantissaEnd - 1;
  while (u8at(last) == 0x30 || u8at(last) == 0x2e) last--;
  const point = (first < dot ? dot - first : dot - first + 1) + exponent;
  // Past any double's (1e-324..1e309): not a float PostgreSQL printed.
  if (point > 310 || point < -324) return false;
  fNeg = neg;
  fFirst = first;
  fLast = last;
  fDigits = last - first + 1 - (first < dot && last > dot ? 1 : 0);
  fPoint = point;
  return true;
}

/** Significant digits at [first, last] (a '.' among them skipped), `digits` of them, as Number::toString lays out 0.d1…dk × 10^point. */
export function layoutFloat(first: i32, last: i32, digits: i32, point: i32, neg: bool): void {
  if (neg) put(0x2d);
  if (digits <= point && point <= 21) {
    digitRun(first, last, 0, digits);
    for (let z = digits; z < point; z++) put(0x30);
  } else if (0 < point && point <= 21) {
    digitRun(first, last, 0, point);
    put(0x2e);
    digitRun(first, last, point, digits);
  } else if (-6 < point && point <= 0) {
    put(0x30);
    put(0x2e);
    for (let z = point; z < 0; z++) put(0x30);
    digitRun(first, last, 0, digits);
  } else {
    digitRun(first, last, 0, 1);
    if (digits > 1) {
      put(0x2e);
      digitRun(first, last, 1, digits);
    }
    put(0x65);
    const e = point - 1;
    put(e < 0 ? 0x2d : 0x2b);
    putDecimal(<f64>(e < 0 ? -e : e));
  }
}

/** Significant digits [from, to) (counted without the '.') of the digits at [first, last]. */
function digitRun(first: i32, last: i32, from: i32, to: i32): void {
  let k = 0;
  for (let i = first; i <= last && k < to; i++) {
    const c = u8at(i);
    if (c == 0x2e) continue;
    if (k >= from) put(c);
    k++;
  }
}

// What readInterval() read: PostgreSQL's three fields.
export let intervalMonths: i32 = 0;
export let intervalDays: i32 = 0;
export let intervalMicros: f64 = 0;

/** An interval text as json-columns.ts writeInterval takes it, into the interval* globals; else false. */
export function readInterval(p: i32, n: i32): bool {
  const end = p + n;
  let i = p;
  let months = 0;
  let days = 0;
  let micros: f64 = 0;
  let unit = 0; // the parts read so far: 1 year, 2 mon, 3 day, 4 time
  while (i < end) {
    if (unit > 0) {
      if (u8at(i) != 0x20 || ++i == end) return false;
    }
    const sign = u8at(i);
    const neg = sign == 0x2d;
    if (neg || sign == 0x2b) i++;
    const digitsStart = i;
    i = afterDigits(i, end);
    const width = i - digitsStart;
    if (width == 0) return false;
    if (i < end && u8at(i) == 0x3a) {
      // The time part, last: hours, minutes, seconds, a fraction.
      if (unit == 4 || width > 6 || i + 6 > end || u8at(i + 3) != 0x3a || !isDigit(u8at(i + 1)) || !isDigit(u8at(i + 2)) || !isDigit(u8at(i + 4)) || !isDigit(u8at(i + 5))) return false;
      let us: f64 = (<f64>digitsValue(digitsStart, i) * 3600 + <f64>(two(i + 1) * 60 + two(i + 4))) * 1000000;
      i += 6;
      if (i < end && u8at(i) == 0x2e) {
        const frac = ++i;
        i = afterDigits(frac, end);
        if (i == frac || i - frac > 6) return false;
        let f = digitsValue(frac, i);
        for (let k = i - frac; k < 6; k++) f *= 10;
        us += <f64>f;
      }
      if (i != end) return false;
      micros = neg ? -us : us;
      unit = 4;
      continue;
    }
    if (i >= end || u8at(i) != 0x20) return false;
    const v = digitsValue(digitsStart, i);
    const word = ++i;
    while (i < end && u8at(i) != 0x20) i++;
    const wordLength = i - word;
    if (wordLength == 0) return false;
    const plural = u8at(i - 1) == 0x73 ? 1 : 0;
    const c = u8at(word);
    let part = 0;
    if (c == 0x79 && wordLength - plural == 4 && u8at(word + 1) == 0x65 && u8at(word + 2) == 0x61 && u8at(word + 3) == 0x72 && width <= 7) part = 1;
    else if (c == 0x6d && wordLength - plural == 3 && u8at(word + 1) == 0x6f && u8at(word + 2) == 0x6e && width <= 9) part = 2;
    else if (c == 0x64 && wordLength - plural == 3 && u8at(word + 1) == 0x61 && u8at(word + 2) == 0x79 && width <= 9) part = 3;
    if (part <= unit) return false;
    unit = part;
    const signed = neg ? -v : v;
    if (part == 1) months += signed * 12;
    else if (part == 2) months += signed;
    else days = signed;
  }
  if (unit == 0) return false;
  intervalMonths = months;
  intervalDays = days;
  intervalMicros = micros;
  return true;
}

/** The value of the ASCII digits [p, end) (at most 9: below 2^31). */
function digitsValue(p: i32, end: i32): i32 {
  let v = 0;
  for (let i = p; i < end; i++) v = v * 10 + u8at(i) - 0x30;
  return v;
}
