/**
 * Value errors: whatever a column's bytes are, `tuple.value()`, `values()`
 * and `toObject()` throw only a PgoutputError (INVALID_VALUE) naming the
 * column, its type OID and format, in both backends; declared counts in
 * binary arrays and int2vectors are checked against the bytes before
 * anything is allocated; a user parser's error is kept as `cause`; and the
 * decoder decodes the next message as if nothing happened.
 */
import { describe, expect, it } from "vitest";
import { isPgoutputError, type PgoutputError } from "../bindings/errors.ts";
import type { Insert } from "../bindings/messages.ts";
import { Oid, ValueDecoder, type ValueOptions } from "../bindings/values/index.ts";
import { backend, onceAcrossBackends } from "./support/backends.ts";
import { encode, type ColumnDesc, type RelationDesc } from "../devkit/encoder/encoder.ts";
import { utf8, Writer } from "../devkit/encoder/values-print.ts";

const CUSTOM = 70001;

const relation: RelationDesc = {
  relationId: 16500, namespace: "public", relationName: "v",
  columns: [
    { name: "id", typeId: Oid.int4, isKey: true },
    { name: "doc", typeId: Oid.json },
    { name: "docb", typeId: Oid.jsonb },
    { name: "ints", typeId: Oid._int4 },
    { name: "vec", typeId: Oid.int2vector },
    { name: "custom", typeId: CUSTOM },
    { name: "amount", typeId: Oid.numeric },
  ],
};
const good: ColumnDesc[] = ["1", '{"a":1}', '{"b":2}', "{1,2}", "1 2", "c", "1.5"];

/** A binary int4[] header: ndim, no nulls, int4, then (size, lower bound 1) per dimension, then `elements` bytes. */
function arrayHeader(dims: number[], elements: Uint8Array = new Uint8Array(0)): Uint8Array {
  const w = new Writer().i32(dims.length).i32(0).i32(Oid.int4);
  for (const d of dims) w.i32(d).i32(1);
  return w.raw(elements).done();
}

/** A binary int2vector: one dimension of `count` declared elements, `present` of them written. */
function int2vector(count: number, present: number): Uint8Array {
  const w = new Writer().i32(1).i32(0).i32(Oid.int2).i32(count).i32(0);
  for (let i = 0; i < present; i++) w.i32(2).i16(i);
  return w.done();
}

/** Column index, type OID, format and (optionally) what the cause must be, for each bad value. */
interface Case {
  name: string;
  column: number;
  value: ColumnDesc;
  format: "text" | "binary";
  cause?: (e: unknown) => boolean;
}

const someElements = new Writer().i32(4).i32(7).i32(4).i32(8).done();
const cases: Case[] = [
  { name: "invalid json text", column: 1, value: '{"a":', format: "text", cause: (e) => e instanceof SyntaxError },
  { name: "invalid jsonb text", column: 2, value: "{nope}", format: "text", cause: (e) => e instanceof SyntaxError },
  { name: "invalid json in binary jsonb", column: 2, value: new Writer().u8(1).raw(utf8("[1,")).done(), format: "binary" },
  { name: "binary array of dimension 2^30", column: 3, value: arrayHeader([2 ** 30], someElements), format: "binary" },
  { name: "binary array of 2^32 elements (65536 × 65536)", column: 3, value: arrayHeader([65536, 65536], someElements), format: "binary" },
  { name: "binary array of 2^30 × 0 elements with bytes after", column: 3, value: arrayHeader([2 ** 30, 0], someElements), format: "binary" },
  { name: "int2vector declaring 2^30 elements", column: 4, value: int2vector(2 ** 30, 2), format: "binary" },
  { name: "int2vector declaring -1 elements", column: 4, value: int2vector(-1, 0), format: "binary" },
  { name: "int2vector declaring fewer elements than present", column: 4, value: int2vector(1, 2), format: "binary" },
  { name: "binary numeric with a digit above 9999", column: 6, value: new Writer().i16(1).i16(0).i16(0).i16(0).i16(10000).done(), format: "binary" },
  { name: "a throwing user text parser", column: 5, value: "boom", format: "text", cause: (e) => e instanceof Error && e.message === "user parser: boom" },
  { name: "a throwing user binary parser", column: 5, value: new Writer().raw(utf8("boom")).done(), format: "binary", cause: (e) => e instanceof Error && e.message === "user parser: 4 bytes" },
];

