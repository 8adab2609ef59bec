/**
 * The side table (bindings/row-values.ts): on the wasm backend a row
 * reader takes a row's text bools, integers, floats and timestamps from
 * one kernel call; the baseline has none. Whatever the text, every value
 * and error of `values()` and of the interpreted reader must be
 * `value(i)`'s, which runs the JS parser alone: the kernel takes only the
 * forms that parser reads the same way and leaves it everything else (a
 * sign alone, 16+ digits, exponents, an int8 out of range, NaN, a zone on
 * a timestamp, ...). Each code must be both taken and declined in a run, so
 * the comparison is not vacuous.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Insert } from "../bindings/messages.ts";
import type { Tuple } from "../bindings/tuple.ts";
import type { ValueOptions } from "../bindings/values/options.ts";
import type { RowValues } from "../bindings/values/registry.ts";
import { ROW_VALUE_COLUMNS } from "../bindings/row-values.ts";
import { Oid } from "../bindings/values/oids.ts";
import { makeRowReader } from "../bindings/values/row-reader.ts";
import { tapeColumns } from "../bindings/views/tuple.ts";
import { encode, type RelationDesc } from "../devkit/encoder/encoder.ts";
import { backend } from "./support/backends.ts";

const RUNS = Number(process.env.ROW_VALUES_RUNS ?? 150);

/** min..max digits, every length alike (stringMatching would favour short ones). */
const digits = (min: number, max: number) =>
  fc.integer({ min, max }).chain((n) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join("")));
const signed = (a: fc.Arbitrary<string>) => fc.tuple(fc.constantFrom("", "", "-", "+", "--"), a).map(([s, d]) => s + d);
/** Text that is near some numeric form: digits, signs, a point, an exponent, a blank. */
const noise = fc.stringMatching(/^[-+0-9.eE ]{0,6}$/);

const two = (n: number) => String(n).padStart(2, "0");
/** A timestamp as PostgreSQL prints it (ISO DateStyle), or near it. */
const timestampText = (zoned: boolean) =>
  fc.tuple(
    fc.integer({ min: 0, max: 12000 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }),
    fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 60 }),
    fc.option(digits(0, 8)), fc.option(fc.tuple(fc.constantFrom("+", "-"), fc.integer({ min: 0, max: 15 }), fc.option(fc.integer({ min: 0, max: 59 })))),
    fc.constantFrom("", "", "", " BC", "x"),
  ).map(([y, mo, d, h, mi, s, frac, zone, tail]) => {
    let t = `${String(y).padStart(4, "0")}-${two(mo)}-${two(d)} ${two(h)}:${two(mi)}:${two(s)}`;
    if (frac !== null) t += `.${frac}`;
    if (zone !== null && (zoned || zone[1] === 0)) t += `${zone[0]}${two(zone[1])}${zone[2] === null ? "" : `:${two(zone[2])}`}`;
    return t + tail;
  });

interface Column {
  name: string;
  typeId: number;
  text: fc.Arbitrary<string>;
}

const COLUMNS: Column[] = [
  { name: "b", typeId: Oid.bool, text: fc.oneof(fc.constantFrom("t", "f"), fc.constantFrom("true", "", "T", "tt", "0")) },
  { name: "i2", typeId: Oid.int2, text: fc.oneof(signed(digits(0, 17)), noise) },
  { name: "i4", typeId: Oid.int4, text: fc.oneof(fc.integer().map(String), signed(digits(0, 17)), noise) },
  { name: "o", typeId: Oid.oid, text: fc.oneof(fc.nat().map(String), signed(digits(0, 16))) },
  {
    name: "i8",
    typeId: Oid.int8,
    text: fc.oneof(
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
      // Around int8's ends, half of them past it.
      fc.tuple(fc.constantFrom(-(2n ** 63n), 2n ** 63n - 1n), fc.integer({ min: -2, max: 2 })).map(([end, d]) => String(end + BigInt(d))),
      fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
      signed(digits(0, 21)),
      noise,
    ),
  },
  {
    name: "f4",
    typeId: Oid.float4,
    text: fc.oneof(fc.float({ noNaN: false }).map(String), signed(fc.tuple(digits(0, 10), fc.option(digits(0, 10))).map(([a, b]) => (b === null ? a : `${a}.${b}`))), noise),
  },
  {
    name: "f8",
    typeId: Oid.float8,
    text: fc.oneof(
      fc.double().map(String),
      signed(fc.tuple(digits(0, 18), fc.option(digits(0, 25))).map(([a, b]) => (b === null ? a : `${a}.${b}`))),
      fc.constantFrom("NaN", "Infinity", "-Infinity", "-0", ".5", "5.", ".", "-", "1e5", "0.1"),
      noise,
    ),
  },
  { name: "ts", typeId: Oid.timestamp, text: timestampText(false) },
  { name: "tz", typeId: Oid.timestamptz, text: timestampText(true) },
];

