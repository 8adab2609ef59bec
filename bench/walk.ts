/**
 * The floor for the `kernel` case: a plain-JS structural walk over the
 * capture format, fed the same 64 KB chunks. Per message it reads the tag;
 * for Insert, Update and Delete every column's kind byte and value length
 * (bounds-checked against the message end). No strings, no objects per
 * message: what a hand-written JS scanner with no output costs.
 *
 * A frame cut by a chunk boundary is gathered in `carry` and walked from
 * there once complete.
 */

const TAG_INSERT = 0x49; // I
const TAG_UPDATE = 0x55; // U
const TAG_DELETE = 0x44; // D
const TAG_STREAM_START = 0x53; // S
const TAG_STREAM_STOP = 0x45; // E
const KIND_TEXT = 0x74; // t
const KIND_BINARY = 0x62; // b

export class StructuralWalk {
  /** Messages walked since the last end(). */
  messages = 0;
  /** A checksum of what was read (tags, kinds, lengths), so nothing is dead code. */
  sum = 0;
  /** Inside a Stream Start / Stream Stop block changes carry an extra xid. */
  #inStream = false;
  #carry = new Uint8Array(1024);
  #carryView = new DataView(this.#carry.buffer);
  #carryLength = 0;

  /** Walks every frame the chunk completes; returns how many. */
  push(chunk: Uint8Array): number {
    const before = this.messages;
    let p = 0;
    const n = chunk.length;
    if (this.#carryLength > 0) {
      p = this.#fill(chunk);
      if (p < 0) return 0;
    }
    const dv = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (p + 4 <= n) {
      const len = dv.getUint32(p);
      if (p + 4 + len > n) break;
      this.#message(chunk, dv, p + 4, p + 4 + len);
      p += 4 + len;
    }
    if (p < n) this.#keep(chunk, p);
    return this.messages - before;
  }

  end(): void {
    if (this.#carryLength !== 0) throw new Error(`walk: stream ended inside a frame (${this.#carryLength} bytes of it)`);
    this.messages = 0;
  }

  /** Completes the carried frame from the chunk; returns where the chunk's own frames start, or -1 if it is still short. */
  #fill(chunk: Uint8Array): number {
    let p = 0;
    while (this.#carryLength < 4 && p < chunk.length) this.#carry[this.#carryLength++] = chunk[p++]!;
    if (this.#carryLength < 4) return -1;
    const total = 4 + this.#carryView.getUint32(0);
    this.#reserve(total);
    const take = Math.min(total - this.#carryLength, chunk.length - p);
    this.#carry.set(chunk.subarray(p, p + take), this.#carryLength);
    this.#carryLength += take;
    p += take;
    if (this.#carryLength < total) return -1;
    this.#message(this.#carry, this.#carryView, 4, total);
    this.#carryLength = 0;
    return p;
  }

  #keep(chunk: Uint8Array, p: number): void {
    const rest = chunk.length - p;
    this.#reserve(rest);
    this.#carry.set(chunk.subarray(p), 0);
    this.#carryLength = rest;
  }

  #reserve(size: number): void {
    if (size <= this.#carry.length) return;
    const bigger = new Uint8Array(Math.max(size, this.#carry.length * 2));
    bigger.set(this.#carry.subarray(0, this.#carryLength));
    this.#carry = bigger;
    this.#carryView = new DataView(bigger.buffer);
  }

  /** One message: bytes [start, end) of u8. */
  #message(u8: Uint8Array, dv: DataView, start: number, end: number): void {
    const tag = u8[start]!;
    this.messages++;
    let sum = tag;
    if (tag === TAG_INSERT || tag === TAG_UPDATE || tag === TAG_DELETE) {
      let p = start + 1 + (this.#inStream ? 4 : 0) + 4; // tag, [xid], relation OID
      // Insert: 'N' TUPLE. Update: ['K'|'O' TUPLE] 'N' TUPLE. Delete: 'K'|'O' TUPLE.
      let marker = u8[p++]!;
      if (tag === TAG_UPDATE && marker !== 0x4e) {
        p = this.#tuple(u8, dv, p, end);
        marker = u8[p++]!;
      }
      sum += marker;
      p = this.#tuple(u8, dv, p, end);
      sum += p - start;
    } else if (tag === TAG_STREAM_START) {
      this.#inStream = true;
    } else if (tag === TAG_STREAM_STOP) {
      this.#inStream = false;
    }
    this.sum = (this.sum + sum) | 0;
  }

  /** A TupleData at p: Int16 ncols, then per column a kind byte and, for t/b, an Int32 length and the value. */
  #tuple(u8: Uint8Array, dv: DataView, p: number, end: number): number {
    if (p + 2 > end) throw new Error("walk: truncated tuple");
    const ncols = dv.getUint16(p);
    p += 2;
    let sum = 0;
    for (let i = 0; i < ncols; i++) {
      if (p >= end) throw new Error("walk: truncated column");
      const kind = u8[p++]!;
      sum += kind;
      if (kind === KIND_TEXT || kind === KIND_BINARY) {
        if (p + 4 > end) throw new Error("walk: truncated column length");
        const len = dv.getInt32(p);
        p += 4 + len;
        if (len < 0 || p > end) throw new Error("walk: column runs past its message");
        sum += len;
      }
    }
    this.sum = (this.sum + sum) | 0;
    return p;
  }
}
