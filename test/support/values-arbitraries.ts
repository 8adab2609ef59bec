/**
 * fast-check generators of typed values with their text form (as
 * PostgreSQL prints it) and binary form (as its send function writes it).
 * values-property.test.ts checks parse(text) and parse(binary) against the
 * value; values-pg.test.ts also has the server print and send each value
 * and checks both forms against these.
 */
import fc from "fast-check";
import { Oid } from "../../bindings/values/oids.ts";
import {
  printArray, printByteaHex, printDate, printFloat4, printFloat8, printInterval, printMoney, printTime, printTimestamp,
  printTimetz, sendArray, sendBool, sendDate, sendFloat4, sendFloat8, sendInt2, sendInt4, sendInt8, sendInterval,
  sendNumeric, sendTime, sendTimestamp, sendTimetz, sendUuid, utf8, Writer, type TextTree,
} from "../../devkit/encoder/values-print.ts";

export interface Sample {
  /** The JS value the default ValueDecoder must give. */
  value: unknown;
  /** The text PostgreSQL prints (TimeZone UTC, DateStyle ISO, IntervalStyle postgres). */
  text: string;
  /** The bytes PostgreSQL's send function writes. */
  binary: Uint8Array;
}

export interface Generator {
  /** SQL type name. */
  type: string;
  oid: number;
  arb: fc.Arbitrary<Sample>;
  /** Oldest server major version whose output matches (e.g. "char" \ooo since 15). */
  since?: number;
}

const sample = (value: unknown, text: string, binary: Uint8Array): Sample => ({ value, text, binary });

/** Text without NUL (PostgreSQL text cannot hold it). */
const pgString = fc.string({ unit: "grapheme", maxLength: 30 }).filter((s) => !s.includes("\0"));
/** Strings rich in the characters arrays must quote or escape. */
const trickyString = fc.oneof(
  pgString,
  fc.string({ unit: fc.constantFrom('"', "\\", ",", "{", "}", " ", "\t", "\n", "a", "é", "N", "U", "L", ";"), maxLength: 8 }),
  fc.constantFrom("NULL", "null", "", " ", "NuLl"),
);

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Days since 1970 within PostgreSQL's date range and Date's: 4714-11-24 BC … year 275759. */
const dayArb = fc.integer({ min: -2440588, max: 99_999_999 });
const FIRST_TS = -210866803200000000n;
const LAST_TS = 99_999_999n * 86_400_000_000n;
const timestampArb = fc.oneof(
  fc.bigInt({ min: FIRST_TS, max: LAST_TS }),
  // Near today, where most data is; and whole seconds, to get fractions of every length.
  fc.bigInt({ min: 0n, max: 4_000_000_000_000_000n }),
  fc.bigInt({ min: -2_000_000_000n, max: 4_000_000_000n }).map((s) => s * 1_000_000n),
);
const offsetArb = fc.oneof(fc.integer({ min: -57599, max: 57599 }), fc.integer({ min: -15, max: 15 }).map((h) => h * 3600), fc.constantFrom(19800, -1521, 21208));
const timeArb = fc.oneof(fc.integer({ min: 0, max: 86_400_000_000 }), fc.integer({ min: 0, max: 86_400 }).map((s) => s * 1_000_000));

function numericText(neg: boolean, int: string, frac: string): string {
  const i = int.replace(/^0+/, "") || "0";
  const zero = /^0*$/.test(int + frac);
  return `${neg && !zero ? "-" : ""}${i}${frac.length > 0 ? `.${frac}` : ""}`;
}

const digitString = (max: number) => fc.string({ unit: fc.constantFrom(..."0123456789"), maxLength: max });

const numericArb = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(fc.boolean(), digitString(40), digitString(40)).map(([n, i, f]) => numericText(n, i, f)) },
  { weight: 1, arbitrary: fc.tuple(fc.boolean(), digitString(1000), digitString(300)).map(([n, i, f]) => numericText(n, i, f)) },
  { weight: 1, arbitrary: fc.constantFrom("NaN", "Infinity", "-Infinity") },
);

