/**
 * What the debezium format must write for each case of
 * test/support/values-cases.ts, by Debezium's rules worked out here apart
 * from bindings/formats/debezium-values.ts (from the case's expected JS
 * value), and where an actual value (raw JSON: numbers as their text)
 * differs from it.
 */
import { expect } from "vitest";
import type { ValueCase } from "./values-cases.ts";
import type { RawJsonValue } from "./raw-json.ts";

/** What a column value must be: exact JSON, or a number compared as a float4 / by its value, or JSON text parsed. */
export type Expect = null | boolean | string | number | bigint | { f32: number } | { double: number } | { json: unknown } | Expect[] | { [key: string]: Expect };

const INF = 9223372036854775807n;
const NINF = -9223372036854775808n;
export const b64 = (bytes: Uint8Array | number[]) => Buffer.from(bytes instanceof Uint8Array ? bytes : Uint8Array.from(bytes)).toString("base64");
const special = (v: number): string | undefined => (Number.isNaN(v) ? "NaN" : v === Infinity ? "Infinity" : v === -Infinity ? "-Infinity" : undefined);

/** timestamptz, as the connector's ZonedTimestamp (UTC, six digits, java.time's years), by the case's µs. */
const ZONED: Record<string, string> = {
  [String(BigInt(Date.parse("2024-02-28T22:35:06.123Z")) * 1000n + 456n)]: "2024-02-28T22:35:06.123456Z",
  [String(BigInt(Date.parse("1850-01-01T04:56:02Z")) * 1000n)]: "1850-01-01T04:56:02.000000Z",
  [String(BigInt(Date.parse("1899-12-31T18:06:32Z")) * 1000n)]: "1899-12-31T18:06:32.000000Z",
  [String(BigInt(Date.parse("-000043-03-15T12:00:00Z")) * 1000n)]: "-0043-03-15T12:00:00.000000Z",
  "9224318015999999999": "+294276-12-31T23:59:59.999999Z",
  "-210866803200000000": "-4713-11-24T00:00:00.000000Z",
  [String(INF)]: "infinity",
  [String(NINF)]: "-infinity",
};

/** timetz, as ZonedTime: the time in UTC. */
const ZONED_TIME: Record<string, string> = {
  "04:05:06.789+05:30": "22:35:06.789Z", "12:00:00-00:25:21": "12:25:21Z", "24:00:00-15:59": "15:59:00Z", "00:00:00+15:59:59": "08:00:01Z",
};

function timeMicros(text: string): bigint {
  const m = /^(\d\d):(\d\d):(\d\d)(?:\.(\d+))?$/.exec(text)!;
  return ((BigInt(m[1]!) * 60n + BigInt(m[2]!)) * 60n + BigInt(m[3]!)) * 1_000_000n + BigInt((m[4] ?? "").padEnd(6, "0"));
}

