/**
 * The kernel's jsonColumns (bindings/jsonl-tape.ts) against the JS path it
 * stands in for: JsonLinesWriter's bytes with the kernel (default) must
 * equal its bytes with `kernel: false` (every value through the JS path,
 * the writer as it was), on the wasm backend, the baseline and the twin
 * kernel (both kernels on one memory image, compared on every call:
 * status, result words, output bytes). Over the captures from real
 * PostgreSQL 15 and 18 (test/fixtures), the
 * tricky texts of every kernel column kind, fast-check strings (every code
 * point, raw bytes incl. invalid UTF-8) and numbers, tuples larger than the
 * output area, and hostile arguments to the export itself.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";
import { JsonLinesWriter, type JsonLinesOptions } from "../bindings/jsonl/writer.ts";
import { changeValueOptions } from "../bindings/jsonl/json-text.ts";
import { Records } from "../bindings/pipeline/records.ts";
import { StreamResequencer } from "../bindings/pipeline/resequence.ts";
import { createKernel } from "../bindings/baseline/kernel.ts";
import { instantiate, kernelModule } from "../bindings/wasm/module.ts";
import { JSON_REFUSED, JSON_DECLINED } from "../bindings/jsonl-tape.ts";
import { LF_TRANSACTIONS, LINES_DONE, LS_BEGIN_LENGTH, LK_BEGIN, LP_PROGRAM_WORDS, LS_STATE_BYTES, OP_BYTES } from "../bindings/line-templates.ts";
import { decoderInternals, type TapeDecoder } from "../bindings/kernel/decoder.ts";
import { JsonArea } from "../bindings/kernel/json-area.ts";
import { encode, frame, type ColumnDesc, type RelationColumnDesc } from "../devkit/encoder/encoder.ts";
import { wal } from "../devkit/encoder/walsender-encoder.ts";
import type { Batch } from "../bindings/decoder.ts";
import { TwinDecoder, twinStats } from "./support/twin-kernel.ts";
import { JSONL_OIDS, TRICKY_TEXTS } from "./support/jsonl-cases.ts";
import { printFloat4, printFloat8, printInterval } from "../devkit/encoder/values-print.ts";

type Make = () => PgoutputDecoder;
const DECODERS: [string, Make][] = [
  ["wasm", () => new WasmDecoder({ values: changeValueOptions() })],
  ["baseline", () => new BaselineDecoder({ values: changeValueOptions() })],
  ["twin", () => new TwinDecoder({ values: changeValueOptions() })],
];

/**
 * The JSON Lines of a capture pushed in `chunk`-byte pieces (streamed
 * transactions replayed as plain ones, as the pipeline does); `batch`:
 * through pushBatch (whole lines from the kernel), else push() per message.
 */
function lines(make: Make, bytes: Uint8Array, options: JsonLinesOptions, chunk = 65536, batch = false): Buffer {
  const d = make();
  let replay: StreamResequencer | undefined; // made at the first streamed block: a decoder costs more than most of these captures
  const w = new JsonLinesWriter({ ...options, decoder: d });
  const parts: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += chunk) {
    const records = new Records();
    const b = d.push(bytes.subarray(i, i + chunk));
    for (let j = batch ? w.pushBatch(b, 0, records) : 0; j < b.length; j = batch ? w.pushBatch(b, j + 1, records) : j + 1) {
      const m = b.get(j);
      if (m.kind === "StreamStart") replay ??= new StreamResequencer(make());
      if (replay?.takes(m) === true) for (const plain of replay.push(m)) w.push(plain, records);
      else w.push(m, records);
    }
    // The records' ends and kinds are part of the output: each line one record.
    const ends = records.ends;
    let cut = 0;
    for (let k = 0; k < ends.length; k++) if (records.bytes.buf[ends[k]! - 1] !== 0x0a) cut++;
    expect(cut, "records not ending at a newline").toBe(0);
    parts.push(Buffer.from(JSON.stringify(records.kinds)));
    parts.push(records.bytes.take());
  }
  d.end();
  return Buffer.concat(parts);
}

/**
 * Kernel and JS path give the same bytes for every decoder and option set,
 * through push() per message and through pushBatch (`paths`); returns the
 * output length.
 */
function same(bytes: Uint8Array, what: string, chunk?: number, paths: readonly boolean[] = [false, true]): number {
  let length = 0;
  for (const [name, make] of DECODERS) {
    for (const options of [{}, { numbersAsStrings: true }, { transactions: true }] as JsonLinesOptions[]) {
      const js = lines(make, bytes, { ...options, kernel: false }, chunk);
      for (const batch of paths) {
        const kernel = lines(make, bytes, options, chunk, batch);
        if (!js.equals(kernel)) {
          let i = 0;
          while (i < js.length && js[i] === kernel[i]) i++;
          expect.fail(`${what} ${name} ${JSON.stringify(options)}${batch ? " pushBatch" : ""}: first difference at byte ${i}:\n js     ${js.subarray(Math.max(0, i - 80), i + 80)}\n kernel ${kernel.subarray(Math.max(0, i - 80), i + 80)}`);
        }
      }
      length = js.length;
    }
  }
  return length;
}

/** How many column values the kernel left to the JS path, bytes pushed whole through pushBatch (JsonLinesWriter.declinedColumns). */
function declinedColumns(bytes: Uint8Array, make: Make): number {
  const d = make();
  const w = new JsonLinesWriter({ decoder: d });
  const records = new Records();
  const b = d.push(bytes);
  for (let j = w.pushBatch(b, 0, records); j < b.length; j = w.pushBatch(b, j + 1, records)) w.push(b.get(j), records);
  d.end();
  return w.declinedColumns;
}

