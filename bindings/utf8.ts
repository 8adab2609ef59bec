/**
 * UTF-8 text from bytes. Very short ASCII strings (flags, small numbers,
 * short names) are built with `String.fromCharCode`: below about 8 bytes that
 * beats any native call. Longer or non-ASCII text goes to Node's (and Bun's)
 * `Buffer.prototype.utf8Slice` where it exists — about half the cost of
 * `TextDecoder.decode` for the short and medium strings column values mostly
 * are, as it takes the range directly (no subarray) and skips the decoder's
 * options handling — and to `TextDecoder` elsewhere (Deno, browsers). Both
 * replace invalid sequences with U+FFFD the same way (checked at load time;
 * PostgreSQL's data never has them in a UTF-8 database) and both keep a
 * leading U+FEFF.
 */

// ignoreBOM: a leading U+FEFF in a value is data, not a byte order mark to drop.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

type Slice = (this: Uint8Array, start: number, end: number) => string;

/** Node's native UTF-8 slice, if it gives TextDecoder's exact results on a plain Uint8Array. */
const utf8Slice: Slice | undefined = (() => {
  const f = (globalThis as { Buffer?: { prototype?: { utf8Slice?: unknown } } }).Buffer?.prototype?.utf8Slice;
  if (typeof f !== "function") return undefined;
  try {
    // ASCII, 2/3/4-byte sequences, a BOM, a lone continuation, a truncated sequence, a surrogate, an overlong form.
    const probe = new Uint8Array([
      0xef, 0xbb, 0xbf, 0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0x80, 0xe2, 0x82, 0x41, 0xed, 0xa0, 0x80, 0xc0, 0xaf, 0xff,
    ]);
    const s = (f as Slice).call(probe, 1, probe.length);
    return s === decoder.decode(probe.subarray(1)) && (f as Slice).call(probe, 0, 3) === "\ufeff" ? (f as Slice) : undefined;
  } catch {
    return undefined;
  }
})();

/** Up to this length an ASCII string is assembled in JS. */
const SHORT = utf8Slice !== undefined ? 8 : 12;

export function readString(bytes: Uint8Array, offset: number, length: number): string {
  const end = offset + length;
  if (length <= SHORT) {
    let s = "";
    for (let i = offset; i < end; i++) {
      const c = bytes[i]!;
      if (c >= 0x80) return decodeRange(bytes, offset, end);
      s += String.fromCharCode(c);
    }
    return s;
  }
  return decodeRange(bytes, offset, end);
}

function decodeRange(bytes: Uint8Array, offset: number, end: number): string {
  return utf8Slice !== undefined ? utf8Slice.call(bytes, offset, end) : decoder.decode(bytes.subarray(offset, end));
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
