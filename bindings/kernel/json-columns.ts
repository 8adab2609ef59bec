// jsonColumns: a tuple's columns as JSON bytes, straight from the tape
// (spec: bindings/jsonl-tape.ts). The value rules are those of
// bindings/jsonl/text-values.ts, which the writer runs for what this
// declines. Built twice from this source, as decode.ts is (portable.ts).
// Reads only what decode() bounds-checked (tape offsets, value lengths) and
// the binding's column table; writes only [out, out + outCapacity).
import {
  JSON_DONE, JSON_DECLINED, JSON_FULL, JSON_REFUSED, JF_KEYS, JF_NUMBERS_AS_STRINGS, JF_COMMA,
  JF_AS_PORTABLE, JF_SKIP_UNCHANGED, JF_NAMES_ONLY, JF_NO_CLOSE, JF_SKIP_NULL, JF_SPACED, JF_UNSENT_SKIPPED, JF_ONLY_UNSENT, JR_WRITTEN, JR_COLUMN, JR_FLAGS, JC_HEADER_WORDS, JC_WORDS, JC_KIND, JC_PREFIX, JC_PREFIX_LENGTH,
  JC_ELEMENT, JC_NAME_LENGTH, JSON_SLACK, JK_W2J_NUMBER, JK_W2J_BYTEA, JK_DBZ_DATE, JK_DBZ_FLOAT4, JK_DBZ_INTERVAL,
  JK_BOOL, JK_INT, JK_UINT, JK_INT8, JK_NUMERIC, JK_STRING, JK_JSON, JK_TIMESTAMP, JK_TIMESTAMPTZ, JK_FLOAT, JK_BYTEA,
  JK_INT_ARRAY, JK_INT8_ARRAY, JK_STRING_ARRAY, JK_INTERVAL, JK_FLOAT4,
  JB_BOOL, JB_INT2, JB_INT4, JB_UINT4, JB_INT8, JB_FLOAT4, JB_FLOAT8, JB_TEXT, JB_TIMESTAMP, JB_TIMESTAMPTZ, JB_DATE, JB_UUID, JB_NUMERIC, JB_JSON, JB_JSONB, JB_BYTEA, JB_INTERVAL,
  JB_ARRAY,
} from "../jsonl-tape.ts";
import { loadU8, storeU8, loadI16BE, loadI32BE, loadI32, storeI32, memoryBytes, divI32, u32AsF64, loadF64BE, loadF32BE, loadU64BE, wasmBuild, floatScratch, isoMinutes } from "./portable.ts";
import { shortest, shortDigits, shortLength, shortExponent } from "./shortest.ts";
import { debeziumValue } from "./json-debezium.ts";
import {
  putByte as put, copy, putHex, cursor, setCursor, setBounds, isDigit, putSigned, putDecimal, putText, putInt, putFraction, put2, afterDigits, writeString, copySequence,
} from "./json-out.ts";
import { floatText, layoutFloat, fNeg, fFirst, fLast, fDigits, fPoint, readInterval, intervalMonths, intervalDays, intervalMicros, two, decimalOf } from "./json-float.ts";
import { civilOfDays, civilOfDaysInt, civilYear, civilMonth, civilDay } from "./civil.ts";

const QUOTE: i32 = 0x22;
const BACKSLASH: i32 = 0x5c;

// Whether this call writes the values that take u64 arithmetic (JF_AS_PORTABLE): float4, float8 of 16-17
// digits and binary floats (Grisu3, shortest.ts), binary int8 past 2^53.
let u64Values = false;

function u8at(p: i32): i32 {
  return loadU8(<usize>p);
}

/** Writes tuple columns [from, ncols) as JSON (bindings/jsonl-tape.ts); returns a JSON_* status. */
export function jsonColumns(tuple: usize, old: usize, columns: usize, from: i32, flags: i32, out: usize, outCapacity: i32, result: usize): i32 {
  const size = memoryBytes();
  if (outCapacity < 0 || <u64>out + <u64>outCapacity > size || !tupleFits(tuple, old, columns, from, size)) return refuse(result, from, flags);
  setCursor(out);
  const status = columnsAt(tuple, old, columns, from, flags, out, out + <usize>outCapacity, size);
  storeI32(result + (JR_WRITTEN << 2), <i32>(cursor() - out));
  storeI32(result + (JR_COLUMN << 2), lastColumn);
  storeI32(result + (JR_FLAGS << 2), lastFlags);
  return status;
}

/** Whether the tuple, the old tuple (or 0) and the column table are in memory and agree (else jsonColumns refuses). */
export function tupleFits(tuple: usize, old: usize, columns: usize, from: i32, size: u64): bool {
  if (<u64>columns + 4 > size || <u64>tuple + 4 > size || <u64>old + 4 > size) return false;
  const n = loadI32(columns);
  if (n < 0 || loadI32(tuple) != n || from < 0 || from > n || <u64>columns + (<u64>JC_HEADER_WORDS + <u64>JC_WORDS * <u64>n) * 4 > size) return false;
  if (<u64>tuple + <u64>(1 + n) * 4 > size) return false;
  const oldN = old != 0 ? loadI32(old) : 0;
  return !(oldN < 0 || <u64>old + <u64>(1 + oldN) * 4 > size);
}

