/**
 * Whole lines from the kernel (pipeline/kernel-lines.ts) for the formats
 * other than JSON Lines (whose own checks are jsonl-kernel.test.ts): a
 * format's pushBatch must write what its push() writes message by message
 * (the JS path, the reference), byte for byte, record for record (kinds,
 * relations), and end where push() ends with the same error — on the wasm
 * backend, the baseline and the twin kernel (both kernel builds on one
 * memory image, compared on every call). Over the captures from real
 * PostgreSQL 15 and 18 (test/fixtures), and generated streams of every
 * value class with tricky texts, unchanged TOAST, old tuples of both
 * kinds, tables with and without a key, XLogData positions or none, commit
 * times at the ends of the years the kernel writes, in any batching, under
 * any option set.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Batch, PgoutputDecoder } from "../bindings/decoder.ts";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";
import { formatNamed, formatOptions } from "../bindings/formats/index.ts";
import { DebeziumEvents, debeziumOptions } from "../bindings/formats/debezium.ts";
import { linesFor } from "../bindings/pipeline/kernel-lines.ts";
import { JsonArea } from "../bindings/kernel/json-area.ts";
import { TABLE_HASH } from "../bindings/tape.ts";
import type { Format, FormatOptionValues } from "../bindings/pipeline/format.ts";
import { Records, RecordTransaction } from "../bindings/pipeline/records.ts";
import { encode, UNCHANGED, type ColumnDesc, type RelationColumnDesc } from "../devkit/encoder/encoder.ts";
import { wal } from "../devkit/encoder/walsender-encoder.ts";
import { TwinDecoder, twinStats } from "./support/twin-kernel.ts";
import { TRICKY_TEXTS } from "./support/jsonl-cases.ts";

type Make = (values: object) => PgoutputDecoder;
const DECODERS: [string, Make][] = [
  ["wasm", (values) => new WasmDecoder({ values })],
  ["baseline", (values) => new BaselineDecoder({ values })],
  ["twin", (values) => new TwinDecoder({ values })],
];

/**
 * The records of CopyData payloads (or capture bytes, `chunk` at a time)
 * through `format`: decoded `per` payloads at a time, through pushBatch
 * (`batch`) or push() alone: the bytes, each record's kind, table, key and
 * headers, and the error that ended it.
 */
function records(make: Make, name: string, options: FormatOptionValues, input: { payloads: Uint8Array[]; per: number } | { capture: Uint8Array; chunk: number }, batch: boolean): string {
  const definition = formatNamed(name);
  const d = make(definition.values());
  // Debezium's kernel path is its whole lines (debezium-lines.ts) where it has them, else its rows' columns (debezium-rows.ts)
  // through push(): `batch` picks it or the JS path alone.
  const format: Format = name === "debezium"
    ? new DebeziumEvents({ ...debeziumOptions({ decoder: d }, formatOptions(definition, options)), kernel: batch })
    : definition.create({ decoder: d }, formatOptions(definition, options));
  if (name === "debezium") {
    linesFor(d);
    batch &&= format.pushBatch !== undefined;
  }
  const parts: string[] = [];
  const text = new TextDecoder();
  const pieces = "payloads" in input ? Math.ceil(input.payloads.length / input.per) : Math.ceil(input.capture.length / input.chunk);
  // Each transaction's records have their ids from it, set at its Begin as the pipeline's bookkeeping does (message-feed.ts).
  let txn = new RecordTransaction(undefined, 0n, undefined);
  try {
    for (let k = 0; k < pieces; k++) {
      const b = ("payloads" in input
        ? d.decodeCopyData(input.payloads.slice(k * input.per, (k + 1) * input.per))
        : d.push(input.capture.subarray(k * input.chunk, (k + 1) * input.chunk))) as Batch;
      const out = new Records();
      out.txn = txn;
      const begun = (i: number) => {
        const m = b.get(i);
        if (m.kind === "Begin") out.txn = txn = new RecordTransaction(m.xid, m.finalLsn, m.commitTime);
        else if (m.kind === "BeginPrepare") out.txn = txn = new RecordTransaction(m.xid, m.prepareLsn, m.prepareTime);
      };
      let kept = Infinity;
      try {
        for (let j = batch ? format.pushBatch!(b, 0, out, b.length, begun) : 0; j < b.length; j = batch ? format.pushBatch!(b, j + 1, out, b.length, begun) : j + 1) {
          begun(j);
          format.push(b.get(j), out);
        }
      } catch (e) {
        // A pipeline hands the sink only the transactions finished before an error (run.ts #finish).
        kept = out.kinds.lastIndexOf("commit") + 1;
        throw e;
      } finally {
        for (let i = 0; i < Math.min(kept, out.length); i++) {
          const key = out.keyOf(i);
          parts.push(`${out.kinds[i]} ${out.relations[i]?.name ?? "-"} ${key === undefined ? "-" : text.decode(key)} ${JSON.stringify(out.headersOf(i) ?? null)} ${text.decode(out.bytesOf(i))}`);
        }
      }
    }
  } catch (e) {
    parts.push(`error: ${(e as Error).message}`);
  }
  return parts.join("");
}

