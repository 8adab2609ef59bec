/**
 * The pure-TS pgoutput decoder: the fallback where WebAssembly is not
 * available, the oracle of the differential tests, and the benchmark
 * reference. Same interface and same results (values, errors, offsets) as
 * the wasm decoder.
 *
 * Each message is parsed eagerly into a small view object (fixed fields
 * read, strings and tuple columns located); strings and column values are
 * decoded when touched. Views read the caller's bytes without copying them,
 * so the input must not be modified while its views are in use; every view
 * goes stale at the decoder's next decode/decodeBatch/decodeFramed/push/reset.
 *
 * ## Errors
 * Validation is sequential: the first field that is missing or invalid is
 * reported, at the offset where that field starts; a tuple's column count is
 * compared with its relation only once the whole message was read (so a
 * truncated message is INCOMPLETE even if its count is also wrong).
 * Offsets are byte offsets in the input of the call:
 * - `decode`: in the message;
 * - `decodeFramed`: in the framed bytes;
 * - `decodeBatch`: in the capture-format form of the list, as if every
 *   message were preceded by its 4-byte length (message i starts at
 *   4 * (i + 1) + the lengths of messages 0 .. i-1);
 * - `push`: in what the previous push left unfinished followed by this chunk.
 * Frame-level errors: a declared length above `maxMessageSize` is
 * MESSAGE_TOO_LARGE at the length prefix (field `frameLength`), raised as soon
 * as the prefix is seen; a length of 0 is an INCOMPLETE message (field `tag`)
 * at the offset where its tag would be. In a batch the messages before the
 * failing one have updated the decoder's state. A failing push also drops
 * everything after the fault (frame boundaries after it cannot be trusted: a
 * corrupt length looks like any other): the next push starts a new stream.
 *
 * @example
 * ```ts
 * const decoder = new BaselineDecoder();
 * for (const msg of decoder.push(chunk)) {
 *   if (msg.kind === "Insert") console.log(msg.relation?.name, msg.newTuple.toJSON());
 * }
 * ```
 */