// Where columnsAt stopped: the column, and its flags with JF_COMMA as after what it wrote.
let lastColumn = 0;
let lastFlags = 0;

export function stopColumn(): i32 {
  return lastColumn;
}

export function stopFlags(): i32 {
  return lastFlags;
}

/**
 * Columns [from, ncols) at the cursor, up to `end`, of arguments tupleFits()
 * accepted; returns JSON_DONE, JSON_DECLINED or JSON_FULL. `start`: where
 * this call's output starts (a column that does not fit there is declined).
 */
export function columnsAt(tuple: usize, old: usize, columns: usize, from: i32, flags: i32, start: usize, end: usize, size: u64): i32 {
  const n = loadI32(columns);
  const oldN = old != 0 ? loadI32(old) : 0;
  let comma = (flags & JF_COMMA) != 0;
  const strings = (flags & JF_NUMBERS_AS_STRINGS) != 0;
  u64Values = wasmBuild() && (flags & JF_AS_PORTABLE) == 0;
  setBounds(end, <usize>size);
  let status = JSON_DONE;
  let i = from;
  for (; i < n; i++) {
    const c = columns + (<usize>(JC_HEADER_WORDS + JC_WORDS * i) << 2);
    const kindKey = loadI32(c + (JC_KIND << 2));
    if ((flags & JF_KEYS) != 0 && ((kindKey >> 8) & 1) == 0) continue;
    let at = loadI32(tuple + (<usize>(1 + i) << 2));
    // Offsets come from decode(), which checked them; checked again so that no argument can make this trap.
    if (at < 0 || <u64>at + 5 > size) { status = JSON_DECLINED; break; }
    let kind = u8at(at);
    if (kind == 0x75) {
      if ((flags & JF_SKIP_UNCHANGED) != 0) continue;
      // Unchanged TOAST: the old tuple's value, where it has one.
      if (i < oldN) {
        const oldAt = loadI32(old + (<usize>(1 + i) << 2));
        const k = oldAt >= 0 && <u64>oldAt + 5 <= size ? u8at(oldAt) : 0;
        if (k == 0x74 || k == 0x62) { at = oldAt; kind = k; }
      }
    }
    // Not sent, and no old value stands in (JF_UNSENT_SKIPPED, JF_ONLY_UNSENT).
    const unsent = kind == 0x75;
    if ((flags & JF_ONLY_UNSENT) != 0 ? !unsent : unsent && (flags & JF_UNSENT_SKIPPED) != 0) continue;
    if (kind == 0x6e && (flags & JF_SKIP_NULL) != 0) continue;
    if ((flags & JF_NAMES_ONLY) != 0) {
      const name = loadI32(c + (JC_PREFIX << 2));
      const nameLength = loadI32(c + (JC_NAME_LENGTH << 2));
      if (name < 0 || nameLength < 0 || <u64>name + <u64>nameLength > size) { status = JSON_DECLINED; break; }
      if (<u64>nameLength + JSON_SLACK > <u64>(end - cursor())) { status = cursor() == start ? JSON_DECLINED : JSON_FULL; break; }
      separator(comma, flags);
      copy(name, nameLength);
      if ((flags & JF_NO_CLOSE) == 0) put(0x7d);
      comma = true;
      continue;
    }
    // Text, NULL, or binary of a kind with a JB_* rule.
    const binary = kind == 0x62 ? (kindKey >> 16) & 0xff : 0;
    if (kind != 0x74 && kind != 0x6e && binary == 0) { status = JSON_DECLINED; break; }
    const len = kind != 0x6e ? loadI32BE(<usize>(at + 1)) : 0;
    const prefix = loadI32(c + (JC_PREFIX << 2));
    const prefixLength = loadI32(c + (JC_PREFIX_LENGTH << 2));
    if (len < 0 || <u64>at + 5 + <u64>len > size || prefix < 0 || prefixLength < 0 || <u64>prefix + <u64>prefixLength > size) { status = JSON_DECLINED; break; }
    // Exact for binary numeric (up to 4 digits per base-10000 digit of its weight, whatever its length) and
    // bytea (two hex digits a byte); a bound for an array: an element of k bytes takes 4 + k, and its JSON
    // with its comma at most 6(4 + k) (a string's escapes are at most 6 a byte, the fixed-size kinds print
    // in less, NULL is `null,`; numeric, which its bytes do not bound, is never an element here).
    const sized = binary == JB_NUMERIC || binary == JB_BYTEA || binary == JB_ARRAY;
    let need = <u64>prefixLength + (binary == JB_NUMERIC ? <u64>numericRoom(at + 5, len) : binary == JB_BYTEA ? 2 * <u64>len + 8 : <u64>len * 6) + JSON_SLACK;
    // A large value: what it takes exactly (escapes counted), before giving up on it.
    // (Other binary values than text and json print in at most 64 bytes.)
    if (need > <u64>(end - cursor()) && !sized) {
      const textKind = binary == 0 ? kindKey & 0xff : binary == JB_TEXT ? JK_STRING : binary == JB_JSON || binary == JB_JSONB ? JK_JSON : -1;
      need = <u64>prefixLength + <u64>(textKind < 0 ? 64 : room(textKind, at + 5, len)) + JSON_SLACK;
    }
    if (need > <u64>(end - cursor())) {
      // Nothing written yet: the column needs more than the whole output, so it is the binding's.
      status = cursor() == start ? JSON_DECLINED : JSON_FULL;
      break;
    }
    const mark = cursor();
    separator(comma, flags);
    copy(prefix, prefixLength);
    if (kind == 0x6e) {
      put(0x6e); put(0x75); put(0x6c); put(0x6c);
    } else if (
      binary == JB_ARRAY ? !binaryArray(kindKey >>> 24, loadI32(c + (JC_ELEMENT << 2)), at + 5, len, strings)
        : binary != 0 ? !binaryValue(binary, at + 5, len, strings) : !value(kindKey & 0xff, at + 5, len, strings)
    ) {
      setCursor(mark);
      status = JSON_DECLINED;
      break;
    }
    if ((flags & JF_NO_CLOSE) == 0) put(0x7d);
    comma = true;
  }
  lastColumn = i;
  lastFlags = comma ? flags | JF_COMMA : flags & ~JF_COMMA;
  return status;
}

