/**
 * The pure-TS pgoutput decoder: the fallback where WebAssembly is not
 * available, the oracle of the differential tests, and the benchmark
 * reference. Same interface and same results (values, errors, offsets) as
 * the wasm decoder.
 *
 * Each message is parsed eagerly into a small view object (fixed fields
 * read, strings and tuple columns located); strings and column values are
 * decoded when touched. Each call first copies its input into one buffer the
 * decoder owns and reuses (input.ts), so views never alias the caller's bytes:
 * the caller may reuse its buffer at once (as `pg` does), and every view goes
 * stale at the decoder's next decode/decodeBatch/decodeFramed/push/reset
 * (STALE_VIEW). Values, `bytes()` and `materialize()` are copies.
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
 * - `decodeCopyData`: like `decodeBatch` (each payload counted as preceded by
 *   its 4-byte length); the pgoutput message of an XLogData starts 25 bytes
 *   after its payload's `w`;
 * - `pushBackend`: like `push`, in backend-protocol frames
 *   (`[type byte][Int32 length counting itself][body]`).
 * Frame-level errors: a declared length above `maxMessageSize` is
 * MESSAGE_TOO_LARGE at the length prefix (field `frameLength`), raised as soon
 * as the prefix is seen; a length of 0 is an INCOMPLETE message (field `tag`)
 * at the offset where its tag would be. In a batch the messages before the
 * failing one have updated the decoder's state. A failing push also drops
 * everything after the fault (frame boundaries after it cannot be trusted: a
 * corrupt length looks like any other): the next push starts a new stream.
 * Walsender payloads may exceed `maxMessageSize` by the 24-byte XLogData
 * header (a longer one is MESSAGE_TOO_LARGE at its length, field
 * `frameLength`); a backend frame length below 4 is INVALID_LENGTH at the
 * length field. Both are raised as soon as the 5-byte frame header is seen.
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
import { BackendMessage, type WalMessage } from "../walsender.ts";
import { BaselineBatch } from "./batch.ts";
import { copyBytes } from "../copy-bytes.ts";
import type { ParseContext } from "./context.ts";
import { InputBuffer } from "./input.ts";
import { framedCopyLength, WALK_ABOVE } from "../frame-walk.ts";

const EMPTY = new Uint8Array(0);
import { parseMessage } from "./parse.ts";
import { Reader } from "./reader.ts";
import { ColumnTable } from "./tuple.ts";
import { Lease } from "./view.ts";
import { parseCopyData, XLOGDATA_HEADER } from "./walsender.ts";
import { checkMaxMessageSize } from "../limits.ts";
import { ValueDecoder } from "../values/decoder.ts";

const TYPE_COPYDATA = 0x64; // 'd'

/** Hands the messages decoded before a batch's error to the caller on the error. */
function withDecoded(e: unknown, out: readonly { kind: string }[]): unknown {
  if (e instanceof PgoutputError) e.decoded = out as readonly WalMessage[];
  return e;
}

function frameLength(bytes: Uint8Array, p: number): number {
  return ((bytes[p]! << 24) | (bytes[p + 1]! << 16) | (bytes[p + 2]! << 8) | bytes[p + 3]!) >>> 0;
}

/**
 * How a stream cuts into frames (push: length-prefixed messages; pushBackend:
 * backend-protocol messages). Positions are in `data`; `shift` is the offset
 * of data[0] in the call's input, `index` the frame's message index.
 */
interface Framing<T> {
  /** Bytes before the body. */
  readonly header: number;
  /** The body length of the frame whose header is at data[p] (all `header` bytes present); throws on a bad length. */
  body(data: Uint8Array, p: number, shift: number, index: number): number;
  /** Decodes the whole frame data[p, end) (header at p). */
  decode(data: Uint8Array, p: number, end: number, shift: number, index: number): T;
}

export class BaselineDecoder implements PgoutputDecoder {
  readonly backend = "baseline" as const;
  inStream = false;

  readonly #relations = new Map<number, Relation>();
  readonly #types = new Map<number, TypeInfo>();
  readonly #maxMessageSize: number;
  /** Turns column bytes into JS values for `tuple.value()`. */
  readonly values: ValueDecoder;
  readonly #reader = new Reader();
  readonly #ctx: ParseContext;
  /** Every call's input is copied here first (views read the copy, never the caller's bytes). */
  readonly #input = new InputBuffer();
  /** decodeBatch/decodeCopyData: where each message starts in the copy (reused). */
  readonly #starts: number[] = [];

  /** push()/pushBackend(): the start of an unfinished frame (buffer sized for the whole frame once its length is known). */
  #partial: Uint8Array | null = null;
  #partialLength = 0;
  /** The header size of the framing the unfinished frame belongs to (for end()'s report). */
  #partialHeader = 4;

