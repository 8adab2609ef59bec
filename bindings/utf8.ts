/**
 * UTF-8 text from bytes. Short ASCII strings (names, keys, small values)
 * are built with `String.fromCharCode`: for them `TextDecoder.decode` costs
 * more in call overhead than the decoding itself. Anything longer or
 * non-ASCII goes to `TextDecoder`, which replaces invalid sequences with
 * U+FFFD as PostgreSQL's data never has them in a UTF-8 database.
 */

// ignoreBOM: a leading U+FEFF in a value is data, not a byte order mark to drop.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** Below this length an ASCII string is assembled in JS. */
const SHORT = 24;

export function readString(bytes: Uint8Array, offset: number, length: number): string {
  if (length <= SHORT) {
    let s = "";
    const end = offset + length;
    for (let i = offset; i < end; i++) {
      const c = bytes[i]!;
      if (c >= 0x80) return decoder.decode(bytes.subarray(offset, end));
      s += String.fromCharCode(c);
    }
    return s;
  }
  return decoder.decode(bytes.subarray(offset, offset + length));
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Standard base64 (with padding), without depending on Node's Buffer. */
export function toBase64(bytes: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += B64[n >> 18]! + B64[(n >> 12) & 63]! + B64[(n >> 6) & 63]! + B64[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += B64[n >> 18]! + B64[(n >> 12) & 63]! + "==";
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += B64[n >> 18]! + B64[(n >> 12) & 63]! + B64[(n >> 6) & 63]! + "=";
  }
  return out;
}