/** The comma before a column after the first (and its space, JF_SPACED). */
function separator(comma: bool, flags: i32): void {
  if (!comma) return;
  put(0x2c);
  if ((flags & JF_SPACED) != 0) put(0x20);
}

function refuse(result: usize, from: i32, flags: i32): i32 {
  storeI32(result + (JR_WRITTEN << 2), 0);
  storeI32(result + (JR_COLUMN << 2), from);
  storeI32(result + (JR_FLAGS << 2), flags);
  return JSON_REFUSED;
}

/**
 * At most how many bytes the value's JSON takes beyond JSON_SLACK: its
 * length, plus per byte what its escape adds (strings, numeric's NaN text,
 * string array elements), plus the quotes a string array's elements gain.
 */
function room(kind: i32, p: i32, n: i32): i32 {
  // An interval's object: its three names and numbers, from as few as 8 bytes of text.
  if (kind == JK_INTERVAL || kind == JK_DBZ_INTERVAL) return n + 64;
  if (kind != JK_STRING && kind != JK_NUMERIC && kind != JK_STRING_ARRAY && kind != JK_W2J_NUMBER && kind != JK_W2J_BYTEA) return n + 2;
  let extra = 2;
  for (let i = p; i < p + n; i++) {
    const c = u8at(i);
    if (c == QUOTE || c == BACKSLASH || c == 8 || c == 9 || c == 10 || c == 12 || c == 13) extra += 1;
    else if (c < 0x20) extra += 5;
    else if (c == 0x2c && kind == JK_STRING_ARRAY) extra += 2;
  }
  return n + extra;
}

/** One text value's JSON at the cursor; false: the JS path's (the cursor may have moved: the caller resets it). */
function value(kind: i32, p: i32, n: i32, strings: bool): bool {
  switch (kind) {
    case JK_BOOL:
      if (n != 1) return false;
      if (u8at(p) == 0x74) { put(0x74); put(0x72); put(0x75); put(0x65); return true; }
      if (u8at(p) == 0x66) { put(0x66); put(0x61); put(0x6c); put(0x73); put(0x65); return true; }
      return false;
    case JK_INT:
      if (!canonicalInteger(p, n, true) || n > 11) return false;
      copy(p, n);
      return true;
    case JK_UINT:
      if (!canonicalInteger(p, n, false) || n > 10) return false;
      copy(p, n);
      return true;
    case JK_INT8:
      if (!canonicalInteger(p, n, true)) return false;
      quotedIf(p, n, strings);
      return true;
    case JK_NUMERIC:
      if (decimal(p, n)) quotedIf(p, n, strings);
      else return ascii(p, n) && writeString(p, n);
      return true;
    case JK_STRING:
      return writeString(p, n);
    case JK_JSON:
      return writeJson(p, n);
    case JK_TIMESTAMP:
    case JK_TIMESTAMPTZ:
      return writeTimestamp(p, n, kind == JK_TIMESTAMPTZ);
    case JK_FLOAT:
      return writeFloat(p, n);
    case JK_FLOAT4:
      return writeFloat4(p, n);
    case JK_BYTEA:
      return writeBytea(p, n);
    case JK_INTERVAL:
      return writeInterval(p, n, strings);
    case JK_INT_ARRAY:
    case JK_INT8_ARRAY:
    case JK_STRING_ARRAY:
      // Each array kind's elements are of the kind it is named after.
      return writeArray(p, n, kind == JK_INT_ARRAY ? JK_INT : kind == JK_INT8_ARRAY ? JK_INT8 : JK_STRING, strings);
    case JK_W2J_NUMBER:
      return wal2jsonNumber(p, n, strings);
    case JK_W2J_BYTEA:
      // wal2json drops the first two bytes, whatever they are (`\x` from byteaout).
      return n < 2 ? writeString(p + n, 0) : writeString(p + 2, n - 2);
    default:
      return kind >= JK_DBZ_DATE && kind <= JK_DBZ_FLOAT4 && debeziumValue(kind, p, n);
  }
}