/** The kernel's records equal push()'s, on every decoder; returns how many bytes push() wrote (to show the case was not empty). */
function same(name: string, options: FormatOptionValues, input: Parameters<typeof records>[3], what: string): number {
  let length = 0;
  for (const [decoder, make] of DECODERS) {
    const js = records(make, name, options, input, false);
    const kernel = records(make, name, options, input, true);
    if (js !== kernel) {
      let i = 0;
      while (i < js.length && js[i] === kernel[i]) i++;
      expect.fail(`${what} ${decoder} ${JSON.stringify(options)}: first difference at ${i}:\n js     ${JSON.stringify(js.slice(Math.max(0, i - 120), i + 120))}\n kernel ${JSON.stringify(kernel.slice(Math.max(0, i - 120), i + 120))}`);
    }
    length = js.length;
  }
  return length;
}

/** `format`'s kernel records equal push()'s, with any of `options`, texts, commit times, positions (0 now and then: none), batching, and column sets `of`. */
function anyStream(format: string, options: fc.Arbitrary<FormatOptionValues>, of: readonly (typeof W2J_COLUMNS)[] = [W2J_COLUMNS]): void {
  const float4 = fc.tuple(fc.float({ noDefaultInfinity: true, noNaN: true }), fc.integer({ min: 1, max: 9 })).map(([f, p]) => f.toPrecision(p));
  fc.assert(fc.property(
    options, fc.array(fc.oneof(fc.constantFrom(...DEBEZIUM_TEXTS), fc.string({ unit: "binary" }), fc.double().map(String), float4), { minLength: 1, maxLength: 40 }),
    fc.array(fc.bigInt({ min: -(2n ** 52n), max: 2n ** 52n }), { minLength: 1, maxLength: 4 }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.integer({ min: 1, max: 40 }),
    fc.constantFrom(...of),
    (o, texts, times, lsn, per, columns) => {
      same(format, o, { payloads: stream(texts, times, (k) => (k % 3 === 0 ? 0n : (lsn + BigInt(k)) & (2n ** 64n - 1n)), columns), per }, "property");
    },
  ), { numRuns: 40 });
}

const fixtures = JSON.parse(readFileSync(fileURLToPath(new URL("./fixtures/index.json", import.meta.url)), "utf8")) as { fixtures: { file: string }[] };
const capture = (file: string): Uint8Array => gunzipSync(readFileSync(fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url))));

const V2_OPTIONS: FormatOptionValues[] = [
  { "format-version": "2" },
  { "format-version": "2", "include-xids": true, "include-timestamp": true, "include-lsn": true, "include-pk": true, "include-type-oids": true },
  { "format-version": "2", "include-transaction": false, "include-lsn": true, "numeric-data-types-as-string": true, "include-types": false },
  { "format-version": "2", "include-xids": true, "include-lsn": true, actions: "insert,delete", "include-schemas": false },
];
const V1_OPTIONS: FormatOptionValues[] = [
  {},
  { "include-xids": true, "include-timestamp": true, "include-lsn": true, "include-pk": true, "include-type-oids": true },
  { "pretty-print": true, "include-pk": true, "include-typmod": false, "include-xids": true },
  { actions: "insert,delete", "numeric-data-types-as-string": true, "include-types": false, "include-schemas": false, "include-pk": true },
];
const WAL2JSON_OPTIONS = [...V2_OPTIONS, ...V1_OPTIONS];

