/**
 * A text-format column value → its JSON bytes, straight from the UTF-8
 * bytes in the decoder's memory, for the built-in types whose JSON the
 * change lines (jsonl/json-text.ts, `changeValueOptions()`) derive
 * from the text alone. Each case writes exactly what
 * `jsonText(values.text(oid, …))` writes; a value outside the simple
 * shapes (a number PostgreSQL would not print, invalid UTF-8) is declined
 * (`false`) and goes through the JS values instead.
 */
import type { ByteSink } from "./sink.ts";
import { writeTextArray } from "./text-arrays.ts";
import {
  JK_DECLINE, JK_BOOL, JK_INT, JK_UINT, JK_INT8, JK_NUMERIC, JK_STRING, JK_JSON, JK_TIMESTAMP, JK_TIMESTAMPTZ, JK_FLOAT, JK_BYTEA,
  JK_INT_ARRAY, JK_INT8_ARRAY, JK_STRING_ARRAY, JK_INTERVAL, JK_FLOAT4,
  JB_DECLINE, JB_BOOL, JB_INT2, JB_INT4, JB_UINT4, JB_INT8, JB_FLOAT4, JB_FLOAT8, JB_TEXT, JB_TIMESTAMP, JB_TIMESTAMPTZ, JB_DATE, JB_UUID, JB_NUMERIC, JB_JSON, JB_JSONB, JB_BYTEA, JB_INTERVAL, JB_ARRAY,
} from "../jsonl-tape.ts";
import { arrayElement } from "../values/oids.ts";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const HEX = "0123456789abcdef";

const enum K { Bool, Int, Uint, Int8, Numeric, String, Json, Timestamp, Timestamptz, Float, Bytea, IntArray, Int8Array, StringArray, Interval, Float4 }

/** K → the kernel's column kind (bindings/jsonl-tape.ts): the same rules, in kernel/json-columns.ts. */
const KERNEL_KIND: Record<number, number> = {
  [K.Bool]: JK_BOOL, [K.Int]: JK_INT, [K.Uint]: JK_UINT, [K.Int8]: JK_INT8, [K.Numeric]: JK_NUMERIC, [K.String]: JK_STRING,
  [K.Json]: JK_JSON, [K.Timestamp]: JK_TIMESTAMP, [K.Timestamptz]: JK_TIMESTAMPTZ, [K.Float]: JK_FLOAT, [K.Bytea]: JK_BYTEA,
  [K.IntArray]: JK_INT_ARRAY, [K.Int8Array]: JK_INT8_ARRAY, [K.StringArray]: JK_STRING_ARRAY, [K.Interval]: JK_INTERVAL, [K.Float4]: JK_FLOAT4,
};

/** How the kernel's jsonColumns writes a text value of this OID (JK_DECLINE: this file's or the JS values'). */
export function kernelKind(oid: number): number {
  const k = KIND[oid];
  return k === undefined ? JK_DECLINE : (KERNEL_KIND[k] ?? JK_DECLINE);
}

/** OID → how the kernel's jsonColumns writes its binary value (bindings/jsonl-tape.ts JB_*): what the JS binary parsers make of it, written as jsonText() would. */
const BINARY_KIND: Record<number, number> = {
  16: JB_BOOL, 21: JB_INT2, 23: JB_INT4, 26: JB_UINT4, 28: JB_UINT4, 29: JB_UINT4, 20: JB_INT8, 700: JB_FLOAT4, 701: JB_FLOAT8,
  25: JB_TEXT, 1043: JB_TEXT, 1042: JB_TEXT, 19: JB_TEXT, 1114: JB_TIMESTAMP, 1184: JB_TIMESTAMPTZ, 1082: JB_DATE, 2950: JB_UUID, 1700: JB_NUMERIC, 114: JB_JSON, 3802: JB_JSONB, 17: JB_BYTEA, 1186: JB_INTERVAL,
};

/**
 * How the kernel's jsonColumns writes a binary value of this OID (JB_DECLINE: the JS values'): a
 * built-in array of elements with a rule is JB_ARRAY (the JS binaryArrayParser's elements are the
 * element type's own parser, so each prints as that type's value), but for numeric, whose JSON
 * its bytes do not bound.
 */
export function binaryKernelKind(oid: number): number {
  const element = arrayElement(oid);
  if (element === 0) return BINARY_KIND[oid] ?? JB_DECLINE;
  const rule = BINARY_KIND[element];
  return rule === undefined || rule === JB_NUMERIC ? JB_DECLINE : JB_ARRAY;
}