/** wal2json's number (pg_decode_write_value): JK_W2J_NUMBER (jsonl-tape.ts). */
function wal2jsonNumber(p: i32, n: i32, strings: bool): bool {
  // Its special values are matched as a prefix, in any case (pg_strncasecmp: each byte | 0x20, so a CR stands for `-` too).
  const special = startsWithNoCase(p, n, 0x6e, 0x61, 0x6e, 0, 3) || startsWithInfinity(p, n) || (n > 0 && (u8at(p) | 0x20) == 0x2d && startsWithInfinity(p + 1, n - 1));
  let number = n > 0;
  for (let i = p; i < p + n && number; i++) {
    const c = u8at(i);
    number = isDigit(c) || c == 0x2b || c == 0x2d || c == 0x2e || c == 0x65 || c == 0x45;
  }
  if (strings && (number || special)) return writeString(p, n);
  if (special) {
    put(0x6e); put(0x75); put(0x6c); put(0x6c);
    return true;
  }
  if (number) {
    copy(p, n);
    return true;
  }
  return writeString(p, n);
}

/** Whether the text at p starts with the (lowercase ASCII) bytes a, b, c, d, any case, `length` of them. */
function startsWithNoCase(p: i32, n: i32, a: i32, b: i32, c: i32, d: i32, length: i32): bool {
  if (n < length) return false;
  const want = a | (b << 8) | (c << 16) | (d << 24);
  for (let i = 0; i < length; i++) if ((u8at(p + i) | 0x20) != (((want >>> (i << 3)) & 0xff) | 0x20)) return false;
  return true;
}

/** `Infinity`, any case, at p. */
function startsWithInfinity(p: i32, n: i32): bool {
  return startsWithNoCase(p, n, 0x69, 0x6e, 0x66, 0x69, 4) && startsWithNoCase(p + 4, n - 4, 0x6e, 0x69, 0x74, 0x79, 4);
}

/**
 * A one-dimensional text array in PostgreSQL's plain shape → a JSON array
 * of `element` values (text-arrays.ts); bounds decoration, nesting, white
 * space and a quoted element with an escape of a kind other than a string
 * (the JS path unescapes it): false.
 */
function writeArray(p: i32, n: i32, element: i32, strings: bool): bool {
  const end = p + n;
  if (n < 2 || u8at(p) != 0x7b || u8at(end - 1) != 0x7d) return false;
  put(0x5b);
  let i = p + 1;
  const last = end - 1;
  if (i == last) {
    put(0x5d);
    return true;
  }
  for (;;) {
    if (u8at(i) == QUOTE) {
      const start = ++i;
      let escaped = false;
      while (i < last && u8at(i) != QUOTE) {
        if (u8at(i) == BACKSLASH) {
          // `\x` stands for x: a string element's is unescaped as it is written; another kind's is the JS path's.
          if (element != JK_STRING) return false;
          escaped = true;
          i++;
        }
        i++;
      }
      if (i >= last || !(escaped ? writeString(start, i - start, true) : value(element, start, i - start, strings))) return false;
      i++;
    } else {
      const start = i;
      while (i < last && u8at(i) != 0x2c) {
        const c = u8at(i);
        if (c == QUOTE || c == BACKSLASH || c == 0x7b || c == 0x7d || c <= 0x20) return false;
        i++;
      }
      const len = i - start;
      if (len == 0) return false;
      if (len == 4 && (u8at(start) | 0x20) == 0x6e && (u8at(start + 1) | 0x20) == 0x75 && (u8at(start + 2) | 0x20) == 0x6c && (u8at(start + 3) | 0x20) == 0x6c) {
        put(0x6e); put(0x75); put(0x6c); put(0x6c);
      } else if (!value(element, start, len, strings)) return false;
    }
    if (i == last) break;
    if (u8at(i) != 0x2c) return false;
    i++;
    put(0x2c);
  }
  put(0x5d);
  return true;
}

function ascii(p: i32, n: i32): bool {
  for (let i = p; i < p + n; i++) if (u8at(i) >= 0x80) return false;
  return true;
}

function quotedIf(p: i32, n: i32, quoted: bool): void {
  if (quoted) put(QUOTE);
  copy(p, n);
  if (quoted) put(QUOTE);
}

/** PostgreSQL's ISO timestamp text (and `+00` for timestamptz) as timestampISO() prints it; else false. */
function writeTimestamp(p: i32, n: i32, zone: bool): bool {
  const body = zone ? n - 3 : n;
  if (body < 19 || body == 20 || body > 26) return false;
  if (zone && (u8at(p + body) != 0x2b || u8at(p + body + 1) != 0x30 || u8at(p + body + 2) != 0x30)) return false;
  // The seconds and the fraction; the date, hours and minutes are isoMinutes'.
  if (u8at(p + 16) != 0x3a || !isDigit(u8at(p + 17)) || !isDigit(u8at(p + 18))) return false;
  if (body > 19 && u8at(p + 19) != 0x2e) return false;
  for (let i = 20; i < body; i++) if (!isDigit(u8at(p + i))) return false;
  put(QUOTE);
  if (!isoMinutes(<usize>p, cursor())) return false;
  const year = two(p) * 100 + two(p + 2);
  const month = two(p + 5);
  const day = two(p + 8);
  if (year == 0 || month < 1 || month > 12 || day < 1 || day > 31 || two(p + 11) > 23 || two(p + 14) > 59 || two(p + 17) > 59) return false;
  setCursor(cursor() + 16);
  put(0x3a);
  put(u8at(p + 17));
  put(u8at(p + 18));
  put(0x2e);
  const digits = body > 19 ? body - 20 : 0;
  for (let i = 0; i < 6; i++) put(i < digits ? u8at(p + 20 + i) : 0x30);
  if (zone) put(0x5a);
  put(QUOTE);
  return true;
}

