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
