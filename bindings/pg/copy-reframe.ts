/**
 * COPY output re-framed as pgoutput Insert messages, so that snapshot rows
 * go through the same kernel, tuple views and value parsers as streamed
 * changes.
 *
 * COPY binary (`COPY ... TO STDOUT (FORMAT binary)`, PostgreSQL docs "COPY,
 * Binary Format"):
 *   header   11-byte signature `PGCOPY\n\377\r\n\0`, Int32 flags (bit 16:
 *            OIDs included, which this reader rejects), Int32 header
 *            extension length, that many bytes
 *   tuple    Int16 field count, then per field Int32 length (-1: NULL) and
 *            that many bytes in the type's binary (send) format
 *   trailer  Int16 -1
 * COPY text: one line per row ending in `\n`, fields separated by `\t`,
 * `\N` for NULL, backslash escapes for `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
 * `\v` (COPY TO writes no others; octal and `\x` escapes are read too).
 *
 * Each tuple becomes `[Uint32 length]['I'][Int32 relation OID]['N']
 * [TupleData]`, the capture framing `decodeFramed` reads: a binary field is
 * a `b` column (pgoutput's binary mode sends the same send-format bytes), a
 * text field a `t` column, NULL an `n` column. The reader keeps a tuple
 * split across CopyData messages until its end arrives; every length is
 * checked before it is used, and bad input is a `PgoutputError` naming the
 * field and the byte offset in the COPY stream.
 */
import { PgoutputError, type PgoutputErrorCode } from "../errors.ts";
import { copyBytes } from "../copy-bytes.ts";
import { ByteSink } from "../jsonl/sink.ts";

const SIGNATURE = [0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00];
const HEADER_FIXED = 19;
const OIDS_FLAG = 1 << 16;
/** 'I' + relation OID + 'N' + column count. */
const INSERT_HEAD = 8;

export type CopyFormat = "binary" | "text";

function fail(code: PgoutputErrorCode, message: string, field: string, offset: number, incomplete = false): PgoutputError {
  return new PgoutputError(message, { code, field, offset, incomplete });
}

/** The growable buffer of framed messages (jsonl's ByteSink, with a DataView that follows it), handed out as owned copies. */
class Output extends ByteSink {
  view = new DataView(this.buf.buffer);

  override ensure(n: number): void {
    const before = this.buf;
    super.ensure(n);
    if (this.buf !== before) this.view = new DataView(this.buf.buffer);
  }

  /** Everything written so far, as a new buffer; the output is empty after it. */
  override take(): Uint8Array {
    const out = copyBytes(this.buf, 0, this.len);
    this.len = 0;
    return out;
  }
}

/**
 * Reads one COPY TO STDOUT stream of one relation and writes its tuples as
 * framed Insert messages. `push` each CopyData payload, `take` the frames,
 * `end` after CommandComplete.
 */
export class CopyReframer {
  readonly format: CopyFormat;
  /** Tuples read. */
  rows = 0;
  /** COPY bytes read. */
  bytes = 0;

  readonly #relationId: number;
  readonly #columns: number;
  readonly #maxTuple: number;
  readonly #out = new Output();
  /** Unconsumed bytes of an unfinished tuple (or header), copied. */
  #carry: Uint8Array = new Uint8Array(0);
  /** COPY stream offset of #carry[0]. */
  #carryAt = 0;
  #headerDone = false;
  #trailerSeen = false;

  constructor(options: { relationId: number; columns: number; format: CopyFormat; maxTupleBytes?: number }) {
    this.format = options.format;
    this.#relationId = options.relationId;
    this.#columns = options.columns;
    this.#maxTuple = options.maxTupleBytes ?? 1 << 30;
    if (options.format === "text") this.#headerDone = true;
  }

  /** Bytes of framed messages waiting for `take`. */
  get pending(): number {
    return this.#out.len;
  }