const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));

describe("jsonColumns: kernel bytes = the JS path's bytes", () => {
  // Only the committed captures: bench/corpus holds what benches generated (up to GBs), and a test must not depend on it.
  it("every capture from real PostgreSQL (test/fixtures), both backends and the twin kernel", () => {
    const before = twinStats.json;
    const files = readdirSync(fixtures).filter((f) => f.endsWith(".bin.gz")).map((f) => ({ f, bytes: gunzipSync(readFileSync(fixtures + f)) }));
    expect(files.length).toBeGreaterThanOrEqual(20);
    for (const { f, bytes } of files) expect(same(bytes, f), f).toBeGreaterThan(0);
    // The twin compared the kernels' JSON output (so the kernel path ran).
    expect(twinStats.json - before).toBeGreaterThan(100_000);
    // Split anywhere: the writer's state across pushes.
    same(gunzipSync(readFileSync(`${fixtures}pg18-unicode.bin.gz`)), "7-byte chunks", 7);
  });

  it("tricky texts in a column of every kind, in Insert, Update (old tuple, unchanged TOAST) and Delete", () => {
    // Beyond the built-ins: 16500 nothing is known of (its text is a string), 16501 an enum, 16502 a domain over int4
    // (a Type message naming a pg_catalog type: the JS values parse it as int4, the kernel declines it).
    const oids = [...JSONL_OIDS, 16500, 16501, 16502];
    const columns: RelationColumnDesc[] = oids.map((typeId, i) => ({ name: `c${i}_${typeId}`, typeId, isKey: i % 3 === 0 }));
    const rel = { relationId: 16400, namespace: "public", relationName: "t\"é", columns };
    const msgs = [
      encode.type({ typeId: 16501, namespace: "public", typeName: "mood" }),
      encode.type({ typeId: 16502, namespace: "", typeName: "int4" }),
      encode.relation(rel),
    ];
    for (const text of TRICKY_TEXTS) {
      const row = columns.map(() => text);
      msgs.push(encode.insert({ relation: rel, newTuple: row }));
      const partial: ColumnDesc[] = row.map((t, i) => (i % 4 === 1 ? { kind: "unchanged" } : i % 5 === 2 ? null : t));
      msgs.push(encode.update({ relation: rel, oldTupleType: "O", oldTuple: row, newTuple: partial }));
      msgs.push(encode.update({ relation: rel, newTuple: partial }));
      msgs.push(encode.delete({ relation: rel, oldTupleType: "K", oldTuple: row.map((t, i) => (i % 3 === 0 ? t : null)) }));
    }
    expect(same(frame(msgs), "tricky")).toBeGreaterThan(0);
  });

  it("strings around the wasm build's 16-byte plain scan: one special byte at every position of 15..17 and 31..33 bytes", () => {
    // text, varchar and a text[] element (quoted, its '"' and '\' escaped): each a writeString of the string.
    const columns: RelationColumnDesc[] = [25, 1043, 1009].map((typeId, i) => ({ name: `c${i}`, typeId }));
    const rel = { relationId: 16404, namespace: "s", relationName: "scan", columns };
    const msgs = [encode.relation(rel)];
    // The bytes a plain run stops at, those either side of its bounds (0x20, 0x7f: plain), and multi-byte UTF-8.
    const specials = ["\"", "\\", "\n", "\u0000", "\u0001", "\u001f", " ", "\u007f", "é", "😀"];
    const plain = (n: number) => Array.from({ length: n }, (_, k) => String.fromCharCode(0x61 + (k % 26))).join("");
    for (const length of [15, 16, 17, 31, 32, 33]) {
      const strings = [plain(length)];
      for (let at = 0; at < length; at++) for (const s of specials) strings.push(plain(at) + s + plain(length - at - 1));
      for (const s of strings) msgs.push(encode.insert({ relation: rel, newTuple: [s, s, `{"${s.replace(/["\\]/g, "\\$&")}"}`] }));
    }
    expect(same(frame(msgs), "scan")).toBeGreaterThan(0);
  });

  it("any string (every code point), raw bytes (invalid UTF-8), doubles and integers", () => {
    const columns: RelationColumnDesc[] = [25, 114, 1700, 701, 700, 20, 23, 16, 17, 1184].map((typeId, i) => ({ name: `c${i}`, typeId }));
    const rel = { relationId: 16401, namespace: "s", relationName: "p", columns };
    const text = (s: string): ColumnDesc => s;
    const raw = (b: Uint8Array): ColumnDesc => {
      const r = [0x74, (b.length >>> 24) & 255, (b.length >>> 16) & 255, (b.length >>> 8) & 255, b.length & 255, ...b];
      return { raw: r };
    };
    fc.assert(fc.property(
      fc.string({ unit: "binary" }), fc.uint8Array({ maxLength: 40 }), fc.double(), fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
      (s, b, d, n) => {
        const msgs = [encode.relation(rel)];
        const number = String(d).replace(/e([+-])(\d)$/, "e$10$2");
        msgs.push(encode.insert({ relation: rel, newTuple: columns.map(() => text(s)) }));
        msgs.push(encode.insert({ relation: rel, newTuple: columns.map(() => raw(b)) }));
        msgs.push(encode.insert({ relation: rel, newTuple: columns.map(() => text(number)) }));
        msgs.push(encode.insert({ relation: rel, newTuple: columns.map(() => text(printFloat8(d))) }));
        msgs.push(encode.insert({ relation: rel, newTuple: columns.map(() => text(d.toPrecision(17))) }));
        msgs.push(encode.insert({ relation: rel, newTuple: columns.map(() => text(printFloat4(Math.fround(d)))) }));
        msgs.push(encode.insert({ relation: rel, newTuple: columns.map(() => text(d.toFixed(3))) }));
        msgs.push(encode.insert({ relation: rel, newTuple: columns.map(() => text(String(n))) }));
        // pushBatch only: its columns are jsonColumns' code (columnsAt), and a decoder per path is most of this test's time.
        same(frame(msgs), `s=${JSON.stringify(s)} b=${b.join(",")} d=${d} n=${n}`, undefined, [true]);
      },
    ), { numRuns: 150 });
  });

  it("floats: float8 of 16-17 digits and float4 written by the wasm kernel, a float8 text that is not shortest declined", () => {
    // float8 texts of every length (shortest, and 16-17 digits that are not), float4 texts, all in one relation; a
    // fixed sequence, so how many the kernel declined is a fact of this code, not of a random draw.
    const columns: RelationColumnDesc[] = [701, 701, 701, 700, 700].map((typeId, i) => ({ name: `f${i}`, typeId }));
    const rel = { relationId: 16404, namespace: "s", relationName: "floats", columns };
    let seed = 7;
    const next = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const msgs = [encode.relation(rel)];
    const rows = 4000;
    for (let k = 0; k < rows; k++) {
      const d = (next() - 0.5) * 10 ** Math.floor(next() * 40 - 20);
      const f = Math.fround((next() - 0.5) * 10 ** Math.floor(next() * 16 - 8));
      msgs.push(encode.insert({ relation: rel, newTuple: [printFloat8(d), d.toPrecision(17), d.toPrecision(16), printFloat4(f), printFloat4(Math.fround(-f / 3))] }));
    }
    const bytes = frame(msgs);
    expect(same(bytes, "floats", undefined, [true])).toBeGreaterThan(0);
    // The TS build declines every float8 of more than 15 digits and every float4 (it has no u64 for Grisu3).
    const ts = declinedColumns(bytes, DECODERS[1]![1]);
    expect(ts).toBeGreaterThan(rows * 3.5);
    // wasm: the shortest texts and the float4s are written but for Grisu3's rare "cannot tell" (and float8 exponents
    // beyond ±22); what toPrecision(17) printed longer than shortest, and what it rounded, are declined.
    const wasm = declinedColumns(bytes, DECODERS[0]![1]);
    expect(wasm).toBeLessThan(ts - rows * 2.5);
  });

  it("float8 shortest texts of 17 digits, past 2^53: written by the wasm kernel, whichever way their scaling rounds", () => {
    // m of 17 digits is rounded to a double before it is scaled, so the scaled value misses the double the text
    // reads as about half the time; the kernel finds it among the neighbours rather than declining the value.
    const columns: RelationColumnDesc[] = [{ name: "f", typeId: 701 }];
    const rel = { relationId: 16406, namespace: "s", relationName: "floats17", columns };
    let seed = 11;
    const next = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const msgs = [encode.relation(rel)];
    let rows = 0;
    while (rows < 2000) {
      const d = (next() - 0.5) * 10 ** Math.floor(next() * 10 - 2);
      const text = printFloat8(d);
      if (text.replace(/^-|\.|e.*$/g, "").replace(/^0+/, "").length !== 17) continue;
      msgs.push(encode.insert({ relation: rel, newTuple: [text] }));
      rows++;
    }
    const bytes = frame(msgs);
    expect(same(bytes, "floats17", undefined, [true])).toBeGreaterThan(0);
    // Only Grisu3's rare "cannot tell" is left to the JS path (it was about half before the neighbours were tried).
    expect(declinedColumns(bytes, DECODERS[0]![1])).toBeLessThan(rows / 50);
  });

  it("binary values of the kinds the kernel writes (and wrong lengths, extremes, invalid UTF-8), as the JS binary parsers make them", () => {
    const oids = [16, 21, 23, 26, 20, 700, 701, 25, 1043, 1114, 1184, 1082, 2950, 1700, 114, 3802, 17, 1186];
    const columns: RelationColumnDesc[] = oids.map((typeId, i) => ({ name: `b${i}`, typeId, isKey: i % 2 === 0 }));
    const rel = { relationId: 16405, namespace: "s", relationName: "bin", columns };
    const be = (n: number, f: (v: DataView) => void): Uint8Array => {
      const b = new Uint8Array(n);
      f(new DataView(b.buffer));
      return b;
    };
    const utf8 = new TextEncoder();
    const anyI64 = fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -(2n ** 53n), max: 2n ** 53n }),
      fc.constantFrom(2n ** 63n - 1n, -(2n ** 63n), 0n, 2n ** 53n - 1n, -(2n ** 53n) + 1n, 2n ** 53n, 788_918_400_000_000n));
    // Any i32, the ends often (a negated -2^31 wraps in i32).
    const anyI32 = fc.oneof(fc.integer(), fc.constantFrom(-(2 ** 31), 2 ** 31 - 1));
    const row = fc.tuple(
      fc.oneof(fc.constantFrom(0, 1, 2, 255).map((b) => Uint8Array.of(b)), fc.uint8Array({ maxLength: 3 })),
      fc.integer({ min: -32768, max: 32767 }).map((v) => be(2, (d) => d.setInt16(0, v))),
      fc.oneof(fc.integer().map((v) => be(4, (d) => d.setInt32(0, v))), fc.constant(be(4, (d) => d.setInt32(0, -(2 ** 31)))), fc.uint8Array({ maxLength: 5 })),
      fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((v) => be(4, (d) => d.setUint32(0, v))),
      anyI64.map((v) => be(8, (d) => d.setBigInt64(0, v))),
      fc.oneof(fc.integer().map((v) => be(4, (d) => d.setInt32(0, v))), fc.float().map((v) => be(4, (d) => d.setFloat32(0, v)))),
      fc.oneof(fc.double().map((v) => be(8, (d) => d.setFloat64(0, v))), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((v) => be(8, (d) => d.setBigUint64(0, v)))),
      fc.oneof(fc.string({ unit: "binary" }).map((t) => utf8.encode(t)), fc.uint8Array({ maxLength: 20 })),
      fc.string({ unit: "grapheme", maxLength: 40 }).map((t) => utf8.encode(t)),
      anyI64.map((v) => be(8, (d) => d.setBigInt64(0, v))),
      anyI64.map((v) => be(8, (d) => d.setBigInt64(0, v))),
      // date: any day (years BC and past 9999 too), ±infinity, wrong lengths.
      fc.oneof(fc.integer().map((v) => be(4, (d) => d.setInt32(0, v))), fc.integer({ min: -800_000, max: 3_000_000 }).map((v) => be(4, (d) => d.setInt32(0, v))),
        fc.constantFrom(be(4, (d) => d.setInt32(0, 2 ** 31 - 1)), be(4, (d) => d.setInt32(0, -(2 ** 31)))), fc.uint8Array({ maxLength: 5 })),
      fc.oneof(fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.uint8Array({ maxLength: 17 })),
      // numeric: [ndigits][weight][sign][dscale] and base-10000 digits; NaN, ±Infinity, bad signs, digits, scales
      // and lengths; weights far past the digits (long runs of zeros on either side of the point).
      fc.oneof(
        fc.tuple(
          fc.array(fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(0, 9999, 10000, -1)), { maxLength: 6 }),
          fc.oneof(fc.integer({ min: -8, max: 8 }), fc.constantFrom(-32768, 3000, 32767)),
          fc.oneof(fc.constantFrom(0, 0x4000), fc.constantFrom(0xc000, 0xd000, 0xf000, 0x8000)),
          fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constantFrom(0x3fff, 0x4000, 0xffff)),
        ).map(([digits, weight, sign, dscale]) => be(8 + 2 * digits.length, (d) => {
          d.setInt16(0, digits.length); d.setInt16(2, weight); d.setUint16(4, sign); d.setUint16(6, dscale);
          digits.forEach((g, k) => d.setInt16(8 + 2 * k, g));
        })),
        fc.uint8Array({ maxLength: 12 }),
      ),
      // json and jsonb (a version byte, then the text): line breaks, any code point, invalid UTF-8, other versions.
      fc.oneof(fc.string({ unit: "binary" }).map((t) => utf8.encode(`{"a":\r\n${JSON.stringify(t)}}`)), fc.uint8Array({ maxLength: 12 })),
      fc.tuple(fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 255 })),
        fc.oneof(fc.string({ unit: "binary" }).map((t) => utf8.encode(`[${JSON.stringify(t)},\n1]`)), fc.uint8Array({ maxLength: 12 })))
        .map(([version, text]) => Uint8Array.of(version, ...text)),
      fc.uint8Array({ maxLength: 40 }),
      // interval: [int64 µs][int32 days][int32 months], the infinities' extremes, wrong lengths.
      fc.oneof(
        fc.tuple(anyI64, anyI32, anyI32).map(([us, days, months]) => be(16, (d) => {
          d.setBigInt64(0, us); d.setInt32(8, days); d.setInt32(12, months);
        })),
        fc.uint8Array({ maxLength: 17 }),
      ),
    );
    fc.assert(fc.property(fc.array(row, { minLength: 1, maxLength: 8 }), (rows) => {
      const msgs = [encode.relation(rel)];
      for (const r of rows) {
        msgs.push(encode.insert({ relation: rel, newTuple: r }));
        msgs.push(encode.update({ relation: rel, oldTupleType: "O", oldTuple: r, newTuple: r.map((b, i) => (i % 3 === 1 ? { kind: "unchanged" } : b)) }));
        msgs.push(encode.delete({ relation: rel, oldTupleType: "K", oldTuple: r.map((b, i) => (i % 2 === 0 ? b : null)) }));
      }
      same(frame(msgs), `rows=${rows.length}`);
    }), { numRuns: 60 });
    // The kernel wrote them: of a fixed row of every kind, the wasm build declines none, the TS build only the floats
    // and the int8 past 2^53 (all three need u64).
    const r = [Uint8Array.of(1), be(2, (d) => d.setInt16(0, -5)), be(4, (d) => d.setInt32(0, 7)), be(4, (d) => d.setUint32(0, 4e9)),
      be(8, (d) => d.setBigInt64(0, -(2n ** 63n))), be(4, (d) => d.setFloat32(0, 1.1)), be(8, (d) => d.setFloat64(0, Math.PI)),
      utf8.encode("é\"x"), utf8.encode("v"), be(8, (d) => d.setBigInt64(0, 788_918_400_123_456n)), be(8, (d) => d.setBigInt64(0, 0n)),
      be(4, (d) => d.setInt32(0, 9_000)), Uint8Array.from({ length: 16 }, (_, i) => i * 17),
      be(12, (d) => { d.setInt16(0, 2); d.setInt16(2, 0); d.setUint16(4, 0x4000); d.setUint16(6, 3); d.setInt16(8, 12); d.setInt16(10, 3400); }),
      utf8.encode('{"k": [1,\n2]}'), Uint8Array.of(1, ...utf8.encode('{"é": null}')), Uint8Array.of(0, 0x0a, 0xff),
      be(16, (d) => { d.setBigInt64(0, -3_600_000_001n); d.setInt32(8, -2); d.setInt32(12, 14); })];
    const bytes = frame([encode.relation(rel), ...Array.from({ length: 10 }, () => encode.insert({ relation: rel, newTuple: r }))]);
    expect(same(bytes, "fixed row")).toBeGreaterThan(0);
    expect(declinedColumns(bytes, DECODERS[0]![1])).toBe(0);
    expect(declinedColumns(bytes, DECODERS[1]![1])).toBe(30);
    // Values whose JSON is far larger than their bytes (a bytea's hex, a numeric's zeros), around the output's end.
    const wide = (i: number) => r.map((b, k) =>
      k === 16 ? new Uint8Array(1000 * i).fill(i) : k === 13 ? be(10, (d) => { d.setInt16(0, 1); d.setInt16(2, 50 * i); d.setInt16(8, 7); }) : b);
    expect(same(frame([encode.relation(rel), ...Array.from({ length: 40 }, (_, i) => encode.insert({ relation: rel, newTuple: wide(i) }))]), "wide values")).toBeGreaterThan(0);
  });

  it("binary arrays (array_send) of element types with a rule; more dimensions, other element types, bad counts and lengths", () => {
    // Column type, its element type, and element bytes of that type (valid, and a few its rule declines).
    const utf8 = new TextEncoder();
    const be = (n: number, f: (v: DataView) => void): Uint8Array => {
      const b = new Uint8Array(n);
      f(new DataView(b.buffer));
      return b;
    };
    const types: [number, number, fc.Arbitrary<Uint8Array>][] = [
      [1007, 23, fc.oneof(fc.integer().map((v) => be(4, (d) => d.setInt32(0, v))), fc.uint8Array({ maxLength: 5 }))],
      [1005, 21, fc.integer({ min: -32768, max: 32767 }).map((v) => be(2, (d) => d.setInt16(0, v)))],
      [1009, 25, fc.oneof(fc.string({ unit: "binary", maxLength: 12 }).map((t) => utf8.encode(t)), fc.uint8Array({ maxLength: 6 }))],
      [1015, 1043, fc.string({ maxLength: 8 }).map((t) => utf8.encode(t))],
      [1016, 20, fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((v) => be(8, (d) => d.setBigInt64(0, v)))],
      [1022, 701, fc.double().map((v) => be(8, (d) => d.setFloat64(0, v)))],
      [1115, 1114, fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }).map((v) => be(8, (d) => d.setBigInt64(0, v)))],
      // numeric[]: the JS path's (a numeric's JSON is not bounded by its bytes: a weight of 32767 is 131,068 zeros).
      [1231, 1700, fc.constantFrom(be(10, (d) => { d.setInt16(0, 1); d.setInt16(2, 0); d.setInt16(8, 42); }), be(10, (d) => { d.setInt16(0, 1); d.setInt16(2, 32767); d.setInt16(8, 1); }))],
    ];
    const columns: RelationColumnDesc[] = types.map(([typeId], i) => ({ name: `a${i}`, typeId, isKey: i === 0 }));
    const rel = { relationId: 16406, namespace: "s", relationName: "arrays", columns };
    /** array_send bytes of `elements` (null: NULL), with the header fields and tail as drawn. */
    const arrayBytes = (ndim: number, oid: number, count: number, lbound: number, elements: (Uint8Array | null)[], tail: Uint8Array): Uint8Array => {
      const size = 12 + 8 * Math.max(ndim, 0) + elements.reduce((n, e) => n + 4 + (e?.length ?? 0), 0) + tail.length;
      return be(size, (d) => {
        d.setInt32(0, ndim); d.setInt32(4, elements.includes(null) ? 1 : 0); d.setUint32(8, oid);
        let p = 12;
        for (let k = 0; k < ndim; k++) { d.setInt32(p, k === 0 ? count : 1); d.setInt32(p + 4, lbound); p += 8; }
        for (const e of elements) {
          d.setInt32(p, e === null ? -1 : e.length);
          p += 4;
          if (e !== null) { new Uint8Array(d.buffer).set(e, p); p += e.length; }
        }
        new Uint8Array(d.buffer).set(tail, p);
      });
    };
    const value = (element: number, item: fc.Arbitrary<Uint8Array>) =>
      fc.tuple(
        fc.array(fc.option(item, { freq: 5 }), { maxLength: 6 }),
        // Mostly the shape the kernel writes; else another ndim, element type, count, or trailing bytes.
        fc.oneof({ weight: 6, arbitrary: fc.constant(1) }, fc.constantFrom(0, 2, -1, 7)),
        fc.oneof({ weight: 6, arbitrary: fc.constant(element) }, fc.constantFrom(25, 23, 0)),
        fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, fc.constantFrom(1, -1, -2, 1 << 30)),
        fc.oneof(fc.constant(1), fc.integer()),
        fc.oneof({ weight: 6, arbitrary: fc.constant(new Uint8Array(0)) }, fc.uint8Array({ minLength: 1, maxLength: 5 })),
      ).map(([elements, ndim, oid, extra, lbound, tail]) => arrayBytes(ndim, oid, elements.length + extra, lbound, elements, tail));
    const row = fc.tuple(...types.map(([, element, item]) => fc.oneof({ weight: 8, arbitrary: value(element, item) }, fc.uint8Array({ maxLength: 24 }))));
    fc.assert(fc.property(fc.array(row, { minLength: 1, maxLength: 6 }), (rows) => {
      const msgs = [encode.relation(rel)];
      for (const r of rows) {
        msgs.push(encode.insert({ relation: rel, newTuple: r }));
        msgs.push(encode.update({ relation: rel, oldTupleType: "O", oldTuple: r, newTuple: r.map((b, i) => (i % 3 === 1 ? { kind: "unchanged" } : b)) }));
      }
      same(frame(msgs), `rows=${rows.length}`);
    }), { numRuns: 60 });
    // The kernel wrote them but the numeric[]: on wasm; the TS build also declines the float8[] (floats need u64)
    // and the int8[] past 2^53.
    const fixed = [
      arrayBytes(1, 23, 3, 1, [be(4, (d) => d.setInt32(0, -7)), null, be(4, (d) => d.setInt32(0, 2 ** 31 - 1))], new Uint8Array(0)),
      arrayBytes(1, 21, 1, 0, [be(2, (d) => d.setInt16(0, -32768))], new Uint8Array(0)),
      arrayBytes(1, 25, 3, 1, [utf8.encode('é"\\n'), null, utf8.encode("")], new Uint8Array(0)),
      arrayBytes(0, 1043, 0, 1, [], new Uint8Array(0)),
      arrayBytes(1, 20, 1, 1, [be(8, (d) => d.setBigInt64(0, -(2n ** 63n)))], new Uint8Array(0)),
      arrayBytes(1, 701, 1, 1, [be(8, (d) => d.setFloat64(0, Math.PI))], new Uint8Array(0)),
      arrayBytes(1, 1114, 2, 1, [be(8, (d) => d.setBigInt64(0, 788_918_400_123_456n)), null], new Uint8Array(0)),
      arrayBytes(1, 1700, 2, 1, [be(10, (d) => { d.setInt16(0, 1); d.setInt16(2, 32767); d.setInt16(8, 1); }), null], new Uint8Array(0)),
    ];
    const bytes = frame([encode.relation(rel), ...Array.from({ length: 10 }, () => encode.insert({ relation: rel, newTuple: fixed }))]);
    expect(same(bytes, "fixed row")).toBeGreaterThan(0);
    expect(declinedColumns(bytes, DECODERS[0]![1])).toBe(10);
    expect(declinedColumns(bytes, DECODERS[1]![1])).toBe(30);
    // An array larger than the output area: the JS path's, whole.
    const long = fixed.map((b, i) => (i === 2 ? arrayBytes(1, 25, 20_000, 1, Array.from({ length: 20_000 }, (_, k) => utf8.encode(`"${k}"\n`)), new Uint8Array(0)) : b));
    expect(same(frame([encode.relation(rel), encode.insert({ relation: rel, newTuple: long })]), "long array")).toBeGreaterThan(0);
    // Two dimensions: the JS path's nested arrays.
    const nested = fixed.map((b, i) => (i === 0 ? be(36, (d) => {
      d.setInt32(0, 2); d.setUint32(8, 23); d.setInt32(12, 1); d.setInt32(16, 1); d.setInt32(20, 1); d.setInt32(24, 1); d.setInt32(28, 4); d.setInt32(32, 9);
    }) : b));
    const twoDims = frame([encode.relation(rel), encode.insert({ relation: rel, newTuple: nested })]);
    expect(same(twoDims, "two dimensions")).toBeGreaterThan(0);
    expect(declinedColumns(twoDims, DECODERS[0]![1])).toBe(2);
  });

  it("intervals as PostgreSQL prints them, of every size", () => {
    const rel = { relationId: 16403, namespace: "s", relationName: "iv", columns: [{ name: "i", typeId: 1186 }] };
    fc.assert(fc.property(
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.oneof(fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }), fc.bigInt({ min: -(2n ** 63n) + 1n, max: 2n ** 63n - 1n })),
      (months, days, microseconds) => {
        const text = printInterval({ months, days, microseconds });
        same(frame([encode.relation(rel), encode.insert({ relation: rel, newTuple: [text] })]), text, undefined, [true]);
      },
    ), { numRuns: 200 });
  });

  it("a tuple larger than the output area, and one value larger than all of it", () => {
    const columns: RelationColumnDesc[] = Array.from({ length: 12 }, (_, i) => ({ name: `big${i}`, typeId: i % 2 === 0 ? 25 : 114 }));
    const rel = { relationId: 16402, namespace: "public", relationName: "big", columns };
    const chunk = "x\u0001\"é😀".repeat(6000); // ~60 KB of UTF-8, ~100 KB of JSON
    const huge = "\u0002".repeat(300_000); // 1.8 MB of \u0002 escapes: more than the whole output
    const msgs = [
      encode.relation(rel),
      encode.insert({ relation: rel, newTuple: columns.map((c, i) => (c.typeId === 114 ? `{"k${i}":\n"${chunk}"}` : chunk)) }),
      encode.insert({ relation: rel, newTuple: columns.map((c, i) => (i === 4 ? huge : c.typeId === 114 ? "[1]" : "s")) }),
    ];
    expect(same(frame(msgs), "large", 1 << 22)).toBeGreaterThan(2_000_000);
  });
});