  /** The capture format: [uint32 length][pgoutput message]. */
  readonly #lengthFraming: Framing<PgoutputMessage> = {
    header: 4,
    body: (data, p, shift, index) => {
      const length = frameLength(data, p);
      // Refused as soon as the length is seen, without waiting for the bytes.
      if (length > this.#maxMessageSize) throw this.#tooLarge(length, shift + p, index);
      return length;
    },
    decode: (data, p, end, shift, index) => {
      this.#reader.reset(data, p + 4, end, shift + p + 4, index);
      return this.#one(this.inStream);
    },
  };

  /** Backend-protocol messages: [type][Int32 length counting itself][body]; CopyData bodies are walsender payloads. */
  readonly #backendFraming: Framing<WalMessage> = {
    header: 5,
    body: (data, p, shift, index) => {
      const length = frameLength(data, p + 1) | 0;
      if (length < 4) {
        throw new PgoutputError(`backend message length ${length} is below 4 (it counts itself)`, {
          code: "INVALID_LENGTH",
          offset: shift + p + 1,
          field: "frameLength",
          messageIndex: index,
        });
      }
      const body = length - 4;
      if (body > this.#maxMessageSize + 1 + XLOGDATA_HEADER) throw this.#tooLarge(body, shift + p + 1, index, 1 + XLOGDATA_HEADER);
      return body;
    },
    decode: (data, p, end, shift, index) => {
      const type = data[p]!;
      if (type !== TYPE_COPYDATA) return new BackendMessage(String.fromCharCode(type), copyBytes(data, p + 5, end));
      this.#reader.reset(data, p + 5, end, shift + p + 5, index);
      return this.#payload();
    },
  };

