/**
 * A bounds-checked cursor over one pgoutput message inside a byte array.
 *
 * Every read checks the message end first and throws a `PgoutputError`
 * naming the protocol field, so a parse function is a straight list of reads.
 * One reader is owned by a decoder and re-pointed at each message (no
 * allocation per message). Offsets in errors are translated from positions
 * in `bytes` to the caller's coordinates (see `at` in `reset`).
 */
import type { MessageKind } from "../messages.ts";
import { PgoutputError, type PgoutputErrorCode } from "../errors.ts";
import { fromPostgresTimestamp } from "../time.ts";

const EMPTY = new Uint8Array(0);

export class Reader {
  /** The array holding the message. */
  bytes: Uint8Array = EMPTY;
  /** A DataView over the whole ArrayBuffer behind `bytes`; positions are shifted by `shift`. */
  view: DataView = new DataView(EMPTY.buffer);
  /** `bytes.byteOffset`: add it to a position in `bytes` to read through `view`. */
  shift = 0;
  /** Current position in `bytes`. */
  pos = 0;
  /** Position of the message's tag byte. */
  start = 0;
  /** Position just after the message's last byte. */
  end = 0;
  /** Length of the String read last by `string()` (NUL excluded). */
  stringLength = 0;
  /** Kind of the message being read (set once its tag is known). */
  kind: MessageKind | undefined = undefined;
  /** Index of the message in its batch; `undefined` for a single `decode`. */
  index: number | undefined = undefined;
  /** Offset of the message's tag byte in the caller's input (error offsets are relative to the caller). */
  origin = 0;

  /** Points the reader at the message `bytes[start, end)`, which is at `origin` in the caller's input. */
  reset(bytes: Uint8Array, start: number, end: number, origin: number, index: number | undefined): void {
    if (bytes.buffer !== this.view.buffer) this.view = new DataView(bytes.buffer);
    this.bytes = bytes;
    this.shift = bytes.byteOffset;
    this.pos = start;
    this.start = start;
    this.end = end;
    this.origin = origin;
    this.index = index;
    this.kind = undefined;
  }

  /** Claims `n` bytes of `field` at the cursor; returns their position. */
  take(n: number, field: string): number {
    const p = this.pos;
    if (this.end - p < n) throw this.error("INCOMPLETE", field, p, `message ends inside ${field}`);
    this.pos = p + n;
    return p;
  }

  /** Int8 / Byte1. */
  u8(field: string): number {
    return this.bytes[this.take(1, field)]!;
  }

  /** Int16, signed. */
  i16(field: string): number {
    return this.view.getInt16(this.shift + this.take(2, field));
  }

  /** Int32, signed (lengths, counts, type modifiers). */
  i32(field: string): number {
    return this.view.getInt32(this.shift + this.take(4, field));
  }

  /** Int32 read as unsigned (xids, OIDs). */
  u32(field: string): number {
    return this.view.getUint32(this.shift + this.take(4, field));
  }

  /** Int64 read as unsigned (LSNs). */
  lsn(field: string): bigint {
    return this.view.getBigUint64(this.shift + this.take(8, field));
  }

  /** Int64 TimestampTz, returned as µs since the Unix epoch. */
  time(field: string): bigint {
    return fromPostgresTimestamp(this.view.getBigInt64(this.shift + this.take(8, field)));
  }

  /** A NUL-terminated String: returns its position; its length is left in `stringLength`. */
  string(field: string): number {
    const b = this.bytes;
    const p = this.pos;
    const end = this.end;
    // A plain loop: names are short, and indexOf cannot be bounded by the message end.
    let q = p;
    while (q < end && b[q] !== 0) q++;
    if (q === end) throw this.error("INCOMPLETE", field, p, `no NUL terminates ${field} before the message ends`);
    this.stringLength = q - p;
    this.pos = q + 1;
    return p;
  }

  /** The message must end exactly at the cursor. */
  done(): void {
    const p = this.pos;
    if (p !== this.end) throw this.error("TRAILING_BYTES", "end", p, `${this.end - p} bytes after the last field`);
  }

  /** An error at position `at` of `bytes`, reported in the caller's coordinates. */
  error(code: PgoutputErrorCode, field: string, at: number, text: string): PgoutputError {
    return new PgoutputError(text, {
      code,
      offset: this.origin + (at - this.start),
      messageKind: this.kind,
      field,
      messageIndex: this.index,
    });
  }
}
