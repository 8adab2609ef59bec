/**
 * Arrays, text and binary, of any element type, into nested JS arrays:
 * `{{1,2},{3,NULL}}` → `[[1, 2], [3, null]]`, `{}` → `[]`.
 *
 * PostgreSQL arrays are indexed from 1 by default but may start anywhere
 * (`'[0:1]={a,b}'`). A JS array always starts at 0, so when any dimension's
 * lower bound is not 1 the outermost array gets an own enumerable property
 * `lowerBounds` with one bound per dimension (`[ "a", "b", lowerBounds: [0] ]`);
 * with the default bounds there is no such property. (JSON.stringify drops it.)
 *
 * Text form (`array_out`): an optional `[lo:hi]…=` prefix when a bound is not
 * 1, braces per dimension, elements separated by the type's delimiter (`,`;
 * `;` for box), double-quoted when empty, `NULL`-like or containing special
 * characters, with `\` escaping `"` and `\`; unquoted `NULL` is SQL NULL.
 *
 * Binary form (`array_send`): Int32 ndim, Int32 has-nulls flag, UInt32
 * element type, then (Int32 size, Int32 lower bound) per dimension, then the
 * elements in row-major order, each Int32 length (-1: NULL) and its bytes.
 */
import { int32, invalid, uint32, type Parse } from "./bytes.ts";

/** An array value: nested arrays, and `lowerBounds` when any bound is not 1. */
export type PgArray = unknown[] & { lowerBounds?: number[] };

/** The lower bound of each dimension of a decoded array (1 for each unless `lowerBounds` says otherwise). */
export function lowerBounds(array: PgArray): number[] {
  if (array.lowerBounds) return array.lowerBounds.slice();
  const out: number[] = [];
  for (let a: unknown = array; Array.isArray(a) && a.length > 0; a = a[0]) out.push(1);
  return out;
}

function withBounds(array: unknown[], bounds: number[]): PgArray {
  for (const lb of bounds) {
    if (lb !== 1) {
      (array as PgArray).lowerBounds = bounds;
      break;
    }
  }
  return array;
}

// ---------------------------------------------------------------- text

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

/** A parser of the text form of arrays whose elements `element` parses. */
export function textArrayParser(element: Parse, delimiter = 0x2c): Parse {
  return (b, off, len) => new TextArrayReader(b, off, len, element, delimiter).read();
}

class TextArrayReader {
  p: number;
  readonly end: number;

  constructor(
    readonly b: Uint8Array,
    readonly off: number,
    readonly len: number,
    readonly element: Parse,
    readonly delimiter: number,
  ) {
    this.p = off;
    this.end = off + len;
  }

  fail(why: string): never {
    throw invalid("array", this.b, this.off, this.len, why);
  }

  read(): PgArray {
    const b = this.b;
    this.skipSpace();
    let bounds: number[] | undefined;
    if (this.p < this.end && b[this.p] === 0x5b) {
      bounds = [];
      while (this.p < this.end && b[this.p] === 0x5b) {
        this.p++;
        bounds.push(this.int());
        if (b[this.p] !== 0x3a) this.fail("bad dimension");
        this.p++;
        this.int();
        if (b[this.p] !== 0x5d) this.fail("bad dimension");
        this.p++;
      }
      if (b[this.p] !== 0x3d) this.fail("missing = after dimensions");
      this.p++;
      this.skipSpace();
    }
    if (this.p >= this.end || b[this.p] !== OPEN) this.fail("missing {");
    const out = this.level();
    this.skipSpace();
    if (this.p !== this.end) this.fail("text after the closing }");
    return bounds ? withBounds(out, bounds) : out;
  }

  int(): number {
    const b = this.b;
    let neg = false;
    if (b[this.p] === 0x2d || b[this.p] === 0x2b) {
      neg = b[this.p] === 0x2d;
      this.p++;
    }
    const start = this.p;
    let n = 0;
    while (this.p < this.end && b[this.p]! >= 0x30 && b[this.p]! <= 0x39) n = n * 10 + b[this.p++]! - 48;
    if (this.p === start) this.fail("bad dimension");
    return neg ? -n : n;
  }

  skipSpace(): void {
    while (this.p < this.end && isSpace(this.b[this.p]!)) this.p++;
  }

  /** At `{`: one dimension's elements (or sub-arrays) up to its `}`. */
  level(): unknown[] {
    const b = this.b;
    this.p++;
    const out: unknown[] = [];
    this.skipSpace();
    if (this.p < this.end && b[this.p] === CLOSE) {
      this.p++;
      return out;
    }
    for (;;) {
      this.skipSpace();
      if (this.p >= this.end) this.fail("missing }");
      out.push(b[this.p] === OPEN ? this.level() : this.item());
      this.skipSpace();
      const c = this.p < this.end ? b[this.p] : -1;
      this.p++;
      if (c === this.delimiter) continue;
      if (c === CLOSE) return out;
      this.fail("expected a delimiter or }");
    }
  }