/** OID → how its text becomes JSON (only built-in OIDs: no `types` or Type message re-maps them). */
const KIND: Record<number, K> = {
  16: K.Bool,
  21: K.Int, 23: K.Int,
  26: K.Uint, 28: K.Uint, 29: K.Uint,
  20: K.Int8,
  1700: K.Numeric,
  // text, varchar, bpchar, name, "char", uuid, money ("string"), date, time, timetz ("string"), xml, refcursor, unknown
  25: K.String, 1043: K.String, 1042: K.String, 19: K.String, 18: K.String, 2950: K.String, 790: K.String,
  1082: K.String, 1083: K.String, 1266: K.String, 142: K.String, 1790: K.String, 705: K.String,
  114: K.Json, 3802: K.Json,
  // `timestamp: "iso"`
  1114: K.Timestamp, 1184: K.Timestamptz,
  701: K.Float,
  // the kernel's only: float4 goes through Math.fround, whose double prints more digits than the text
  700: K.Float4,
  17: K.Bytea,
  // int2[], int4[]; int8[]; text[], varchar[], bpchar[], name[]
  1005: K.IntArray, 1007: K.IntArray, 1016: K.Int8Array, 1009: K.StringArray, 1015: K.StringArray, 1014: K.StringArray, 1003: K.StringArray,
  // the kernel's only (jsonColumns): here, the JS values' textInterval
  1186: K.Interval,
};

/** Writes the JSON of a text value; `false` (nothing written) when the JS path must do it. */
export function writeTextValue(out: ByteSink, oid: number, u8: Uint8Array, p: number, n: number, numbersAsStrings: boolean): boolean {
  switch (KIND[oid]) {
    case K.Bool:
      if (n !== 1) return false;
      if (u8[p] === 0x74) { out.str("true"); return true; }
      if (u8[p] === 0x66) { out.str("false"); return true; }
      return false;
    case K.Int:
      // A JS number: JSON.stringify prints the same digits for PostgreSQL's canonical int2/int4 text.
      if (!canonicalInteger(u8, p, n, true) || n > 11) return false;
      out.bytes(u8, p, p + n);
      return true;
    case K.Uint:
      if (!canonicalInteger(u8, p, n, false) || n > 10) return false;
      out.bytes(u8, p, p + n);
      return true;
    case K.Int8:
      // A bigint: its decimal digits, quoted with numbersAsStrings.
      if (!canonicalInteger(u8, p, n, true)) return false;
      quotedIf(out, u8, p, n, numbersAsStrings);
      return true;
    case K.Numeric:
      // RawJson when /^-?\d+(?:\.\d+)?$/ matches, else (NaN, Infinity) the text as a string.
      if (decimal(u8, p, n)) quotedIf(out, u8, p, n, numbersAsStrings);
      // numeric's text is read as Latin-1 (it is ASCII from the server): anything else is the JS path's.
      else return ascii(u8, p, n) && writeString(out, u8, p, n);
      return true;
    case K.String:
      return writeString(out, u8, p, n);
    case K.Json:
      return writeJson(out, u8, p, n);
    case K.Timestamp:
      return writeTimestamp(out, u8, p, n, false);
    case K.Timestamptz:
      return writeTimestamp(out, u8, p, n, true);
    case K.Float:
      if (!plainFloat(u8, p, n)) return false;
      out.bytes(u8, p, p + n);
      return true;
    case K.Bytea:
      return writeBytea(out, u8, p, n);
    case K.IntArray:
      return writeTextArray(out, u8, p, n, intElement);
    case K.Int8Array:
      return writeTextArray(out, u8, p, n, numbersAsStrings ? int8StringElement : int8Element);
    case K.StringArray:
      return writeTextArray(out, u8, p, n, writeString);
    default:
      return false;
  }
}

function ascii(u8: Uint8Array, p: number, n: number): boolean {
  for (let i = p; i < p + n; i++) if (u8[i]! >= 0x80) return false;
  return true;
}

function quotedIf(out: ByteSink, u8: Uint8Array, p: number, n: number, quoted: boolean): void {
  if (quoted) out.byte(QUOTE);
  out.bytes(u8, p, p + n);
  if (quoted) out.byte(QUOTE);
}

/**
 * PostgreSQL's ISO timestamp text, `YYYY-MM-DD HH:MM:SS[.f…]` (and `+00`
 * for timestamptz: the UTC session zone), as timestampISO() prints it:
 * `"YYYY-MM-DDTHH:MM:SS.ffffff"` (and `Z`). Other years, zones, BC or
 * infinity: declined.
 */
