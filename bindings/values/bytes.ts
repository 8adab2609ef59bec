/**
 * Big-endian reads from a byte range, without a DataView per value: integers
 * are assembled from bytes; floats go through an 8-byte scratch buffer whose
 * Float32/Float64 views read them in the host's byte order.
 */
import { PgoutputError } from "../errors.ts";

/** A parser of one column value: bytes[offset, offset+length). */
export type Parse = (bytes: Uint8Array, offset: number, length: number, typeModifier: number) => unknown;

export function int16(b: Uint8Array, p: number): number {
  return ((b[p]! << 24) | (b[p + 1]! << 16)) >> 16;
}

export function uint16(b: Uint8Array, p: number): number {
  return (b[p]! << 8) | b[p + 1]!;
}

export function int32(b: Uint8Array, p: number): number {
  return (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;
}

export function uint32(b: Uint8Array, p: number): number {
  return int32(b, p) >>> 0;
}

const TWO32 = 4294967296;

/** A signed 64-bit integer as a bigint; a number path when it fits 2^53. */
export function int64(b: Uint8Array, p: number): bigint {
  const hi = int32(b, p);
  const lo = uint32(b, p + 4);
  // |hi| < 2^21 ⇒ |hi·2^32 + lo| < 2^53: exact as a double.
  if (hi >= -0x200000 && hi < 0x200000) return BigInt(hi * TWO32 + lo);
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/** An unsigned 64-bit integer as a bigint. */
export function uint64(b: Uint8Array, p: number): bigint {
  const hi = uint32(b, p);
  const lo = uint32(b, p + 4);
  if (hi < 0x200000) return BigInt(hi * TWO32 + lo);
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/** A signed 64-bit integer as a number when exact (|v| < 2^53), else `undefined`. */
export function int64Number(b: Uint8Array, p: number): number | undefined {
  const hi = int32(b, p);
  if (hi >= -0x200000 && hi < 0x200000) return hi * TWO32 + uint32(b, p + 4);
  return undefined;
}

const scratch = new ArrayBuffer(8);
const scratchBytes = new Uint8Array(scratch);
const scratchF32 = new Float32Array(scratch, 0, 1);
const scratchF64 = new Float64Array(scratch, 0, 1);
const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function float32(b: Uint8Array, p: number): number {
  const s = scratchBytes;
  if (littleEndian) {
    s[0] = b[p + 3]!; s[1] = b[p + 2]!; s[2] = b[p + 1]!; s[3] = b[p]!;
  } else {
    s[0] = b[p]!; s[1] = b[p + 1]!; s[2] = b[p + 2]!; s[3] = b[p + 3]!;
  }
  return scratchF32[0]!;
}

export function float64(b: Uint8Array, p: number): number {
  const s = scratchBytes;
  if (littleEndian) {
    for (let i = 0; i < 8; i++) s[i] = b[p + 7 - i]!;
  } else {
    for (let i = 0; i < 8; i++) s[i] = b[p + i]!;
  }
  return scratchF64[0]!;
}

/** Two lower-case hex digits for every byte value. */
export const HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** ASCII hex digit → value, or -1. */
export const HEX_VALUE: Int8Array = (() => {
  const t = new Int8Array(256).fill(-1);
  for (let i = 0; i < 10; i++) t[48 + i] = i;
  for (let i = 0; i < 6; i++) {
    t[65 + i] = 10 + i;
    t[97 + i] = 10 + i;
  }
  return t;
})();

type Slice = (this: Uint8Array, start: number, end: number) => string;

/** Node's (and Bun's) native Latin-1 slice of a Uint8Array range, where it exists. */
const latin1Slice: Slice | undefined = (() => {
  const f = (globalThis as { Buffer?: { prototype?: { latin1Slice?: unknown } } }).Buffer?.prototype?.latin1Slice;
  if (typeof f !== "function") return undefined;
  try {
    return (f as Slice).call(new Uint8Array([0x2d, 0x31, 0x2e, 0x35]), 1, 4) === "1.5" ? (f as Slice) : undefined;
  } catch {
    return undefined;
  }
})();

/**
 * An ASCII string from bytes (callers know the range is ASCII: digits, signs,
 * hex). Up to 8 bytes it is assembled in JS; longer ranges take the native
 * Latin-1 slice where there is one (a flat string, at a fraction of the
 * per-character cost).
 */
export function ascii(b: Uint8Array, offset: number, length: number): string {
  if (length > 8 && latin1Slice !== undefined) return latin1Slice.call(b, offset, offset + length);
  if (length > 64) return String.fromCharCode.apply(null, b.subarray(offset, offset + length) as unknown as number[]);
  let s = "";
  for (let i = offset, end = offset + length; i < end; i++) s += String.fromCharCode(b[i]!);
  return s;
}

/** The error for a value that does not have its type's format. */
export function invalid(typeName: string, b: Uint8Array, offset: number, length: number, why?: string): PgoutputError {
  const shown = length > 40 ? `${preview(b, offset, 40)}…` : preview(b, offset, length);
  return new PgoutputError(`invalid ${typeName} value ${shown}${why ? `: ${why}` : ""}`, {
    code: "INVALID_VALUE",
    field: `value(${typeName})`,
  });
}

/** The error for a value given as text; `cause`: what rejected it (JSON.parse's SyntaxError). */
export function invalidText(typeName: string, text: string, why?: string, cause?: unknown): PgoutputError {
  const shown = JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
  return new PgoutputError(`invalid ${typeName} value ${shown}${why ? `: ${why}` : ""}`, {
    code: "INVALID_VALUE",
    field: `value(${typeName})`,
    cause,
  });
}

function preview(b: Uint8Array, offset: number, length: number): string {
  let printable = true;
  for (let i = offset; i < offset + length; i++) {
    const c = b[i]!;
    if (c < 0x20 || c > 0x7e) printable = false;
  }
  if (printable) return JSON.stringify(ascii(b, offset, length));
  let hex = "";
  for (let i = offset; i < offset + length; i++) hex += HEX[b[i]!];
  return `0x${hex}`;
}

/** Throws unless a binary value has exactly `expected` bytes. */
export function expectLength(typeName: string, b: Uint8Array, offset: number, length: number, expected: number): void {
  if (length !== expected) throw invalid(typeName, b, offset, length, `binary form has ${length} bytes, expected ${expected}`);
}
