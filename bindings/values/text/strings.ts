/**
 * Text forms that stay strings (text, varchar, bpchar, name, "char", uuid,
 * xml, and the fallback for unknown types), bytea, and json/jsonb.
 */
import { readString } from "../../utf8.ts";
import { HEX_VALUE, invalid, invalidText } from "../bytes.ts";
import { copyBytes } from "../../copy-bytes.ts";

/** UTF-8 text as a string. */
export function textString(b: Uint8Array, off: number, len: number): string {
  return readString(b, off, len);
}

/** bytea: hex format `\x0aff…` or escape format (`\\`, `\ooo`, other bytes as is). */
export function textBytea(b: Uint8Array, off: number, len: number): Uint8Array {
  if (len >= 2 && b[off] === 0x5c && b[off + 1] === 0x78) {
    const n = len - 2;
    if ((n & 1) !== 0) throw invalid("bytea", b, off, len, "odd number of hex digits");
    const out = new Uint8Array(n >> 1);
    for (let i = 0, p = off + 2; i < out.length; i++, p += 2) {
      const hi = HEX_VALUE[b[p]!]!;
      const lo = HEX_VALUE[b[p + 1]!]!;
      if ((hi | lo) < 0) throw invalid("bytea", b, off, len, "bad hex digit");
      out[i] = (hi << 4) | lo;
    }
    return out;
  }
  return escapedBytea(b, off, len);
}

function escapedBytea(b: Uint8Array, off: number, len: number): Uint8Array {
  const out = new Uint8Array(len);
  let n = 0;
  const end = off + len;
  for (let p = off; p < end; ) {
    const c = b[p]!;
    if (c !== 0x5c) {
      out[n++] = c;
      p++;
    } else if (p + 1 < end && b[p + 1] === 0x5c) {
      out[n++] = 0x5c;
      p += 2;
    } else if (p + 3 < end && isOctal(b[p + 1]!) && isOctal(b[p + 2]!) && isOctal(b[p + 3]!) && b[p + 1]! <= 0x33) {
      out[n++] = ((b[p + 1]! - 48) << 6) | ((b[p + 2]! - 48) << 3) | (b[p + 3]! - 48);
      p += 4;
    } else throw invalid("bytea", b, off, len, "bad escape");
  }
  // A copy rather than a view: the value should not keep the longer scratch alive.
  return n === len ? out : copyBytes(out, 0, n);
}

function isOctal(c: number): boolean {
  return c >= 0x30 && c <= 0x37;
}

/** json: the text through `JSON.parse`. */
export function textJson(b: Uint8Array, off: number, len: number): unknown {
  return parseJson(readString(b, off, len), "json");
}

/** jsonb: the text through `JSON.parse`. */
export function textJsonb(b: Uint8Array, off: number, len: number): unknown {
  return parseJson(readString(b, off, len), "jsonb");
}

/** `JSON.parse`, its SyntaxError as the type's INVALID_VALUE (PostgreSQL never sends invalid JSON; a corrupt stream may). */
export function parseJson(text: string, typeName: "json" | "jsonb"): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw invalidText(typeName, text, (e as Error).message, e);
  }
}
