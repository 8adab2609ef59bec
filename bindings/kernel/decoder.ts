/**
 * The decoder both backends share: one binding, two kernels (the wasm
 * instance and the TS build of its source, see exports.ts). Input is copied once
 * into the kernel's memory; one kernel call walks all of it and writes the
 * tape; a short JS walk over the tape then applies Relation and Type
 * messages to the caches (in order, so each change sees the relation as it
 * was when the change was sent). The kernel checks tuple widths against the
 * relation width table this file keeps in its memory.
 *
 * Where each region sits in the kernel's memory, and growing it, is
 * memory-layout.ts's job. WasmDecoder (wasm/decoder.ts) and
 * BaselineDecoder (baseline/decoder.ts) are this class with their kernel.
 * The pg-logical-replication drop-in reads tape records without views
 * (compat/record.ts), through `decoderInternals()`; a decoder used without
 * it carries nothing for it.
 */
import type { Batch, DecodeOptions, DecoderOptions, PgoutputDecoder, TypeInfo } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { WalMessage } from "../walsender.ts";
import {
  FLAG_BACKEND, FLAG_KEEPALIVE, FLAG_XID, XLOGDATA_HEADER, FRAMING_BACKEND, STATUS_TABLE_FULL,
  FRAMING_COPYDATA, FRAMING_LENGTH, FRAMING_ONE, HEADER_WORDS, H_LENGTH, H_OFFSET, H_SIZE, R_CONSUMED, R_COUNT, R_STATE, R_STATE_RECORDS, R_TAPE_USED, STATE_IN_STREAM, STATUS_ERROR, STATUS_TAPE_FULL,
} from "../tape.ts";
import type { Relation } from "../relation.ts";
import { PgoutputError } from "../errors.ts";
import { readString } from "../utf8.ts";
import { kernelError } from "./error.ts";
import { checkMaxMessageSize } from "../limits.ts";
import { ValueDecoder } from "../values/decoder.ts";
import { NOT_PARSED, type KernelExports } from "./exports.ts";
import { TapeBatch, type Clock, type RelationDefinition } from "../views/batch.ts";
import { copyBytes } from "../copy-bytes.ts";
import { grownTape } from "./capacity.ts";
import { framedCopyLength, WALK_ABOVE } from "../frame-walk.ts";
import { kernelRowValues } from "./row-values.ts";
import { MemoryLayout } from "./memory-layout.ts";
import { relationAt, stateTag, TAG_RELATION, TAG_STREAM_START, TAG_STREAM_STOP, TAG_TYPE } from "./state-records.ts";
import type { DecoderInternals } from "./decoder-internals.ts";

export type { DecoderInternals } from "./decoder-internals.ts";

let internalsOf: (decoder: TapeDecoder) => DecoderInternals;

/** The internals of a tape decoder, for the record path (compat/record.ts). */
export function decoderInternals(decoder: TapeDecoder): DecoderInternals {
  return internalsOf(decoder);
}

/** Above this much memory, a call that needs far less starts a fresh instance so a peak is not kept forever. */
const SHRINK_ABOVE = 64 << 20;

const EMPTY = new Uint8Array(0);

export abstract class TapeDecoder implements PgoutputDecoder {
  abstract readonly backend: "wasm" | "baseline";
  readonly relations: Map<number, Relation> = new Map();
  readonly types: Map<number, TypeInfo> = new Map();
  inStream = false;

  /** Turns column bytes into JS values for `tuple.value()`. */
  readonly values: ValueDecoder;
  /** Makes a fresh kernel instance (its own memory); called again to give a large memory back. */
  readonly #newKernel: () => KernelExports;
  readonly #maxMessage: number;
  readonly #clock: Clock = { generation: 0 };
  /** The regions of the kernel's memory, its views, and a region a user asked for (the JSON area). */
  readonly #m = new MemoryLayout();
  #internals: DecoderInternals | undefined;
  /** An unfinished frame from push(): bytes [pendingFrom, pendingFrom + pendingLength) of memory. */
  #pendingFrom = 0;
  #pendingLength = 0;
  /** Frame header size of the pushed form: 4 for push, 5 for pushBackend. */
  #pendingHeader = 4;

  /** The options it was made with (for `fork()`). */
  protected readonly options: DecoderOptions;