/**
 * float8 text → the JSON number JSON.stringify prints for its double
 * (Number::toString, ECMA-262 6.1.6.1.20). Those are the text's own
 * digits when the text is the shortest decimal of its double: always at
 * most 15 significant digits (DBL_DIG), and at 16 or 17 when Grisu3
 * (shortest.ts) gives back the same digits for the double they read as
 * (PostgreSQL 12+ prints shortest; a text that is not, such as
 * `0.10000000000000001`, prints shorter as a JS number and is the JS
 * path's). Only the layout differs: PostgreSQL writes an exponent outside
 * 1e-4..1e15 (`1e+15`, `1.5e-05`), JS outside 1e-6..1e21. Zero, NaN and
 * Infinity: the JS path's too.
 */
function writeFloat(p: i32, n: i32): bool {
  if (!floatText(p, n) || fDigits > 17) return false;
  if (fDigits > 15) {
    const m = fDigitsValue();
    const exponent = fPoint - fDigits;
    if (!shortestIs(m, exponent)) return false;
  }
  layoutFloat(fFirst, fLast, fDigits, fPoint, fNeg);
  return true;
}

/**
 * float4 text → the JSON number of Math.fround of its value, as the JS
 * path's textFloat4 makes it: a double that prints more digits than the
 * text (`0.14285715` → 0.1428571492433548), so its digits come from
 * Grisu3 (shortest.ts). PostgreSQL prints at most 9 digits, which with a
 * power of ten of at most 22 read exactly in one division (Clinger).
 */
function writeFloat4(p: i32, n: i32): bool {
  if (!u64Values || !floatText(p, n) || fDigits > 15) return false;
  const exponent = fPoint - fDigits;
  if (exponent < -22 || exponent > 22) return false;
  return writeShortest(<f64><f32>decimalOf(<f64>fDigitsValue(), exponent), fNeg);
}

/** v > 0 finite with the sign `neg`, as Number::toString prints it, from Grisu3's digits (u64Values only); else false. */
function writeShortest(v: f64, neg: bool): bool {
  if (!u64Values || !(v > 0) || v == Infinity || !shortest(v) || shortDigits % 10 == 0) return false;
  // The digits into the scratch, right to left, to be laid out as a text's would be.
  const at = floatScratch();
  let d = shortDigits;
  for (let k = shortLength - 1; k >= 0; k--) {
    storeU8(at + <usize>k, 0x30 + <i32>(d % 10));
    d /= 10;
  }
  layoutFloat(<i32>at, <i32>at + shortLength - 1, shortLength, shortLength + shortExponent, neg);
  return true;
}

/** One binary value's JSON at the cursor (its JB_* rule, bindings/jsonl-tape.ts); false: the JS path's. */
function binaryValue(kind: i32, p: i32, n: i32, strings: bool): bool {
  switch (kind) {
    case JB_BOOL:
      if (n != 1) return false;
      if (u8at(p) != 0) { put(0x74); put(0x72); put(0x75); put(0x65); }
      else { put(0x66); put(0x61); put(0x6c); put(0x73); put(0x65); }
      return true;
    case JB_INT2:
      if (n != 2) return false;
      putSigned(<f64>loadI16BE(<usize>p));
      return true;
    case JB_INT4:
      if (n != 4) return false;
      putSigned(<f64>loadI32BE(<usize>p));
      return true;
    case JB_UINT4:
      if (n != 4) return false;
      putDecimal(u32AsF64(loadI32BE(<usize>p)));
      return true;
    case JB_INT8: {
      if (n != 8) return false;
      const hi = loadI32BE(<usize>p);
      // Exact in a double: |v| < 2^53; beyond, the wasm build's u64.
      if (hi < -(1 << 21) || hi >= 1 << 21) return u64Values && putInt64(<usize>p, strings);
      if (strings) put(QUOTE);
      putSigned(<f64>hi * 4294967296.0 + u32AsF64(loadI32BE(<usize>p + 4)));
      if (strings) put(QUOTE);
      return true;
    }
    case JB_FLOAT4:
    case JB_FLOAT8: {
      if (n != (kind == JB_FLOAT4 ? 4 : 8)) return false;
      const v = kind == JB_FLOAT4 ? loadF32BE(<usize>p) : loadF64BE(<usize>p);
      return writeShortest(v < 0 ? -v : v, v < 0);
    }
    case JB_TEXT:
      return writeString(p, n);
    case JB_TIMESTAMP:
    case JB_TIMESTAMPTZ:
      return n == 8 && isoTime(<usize>p, kind == JB_TIMESTAMPTZ);
    case JB_DATE:
      return n == 4 && isoDate(loadI32BE(<usize>p));
    case JB_NUMERIC:
      return binaryNumeric(p, n, strings);
    case JB_JSON:
      return writeJson(p, n);
    case JB_JSONB:
      return n >= 1 && u8at(p) == 1 && writeJson(p + 1, n - 1);
    case JB_INTERVAL: {
      if (n != 16) return false;
      const hi = loadI32BE(<usize>p);
      if (hi < -(1 << 21) || hi >= 1 << 21) return false;
      const us = <f64>hi * 4294967296.0 + u32AsF64(loadI32BE(<usize>p + 4));
      putInterval(loadI32BE(<usize>p + 12), loadI32BE(<usize>p + 8), us, strings);
      return true;
    }
    case JB_BYTEA:
      put(QUOTE); put(BACKSLASH); put(BACKSLASH); put(0x78);
      for (let i = p; i < p + n; i++) putHex(u8at(i));
      put(QUOTE);
      return true;
    case JB_UUID:
      if (n != 16) return false;
      put(QUOTE);
      for (let i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) put(0x2d);
        putHex(u8at(p + i));
      }
      put(QUOTE);
      return true;
    default:
      return false;
  }
}

