/**
 * The drop-in plugin's fast column parsers (bindings/compat/fast-parsers.ts,
 * fast-arrays.ts) against pg-types' own default parsers, which they stand in
 * for: on edge values and on many random values in PostgreSQL's output
 * format, in several time zones (date and timestamp are local time in
 * pg-types), the fast result must be the pg-types result — or `NOT_FAST`,
 * the plugin then calling pg-types. Then through the plugin itself, next to
 * pg-logical-replication's PgoutputPlugin on the same bytes, and with
 * parsers the application set with `pg.types.setTypeParser` (which must win).
 */
import fc from "fast-check";
import { PgoutputPlugin } from "pg-logical-replication";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { backend, onceAcrossBackends } from "./support/backends.ts";
import { PgoutputWasmPlugin } from "../bindings/compat/index.ts";
import { NOT_FAST, fastBool, fastDate, fastFloat, fastInt, type FastParser } from "../bindings/compat/fast-parsers.ts";
import { readString } from "../bindings/utf8.ts";
import { fastInt8Array, fastIntArray, fastStringArray } from "../bindings/compat/fast-arrays.ts";
import { fastBytea } from "../bindings/compat/fast-bytea.ts";
import { fastParserFor } from "../bindings/compat/pg-defaults.ts";

/** The plugin's interval parser (made from pg-types' PostgresInterval, so obtained as the plugin obtains it). */
const fastInterval = fastParserFor(1186, pg.types.getTypeParser(1186, "text") as (s: string) => unknown)!;
import { encode } from "../devkit/encoder/encoder.ts";

const utf8 = new TextEncoder();
const pgParser = (oid: number) => pg.types.getTypeParser(oid, "text") as (s: string) => unknown;

/** A Date by its time (NaN-safe), anything else as is: what deep equality of the plugin's output compares. */
function same(a: unknown, b: unknown): boolean {
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && Object.is(a.getTime(), b.getTime());
  }
  if (Buffer.isBuffer(a) || Buffer.isBuffer(b)) return Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (typeof a === "object" && a !== null && typeof b === "object" && b !== null) {
    // An interval: same prototype, same own properties in the same order.
    const ea = Object.entries(a);
    const eb = Object.entries(b);
    return Object.getPrototypeOf(a) === Object.getPrototypeOf(b) && ea.length === eb.length &&
      ea.every(([k, v], i) => k === eb[i]![0] && Object.is(v, eb[i]![1]));
  }
  return Object.is(a, b);
}

/** Checks the fast parser on `text` (placed mid-buffer, between other bytes); true when it took the fast path. */
function check(fast: FastParser, oid: number, text: string): boolean {
  const bytes = utf8.encode(`{"x}${text}1-`);
  const got = fast(bytes, 4, bytes.length - 6);
  if (got === NOT_FAST) return false;
  const want = pgParser(oid)(text);
  if (!same(got, want)) throw new Error(`oid ${oid} ${JSON.stringify(text)}: fast ${String(got)} ≠ pg-types ${String(want)}`);
  return true;
}

const ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "America/St_Johns", "Europe/Lisbon", "Pacific/Kiritimati"];
const savedTz = process.env.TZ;
/** Sets the process's time zone (Node applies a new TZ at once), checking it took. */
function useZone(tz: string): void {
  process.env.TZ = tz;
  if (tz === "Asia/Kolkata") expect(new Date(2024, 0, 1).getTimezoneOffset()).toBe(-330);
}
afterAll(() => {
  if (savedTz === undefined) delete process.env.TZ;
  else process.env.TZ = savedTz;
});