  constructor(options: DecoderOptions, newKernel: () => KernelExports) {
    this.options = options;
    this.#newKernel = newKernel;
    this.#maxMessage = checkMaxMessageSize(options.maxMessageSize);
    this.#start();
    this.values = new ValueDecoder(options.values, {
      rowValues: kernelRowValues(this.#m),
      // Column bytes live in the kernel's memory: it parses text timestamps in place (wasm: ~3x the JS parser).
      textTimestamp: (bytes, offset, length, withZone) => {
        // The layout's buffer is the memory's after every call (it follows every grow and new instance), and
        // reading it costs nothing, where WebAssembly.Memory's buffer getter is a native call per value.
        const m = this.#m;
        if (bytes.buffer !== m.buffer) return undefined;
        const us = m.k.textTimestamp(bytes.byteOffset + offset, length, withZone ? 1 : 0);
        return us === NOT_PARSED ? undefined : us;
      },
    });
  }

  /**
   * A new decoder made like this one (same backend, options and kernel
   * module), sharing no state: it decodes held messages again (a streamed
   * transaction at its commit) without touching this one's batches.
   */
  abstract fork(): TapeDecoder;

  /** The largest message accepted (the `maxMessageSize` option). */
  get maxMessageSize(): number {
    return this.#maxMessage;
  }

  decode(message: Uint8Array, options?: DecodeOptions): PgoutputMessage {
    const override = options?.inStream;
    if (override === undefined) {
      this.#one(message);
      return this.#walk(1, message.length).get(0) as PgoutputMessage;
    }
    // Decode under the caller's state; only a Stream Start or Stop changes the tracked one.
    const before = this.inStream;
    this.inStream = override;
    let decoded = false;
    try {
      this.#one(message);
      const msg = this.#walk(1, message.length).get(0) as PgoutputMessage;
      decoded = true;
      return msg;
    } finally {
      const tag = decoded ? message[0] : undefined;
      this.inStream = tag === TAG_STREAM_START ? true : tag === TAG_STREAM_STOP ? false : before;
    }
  }

  /** Copies one message into memory and runs the kernel over it (the record is at the tape's start); throws its decode error. */
  #one(message: Uint8Array): void {
    this.#begin(0);
    const m = this.#m;
    // An oversized message is refused by its length alone: copy only its tag (for the error's kind), not its body.
    const copied = message.length > this.#maxMessage ? message.subarray(0, 1) : message;
    // What reserve(n, 64) checks first, without its objects: nearly every message fits what the last one left.
    const n = copied.length;
    if (n > m.inputCapacity || (n >> 2) + 1024 > m.tapeCapacity) m.reserve(n, 64);
    m.u8.set(copied, m.input);
    if (this.#kernel(FRAMING_ONE, m.input, message.length) === STATUS_ERROR) {
      const error = kernelError(m.i32, m.result >> 2, m.input, undefined, {
        memory: m.u8, messageLength: message.length, backendHeaders: false, maxMessageSize: this.#maxMessage,
      });
      error.decoded = [];
      throw error;
    }
  }

  decodeBatch(messages: readonly Uint8Array[]): Batch {
    this.#begin(0);
    return this.#runList(messages, FRAMING_LENGTH) as Batch;
  }

