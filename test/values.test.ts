/**
 * bindings/values: every type in both formats, edge values, and both formats
 * giving the same JS value. Binary inputs are written by
 * devkit/encoder/values-print.ts as PostgreSQL's send functions write them
 * (values-pg.test.ts checks the same against a real server).
 */
import fc from "fast-check";
import pg from "pg";
import { describe, expect, it } from "vitest";
import {
  ValueDecoder, Oid, type ValueOptions, lowerBounds, TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, typesFromCatalog, columnReader, tupleValues,
  tupleObject, unchangedColumnNames, unchangedToast, unresolvedUnchanged, sourceOf,
} from "../bindings/values/index.ts";
import type { Tuple } from "../bindings/tuple.ts";
import { isPgoutputError } from "../bindings/errors.ts";
import {
  printByteaEscape, printByteaHex, printFloat4, sendArray, sendBool, sendDate, sendFloat4, sendFloat8, sendInt2, sendInt4,
  sendInt8, sendInterval, sendNumeric, sendTime, sendTimestamp, sendTimetz, sendUuid, utf8, Writer,
} from "../devkit/encoder/values-print.ts";

const values = new ValueDecoder();

/** Parses `bytes` placed at an offset inside a larger buffer, to catch offset mistakes. */
function at(bytes: Uint8Array): [Uint8Array, number, number] {
  const buf = new Uint8Array(bytes.length + 7).fill(0xee);
  buf.set(bytes, 3);
  return [buf, 3, bytes.length];
}

function fromText(oid: number, text: string, d = values): unknown {
  return d.text(oid, ...at(utf8(text)));
}

function fromBinary(oid: number, bytes: Uint8Array, d = values): unknown {
  return d.binary(oid, ...at(bytes));
}

/** Text and binary forms both give `expected`. */
function both(oid: number, text: string, binary: Uint8Array, expected: unknown, options?: ValueOptions): void {
  const d = options ? new ValueDecoder(options) : values;
  const t = fromText(oid, text, d);
  const b = fromBinary(oid, binary, d);
  expect(t, `text ${JSON.stringify(text)}`).toStrictEqual(expected);
  expect(b, `binary of ${JSON.stringify(text)}`).toStrictEqual(expected);
}

const bytes = (...b: number[]) => Uint8Array.from(b);

describe("bool and integers", () => {
  it("bool", () => {
    both(Oid.bool, "t", sendBool(true), true);
    both(Oid.bool, "f", sendBool(false), false);
  });

  it("int2, int4 extremes", () => {
    for (const v of [0, 1, -1, 32767, -32768]) both(Oid.int2, String(v), sendInt2(v), v);
    for (const v of [0, 7, -7, 2147483647, -2147483648]) both(Oid.int4, String(v), sendInt4(v), v);
  });

  it("oid, xid, cid are unsigned", () => {
    for (const oid of [Oid.oid, Oid.xid, Oid.cid]) {
      both(oid, "4294967295", sendInt4(-1), 4294967295);
      both(oid, "2147483648", sendInt4(-2147483648), 2147483648);
      both(oid, "0", sendInt4(0), 0);
    }
  });

  it("int8 min/max as bigint (default)", () => {
    for (const v of [0n, 1n, -1n, 9223372036854775807n, -9223372036854775808n, 9007199254740993n, -123456789012345n, 1234567890123456n]) {
      both(Oid.int8, String(v), sendInt8(v), v);
    }
  });

  it("int8 as number when exact, else an INVALID_VALUE error", () => {
    both(Oid.int8, "9007199254740991", sendInt8(9007199254740991n), 9007199254740991, { int8: "number" });
    both(Oid.int8, "-42", sendInt8(-42n), -42, { int8: "number" });
    const d = new ValueDecoder({ int8: "number" });
    for (const f of [() => fromText(Oid.int8, "9007199254740992", d), () => fromBinary(Oid.int8, sendInt8(-9223372036854775808n), d)]) {
      try {
        f();
        expect.unreachable();
      } catch (e) {
        expect(isPgoutputError(e) && e.code).toBe("INVALID_VALUE");
      }
    }
  });

  it("int8 as string", () => {
    both(Oid.int8, "-9223372036854775808", sendInt8(-9223372036854775808n), "-9223372036854775808", { int8: "string" });
  });

  it("xid8 is unsigned 64-bit", () => {
    both(Oid.xid8, "18446744073709551615", sendInt8(-1n), 18446744073709551615n);
    both(Oid.xid8, "751", sendInt8(751n), 751n);
  });

  it("rejects text that is not an integer", () => {
    expect(() => fromText(Oid.int4, "12a")).toThrow(/invalid/);
    expect(() => fromText(Oid.int4, "")).toThrow(/invalid/);
    expect(() => fromText(Oid.int8, "1.5")).toThrow(/invalid/);
    expect(() => fromBinary(Oid.int4, bytes(1, 2))).toThrow(/invalid/);
  });
});