function bitsArb(max: number) {
  return fc.array(fc.boolean(), { maxLength: max }).map((bits) => {
    const text = bits.map((b) => (b ? "1" : "0")).join("");
    const out = new Writer().i32(bits.length);
    for (let i = 0; i < bits.length; i += 8) {
      let byte = 0;
      for (let j = 0; j < 8; j++) byte |= (bits[i + j] ? 1 : 0) << (7 - j);
      out.u8(byte);
    }
    return sample(text, text, out.done());
  });
}

const jsonArb = fc
  .jsonValue({ maxDepth: 3 })
  .map((v) => JSON.parse(JSON.stringify(v)) as unknown) // -0 → 0
  .filter((v) => !JSON.stringify(v).includes("\\u0000"));

/** An N-D array shape (1-3 dims, each 1-4 long) filled by `elem`, with random lower bounds, or empty. */
function arrayArb<T>(elem: fc.Arbitrary<T | null>): fc.Arbitrary<{ tree: (T | null)[] | unknown[]; bounds: number[] }> {
  const shaped = fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 3 }).chain((dims) => {
    const total = dims.reduce((a, b) => a * b, 1);
    return fc.tuple(
      fc.constant(dims),
      fc.array(elem, { minLength: total, maxLength: total }),
      fc.oneof(fc.constant(dims.map(() => 1)), fc.array(fc.integer({ min: -5, max: 5 }), { minLength: dims.length, maxLength: dims.length })),
    );
  });
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant({ tree: [] as unknown[], bounds: [] as number[] }) },
    {
      weight: 9,
      arbitrary: shaped.map(([dims, flat, bounds]) => {
        let i = 0;
        const build = (d: number): unknown[] => Array.from({ length: dims[d]! }, () => (d === dims.length - 1 ? flat[i++] : build(d + 1)));
        return { tree: build(0), bounds };
      }),
    },
  );
}

function mapTree(tree: unknown[], f: (x: unknown) => unknown): unknown[] {
  return tree.map((x) => (Array.isArray(x) ? mapTree(x, f) : x === null ? null : f(x)));
}

function arrayGen<T>(type: string, oid: number, elementOid: number, elem: fc.Arbitrary<Sample>): Generator {
  return {
    type,
    oid,
    arb: arrayArb(fc.option(elem, { freq: 5 })).map(({ tree, bounds }) => {
      const value = mapTree(tree, (s) => (s as Sample).value);
      if (bounds.some((b) => b !== 1)) Object.assign(value, { lowerBounds: bounds });
      const text = printArray(mapTree(tree, (s) => (s as Sample).text) as TextTree, bounds);
      const binary = sendArray(mapTree(tree, (s) => (s as Sample).binary) as (Uint8Array | null)[], elementOid, bounds);
      return sample(value, text, binary);
    }),
  };
}

const int4Sample = fc.integer({ min: -2147483648, max: 2147483647 }).map((v) => sample(v, String(v), sendInt4(v)));
const textSample = trickyString.map((s) => sample(s, s, utf8(s)));
const timestamptzSample = timestampArb.map((v) => sample(v, printTimestamp(v, 0), sendTimestamp(v)));

