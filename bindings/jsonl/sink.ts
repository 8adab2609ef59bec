/**
 * A growable byte buffer that JSON Lines are appended to. Output is built
 * here as UTF-8 bytes, not as JS strings: the rows' text values are copied
 * from the decoder's memory without ever becoming strings.
 */
import { copyBytes } from "../copy-bytes.ts";

const encoder = new TextEncoder();

export class ByteSink {
  buf: Uint8Array<ArrayBuffer> = new Uint8Array(64 * 1024);
  len = 0;

  /** Room for n more bytes. */
  ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  byte(b: number): void {
    if (this.len === this.buf.length) this.ensure(1);
    this.buf[this.len++] = b;
  }

  bytes(src: Uint8Array, start = 0, end = src.length): void {
    const n = end - start;
    this.ensure(n);
    if (n < 16) {
      const buf = this.buf;
      let p = this.len;
      for (let i = start; i < end; i++) buf[p++] = src[i]!;
      this.len = p;
    } else {
      this.buf.set(src.subarray(start, end), this.len);
      this.len += n;
    }
  }

  /** A JS string as UTF-8 (well-formed: JSON texts from JSON.stringify are). */
  str(s: string): void {
    const n = s.length;
    this.ensure(n);
    const buf = this.buf;
    let p = this.len;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        // Non-ASCII: at most 3 bytes per UTF-16 unit.
        this.len = p;
        this.ensure((n - i) * 3);
        this.len += encoder.encodeInto(s.substring(i), this.buf.subarray(this.len)).written;
        return;
      }
      buf[p++] = c;
    }
    this.len = p;
  }

  /** The bytes so far, as a copy (the caller may hand it to an asynchronous write), and empties the sink. */
  take(): Uint8Array {
    const out = copyBytes(this.buf, 0, this.len);
    this.len = 0;
    return out;
  }
}
