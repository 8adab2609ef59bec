/**
 * Column values as Debezium's PostgreSQL connector writes them with the
 * JSON converter (`schemas.enable=false`), from the JS values of a decoder
 * made with `debeziumValueOptions()` (docs/cli-output.md, "debezium", has
 * the table). Debezium's defaults where they are exact — `time.precision.mode`
 * `adaptive`, `binary.handling.mode` `bytes` (base64 in JSON) — and a
 * documented choice where they are not: `decimal.handling.mode` `string`
 * by default (its `precise`, the Kafka Connect Decimal's base64 bytes, and
 * `double` are options), `interval.handling.mode` `string` (ISO 8601; its
 * default `numeric`, µs with a month of 30.4375 days, is an option), int8
 * as exact JSON numbers (as json-text.ts writes them for every JSON format).
 *
 * A value Debezium cannot represent either (a numeric NaN in `precise`
 * mode), or one it leaves out (types it does not know), gets this file's
 * documented fallback: never a silent change of the value.
 */
import type { TypeInfo } from "../decoder.ts";
import { jsonText } from "../jsonl/json-text.ts";
import { toBase64 } from "../utf8.ts";
import { civilFromDays, pad2 } from "../values/calendar.ts";
import { arrayElement, FIRST_NORMAL_OID, Oid } from "../values/oids.ts";
import type { TypeKnowledge, ValueOptions } from "../values/options.ts";

export type DecimalHandling = "string" | "double" | "precise";
export type BinaryHandling = "base64" | "base64-url-safe" | "hex";
export type TimePrecision = "adaptive" | "adaptive_time_microseconds" | "microseconds";
export type IntervalHandling = "string" | "numeric";

/** The options that change how values are written (Debezium's `*.handling.mode`, `time.precision.mode`). */
export interface ValueModes {
  decimal: DecimalHandling;
  binary: BinaryHandling;
  time: TimePrecision;
  interval: IntervalHandling;
}

/** A column value (as the decoder gives it; never null) → its JSON text. */
export type ValueText = (value: unknown) => string;

/**
 * The decoder's `values` option the Debezium values are made from: every
 * form exact — int8 as bigint, numeric and json as their text, money in
 * minor units, timestamps as µs, dates as days, times as µs.
 */
export function debeziumValueOptions(types?: Record<number, TypeKnowledge>): ValueOptions {
  return {
    int8: "bigint", numeric: "string", money: "bigint", json: "raw", timestamp: "bigint", date: "days", time: "microseconds",
    ...(types === undefined ? {} : { types }),
  };
}

/** Debezium's `unavailable.value.placeholder`: the value of an unchanged TOAST column PostgreSQL did not send. */
export const UNAVAILABLE = "__debezium_unavailable_value";
const UNAVAILABLE_BYTES = new TextEncoder().encode(UNAVAILABLE);
/** UUID.nameUUIDFromBytes(UNAVAILABLE), what Debezium puts in a uuid[] it did not get. */
const UNAVAILABLE_UUID = "b68a35a7-17ad-35b3-af2a-ae46edb4545a";

/** The type whose representation a column takes: a domain's base type (its Type message names it, in pg_catalog). */
export function representedType(typeId: number, types: ReadonlyMap<number, TypeInfo> | undefined): number {
  if (typeId < FIRST_NORMAL_OID) return typeId;
  const info = types?.get(typeId);
  if (info === undefined || info.namespace !== "") return typeId;
  const base = (Oid as Record<string, number | undefined>)[info.typeName];
  return base ?? typeId;
}

/** The placeholder's JSON for a column of this type (Debezium's per-type forms: string, bytes, arrays of them). */
export function placeholderText(typeId: number, modes: ValueModes): string {
  const element = arrayElement(typeId);
  if (typeId === Oid.bytea) return binaryText(UNAVAILABLE_BYTES, modes.binary);
  if (element === 0) return JSON.stringify(UNAVAILABLE);
  switch (element) {
    case Oid.int2:
    case Oid.int4:
    case Oid.int8:
    case Oid.oid:
      return `[${UNAVAILABLE_BYTES.join(",")}]`;
    case Oid.bytea:
      return `[${binaryText(UNAVAILABLE_BYTES, modes.binary)}]`;
    case Oid.uuid:
      return `["${UNAVAILABLE_UUID}"]`;
    default:
      return `[${JSON.stringify(UNAVAILABLE)}]`;
  }
}