describe("floats", () => {
  it("float8 specials, -0, extremes", () => {
    both(Oid.float8, "NaN", sendFloat8(NaN), NaN);
    both(Oid.float8, "Infinity", sendFloat8(Infinity), Infinity);
    both(Oid.float8, "-Infinity", sendFloat8(-Infinity), -Infinity);
    both(Oid.float8, "-0", sendFloat8(-0), -0);
    both(Oid.float8, "0", sendFloat8(0), 0);
    both(Oid.float8, "1.7976931348623157e+308", sendFloat8(Number.MAX_VALUE), Number.MAX_VALUE);
    both(Oid.float8, "5e-324", sendFloat8(5e-324), 5e-324);
    both(Oid.float8, "0.1", sendFloat8(0.1), 0.1);
    both(Oid.float8, "-1.5e-07", sendFloat8(-1.5e-7), -1.5e-7);
  });

  it("float8 text fast path (≤15 digits, no exponent) rounds exactly like Number()", () => {
    for (const t of ["0.1", "-0.1", "123.456", "999999999999999", "0.000000000000000000000001", "1234567890123456.7", "12345678.901234567",
      "0.3", "2.675", "-0", "0", "100", "9007199254740993", "1e-05", "4.35", "0.000001"]) {
      expect(fromText(Oid.float8, t), t).toBe(Number(t));
    }
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 999_999_999_999_999 }), fc.integer({ min: 0, max: 22 }), fc.boolean(), (n, k, neg) => {
        const digits = String(n).padStart(k + 1, "0");
        const t = `${neg ? "-" : ""}${k > 0 ? `${digits.slice(0, -k)}.${digits.slice(-k)}` : digits}`;
        expect(fromText(Oid.float8, t)).toBe(Number(t));
      }),
      { numRuns: 2000 },
    );
  });

  it("float4: the float32's exact value from both formats", () => {
    for (const v of [0.1, 3.4028234663852886e38, 1.401298464324817e-45, -2.5, 16777217, 1e-10, 123456.789]) {
      const f = Math.fround(v);
      both(Oid.float4, printFloat4(f), sendFloat4(f), f);
    }
    expect(fromText(Oid.float4, "0.1")).toBe(0.10000000149011612);
    both(Oid.float4, "NaN", sendFloat4(NaN), NaN);
    both(Oid.float4, "-Infinity", sendFloat4(-Infinity), -Infinity);
    both(Oid.float4, "-0", sendFloat4(-0), -0);
  });
});

describe("numeric", () => {
  const cases = [
    "0", "0.00", "1", "-1", "10000", "9999", "12345678.9", "0.0001", "0.00001", "-0.5", "1.50", "100.000100",
    "123456789012345678901234567890.123456789012345678901234567890", "0.000000000000000000000000000001",
    "NaN", "Infinity", "-Infinity", "1e3".replace("e3", "000"),
  ];
  it("exact strings from both formats, trailing zeros to dscale", () => {
    for (const c of cases) both(Oid.numeric, c, sendNumeric(c), c);
  });

  it("1,000 digits, with and without scale", () => {
    const digits = Array.from({ length: 1000 }, (_, i) => String((i * 7 + 3) % 10)).join("").replace(/^0+/, "");
    both(Oid.numeric, digits, sendNumeric(digits), digits);
    const scaled = `-${digits.slice(0, 400)}.${digits.slice(400)}`;
    both(Oid.numeric, scaled, sendNumeric(scaled), scaled);
    const small = `0.${"0".repeat(500)}${digits.slice(0, 499)}`;
    both(Oid.numeric, small, sendNumeric(small), small);
  });

  it("numeric as number or through a constructor", () => {
    both(Oid.numeric, "1.50", sendNumeric("1.50"), 1.5, { numeric: "number" });
    both(Oid.numeric, "NaN", sendNumeric("NaN"), NaN, { numeric: "number" });
    both(Oid.numeric, "-Infinity", sendNumeric("-Infinity"), -Infinity, { numeric: "number" });
    class Dec {
      constructor(readonly s: string) {}
    }
    both(Oid.numeric, "2.000", sendNumeric("2.000"), new Dec("2.000"), { numeric: (s) => new Dec(s) });
  });
});

describe("money", () => {
  it("bigint minor units from both formats; locale-independent text reading", () => {
    both(Oid.money, "$1,234.56", sendInt8(123456n), 123456n);
    both(Oid.money, "-$0.05", sendInt8(-5n), -5n);
    both(Oid.money, "-$92,233,720,368,547,758.08", sendInt8(-9223372036854775808n), -9223372036854775808n);
    both(Oid.money, "$92,233,720,368,547,758.07", sendInt8(9223372036854775807n), 9223372036854775807n);
    expect(fromText(Oid.money, "1.234,56 €")).toBe(123456n);
    expect(fromText(Oid.money, "($12.00)")).toBe(-1200n);
  });

  it("money as string (C locale form from binary)", () => {
    both(Oid.money, "-$1,234,567.89", sendInt8(-123456789n), "-$1,234,567.89", { money: "string" });
    both(Oid.money, "$0.00", sendInt8(0n), "$0.00", { money: "string" });
  });
});

