/**
 * The drop-in plugin's single-message path (bindings/compat/record.ts over
 * the decoder's `decodeOne`, tape-rows.ts, rows.ts, the LSN/timestamp
 * readers of lsn.ts) against what it replaced and against
 * pg-logical-replication:
 *
 * 1. every captured fixture (real PostgreSQL 15 and 18 streams, streamed
 *    and two-phase ones included): `plugin.parse` is deep-equal to
 *    converting the decoder's view of the same message
 *    (`CompatConverter.convert(decoder.decode(m))`), on the run's backend
 *    (the runner runs this file once per backend: vitest.config.ts);
 * 2. bad bytes through `parse`: the same typed error as `decode` (code,
 *    offset, field), and the plugin stays usable;
 * 3. row objects: the literal builder gives pg-logical-replication's object
 *    (null prototype, same own properties in the same order) for any
 *    column names, `__proto__` and integer-like ones included, also
 *    through the plugin next to PgoutputPlugin;
 * 4. LSNs and commit times read as 32-bit halves equal the bigint reading
 *    for any 64-bit value;
 * 5. Begin and Commit, read from the caller's bytes without the kernel
 *    (`convertFixed`): equal to the view path for any field values; a
 *    wrong length, or a decoder whose maxMessageSize refuses them, still
 *    gets the decoder's error.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { PgoutputPlugin } from "pg-logical-replication";
import { describe, expect, it } from "vitest";
import { backend, onceAcrossBackends } from "./support/backends.ts";
import { PgoutputWasmPlugin } from "../bindings/compat/index.ts";
import { CompatConverter } from "../bindings/compat/convert.ts";
import { compatLsn, compatLsnAt, compatTimeAt } from "../bindings/compat/lsn.ts";
import { dictionaryBuilder, rowBuilder } from "../bindings/compat/rows.ts";
import { pgTypes } from "../bindings/compat/type-parsers.ts";
import { BaselineDecoder, WasmDecoder, isPgoutputError, type PgoutputMessage } from "../bindings/index.ts";
import { fromPostgresTimestamp } from "../bindings/time.ts";
import { decodeCapture } from "../devkit/capture/slot.ts";
import { encode, UNCHANGED } from "../devkit/encoder/encoder.ts";

const FIXTURES = new URL("./fixtures/", import.meta.url);
const index = JSON.parse(readFileSync(new URL("index.json", FIXTURES), "utf8")) as { fixtures: { file: string }[] };
const OPTIONS = { protoVersion: 1 as const, publicationNames: ["p"] };
/** A decoder of the run's backend (the runner picks it: vitest.config.ts). */
const newDecoder = (options?: { maxMessageSize: number }) => (backend.name === "wasm" ? new WasmDecoder(options) : new BaselineDecoder(options));

describe("parse() reads the tape record as the view path would", () => {
  for (const fixture of index.fixtures) {
    const messages = decodeCapture(readFileSync(new URL(fixture.file, FIXTURES)));
    it(fixture.file, () => {
      const plugin = new PgoutputWasmPlugin({ ...OPTIONS, decoder: newDecoder() });
      const viewDecoder = newDecoder();
      const converter = new CompatConverter(pgTypes);
      const got = messages.map((m) => plugin.parse(Buffer.from(m)));
      const want = messages.map((m) => converter.convert(viewDecoder.decode(Buffer.from(m)) as PgoutputMessage));
      expect(got).toStrictEqual(want);
      expect(got.length).toBeGreaterThan(0);
    });
  }
});

