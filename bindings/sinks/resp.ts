/**
 * RESP2, the Redis serialization protocol (redis.io/docs/latest/develop/reference/protocol-spec):
 * a command is an array of bulk strings (`*<n>\r\n` then `$<len>\r\n<bytes>\r\n`
 * per argument); a reply is a simple string (`+`), an error (`-`), an
 * integer (`:`), a bulk string (`$`, `-1` for nil) or an array (`*`).
 *
 * Commands are written into a ByteSink (payloads copied once, no string of
 * them made); replies are parsed as they arrive, split anywhere, with every
 * length bounded so that a server that is not Redis (or a hostile one)
 * gets a typed error instead of unbounded buffering.
 */
import { concatBytes, copyBytes } from "../copy-bytes.ts";
import type { ByteSink } from "../jsonl/sink.ts";

/** An error reply: its first word is the code (`WRONGTYPE`, `NOSCRIPT`, `ERR`, ...). */
export class RespError {
  constructor(readonly message: string) {}
  get code(): string {
    const space = this.message.indexOf(" ");
    return space < 0 ? this.message : this.message.substring(0, space);
  }
}

export type RespReply = string | number | null | RespError | RespReply[];

/** The server's bytes are not RESP: the connection is unusable. */
export class RespProtocolError extends Error {
  override readonly name = "RespProtocolError";
}

const CRLF = "\r\n";

/** An argument that is ASCII text (counts, ids, command names): its length is its byte count. */
export function bulkAscii(out: ByteSink, s: string): void {
  out.str(`$${s.length}${CRLF}${s}${CRLF}`);
}

export function bulkBytes(out: ByteSink, b: Uint8Array): void {
  out.str(`$${b.length}${CRLF}`);
  out.bytes(b);
  out.str(CRLF);
}

export function arrayHeader(out: ByteSink, n: number): void {
  out.str(`*${n}${CRLF}`);
}

const utf8 = new TextEncoder();

/** A whole command of text arguments (the handshake's, GET): `bytes` for any text. */
export function command(out: ByteSink, args: readonly (string | Uint8Array)[]): void {
  arrayHeader(out, args.length);
  for (const a of args) bulkBytes(out, typeof a === "string" ? utf8.encode(a) : a);
}

/** Bounds: a line (simple string, error, length), a bulk string, an array, nesting. */
const MAX_LINE = 64 * 1024;
const MAX_BULK = 512 * 1024 * 1024;
const MAX_ARRAY = 1 << 24;
const MAX_DEPTH = 8;

const decoder = new TextDecoder();

function printable(bytes: Uint8Array): string {
  return JSON.stringify(decoder.decode(bytes.subarray(0, 32)));
}

/** The index of the CR of the first CRLF at or after `from`, or -1. */
function crlf(buf: Uint8Array, from: number): number {
  for (let i = buf.indexOf(13, from); i >= 0 && i + 1 < buf.length; i = buf.indexOf(13, i + 1)) {
    if (buf[i + 1] === 10) return i;
  }
  return -1;
}

/**
 * Replies from a byte stream, in order. Resumable: an array's finished
 * elements are kept while the rest arrives, and bytes are joined only once
 * enough are there for what is awaited, so a large reply costs one pass.
 */
export class RespParser {
  /** Bytes received and not parsed yet (a copy: the socket may reuse its buffer). */
  #chunks: Uint8Array[] = [];
  #have = 0;
  /** Parsing resumes once this many bytes are there. */
  #need = 1;
  /** Arrays being filled, innermost last. */
  readonly #stack: { items: RespReply[]; left: number }[] = [];

