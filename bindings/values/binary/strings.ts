/**
 * Binary forms that give the same string as the text form: the text types
 * (their binary form is the text), "char" (one raw byte), uuid (16 bytes),
 * jsonb (version byte 1, then the text), bytea (the bytes).
 */
import { readString } from "../../utf8.ts";
import { HEX, invalid } from "../bytes.ts";
import { copyBytes } from "../../copy-bytes.ts";

/** text, varchar, bpchar, name, unknown, xml, json, enum labels: the UTF-8 text. */
export function binaryString(b: Uint8Array, off: number, len: number): string {
  return readString(b, off, len);
}

/**
 * "char": one byte, printed by PostgreSQL 15+ as itself when ASCII, as `\ooo`
 * octal when ≥ 0x80, and as an empty string when 0.
 */
export function binaryChar(b: Uint8Array, off: number, len: number): string {
  if (len === 0) return "";
  if (len !== 1) throw invalid("char", b, off, len);
  return charText(b[off]!);
}

export function charText(c: number): string {
  if (c === 0) return "";
  if (c < 0x80) return String.fromCharCode(c);
  return `\\${(c >> 6).toString()}${((c >> 3) & 7).toString()}${(c & 7).toString()}`;
}

/** uuid: `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower case as PostgreSQL prints it. */
export function binaryUuid(b: Uint8Array, off: number, len: number): string {
  if (len !== 16) throw invalid("uuid", b, off, len);
  const h = HEX;
  const p = off;
  return (
    h[b[p]!]! + h[b[p + 1]!]! + h[b[p + 2]!]! + h[b[p + 3]!]! + "-" +
    h[b[p + 4]!]! + h[b[p + 5]!]! + "-" +
    h[b[p + 6]!]! + h[b[p + 7]!]! + "-" +
    h[b[p + 8]!]! + h[b[p + 9]!]! + "-" +
    h[b[p + 10]!]! + h[b[p + 11]!]! + h[b[p + 12]!]! + h[b[p + 13]!]! + h[b[p + 14]!]! + h[b[p + 15]!]!
  );
}

/** jsonb: version byte 1, then the text `jsonb_out` prints. */
export function binaryJsonbText(b: Uint8Array, off: number, len: number): string {
  if (len < 1 || b[off] !== 1) throw invalid("jsonb", b, off, len, "unsupported jsonb binary version");
  return readString(b, off + 1, len - 1);
}

/** bytea, and the fallback for a binary value with no parser: a copy of the bytes (the value outlives the input). */
export function binaryBytes(b: Uint8Array, off: number, len: number): Uint8Array {
  return copyBytes(b, off, off + len);
}