  /** Reads a CopyData payload (any split); throws a `PgoutputError` for bad bytes. */
  push(chunk: Uint8Array): void {
    let buf: Uint8Array;
    if (this.#carry.length === 0) buf = chunk;
    else {
      buf = new Uint8Array(this.#carry.length + chunk.length);
      buf.set(this.#carry);
      buf.set(chunk, this.#carry.length);
    }
    const base = this.#carryAt;
    const used = this.format === "binary" ? this.#binary(buf, base) : this.#text(buf, base);
    this.bytes += chunk.length;
    // A copy: `chunk` may be a view of pg's parser buffer, reused on the next read.
    this.#carry = used === buf.length ? new Uint8Array(0) : copyBytes(buf, used, buf.length);
    this.#carryAt = base + used;
  }

  /** The framed Insert messages written so far (a new buffer). */
  take(): Uint8Array {
    return this.#out.take();
  }

  /** Throws when the stream stopped inside a tuple, or a binary stream without its trailer. */
  end(): void {
    if (this.#carry.length > 0) {
      throw fail("INCOMPLETE", `COPY ${this.format} data ends inside a ${this.#headerDone ? "tuple" : "header"}`, "copy.tuple", this.#carryAt + this.#carry.length, true);
    }
    if (this.format === "binary" && !this.#trailerSeen) {
      throw fail("INCOMPLETE", "COPY binary data ends without its trailer", this.#headerDone ? "copy.trailer" : "copy.header", this.#carryAt, true);
    }
  }

  /** Returns the bytes of `buf` consumed (whole header / tuples). */
  #binary(buf: Uint8Array, base: number): number {
    const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const n = buf.length;
    let p = 0;
    if (!this.#headerDone) {
      for (let i = 0; i < SIGNATURE.length && i < n; i++) {
        if (buf[i] !== SIGNATURE[i]) throw fail("INVALID_VALUE", "not a COPY binary signature", "copy.header.signature", base + i);
      }
      if (n < HEADER_FIXED) return 0;
      const flags = dv.getInt32(11);
      if ((flags & OIDS_FLAG) !== 0) throw fail("INVALID_VALUE", "COPY binary with OIDs is not supported", "copy.header.flags", base + 11);
      const ext = dv.getInt32(15);
      if (ext < 0 || ext > this.#maxTuple) throw fail("INVALID_LENGTH", `header extension length ${ext}`, "copy.header.extensionLength", base + 15);
      if (n < HEADER_FIXED + ext) return 0;
      p = HEADER_FIXED + ext;
      this.#headerDone = true;
    }
    const out = this.#out;
    while (p < n) {
      const at = base + p;
      if (this.#trailerSeen) throw fail("TRAILING_BYTES", "bytes after the COPY binary trailer", "copy.trailer", at);
      if (n - p < 2) return p;
      const count = dv.getInt16(p);
      if (count === -1) {
        this.#trailerSeen = true;
        p += 2;
        continue;
      }
      const field = `copy.tuple[${this.rows}]`;
      if (count !== this.#columns) {
        throw new PgoutputError(`COPY tuple has ${count} fields, the relation ${this.#columns}`, { code: "COLUMN_COUNT_MISMATCH", field: `${field}.fieldCount`, offset: at });
      }
      // Measure the whole tuple first: nothing is written for a tuple that is not all here.
      let q = p + 2;
      let size = INSERT_HEAD;
      for (let c = 0; c < count; c++) {
        if (n - q < 4) return p;
        const len = dv.getInt32(q);
        if (len < -1) throw fail("INVALID_LENGTH", `field length ${len}`, `${field}.field[${c}].length`, base + q);
        q += 4;
        if (len > 0) {
          if (len > this.#maxTuple - size) throw fail("MESSAGE_TOO_LARGE", `tuple larger than ${this.#maxTuple} bytes`, `${field}.field[${c}].length`, base + q - 4);
          if (n - q < len) return p;
          q += len;
        }
        size += len === -1 ? 1 : 5 + Math.max(len, 0);
      }
      out.ensure(4 + size);
      const o = out.buf;
      const ov = out.view;
      let w = out.len;
      ov.setUint32(w, size);
      o[w + 4] = 0x49; // 'I'
      ov.setInt32(w + 5, this.#relationId);
      o[w + 9] = 0x4e; // 'N'
      ov.setInt16(w + 10, count);
      w += 12;
      let r = p + 2;
      for (let c = 0; c < count; c++) {
        const len = dv.getInt32(r);
        r += 4;
        if (len === -1) {
          o[w++] = 0x6e; // 'n'
          continue;
        }
        o[w] = 0x62; // 'b'
        ov.setInt32(w + 1, len);
        o.set(buf.subarray(r, r + len), w + 5);
        w += 5 + len;
        r += len;
      }
      out.len = w;
      this.rows++;
      p = q;
    }
    return p;
  }

  #text(buf: Uint8Array, base: number): number {
    const n = buf.length;
    let p = 0;
    const out = this.#out;
    while (p < n) {
      const eol = buf.indexOf(0x0a, p);
      if (eol < 0) {
        if (n - p > this.#maxTuple) throw fail("MESSAGE_TOO_LARGE", `row larger than ${this.#maxTuple} bytes`, `copy.tuple[${this.rows}]`, base + p);
        return p;
      }
      // At most the line's bytes plus 5 per field (fields <= tabs + 1).
      out.ensure(4 + INSERT_HEAD + (eol - p) + 5 * (eol - p + 1));
      const o = out.buf;
      const ov = out.view;
      const start = out.len;
      o[start + 4] = 0x49;
      ov.setInt32(start + 5, this.#relationId);
      o[start + 9] = 0x4e;
      let w = start + 12;
      let count = 0;
      let f = p;
      for (;;) {
        if (count === this.#columns) {
          throw new PgoutputError(`COPY row has more than ${this.#columns} fields`, { code: "COLUMN_COUNT_MISMATCH", field: `copy.tuple[${this.rows}].fieldCount`, offset: base + f });
        }
        let end = f;
        while (end < eol && buf[end] !== 0x09) end++;
        if (end - f === 2 && buf[f] === 0x5c && buf[f + 1] === 0x4e) {
          o[w++] = 0x6e; // \N: NULL
        } else {
          o[w] = 0x74; // 't'
          const len = unescape(buf, f, end, o, w + 5, base, `copy.tuple[${this.rows}].field[${count}]`);
          ov.setInt32(w + 1, len);
          w += 5 + len;
        }
        count++;
        if (end === eol) break;
        f = end + 1;
      }
      if (count !== this.#columns) {
        throw new PgoutputError(`COPY row has ${count} fields, the relation ${this.#columns}`, { code: "COLUMN_COUNT_MISMATCH", field: `copy.tuple[${this.rows}].fieldCount`, offset: base + p });
      }
      ov.setInt16(start + 10, count);
      ov.setUint32(start, w - start - 4);
      out.len = w;
      this.rows++;
      p = eol + 1;
    }
    return p;
  }
}

const ESCAPES: Record<number, number> = { 0x62: 8, 0x66: 12, 0x6e: 10, 0x72: 13, 0x74: 9, 0x76: 11 };

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/** COPY text de-escaping of `src[from, to)` into `dst` at `at`; returns the bytes written. */
function unescape(src: Uint8Array, from: number, to: number, dst: Uint8Array, at: number, base: number, field: string): number {
  let w = at;
  let i = from;
  while (i < to) {
    const c = src[i]!;
    if (c !== 0x5c) {
      dst[w++] = c;
      i++;
      continue;
    }
    if (i + 1 >= to) throw fail("INVALID_VALUE", "backslash at the end of a COPY text field", field, base + i);
    const e = src[i + 1]!;
    i += 2;
    const simple = ESCAPES[e];
    if (simple !== undefined) dst[w++] = simple;
    else if (e >= 0x30 && e <= 0x37) {
      let v = e - 0x30;
      for (let k = 0; k < 2 && i < to && src[i]! >= 0x30 && src[i]! <= 0x37; k++) v = v * 8 + (src[i++]! - 0x30);
      dst[w++] = v & 0xff;
    } else if (e === 0x78 && i < to && hexDigit(src[i]!) >= 0) {
      let v = hexDigit(src[i++]!);
      if (i < to && hexDigit(src[i]!) >= 0) v = v * 16 + hexDigit(src[i++]!);
      dst[w++] = v;
    } else dst[w++] = e; // `\\` and any other escaped character stand for themselves
  }
  return w - at;
}