// The parsers use no backend: registered in one run only (the runner runs this file once per backend).
if (onceAcrossBackends) describe("fast parsers equal pg-types on edge values", () => {
  it("int2 / int4 / oid", () => {
    for (const s of ["0", "-0", "1", "-1", "32767", "-32768", "2147483647", "-2147483648", "4294967295", "007"]) {
      for (const oid of [21, 23, 26]) expect(check(fastInt, oid, s)).toBe(true);
    }
    for (const s of ["", "-", "1e3", " 1", "1.5", "9999999999999999"]) expect(fastInt(utf8.encode(s), 0, s.length)).toBe(NOT_FAST);
  });

  it("float4 / float8: plain decimals fast, exponents, NaN, Infinity and long mantissas to parseFloat", () => {
    const fast = ["0", "-0", "1", "-1", "1.5", "-3.25", "0.1", "0.2", "0.30000000000001", "123456789012345", "-0.000001", "1.", "-.5",
      "3.14159", "2.718281828459", "0.000000000000000000001", "900719925474099", "12345.6789", "-0.0", "7.000000"];
    for (const s of fast) for (const oid of [700, 701]) expect(check(fastFloat, oid, s)).toBe(true);
    const slow = ["", "-", ".", "1e+20", "1.2345678e-05", "NaN", "Infinity", "-Infinity", "9007199254740993", "0.30000000000000004",
      "3.1415926535897932", "1.2.3", "+1", " 1", "1,5", "0.00000000000000000000001", "1-"];
    for (const s of slow) for (const oid of [700, 701]) expect(check(fastFloat, oid, s)).toBe(false);
  });

  it("bool", () => {
    expect(check(fastBool, 16, "t")).toBe(true);
    expect(check(fastBool, 16, "f")).toBe(true);
    for (const s of ["true", "1", "yes", "x"]) expect(check(fastBool, 16, s)).toBe(false);
  });

  it("date, timestamp, timestamptz in every zone: BC, years 0-99, fractions, odd offsets", () => {
    const dates = ["2024-02-29", "0001-01-01", "0001-01-01 BC", "0044-03-15 BC", "0099-12-31", "0100-01-01", "5874897-12-31", "1970-01-01"];
    const timestamps = [
      "2024-02-29 12:34:56", "2024-02-29 12:34:56.789123", "2024-02-29 12:34:56.5", "2024-02-29 12:34:56.000001",
      "2024-02-29 12:34:56.009", "0001-01-01 00:00:00 BC", "0044-03-15 12:00:00.25 BC", "0050-06-01 01:02:03",
      "294276-12-31 23:59:59.999999", "2024-03-10 02:30:00", "2024-11-03 01:30:00", "1900-01-01 00:00:00",
    ];
    const zones = ["+00", "-00", "+05:30", "-03:30", "+14", "-12", "+00:53:28", "-00:25:21", "+01:02:03"];
    for (const tz of ZONES) {
      useZone(tz);
      for (const d of dates) expect(check(fastDate, 1082, d)).toBe(true);
      for (const t of timestamps) {
        expect(check(fastDate, 1114, t)).toBe(true);
        const bc = t.endsWith(" BC");
        const base = bc ? t.slice(0, -3) : t;
        for (const z of zones) expect(check(fastDate, 1184, `${base}${z}${bc ? " BC" : ""}`)).toBe(true);
      }
    }
    for (const s of ["infinity", "-infinity", "2024-02-29T12:34:56", "2024-2-29", "2024-02-29 12:34", "2024-02-29 12:34:56+", "2024-02-29 12:34:56. "]) {
      expect(check(fastDate, 1184, s)).toBe(false);
    }
  });

  it("bytea", () => {
    for (const t of ["\\x", "\\x00", "\\x00ff10", "\\xDEADbeef", "\\x" + "ab".repeat(5000)]) expect(check(fastBytea, 17, t)).toBe(true);
    for (const t of ["", "\\x0", "\\x0g", "\\xzz00", "abc", "\\000", "\\\\"]) expect(check(fastBytea, 17, t)).toBe(false);
  });

  it("interval: every field, signs, fractions, zero fields left out", () => {
    const texts = [
      "00:00:00", "1 day", "2 days", "1 year", "-1 years", "3 mons", "1 mon", "1 year 2 mons 3 days 04:05:06.789",
      "-1 days +02:03:00", "1 day -02:00:00", "-00:00:01.5", "00:00:00.000001", "123:00:00", "178000000 years",
      "-178000000 years -11 mons -30 days -23:59:59.999999", "1 year 00:00:00", "+1 days", "3 days 00:00:00.1", "-0 days",
    ];
    for (const t of texts) expect(check(fastInterval, 1186, t)).toBe(true);
    for (const t of ["", "@ 1 day", "P1D", "1 day foo", "1 dayx", "1 mon 2 years", "00:00:00.1234567", "1 day  02:00:00x"]) {
      expect(check(fastInterval, 1186, t)).toBe(false);
    }
  });

  it("arrays: quotes, escapes, NULL and \"NULL\", empty strings, non-ASCII; nested and dimensioned ones left to pg-types", () => {
    const texts = ['{}', '{a}', '{a,b,c}', '{"",NULL,"NULL",null}', '{"a \\"q\\" b","back\\\\slash","{x}",",",ü€😀}', '{"with space",plain}'];
    for (const s of texts) for (const oid of [1009, 1015, 1014]) expect(check(fastStringArray, oid, s)).toBe(true);
    for (const s of ['{1,2,3}', '{-1,NULL,2147483647,-0}', '{}', '{"7"}']) for (const oid of [1005, 1007, 1028]) expect(check(fastIntArray, oid, s)).toBe(true);
    for (const s of ['{9223372036854775807,-9223372036854775808,NULL}', '{" 1 "}']) expect(check(fastInt8Array, 1016, s)).toBe(true);
    for (const s of ['{{1,2},{3,4}}', '[0:1]={1,2}', '{1,,2}', '{"a"b}', '{a\\,b}', '{"unterminated}']) {
      expect(check(fastStringArray, 1009, s)).toBe(false);
    }
  });
});