describe("strings", () => {
  it("text, varchar, bpchar, name, unknown, xml: same string from both formats", () => {
    for (const oid of [Oid.text, Oid.varchar, Oid.bpchar, Oid.name, Oid.unknown, Oid.xml]) {
      for (const s of ["", "a", "héllo wörld", "😀 emoji", "x".repeat(100), "tab\tnew\nline", "padded   "]) both(oid, s, utf8(s), s);
    }
  });

  it('"char": one byte; PostgreSQL 15+ prints non-ASCII as \\ooo', () => {
    both(Oid.char, "a", bytes(0x61), "a");
    both(Oid.char, "\\", bytes(0x5c), "\\");
    both(Oid.char, "", bytes(0), "");
    both(Oid.char, "\\351", bytes(0xe9), "\\351");
    both(Oid.char, "\\200", bytes(0x80), "\\200");
    both(Oid.char, "\\377", bytes(0xff), "\\377");
  });

  it("uuid", () => {
    const u = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
    both(Oid.uuid, u, sendUuid(u), u);
    both(Oid.uuid, "00000000-0000-0000-0000-000000000000", new Uint8Array(16), "00000000-0000-0000-0000-000000000000");
  });

  it("json and jsonb: parsed (default), unicode escapes, raw", () => {
    const text = '{"a": [1, 2.5, null, true], "b": "\\u00e9\\ud83d\\ude00", "c": {"d": "\\"q\\""}}';
    const expected = { a: [1, 2.5, null, true], b: "é😀", c: { d: '"q"' } };
    both(Oid.json, text, utf8(text), expected);
    both(Oid.jsonb, text, new Writer().u8(1).raw(utf8(text)).done(), expected);
    both(Oid.jsonb, text, new Writer().u8(1).raw(utf8(text)).done(), text, { json: "raw" });
    both(Oid.json, "[1]", utf8("[1]"), 1, { json: (s) => JSON.parse(s)[0] });
    both(Oid.jsonb, '"scalar"', new Writer().u8(1).raw(utf8('"scalar"')).done(), "scalar");
    expect(() => fromBinary(Oid.jsonb, new Writer().u8(2).raw(utf8("{}")).done())).toThrow(/version/);
  });

  it("bytea: every byte value, hex and escape formats", () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    both(Oid.bytea, printByteaHex(all), all, all);
    expect(fromText(Oid.bytea, printByteaEscape(all))).toStrictEqual(all);
    expect(fromText(Oid.bytea, printByteaHex(all).toUpperCase().replace("\\X", "\\x"))).toStrictEqual(all);
    both(Oid.bytea, "\\x", new Uint8Array(0), new Uint8Array(0));
    expect(fromText(Oid.bytea, "")).toStrictEqual(new Uint8Array(0));
    expect(fromText(Oid.bytea, "ab\\\\c\\000")).toStrictEqual(bytes(0x61, 0x62, 0x5c, 0x63, 0));
  });

  it("binary values are copies, not views of the input", () => {
    const [buf, off, len] = at(bytes(1, 2, 3));
    const v = values.binary(Oid.bytea, buf, off, len) as Uint8Array;
    buf.fill(0);
    expect(v).toStrictEqual(bytes(1, 2, 3));
  });
});