function writeTimestamp(out: ByteSink, u8: Uint8Array, p: number, n: number, zone: boolean): boolean {
  const body = zone ? n - 3 : n;
  if (body < 19 || body === 20 || body > 26) return false;
  if (zone && (u8[p + body] !== 0x2b || u8[p + body + 1] !== 0x30 || u8[p + body + 2] !== 0x30)) return false;
  if (u8[p + 4] !== 0x2d || u8[p + 7] !== 0x2d || u8[p + 10] !== 0x20 || u8[p + 13] !== 0x3a || u8[p + 16] !== 0x3a) return false;
  if (body > 19 && u8[p + 19] !== 0x2e) return false;
  for (let i = 0; i < body; i++) {
    if (i === 4 || i === 7 || i === 10 || i === 13 || i === 16 || i === 19) continue;
    const c = u8[p + i]!;
    if (c < 0x30 || c > 0x39) return false;
  }
  const two = (i: number): number => (u8[p + i]! - 0x30) * 10 + u8[p + i + 1]! - 0x30;
  const year = two(0) * 100 + two(2);
  const month = two(5);
  const day = two(8);
  if (year === 0 || month < 1 || month > 12 || day < 1 || day > 31 || two(11) > 23 || two(14) > 59 || two(17) > 59) return false;
  out.ensure(29);
  const buf = out.buf;
  let o = out.len;
  buf[o++] = QUOTE;
  for (let i = 0; i < 19; i++) buf[o++] = i === 10 ? 0x54 : u8[p + i]!;
  buf[o++] = 0x2e;
  const digits = body > 19 ? body - 20 : 0;
  for (let i = 0; i < 6; i++) buf[o++] = i < digits ? u8[p + 20 + i]! : 0x30;
  if (zone) buf[o++] = 0x5a;
  buf[o++] = QUOTE;
  out.len = o;
  return true;
}

const intElement = (out: ByteSink, u8: Uint8Array, p: number, n: number): boolean => {
  if (!canonicalInteger(u8, p, n, true) || n > 11) return false;
  out.bytes(u8, p, p + n);
  return true;
};
const int8Element = (out: ByteSink, u8: Uint8Array, p: number, n: number): boolean => {
  if (!canonicalInteger(u8, p, n, true)) return false;
  out.bytes(u8, p, p + n);
  return true;
};
const int8StringElement = (out: ByteSink, u8: Uint8Array, p: number, n: number): boolean => {
  if (!canonicalInteger(u8, p, n, true)) return false;
  quotedIf(out, u8, p, n, true);
  return true;
};

/**
 * A float4/float8 text that a JS number prints back the same: plain
 * decimal (PostgreSQL's shortest form between 1e-4 and 1e15), at most 15
 * significant digits (so any double parse is exact to them), no trailing
 * fraction zero, not -0. Exponents, NaN, Infinity: declined.
 */
function plainFloat(u8: Uint8Array, p: number, n: number): boolean {
  const end = p + n;
  const intStart = afterSign(u8, p, end);
  let i = afterDigits(u8, intStart, end);
  const intLen = i - intStart;
  if (intLen === 0 || (intLen > 1 && u8[intStart] === 0x30)) return false;
  let digits = u8[intStart] === 0x30 ? 0 : intLen;
  let zero = digits === 0;
  if (i < end) {
    if (u8[i] !== 0x2e) return false;
    const frac = ++i;
    let leading = 0;
    while (i < end && u8[i]! >= 0x30 && u8[i]! <= 0x39) {
      if (zero && u8[i] === 0x30 && digits === 0) leading++;
      else {
        digits++;
        zero = false;
      }
      i++;
    }
    if (i === frac || i !== end || u8[end - 1] === 0x30 || leading > 4) return false;
  }
  if (digits > 15) return false;
  return !(zero && u8[p] === 0x2d);
}