  /** Decodes a list in one call (an oversized item is refused at its length prefix: its body is not copied). */
  #runList(list: readonly Uint8Array[], framing: number): TapeBatch {
    const limit = framing === FRAMING_COPYDATA ? this.#maxMessage + 1 + XLOGDATA_HEADER : this.#maxMessage;
    return this.#run(framing, this.#m.input, this.#m.copyList(list, limit));
  }

  decodeFramed(bytes: Uint8Array): Batch {
    this.#begin(0);
    // A large input is copied only up to the header of a frame the kernel refuses (see frame-walk.ts).
    const n = bytes.length > WALK_ABOVE ? framedCopyLength(EMPTY, bytes, 4, this.#maxMessage) : bytes.length;
    const m = this.#m;
    m.reserve(n, 0);
    m.u8.set(n < bytes.length ? bytes.subarray(0, n) : bytes, m.input);
    return this.#run(FRAMING_LENGTH, m.input, n) as Batch;
  }

  push(chunk: Uint8Array): Batch {
    return this.#push(chunk, FRAMING_LENGTH) as Batch;
  }

  decodeCopyData(payloads: readonly Uint8Array[]): Batch<WalMessage> {
    this.#begin(0);
    return this.#runList(payloads, FRAMING_COPYDATA) as Batch<WalMessage>;
  }

  pushBackend(chunk: Uint8Array): Batch<WalMessage> {
    return this.#push(chunk, FRAMING_BACKEND) as Batch<WalMessage>;
  }

  /** Appends a chunk to the unfinished frame of the previous push and decodes every whole frame. */
  #push(chunk: Uint8Array, framing: number): TapeBatch {
    const pending = this.#pendingLength;
    const header = framing === FRAMING_BACKEND ? 5 : 4;
    this.#pendingHeader = header;
    // Move the unfinished frame to the start of the input region; the views that pointed there are stale now.
    this.#begin(pending);
    const m = this.#m;
    m.u8.copyWithin(m.input, this.#pendingFrom, this.#pendingFrom + pending);
    this.#pendingFrom = m.input;
    // A large input is copied only up to the header of a frame the kernel refuses; the walk starts at the
    // unfinished frame's header, which may be split between the pending bytes and the chunk (see frame-walk.ts).
    let n = pending + chunk.length;
    if (n > WALK_ABOVE) {
      const limit = framing === FRAMING_BACKEND ? this.#maxMessage + 1 + XLOGDATA_HEADER : this.#maxMessage;
      n = Math.max(pending, framedCopyLength(m.u8.subarray(m.input, m.input + pending), chunk, header, limit));
    }
    let end = m.input + pending;
    try {
      m.reserve(n, 0);
      m.u8.set(n - pending < chunk.length ? chunk.subarray(0, n - pending) : chunk, m.input + pending);
      end = m.input + n;
      const batch = this.#run(framing, m.input, n);
      this.#pendingFrom = m.input + batch.consumed;
      return batch;
    } catch (e) {
      // The framing after a bad message cannot be trusted (and an input refused as too large for memory is
      // dropped with its partial frame): the next push starts a new stream.
      this.#pendingFrom = end;
      throw e;
    } finally {
      this.#pendingLength = end - this.#pendingFrom;
    }
  }

  end(): void {
    const pending = this.#pendingLength;
    this.#pendingLength = 0;
    if (pending > 0) {
      throw new PgoutputError(`stream ended inside a frame (${pending} bytes of it received)`, {
        code: "INCOMPLETE",
        offset: 0,
        field: pending < this.#pendingHeader ? "frameLength" : "tag",
      });
    }
  }

  reset(): void {
    this.#clock.generation++;
    this.relations.clear();
    this.types.clear();
    this.inStream = false;
    this.#pendingLength = 0;
    this.#m.writeTable(this.#m.tableCapacity, []);
  }

  /**
   * Starts a decode call: older views go stale; a large idle memory is
   * given back (keeping `keep` pending bytes); a region asked for since the
   * last call is laid out.
   */
  #begin(keep: number): void {
    this.#pendingFrom = this.#beginKeeping(this.#pendingFrom, keep);
  }

  /** #begin for bytes [from, from + keep) of memory: returns where they are now (a fresh instance has them at its input). */
  #beginKeeping(from: number, keep: number): number {
    this.#clock.generation++;
    const m = this.#m;
    if (m.buffer!.byteLength > SHRINK_ABOVE && keep < SHRINK_ABOVE >> 2) {
      const saved = copyBytes(m.u8, from, from + keep);
      this.#start();
      m.reserve(keep, 0);
      m.u8.set(saved, m.input);
      from = m.input;
    }
    m.grant();
    return from;
  }

  /** A fresh kernel instance, which learns the widths of the relations the decoder knows. */
  #start(): void {
    const widths: number[] = [];
    for (const rel of this.relations.values()) widths.push(rel.relationId, rel.columnCount);
    this.#m.start(this.#newKernel(), widths);
  }

  /**
   * Runs the kernel over memory [from, from + length), growing the tape and
   * resuming when it fills, then walks the records. Error offsets and
   * `consumed` are relative to `from`.
   */
  #run(framing: number, from: number, length: number): TapeBatch {
    const status = this.#kernel(framing, from, length);
    const m = this.#m;
    const res = m.i32;
    const r = m.result >> 2;
    // Apply the good messages to the caches even when a later one is bad.
    const batch = this.#walk(this.#count, res[r + R_CONSUMED]! - from);
    if (status === STATUS_ERROR) {
      const error = kernelError(res, r, from, this.#count, {
        memory: m.u8, messageLength: undefined, backendHeaders: framing === FRAMING_BACKEND, maxMessageSize: this.#maxMessage,
      });
      error.decoded = [...batch];
      throw error;
    }
    return batch;
  }

  /** Messages the last #kernel call decoded. */
  #count = 0;
  /** How many of them #walk must apply (R_STATE_RECORDS), or -1 for all that may be. */
  #stateRecords = -1;

  /** The kernel calls of a decode: STATUS_OK or STATUS_ERROR, with #count and the result words set. */
  #kernel(framing: number, from: number, length: number): number {
    const end = from + length;
    const m = this.#m;
    const r = m.result >> 2;
    let state = this.inStream ? STATE_IN_STREAM : 0;
    let at = from;
    let tapeUsed = 0;
    let count = 0;
    let stateRecords = 0;
    for (;;) {
      // A kernel that does not count them (a module of an older build) leaves -1: every record is walked.
      m.i32[r + R_STATE_RECORDS] = -1;
      const status = m.k.decode(0, at, end, framing, m.tape, tapeUsed, m.tapeCapacity, state, this.#maxMessage, m.result, m.table);
      const res = m.i32;
      count += res[r + R_COUNT]!;
      const states = res[r + R_STATE_RECORDS]!;
      stateRecords = states < 0 || stateRecords < 0 ? -1 : stateRecords + states;
      if (status === STATUS_TAPE_FULL || status === STATUS_TABLE_FULL) {
        // Keep what was written, make the tape or the table larger, resume at the message that did not fit.
        if (framing === FRAMING_ONE) count = stateRecords = 0;
        else {
          at = res[r + R_CONSUMED]!;
          tapeUsed = res[r + R_TAPE_USED]!;
          state = res[r + R_STATE]!;
        }
        if (status === STATUS_TAPE_FULL) {
          const capacities = { input: m.inputCapacity, tape: m.tapeCapacity };
          m.layout(m.inputCapacity, grownTape(m.input, capacities, m.tableBytes(), length));
        } else m.layout(m.inputCapacity, m.tapeCapacity, m.tableCapacity * 2);
        continue;
      }
      this.#count = count;
      this.#stateRecords = stateRecords;
      return status;
    }
  }

  static {
    internalsOf = (d) =>
      (d.#internals ??= {
        decodeOne: (message) => {
          d.#one(message);
          const w = d.#m.tape >> 2;
          const tag = stateTag(d.#m.i32[w]!);
          return tag === 0 ? undefined : d.#apply(w, 0, tag);
        },
        memory: d.#m,
        maxMessageSize: d.#maxMessage,
        begin: (from, keep) => d.#beginKeeping(from, keep),
        decodeBackend: (from, length) => d.#run(FRAMING_BACKEND, from, length) as Batch<WalMessage>,
        view: (w, length, definition) => d.#batch(w, 1, length, definition === undefined ? [] : [definition]).get(0),
      });
  }

  /**
   * Applies the records among the first `count` that change state —
   * Relation and Type messages to the caches, Stream Start/Stop to
   * `inStream` — walking only as far as the last of them (the kernel
   * counted them; most calls have none). Changes are not visited: the
   * kernel checked their tuple widths, and their relations are looked up
   * when a view asks (TapeBatch.relationOf).
   */
  #walk(count: number, consumed: number): TapeBatch {
    const t = this.#m.i32;
    const definitions: RelationDefinition[] = [];
    const first = this.#m.tape >> 2;
    let left = this.#stateRecords;
    let w = first;
    for (let i = 0; i < count && left !== 0; i++) {
      // stateTag(), inline: a method call per record cost the kernel case 7%, and even this function call 1%
      // (bench/against.bench.ts, paired).
      const head = t[w]!;
      const tag = head & ((FLAG_KEEPALIVE | FLAG_BACKEND) << 8) ? 0 : head & 0xff;
      if (tag === TAG_RELATION || tag === TAG_TYPE || tag === TAG_STREAM_START || tag === TAG_STREAM_STOP) {
        const def = this.#apply(w, i, tag);
        if (def !== undefined) definitions.push(def);
        left--;
      }
      w += t[w + H_SIZE]!;
    }
    return this.#batch(first, count, consumed, definitions);
  }

  #batch(first: number, count: number, consumed: number, definitions: readonly RelationDefinition[]): TapeBatch {
    const m = this.#m;
    return new TapeBatch(this.#clock, m.u8, m.dv, m.i32, first, count, consumed, this.values, this.relations, definitions, m);
  }

  /** Applies record `w` (message `index` of its call, `tag` its stateTag()) to the caches and stream state; a Relation's definition is returned. */
  #apply(w: number, index: number, tag: number): RelationDefinition | undefined {
    const { i32: t, u8, dv } = this.#m;
    const head = t[w]!;
    const off = t[w + H_OFFSET]!;
    const p0 = off + 1 + ((head >> 8) & FLAG_XID ? 4 : 0);
    const body = w + HEADER_WORDS;
    if (tag === TAG_RELATION) {
      const relation = relationAt(u8, t, off, t[w + H_LENGTH]!, body, dv.getUint32(p0));
      const def = { index, relation, previous: this.relations.get(relation.relationId) };
      this.relations.set(relation.relationId, relation);
      return def;
    }
    if (tag === TAG_TYPE) {
      const info = {
        typeId: dv.getUint32(p0),
        namespace: readString(u8, t[body]!, t[body + 1]!),
        typeName: readString(u8, t[body + 2]!, t[body + 3]!),
      };
      this.types.set(info.typeId, info);
      this.values.learnType(info.typeId, info.namespace, info.typeName);
    } else {
      this.inStream = tag === TAG_STREAM_START;
    }
    return undefined;
  }
}