describe("dates and times", () => {
  const day = (y: number, m: number, d: number) => Date.UTC(y, m - 1, d) / 86_400_000;
  const bc44 = (() => {
    const dt = new Date(0);
    dt.setUTCFullYear(-43, 2, 15);
    return Math.floor(dt.getTime() / 86_400_000);
  })();

  it("date: PostgreSQL's text by default, BC, far future, infinity", () => {
    both(Oid.date, "2024-02-29", sendDate(day(2024, 2, 29)), "2024-02-29");
    both(Oid.date, "2000-01-01", sendDate(10957), "2000-01-01");
    both(Oid.date, "1970-01-01", sendDate(0), "1970-01-01");
    both(Oid.date, "0044-03-15 BC", sendDate(bc44), "0044-03-15 BC");
    both(Oid.date, "4714-11-24 BC", sendDate(-2440588), "4714-11-24 BC");
    both(Oid.date, "0001-01-01", sendDate(-719162), "0001-01-01");
    both(Oid.date, "0001-12-31 BC", sendDate(-719163), "0001-12-31 BC");
    // 9224318015999999999 µs (the last timestamp) lies in day 106762939 after 1970-01-01.
    both(Oid.date, "294276-12-31", sendDate(106762939), "294276-12-31");
    // The last date PostgreSQL accepts: 2145031948 days after 2000-01-01.
    both(Oid.date, "5874897-12-31", new Writer().i32(2145031948).done(), "5874897-12-31");
    both(Oid.date, "infinity", sendDate(Infinity), "infinity");
    both(Oid.date, "-infinity", sendDate(-Infinity), "-infinity");
  });

  it("date options: days, iso, Date", () => {
    both(Oid.date, "0044-03-15 BC", sendDate(bc44), bc44, { date: "days" });
    both(Oid.date, "-infinity", sendDate(-Infinity), -Infinity, { date: "days" });
    both(Oid.date, "0044-03-15 BC", sendDate(bc44), "-000043-03-15", { date: "iso" });
    both(Oid.date, "10000-01-01", sendDate(day(10000, 1, 1)), "+010000-01-01", { date: "iso" });
    both(Oid.date, "2024-02-29", sendDate(day(2024, 2, 29)), "2024-02-29", { date: "iso" });
    both(Oid.date, "2024-02-29", sendDate(day(2024, 2, 29)), new Date(Date.UTC(2024, 1, 29)), { date: "Date" });
    both(Oid.date, "infinity", sendDate(Infinity), Infinity, { date: "Date" });
  });

  it("time: 24:00:00, microseconds", () => {
    both(Oid.time, "00:00:00", sendTime(0), "00:00:00");
    both(Oid.time, "24:00:00", sendTime(86_400_000_000), "24:00:00");
    both(Oid.time, "04:05:06.789", sendTime(14_706_789_000), "04:05:06.789");
    both(Oid.time, "23:59:59.999999", sendTime(86_399_999_999), "23:59:59.999999");
    both(Oid.time, "00:00:00.000001", sendTime(1), "00:00:00.000001");
    both(Oid.time, "24:00:00", sendTime(86_400_000_000), 86_400_000_000, { time: "microseconds" });
    both(Oid.time, "12:34:56.5", sendTime(45_296_500_000), 45_296_500_000, { time: "microseconds" });
  });

  it("timetz: offsets with minutes and seconds", () => {
    both(Oid.timetz, "04:05:06.789+05:30", sendTimetz(14_706_789_000, 19800), "04:05:06.789+05:30");
    both(Oid.timetz, "00:00:00+00", sendTimetz(0, 0), "00:00:00+00");
    both(Oid.timetz, "24:00:00-15:59", sendTimetz(86_400_000_000, -57540), "24:00:00-15:59");
    both(Oid.timetz, "12:00:00-00:25:21", sendTimetz(43_200_000_000, -1521), "12:00:00-00:25:21");
    both(Oid.timetz, "12:00:00+05:53:28", sendTimetz(43_200_000_000, 21208), "12:00:00+05:53:28");
    both(Oid.timetz, "12:00:00-00:25:21", sendTimetz(43_200_000_000, -1521), { microseconds: 43_200_000_000, offset: -1521 }, { time: "microseconds" });
  });

  const ts = (iso: string, us = 0) => BigInt(Date.parse(iso)) * 1000n + BigInt(us);

  it("timestamp: µs, BC, year 294276, infinity", () => {
    both(Oid.timestamp, "2024-02-29 04:05:06.123456", sendTimestamp(ts("2024-02-29T04:05:06.123Z", 456)), ts("2024-02-29T04:05:06.123Z", 456));
    both(Oid.timestamp, "2000-01-01 00:00:00", sendTimestamp(946_684_800_000_000n), 946_684_800_000_000n);
    both(Oid.timestamp, "1969-12-31 23:59:59.999999", sendTimestamp(-1n), -1n);
    const bc = BigInt(bc44) * 86_400_000_000n + 43_200_000_000n;
    both(Oid.timestamp, "0044-03-15 12:00:00 BC", sendTimestamp(bc), bc);
    // 4713 BC: the earliest PostgreSQL accepts; 294276 AD: the latest.
    const first = -210866803200000000n;
    both(Oid.timestamp, "4714-11-24 00:00:00 BC", sendTimestamp(first), first);
    const last = 9224318015999999999n;
    both(Oid.timestamp, "294276-12-31 23:59:59.999999", sendTimestamp(last), last);
    both(Oid.timestamp, "infinity", sendTimestamp(TIMESTAMP_INFINITY), TIMESTAMP_INFINITY);
    both(Oid.timestamp, "-infinity", sendTimestamp(TIMESTAMP_NEG_INFINITY), TIMESTAMP_NEG_INFINITY);
  });

  it("timestamptz: the text's offset applied (hours, minutes, seconds)", () => {
    const v = ts("2024-02-28T22:35:06.789Z");
    both(Oid.timestamptz, "2024-02-29 04:05:06.789+05:30", sendTimestamp(v), v);
    both(Oid.timestamptz, "2024-02-28 22:35:06.789+00", sendTimestamp(v), v);
    both(Oid.timestamptz, "2024-02-28 17:35:06.789-05", sendTimestamp(v), v);
    const lmt = ts("1850-01-01T04:56:02Z");
    both(Oid.timestamptz, "1850-01-01 00:00:00-04:56:02", sendTimestamp(lmt), lmt);
    const bc = BigInt(bc44) * 86_400_000_000n + 43_200_000_000n;
    both(Oid.timestamptz, "0044-03-15 12:00:00+00 BC", sendTimestamp(bc), bc);
    both(Oid.timestamptz, "294276-12-31 23:59:59.999999+00", sendTimestamp(9224318015999999999n), 9224318015999999999n);
    both(Oid.timestamptz, "infinity", sendTimestamp(TIMESTAMP_INFINITY), TIMESTAMP_INFINITY);
  });

  it("timestamp options: iso and Date", () => {
    const v = ts("2024-02-29T04:05:06.123Z", 456);
    both(Oid.timestamptz, "2024-02-29 04:05:06.123456+00", sendTimestamp(v), "2024-02-29T04:05:06.123456Z", { timestamp: "iso" });
    both(Oid.timestamp, "2024-02-29 04:05:06.123456", sendTimestamp(v), "2024-02-29T04:05:06.123456", { timestamp: "iso" });
    both(Oid.timestamp, "294276-12-31 23:59:59.999999", sendTimestamp(9224318015999999999n), "+294276-12-31T23:59:59.999999", { timestamp: "iso" });
    const bc = BigInt(bc44) * 86_400_000_000n + 43_200_000_000n;
    both(Oid.timestamptz, "0044-03-15 12:00:00+00 BC", sendTimestamp(bc), "-000043-03-15T12:00:00.000000Z", { timestamp: "iso" });
    both(Oid.timestamptz, "-infinity", sendTimestamp(TIMESTAMP_NEG_INFINITY), "-infinity", { timestamp: "iso" });
    both(Oid.timestamptz, "2024-02-29 04:05:06.123456+00", sendTimestamp(v), new Date("2024-02-29T04:05:06.123Z"), { timestamp: "Date" });
    both(Oid.timestamptz, "1969-12-31 23:59:59.999999+00", sendTimestamp(-1n), new Date(-1), { timestamp: "Date" });
    both(Oid.timestamptz, "infinity", sendTimestamp(TIMESTAMP_INFINITY), Infinity, { timestamp: "Date" });
  });

  it("interval: months, days and µs kept apart", () => {
    const iv = (months: number, days: number, microseconds: bigint) => ({ months, days, microseconds });
    const cases: [string, ReturnType<typeof iv>][] = [
      ["00:00:00", iv(0, 0, 0n)],
      ["1 year 2 mons 3 days 04:05:06.789", iv(14, 3, 14_706_789_000n)],
      ["-00:00:01", iv(0, 0, -1_000_000n)],
      ["1 day", iv(0, 1, 0n)],
      ["-1 days", iv(0, -1, 0n)],
      ["1 mon -1 days +00:00:01", iv(1, -1, 1_000_000n)],
      ["-1 years -2 mons +3 days -04:05:06.000001", iv(-14, 3, -14_706_000_001n)],
      ["178956970 years 7 mons 2147483647 days 2562047788:00:54.775807", iv(2147483647, 2147483647, 9223372036854775807n)],
      ["-178956970 years -8 mons -2147483648 days -2562047788:00:54.775808", iv(-2147483648, -2147483648, -9223372036854775808n)],
      ["100:00:00", iv(0, 0, 360_000_000_000n)],
      ["infinity", iv(2147483647, 2147483647, 9223372036854775807n)],
    ];
    for (const [text, v] of cases) both(Oid.interval, text, sendInterval(v), v);
  });
});