/**
 * A binary array of element type `oid` whose elements `kind` writes
 * (JB_ARRAY, bindings/jsonl-tape.ts), as the JS path reads it
 * (values/arrays.ts binaryArrayParser) and jsonText prints it; false: the
 * JS path's (its error, or its nested arrays).
 */
function binaryArray(kind: i32, oid: i32, p: i32, n: i32, strings: bool): bool {
  if (n < 12) return false;
  const ndim = loadI32BE(<usize>p);
  // As the JS parser: no dimensions is [], whatever follows.
  if (ndim == 0) { put(0x5b); put(0x5d); return true; }
  // A numeric element's JSON is not bounded by its bytes (its weight's zeros): not in the array's room.
  if (ndim != 1 || n < 20 || loadI32BE(<usize>(p + 8)) != oid || kind == JB_ARRAY || kind == JB_NUMERIC) return false;
  const count = loadI32BE(<usize>(p + 12));
  const end = p + n;
  let q = p + 20;
  // Every element takes at least its 4-byte length (the JS parser's check before it reads any).
  if (count < 0 || count > (end - q) >> 2) return false;
  put(0x5b);
  for (let i = 0; i < count; i++) {
    if (end - q < 4) return false;
    const size = loadI32BE(<usize>q);
    q += 4;
    if (i > 0) put(0x2c);
    if (size == -1) {
      put(0x6e); put(0x75); put(0x6c); put(0x6c);
      continue;
    }
    if (size < 0 || size > end - q || !binaryValue(kind, q, size, strings)) return false;
    q += size;
  }
  if (q != end) return false;
  put(0x5d);
  return true;
}

/** At most the bytes a binary numeric's digits take (a sign, a point, quotes, weight and dscale digits). */
function numericRoom(p: i32, n: i32): i32 {
  if (n < 8) return 0;
  const weight = loadI16BE(<usize>p + 2);
  const dscale = loadI16BE(<usize>p + 6) & 0xffff;
  return 4 + 4 * (weight < 0 ? 1 : weight + 1) + (dscale > 0 ? dscale + 5 : 0);
}

/**
 * A binary numeric ([ndigits][weight][sign][dscale], base-10000 digits) as
 * numeric_out prints it (what values/binary/numbers.ts makes): the integer
 * digits (`0` below weight 0), then exactly dscale fraction digits. NaN,
 * ±Infinity and anything numeric_recv refuses: false.
 */
function binaryNumeric(p: i32, n: i32, strings: bool): bool {
  if (n < 8) return false;
  const ndigits = loadI16BE(<usize>p);
  const weight = loadI16BE(<usize>p + 2);
  const sign = loadI16BE(<usize>p + 4) & 0xffff;
  const dscale = loadI16BE(<usize>p + 6) & 0xffff;
  if (ndigits < 0 || n != 8 + 2 * ndigits || (sign != 0 && sign != 0x4000) || dscale > 0x3fff) return false;
  for (let k = 0; k < ndigits; k++) {
    const d = loadI16BE(<usize>p + 8 + 2 * k);
    if (d < 0 || d > 9999) return false;
  }
  if (strings) put(QUOTE);
  if (sign == 0x4000) put(0x2d);
  if (weight < 0) put(0x30);
  else {
    for (let k = 0; k <= weight; k++) {
      const d = k < ndigits ? loadI16BE(<usize>p + 8 + 2 * k) : 0;
      if (k == 0) putDecimal(<f64>d);
      else put4(d, 4);
    }
  }
  if (dscale > 0) {
    put(0x2e);
    let left = dscale;
    for (let k = weight + 1; left > 0; k++) {
      const d = k >= 0 && k < ndigits ? loadI16BE(<usize>p + 8 + 2 * k) : 0;
      const take = left < 4 ? left : 4;
      put4(d, take);
      left -= take;
    }
  }
  if (strings) put(QUOTE);
  return true;
}

/** The first `take` of 0 <= d < 10000's four digits (leading zeros kept). */
function put4(d: i32, take: i32): void {
  const hi = divI32(d, 100);
  const lo = d - hi * 100;
  const a = divI32(hi, 10);
  put(0x30 + a);
  if (take > 1) put(0x30 + hi - a * 10);
  if (take > 2) put(0x30 + divI32(lo, 10));
  if (take > 3) put(0x30 + lo - divI32(lo, 10) * 10);
}

/**
 * A binary date (days since 2000-01-01) as the JSON string of PostgreSQL's
 * text, `"YYYY-MM-DD"`; ±infinity and years outside 1..9999 (` BC`, five
 * digits): false.
 */