describe("bad bytes through parse()", () => {
  const rel = { relationId: 16384, namespace: "public", relationName: "t", columns: [{ name: "a", typeId: 23 }] };
  const insert = encode.insert({ relation: rel, newTuple: ["1"] }).bytes;

  it("a truncated Insert: decode()'s typed error, and the plugin goes on", () => {
    const plugin = new PgoutputWasmPlugin({ ...OPTIONS, decoder: newDecoder() });
    const reference = newDecoder();
    plugin.parse(Buffer.from(encode.relation(rel).bytes));
    reference.decode(encode.relation(rel).bytes);
    const cut = Buffer.from(insert.subarray(0, insert.length - 2));
    const error = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        if (!isPgoutputError(e)) throw e;
        return { code: e.code, offset: e.offset, field: e.field, decoded: e.decoded };
      }
      throw new Error("no error");
    };
    const ours = error(() => plugin.parse(cut));
    expect(ours).toEqual(error(() => reference.decode(cut)));
    expect(ours.code).toBe("INCOMPLETE");
    expect(plugin.parse(Buffer.from(insert))).toMatchObject({ tag: "insert", new: { a: 1 } });
  });

  it("an Insert for a relation never defined: pg-logical-replication's missing relation", () => {
    const plugin = new PgoutputWasmPlugin({ ...OPTIONS, decoder: newDecoder() });
    expect(() => plugin.parse(Buffer.from(insert))).toThrow(/missing relation/);
  });
});

/** Own keys, values and prototype: what deep equality with pg-logical-replication's rows compares. */
const shape = (o: object) => ({ proto: Object.getPrototypeOf(o), entries: Reflect.ownKeys(o).map((k) => [k, (o as Record<PropertyKey, unknown>)[k]]) });

describe("row objects (rows.ts)", () => {
  const odd = ["__proto__", "constructor", "toString", "hasOwnProperty", "1", "0", "-1", "01", "4294967295", "", "a\"b", "back\\slash", "line\u2028sep", "😀", "}; throw 1; //", "valueOf"];

  // The builders use no backend: registered in one run only.
  if (onceAcrossBackends) it("the literal builder equals Object.create(null) plus assignments, for odd names", () => {
    const values = odd.map((_, i) => (i % 3 === 0 ? null : i % 3 === 1 ? undefined : `v${i}`));
    const row = rowBuilder(odd)(values);
    expect(shape(row)).toEqual(shape(dictionaryBuilder(odd)(values)));
    expect(Object.getPrototypeOf(row)).toBe(null);
    expect(Object.keys(row)).toContain("__proto__");
    expect(rowBuilder([...odd])).toBe(rowBuilder(odd)); // shared by name list
  });

  if (onceAcrossBackends) it("any distinct names, any values", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom(...odd)), { maxLength: 30 }), fc.anything(), (names, v) => {
        const values = names.map((_, i) => (i % 2 === 0 ? v : i));
        expect(shape(rowBuilder(names)(values))).toEqual(shape(dictionaryBuilder(names)(values)));
      }),
      { numRuns: 300 },
    );
  });

  it(`rows with such column names deep-equal PgoutputPlugin's (insert, key and old rows)`, () => {
    const columns = ["__proto__", "1", "constructor", "x"].map((name, i) => ({ name, typeId: i === 1 ? 23 : 25, isKey: i < 2 }));
    const rel = { relationId: 16385, namespace: "public", relationName: "odd", columns };
    const stream = [
      encode.relation(rel).bytes,
      encode.insert({ relation: rel, newTuple: ["p", "7", "c", null] }).bytes,
      encode.update({ relation: rel, oldTupleType: "K", oldTuple: ["p", "7", null, null], newTuple: ["q", "8", "c", "x"] }).bytes,
      encode.update({ relation: rel, oldTupleType: "O", oldTuple: ["q", "8", "c", "x"], newTuple: ["q", "8", UNCHANGED, "y"] }).bytes,
      encode.delete({ relation: rel, oldTupleType: "K", oldTuple: ["q", "8", null, null] }).bytes,
    ];
    const theirs = new PgoutputPlugin(OPTIONS);
    const ours = new PgoutputWasmPlugin({ ...OPTIONS, backend: backend.name });
    const got = stream.map((b) => ours.parse(Buffer.from(b)));
    expect(got).toStrictEqual(stream.map((b) => theirs.parse(Buffer.from(b))));
    expect(Object.keys((got[1] as { new: object }).new)).toEqual(["1", "__proto__", "constructor", "x"]);
  });
});