export const GENERATORS: Generator[] = [
  { type: "bool", oid: Oid.bool, arb: fc.boolean().map((v) => sample(v, v ? "t" : "f", sendBool(v))) },
  { type: "int2", oid: Oid.int2, arb: fc.integer({ min: -32768, max: 32767 }).map((v) => sample(v, String(v), sendInt2(v))) },
  { type: "int4", oid: Oid.int4, arb: int4Sample },
  { type: "int8", oid: Oid.int8, arb: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }).map((v) => sample(v, String(v), sendInt8(v))) },
  { type: "oid", oid: Oid.oid, arb: fc.integer({ min: 0, max: 4294967295 }).map((v) => sample(v, String(v), sendInt4(v | 0))) },
  { type: "float4", oid: Oid.float4, arb: fc.float().map((v) => sample(v, printFloat4(v), sendFloat4(v))) },
  { type: "float8", oid: Oid.float8, arb: fc.double().map((v) => sample(v, printFloat8(v), sendFloat8(v))) },
  { type: "numeric", oid: Oid.numeric, arb: numericArb.map((t) => sample(t, t, sendNumeric(t))) },
  { type: "money", oid: Oid.money, arb: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }).map((v) => sample(v, printMoney(v), sendInt8(v))) },
  { type: "text", oid: Oid.text, arb: pgString.map((s) => sample(s, s, utf8(s))) },
  { type: "bytea", oid: Oid.bytea, arb: fc.uint8Array({ maxLength: 64 }).map((b) => sample(b, printByteaHex(b), b)) },
  { type: "uuid", oid: Oid.uuid, arb: fc.uuid().map((u) => sample(u, u, sendUuid(u))) },
  { type: "jsonb", oid: Oid.jsonb, arb: jsonArb.map((v) => sample(v, JSON.stringify(v), new Writer().u8(1).raw(utf8(JSON.stringify(v))).done())) },
  { type: "date", oid: Oid.date, arb: fc.oneof(dayArb, fc.constantFrom(Infinity, -Infinity)).map((d) => sample(printDate(d), printDate(d), sendDate(d))) },
  { type: "time", oid: Oid.time, arb: timeArb.map((t) => sample(printTime(t), printTime(t), sendTime(t))) },
  {
    type: "timetz",
    oid: Oid.timetz,
    arb: fc.tuple(timeArb, offsetArb).map(([t, o]) => sample(printTimetz(t, o), printTimetz(t, o), sendTimetz(t, o))),
  },
  { type: "timestamp", oid: Oid.timestamp, arb: timestampArb.map((v) => sample(v, printTimestamp(v), sendTimestamp(v))) },
  { type: "timestamptz", oid: Oid.timestamptz, arb: timestamptzSample },
  {
    type: "interval",
    oid: Oid.interval,
    arb: fc
      .record({
        months: fc.oneof(fc.integer({ min: -2147483648, max: 2147483646 }), fc.integer({ min: -30, max: 30 })),
        days: fc.oneof(fc.integer({ min: -2147483648, max: 2147483646 }), fc.integer({ min: -40, max: 40 })),
        microseconds: fc.oneof(fc.bigInt({ min: INT64_MIN + 1n, max: INT64_MAX - 1n }), fc.bigInt({ min: -100_000_000_000n, max: 100_000_000_000n })),
      })
      .map(({ months, days, microseconds }) => ({ months, days, microseconds })) // a plain object, not fc's null-prototype record
      .map((v) => sample(v, printInterval(v), sendInterval(v))),
  },
  { type: "varbit", oid: Oid.varbit, arb: bitsArb(40) },
  arrayGen("int4[]", Oid._int4, Oid.int4, int4Sample),
  arrayGen("text[]", Oid._text, Oid.text, textSample),
  arrayGen("timestamptz[]", Oid._timestamptz, Oid.timestamptz, timestamptzSample),
  arrayGen("numeric[]", Oid._numeric, Oid.numeric, numericArb.map((t) => sample(t, t, sendNumeric(t)))),
];

/** Timestamps shown at another offset: the same instant (no server: its TimeZone decides the offset). */
export const timestamptzAtOffset: fc.Arbitrary<Sample> = fc
  .tuple(timestampArb, offsetArb)
  .filter(([v]) => v > FIRST_TS + 86_400_000_000n && v < LAST_TS - 86_400_000_000n)
  .map(([v, o]) => sample(v, printTimestamp(v, o), sendTimestamp(v)));