  constructor(options?: DecoderOptions) {
    this.#maxMessageSize = checkMaxMessageSize(options?.maxMessageSize);
    this.values = new ValueDecoder(options?.values);
    this.#ctx = {
      relations: this.#relations,
      types: this.#types,
      columns: new ColumnTable(),
      values: this.values,
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
    r.reset(this.#input.copy(message), 0, message.length, 0, undefined);
    return this.#one(options?.inStream ?? this.inStream);
  }

  decodeBatch(messages: readonly Uint8Array[]): Batch {
    this.#renew();
    const out: PgoutputMessage[] = [];
    const r = this.#reader;
    const starts = this.#starts;
    const copy = this.#copyList(messages, this.#maxMessageSize);
    let origin = 0; // where the message's length prefix would be in capture format
    try {
      for (let i = 0; i < messages.length; i++) {
        const m = messages[i]!;
        if (m.length > this.#maxMessageSize) throw this.#tooLarge(m.length, origin, i);
        r.reset(copy, starts[i]!, starts[i]! + m.length, origin + 4, i);
        out.push(this.#one(this.inStream));
        origin += 4 + m.length;
      }
    } catch (e) {
      throw withDecoded(e, out);
    }
    return new BaselineBatch(this.#ctx.lease, out, origin);
  }

  decodeFramed(bytes: Uint8Array): Batch {
    this.#renew();
    const out: PgoutputMessage[] = [];
    try {
      // A large input is copied only up to the header of a frame that is refused (frame-walk.ts).
      const n = bytes.length > WALK_ABOVE ? framedCopyLength(EMPTY, bytes, 4, this.#maxMessageSize) : bytes.length;
      const consumed = this.#frames(this.#lengthFraming, this.#input.copy(bytes.subarray(0, n)), 0, n, 0, out);
      return new BaselineBatch(this.#ctx.lease, out, consumed);
    } catch (e) {
      throw withDecoded(e, out);
    }
  }

  push(chunk: Uint8Array): Batch {
    return this.#push(this.#lengthFraming, chunk);
  }

  decodeCopyData(payloads: readonly Uint8Array[]): Batch<WalMessage> {
    this.#renew();
    const out: WalMessage[] = [];
    const r = this.#reader;
    const starts = this.#starts;
    const copy = this.#copyList(payloads, this.#maxMessageSize + 1 + XLOGDATA_HEADER);
    let origin = 0; // where the payload's length prefix would be
    try {
      for (let i = 0; i < payloads.length; i++) {
        const m = payloads[i]!;
        if (m.length > this.#maxMessageSize + 1 + XLOGDATA_HEADER) throw this.#tooLarge(m.length, origin, i, 1 + XLOGDATA_HEADER);
        r.reset(copy, starts[i]!, starts[i]! + m.length, origin + 4, i);
        out.push(this.#payload());
        origin += 4 + m.length;
      }
    } catch (e) {
      throw withDecoded(e, out);
    }
    return new BaselineBatch(this.#ctx.lease, out, origin);
  }

  pushBackend(chunk: Uint8Array): Batch<WalMessage> {
    return this.#push(this.#backendFraming, chunk);
  }

  /**
   * The error names offset 0 (where the unfinished frame starts in what the
   * next push would see) and the field the stream ends in: `frameLength`
   * inside the frame header, else `tag`.
   */
  end(): void {
    const partial = this.#partialLength;
    const header = this.#partialHeader;
    this.#clearPartial();
    if (partial > 0) {
      throw new PgoutputError(`the pushed stream ends inside a frame (${partial} bytes of it received)`, {
        code: "INCOMPLETE",
        offset: 0,
        field: partial < header ? "frameLength" : "tag",
      });
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

  /**
   * Copies the messages up to the first longer than `max` (that one is
   * refused when reached, so it is not copied); their starts are left in #starts.
   */
  #copyList(list: readonly Uint8Array[], max: number): Uint8Array {
    let count = 0;
    while (count < list.length && list[count]!.length <= max) count++;
    return this.#input.copyAll(list, count, this.#starts);
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

  /** Decodes the walsender CopyData payload the reader points at. */
  #payload(): WalMessage {
    return parseCopyData(this.#reader, () => this.#one(this.inStream));
  }

  /** push() and pushBackend(): the unfinished frame, then the chunk's whole frames; keeps an unfinished last frame. */
  #push<T extends { kind: string; materialize(): Record<string, unknown> }>(framing: Framing<T>, input: Uint8Array): Batch<T> {
    this.#renew();
    const pending = this.#partialLength;
    let n = input.length;
    if (pending + n > WALK_ABOVE) {
      // Copy only up to the header of a refused frame; the walk starts at the unfinished frame's header.
      const limit = framing.header === 5 ? this.#maxMessageSize + 1 + XLOGDATA_HEADER : this.#maxMessageSize;
      const head = this.#partial === null ? EMPTY : this.#partial.subarray(0, pending);
      n = Math.max(0, framedCopyLength(head, input, framing.header as 4 | 5, limit) - pending);
    }
    const chunk = this.#input.copy(input.subarray(0, n));
    const out: T[] = [];
    this.#partialHeader = framing.header;
    let from = 0;
    // Offset of chunk[0] in this call's input (the unfinished frame, then the chunk).
    const shift = this.#partialLength;
    try {
      if (shift > 0) {
        from = this.#completePartial(framing, chunk, n, out);
        if (from < 0) return new BaselineBatch(this.#ctx.lease, out, 0);
      }
      const p = this.#frames(framing, chunk, from, n, shift, out);
      if (p < n) this.#keepPartial(chunk, p, n);
      return new BaselineBatch(this.#ctx.lease, out, shift + p);
    } catch (e) {
      // Nothing after a bad frame is trusted: the next push starts a new stream.
      this.#clearPartial();
      throw withDecoded(e, out);
    }
  }

  /**
   * Decodes the whole frames of `data[from, n)` into `out`; returns the end
   * of the last whole frame. `shift` is the offset of data[0] in the call's input.
   */
  #frames<T>(framing: Framing<T>, data: Uint8Array, from: number, n: number, shift: number, out: T[]): number {
    const header = framing.header;
    let p = from;
    while (n - p >= header) {
      const length = framing.body(data, p, shift, out.length);
      const start = p + header;
      if (length > n - start) break;
      out.push(framing.decode(data, p, start + length, shift, out.length));
      p = start + length;
    }
    return p;
  }

  #tooLarge(length: number, offset: number, index: number, slack = 0): PgoutputError {
    return new PgoutputError(`message of ${length} bytes exceeds maxMessageSize ${this.#maxMessageSize}${slack > 0 ? ` + ${slack}` : ""}`, {
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
  #completePartial<T>(framing: Framing<T>, chunk: Uint8Array, chunkLength: number, out: T[]): number {
    const header = framing.header;
    let buf = this.#partial!;
    let have = this.#partialLength;
    let c = 0;
    if (have < header) {
      c = Math.min(header - have, chunkLength);
      buf.set(chunk.subarray(0, c), have);
      have += c;
      if (have < header) {
        this.#partialLength = have;
        return -1;
      }
    }
    // The unfinished frame starts the call's input: offset 0, message index 0 (checked again, it is cheap).
    const total = header + framing.body(buf, 0, 0, 0);
    const n = Math.min(total - have, chunkLength - c);
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
    out.push(framing.decode(buf, 0, total, 0, 0));
    return c;
  }

  /** Copies the unfinished frame at data[p, n) (the input copy is reused at the next call). */
  #keepPartial(data: Uint8Array, p: number, n: number): void {
    const rest = n - p;
    const buf = new Uint8Array(Math.max(8, rest));
    buf.set(data.subarray(p, n));
    this.#partial = buf;
    this.#partialLength = rest;
  }

  #clearPartial(): void {
    this.#partial = null;
    this.#partialLength = 0;
  }
}