function isoDate(d: i32): bool {
  if (d == -2147483648 || d == 2147483647) return false;
  civilOf(<f64>d + 10957.0);
  if (civilYear < 1 || civilYear > 9999) return false;
  put(QUOTE);
  putYmd(<i32>civilYear, <i32>civilMonth, <i32>civilDay);
  put(QUOTE);
  return true;
}

/** `YYYY-MM-DD` for a year 1..9999. */
function putYmd(y: i32, m: i32, d: i32): void {
  const c = divI32(y, 100);
  put2(c);
  put2(y - c * 100);
  put(0x2d);
  put2(m);
  put(0x2d);
  put2(d);
}

/** The big-endian int8 at p in decimal, quoted with `strings` (u64Values only: u64 arithmetic). */
function putInt64(p: usize, strings: bool): bool {
  let u = loadU64BE(p);
  const neg = u >> 63 != 0;
  if (neg) u = 0 - u; // two's complement: -2^63 is 2^63 as u64
  // At most 19 digits, right to left into the scratch.
  const at = floatScratch();
  let k = 24;
  do {
    k--;
    storeU8(at + <usize>k, 0x30 + <i32>(u % 10));
    u /= 10;
  } while (u != 0);
  if (strings) put(QUOTE);
  if (neg) put(0x2d);
  for (; k < 24; k++) put(loadU8(at + <usize>k));
  if (strings) put(QUOTE);
  return true;
}

/** The significant digits floatText() found, as an integer (exact: at most 17 of them here, below 2^63). */
function fDigitsValue(): u64 {
  let m: u64 = 0;
  for (let i = fFirst; i <= fLast; i++) {
    const c = u8at(i);
    if (c != 0x2e) m = m * 10 + <u64>(c - 0x30);
  }
  return m;
}


/**
 * Whether the double that m × 10^exponent (fDigits digits) reads as has m
 * for its shortest digits (u64Values only). A double whose shortest
 * digits are m is that double (they read back as it; no other double's
 * interval holds m), so it is enough that one of the doubles within two
 * units of the scaled value (which is within a unit or two of the true
 * one: m past 2^53 is rounded before it is scaled) matches. Grisu3 is
 * tried on the scaled value first, then on its neighbours: a 17-digit m
 * scales to the double it reads as about half the time.
 */
function shortestIs(m: u64, exponent: i32): bool {
  if (!u64Values || exponent < -22 || exponent > 22) return false;
  const v = decimalOf(<f64>m, exponent);
  if (shortestMatches(v, m, exponent)) return true;
  const bits = reinterpret<u64>(v);
  return shortestMatches(reinterpret<f64>(bits + 1), m, exponent) || shortestMatches(reinterpret<f64>(bits - 1), m, exponent)
    || shortestMatches(reinterpret<f64>(bits + 2), m, exponent) || shortestMatches(reinterpret<f64>(bits - 2), m, exponent);
}

/** Whether Grisu3 gives v's shortest digits, and they are m × 10^exponent's, fDigits of them. */
function shortestMatches(v: f64, m: u64, exponent: i32): bool {
  return shortest(v) && shortDigits == m && shortLength == fDigits && shortExponent == exponent;
}

/**
 * interval text in IntervalStyle postgres, as PostgreSQL prints it
 * (`[N year[s]] [N mon[s]] [N day[s]] [[+-]H+:MM:SS[.f{1,6}]]`, each part
 * once and in that order) → the JSON object textInterval's value prints:
 * `{"months":…,"days":…,"microseconds":…}` (microseconds quoted with
 * numbers as strings). Years above 7 digits, months and days above 9, or
 * hours above 6 (a sum that might pass i32, or µs 2^53): the JS path's, and
 * so is PostgreSQL 17's infinity.
 */
function writeInterval(p: i32, n: i32, strings: bool): bool {
  if (!readInterval(p, n)) return false;
  putInterval(intervalMonths, intervalDays, intervalMicros, strings);
  return true;
}

/** An interval's JSON object, `{"months":…,"days":…,"microseconds":…}` (the µs quoted with `strings`, as a bigint). */
function putInterval(months: i32, days: i32, micros: f64, strings: bool): void {
  putText('{"months":');
  putInt(months);
  putText(',"days":');
  putInt(days);
  putText(',"microseconds":');
  if (strings) put(QUOTE);
  putSigned(micros);
  if (strings) put(QUOTE);
  put(0x7d);
}

/**
 * The wire timestamp (µs since 2000-01-01, big-endian) at p as the JSON
 * string timestampToISO() makes (time.ts): `"YYYY-MM-DDTHH:MM:SS.ffffffZ"`
 * (a binary timestamp column's value too, without the Z for `timestamp`).
 * In doubles, exact below 2^53 µs; years outside 1..9999: false (Date's
 * text differs there), nothing written that the caller keeps.
 */
export function isoTime(p: usize, zone: bool): bool {
  if (!timeAt(p)) return false;
  put(QUOTE);
  dateAndTime(0x54);
  put(0x2e);
  putMicros(timeMicros);
  if (zone) put(0x5a);
  put(QUOTE);
  return true;
}