describe("network, bits, misc", () => {
  const inet = (family: number, bits: number, cidr: boolean, addr: number[]) =>
    new Writer().u8(family).u8(bits).u8(cidr ? 1 : 0).u8(addr.length).raw(Uint8Array.from(addr)).done();
  const v6 = (...words: number[]) => words.flatMap((x) => [x >> 8, x & 0xff]);

  it("inet and cidr print as PostgreSQL does", () => {
    both(Oid.inet, "192.168.0.1", inet(2, 32, false, [192, 168, 0, 1]), "192.168.0.1");
    both(Oid.inet, "192.168.0.1/24", inet(2, 24, false, [192, 168, 0, 1]), "192.168.0.1/24");
    both(Oid.cidr, "10.0.0.0/8", inet(2, 8, true, [10, 0, 0, 0]), "10.0.0.0/8");
    both(Oid.cidr, "10.1.2.3/32", inet(2, 32, true, [10, 1, 2, 3]), "10.1.2.3/32");
    both(Oid.inet, "::1", inet(3, 128, false, v6(0, 0, 0, 0, 0, 0, 0, 1)), "::1");
    both(Oid.inet, "::", inet(3, 128, false, v6(0, 0, 0, 0, 0, 0, 0, 0)), "::");
    both(Oid.inet, "2001:db8::1/64", inet(3, 64, false, v6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)), "2001:db8::1/64");
    both(Oid.inet, "::ffff:1.2.3.4", inet(3, 128, false, v6(0, 0, 0, 0, 0, 0xffff, 0x102, 0x304)), "::ffff:1.2.3.4");
    both(Oid.inet, "::1.2.3.4", inet(3, 128, false, v6(0, 0, 0, 0, 0, 0, 0x102, 0x304)), "::1.2.3.4");
    both(Oid.inet, "1:0:1::1", inet(3, 128, false, v6(1, 0, 1, 0, 0, 0, 0, 1)), "1:0:1::1");
    both(Oid.inet, "1:0:0:1::1", inet(3, 128, false, v6(1, 0, 0, 1, 0, 0, 0, 1)), "1:0:0:1::1");
    both(Oid.inet, "1::1:0:0:1:1", inet(3, 128, false, v6(1, 0, 0, 1, 0, 0, 1, 1)), "1::1:0:0:1:1");
    both(Oid.cidr, "fe80::/10", inet(3, 10, true, v6(0xfe80, 0, 0, 0, 0, 0, 0, 0)), "fe80::/10");
  });

  it("macaddr, macaddr8", () => {
    both(Oid.macaddr, "08:00:2b:01:02:03", bytes(8, 0, 0x2b, 1, 2, 3), "08:00:2b:01:02:03");
    both(Oid.macaddr8, "08:00:2b:ff:fe:01:02:03", bytes(8, 0, 0x2b, 0xff, 0xfe, 1, 2, 3), "08:00:2b:ff:fe:01:02:03");
  });

  it("bit and varbit", () => {
    both(Oid.bit, "10100000111", new Writer().i32(11).u8(0b10100000).u8(0b11100000).done(), "10100000111");
    both(Oid.varbit, "", new Writer().i32(0).done(), "");
    both(Oid.varbit, "11111111", new Writer().i32(8).u8(0xff).done(), "11111111");
  });

  it("pg_lsn, tid, int2vector, oidvector", () => {
    both(Oid.pg_lsn, "16/B374D848", new Writer().i32(0x16).i32(0xb374d848).done(), "16/B374D848");
    both(Oid.pg_lsn, "0/0", new Writer().i32(0).i32(0).done(), "0/0");
    both(Oid.tid, "(4294967295,65535)", new Writer().i32(-1).i16(-1).done(), "(4294967295,65535)");
    const vec = (width: 2 | 4, xs: number[]) => {
      const out = new Writer().i32(1).i32(0).i32(width === 2 ? Oid.int2 : Oid.oid).i32(xs.length).i32(0);
      for (const x of xs) (width === 2 ? out.i32(2).i16(x) : out.i32(4).i32(x));
      return out.done();
    };
    both(Oid.int2vector, "1 -2 3", vec(2, [1, -2, 3]), [1, -2, 3]);
    both(Oid.oidvector, "23 4294967295", vec(4, [23, -1]), [23, 4294967295]);
    both(Oid.oidvector, "", new Writer().i32(0).i32(0).i32(Oid.oid).done(), []);
  });

  it("types without a parser: text → string, binary → a copy of the bytes", () => {
    expect(fromText(Oid.point, "(1,2)")).toBe("(1,2)");
    expect(fromBinary(Oid.point, sendFloat8(1))).toStrictEqual(sendFloat8(1));
    expect(fromText(Oid.tsvector, "'a' 'b':1")).toBe("'a' 'b':1");
    expect(fromText(Oid.int4range, "[1,5)")).toBe("[1,5)");
    expect(fromText(123456, "whatever")).toBe("whatever");
    expect(fromBinary(123456, bytes(1, 2))).toStrictEqual(bytes(1, 2));
  });
});

