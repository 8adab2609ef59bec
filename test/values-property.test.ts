/**
 * Property tests of bindings/values: random values of each type → the text
 * PostgreSQL prints / the bytes its send function writes → parse → the same
 * value, from both formats. (values-pg.test.ts checks the printers and
 * encoders used here against a real server.)
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Oid, ValueDecoder } from "../bindings/values/index.ts";
import { GENERATORS, timestamptzAtOffset, type Sample } from "./support/values-arbitraries.ts";
import { printByteaEscape, utf8 } from "../devkit/encoder/values-print.ts";

const values = new ValueDecoder();
const RUNS = Number(process.env.VALUES_PROPERTY_RUNS ?? 300);

/** Places bytes inside a larger buffer so offset mistakes show. */
function inside(b: Uint8Array, pad: number): [Uint8Array, number, number] {
  const buf = new Uint8Array(b.length + 2 * pad).fill(0x7b);
  buf.set(b, pad);
  return [buf, pad, b.length];
}

function check(oid: number, s: Sample, pad: number, d = values): void {
  expect(d.text(oid, ...inside(utf8(s.text), pad)), `text ${JSON.stringify(s.text)}`).toStrictEqual(s.value);
  expect(d.binary(oid, ...inside(s.binary, pad)), `binary of ${JSON.stringify(s.text)}`).toStrictEqual(s.value);
}

describe("random values round-trip through text and binary", () => {
  for (const g of GENERATORS) {
    it(g.type, () => {
      fc.assert(
        fc.property(g.arb, fc.integer({ min: 0, max: 9 }), (s, pad) => check(g.oid, s, pad)),
        { numRuns: RUNS },
      );
    });
  }

  it("timestamptz printed at any offset is the same instant", () => {
    fc.assert(fc.property(timestamptzAtOffset, (s) => check(Oid.timestamptz, s, 1)), { numRuns: RUNS });
  });

  it("bytea in escape format", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (b) => {
        expect(values.fromText(Oid.bytea, printByteaEscape(b))).toStrictEqual(b);
      }),
      { numRuns: RUNS },
    );
  });
});

describe("options keep text == binary", () => {
  const variants = [
    { int8: "string" as const, timestamp: "iso" as const, date: "iso" as const, time: "microseconds" as const, money: "string" as const },
    { timestamp: "Date" as const, date: "days" as const, numeric: "number" as const, json: "raw" as const },
    { date: "Date" as const },
  ];
  for (const options of variants) {
    const d = new ValueDecoder(options);
    it(JSON.stringify(options), () => {
      for (const g of GENERATORS) {
        if (g.type === "jsonb" && options.json === "raw") continue; // raw text differs in spacing from what binary would hold
        fc.assert(
          fc.property(g.arb, (s) => {
            const t = d.text(g.oid, ...inside(utf8(s.text), 2));
            const b = d.binary(g.oid, ...inside(s.binary, 3));
            expect(b, `${g.type} ${JSON.stringify(s.text)}`).toStrictEqual(t);
          }),
          { numRuns: Math.ceil(RUNS / 3) },
        );
      }
    });
  }
});

describe("float8 text: the integer fast path agrees with Number()", () => {
  // Decimal forms of every length float8out and clients write, 15-17 significant
  // digits around the fast path's 2^53 bound: the parsed double is Number()'s, bit for bit.
  const plain = /^-?\d+(\.\d+)?$/;
  const forms = (x: number): string[] =>
    [String(x), x.toPrecision(15), x.toPrecision(16), x.toPrecision(17), x.toFixed(Math.min(20, Math.max(0, 16 - Math.ceil(Math.log10(Math.abs(x) + 1)))))]
      .filter((s) => plain.test(s));
  const doubles = fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.double({ min: -1e9, max: 1e9, noNaN: true }),
    // Digit strings near 2^53 = 9007199254740992, with a decimal point anywhere.
    fc.tuple(fc.bigInt({ min: 9007199254740000n, max: 9007199254742000n }), fc.integer({ min: 0, max: 16 }), fc.boolean()).map(([m, k, neg]) => {
      const d = m.toString();
      return Number(`${neg ? "-" : ""}${d.slice(0, d.length - k)}.${d.slice(d.length - k) || "0"}`);
    }),
  );
  it("for random doubles in plain decimal form", () => {
    fc.assert(
      fc.property(doubles, fc.integer({ min: 0, max: 7 }), (x, pad) => {
        for (const s of forms(x)) expect(Object.is(values.text(Oid.float8, ...inside(utf8(s), pad)), Number(s)), s).toBe(true);
      }),
      { numRuns: RUNS * 5 },
    );
  });
  it("at and around 2^53 as digit strings", () => {
    for (const s of ["9007199254740991", "9007199254740992", "9007199254740993", "9007199254740995", "900719925474099.3", "0.9007199254740993", "-9007199254740993"]) {
      expect(Object.is(values.text(Oid.float8, ...inside(utf8(s), 3)), Number(s)), s).toBe(true);
    }
  });
});