import type { Batch, DecodeOptions, DecoderOptions, PgoutputDecoder, TypeInfo } from "../decoder.ts";
import { kindOfTag, MessageTag, type PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import { PgoutputError } from "../errors.ts";
import { BaselineBatch } from "./batch.ts";
import type { ParseContext } from "./context.ts";
import { parseMessage } from "./parse.ts";
import { Reader } from "./reader.ts";
import { ColumnTable } from "./tuple.ts";
import { Lease } from "./view.ts";

const DEFAULT_MAX_MESSAGE_SIZE = 2 ** 30;

function frameLength(bytes: Uint8Array, p: number): number {
  return ((bytes[p]! << 24) | (bytes[p + 1]! << 16) | (bytes[p + 2]! << 8) | bytes[p + 3]!) >>> 0;
}

export class BaselineDecoder implements PgoutputDecoder {
  readonly backend = "baseline" as const;
  inStream = false;

  readonly #relations = new Map<number, Relation>();
  readonly #types = new Map<number, TypeInfo>();
  readonly #maxMessageSize: number;
  readonly #reader = new Reader();
  readonly #ctx: ParseContext;

  /** push(): the start of an unfinished frame (buffer sized for the whole frame once its length is known). */
  #partial: Uint8Array | null = null;
  #partialLength = 0;

  constructor(options?: DecoderOptions) {
    const max = options?.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE;
    if (!Number.isInteger(max) || max < 0) throw new RangeError(`maxMessageSize must be a non-negative integer, got ${max}`);
    this.#maxMessageSize = max;
    this.#ctx = {
      relations: this.#relations,
      types: this.#types,
      columns: new ColumnTable(),
      lease: new Lease(),
      inStream: false,
    };
  }

  get relations(): ReadonlyMap<number, Relation> {
    return this.#relations;
  }

  get types(): ReadonlyMap<number, TypeInfo> {
    return this.#types;
  }

  decode(message: Uint8Array, options?: DecodeOptions): PgoutputMessage {
    this.#renew();
    if (message.length > this.#maxMessageSize) {
      throw new PgoutputError(`message of ${message.length} bytes exceeds maxMessageSize ${this.#maxMessageSize}`, {
        code: "MESSAGE_TOO_LARGE",
        offset: 0,
        messageKind: kindOfTag(message[0]!),
        field: "tag",
      });
    }
    const r = this.#reader;
    r.reset(message, 0, message.length, 0, undefined);
    return this.#one(options?.inStream ?? this.inStream);
  }

  decodeBatch(messages: readonly Uint8Array[]): Batch {
    this.#renew();
    const out: PgoutputMessage[] = [];
    const r = this.#reader;
    let origin = 0; // where the message's length prefix would be in capture format
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      if (m.length > this.#maxMessageSize) throw this.#tooLarge(m.length, origin, i);
      r.reset(m, 0, m.length, origin + 4, i);
      out.push(this.#one(this.inStream));
      origin += 4 + m.length;
    }
    return new BaselineBatch(this.#ctx.lease, out, origin);
  }

  decodeFramed(bytes: Uint8Array): Batch {
    this.#renew();
    const out: PgoutputMessage[] = [];
    const consumed = this.#frames(bytes, 0, 0, out);
    return new BaselineBatch(this.#ctx.lease, out, consumed);
  }

  push(chunk: Uint8Array): Batch {
    this.#renew();
    const out: PgoutputMessage[] = [];
    let from = 0;
    // Offset of chunk[0] in this call's input (the unfinished frame, then the chunk).
    const shift = this.#partialLength;
    try {
      if (shift > 0) {
        from = this.#completePartial(chunk, out);
        if (from < 0) return new BaselineBatch(this.#ctx.lease, out, 0);
      }
      const p = this.#frames(chunk, from, shift, out);
      if (p < chunk.length) this.#keepPartial(chunk, p);
      return new BaselineBatch(this.#ctx.lease, out, shift + p);
    } catch (e) {
      // Nothing after a bad frame is trusted: the next push starts a new stream.
      this.#clearPartial();
      throw e;
    }
  }

  end(): void {
    const partial = this.#partialLength;
    this.#clearPartial();
    if (partial > 0) {
      throw new PgoutputError(`the pushed stream ends inside a frame (${partial} bytes of it received)`, { code: "INCOMPLETE" });
    }
  }

  reset(): void {
    this.#renew();
    this.#relations.clear();
    this.#types.clear();
    this.inStream = false;
    this.#clearPartial();
  }

  /** Starts a decode call: the previous call's views go stale, its column table is reused. */
  #renew(): void {
    const ctx = this.#ctx;
    ctx.lease.live = false;
    ctx.lease = new Lease();
    ctx.columns.clear();
  }

  /** Decodes the message the reader points at and applies its stream-state change. */
  #one(inStream: boolean): PgoutputMessage {
    const r = this.#reader;
    this.#ctx.inStream = inStream;
    const msg = parseMessage(r, this.#ctx);
    const tag = r.bytes[r.start];
    if (tag === MessageTag.StreamStart) this.inStream = true;
    else if (tag === MessageTag.StreamStop) this.inStream = false;
    return msg;
  }

  /**
   * Decodes the whole frames of `data` from `from` into `out`; returns the end
   * of the last whole frame. `shift` is the offset of data[0] in the call's input.
   */
  #frames(data: Uint8Array, from: number, shift: number, out: PgoutputMessage[]): number {
    const r = this.#reader;
    const n = data.length;
    let p = from;
    while (n - p >= 4) {
      const length = frameLength(data, p);
      const start = p + 4;
      // Refused as soon as the length is seen, without waiting for the bytes.
      if (length > this.#maxMessageSize) throw this.#tooLarge(length, shift + p, out.length);
      if (length > n - start) break;
      r.reset(data, start, start + length, shift + start, out.length);
      out.push(this.#one(this.inStream));
      p = start + length;
    }
    return p;
  }

  #tooLarge(length: number, offset: number, index: number): PgoutputError {
    return new PgoutputError(`message of ${length} bytes exceeds maxMessageSize ${this.#maxMessageSize}`, {
      code: "MESSAGE_TOO_LARGE",
      offset,
      field: "frameLength",
      messageIndex: index,
    });
  }

  /**
   * push(): adds the chunk's first bytes to the unfinished frame. Returns the
   * position in the chunk after the frame once it is whole and decoded, or -1
   * while it is still unfinished.
   */
  #completePartial(chunk: Uint8Array, out: PgoutputMessage[]): number {
    let buf = this.#partial!;
    let have = this.#partialLength;
    let c = 0;
    if (have < 4) {
      c = Math.min(4 - have, chunk.length);
      buf.set(chunk.subarray(0, c), have);
      have += c;
      if (have < 4) {
        this.#partialLength = have;
        return -1;
      }
      const length = frameLength(buf, 0);
      if (length > this.#maxMessageSize) throw this.#tooLarge(length, 0, 0);
    }
    const total = 4 + frameLength(buf, 0);
    const n = Math.min(total - have, chunk.length - c);
    if (buf.length < have + n) {
      // Doubling, capped at the frame: a large frame arriving in small chunks is copied O(1) times per byte,
      // and a corrupt length costs memory only in proportion to the bytes that arrived.
      const grown = new Uint8Array(Math.min(total, Math.max(have + n, 2 * buf.length)));
      grown.set(buf.subarray(0, have));
      buf = grown;
    }
    buf.set(chunk.subarray(c, c + n), have);
    have += n;
    c += n;
    if (have < total) {
      this.#partial = buf;
      this.#partialLength = have;
      return -1;
    }
    // Whole: decode it from its own buffer (which the view keeps; no reuse).
    this.#partial = null;
    this.#partialLength = 0;
    this.#reader.reset(buf, 4, total, 4, 0);
    out.push(this.#one(this.inStream));
    return c;
  }

  /** Copies the unfinished frame at data[p..] (the caller may reuse its chunk). */
  #keepPartial(data: Uint8Array, p: number): void {
    const rest = data.length - p;
    const buf = new Uint8Array(Math.max(4, rest));
    buf.set(data.subarray(p));
    this.#partial = buf;
    this.#partialLength = rest;
  }

  #clearPartial(): void {
    this.#partial = null;
    this.#partialLength = 0;
  }
}