/** A relation of every wal2json value class (number, bool, bytea, string), keyed or not. */
/** Ten columns of every wal2json value class (number, bool, bytea, string): their names and types (OID, type modifier). */
const W2J_COLUMNS: readonly [string, number, number][] = [
  ["id", 23, -1], ["n", 1700, ((10 << 16) | 2) + 4], ["f", 701, -1], ["i8", 20, -1], ["b", 16, -1], ["by", 17, -1], ["t \"q\"", 25, -1], ["ts", 1184, -1], ["a", 1007, -1], ["j", 3802, -1],
];
/** Ten columns of Debezium's own value forms (debezium-values.ts): precisions that change them, an enum (a type the decoder knows nothing of). */
const DEBEZIUM_COLUMNS: readonly [string, number, number][] = [
  ["id", 23, -1], ["d", 1082, -1], ["ts", 1114, -1], ["ts3", 1114, 3], ["t", 1083, -1], ["t3", 1083, 3], ["tz", 1184, -1], ["tz3", 1184, 3], ["iv", 1186, -1], ["e", 16500, -1],
];
/** The same, for values of no particular form: float4, bytea, numeric without a scale. */
const DEBEZIUM_COLUMNS_2: readonly [string, number, number][] = [
  ["id", 23, -1], ["f4", 700, -1], ["by", 17, -1], ["n", 1700, -1], ["tz6", 1184, 6], ["t6", 1083, 6], ["ts6", 1114, 6], ["d", 1082, -1], ["e", 16500, -1], ["j", 114, -1],
];

/** A relation of these columns, keyed or not. */
function relationOf(relationId: number, keyed: boolean, replicaIdentity: "d" | "f" | "n", of = W2J_COLUMNS): { relationId: number; namespace: string; relationName: string; replicaIdentity: "d" | "f" | "n"; columns: RelationColumnDesc[] } {
  const columns = of.map(([name, typeId, typeModifier], i): RelationColumnDesc => ({ name, typeId, typeModifier, isKey: replicaIdentity === "f" || (i === 0 && keyed) }));
  return { relationId, namespace: relationId % 2 === 0 ? "app" : "", relationName: `t${relationId}`, replicaIdentity, columns };
}

/**
 * A stream of transactions over three relations (keyed, REPLICA IDENTITY
 * FULL, no key), rows from `texts`, as XLogData payloads; `each`: every
 * column of a row has the same text (each text in every column's type).
 */
function stream(texts: readonly ColumnDesc[], times: readonly bigint[], lsn: (k: number) => bigint, of = W2J_COLUMNS, each = false): Uint8Array[] {
  const rels = [relationOf(16401, true, "d", of), relationOf(16402, false, "f", of), relationOf(16403, false, "n", of)];
  const payloads: Uint8Array[] = [];
  let k = 0;
  const add = (m: Parameters<typeof wal.xlogData>[0]) => payloads.push(wal.xlogData(m, { walStart: lsn(k++), walEnd: 0n, sendTime: 0n }).bytes);
  for (const r of rels) add(encode.relation(r));
  let t = 0;
  const row = (): ColumnDesc[] => {
    const text = each ? texts[t++ % texts.length]! : undefined;
    return Array.from({ length: 10 }, () => text ?? texts[t++ % texts.length]!);
  };
  times.forEach((commitTime, x) => {
    add(encode.begin({ finalLsn: 0x1_0000_0000n + BigInt(x), commitTime, xid: (x * 2654435761) >>> 0 }));
    if (x % 5 === 4) add(encode.origin({ originLsn: 5n, name: "upstream" }));
    for (const rel of rels) {
      add(encode.insert({ relation: rel, newTuple: row() }));
      const keyOnly = row().map((v, i) => (rel.columns[i]!.isKey ? v : null));
      add(encode.update({ relation: rel, oldTupleType: rel.replicaIdentity === "f" ? "O" : "K", oldTuple: rel.replicaIdentity === "f" ? row() : keyOnly, newTuple: row() }));
      const toasted = row();
      toasted[6] = UNCHANGED;
      if (x % 2 === 0) toasted[0] = UNCHANGED;
      add(encode.update({ relation: rel, newTuple: toasted }));
      add(encode.delete({ relation: rel, oldTupleType: rel.replicaIdentity === "f" ? "O" : "K", oldTuple: rel.replicaIdentity === "f" ? row() : keyOnly }));
    }
    add(encode.commit({ commitLsn: 0x2_0000_0000n + BigInt(x), endLsn: 0xffff_ffff_ffff_ff00n - BigInt(x), commitTime }));
  });
  return payloads;
}