/** How values of a column of this type (OID after domains, type modifier) are written. */
export function valueText(typeId: number, typmod: number, modes: ValueModes): ValueText {
  const element = arrayElement(typeId);
  if (element !== 0) {
    const each = valueText(element, typmod, modes);
    const array: ValueText = (v) => {
      if (!Array.isArray(v)) return fallbackText(v, modes);
      let s = "[";
      for (let i = 0; i < v.length; i++) {
        const e: unknown = v[i];
        s += (i > 0 ? "," : "") + (e === null ? "null" : Array.isArray(e) ? array(e) : each(e));
      }
      return s + "]";
    };
    return array;
  }
  switch (typeId) {
    case Oid.float4:
      return (v) => (typeof v === "number" ? float32Text(v) : fallbackText(v, modes));
    case Oid.float8:
      return (v) => (typeof v === "number" ? doubleText(v) : fallbackText(v, modes));
    case Oid.numeric:
      return numericText(typmod, modes.decimal);
    case Oid.money:
      return (v) => (typeof v === "bigint" ? moneyText(v, modes.decimal) : fallbackText(v, modes));
    case Oid.bytea:
      return (v) => (v instanceof Uint8Array ? binaryText(v, modes.binary) : fallbackText(v, modes));
    case Oid.date:
      return dateText;
    case Oid.time: {
      const ms = modes.time === "adaptive" && typmod >= 0 && typmod <= 3;
      return (v) => (typeof v === "number" ? String(ms ? Math.floor(v / 1000) : v) : fallbackText(v, modes));
    }
    case Oid.timetz:
      return zonedTimeText;
    case Oid.timestamp: {
      const ms = modes.time !== "microseconds" && typmod >= 0 && typmod <= 3;
      return (v) => (typeof v === "bigint" ? timestampText(v, ms) : fallbackText(v, modes));
    }
    case Oid.timestamptz: {
      const width = typmod >= 0 && typmod <= 6 ? typmod : 6;
      return (v) => (typeof v === "bigint" ? zonedTimestampText(v, width) : fallbackText(v, modes));
    }
    case Oid.interval:
      return modes.interval === "numeric" ? intervalText : intervalIsoText;
    case Oid.bit:
    case Oid.varbit:
      return typmod === 1 ? (v) => (typeof v === "string" ? (/1/.test(v) ? "true" : "false") : fallbackText(v, modes)) : (v) => (typeof v === "string" ? bitsText(v, modes.binary) : fallbackText(v, modes));
    case Oid.point:
      return (v) => pointText(v) ?? fallbackText(v, modes);
    default:
      return (v) => fallbackText(v, modes);
  }
}

/**
 * Everything else by its JS value: booleans, numbers and strings as JSON
 * (int8 exact), bytes (a binary value of a type without a binary parser) in
 * the binary mode, arrays element by element.
 */
function fallbackText(v: unknown, modes: ValueModes): string {
  if (v instanceof Uint8Array) return binaryText(v, modes.binary);
  if (typeof v === "number") return doubleText(v);
  if (Array.isArray(v)) return `[${v.map((e) => (e === null ? "null" : fallbackText(e, modes))).join(",")}]`;
  return jsonText(v);
}

/** A double as Jackson writes it: -0 keeps its sign; NaN and ±Infinity as strings. */
function doubleText(v: number): string {
  return Object.is(v, -0) ? "-0.0" : jsonText(v);
}

/** A float4 by its shortest decimal (Java's Float.toString value, what Debezium writes), not the double it widens to. */
export function float32Text(v: number): string {
  if (!Number.isFinite(v) || v === 0) return doubleText(v);
  for (let p = 1; p < 9; p++) {
    const n = Number(v.toPrecision(p));
    if (Math.fround(n) === v) return String(n);
  }
  return String(v);
}

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;
/** Debezium's names of numeric's special values in `string` mode (SpecialValueDecimal). */
const SPECIAL: Record<string, string> = { NaN: "NAN", Infinity: "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY" };