describe("jsonLines: whole lines from the kernel = the JS path's lines", () => {
  const columns: RelationColumnDesc[] = [
    { name: "id", typeId: 23, isKey: true }, { name: "t", typeId: 25 }, { name: "f4", typeId: 700 }, { name: "iv", typeId: 1186 }, { name: "ts", typeId: 1184 },
  ];
  const rel = { relationId: 0x9000_0001, namespace: "public", relationName: "lines", columns };
  const row = (i: number): ColumnDesc[] => [String(i), `row "${i}"`, "1.5", "1 day", "2026-12-01 10:00:00.5+00"];
  /** One transaction per commit time, its messages in XLogData payloads at walStart `lsn(k)`. */
  function stream(times: bigint[], lsn: (k: number) => bigint): Uint8Array[] {
    const payloads: Uint8Array[] = [];
    let k = 0;
    const add = (m: Parameters<typeof wal.xlogData>[0]) => payloads.push(wal.xlogData(m, { walStart: lsn(k++), walEnd: 0n, sendTime: 0n }).bytes);
    add(encode.relation(rel));
    times.forEach((commitTime, x) => {
      add(encode.begin({ finalLsn: 0x1_0000_0000n + BigInt(x), commitTime, xid: (x * 2654435761) >>> 0 }));
      if (x % 7 === 3) add(encode.origin({ originLsn: 5n, name: "upstream" }));
      add(encode.insert({ relation: rel, newTuple: row(x) }));
      add(encode.update({ relation: rel, oldTupleType: "K", oldTuple: [String(x), null, null, null, null], newTuple: row(x + 1) }));
      add(encode.update({ relation: rel, newTuple: [String(x), { kind: "unchanged" }, "2", null, "2026-12-01 10:00:00+00"] }));
      add(encode.delete({ relation: rel, oldTupleType: "O", oldTuple: row(x) }));
      add(encode.commit({ commitLsn: 0x2_0000_0000n + BigInt(x), endLsn: 0xffff_ffff_ffff_ff00n, commitTime }));
    });
    return payloads;
  }
  /** The lines of CopyData payloads decoded `per` at a time, through pushBatch (`batch`) or push() alone. */
  function copyDataLines(make: Make, payloads: Uint8Array[], options: JsonLinesOptions, per: number, batch: boolean): Buffer {
    const d = make();
    const w = new JsonLinesWriter({ ...options, decoder: d });
    const parts: Uint8Array[] = [];
    for (let i = 0; i < payloads.length; i += per) {
      const records = new Records();
      const b = d.decodeCopyData(payloads.slice(i, i + per)) as Batch;
      for (let j = batch ? w.pushBatch(b, 0, records) : 0; j < b.length; j = batch ? w.pushBatch(b, j + 1, records) : j + 1) w.push(b.get(j), records);
      parts.push(Buffer.from(JSON.stringify([records.kinds, records.ends])), records.bytes.take());
    }
    return Buffer.concat(parts);
  }
  function sameLines(payloads: Uint8Array[], what: string): void {
    for (const [name, make] of DECODERS) {
      for (const options of [{}, { transactions: true }, { transactions: true, numbersAsStrings: true }] as JsonLinesOptions[]) {
        for (const per of [1, 5, 1000]) {
          const js = copyDataLines(make, payloads, { ...options, kernel: false }, per, false);
          const kernel = copyDataLines(make, payloads, options, per, true);
          expect(kernel.toString(), `${what} ${name} ${JSON.stringify(options)} ${per} per batch`).toBe(js.toString());
        }
      }
    }
  }

  it("LSNs of the XLogData headers, commit times at the ends of the years 1..9999 and beyond, B and C lines", () => {
    const us = (iso: string) => BigInt(Date.parse(iso)) * 1000n;
    const times = [
      0n, 1n, -1n, 946_684_800_000_000n, 946_684_799_999_999n, us("0001-01-01T00:00:00Z"), us("9999-12-31T23:59:59Z") + 999_999n,
      us("0001-01-01T00:00:00Z") - 1n, us("9999-12-31T23:59:59Z") + 1_000_000n, us("1969-12-31T23:59:59Z") + 123_456n, us("2024-02-29T12:34:56Z"),
    ];
    const lsns = [0n, 1n, 0xffff_ffffn, 0x1_0000_0000n, 0xffff_ffff_ffff_ffffn, 0x16_b374_d848n];
    const before = twinStats.json;
    sameLines(stream(times, (k) => lsns[k % lsns.length]!), "edges");
    expect(twinStats.json - before, "the twin compared the kernels' lines").toBeGreaterThan(10_000);
  });

  it("any commit time and walStart", () => {
    fc.assert(fc.property(
      fc.array(fc.bigInt({ min: -(2n ** 52n), max: 2n ** 52n }), { minLength: 1, maxLength: 4 }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      (times, lsn) => sameLines(stream(times, (k) => (k % 3 === 0 ? 0n : lsn + BigInt(k)) & (2n ** 64n - 1n)), `times ${times} lsn ${lsn}`),
    ), { numRuns: 8 });
  });
});

describe("the JSON area is laid out only for a decoder a writer reads", () => {
  const rel = { relationId: 16403, namespace: "public", relationName: "lazy", columns: [{ name: "id", typeId: 23 }, { name: "t", typeId: 25 }] };
  const chunk = () => frame([encode.relation(rel), ...Array.from({ length: 50 }, (_, i) => encode.insert({ relation: rel, newTuple: [String(i), `row ${i}`] }))]);
  const memoryOf = (d: PgoutputDecoder) => decoderInternals(d as TapeDecoder).memory;

  it("none without a writer; the first rows a writer reads take the JS path and ask for it; from the decoder's next call the kernel writes", () => {
    const plain = new TwinDecoder({ values: changeValueOptions() });
    plain.push(chunk());
    expect(memoryOf(plain).region).toBeUndefined();
    const idle = memoryOf(plain).buffer!.byteLength;

    const d = new TwinDecoder({ values: changeValueOptions() });
    const w = new JsonLinesWriter({ types: d.types });
    const reference = new JsonLinesWriter({ types: d.types, kernel: false });
    for (let call = 0; call < 3; call++) {
      const before = twinStats.json;
      const records = new Records();
      const js = new Records();
      for (const m of d.push(chunk())) {
        w.push(m, records);
        reference.push(m, js);
      }
      // The bytes are the JS path's whether the kernel wrote them or not.
      expect(Buffer.from(records.bytes.take()).equals(Buffer.from(js.bytes.take())), `call ${call}`).toBe(true);
      const kernelBytes = twinStats.json - before;
      if (call === 0) {
        expect(kernelBytes, "the batch that asked for the area").toBe(0);
        expect(memoryOf(d).region, "laid out at the next call, not during this one").toBeUndefined();
      } else {
        expect(kernelBytes, `call ${call}`).toBeGreaterThan(500);
        expect(memoryOf(d).region).toBeInstanceOf(JsonArea);
      }
    }
    // The 590 KiB it takes (less what the last page had free): what a decoder without a writer does not carry.
    expect(memoryOf(d).buffer!.byteLength - idle).toBeGreaterThanOrEqual(576 << 10);
  });

  it("a writer made with its decoder has the area laid out at that decoder's first call", () => {
    for (const [, make] of DECODERS) {
      const d = make();
      new JsonLinesWriter({ decoder: d });
      d.push(chunk());
      expect(memoryOf(d).region).toBeInstanceOf(JsonArea);
    }
  });
});

describe("jsonColumns: hostile arguments are refused, never a trap", () => {
  const kernels = [["wasm", () => instantiate(kernelModule())], ["baseline", createKernel]] as const;
  for (const [name, make] of kernels) {
    it(name, () => {
      const k = make();
      const size = k.memory.buffer.byteLength;
      const base = k.heapBase();
      const i32 = new Int32Array(k.memory.buffer);
      const result = base;
      const table = base + 64;
      const tuple = base + 256;
      // A table of 1 column whose prefix is out of memory, and a tuple whose column offset is out of memory.
      i32.set([1, 6, size - 2, 100], table >> 2);
      i32.set([1, size + 10], tuple >> 2);
      const out = base + 1024;
      type Args = [number, number, number, number, number, number, number, number];
      for (const args of [
        [size, 0, table, 0, 0, out, 100, result], // tuple outside memory
        [tuple, size - 2, table, 0, 0, out, 100, result], // old tuple outside memory
        [tuple, 0, size, 0, 0, out, 100, result], // table outside memory
        [tuple, 0, table, 2, 0, out, 100, result], // from beyond ncols
        [tuple, 0, table, -1, 0, out, 100, result],
        [tuple, 0, table, 0, 0, size - 10, 100, result], // output past the end
        [tuple, 0, table, 0, 0, out, -5, result],
      ] as Args[]) {
        expect(k.jsonColumns(...args), `${name} ${args.join(",")}`).toBe(JSON_REFUSED);
      }
      // Consistent shape, bad offsets inside: the column is declined (the JS path's), nothing read out of bounds.
      expect(k.jsonColumns(tuple, 0, table, 0, 0, out, 100, result)).toBe(JSON_DECLINED);
      i32.set([1, base + 2048], tuple >> 2);
      new Uint8Array(k.memory.buffer).set([0x74, 0x7f, 0, 0, 0], base + 2048); // 't' with a huge length
      expect(k.jsonColumns(tuple, 0, table, 0, 0, out, 100, result)).toBe(JSON_DECLINED);
    });
  }
});

describe("jsonLines: hostile arguments and templates stop it, never a trap", () => {
  const kernels = [["wasm", () => instantiate(kernelModule())], ["baseline", createKernel]] as const;
  for (const [name, make] of kernels) {
    it(name, () => {
      const k = make();
      k.memory.grow(1);
      const size = k.memory.buffer.byteLength;
      const base = k.heapBase();
      const i32 = new Int32Array(k.memory.buffer);
      const result = base;
      const area = base + 64; // a zeroed line area: no transaction, no programs, an empty map of capacity 0
      const records = base + 32768;
      const out = base + 40000;
      const lines = base + 50000;
      // An Insert record whose message offset is out of memory, then a Begin at a sane offset.
      i32.set([0x49, 4, size - 3, 10, 0x42, 4, base + 60000, 21], records >> 2);
      type Args = [number, number, number, number, number, number, number, number, number];
      const cases: Args[] = [
        [records, 2, 0, area, out, 100, lines, 10, result], // the Insert's offset is outside memory
        [size - 4, 1, 0, area, out, 100, lines, 10, result], // the record itself is
        [records + 2, 1, 0, area, out, 100, lines, 10, result], // unaligned
        [records + 16, 1, 0, area, out, 100, lines, 10, result], // a Begin with no programs
        [records + 16, 1, LF_TRANSACTIONS, area, out, 100, lines, 10, result],
        [records + 16, 1, 0, size - 8, out, 100, lines, 10, result], // the area outside memory
        [records + 16, 1, 0, area, size - 10, 100, lines, 10, result], // the output past the end
        [records + 16, 1, 0, area, out, 100, size - 4, 10, result], // the entries past the end
        [records + 16, 1 << 30, 0, area, out, -1, lines, -1, result],
      ];
      for (const args of cases) expect(k.jsonLines(...args), `${name} ${args.join(",")}`).toBeGreaterThanOrEqual(0);
      // A B line program whose literal is outside memory, and one longer than LP_MAX_OPS: the B line is one the
      // kernel cannot write (LS_BEGIN_LENGTH -1: the transaction's rows are the binding's), nothing written.
      const programs = (area + LS_STATE_BYTES) >> 2;
      for (const program of [[1, OP_BYTES, size - 2, 100], [1000]]) {
        i32.set(program, programs + LK_BEGIN * LP_PROGRAM_WORDS);
        expect(k.jsonLines(records + 16, 1, LF_TRANSACTIONS, area, out, 100, lines, 10, result)).toBe(LINES_DONE);
        expect(i32[(area >> 2) + LS_BEGIN_LENGTH]).toBe(-1);
        expect(i32[result >> 2], "bytes written").toBe(0);
      }
    });
  }
});
