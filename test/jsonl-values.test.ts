/**
 * bindings/jsonl/text-values.ts against the JS path it stands in for: for
 * every value the byte writer accepts, its bytes must equal the UTF-8 of
 * `jsonText(values.text(oid, …))` with the change lines' value options —
 * the CLI's output must not change by which path wrote a value. Tricky
 * texts (escapes, controls, multi-byte, near-number shapes) and
 * fast-check's strings and doubles printed as PostgreSQL prints them.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValueDecoder } from "../bindings/values/index.ts";
import { changeValueOptions, jsonText } from "../bindings/jsonl/json-text.ts";
import { ByteSink } from "../bindings/jsonl/sink.ts";
import { writeTextValue } from "../bindings/jsonl/text-values.ts";
import { JSONL_OIDS, TRICKY_TEXTS } from "./support/jsonl-cases.ts";

const values = new ValueDecoder(changeValueOptions());
const utf8 = new TextEncoder();
const text = new TextDecoder();

/** The JS path's JSON of a text value; one that does not parse is printed as its text (as ChangeFormatter does). */
function viaJs(oid: number, bytes: Uint8Array, strings: boolean): string {
  try {
    return jsonText(values.text(oid, bytes, 0, bytes.length), strings);
  } catch {
    return jsonText(text.decode(bytes), strings);
  }
}

/** What the byte writer made (undefined when it declined), from an offset inside a larger buffer. */
function viaBytes(oid: number, bytes: Uint8Array, strings: boolean): string | undefined {
  const buf = new Uint8Array(bytes.length + 6).fill(0x22);
  buf.set(bytes, 3);
  const out = new ByteSink();
  out.str("x");
  if (!writeTextValue(out, oid, buf, 3, bytes.length, strings)) {
    expect(out.len, "a declined value writes nothing").toBe(1);
    return undefined;
  }
  return text.decode(out.buf.subarray(1, out.len));
}

function same(oid: number, input: string | Uint8Array): void {
  const bytes = typeof input === "string" ? utf8.encode(input) : input;
  for (const strings of [false, true]) {
    const fast = viaBytes(oid, bytes, strings);
    if (fast !== undefined) expect(fast, `${oid} ${JSON.stringify(input)}`).toBe(viaJs(oid, bytes, strings));
  }
}

const TRICKY = TRICKY_TEXTS;
const OIDS = JSONL_OIDS;

describe("JSON bytes of text values = the JS path's JSON", () => {
  it("tricky texts, every fast type", () => {
    for (const oid of OIDS) for (const t of TRICKY) same(oid, t);
  });

  it("invalid UTF-8 is declined, not copied", () => {
    for (const oid of [25, 114, 1009]) {
      for (const bad of [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf5, 0x80, 0x80, 0x80]]) {
        const bytes = new Uint8Array([0x7b, 0x61, ...bad, 0x7d]);
        expect(viaBytes(oid, bytes, false)).toBeUndefined();
      }
    }
  });

  it("any string, as text and in a text[]", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (s) => {
      same(25, s);
      same(1009, `{"${s.replace(/["\\]/g, "\\$&")}"}`);
    }), { numRuns: 500 });
  });

  it("doubles printed as PostgreSQL prints them (shortest round trip)", () => {
    fc.assert(fc.property(fc.double({ noNaN: true }), (d) => {
      same(701, String(d).replace(/e([+-])(\d)$/, "e$10$2"));
      same(701, d.toFixed(3));
    }), { numRuns: 500 });
  });
});