const options: ValueOptions = {
  parsers: {
    [CUSTOM]: {
      text: (s) => {
        if (s === "boom") throw new Error("user parser: boom");
        return s;
      },
      binary: (b) => {
        throw new Error(`user parser: ${b.length} bytes`);
      },
    },
  },
};

function rowWith(c: Case): Uint8Array {
  const row = good.slice();
  row[c.column] = c.value;
  return encode.insert({ relation, newTuple: row }).bytes;
}

function errorOf(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error("expected an error");
}

function expectValueError(e: unknown, c: Case, typeId: number): asserts e is PgoutputError {
  expect(isPgoutputError(e), String(e)).toBe(true);
  const p = e as PgoutputError;
  expect(p.code).toBe("INVALID_VALUE");
  expect(p.column).toBe(c.column);
  expect(p.columnName).toBe(relation.columns[c.column]!.name);
  expect(p.typeId).toBe(typeId);
  expect(p.format).toBe(c.format);
  expect(p.message).toContain(`column ${c.column}`);
  if (c.cause !== undefined) expect(c.cause(p.cause), `cause ${String(p.cause)}`).toBe(true);
}

describe(`${backend.name}: value errors are PgoutputErrors naming the column`, () => {
  for (const c of cases) {
    it(c.name, async () => {
      const d = await backend.create({ values: options });
      d.decode(encode.relation(relation).bytes);
      const typeId = relation.columns[c.column]!.typeId;
      const before = process.memoryUsage().heapUsed;
      const msg = d.decode(rowWith(c)) as Insert;
      const t = msg.newTuple;
      // Every way to a value; the error is the same, and no call balloons memory.
      expectValueError(errorOf(() => t.value(c.column)), c, typeId);
      expectValueError(errorOf(() => t.value(relation.columns[c.column]!.name)), c, typeId);
      expectValueError(errorOf(() => t.values()), c, typeId);
      expectValueError(errorOf(() => t.toObject()), c, typeId);
      expect(process.memoryUsage().heapUsed - before).toBeLessThan(64 << 20);
      // The other columns still decode, and so does the next row.
      expect(t.value(0)).toBe(1);
      const next = d.decode(encode.insert({ relation, newTuple: good }).bytes) as Insert;
      expect(next.newTuple.toObject()).toEqual({ id: 1, doc: { a: 1 }, docb: { b: 2 }, ints: [1, 2], vec: [1, 2], custom: "c", amount: "1.5" });
    });
  }

  it("a throwing getTypeParser parser is wrapped with its error as cause", async () => {
    const boom = new TypeError("pg parser failed");
    const d = await backend.create({
      values: { getTypeParser: (oid) => (oid === Oid.json ? () => { throw boom; } : (s: unknown) => s) },
    });
    d.decode(encode.relation(relation).bytes);
    const t = (d.decode(encode.insert({ relation, newTuple: good }).bytes) as Insert).newTuple;
    const e = errorOf(() => t.value(1));
    expectValueError(e, { name: "", column: 1, value: null, format: "text" }, Oid.json);
    expect(e.cause).toBe(boom);
    expect(t.value(0)).toBe("1");
  });
});

if (onceAcrossBackends) describe("ValueDecoder called directly", () => {
  it("gives the type OID and format, without a column", () => {
    const values = new ValueDecoder();
    const bytes = utf8("{bad");
    const e = errorOf(() => values.text(Oid.json, bytes, 0, bytes.length));
    expect(isPgoutputError(e)).toBe(true);
    expect(e).toMatchObject({ code: "INVALID_VALUE", typeId: Oid.json, format: "text", column: undefined });
    expect((e as Error).cause).toBeInstanceOf(SyntaxError);
    const huge = arrayHeader([65536, 65536]);
    expect(errorOf(() => values.binary(Oid._int4, huge, 0, huge.length))).toMatchObject({ code: "INVALID_VALUE", typeId: Oid._int4, format: "binary" });
  });

  it("empty arrays with a zero dimension are [] as array_recv makes them", () => {
    const values = new ValueDecoder();
    for (const dims of [[0], [3, 0], [2 ** 30, 0]]) {
      const b = arrayHeader(dims);
      expect(values.binary(Oid._int4, b, 0, b.length), JSON.stringify(dims)).toEqual([]);
    }
  });
});