describe("arrays", () => {
  const int4s = (xs: (number | null)[]) => xs.map((x) => (x === null ? null : sendInt4(x)));
  const texts = (xs: (string | null)[]) => xs.map((x) => (x === null ? null : utf8(x)));

  it("1-D with NULLs", () => {
    both(Oid._int4, "{1,NULL,-3}", sendArray(int4s([1, null, -3]), Oid.int4), [1, null, -3]);
  });

  it("empty", () => {
    both(Oid._int4, "{}", sendArray([], Oid.int4), []);
    both(Oid._text, "{}", sendArray([], Oid.text), []);
  });

  it("quoting and escaping", () => {
    const elems = ['a"b', "back\\slash", "com,ma", "{br}aces", "NULL", "null", "", " lead", "trail ", "sp ace", "é", "plain"];
    const text = '{"a\\"b","back\\\\slash","com,ma","{br}aces","NULL","null",""," lead","trail ","sp ace",é,plain}';
    both(Oid._text, text, sendArray(texts(elems), Oid.text), elems);
    both(Oid._varchar, "{NULL,NuLl,\"NULL\"}", sendArray(texts([null, null, "NULL"]), Oid.varchar), [null, null, "NULL"]);
  });

  it("backslashes outside quotes and white space around elements (array_in accepts them)", () => {
    expect(fromText(Oid._text, "{ a , b\\,c ,\\ d\\ }")).toStrictEqual(["a", "b,c", " d "]);
    expect(fromText(Oid._int4, "{ 1 ,\t2 }")).toStrictEqual([1, 2]);
  });

  it("multidimensional", () => {
    both(Oid._int4, "{{1,2},{3,NULL}}", sendArray([int4s([1, 2]), int4s([3, null])], Oid.int4), [[1, 2], [3, null]]);
    const d3 = [[["a", "b"], ["c", "d"]], [["e", "f"], ["g", null]]];
    both(Oid._text, "{{{a,b},{c,d}},{{e,f},{g,NULL}}}", sendArray(d3.map((x) => x.map(texts)), Oid.text), d3);
  });

  it("lower bounds other than 1 are kept as lowerBounds", () => {
    const v = Object.assign([1, 2], { lowerBounds: [0] });
    both(Oid._int4, "[0:1]={1,2}", sendArray(int4s([1, 2]), Oid.int4, [0]), v);
    const m = Object.assign([[1], [2]], { lowerBounds: [-2, 5] });
    both(Oid._int4, "[-2:-1][5:5]={{1},{2}}", sendArray([int4s([1]), int4s([2])], Oid.int4, [-2, 5]), m);
    expect(lowerBounds(fromText(Oid._int4, "[0:1]={1,2}") as unknown[])).toStrictEqual([0]);
    expect(lowerBounds(fromText(Oid._int4, "{{1},{2}}") as unknown[])).toStrictEqual([1, 1]);
    expect("lowerBounds" in (fromText(Oid._int4, "[1:2]={1,2}") as object)).toBe(false);
  });

  it("arrays of every parsed type use the element parser in both formats", () => {
    both(Oid._bool, "{t,f,NULL}", sendArray([sendBool(true), sendBool(false), null], Oid.bool), [true, false, null]);
    both(Oid._int8, "{9223372036854775807,-1}", sendArray([sendInt8(9223372036854775807n), sendInt8(-1n)], Oid.int8), [9223372036854775807n, -1n]);
    both(Oid._float4, "{0.1,NaN,-Infinity}", sendArray([sendFloat4(0.1), sendFloat4(NaN), sendFloat4(-Infinity)], Oid.float4), [Math.fround(0.1), NaN, -Infinity]);
    both(Oid._numeric, "{1.50,NaN}", sendArray([sendNumeric("1.50"), sendNumeric("NaN")], Oid.numeric), ["1.50", "NaN"]);
    both(Oid._bytea, '{"\\\\x00ff",NULL}', sendArray([bytes(0, 255), null], Oid.bytea), [bytes(0, 255), null]);
    both(Oid._jsonb, '{"{\\"a\\": 1}",null}'.replace("null", "NULL"), sendArray([new Writer().u8(1).raw(utf8('{"a": 1}')).done(), null], Oid.jsonb), [{ a: 1 }, null]);
    const bc44 = Math.floor(new Date("-000043-03-15T00:00:00Z").getTime() / 864e5);
    both(Oid._date, '{2024-02-29,"0044-03-15 BC",infinity}', sendArray([sendDate(19782), sendDate(bc44), sendDate(Infinity)], Oid.date), ["2024-02-29", "0044-03-15 BC", "infinity"]);
    const t = 1709179506123456n;
    both(Oid._timestamptz, `{"2024-02-29 04:05:06.123456+00",infinity}`, sendArray([sendTimestamp(t), sendTimestamp(TIMESTAMP_INFINITY)], Oid.timestamptz), [t, TIMESTAMP_INFINITY]);
    both(Oid._interval, '{"1 day -00:00:01"}', sendArray([sendInterval({ months: 0, days: 1, microseconds: -1_000_000n })], Oid.interval), [{ months: 0, days: 1, microseconds: -1_000_000n }]);
    both(Oid._uuid, "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", sendArray([sendUuid("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")], Oid.uuid), ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]);
    both(Oid._char, '{a,"\\\\","\\\\351"}', sendArray([bytes(0x61), bytes(0x5c), bytes(0xe9)], Oid.char), ["a", "\\", "\\351"]);
    both(Oid._money, '{"$1.00","-$2.50"}', sendArray([sendInt8(100n), sendInt8(-250n)], Oid.money), [100n, -250n]);
  });

  it("box arrays use ; between elements", () => {
    expect(fromText(Oid._box, "{(1,1),(0,0);(2,2),(1,1)}")).toStrictEqual(["(1,1),(0,0)", "(2,2),(1,1)"]);
  });

  it("malformed arrays throw INVALID_VALUE", () => {
    for (const bad of ["", "{1,2", "{1,2}}", "1,2", '{"a}', "[0:1]{1,2}"]) {
      expect(() => fromText(Oid._int4, bad), bad).toThrow(/invalid/);
    }
    expect(() => fromBinary(Oid._int4, new Writer().i32(1).i32(0).i32(23).i32(2).i32(1).i32(4).i32(1).done())).toThrow(/invalid/);
  });
});