  /** Feeds bytes; returns the replies they complete. Throws RespProtocolError for bytes that are not RESP. */
  push(chunk: Uint8Array): RespReply[] {
    if (this.#have + chunk.length < this.#need) {
      this.#chunks.push(copyBytes(chunk, 0, chunk.length));
      this.#have += chunk.length;
      return [];
    }
    // Parsed where it lies when nothing waits before it; only what is left over is copied.
    this.#chunks.push(chunk);
    const buf = this.#chunks.length === 1 ? chunk : concatBytes(this.#chunks, this.#have + chunk.length);
    const out: RespReply[] = [];
    let pos = 0;
    for (;;) {
      const r = this.#one(buf, pos);
      if (r < 0) {
        // Not all there: keep the rest, and wait for -r bytes of it.
        const rest = copyBytes(buf, pos, buf.length);
        this.#chunks = rest.length === 0 ? [] : [rest];
        this.#have = rest.length;
        this.#need = -r;
        return out;
      }
      pos = r;
      let value: RespReply | undefined = this.#value;
      if (this.#array >= 0) {
        if (this.#stack.length >= MAX_DEPTH) throw new RespProtocolError(`replies nested deeper than ${MAX_DEPTH} arrays`);
        if (this.#array > 0) {
          this.#stack.push({ items: [], left: this.#array });
          continue;
        }
        value = [];
      }
      // An element done: it completes its array, which may complete its own, and so on.
      for (;;) {
        const top = this.#stack[this.#stack.length - 1];
        if (top === undefined) {
          out.push(value!);
          break;
        }
        top.items.push(value!);
        if (--top.left > 0) break;
        this.#stack.pop();
        value = top.items;
      }
    }
  }

  /** What #one read: a value, or (#array >= 0) an array's length. */
  #value: RespReply | undefined;
  #array = -1;

  /**
   * One scalar or an array's header at `pos`: its end (#value or #array
   * set), or minus the number of bytes from `pos` needed before it can be read.
   */
  #one(buf: Uint8Array, pos: number): number {
    if (pos >= buf.length) return -1;
    const type = buf[pos]!;
    const cr = crlf(buf, pos + 1);
    if (cr < 0) {
      if (buf.length - pos > MAX_LINE) throw new RespProtocolError(`a reply line longer than ${MAX_LINE} bytes`);
      return -(buf.length - pos + 1);
    }
    const end = cr + 2;
    this.#array = -1;
    switch (type) {
      case 0x2b /* + */:
        this.#value = decoder.decode(buf.subarray(pos + 1, cr));
        return end;
      case 0x2d /* - */:
        this.#value = new RespError(decoder.decode(buf.subarray(pos + 1, cr)));
        return end;
      case 0x3a /* : */:
        this.#value = integer(buf, pos + 1, cr, Number.MAX_SAFE_INTEGER, "an integer reply");
        return end;
      case 0x24 /* $ */: {
        const n = integer(buf, pos + 1, cr, MAX_BULK, "a length");
        if (n < 0) {
          this.#value = null;
          return end;
        }
        if (end + n + 2 > buf.length) return -(end + n + 2 - pos);
        if (buf[end + n] !== 13 || buf[end + n + 1] !== 10) throw new RespProtocolError(`a bulk reply of ${n} bytes not followed by CRLF`);
        this.#value = decoder.decode(buf.subarray(end, end + n));
        return end + n + 2;
      }
      case 0x2a /* * */: {
        const n = integer(buf, pos + 1, cr, MAX_ARRAY, "a length");
        if (n < 0) this.#value = null;
        else this.#array = n;
        return end;
      }
      default:
        throw new RespProtocolError(`not a RESP reply: it starts with ${printable(buf.subarray(pos))}`);
    }
  }
}

/** The decimal integer in buf[from, to), -1 at least and `max` at most. */
function integer(buf: Uint8Array, from: number, to: number, max: number, what: string): number {
  let i = from;
  const negative = buf[i] === 0x2d;
  if (negative) i++;
  let n = 0;
  if (i === to || to - i > 16) i = -1;
  for (; i >= 0 && i < to; i++) {
    const d = buf[i]! - 0x30;
    if (d < 0 || d > 9) {
      i = -1;
      break;
    }
    n = n * 10 + d;
  }
  const value = negative ? -n : n;
  if (i < 0 || value > max || (value < -1 && max !== Number.MAX_SAFE_INTEGER)) {
    throw new RespProtocolError(`${what} that is not one (${JSON.stringify(decoder.decode(buf.subarray(from, Math.min(to, from + 20))))})`);
  }
  return value;
}