/**
 * numeric: `string` the exact text; `double` a JSON number (rounded, as
 * Debezium's); `precise` a Kafka Connect Decimal — the unscaled value as
 * big-endian two's complement bytes, base64 — at the column's scale, or
 * for a numeric without one, `{"scale", "value"}` with trailing zeros
 * stripped (VariableScaleDecimal). NaN and ±Infinity, which `precise`
 * cannot hold, are written as in `string` mode.
 */
function numericText(typmod: number, mode: DecimalHandling): ValueText {
  const scale = typmod >= 4 ? ((((typmod - 4) & 0x7ff) ^ 1024) - 1024) : undefined;
  return (v) => {
    if (typeof v !== "string") return jsonText(v);
    const m = DECIMAL.exec(v);
    if (m === null) {
      const special = SPECIAL[v];
      if (special === undefined) return JSON.stringify(v);
      return mode === "double" ? jsonText(Number(v)) : JSON.stringify(special);
    }
    if (mode === "string") return JSON.stringify(v);
    if (mode === "double") return doubleText(Number(v));
    const [, sign, whole, frac = ""] = m;
    let unscaled = BigInt(`${sign}${whole}${frac}`);
    let s = frac.length;
    if (scale !== undefined) {
      unscaled = rescale(unscaled, s, scale);
      return JSON.stringify(toBase64(twosComplement(unscaled)));
    }
    while (s > 0 && unscaled % 10n === 0n) {
      unscaled /= 10n;
      s--;
    }
    return `{"scale":${s},"value":${JSON.stringify(toBase64(twosComplement(unscaled)))}}`;
  };
}

function rescale(unscaled: bigint, from: number, to: number): bigint {
  return to >= from ? unscaled * 10n ** BigInt(to - from) : unscaled / 10n ** BigInt(from - to);
}

/** BigInteger.toByteArray(): the shortest big-endian two's complement bytes (at least one). */
function twosComplement(n: bigint): Uint8Array {
  let hex = (n < 0n ? -n : n).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  let bytes = Uint8Array.from(hex.match(/../g)!.map((h) => parseInt(h, 16)));
  if (n >= 0n) return bytes[0]! >= 0x80 ? Uint8Array.of(0, ...bytes) : bytes;
  // Negate: invert and add one, then make sure the sign bit is set (and only one sign byte).
  const out = new Uint8Array(bytes.length);
  let carry = 1;
  for (let i = bytes.length - 1; i >= 0; i--) {
    const b = (~bytes[i]! & 0xff) + carry;
    out[i] = b & 0xff;
    carry = b >> 8;
  }
  bytes = out[0]! < 0x80 ? Uint8Array.of(0xff, ...out) : out;
  while (bytes.length > 1 && bytes[0] === 0xff && bytes[1]! >= 0x80) bytes = bytes.subarray(1);
  return bytes;
}

