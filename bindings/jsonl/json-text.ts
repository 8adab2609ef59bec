/**
 * The JSON text of the change lines' values: exact numbers (bigint, and
 * numeric as `RawJson`), json/jsonb embedded as they are, bytes as `\x…`
 * hex text; and the decoder's `values` option that makes those values
 * (`changeValueOptions()`). Every output format that writes JSON uses these
 * rules, so a value is the same text in each.
 */
import type { TypeKnowledge, ValueOptions } from "../values/options.ts";

/** JSON text to embed as it is: an exact number, or a json/jsonb value. */
export class RawJson {
  constructor(
    readonly json: string,
    /** `number`: quoted instead when numbers are printed as strings. */
    readonly kind: "number" | "json",
  ) {}
}

const NUMERIC_TEXT = /^-?\d+(?:\.\d+)?$/;

/**
 * The decoder's `values` option for the change lines: int8 as bigint,
 * numeric and json/jsonb as `RawJson` (exact), money as its text,
 * timestamps as ISO 8601 strings; `types` from the server's catalog (enums, domains).
 */
export function changeValueOptions(types?: Record<number, TypeKnowledge>): ValueOptions {
  return {
    int8: "bigint",
    numeric: (text) => (NUMERIC_TEXT.test(text) ? new RawJson(text, "number") : text),
    money: "string",
    // PostgreSQL's json text is valid JSON; line breaks can only be whitespace between tokens.
    json: (text) => new RawJson(text.replace(/[\r\n]+/g, " "), "json"),
    timestamp: "iso",
    ...(types === undefined ? {} : { types }),
  };
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function hex(bytes: Uint8Array): string {
  let s = "\\x";
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]!];
  return s;
}

/** Compact JSON of a value: bigint and RawJson numbers exact, bytes as `\x…` hex text. */
export function jsonText(value: unknown, numbersAsStrings = false, space = ""): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : value > 0 ? '"Infinity"' : value < 0 ? '"-Infinity"' : '"NaN"';
    case "bigint":
      return numbersAsStrings ? `"${value}"` : value.toString();
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (value instanceof RawJson) return numbersAsStrings && value.kind === "number" ? `"${value.json}"` : value.json;
      if (value instanceof Uint8Array) return JSON.stringify(hex(value));
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? "null" : JSON.stringify(value.toISOString());
      if (Array.isArray(value)) {
        let s = "[";
        for (let i = 0; i < value.length; i++) s += (i > 0 ? `,${space}` : "") + jsonText(value[i], numbersAsStrings, space);
        return s + "]";
      }
      let s = "{";
      let first = true;
      for (const [k, v] of Object.entries(value)) {
        if (v === undefined) continue;
        s += `${first ? "" : `,${space}`}${JSON.stringify(k)}:${space}${jsonText(v, numbersAsStrings, space)}`;
        first = false;
      }
      return s + "}";
    }
    default:
      return "null"; // undefined, symbol, function
  }
}

/**
 * A line object as text. `pretty`: one field per line, and arrays of objects
 * (columns, identity) one element per line.
 */
export function lineText(obj: Record<string, unknown>, pretty: boolean, numbersAsStrings: boolean): string {
  if (!pretty) return jsonText(obj, numbersAsStrings);
  const parts: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined) continue;
    let text: string;
    if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "object" && x !== null && !Array.isArray(x) && !(x instanceof RawJson))) {
      text = `[\n${v.map((x) => `    ${jsonText(x, numbersAsStrings, " ")}`).join(",\n")}\n  ]`;
    } else {
      text = jsonText(v, numbersAsStrings, " ");
    }
    parts.push(`  ${JSON.stringify(k)}: ${text}`);
  }
  return `{\n${parts.join(",\n")}\n}`;
}