describe("user types: domains, enums, arrays of them", () => {
  const DOMAIN = 90001;
  const ENUM = 90002;
  const ENUM_ARRAY = 90003;
  const DOMAIN_ARRAY = 90004;
  const d = new ValueDecoder({
    types: {
      [DOMAIN]: { baseType: Oid.int8 },
      [ENUM]: { baseType: Oid.text },
      [ENUM_ARRAY]: { elementType: ENUM },
      [DOMAIN_ARRAY]: { elementType: DOMAIN },
    },
  });

  it("domain over int8 and enum labels decode as their base type", () => {
    expect(fromText(DOMAIN, "42", d)).toBe(42n);
    expect(fromBinary(DOMAIN, sendInt8(42n), d)).toBe(42n);
    expect(fromText(ENUM, "happy", d)).toBe("happy");
    expect(fromBinary(ENUM, utf8("happy"), d)).toBe("happy");
  });

  it("arrays of enums and domains", () => {
    expect(fromText(ENUM_ARRAY, '{happy,"so so",NULL}', d)).toStrictEqual(["happy", "so so", null]);
    expect(fromBinary(ENUM_ARRAY, sendArray([utf8("happy"), utf8("so so"), null], ENUM), d)).toStrictEqual(["happy", "so so", null]);
    expect(fromText(DOMAIN_ARRAY, "{1,2}", d)).toStrictEqual([1n, 2n]);
    expect(fromBinary(DOMAIN_ARRAY, sendArray([sendInt8(1n), sendInt8(2n)], DOMAIN), d)).toStrictEqual([1n, 2n]);
  });

  it("unknown user types fall back to string / bytes; cycles end", () => {
    expect(fromBinary(ENUM, utf8("happy"))).toStrictEqual(utf8("happy"));
    const loop = new ValueDecoder({ types: { 1: { baseType: 2 }, 2: { baseType: 1 } } });
    expect(fromText(1, "x", loop)).toBe("x");
  });

  it("typesFromCatalog", () => {
    expect(
      typesFromCatalog([
        { oid: "90002", typtype: "e", typbasetype: "0", typelem: "0", typlen: "4" },
        { oid: 90001, typtype: "d", typbasetype: 20, typelem: 0, typlen: 8 },
        { oid: 90003, typtype: "b", typbasetype: 0, typelem: 90002, typlen: -1 },
      ]),
    ).toStrictEqual({ 90002: { baseType: 25 }, 90001: { baseType: 20 }, 90003: { elementType: 90002 } });
  });
});