/** A text column of these bytes (invalid UTF-8 among them). */
function rawText(bytes: number[]): ColumnDesc {
  return { raw: [0x74, 0, 0, (bytes.length >> 8) & 0xff, bytes.length & 0xff, ...bytes] };
}

/** Texts for wal2json's rules: its special numbers in any case and as prefixes, near-numbers, bools, bytea without `\x`, escapes, invalid UTF-8, NULL. */
const W2J_TEXTS: readonly ColumnDesc[] = [
  ...TRICKY_TEXTS, "nan", "NAN", "NaNx", "infinity", "-INFINITY", "-Inf", "\rInfinity", "Infinityx", "+5", "1e5", "1-2", "..", "e", "x", "\\x", "\\",
  "", "t", "f", "tt", "true", "é", null, rawText([0xff, 0xfe]), rawText([0x5c, 0x78, 0xc3, 0x28]), rawText([0x31, 0x80]),
];

/** float4 texts: random floats' digits at 6 to 9 places (PostgreSQL prints the shortest; the others stand for a client's or a hostile server's), seeded. */
const FLOAT4_TEXTS: readonly string[] = (() => {
  let seed = 0x2545f491;
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const texts: string[] = [];
  for (let i = 0; i < 150; i++) {
    const v = Math.fround((random() - 0.5) * 10 ** Math.floor(random() * 50 - 25));
    for (const p of [6, 7, 8, 9]) texts.push(v.toPrecision(p));
  }
  return texts;
})();

/** Texts for Debezium's forms: real and unreal dates, times at and past their ends, precisions, float4 of every length, bytea base64 needs `+/` for. */
const DEBEZIUM_TEXTS: readonly ColumnDesc[] = [
  ...W2J_TEXTS, "2024-02-29", "2023-02-29", "2024-02-30", "2024-04-31", "0001-01-01", "9999-12-31", "0000-01-01", "2024-1-01", "2024-01-01 BC", "1970-01-01",
  "1969-12-31", "12:00:00", "23:59:59.999999", "24:00:00", "12:00:00.", "12:00:00.1234567", "00:00:00.000001", "12:60:00", "1970-01-01 00:00:00",
  "1969-12-31 23:59:59.999", "1969-12-31 23:59:59.9995", "2262-04-11 23:47:16.854775", "2255-06-05 23:47:34.740991", "2255-06-05 23:47:34.740992",
  "1684-07-28 00:12:25.259009", "1684-07-28 00:12:25.259008", "9999-12-31 23:59:59.999999+00", "0001-01-01 00:00:00+00", "2023-02-29 00:00:00+00",
  "2024-02-29 12:34:56.7+00", "1.1", "3.4028235e+38", "1e-45", "1.1754944e-38", "123456", "1234567", "0.000123456", "1e+21", "1.5e+20", "-2.5e-07",
  "100000", "9.99999e+29", "1e+30", "1e+31", "-0", "9.749151e-22", "9.836112e-22", "16777217", "0.124568895", "1016936.44", "1.2985281e-3", "6.6583736e-1", "9.8881007e+0", "\\xfbff", "\\xfbef00", "\\x00ff10ab", "\\xFBFF", "\\x0g", "-1 days -00:00:00.5", "-00:00:59.000001",
  "1 year -1 mons", "-1 years -11 mons", "-13 mons", "4 days 999999:59:59.999999", "-999999:59:59.999999", "happy", "", ...FLOAT4_TEXTS,
];