if (onceAcrossBackends) describe("fast parsers equal pg-types on random values", () => {
  const pad = (n: number, w: number) => String(n).padStart(w, "0");
  const zone = fc.oneof(
    fc.constant(""),
    fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 15 }), fc.option(fc.integer({ min: 0, max: 59 })), fc.option(fc.integer({ min: 0, max: 59 })))
      .map(([neg, h, m, s]) => `${neg ? "-" : "+"}${pad(h, 2)}${m === null ? "" : `:${pad(m, 2)}${s === null ? "" : `:${pad(s, 2)}`}`}`),
  );
  const timestamp = fc.record({
    year: fc.integer({ min: 1, max: 294276 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 31 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    frac: fc.option(fc.stringMatching(/^[0-9]{1,6}$/)),
    zone,
    bc: fc.boolean(),
    dateOnly: fc.boolean(),
  }).map((t) => {
    const date = `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}`;
    const time = `${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}${t.frac === null ? "" : `.${t.frac}`}`;
    return `${date}${t.dateOnly ? "" : ` ${time}${t.zone}`}${t.bc ? " BC" : ""}`;
  });

  it("dates and timestamps, in every zone", () => {
    for (const tz of ZONES) {
      useZone(tz);
      fc.assert(fc.property(timestamp, (s) => { expect(check(fastDate, 1184, s)).toBe(true); }), { numRuns: 2000 });
    }
  });

  it("timestamptz of the years 1000-9999 (computed without Date.UTC): every day, hour and offset", () => {
    const tz = fc.record({
      year: fc.integer({ min: 990, max: 10010 }), month: fc.integer({ min: 1, max: 12 }), day: fc.integer({ min: 1, max: 31 }),
      hour: fc.integer({ min: 0, max: 23 }), minute: fc.integer({ min: 0, max: 59 }), second: fc.integer({ min: 0, max: 60 }),
      frac: fc.option(fc.stringMatching(/^[0-9]{1,6}$/)), zone: zone.filter((z) => z !== ""),
    }).map((t) => `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)} ${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}${t.frac === null ? "" : `.${t.frac}`}${t.zone}`);
    useZone("UTC");
    fc.assert(fc.property(tz, (s) => { expect(check(fastDate, 1184, s)).toBe(true); }), { numRuns: 20000 });
    for (const s of ["2024-02-29 00:00:00+00", "2023-02-29 00:00:00+00", "1900-02-29 12:00:00+01", "2000-02-29 23:59:59.999999-14", "1000-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00", "2024-12-31 23:59:60+00"]) {
      expect(check(fastDate, 1184, s)).toBe(true);
    }
  });

  it("intervals as PostgreSQL writes them", () => {
    const item = (unit: string) => fc.option(fc.integer({ min: -178000000, max: 178000000 }).map((n) => `${n} ${unit}${Math.abs(n) === 1 ? "" : "s"}`));
    const time = fc.option(fc.tuple(fc.constantFrom("", "-", "+"), fc.integer({ min: 0, max: 2562047788 }), fc.integer({ min: 0, max: 59 }),
      fc.integer({ min: 0, max: 59 }), fc.option(fc.stringMatching(/^[0-9]{1,6}$/)))
      .map(([sg, h, m, s, f]) => `${sg}${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}${f === null ? "" : `.${f}`}`));
    const interval = fc.tuple(item("year"), item("mon"), item("day"), time)
      .map((parts) => parts.filter((p) => p !== null).join(" "))
      .filter((s) => s !== "");
    fc.assert(fc.property(interval, (s) => { expect(check(fastInterval, 1186, s)).toBe(true); }), { numRuns: 5000 });
  });

  it("bytea", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (b) => {
      expect(check(fastBytea, 17, `\\x${Buffer.from(b).toString("hex")}`)).toBe(true);
    }), { numRuns: 2000 });
  });

  it("floats: float8 and float4 values as JS and PostgreSQL write them, and plain decimals", () => {
    fc.assert(fc.property(fc.double(), (x) => { check(fastFloat, 701, String(x)); }), { numRuns: 5000 });
    fc.assert(fc.property(fc.float(), (x) => { check(fastFloat, 700, String(x)); }), { numRuns: 3000 });
    fc.assert(fc.property(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.integer({ min: 1, max: 17 }), (x, p) => {
      check(fastFloat, 701, x.toPrecision(p));
    }), { numRuns: 5000 });
    let fastCount = 0;
    fc.assert(fc.property(fc.stringMatching(/^-?[0-9]{0,17}(\.[0-9]{0,17})?$/), (s) => { if (check(fastFloat, 701, s)) fastCount++; }), { numRuns: 5000 });
    expect(fastCount).toBeGreaterThan(1000);
  });

  it("integers", () => {
    fc.assert(fc.property(fc.integer({ min: -2147483648, max: 2147483647 }), (n) => { expect(check(fastInt, 23, String(n))).toBe(true); }), { numRuns: 5000 });
    fc.assert(fc.property(fc.integer({ min: 0, max: 4294967295 }), (n) => { expect(check(fastInt, 26, String(n))).toBe(true); }), { numRuns: 2000 });
  });

  it("any text at all: the fast result, when there is one, is pg-types'", () => {
    const text = fc.oneof(fc.string({ maxLength: 40 }), fc.stringMatching(/^[-0-9{}",\\ a-zNUL:+.BC]{0,40}$/));
    fc.assert(fc.property(text, (s) => {
      check(fastInt, 23, s);
      check(fastBool, 16, s);
      check(fastDate, 1184, s);
      check(fastStringArray, 1009, s);
      check(fastIntArray, 1007, s);
      check(fastInt8Array, 1016, s);
      check(fastInterval, 1186, s);
      check(fastBytea, 17, s);
      check(fastFloat, 701, s);
    }), { numRuns: 5000 });
  });

  it("text arrays written as PostgreSQL writes them", () => {
    const element = fc.option(fc.string({ maxLength: 12 }), { nil: null });
    const quote = (s: string) => (s === "" || /[{}",\\\s]/.test(s) || s.toUpperCase() === "NULL" ? `"${s.replace(/["\\]/g, "\\$&")}"` : s);
    fc.assert(fc.property(fc.array(element, { maxLength: 8 }), (items) => {
      const s = `{${items.map((x) => (x === null ? "NULL" : quote(x))).join(",")}}`;
      // An element that is only whitespace trips postgres-array's own reading (not PostgreSQL's), so the fast one may differ by falling back.
      check(fastStringArray, 1009, s);
    }), { numRuns: 3000 });
  });
});

describe("the plugin: fast columns next to PgoutputPlugin, and setTypeParser winning", () => {
  const columns = [
    { name: "i2", typeId: 21 }, { name: "i4", typeId: 23, isKey: true }, { name: "o", typeId: 26 }, { name: "i8", typeId: 20 },
    { name: "b", typeId: 16 }, { name: "d", typeId: 1082 }, { name: "ts", typeId: 1114 }, { name: "tz", typeId: 1184 },
    { name: "ia", typeId: 1007 }, { name: "ta", typeId: 1009 }, { name: "i8a", typeId: 1016 }, { name: "iv", typeId: 1186 },
    { name: "by", typeId: 17 }, { name: "tx", typeId: 25 }, { name: "n", typeId: 1700 }, { name: "f4", typeId: 700 }, { name: "f8", typeId: 701 },
  ];
  const rel = { relationId: 16384, namespace: "public", relationName: "t", columns };
  const rows = [
    ["-32768", "1", "4294967295", "9223372036854775807", "t", "2024-02-29", "2024-02-29 12:34:56.789123", "2024-02-29 12:34:56.5+05:30",
      "{1,NULL,3}", '{"a b",NULL,"NULL",ü}', "{-9223372036854775808}", "1 year 2 mons -3 days +04:05:06.789", "\\x00ff10",
      "plain", "-12.50", "3.14159", "1.25"],
    ["0", "-0", "0", "-1", "f", "0001-01-01 BC", "0044-03-15 12:00:00 BC", "infinity", "{}", "{{a},{b}}", "[0:0]={1}", "@ 1 day", "\\x", "ü€", "NaN", "-Infinity", "1e+300"],
    [null, "2", null, null, null, "-infinity", "0050-06-01 01:02:03", "1999-12-31 23:59:59.999999-00:25:21", null, null, null, "-00:00:00.5", "\\101\\\\", null, "12345678901234567890.123456789", "-0", "0.30000000000000004"],
  ];
  const stream = [encode.relation(rel).bytes, ...rows.map((r) => encode.insert({ relation: rel, newTuple: r }).bytes)];
  const run = (plugin: { parse(b: Buffer): unknown }) => stream.map((b) => plugin.parse(Buffer.from(b)));

  it(`rows deep-equal PgoutputPlugin's, in every zone`, () => {
    for (const tz of ZONES) {
      useZone(tz);
      const theirs = run(new PgoutputPlugin({ protoVersion: 1, publicationNames: ["p"] }));
      const ours = run(new PgoutputWasmPlugin({ protoVersion: 1, publicationNames: ["p"], backend: backend.name }));
      expect(ours).toEqual(theirs);
    }
  });

  it(`a parser set with pg.types.setTypeParser wins over the fast one (checked at each Relation message)`, () => {
    const types = pg.types as unknown as { setTypeParser(oid: number, fn: (s: string) => unknown): void };
    const defaults = [23, 1184, 1009, 25, 1700].map((oid) => [oid, pgParser(oid)] as const);
    // text and numeric have no pg-types parser (noParse): the fast path hands the text over, until one is set.
    expect(fastParserFor(25, pgParser(25))).toBe(readString);
    expect(fastParserFor(1700, pgParser(1700))).toBe(readString);
    const plugin = new PgoutputWasmPlugin({ protoVersion: 1, publicationNames: ["p"], backend: backend.name });
    expect((run(plugin)[1] as { new: { i4: unknown } }).new.i4).toBe(1);
    types.setTypeParser(23, (s) => `int4:${s}`);
    types.setTypeParser(1184, (s) => `tz:${s}`);
    types.setTypeParser(1009, (s) => `ta:${s}`);
    types.setTypeParser(25, (s) => `text:${s}`);
    types.setTypeParser(1700, (s) => `numeric:${s}`);
    try {
      const row = (run(plugin)[1] as { new: Record<string, unknown> }).new;
      expect(row.i4).toBe("int4:1");
      expect(row.tz).toBe("tz:2024-02-29 12:34:56.5+05:30");
      expect(row.ta).toBe('ta:{"a b",NULL,"NULL",ü}');
      expect(row.i2).toBe(-32768); // untouched types keep the fast path
      expect(fastParserFor(23, pgParser(23))).toBeUndefined();
      expect(row.tx).toBe("text:plain");
      expect(row.n).toBe("numeric:-12.50");
      expect(row.f8).toBe(1.25); // untouched float8 stays fast
      expect(fastParserFor(25, pgParser(25))).toBeUndefined();
    } finally {
      for (const [oid, fn] of defaults) types.setTypeParser(oid, fn);
    }
    expect(fastParserFor(23, pgParser(23))).toBe(fastInt);
  });
});