/** money (minor units: 2 fraction digits, lc_monetary C as a walsender has it) as its decimal. */
function moneyText(units: bigint, mode: DecimalHandling): string {
  if (mode === "precise") return JSON.stringify(toBase64(twosComplement(units)));
  const neg = units < 0n;
  const abs = (neg ? -units : units).toString().padStart(3, "0");
  const text = `${neg ? "-" : ""}${abs.slice(0, -2)}.${abs.slice(-2)}`;
  return mode === "double" ? doubleText(Number(text)) : JSON.stringify(text);
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function binaryText(bytes: Uint8Array, mode: BinaryHandling): string {
  if (mode === "hex") {
    let s = '"';
    for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]!];
    return `${s}"`;
  }
  const b64 = toBase64(bytes);
  return JSON.stringify(mode === "base64" ? b64 : b64.replace(/\+/g, "-").replace(/\//g, "_"));
}

/** bit(n), varbit: the bits as a little-endian integer's bytes, as few as hold it (Debezium's io.debezium.data.Bits). */
function bitsText(bits: string, mode: BinaryHandling): string {
  const out: number[] = [];
  for (let end = bits.length; end > 0; end -= 8) {
    const chunk = bits.slice(Math.max(0, end - 8), end);
    out.push(parseInt(chunk, 2));
  }
  while (out.length > 0 && out[out.length - 1] === 0) out.pop();
  return binaryText(Uint8Array.from(out), mode);
}

/**
 * date: days since 1970-01-01. ±infinity as Debezium writes them — what
 * PostgreSQL's ±infinity (the int32 extremes since 2000-01-01) became in
 * the JDBC driver's arithmetic: -2147472692 and -2147472691.
 */
function dateText(v: unknown): string {
  if (v === Infinity) return "-2147472692";
  if (v === -Infinity) return "-2147472691";
  return jsonText(v);
}

/** PostgreSQL's ±infinity timestamps on the wire: the int64 extremes. */
const NOEND = 0x7fff_ffff_ffff_ffffn;
const NOBEGIN = -0x8000_0000_0000_0000n;

/** timestamp (its wall clock as UTC): µs since the epoch (ms for precision ≤ 3); ±infinity as Debezium's (the JDBC driver's) constants. */
function timestampText(us: bigint, ms: boolean): string {
  if (us === NOEND) return "9223372036825200000";
  if (us === NOBEGIN) return "-9223372036832400000";
  if (!ms) return us.toString();
  const q = us / 1000n;
  return (us < 0n && q * 1000n !== us ? q - 1n : q).toString();
}

/** A year as java.time prints it: four digits, a `+` past 9999, a `-` before year 0 (astronomical years). */
function javaYear(year: number): string {
  if (year > 9999) return `+${year}`;
  const abs = String(Math.abs(year)).padStart(4, "0");
  return year < 0 ? `-${abs}` : abs;
}

/** timestamptz (ZonedTimestamp): ISO 8601 in UTC with `width` fraction digits (the column's precision, 6 by default); `infinity`, `-infinity`. */
export function zonedTimestampText(us: bigint, width: number): string {
  if (us === NOEND) return '"infinity"';
  if (us === NOBEGIN) return '"-infinity"';
  let micros = us % 1_000_000n;
  if (micros < 0n) micros += 1_000_000n;
  const seconds = Number((us - micros) / 1_000_000n);
  const day = Math.floor(seconds / 86_400);
  const t = seconds - day * 86_400;
  const c = civilFromDays(day);
  const frac = width > 0 ? `.${micros.toString().padStart(6, "0").slice(0, width)}` : "";
  return `"${javaYear(c.year)}-${pad2(c.month)}-${pad2(c.day)}T${pad2(Math.floor(t / 3600))}:${pad2(Math.floor(t / 60) % 60)}:${pad2(t % 60)}${frac}Z"`;
}

/** A time of day in µs as java.time's ISO_LOCAL_TIME: `HH:mm:ss` and the fraction's digits without trailing zeros. */
function isoTime(us: number): string {
  const s = Math.floor(us / 1_000_000);
  const f = us - s * 1_000_000;
  const frac = f === 0 ? "" : `.${String(f).padStart(6, "0").replace(/0+$/, "")}`;
  return `${pad2(Math.floor(s / 3600))}:${pad2(Math.floor(s / 60) % 60)}:${pad2(s % 60)}${frac}`;
}

const DAY_US = 86_400_000_000;

/** timetz (ZonedTime): the time in UTC, ISO 8601 (`22:35:06.789Z`). */
function zonedTimeText(v: unknown): string {
  const t = v as { microseconds?: unknown; offset?: unknown };
  if (typeof t !== "object" || t === null || typeof t.microseconds !== "number" || typeof t.offset !== "number") return jsonText(v);
  let utc = (t.microseconds - t.offset * 1_000_000) % DAY_US;
  if (utc < 0) utc += DAY_US;
  return `"${isoTime(utc)}Z"`;
}

/** Debezium's MicroDuration.DAYS_PER_MONTH_AVG. */
const DAYS_PER_MONTH = 365.25 / 12;
const INT64_MAX = 0x7fff_ffff_ffff_ffffn;
const INT64_MIN = -0x8000_0000_0000_0000n;

/**
 * interval (`interval.handling.mode` numeric): approximate µs, a month as
 * 365.25 / 12 days, computed in doubles from the fields Debezium reads
 * (months, days, hours, minutes, seconds) as its MicroDuration does, so the
 * same number comes out.
 */
function intervalText(v: unknown): string {
  const iv = v as { months?: unknown; days?: unknown; microseconds?: unknown };
  if (typeof iv !== "object" || iv === null || typeof iv.months !== "number" || typeof iv.days !== "number" || typeof iv.microseconds !== "bigint") return jsonText(v);
  const us = iv.microseconds;
  const hours = us / 3_600_000_000n;
  const minutes = (us % 3_600_000_000n) / 60_000_000n;
  const seconds = Number(us % 60_000_000n) / 1e6;
  const days = iv.months * DAYS_PER_MONTH + iv.days;
  const total = ((days * 24 + Number(hours)) * 60 + Number(minutes)) * 60 + seconds;
  const micros = BigInt(Math.trunc(total * 1e6));
  return (micros > INT64_MAX ? INT64_MAX : micros < INT64_MIN ? INT64_MIN : micros).toString();
}

/**
 * interval (`interval.handling.mode` string, io.debezium.time.Interval):
 * `P<y>Y<m>M<d>DT<h>H<min>M<s>S`, every field written, as Debezium's
 * Interval.toIsoString() prints PGInterval's fields (years and months from
 * the months, hours, minutes and seconds from the µs, each with the sign
 * of its part); the seconds exact, without trailing zeros. PostgreSQL
 * 17's ±infinity (every field at its extreme), which has no such form, is
 * `"infinity"` / `"-infinity"`, as for timestamptz.
 */
function intervalIsoText(v: unknown): string {
  const iv = v as { months?: unknown; days?: unknown; microseconds?: unknown };
  if (typeof iv !== "object" || iv === null || typeof iv.months !== "number" || typeof iv.days !== "number" || typeof iv.microseconds !== "bigint") return jsonText(v);
  const us = iv.microseconds;
  if (us === INT64_MAX && iv.months === 0x7fff_ffff && iv.days === 0x7fff_ffff) return '"infinity"';
  if (us === INT64_MIN && iv.months === -0x8000_0000 && iv.days === -0x8000_0000) return '"-infinity"';
  const hours = us / 3_600_000_000n;
  const minutes = (us % 3_600_000_000n) / 60_000_000n;
  const rest = us % 60_000_000n;
  const abs = (rest < 0n ? -rest : rest).toString().padStart(7, "0");
  const frac = abs.slice(-6).replace(/0+$/, "");
  const seconds = `${rest < 0n ? "-" : ""}${abs.slice(0, -6)}${frac === "" ? "" : `.${frac}`}`;
  return `"P${Math.trunc(iv.months / 12)}Y${iv.months % 12}M${iv.days}DT${hours}H${minutes}M${seconds}S"`;
}

/** point (io.debezium.data.geometry.Point): `{x, y, wkb, srid}`, the WKB a little-endian OGC point. */
function pointText(v: unknown): string | undefined {
  let x: number;
  let y: number;
  if (typeof v === "string") {
    const m = /^\(([^,]+),([^)]+)\)$/.exec(v);
    if (m === null) return undefined;
    x = Number(m[1]);
    y = Number(m[2]);
  } else if (v instanceof Uint8Array && v.length === 16) {
    const dv = new DataView(v.buffer, v.byteOffset, 16);
    x = dv.getFloat64(0);
    y = dv.getFloat64(8);
  } else {
    return undefined;
  }
  const wkb = new DataView(new ArrayBuffer(21));
  wkb.setUint8(0, 1);
  wkb.setUint32(1, 1, true);
  wkb.setFloat64(5, x, true);
  wkb.setFloat64(13, y, true);
  return `{"x":${doubleText(x)},"y":${doubleText(y)},"wkb":${JSON.stringify(toBase64(new Uint8Array(wkb.buffer)))},"srid":null}`;
}
