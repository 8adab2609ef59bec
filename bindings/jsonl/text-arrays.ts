/**
 * One-dimensional text-format arrays of integers and strings → JSON arrays,
 * byte-wise: `{1,NULL,3}` → `[1,null,3]`, `{a,"b c","d\"e"}` →
 * `["a","b c","d\"e"]`. Only the plain shape PostgreSQL prints (no bounds
 * decoration, no nesting, no white space around elements) is taken; the rest
 * is declined (`false`) to the JS array parser (bindings/values/arrays.ts).
 */
import type { ByteSink } from "./sink.ts";

const OPEN = 0x7b;
const CLOSE = 0x7d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** How one element's bytes become JSON (or `false`: decline the array). */
export type ElementWriter = (out: ByteSink, u8: Uint8Array, p: number, n: number) => boolean;

let scratch = new Uint8Array(256);

export function writeTextArray(out: ByteSink, u8: Uint8Array, p: number, n: number, element: ElementWriter): boolean {
  const end = p + n;
  if (n < 2 || u8[p] !== OPEN || u8[end - 1] !== CLOSE) return false;
  const mark = out.len;
  const decline = (): boolean => {
    out.len = mark;
    return false;
  };
  out.byte(0x5b);
  let i = p + 1;
  const last = end - 1;
  if (i === last) {
    out.byte(0x5d);
    return true;
  }
  for (let first = true; ; first = false) {
    if (!first) out.byte(COMMA);
    if (u8[i] === QUOTE) {
      // Quoted: up to the next unescaped quote; \x stands for x.
      const start = ++i;
      let escapes = 0;
      while (i < last && u8[i] !== QUOTE) {
        if (u8[i] === BACKSLASH) {
          escapes++;
          i++;
        }
        i++;
      }
      if (i >= last) return decline();
      if (escapes === 0) {
        if (!element(out, u8, start, i - start)) return decline();
      } else {
        const len = i - start - escapes;
        if (scratch.length < len) scratch = new Uint8Array(len * 2);
        let o = 0;
        for (let k = start; k < i; k++) scratch[o++] = u8[u8[k] === BACKSLASH ? ++k : k]!;
        if (!element(out, scratch, 0, len)) return decline();
      }
      i++;
    } else {
      const start = i;
      while (i < last && u8[i] !== COMMA) {
        const c = u8[i]!;
        if (c === QUOTE || c === BACKSLASH || c === OPEN || c === CLOSE || c <= 0x20) return decline();
        i++;
      }
      const len = i - start;
      if (len === 0) return decline();
      if (len === 4 && isNull(u8, start)) out.str("null");
      else if (!element(out, u8, start, len)) return decline();
    }
    if (i === last) break;
    if (u8[i] !== COMMA) return decline();
    i++;
  }
  out.byte(0x5d);
  return true;
}

function isNull(b: Uint8Array, p: number): boolean {
  return (b[p]! | 0x20) === 0x6e && (b[p + 1]! | 0x20) === 0x75 && (b[p + 2]! | 0x20) === 0x6c && (b[p + 3]! | 0x20) === 0x6c;
}