const us = (iso: string) => BigInt(Date.parse(iso)) * 1000n;
const TIMES = [
  0n, 1n, -1n, 946_684_800_000_000n, 500_000n, 120_000n, 999_999n, us("0001-01-01T00:00:00Z"), us("9999-12-31T23:59:59Z") + 999_999n,
  us("0001-01-01T00:00:00Z") - 1n, us("9999-12-31T23:59:59Z") + 1_000_000n, us("2024-02-29T12:34:56Z") + 789_010n,
];

/**
 * Tables defined again (PostgreSQL sends a Relation message after any
 * invalidation), some with other columns each time, whose OIDs share a home
 * slot of the kernel's relation map: as XLogData payloads.
 */
function redefined(): Uint8Array[] {
  const home = (oid: number) => (Math.imul(oid, TABLE_HASH) >>> 16) & 1023;
  const oids: number[] = [];
  for (let oid = 16384; oids.length < 6; oid++) if (home(oid) === home(16384)) oids.push(oid);
  // The other shapes: as many columns, one renamed and of another type (what the kernel cannot tell from a row);
  // three fewer (what it can).
  const renamed = W2J_COLUMNS.map((c, i) => (i === 6 ? ["t2", 23, -1] : c)) as typeof W2J_COLUMNS;
  const fewer = W2J_COLUMNS.slice(0, 7);
  const payloads: Uint8Array[] = [];
  const add = (m: Parameters<typeof wal.xlogData>[0]) => payloads.push(wal.xlogData(m, { walStart: BigInt(payloads.length + 1), walEnd: 0n, sendTime: 0n }).bytes);
  const shape = oids.map(() => W2J_COLUMNS);
  for (let round = 0; round < 12; round++) {
    oids.forEach((oid, k) => {
      // Defined again every other round, in a turning order, with the other shape one time in three.
      const j = (k + round) % oids.length;
      if (round === 0 || (round + j) % 2 === 0) {
        if ((round + j) % 3 === 0) shape[j] = shape[j] !== W2J_COLUMNS ? W2J_COLUMNS : round % 2 === 0 ? renamed : fewer;
        add(encode.relation(relationOf(oids[j]!, true, "d", shape[j])));
      }
    });
    add(encode.begin({ finalLsn: BigInt(round + 1) << 32n, commitTime: 1_000_000n * BigInt(round), xid: round + 1 }));
    oids.forEach((oid, k) => {
      const row = (x: number) => shape[k]!.map((_, i) => (i === 0 ? String(round * 100 + x) : i === 4 ? "t" : i === 7 ? "2024-01-01 00:00:00+00" : String(i)));
      add(encode.insert({ relation: relationOf(oid, true, "d", shape[k]), newTuple: row(k) }));
    });
    add(encode.commit({ commitLsn: BigInt(round + 1) << 32n, endLsn: (BigInt(round + 1) << 32n) + 1n, commitTime: 1_000_000n * BigInt(round) }));
  }
  return payloads;
}

describe("every format: a relation defined again has its template made again, the others' are kept", () => {
  // Debezium's processing time (`ts_ms`) is the same for both paths.
  beforeEach(() => void vi.spyOn(Date, "now").mockReturnValue(1_796_000_000_123));
  afterEach(() => void vi.restoreAllMocks());

  it("tables defined again, some with other columns, OIDs of one home slot: the kernel's lines = push()'s", () => {
    const input = redefined();
    for (const per of [1, 7, 1000]) {
      for (const [name, options] of [["jsonl", {}], ["wal2json", V2_OPTIONS[1]!], ["wal2json", V1_OPTIONS[1]!], ["debezium", {}]] as const) {
        expect(same(name, options, { payloads: input, per }, `${name} per ${per}`)).toBeGreaterThan(5_000);
      }
    }
  });
});