// No backend either: one run only.
if (onceAcrossBackends) describe("LSNs and times from 32-bit halves (lsn.ts)", () => {
  const dv = new DataView(new ArrayBuffer(16));
  const edges = [0n, 1n, -1n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 52n - 1n, -(2n ** 52n), 0x10_0000n << 32n, (0x10_0000n << 32n) - 1n,
    -(0x10_0000n << 32n), -(0x10_0000n << 32n) + 1n, 0xffff_ffffn, 1n << 32n];
  // pg-logical-replication's own formatting (binary-reader.js readLsn), written independently of lsn.ts.
  const theirs = (h: number, l: number) =>
    h === 0 && l === 0 ? null : `${h.toString(16).padStart(8, "0")}/${l.toString(16).padStart(8, "0")}`.toUpperCase();
  const check = (x: bigint) => {
    dv.setBigInt64(4, x);
    const want = theirs(dv.getUint32(4), dv.getUint32(8));
    expect(compatLsnAt(dv, 4)).toBe(want);
    expect(compatLsn(dv.getBigUint64(4))).toBe(want);
    expect(compatTimeAt(dv, 4)).toBe(fromPostgresTimestamp(dv.getBigInt64(4)));
  };
  it("edges", () => edges.forEach(check));
  it("any 64-bit value", () => {
    fc.assert(fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (x) => check(x)), { numRuns: 5000 });
    fc.assert(fc.property(fc.bigInt({ min: -(2n ** 53n), max: 2n ** 53n }), (x) => check(x)), { numRuns: 5000 });
  });
});

describe("Begin and Commit without the kernel", () => {
  const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
  const i64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
  const begin = fc.tuple(u64, i64, fc.integer({ min: 0, max: 2 ** 32 - 1 })).map(([lsn, time, xid]) => {
    const dv = new DataView(new ArrayBuffer(21));
    dv.setUint8(0, 0x42);
    dv.setBigUint64(1, lsn);
    dv.setBigInt64(9, time);
    dv.setUint32(17, xid);
    return new Uint8Array(dv.buffer);
  });
  const commit = fc.tuple(fc.integer({ min: 0, max: 255 }), u64, u64, i64).map(([flags, lsn, end, time]) => {
    const dv = new DataView(new ArrayBuffer(26));
    dv.setUint8(0, 0x43);
    dv.setUint8(1, flags);
    dv.setBigUint64(2, lsn);
    dv.setBigUint64(10, end);
    dv.setBigInt64(18, time);
    return new Uint8Array(dv.buffer);
  });
  const viaView = (b: Uint8Array) => new CompatConverter(pgTypes).convert(newDecoder().decode(b) as PgoutputMessage);
  const failure = (fn: () => unknown) => {
    try {
      return { value: fn() };
    } catch (e) {
      if (!isPgoutputError(e)) throw e;
      return { code: e.code, offset: e.offset, field: e.field };
    }
  };

  it("any field values: what the view path gives", () => {
    const plugin = new PgoutputWasmPlugin({ ...OPTIONS, decoder: newDecoder() });
    fc.assert(fc.property(fc.oneof(begin, commit), (b) => {
      expect(plugin.parse(Buffer.from(b))).toStrictEqual(viaView(b));
    }), { numRuns: 3000 });
  });

  it("one byte short or long: the decoder's error", () => {
    const plugin = new PgoutputWasmPlugin({ ...OPTIONS, decoder: newDecoder() });
    for (const b of [fc.sample(begin, 1)[0]!, fc.sample(commit, 1)[0]!]) {
      for (const bad of [b.subarray(0, b.length - 1), Uint8Array.of(...b, 0)]) {
        const got = failure(() => plugin.parse(Buffer.from(bad)));
        expect(got).toEqual(failure(() => newDecoder().decode(bad)));
        expect(got).toHaveProperty("code");
      }
    }
  });

  it("a decoder with a smaller maxMessageSize refuses them as decode() does", () => {
    const small = () => newDecoder({ maxMessageSize: 20 });
    const plugin = new PgoutputWasmPlugin({ ...OPTIONS, decoder: small() });
    const b = fc.sample(commit, 1)[0]!;
    const got = failure(() => plugin.parse(Buffer.from(b)));
    expect(got).toEqual(failure(() => small().decode(b)));
    expect(got).toMatchObject({ code: "MESSAGE_TOO_LARGE" });
  });
});