/** bytea's hex text `\x…` (lowercase, as PostgreSQL prints it): the JSON string `"\\x…"` the JS path prints for its bytes. */
function writeBytea(out: ByteSink, u8: Uint8Array, p: number, n: number): boolean {
  if (n < 2 || u8[p] !== BACKSLASH || u8[p + 1] !== 0x78 || (n & 1) !== 0) return false;
  for (let i = p + 2; i < p + n; i++) {
    const c = u8[i]!;
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  out.ensure(n + 3);
  out.byte(QUOTE);
  out.byte(BACKSLASH);
  out.bytes(u8, p, p + n);
  out.byte(QUOTE);
  return true;
}

/** `-?(0|[1-9][0-9]*)`, and not `-0` (a JS number would print it as 0). */
function canonicalInteger(u8: Uint8Array, p: number, n: number, signed: boolean): boolean {
  let i = p;
  const end = p + n;
  if (signed && i < end && u8[i] === 0x2d) i++;
  if (i === end) return false;
  const first = u8[i]!;
  if (first === 0x30) return i + 1 === end && i === p;
  if (first < 0x31 || first > 0x39) return false;
  for (i++; i < end; i++) {
    const c = u8[i]!;
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** `-?\d+(\.\d+)?` */
function decimal(u8: Uint8Array, p: number, n: number): boolean {
  const end = p + n;
  const start = afterSign(u8, p, end);
  const i = afterDigits(u8, start, end);
  if (i === start) return false;
  if (i === end) return true;
  if (u8[i] !== 0x2e) return false;
  const fraction = afterDigits(u8, i + 1, end);
  return fraction > i + 1 && fraction === end;
}

/** Where a text at `i` continues after a leading minus sign, if any. */
function afterSign(u8: Uint8Array, i: number, end: number): number {
  return i < end && u8[i] === 0x2d ? i + 1 : i;
}

/** Where the run of ASCII digits from `i` ends. */
function afterDigits(u8: Uint8Array, i: number, end: number): number {
  while (i < end && u8[i]! >= 0x30 && u8[i]! <= 0x39) i++;
  return i;
}

/**
 * A JSON string of UTF-8 text, escaped as JSON.stringify escapes (`"`, `\`,
 * \b \t \n \f \r, other controls as \u00xx); multi-byte sequences are copied
 * once validated (invalid UTF-8 would have become U+FFFD in JS: declined).
 */
export function writeString(out: ByteSink, u8: Uint8Array, p: number, n: number): boolean {
  const end = p + n;
  const mark = out.len;
  // Worst case: every byte a 6-byte \u00xx escape.
  out.ensure(n * 6 + 2);
  const buf = out.buf;
  let o = out.len;
  buf[o++] = QUOTE;
  for (let i = p; i < end; ) {
    const c = u8[i]!;
    if (c >= 0x20 && c !== QUOTE && c !== BACKSLASH && c < 0x80) {
      buf[o++] = c;
      i++;
    } else if (c < 0x80) {
      buf[o++] = BACKSLASH;
      const short = c === QUOTE ? QUOTE : c === BACKSLASH ? BACKSLASH : c === 8 ? 0x62 : c === 9 ? 0x74 : c === 10 ? 0x6e : c === 12 ? 0x66 : c === 13 ? 0x72 : 0;
      if (short !== 0) buf[o++] = short;
      else {
        buf[o++] = 0x75; buf[o++] = 0x30; buf[o++] = 0x30;
        buf[o++] = HEX.charCodeAt(c >> 4); buf[o++] = HEX.charCodeAt(c & 15);
      }
      i++;
    } else {
      const len = utf8Sequence(u8, i, end);
      if (len === 0) {
        out.len = mark;
        return false;
      }
      for (let k = 0; k < len; k++) buf[o++] = u8[i + k]!;
      i += len;
    }
  }
  buf[o++] = QUOTE;
  out.len = o;
  return true;
}

/**
 * json/jsonb text embedded as it is, with each run of CR/LF made one space
 * (what `changeValueOptions().json` does: line breaks in PostgreSQL's JSON
 * text are whitespace between tokens, and a JSON line may not hold one).
 */
function writeJson(out: ByteSink, u8: Uint8Array, p: number, n: number): boolean {
  const end = p + n;
  const mark = out.len;
  out.ensure(n);
  const buf = out.buf;
  let o = out.len;
  for (let i = p; i < end; ) {
    const c = u8[i]!;
    if (c === 10 || c === 13) {
      buf[o++] = 0x20;
      while (i < end && (u8[i] === 10 || u8[i] === 13)) i++;
    } else if (c < 0x80) {
      buf[o++] = c;
      i++;
    } else {
      const len = utf8Sequence(u8, i, end);
      if (len === 0) {
        out.len = mark;
        return false;
      }
      for (let k = 0; k < len; k++) buf[o++] = u8[i + k]!;
      i += len;
    }
  }
  out.len = o;
  return true;
}

/** Length of the well-formed UTF-8 sequence starting at a byte ≥ 0x80 (Unicode table 3-7), or 0. */
function utf8Sequence(u8: Uint8Array, i: number, end: number): number {
  const c = u8[i]!;
  const cont = (j: number, lo = 0x80, hi = 0xbf): boolean => j < end && u8[j]! >= lo && u8[j]! <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(i + 1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const lo = c === 0xe0 ? 0xa0 : 0x80;
    const hi = c === 0xed ? 0x9f : 0xbf;
    return cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const lo = c === 0xf0 ? 0x90 : 0x80;
    const hi = c === 0xf4 ? 0x8f : 0xbf;
    return cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}