  /** One element, quoted or not; `null` for an unquoted NULL. */
  item(): unknown {
    const b = this.b;
    const end = this.end;
    if (b[this.p] === QUOTE) {
      const start = ++this.p;
      let escapes = 0;
      for (;;) {
        if (this.p >= end) this.fail("unterminated quoted element");
        const c = b[this.p]!;
        if (c === QUOTE) break;
        if (c === BACKSLASH) {
          escapes++;
          this.p++;
        }
        this.p++;
      }
      const stop = this.p++;
      if (escapes === 0) return this.element(b, start, stop - start, -1);
      const u = unescape(b, start, stop, stop - start - escapes);
      return this.element(u, 0, u.length, -1);
    }
    const start = this.p;
    const delimiter = this.delimiter;
    let p = start;
    let escapes = 0;
    let last = start; // one past the last byte that is not trailing white space
    for (;;) {
      if (p >= end) this.fail("missing }");
      const c = b[p]!;
      if (c === delimiter || c === CLOSE) break;
      if (c === QUOTE || c === OPEN) this.fail("unexpected character in an unquoted element");
      if (c === BACKSLASH) {
        escapes++;
        p += 2;
        last = p;
        continue;
      }
      p++;
      if (c > 0x20 || !isSpace(c)) last = p;
    }
    this.p = p;
    const n = last - start;
    if (escapes === 0) {
      if (n === 4 && isNull(b, start)) return null;
      return this.element(b, start, n, -1);
    }
    const u = unescape(b, start, last, n - escapes);
    return this.element(u, 0, u.length, -1);
  }
}

function isNull(b: Uint8Array, p: number): boolean {
  return (b[p]! | 0x20) === 0x6e && (b[p + 1]! | 0x20) === 0x75 && (b[p + 2]! | 0x20) === 0x6c && (b[p + 3]! | 0x20) === 0x6c;
}

/** The bytes [start, stop) with each `\x` replaced by `x`. */
function unescape(b: Uint8Array, start: number, stop: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  let n = 0;
  for (let p = start; p < stop; p++) {
    const c = b[p]!;
    out[n++] = c === BACKSLASH ? b[++p]! : c;
  }
  return out;
}

// ---------------------------------------------------------------- binary

/**
 * A parser of the binary form of arrays. Elements are parsed by the parser of
 * the element type the value itself names: `element` when it is
 * `elementType`, else `resolve(oid)`.
 */
export function binaryArrayParser(elementType: number, element: Parse | undefined, resolve: (oid: number) => Parse): Parse {
  return (b, off, len) => {
    if (len < 12) throw invalid("array", b, off, len, "shorter than its header");
    const ndim = int32(b, off);
    if (ndim === 0) return [];
    if (ndim < 0 || ndim > 6 || len < 12 + 8 * ndim) throw invalid("array", b, off, len, "bad dimensions");
    const oid = uint32(b, off + 8);
    const parse = element !== undefined && oid === elementType ? element : resolve(oid);
    const end = off + len;
    let p = off + 12 + 8 * ndim;
    // Every element takes at least its 4-byte length: the declared sizes are checked against the
    // bytes present before anything is allocated, so a corrupt count cannot balloon memory.
    const room = (end - p) >>> 2;
    let count = 1;
    for (let i = 0; i < ndim; i++) {
      const n = int32(b, off + 12 + 8 * i);
      if (n < 0) throw invalid("array", b, off, len, "negative dimension");
      // Capped just past the room, so the product stays exact (< 2^53) and a 0 dimension still makes it 0.
      count = Math.min(count * n, room + 1);
    }
    if (count > room) throw invalid("array", b, off, len, `dimensions declare more elements than its ${len} bytes hold`);
    // As array_recv: no elements is the empty array, whatever the dimensions (which then bound nothing).
    if (count === 0) {
      if (p !== end) throw invalid("array", b, off, len, "bytes after the last element");
      return [];
    }
    // The elements, in row-major order, into one flat list; nested afterwards for N-D.
    const flat: unknown[] = new Array(count);
    for (let i = 0; i < count; i++) {
      if (p + 4 > end) throw invalid("array", b, off, len, "truncated");
      const size = int32(b, p);
      p += 4;
      if (size === -1) flat[i] = null;
      else {
        if (size < 0 || p + size > end) throw invalid("array", b, off, len, "bad element length");
        flat[i] = parse(b, p, size, -1);
        p += size;
      }
    }
    if (p !== end) throw invalid("array", b, off, len, "bytes after the last element");
    let out = flat;
    let bounds: number[] | undefined;
    if (ndim > 1) out = nest(flat, b, off, ndim, 0, 0);
    for (let i = 0; i < ndim; i++) {
      if (int32(b, off + 16 + 8 * i) !== 1) {
        bounds = [];
        for (let j = 0; j < ndim; j++) bounds.push(int32(b, off + 16 + 8 * j));
        (out as PgArray).lowerBounds = bounds;
        break;
      }
    }
    return out;
  };
}

/** Dimension `d` (sizes read from the header at `off`) of row-major `flat`, starting at element `start`. */
function nest(flat: unknown[], b: Uint8Array, off: number, ndim: number, d: number, start: number): unknown[] {
  const n = int32(b, off + 12 + 8 * d);
  const out: unknown[] = new Array(n);
  if (d === ndim - 1) {
    for (let i = 0; i < n; i++) out[i] = flat[start + i];
    return out;
  }
  let stride = 1;
  for (let k = d + 1; k < ndim; k++) stride *= int32(b, off + 12 + 8 * k);
  for (let i = 0; i < n; i++) out[i] = nest(flat, b, off, ndim, d + 1, start + i * stride);
  return out;
}
