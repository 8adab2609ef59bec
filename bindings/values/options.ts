/**
 * How column values become JS values. Every default is exact (nothing is
 * rounded, no time zone is applied) and gives the same JS value from the
 * text format (`t`) and the binary format (`b`) of the same column.
 *
 * | type | default | other choices |
 * |---|---|---|
 * | bool | `boolean` | |
 * | int2, int4, oid, xid, cid | `number` (oid, xid, cid unsigned) | |
 * | int8 | `bigint` | `int8: "number"` (throws for \|v\| > 2^53−1), `"string"` |
 * | xid8 | `bigint` (unsigned) | |
 * | float4 | `number`: the float32's exact value, `Math.fround(x)` of the text | |
 * | float8 | `number` (NaN, ±Infinity, -0 kept) | |
 * | numeric | `string` exactly as PostgreSQL prints it (`"1.50"`, `"NaN"`, `"Infinity"`, `"-Infinity"`) | `numeric: "number"`, or a function of that string (e.g. a decimal library's constructor) |
 * | money | `bigint` minor units (`$1,234.56` → `123456n`): locale independent | `money: "string"` (text as sent; binary formatted C-locale style `-$1,234.56`) |
 * | text, varchar, bpchar, name, "char", xml, unknown | `string` ("char" ≥ 0x80 as PostgreSQL 15+ prints it, `\ooo`) | |
 * | uuid | lower-case `string` | |
 * | json, jsonb | `JSON.parse` of the text | `json: "raw"` (the text), or a function of the text |
 * | bytea | `Uint8Array` (text: hex `\x…` and escape format) | |
 * | date | `string` as PostgreSQL prints it, DateStyle ISO: `2024-02-29`, `0044-03-15 BC`, `infinity` | `date: "iso"` (ISO 8601, `-000043-03-15`), `"days"` (since 1970-01-01, ±Infinity), `"Date"` (UTC midnight; ±Infinity for infinity) |
 * | time | `string` as PostgreSQL prints it: `04:05:06.789`, `24:00:00` | `time: "microseconds"` (`number` since midnight) |
 * | timetz | `string` as printed: `04:05:06.789+05:30`, `12:00:00-00:25:21` | `time: "microseconds"` → `{ microseconds, offset }` (offset in seconds east of UTC) |
 * | timestamp, timestamptz | `bigint` µs since 1970-01-01 (timestamp: its wall clock read as UTC); `infinity`/`-infinity` → 2^63−1 / −2^63 (as `bindings/time.ts`) | `timestamp: "iso"` (`2024-01-02T03:04:05.123456Z`; six digits; ISO 8601 expanded years for BC/year 294276; `infinity`), `"Date"` (ms; ±Infinity for infinity, like pg) |
 * | interval | `{ months, days, microseconds: bigint }` (PostgreSQL's three fields, never mixed) | |
 * | bit, varbit | `string` of `0`/`1` | |
 * | inet, cidr, macaddr, macaddr8, pg_lsn, tid | `string` as PostgreSQL prints it | |
 * | int2vector, oidvector | `number[]` | |
 * | arrays | nested JS arrays, `null` elements; lower bounds other than 1 as a `lowerBounds` property of the outermost array | |
 * | enum | `types: { [oid]: { baseType: Oid.text } }` → the label | |
 * | domain | `types: { [oid]: { baseType } }` → the base type's value | |
 * | anything else (composite, range, geometric, tsvector, extension types) | text: the `string`; binary: a `Uint8Array` copy | `parsers` |
 *
 * Text values are read as PostgreSQL prints them with the output settings a
 * walsender starts with: DateStyle `ISO`, IntervalStyle `postgres`,
 * `extra_float_digits` 1, `bytea_output` `hex` (escape is read too), any
 * TimeZone (the offset is in each timestamptz text) and any `lc_monetary`
 * (the default money form reads digits only).
 *
 * @example
 * ```ts
 * const values = new ValueDecoder({ int8: "number", timestamp: "iso", parsers: { [Oid.point]: { text: parsePoint } } });
 * ```
 */