/** A relation of the columns, `copies` times over (past 32 columns the side table ends). */
function relationOf(copies: number): RelationDesc {
  const columns = [];
  for (let c = 0; c < copies; c++) for (const col of COLUMNS) columns.push({ name: `${col.name}${c}`, typeId: col.typeId });
  return { relationId: 17000 + copies, namespace: "public", relationName: `side${copies}`, columns };
}

/** Equal as JS values: -0 is not 0, a Date by its time, NaN equals NaN. */
function same(a: unknown, b: unknown): boolean {
  if (a instanceof Date && b instanceof Date) return Object.is(a.getTime(), b.getTime());
  return Object.is(a, b);
}

function outcome(f: () => unknown[]): { values?: unknown[]; error?: unknown } {
  try {
    return { values: f() };
  } catch (error) {
    return { error };
  }
}

/** What value(i) gives for each column, or the first column's error: what a reader must give. */
function byColumn(t: Tuple): { values?: unknown[]; error?: unknown } {
  return outcome(() => Array.from({ length: t.length }, (_, i) => t.value(i)));
}

function expectSame(got: { values?: unknown[]; error?: unknown }, want: { values?: unknown[]; error?: unknown }, row: (string | null)[]): void {
  if (want.error !== undefined) {
    expect(got.error, `row ${JSON.stringify(row)}`).toBeDefined();
    expect(String(got.error)).toBe(String(want.error));
    expect(got.error).toMatchObject(want.error as object);
    return;
  }
  expect(got.error, `row ${JSON.stringify(row)}: ${String(got.error)}`).toBeUndefined();
  got.values!.forEach((v, i) => {
    expect(same(v, want.values![i]), `column ${i} (${JSON.stringify(row[i])}): ${String(v)} vs ${String(want.values![i])}`).toBe(true);
  });
}

/** Both readers against value(i), for one row. */
function check(t: Tuple, row: (string | null)[]): void {
  const c = tapeColumns(t)!;
  const want = byColumn(t);
  expectSame(outcome(() => t.values()), want, row);
  expectSame(outcome(() => makeRowReader(c.values, t.relation!, false)(c.u8, c.dv, c.tape, c.first - 1, t.relation!)), want, row);
}

const OPTIONS: ValueOptions[] = [{}, { int8: "number" }, { timestamp: "iso" }, { timestamp: "Date" }];

describe(`${backend.name}: the side table`, () => {
  it(backend.name === "wasm" ? "the wasm decoder has one" : "the baseline has none: its readers run the JS parsers", async () => {
    const d = await backend.create();
    d.decode(encode.relation(relationOf(1)).bytes);
    const t = (d.decode(encode.insert({ relation: relationOf(1), newTuple: COLUMNS.map(() => null) }).bytes) as Insert).newTuple;
    expect(tapeColumns(t)!.values.rowValues !== undefined).toBe(backend.name === "wasm");
  });

  for (const options of OPTIONS) {
    it(`values() and the interpreted reader give value(i)'s values and errors, whatever the text (${JSON.stringify(options)})`, async () => {
      const d = await backend.create({ values: options });
      // Which columns the kernel took and declined over the run (by column of COLUMNS).
      const taken = new Set<string>();
      const declined = new Set<string>();
      let watched: RowValues | undefined;
      let current: (string | null)[] = [];
      const rels = [relationOf(1), relationOf(4)];
      for (const r of rels) d.decode(encode.relation(r).bytes);
      await fc.assert(
        fc.property(fc.constantFrom(0, 0, 0, 1), fc.array(fc.tuple(...COLUMNS.map((c) => c.text)), { minLength: 4, maxLength: 4 }), (which, rows) => {
          const rel = rels[which]!;
          const row = rows.flat().slice(0, rel.columns.length);
          current = row;
          const t = (d.decode(encode.insert({ relation: rel, newTuple: row }).bytes) as Insert).newTuple;
          const c = tapeColumns(t)!;
          if (c.values.rowValues !== undefined && watched !== c.values.rowValues) {
            watched = c.values.rowValues;
            const read = watched.read.bind(watched);
            (watched as { read: RowValues["read"] }).read = (...a) => {
              const done = read(...a);
              for (let i = 0; i < ROW_VALUE_COLUMNS; i++) {
                const name = COLUMNS[i % COLUMNS.length]!.name;
                if (i < current.length) (done & (1 << i) ? taken : declined).add(name);
              }
              return done;
            };
          }
          check(t, row);
          // Most rows hold some text a parser refuses, and then only the error is compared: compare the
          // rest too, in the row with those columns NULL.
          const clean = row.map((text, i) => (outcome(() => [t.value(i)]).error === undefined ? text : null));
          check((d.decode(encode.insert({ relation: rel, newTuple: clean }).bytes) as Insert).newTuple, clean);
        }),
        { numRuns: RUNS },
      );
      if (backend.name === "wasm") {
        // int8 "number" and the timestamp options still take each code; with none of them nothing would be compared.
        expect([...taken].sort()).toStrictEqual(COLUMNS.map((c) => c.name).sort());
        expect([...declined].sort()).toStrictEqual(COLUMNS.map((c) => c.name).sort());
      }
    });
  }
});