/** io.debezium.time.Interval: PnYnMnDTnHnMnS, every field, the seconds exact; ±infinity by name. */
function intervalIso(iv: { months: number; days: number; microseconds: bigint }): string {
  if (iv.microseconds === INF && iv.months === 2147483647) return "infinity";
  if (iv.microseconds === NINF && iv.months === -2147483648) return "-infinity";
  const us = iv.microseconds;
  const sign = us < 0n ? "-" : "";
  const abs = us < 0n ? -us : us;
  const sec = abs % 60_000_000n;
  const frac = (sec % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  const h = abs / 3_600_000_000n;
  const m = (abs % 3_600_000_000n) / 60_000_000n;
  const signed = (n: bigint) => (n === 0n ? "0" : `${sign}${n}`);
  return `P${Math.trunc(iv.months / 12)}Y${iv.months % 12 || 0}M${iv.days}DT${signed(h)}H${signed(m)}M${sec === 0n ? "0" : `${sign}${sec / 1_000_000n}${frac === "" ? "" : `.${frac}`}`}S`;
}

/** Debezium's MicroDuration from PGInterval's fields: months of 365.25/12 days, in doubles. */
export function intervalMicros(iv: { months: number; days: number; microseconds: bigint }): bigint {
  const us = iv.microseconds;
  const seconds = Number(us % 60_000_000n) / 1e6;
  const total = (((iv.months * (365.25 / 12) + iv.days) * 24 + Number(us / 3_600_000_000n)) * 60 + Number((us % 3_600_000_000n) / 60_000_000n)) * 60 + seconds;
  const v = BigInt(Math.trunc(total * 1e6));
  return v > INF ? INF : v < NINF ? NINF : v;
}

/** bit strings as io.debezium.data.Bits: the number's little-endian bytes, as few as hold it. */
function bits(text: string): string {
  let n = text === "" ? 0n : BigInt(`0b${text}`);
  const out: number[] = [];
  while (n > 0n) {
    out.push(Number(n & 0xffn));
    n >>= 8n;
  }
  return b64(out);
}

function point(x: number, y: number): Expect {
  const wkb = Buffer.alloc(21);
  wkb.writeUInt8(1, 0);
  wkb.writeUInt32LE(1, 1);
  wkb.writeDoubleLE(x, 5);
  wkb.writeDoubleLE(y, 13);
  return { x: { double: x }, y: { double: y }, wkb: wkb.toString("base64"), srid: null };
}

/** The Debezium JSON of one case's value (the default decoder's value, `c.expected`); dates need the server's day numbers. */
export function expectedOf(c: ValueCase, days: Map<string, bigint>): Expect {
  const base = c.type.replace(/\[\]$/, "");
  const name = base.replace(/\(.*\)$/, "");
  const precision = /\((\d+)\)$/.exec(base)?.[1];
  const one = (v: unknown): Expect => {
    if (v === null) return null;
    switch (name) {
      case "float4":
        return special(v as number) ?? { f32: v as number };
      case "float8":
        return special(v as number) ?? { double: v as number };
      case "numeric":
        return ({ NaN: "NAN", Infinity: "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY" } as Record<string, string>)[v as string] ?? (v as string);
      case "money": {
        const m = v as bigint;
        const abs = (m < 0n ? -m : m).toString().padStart(3, "0");
        return `${m < 0n ? "-" : ""}${abs.slice(0, -2)}.${abs.slice(-2)}`;
      }
      case "json":
      case "jsonb":
        return { json: v };
      case "bytea":
        return b64(v as Uint8Array);
      case "date":
        return v === "infinity" ? -2147472692n : v === "-infinity" ? -2147472691n : days.get(v as string)!;
      case "time": {
        const us = timeMicros(v as string);
        return precision !== undefined && Number(precision) <= 3 ? us / 1000n : us;
      }
      case "timetz":
        return ZONED_TIME[v as string]!;
      case "timestamp":
        return v === INF ? 9223372036825200000n : v === NINF ? -9223372036832400000n : (v as bigint);
      case "timestamptz":
        return ZONED[String(v)]!;
      case "interval":
        return intervalIso(v as { months: number; days: number; microseconds: bigint });
      case "bit":
      case "varbit":
        return bits(v as string);
      case "point": {
        const [x, y] = (v as string).slice(1, -1).split(",").map(Number);
        return point(x!, y!);
      }
      default:
        // Integers (bigint for int8, xid8 and the int8 domain), booleans, strings of every kind, int2vector/oidvector.
        return Array.isArray(v) ? (v as Expect[]) : (v as Expect);
    }
  };
  // jsonb 'null' is JSON's null to the decoder, and the text "null" to Debezium (an SQL NULL element stays null).
  if (name === "jsonb" && c.type.endsWith("[]") && c.sql.includes("'null'::jsonb")) return [{ json: (c.expected as unknown[])[0] }, "null", null];
  const deep = (v: unknown): Expect => (Array.isArray(v) && c.type.endsWith("[]") ? v.map((e) => (Array.isArray(e) ? deep(e) : one(e))) : one(v));
  return c.type.endsWith("[]") ? deep(c.expected) : one(c.expected);
}

/** Where an actual value (raw JSON: numbers as their text) differs from what is expected. */
export function valueDiff(actual: RawJsonValue, expected: Expect, path: string): string[] {
  if (expected === undefined) return [`${path}: no expected value for ${JSON.stringify(actual)}`];
  const bad = [`${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(expected, (_, x) => (typeof x === "bigint" ? `${x}n` : x))}`];
  if (expected === null || typeof expected === "boolean" || typeof expected === "string") return actual === expected ? [] : bad;
  if (typeof expected === "number") return actual !== null && typeof actual === "object" && "$number" in actual && Object.is(Number(actual.$number), expected) ? [] : bad;
  if (typeof expected === "bigint") return actual !== null && typeof actual === "object" && "$number" in actual && actual.$number === String(expected) ? [] : bad;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return bad;
    return expected.flatMap((e, i) => valueDiff(actual[i]!, e, `${path}[${i}]`));
  }
  const num = actual !== null && typeof actual === "object" && "$number" in actual ? Number(actual.$number) : undefined;
  if ("f32" in expected) return num !== undefined && Object.is(Math.fround(num), expected.f32) ? [] : bad;
  if ("double" in expected) return num !== undefined && Object.is(num, expected.double) ? [] : bad;
  if ("json" in expected) {
    if (typeof actual !== "string") return bad;
    try {
      expect(JSON.parse(actual)).toStrictEqual(expected.json);
      return [];
    } catch {
      return bad;
    }
  }
  if (actual === null || typeof actual !== "object" || Array.isArray(actual) || "$number" in actual) return bad;
  const keys = Object.keys(expected);
  if (Object.keys(actual).join() !== keys.join()) return bad;
  return keys.flatMap((k) => valueDiff((actual as Record<string, RawJsonValue>)[k]!, (expected as Record<string, Expect>)[k]!, `${path}.${k}`));
}