/**
 * The wire timestamp at p as the JSON string wal2json prints a commit time
 * (formats/wal2json-values.ts commitTimeText): `"YYYY-MM-DD HH:MM:SS.ffffff+00"`,
 * the fraction's trailing zeros dropped (with its point when it is 0);
 * years outside 1..9999: false, as isoTime.
 */
export function pgTime(p: usize): bool {
  if (!timeAt(p)) return false;
  put(QUOTE);
  dateAndTime(0x20);
  putFraction(timeMicros);
  put(0x2b); put(0x30); put(0x30);
  put(QUOTE);
  return true;
}

// The time timeAt() read: its second of the day and its microseconds (the date: timeYear, timeMonth, timeDay).
let timeSeconds = 0;
let timeMicros = 0;

/** Reads the wire timestamp at p into the time globals; years outside 1..9999: false. In doubles, exact below 2^53 µs. */
export function timeAt(p: usize): bool {
  const hi = loadI32BE(p);
  if (hi < -(1 << 20) || hi >= 1 << 20) return false;
  const n = <f64>hi * 4294967296.0 + u32AsF64(loadI32BE(p + 4)) + 946684800000000.0;
  const days = Math.floor(n / 86400000000.0);
  // The time of day in i32 (below 86,400 s and 10^6 µs), whose divisions by constants are multiplies.
  const inDay = n - days * 86400000000.0;
  const secs = Math.floor(inDay / 1000000.0);
  timeMicros = <i32>(inDay - secs * 1000000.0);
  timeSeconds = <i32>secs;
  // Consecutive transactions are mostly of one day: its date is worked out once.
  if (days != timeDays) {
    civilOf(days);
    if (civilYear < 1 || civilYear > 9999) return false;
    timeDays = days;
    timeYear = <i32>civilYear;
    timeMonth = <i32>civilMonth;
    timeDay = <i32>civilDay;
  }
  return true;
}

/** `YYYY-MM-DD`, the separator, `HH:MM:SS` of the time timeAt() read. */
function dateAndTime(separator: i32): void {
  const sod = timeSeconds;
  const h = divI32(sod, 3600);
  const mi = divI32(sod - h * 3600, 60);
  putYmd(timeYear, timeMonth, timeDay);
  put(separator);
  put2(h);
  put(0x3a);
  put2(mi);
  put(0x3a);
  put2(sod - h * 3600 - mi * 60);
}

/** 0 <= us < 10^6 as six digits. */
function putMicros(us: i32): void {
  const cs = divI32(us, 10000);
  const rest = us - cs * 10000;
  put2(cs);
  put2(divI32(rest, 100));
  put2(rest - divI32(rest, 100) * 100);
}

// The day isoTime() last wrote (days since 1970-01-01; NaN: none yet) and its date.
let timeDays: f64 = NaN;
let timeYear = 0;
let timeMonth = 0;
let timeDay = 0;

/** The civil date of `days` after 1970-01-01 (civil.ts), in i32 arithmetic where it fits. */
function civilOf(days: f64): void {
  if (days >= -719468.0 && days < 2000000000.0) civilOfDaysInt(<i32>days);
  else civilOfDays(days);
}

/** bytea's lowercase hex text `\x…` → the JSON string `"\\x…"`. */
function writeBytea(p: i32, n: i32): bool {
  if (n < 2 || u8at(p) != BACKSLASH || u8at(p + 1) != 0x78 || (n & 1) != 0) return false;
  for (let i = p + 2; i < p + n; i++) {
    const c = u8at(i);
    if (!(isDigit(c) || (c >= 0x61 && c <= 0x66))) return false;
  }
  put(QUOTE);
  put(BACKSLASH);
  copy(p, n);
  put(QUOTE);
  return true;
}

/** `-?(0|[1-9][0-9]*)`, and not `-0`. */
function canonicalInteger(p: i32, n: i32, signed: bool): bool {
  let i = p;
  const end = p + n;
  if (signed && i < end && u8at(i) == 0x2d) i++;
  if (i == end) return false;
  const first = u8at(i);
  if (first == 0x30) return i + 1 == end && i == p;
  if (first < 0x31 || first > 0x39) return false;
  for (i++; i < end; i++) if (!isDigit(u8at(i))) return false;
  return true;
}

/** `-?\d+(\.\d+)?` */
function decimal(p: i32, n: i32): bool {
  const end = p + n;
  const start = afterSign(p, end);
  let i = afterDigits(start, end);
  if (i == start) return false;
  if (i == end) return true;
  if (u8at(i) != 0x2e) return false;
  const frac = i + 1;
  i = afterDigits(frac, end);
  return i > frac && i == end;
}

/** After a leading `-`, if any. */
function afterSign(p: i32, end: i32): i32 {
  return p < end && u8at(p) == 0x2d ? p + 1 : p;
}

/** json/jsonb text embedded, each run of CR/LF one space; invalid UTF-8: false. */
function writeJson(p: i32, n: i32): bool {
  const end = p + n;
  let i = p;
  while (i < end) {
    const c = u8at(i);
    if (c == 10 || c == 13) {
      put(0x20);
      while (i < end && (u8at(i) == 10 || u8at(i) == 13)) i++;
    } else if (c < 0x80) {
      put(c);
      i++;
    } else {
      i = copySequence(i, end);
      if (i < 0) return false;
    }
  }
  return true;
}