describe("cloudevents: the inner format's kernel lines wrapped = push()'s events", () => {
  it("every capture from real PostgreSQL, structured and binary, jsonl data", () => {
    let bytes = 0;
    for (const { file } of fixtures.fixtures) {
      for (const options of [{}, { mode: "binary" }, { transactions: true, "numbers-as-strings": true }] as FormatOptionValues[]) {
        bytes += same("cloudevents", options, { capture: capture(file), chunk: 331 }, file);
      }
    }
    expect(bytes).toBeGreaterThan(1_000_000);
  });

  it("generated transactions with tricky values, an origin now and then, B lines due across batches: ids, envelopes and data", () => {
    const lsns = [0n, 1n, 0xffff_ffffn, 0x1_0000_0000n];
    for (const options of [{ transactions: true, source: "/s \"q\"", "type-prefix": "x" }, {}, { "numbers-as-strings": true }] as FormatOptionValues[]) {
      for (const per of [1, 3, 1000]) {
        const payloads = stream(W2J_TEXTS.filter((t) => typeof t === "string"), TIMES, (k) => lsns[k % lsns.length]!);
        expect(same("cloudevents", options, { payloads, per }, `per ${per}`)).toBeGreaterThan(10_000);
      }
    }
  });
});

describe("debezium: whole lines and rows' columns from the kernel = the JS path's events", () => {
  // The events' processing time (`ts_ms`) is the same for both paths.
  beforeEach(() => void vi.spyOn(Date, "now").mockReturnValue(1_796_000_000_123));
  afterEach(() => void vi.restoreAllMocks());

  it("every capture from real PostgreSQL, generated rows of tricky values, with and without the old rows' columns", () => {
    let bytes = 0;
    const columns = vi.spyOn(JsonArea.prototype, "columns");
    const lines = vi.spyOn(JsonArea.prototype, "lines");
    const options: FormatOptionValues[] = [
      {}, { "skipped-operations": ["u"], "decimal-handling": "precise", "binary-handling": "hex", "time-precision": "microseconds", "interval-handling": "numeric" },
      { "binary-handling": "base64-url-safe", "time-precision": "adaptive_time_microseconds" },
      { "transaction-metadata": true, tombstones: true, "decimal-handling": "double" }, { "key-columns": "public\\.t16401:t \"q\"" },
    ];
    const lsns = [0n, 1n, 0xffff_ffffn, 0x1_0000_0000n, 0xffff_ffff_ffff_ffffn];
    for (const o of options) {
      for (const { file } of fixtures.fixtures) {
        for (const chunk of [65536, 331]) bytes += same("debezium", o, { capture: capture(file), chunk }, `${file} ${chunk}`);
      }
      for (const of of [W2J_COLUMNS, DEBEZIUM_COLUMNS, DEBEZIUM_COLUMNS_2]) {
        for (const per of [1, 3, 1000]) bytes += same("debezium", o, { payloads: stream(DEBEZIUM_TEXTS, TIMES, (k) => lsns[k % lsns.length]!, of), per }, `${of[1]![0]} per ${per}`);
      }
    }
    expect(bytes).toBeGreaterThan(1_000_000);
    expect(columns.mock.calls.length, "the kernel wrote rows' columns").toBeGreaterThan(1000);
    expect(lines.mock.calls.length, "the kernel wrote whole lines").toBeGreaterThan(1000);
  });

  it("each text in every column's type, in each value mode", () => {
    // As many transactions as take every text (15 rows each).
    const times = Array.from({ length: Math.ceil(DEBEZIUM_TEXTS.length / 15) }, (_, i) => TIMES[i % TIMES.length]!);
    const modes: FormatOptionValues[] = [
      {}, { "decimal-handling": "precise", "binary-handling": "hex", "time-precision": "microseconds", "interval-handling": "numeric" },
      { "binary-handling": "base64-url-safe", "time-precision": "adaptive_time_microseconds" },
    ];
    for (const o of modes) {
      for (const of of [DEBEZIUM_COLUMNS, DEBEZIUM_COLUMNS_2]) {
        expect(same("debezium", o, { payloads: stream(DEBEZIUM_TEXTS, times, (k) => BigInt(k), of, true), per: 1000 }, `${of[1]![0]} each text`)).toBeGreaterThan(100_000);
      }
    }
  });

  it("any option set, any texts, times and positions", () => {
    const options = fc.record({
      "skipped-operations": fc.subarray(["c", "u", "d", "t"]).map((a) => (a.length === 0 ? ["none"] : a)),
      "decimal-handling": fc.constantFrom("string", "double", "precise"), "binary-handling": fc.constantFrom("base64", "base64-url-safe", "hex"),
      "time-precision": fc.constantFrom("adaptive", "adaptive_time_microseconds", "microseconds"), "interval-handling": fc.constantFrom("string", "numeric"),
      "server-name": fc.string(),
    });
    anyStream("debezium", options, [W2J_COLUMNS, DEBEZIUM_COLUMNS, DEBEZIUM_COLUMNS_2]);
  });
});

