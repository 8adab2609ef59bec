/**
 * One-dimensional arrays straight from their bytes, exactly as pg-types'
 * postgres-array parser builds them: `{a,"b c",NULL}` → `["a", "b c", null]`,
 * an unquoted `NULL` being null and a quoted one the string, each other
 * element passed through the element parser. Anything else — a dimension
 * prefix (`[0:1]={…}`), a nested array, an empty unquoted element — returns
 * `NOT_FAST` and goes to pg-types itself.
 */
import { readString } from "../utf8.ts";
import { NOT_FAST, fastInt, type FastParser } from "./fast-parsers.ts";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

/** An element parser: from the element's bytes (unquoted) or its unescaped text (quoted). */
interface Element {
  bytes(u8: Uint8Array, off: number, len: number): unknown;
  text(s: string): unknown;
}

/** A quoted element's text from `start` (after the opening quote) to its closing quote, and where that quote is. */
function quoted(u8: Uint8Array, start: number, end: number): { s: string; close: number } | undefined {
  let s = "";
  let from = start;
  for (let i = start; i < end; i++) {
    const c = u8[i];
    if (c === QUOTE) return { s: s + readString(u8, from, i - from), close: i };
    if (c === BACKSLASH) {
      // postgres-array drops the backslash and keeps the next character (PostgreSQL escapes only `"` and `\`).
      s += readString(u8, from, i - from);
      from = i + 1;
      i++;
    }
  }
  return undefined;
}

function arrayOf(element: Element): FastParser {
  return (u8, off, len) => {
    const end = off + len - 1; // the closing brace
    if (len < 2 || u8[off] !== OPEN || u8[end] !== CLOSE) return NOT_FAST;
    const out: unknown[] = [];
    if (len === 2) return out;
    let i = off + 1;
    for (;;) {
      let value: unknown;
      if (u8[i] === QUOTE) {
        const q = quoted(u8, i + 1, end);
        if (q === undefined) return NOT_FAST;
        value = element.text(q.s);
        i = q.close + 1;
      } else {
        const start = i;
        while (i < end) {
          const c = u8[i];
          if (c === COMMA) break;
          if (c === QUOTE || c === BACKSLASH || c === OPEN || c === CLOSE) return NOT_FAST;
          i++;
        }
        const n = i - start;
        if (n === 0) return NOT_FAST;
        value =
          n === 4 && u8[start] === 0x4e && u8[start + 1] === 0x55 && u8[start + 2] === 0x4c && u8[start + 3] === 0x4c
            ? null
            : element.bytes(u8, start, n);
        if (value === NOT_FAST) return NOT_FAST;
      }
      out.push(value);
      if (i === end) return out;
      if (u8[i] !== COMMA) return NOT_FAST;
      i++;
    }
  };
}

const asString: Element = { bytes: readString, text: (s) => s };

/** int2[] / int4[] / oid[]: parseInt per element (pg-types' parseIntegerArray). */
const asInt: Element = { bytes: fastInt, text: (s) => parseInt(s, 10) };

/** int8[]: pg-types' parseBigIntegerArray keeps each element's text, trimmed. */
const asInt8: Element = { bytes: (u8, off, len) => readString(u8, off, len).trim(), text: (s) => s.trim() };

export const fastStringArray = arrayOf(asString);
export const fastIntArray = arrayOf(asInt);
export const fastInt8Array = arrayOf(asInt8);