export interface TypeOverride {
  /** Parser of the text form, given the text. */
  text?: (text: string) => unknown;
  /** Parser of the binary form, given a copy of the bytes. */
  binary?: (bytes: Uint8Array) => unknown;
}

export interface TypeKnowledge {
  /** The type is a domain over `baseType` (or an enum: give `Oid.text`); its values decode as the base type's. */
  baseType?: number;
  /** The type is an array of `elementType`. */
  elementType?: number;
}

export interface ValueOptions {
  /** int8: `"bigint"` (default); `"number"` throws a `PgoutputError` `INVALID_VALUE` for a value beyond ±(2^53−1); `"string"` the decimal text. */
  int8?: "bigint" | "number" | "string";
  /** numeric: `"string"` (default, exact), `"number"` (rounded), or a function of the exact string. */
  numeric?: "string" | "number" | ((text: string) => unknown);
  /** money: `"bigint"` minor units (default), `"string"`. */
  money?: "bigint" | "string";
  /** json and jsonb: `"parsed"` (default, `JSON.parse`), `"raw"` text, or a function of the text. */
  json?: "parsed" | "raw" | ((text: string) => unknown);
  /** timestamp and timestamptz: `"bigint"` µs since the Unix epoch (default), `"iso"` string, `"Date"`. */
  timestamp?: "bigint" | "iso" | "Date";
  /** date: `"string"` as PostgreSQL prints it (default), `"iso"` ISO 8601, `"days"` since 1970-01-01, `"Date"` at UTC midnight. */
  date?: "string" | "iso" | "days" | "Date";
  /** time and timetz: `"string"` as PostgreSQL prints it (default), `"microseconds"`. */
  time?: "string" | "microseconds";
  /** Per type OID parsers; they win over everything else. A format left out falls through. */
  parsers?: Record<number, TypeOverride>;
  /**
   * A `pg-types`-style lookup (`pg.types.getTypeParser`), consulted for every
   * OID without a `parsers` entry; text parsers get the string, binary ones a
   * `Buffer` copy (a `Uint8Array` where there is no `Buffer`). A result that
   * is not a function, or the same function it returns for OID 0 (pg-types'
   * "no parser", which would hand back the raw text), falls through to
   * the built-in parser. Called once per OID and format; the result is cached.
   */
  getTypeParser?: (oid: number, format?: "text" | "binary") => unknown;
  /** What this decoder cannot know about non-built-in types: domains and enums (`baseType`), arrays (`elementType`). */
  types?: Record<number, TypeKnowledge>;
}

/** Options with every default filled in. */
export interface ResolvedOptions {
  int8: "bigint" | "number" | "string";
  numeric: "string" | "number" | ((text: string) => unknown);
  money: "bigint" | "string";
  json: "parsed" | "raw" | ((text: string) => unknown);
  timestamp: "bigint" | "iso" | "Date";
  date: "string" | "iso" | "days" | "Date";
  time: "string" | "microseconds";
}

function pick<T>(name: string, value: unknown, allowed: readonly T[], fallback: T, fn = false): T {
  if (value === undefined) return fallback;
  if (fn && typeof value === "function") return value as unknown as T;
  if ((allowed as readonly unknown[]).includes(value)) return value as T;
  const also = fn ? " or a function" : "";
  throw new TypeError(`option ${name}: expected ${allowed.map((a) => JSON.stringify(a)).join(", ")}${also}, got ${String(value)}`);
}

export function resolveOptions(o: ValueOptions = {}): ResolvedOptions {
  return {
    int8: pick("int8", o.int8, ["bigint", "number", "string"], "bigint"),
    numeric: pick<ResolvedOptions["numeric"]>("numeric", o.numeric, ["string", "number"], "string", true),
    money: pick("money", o.money, ["bigint", "string"], "bigint"),
    json: pick<ResolvedOptions["json"]>("json", o.json, ["parsed", "raw"], "parsed", true),
    timestamp: pick("timestamp", o.timestamp, ["bigint", "iso", "Date"], "bigint"),
    date: pick("date", o.date, ["string", "iso", "days", "Date"], "string"),
    time: pick("time", o.time, ["string", "microseconds"], "string"),
  };
}