describe("wal2json versions 2 and 1: whole lines from the kernel = push()'s records", () => {
  it("every capture from real PostgreSQL (test/fixtures), every option set, both backends and the twin kernel", () => {
    let bytes = 0;
    for (const { file } of fixtures.fixtures) {
      for (const options of WAL2JSON_OPTIONS) {
        for (const chunk of [65536, 331]) bytes += same("wal2json", options, { capture: capture(file), chunk }, `${file} ${chunk}`);
      }
    }
    expect(bytes).toBeGreaterThan(1_000_000);
  });

  it("every value class with wal2json's tricky texts, unchanged TOAST, old tuples, no key; XLogData positions or none; any batching", () => {
    const before = twinStats.json;
    const lsns = [0n, 1n, 0xffff_ffffn, 0x1_0000_0000n, 0xffff_ffff_ffff_ffffn];
    for (const options of WAL2JSON_OPTIONS) {
      for (const per of [1, 7, 1000]) {
        expect(same("wal2json", options, { payloads: stream(W2J_TEXTS, TIMES, (k) => lsns[k % lsns.length]!), per }, `per ${per}`)).toBeGreaterThan(10_000);
      }
    }
    expect(twinStats.json - before, "the twin compared the kernels' lines").toBeGreaterThan(1_000);
  });

  it("a binary value ends both paths with the same error, after the same records", () => {
    for (const options of WAL2JSON_OPTIONS) {
      const texts: ColumnDesc[] = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20", "21", new Uint8Array([0, 0, 0, 1])];
      expect(same("wal2json", options, { payloads: stream(texts, TIMES.slice(0, 3), (k) => BigInt(k)), per: 1000 }, "binary")).toBeGreaterThan(100);
    }
  });

  it("any option set, any texts, times and positions", () => {
    const options = fc.record({
      "format-version": fc.constantFrom("1", "2"), "pretty-print": fc.boolean(), "include-typmod": fc.boolean(), "include-transaction": fc.boolean(), "include-xids": fc.boolean(), "include-timestamp": fc.boolean(), "include-lsn": fc.boolean(),
      "include-schemas": fc.boolean(), "include-types": fc.boolean(), "include-type-oids": fc.boolean(), "include-pk": fc.boolean(),
      "numeric-data-types-as-string": fc.boolean(), actions: fc.subarray(["insert", "update", "delete", "truncate"], { minLength: 1 }).map((a) => a.join(",")),
    });
    anyStream("wal2json", options);
  });

  it("the kernel takes the lines: most records of a capture of plain transactions are written with no push()", () => {
    const definition = formatNamed("wal2json");
    for (const options of WAL2JSON_OPTIONS) {
      const d = new WasmDecoder({ values: definition.values() });
      const format = definition.create({ decoder: d }, formatOptions(definition, options));
      const out = new Records();
      let pushed = 0;
      for (let k = 0; k < 4; k++) {
        const b = d.decodeCopyData(stream(W2J_TEXTS.filter((t) => typeof t === "string" && !t.includes("\\")), TIMES.slice(3, 5), (x) => BigInt(x + 1))) as Batch;
        for (let j = format.pushBatch!(b, 0, out, b.length, () => {}); j < b.length; j = format.pushBatch!(b, j + 1, out, b.length, () => {})) {
          format.push(b.get(j), out);
          pushed++;
        }
      }
      // Per batch: the three Relation messages are push()'s.
      expect(pushed, JSON.stringify(options)).toBe(4 * 3);
      expect(out.length).toBeGreaterThanOrEqual(4 * 2);
    }
  });
});