describe("overrides and pg-types", () => {
  it("parsers[oid] win, per format; a missing format falls through", () => {
    const d = new ValueDecoder({ parsers: { [Oid.int4]: { text: (s) => `int:${s}` }, [Oid.point]: { binary: (b) => b.length } } });
    expect(fromText(Oid.int4, "12", d)).toBe("int:12");
    expect(fromBinary(Oid.int4, sendInt4(12), d)).toBe(12);
    expect(fromBinary(Oid.point, new Uint8Array(16), d)).toBe(16);
    // Element overrides apply inside arrays too.
    expect(fromText(Oid._int4, "{1,2}", d)).toStrictEqual(["int:1", "int:2"]);
  });

  it("binary overrides get a copy", () => {
    let got: Uint8Array | undefined;
    const d = new ValueDecoder({ parsers: { 7777: { binary: (b) => (got = b) } } });
    const [buf, off, len] = at(bytes(9, 8));
    d.binary(7777, buf, off, len);
    buf.fill(0);
    expect(got).toStrictEqual(bytes(9, 8));
  });

  it("pg.types.getTypeParser: pg's parsers where pg has one, built-ins elsewhere", () => {
    const d = new ValueDecoder({ getTypeParser: pg.types.getTypeParser });
    // pg: int8 → string, timestamptz → Date, int4 → number, json → parsed, _int4 → array.
    expect(fromText(Oid.int8, "9223372036854775807", d)).toBe("9223372036854775807");
    expect(fromText(Oid.timestamptz, "2024-02-29 04:05:06.789+00", d)).toStrictEqual(new Date("2024-02-29T04:05:06.789Z"));
    expect(fromText(Oid.int4, "-5", d)).toBe(-5);
    expect(fromText(Oid.json, '{"a":1}', d)).toStrictEqual({ a: 1 });
    expect(fromText(Oid._int4, "{1,NULL}", d)).toStrictEqual([1, null]);
    expect(fromText(Oid.interval, "1 day", d)).toMatchObject({ days: 1 });
    // pg has no parser for money or xid (its default returns the text): the built-in is used.
    expect(fromText(Oid.money, "$1.00", d)).toBe(100n);
    expect(fromText(Oid.xid, "4294967295", d)).toBe(4294967295);
    // pg's binary parsers get a Buffer.
    expect(fromBinary(Oid.int4, sendInt4(-7), d)).toBe(-7);
    expect(fromBinary(Oid.int8, sendInt8(5n), d)).toBe(pg.types.getTypeParser(20, "binary")(Buffer.from(sendInt8(5n))));
    expect(fromBinary(Oid.uuid, sendUuid("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), d)).toBe("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  });

  it("pg's setTypeParser configuration is kept", () => {
    const OID = 1266; // timetz
    const before = pg.types.getTypeParser(OID, "text");
    pg.types.setTypeParser(OID, (s: string) => `custom ${s}`);
    try {
      const d = new ValueDecoder({ getTypeParser: pg.types.getTypeParser });
      expect(fromText(OID, "04:05:06+02", d)).toBe("custom 04:05:06+02");
      expect(fromText(Oid.timetz, "04:05:06+02")).toBe("04:05:06+02");
    } finally {
      pg.types.setTypeParser(OID, before as (s: string) => unknown);
    }
  });

  it("a pg Client's getTypeParser (TypeOverrides) works too", () => {
    const getTypeParser = ((oid: number, format?: "text" | "binary") =>
      oid === 23 && format !== "binary" ? (s: string) => Number(s) * 2 : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser;
    const client = new pg.Client({ types: { getTypeParser } });
    const d = new ValueDecoder({ getTypeParser: (oid, format) => client.getTypeParser(oid, format) });
    expect(fromText(Oid.int4, "21", d)).toBe(42);
  });

  it("parsers[oid] beat getTypeParser", () => {
    const d = new ValueDecoder({ getTypeParser: pg.types.getTypeParser, parsers: { [Oid.int8]: { text: (s) => BigInt(s) } } });
    expect(fromText(Oid.int8, "1", d)).toBe(1n);
  });

  it("bad options are TypeErrors", () => {
    expect(() => new ValueDecoder({ int8: "float" as never })).toThrow(TypeError);
    expect(() => new ValueDecoder({ getTypeParser: 5 as never })).toThrow(TypeError);
  });
});

describe("laziness and caching", () => {
  it("a parser is resolved once per OID and format", () => {
    let calls = 0;
    const d = new ValueDecoder({
      getTypeParser: (oid, format) => {
        calls++;
        return pg.types.getTypeParser(oid, format);
      },
    });
    for (let i = 0; i < 10; i++) fromText(Oid.int4, "1", d);
    const first = calls;
    for (let i = 0; i < 10; i++) fromText(Oid.int4, "1", d);
    expect(calls).toBe(first);
    for (let i = 0; i < 3; i++) fromText(99999, "x", d);
    expect(calls).toBeLessThanOrEqual(first + 2);
  });

  it("nothing is parsed at construction; textParser/binaryParser are reusable", () => {
    let calls = 0;
    const d = new ValueDecoder({ parsers: { [Oid.int4]: { text: (s) => (calls++, Number(s)) } } });
    expect(calls).toBe(0);
    const p = d.textParser(Oid.int4);
    const b = utf8("12");
    expect(p(b, 0, 2, -1)).toBe(12);
    expect(calls).toBe(1);
  });
});

describe("unchanged TOAST helpers (toast.ts)", () => {
  type Col = { kind: "null" | "unchanged" | "text" | "binary"; bytes?: Uint8Array };
  const relation = { columns: [{ name: "id", typeId: Oid.int4, typeModifier: -1 }, { name: "body", typeId: Oid.text, typeModifier: -1 }, { name: "n", typeId: Oid.int8, typeModifier: -1 }] };
  const tuple = (cols: Col[]): Tuple =>
    ({
      length: cols.length,
      relation,
      index: (c: number | string) => (typeof c === "number" ? c : relation.columns.findIndex((x) => x.name === c)),
      kind: (i: number) => cols[i]!.kind,
      isNull: (i: number) => cols[i]!.kind === "null",
      bytes: (i: number) => (cols[i]!.kind === "null" ? null : cols[i]!.kind === "unchanged" ? unchangedToast : cols[i]!.bytes!.slice()),
      unchangedColumns: () => cols.flatMap((c, i) => (c.kind === "unchanged" ? [i] : [])),
    }) as unknown as Tuple;
  const t = (s: string): Col => ({ kind: "text", bytes: utf8(s) });
  const read = columnReader(values);

  it("the marker, never null; names of unchanged columns", () => {
    const row = tuple([t("1"), { kind: "unchanged" }, { kind: "binary", bytes: sendInt8(5n) }]);
    expect(tupleValues(row, read)).toStrictEqual([1, unchangedToast, 5n]);
    expect(unchangedColumnNames(row)).toStrictEqual(["body"]);
    expect(tupleObject(row, read)).toStrictEqual({ id: 1, body: unchangedToast, n: 5n });
  });

  it("filled from an old tuple that carries the value (O), not from a key tuple's n (K)", () => {
    const row = tuple([t("1"), { kind: "unchanged" }, t("7")]);
    const full = tuple([t("1"), t("old body"), t("6")]);
    const key = tuple([t("1"), { kind: "null" }, { kind: "null" }]);
    expect(tupleValues(row, read, { old: full })).toStrictEqual([1, "old body", 7n]);
    expect(tupleValues(row, read, { old: key })).toStrictEqual([1, unchangedToast, 7n]);
    expect(unresolvedUnchanged(row, full)).toStrictEqual([]);
    expect(unresolvedUnchanged(row, key)).toStrictEqual([1]);
    expect(sourceOf(row, 1, full)).toBe(full);
  });
});
