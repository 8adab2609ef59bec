/**
 * The decoder both backends share: one binding, two kernels (the wasm
 * instance and the TS build of its source, see exports.ts). Input is copied once
 * into the kernel's memory; one kernel call walks all of it and writes the
 * tape; a short JS walk over the tape then applies Relation and Type
 * messages to the caches (in order, so each change sees the relation as it
 * was when the change was sent). The kernel checks tuple widths against the
 * relation width table this file keeps in its memory.
 *
 * Memory, from the kernel's heapBase(): [result | input | tape | width
 * table | JSON area]. Only this file grows memory, and only before a decode call.
 * WasmDecoder (wasm/decoder.ts) and BaselineDecoder (baseline/decoder.ts)
 * are this class with their kernel.
 */
import type { Batch, DecodeOptions, DecoderOptions, PgoutputDecoder, TypeInfo } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { WalMessage } from "../walsender.ts";
import {
  FLAG_BACKEND, FLAG_KEEPALIVE, FLAG_XID, XLOGDATA_HEADER, FRAMING_BACKEND, STATUS_TABLE_FULL,
  TABLE_CAPACITY, TABLE_COUNT, TABLE_HEADER_WORDS, TABLE_HASH, FRAMING_COPYDATA, FRAMING_LENGTH, FRAMING_ONE, HEADER_WORDS, H_LENGTH, H_OFFSET, H_SIZE, R_CONSUMED, R_COUNT, R_STATE, R_TAPE_USED, STATE_IN_STREAM, STATUS_ERROR, STATUS_TAPE_FULL,
} from "../tape.ts";
import { Relation } from "../relation.ts";
import { PgoutputError } from "../errors.ts";
import { readString } from "../utf8.ts";
import { kernelError } from "./error.ts";
import { checkMaxMessageSize } from "../limits.ts";
import { ValueDecoder } from "../values/decoder.ts";
import { NOT_PARSED, type KernelExports } from "./exports.ts";
import { TapeBatch, type Clock, type RelationDefinition } from "../views/batch.ts";
import { copyBytes } from "../copy-bytes.ts";
import { ADDRESSABLE, grownTape, layoutEnd, planCapacities, unaddressable } from "./capacity.ts";
import { framedCopyLength, WALK_ABOVE } from "../frame-walk.ts";
import { JSON_AREA_BYTES, JsonArea } from "./json-area.ts";

/** A message's tape record as `decodeRecord` hands it out: word `w` of `t` (see tape.ts), bytes in `u8` / `dv`. */
export interface TapeRecord {
  u8: Uint8Array;
  dv: DataView;
  t: Int32Array;
  w: number;
}

/**
 * The tag of a record whose message changes the decoder's state (Relation,
 * Type, Stream Start, Stream Stop), from its head word; 0 for the others.
 * Keepalives and backend messages touch no cache (and a backend 'E' is no
 * Stream Stop).
 */
function stateTag(head: number): number {
  const tag = head & ((FLAG_KEEPALIVE | FLAG_BACKEND) << 8) ? 0 : head & 0xff;
  return tag === TAG_RELATION || tag === TAG_TYPE || tag === TAG_STREAM_START || tag === TAG_STREAM_STOP ? tag : 0;
}

const PAGE = 65536;
/** Above this much memory, a call that needs far less starts a fresh instance so a peak is not kept forever. */
const SHRINK_ABOVE = 64 << 20;

const EMPTY = new Uint8Array(0);

const TAG_RELATION = 0x52;
const TAG_TYPE = 0x59;
const TAG_STREAM_START = 0x53;
const TAG_STREAM_STOP = 0x45;

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
  /** Where the JSON Lines writer has the kernel write JSON (after the width table). */
  readonly #json = new JsonArea();
  #k!: KernelExports;
  #result = 0; // byte address of the result words
  #input = 0; // byte address of the input region
  #inputCapacity = 0;
  #tape = 0; // byte address of the tape
  #tapeCapacity = 0; // in words
  #table = 0; // byte address of the relation width table (after the tape)
  #tableCapacity = 0; // in entries
  #buffer: ArrayBufferLike | undefined;
  #u8!: Uint8Array;
  #i32!: Int32Array;
  #dv!: DataView;
  /** An unfinished frame from push(): bytes [pendingFrom, pendingFrom + pendingLength) of memory. */
  #pendingFrom = 0;
  #pendingLength = 0;
  /** Frame header size of the pushed form: 4 for push, 5 for pushBackend. */
  #pendingHeader = 4;

  constructor(options: DecoderOptions, newKernel: () => KernelExports) {
    this.#newKernel = newKernel;
    this.#maxMessage = checkMaxMessageSize(options.maxMessageSize);
    this.values = new ValueDecoder(options.values, {
      // Column bytes live in the kernel's memory: it parses text timestamps in place (wasm: ~3x the JS parser).
      textTimestamp: (bytes, offset, length, withZone) => {
        // #buffer is the memory's buffer after every call (#views follows every grow and new instance), and
        // reading it costs nothing, where WebAssembly.Memory's buffer getter is a native call per value.
        if (bytes.buffer !== this.#buffer) return undefined;
        const us = this.#k.textTimestamp(bytes.byteOffset + offset, length, withZone ? 1 : 0);
        return us === NOT_PARSED ? undefined : us;
      },
    });
    this.#start();
  }

  /** The largest message accepted (the `maxMessageSize` option). */
  get maxMessageSize(): number {
    return this.#maxMessage;
  }

  decode(message: Uint8Array, options?: DecodeOptions): PgoutputMessage {
    this.#begin(0);
    // An oversized message is refused by its length alone: copy only its tag (for the error's kind), not its body.
    const copied = message.length > this.#maxMessage ? message.subarray(0, 1) : message;
    this.#reserve(copied.length, 64);
    this.#u8.set(copied, this.#input);
    const override = options?.inStream;
    if (override === undefined) return this.#run(FRAMING_ONE, this.#input, message.length).get(0) as PgoutputMessage;
    // Decode under the caller's state; only a Stream Start or Stop changes the tracked one.
    const before = this.inStream;
    this.inStream = override;
    let decoded = false;
    try {
      const msg = this.#run(FRAMING_ONE, this.#input, message.length).get(0) as PgoutputMessage;
      decoded = true;
      return msg;
    } finally {
      const tag = decoded ? message[0] : undefined;
      this.inStream = tag === TAG_STREAM_START ? true : tag === TAG_STREAM_STOP ? false : before;
    }
  }

  decodeBatch(messages: readonly Uint8Array[]): Batch {
    this.#begin(0);
    return this.#runList(messages, FRAMING_LENGTH) as Batch;
  }

  /** Copies a list into memory as [uint32 length][bytes]... and decodes it in one call. */
  #runList(list: readonly Uint8Array[], framing: number): TapeBatch {
    // An oversized item is refused at its length prefix: copy the list up to that prefix, not the body.
    const limit = framing === FRAMING_COPYDATA ? this.#maxMessage + 1 + XLOGDATA_HEADER : this.#maxMessage;
    let total = 0;
    let count = 0;
    for (const m of list) {
      count++;
      if (m.length > limit) {
        total += 4;
        break;
      }
      total += 4 + m.length;
    }
    this.#reserve(total, 0);
    let p = this.#input;
    for (let i = 0; i < count; i++) {
      const m = list[i]!;
      this.#dv.setUint32(p, m.length);
      if (m.length <= limit) this.#u8.set(m, p + 4);
      p += 4 + m.length;
    }
    return this.#run(framing, this.#input, total);
  }

  decodeFramed(bytes: Uint8Array): Batch {
    this.#begin(0);
    // A large input is copied only up to the header of a frame the kernel refuses (see frame-walk.ts).
    const n = bytes.length > WALK_ABOVE ? framedCopyLength(EMPTY, bytes, 4, this.#maxMessage) : bytes.length;
    this.#reserve(n, 0);
    this.#u8.set(n < bytes.length ? bytes.subarray(0, n) : bytes, this.#input);
    return this.#run(FRAMING_LENGTH, this.#input, n) as Batch;
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
    this.#u8.copyWithin(this.#input, this.#pendingFrom, this.#pendingFrom + pending);
    this.#pendingFrom = this.#input;
    // A large input is copied only up to the header of a frame the kernel refuses; the walk starts at the
    // unfinished frame's header, which may be split between the pending bytes and the chunk (see frame-walk.ts).
    let n = pending + chunk.length;
    if (n > WALK_ABOVE) {
      const limit = framing === FRAMING_BACKEND ? this.#maxMessage + 1 + XLOGDATA_HEADER : this.#maxMessage;
      n = Math.max(pending, framedCopyLength(this.#u8.subarray(this.#input, this.#input + pending), chunk, header, limit));
    }
    let end = this.#input + pending;
    try {
      this.#reserve(n, 0);
      this.#u8.set(n - pending < chunk.length ? chunk.subarray(0, n - pending) : chunk, this.#input + pending);
      end = this.#input + n;
      const batch = this.#run(framing, this.#input, n);
      this.#pendingFrom = this.#input + batch.consumed;
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
    this.#writeTable(this.#tableCapacity, []);
  }

  /** Starts a decode call: older views go stale; a large idle memory is given back (keeping `keep` pending bytes). */
  #begin(keep: number): void {
    this.#clock.generation++;
    if (this.#buffer!.byteLength > SHRINK_ABOVE && keep < SHRINK_ABOVE >> 2) {
      const saved = copyBytes(this.#u8, this.#pendingFrom, this.#pendingFrom + keep);
      this.#start();
      this.#reserve(keep, 0);
      this.#u8.set(saved, this.#input);
      this.#pendingFrom = this.#input;
    }
  }

  /** A fresh kernel instance with a small initial layout. */
  #start(): void {
    this.#k = this.#newKernel();
    this.#result = this.#k.heapBase();
    this.#input = this.#result + 64;
    this.#inputCapacity = 0;
    this.#tapeCapacity = 0;
    this.#tableCapacity = 0;
    this.#buffer = undefined;
    this.#views();
    this.#reserve(PAGE, 4096);
    // A fresh instance learns the widths of the relations the decoder knows.
    const widths: number[] = [];
    for (const rel of this.relations.values()) widths.push(rel.relationId, rel.columnCount);
    this.#layout(this.#inputCapacity, this.#tapeCapacity, tableCapacityFor(widths.length >> 1), widths);
  }

  /** Makes room for `bytes` of input and `words` of tape (tape sized from input when 0); OUT_OF_MEMORY beyond what the kernel addresses. */
  #reserve(bytes: number, words: number): void {
    const current = { input: this.#inputCapacity, tape: this.#tapeCapacity };
    const plan = planCapacities(this.#input, bytes, words, current, this.#tableBytes());
    if (plan !== undefined) this.#layout(plan.input, plan.tape);
  }

  /** The width table's bytes and the JSON area's behind it (json-area.ts): what the layout holds after the tape. */
  #tableBytes(capacity = this.#tableCapacity): number {
    return (TABLE_HEADER_WORDS + 2 * capacity) * 4 + JSON_AREA_BYTES;
  }

  /**
   * Lays out [input | tape | width table | JSON area] for these capacities, growing
   * memory as needed. The table moves behind the tape, keeping its entries
   * (or `widths`, pairs of OID and column count, when given).
   */
  #layout(inputCapacity: number, tapeCapacity: number, tableCapacity = this.#tableCapacity, widths?: number[]): void {
    const tape = roundUp(this.#input + inputCapacity, 16);
    const table = tape + tapeCapacity * 4;
    const needed = layoutEnd(this.#input, { input: inputCapacity, tape: tapeCapacity }, this.#tableBytes(tableCapacity));
    // Checked before anything changes, so a refused layout leaves the decoder as it was.
    if (needed > ADDRESSABLE) throw unaddressable(inputCapacity, needed);
    const entries = widths ?? this.#readTable();
    const memory = this.#k.memory;
    if (needed > memory.buffer.byteLength) {
      try {
        memory.grow(Math.ceil((needed - memory.buffer.byteLength) / PAGE));
      } catch (cause) {
        throw new PgoutputError(`cannot grow kernel memory to ${needed} bytes`, { code: "OUT_OF_MEMORY", offset: 0 });
      }
    }
    this.#inputCapacity = inputCapacity;
    this.#tape = tape;
    this.#tapeCapacity = tapeCapacity;
    this.#table = table;
    this.#views();
    this.#writeTable(tableCapacity, entries);
    this.#json.moved(this.#k, table + (TABLE_HEADER_WORDS + 2 * tableCapacity) * 4);
  }

  /** The width table's entries as pairs of OID and column count. */
  #readTable(): number[] {
    const out: number[] = [];
    if (this.#tableCapacity === 0) return out;
    const t = this.#i32;
    const first = (this.#table >> 2) + TABLE_HEADER_WORDS;
    for (let i = 0; i < this.#tableCapacity; i++) {
      const width = t[first + 2 * i + 1]!;
      if (width !== 0) out.push(t[first + 2 * i]!, width - 1);
    }
    return out;
  }

  /** Writes an empty table of `capacity` entries at #table and adds `widths` (hashing as the kernel does). */
  #writeTable(capacity: number, widths: number[]): void {
    const t = this.#i32;
    const at = this.#table >> 2;
    t.fill(0, at, at + TABLE_HEADER_WORDS + 2 * capacity);
    t[at + TABLE_CAPACITY] = capacity;
    t[at + TABLE_COUNT] = widths.length >> 1;
    this.#tableCapacity = capacity;
    const mask = capacity - 1;
    for (let k = 0; k < widths.length; k += 2) {
      let i = Math.imul(widths[k]!, TABLE_HASH) & mask;
      while (t[at + TABLE_HEADER_WORDS + 2 * i + 1] !== 0) i = (i + 1) & mask;
      t[at + TABLE_HEADER_WORDS + 2 * i] = widths[k]!;
      t[at + TABLE_HEADER_WORDS + 2 * i + 1] = widths[k + 1]! + 1;
    }
  }

  /** Re-acquires the typed-array views after memory grew (growth detaches the old buffer). */
  #views(): void {
    const buffer = this.#k.memory.buffer;
    if (buffer === this.#buffer) return;
    this.#buffer = buffer;
    this.#u8 = new Uint8Array(buffer);
    this.#i32 = new Int32Array(buffer);
    this.#dv = new DataView(buffer);
  }

  /**
   * Runs the kernel over memory [from, from + length), growing the tape and
   * resuming when it fills, then walks the records. Error offsets and
   * `consumed` are relative to `from`.
   */
  #run(framing: number, from: number, length: number): TapeBatch {
    const status = this.#kernel(framing, from, length);
    const res = this.#i32;
    const r = this.#result >> 2;
    // Apply the good messages to the caches even when a later one is bad.
    const batch = this.#walk(this.#count, res[r + R_CONSUMED]! - from);
    if (status === STATUS_ERROR) {
      const error = kernelError(res, r, from, framing === FRAMING_ONE ? undefined : this.#count, {
        memory: this.#u8,
        messageLength: framing === FRAMING_ONE ? length : undefined,
        backendHeaders: framing === FRAMING_BACKEND,
        maxMessageSize: this.#maxMessage,
      });
      error.decoded = [...batch];
      throw error;
    }
    return batch;
  }

  /** Messages the last #kernel call decoded. */
  #count = 0;

  /** The kernel calls of #run: STATUS_OK or STATUS_ERROR, with #count and the result words set. */
  #kernel(framing: number, from: number, length: number): number {
    const end = from + length;
    const r = this.#result >> 2;
    let state = this.inStream ? STATE_IN_STREAM : 0;
    let at = from;
    let tapeUsed = 0;
    let count = 0;
    for (;;) {
      const status = this.#k.decode(
        0, at, end, framing, this.#tape, tapeUsed, this.#tapeCapacity, state, this.#maxMessage, this.#result, this.#table,
      );
      const res = this.#i32;
      count += res[r + R_COUNT]!;
      if (status === STATUS_TAPE_FULL || status === STATUS_TABLE_FULL) {
        // Keep what was written, make the tape or the table larger, resume at the message that did not fit.
        if (framing === FRAMING_ONE) count = 0;
        else {
          at = res[r + R_CONSUMED]!;
          tapeUsed = res[r + R_TAPE_USED]!;
          state = res[r + R_STATE]!;
        }
        if (status === STATUS_TAPE_FULL) {
          const capacities = { input: this.#inputCapacity, tape: this.#tapeCapacity };
          this.#layout(this.#inputCapacity, grownTape(this.#input, capacities, this.#tableBytes(), length));
        }
        else this.#layout(this.#inputCapacity, this.#tapeCapacity, this.#tableCapacity * 2);
        continue;
      }
      this.#count = count;
      return status;
    }
  }

  /** What decodeRecord() returned last (one object, refilled per call). */
  readonly #record: TapeRecord = { u8: EMPTY, dv: new DataView(new ArrayBuffer(0)), t: new Int32Array(0), w: 0 };
  /** The Relation the last decodeRecord() defined, if it decoded one; its message length. */
  #recordDefinition: RelationDefinition | undefined;
  #recordLength = 0;

  /**
   * `decode()` for callers that read the tape themselves (the
   * pg-logical-replication drop-in, bindings/compat, which turns every
   * message into plain objects at once): the same copy, kernel call, checks,
   * errors and cache updates, but no batch and no view — the message's
   * record is word `w` of `t`. Valid until the decoder's next call.
   */
  decodeRecord(message: Uint8Array): TapeRecord {
    this.#begin(0);
    const copied = message.length > this.#maxMessage ? message.subarray(0, 1) : message;
    // What #reserve(n, 64) checks first, without its objects: nearly every message fits what the last one left.
    const n = copied.length;
    if (n > this.#inputCapacity || (n >> 2) + 1024 > this.#tapeCapacity) this.#reserve(n, 64);
    this.#u8.set(copied, this.#input);
    const status = this.#kernel(FRAMING_ONE, this.#input, message.length);
    if (status === STATUS_ERROR) {
      const error = kernelError(this.#i32, this.#result >> 2, this.#input, undefined, {
        memory: this.#u8, messageLength: message.length, backendHeaders: false, maxMessageSize: this.#maxMessage,
      });
      error.decoded = [];
      throw error;
    }
    const w = this.#tape >> 2;
    const tag = stateTag(this.#i32[w]!);
    this.#recordDefinition = tag === 0 ? undefined : this.#apply(w, 0, tag);
    this.#recordLength = message.length;
    const rec = this.#record;
    rec.u8 = this.#u8;
    rec.dv = this.#dv;
    rec.t = this.#i32;
    rec.w = w;
    return rec;
  }

  /** The view of the message the last decodeRecord() decoded (for kinds its caller does not read itself). */
  recordView(): WalMessage {
    const def = this.#recordDefinition;
    const records = Int32Array.of(this.#record.w);
    return new TapeBatch(
      this.#clock, this.#u8, this.#dv, this.#i32, records, 1, this.#recordLength, this.values, this.relations, def === undefined ? [] : [def], this.#json,
    ).get(0);
  }

  /**
   * Walks the first `count` records: notes where each starts, and applies
   * the few that change state — Relation and Type messages to the caches,
   * Stream Start/Stop to `inStream`. Changes are not visited: the kernel
   * checked their tuple widths, and their relations are looked up when a
   * view asks (TapeBatch.relationOf).
   */
  #walk(count: number, consumed: number): TapeBatch {
    const t = this.#i32;
    const records = new Int32Array(count);
    const definitions: RelationDefinition[] = [];
    let w = this.#tape >> 2;
    for (let i = 0; i < count; i++) {
      records[i] = w;
      // stateTag(), inline: a method call per record cost the kernel case 7%, and even this function call 1%
      // (bench/against.bench.ts, paired).
      const head = t[w]!;
      const tag = head & ((FLAG_KEEPALIVE | FLAG_BACKEND) << 8) ? 0 : head & 0xff;
      if (tag === TAG_RELATION || tag === TAG_TYPE || tag === TAG_STREAM_START || tag === TAG_STREAM_STOP) {
        const def = this.#apply(w, i, tag);
        if (def !== undefined) definitions.push(def);
      }
      w += t[w + H_SIZE]!;
    }
    return new TapeBatch(this.#clock, this.#u8, this.#dv, t, records, count, consumed, this.values, this.relations, definitions, this.#json);
  }

  /** Applies record `w` (message `index` of its call, `tag` its stateTag()) to the caches and stream state; a Relation's definition is returned. */
  #apply(w: number, index: number, tag: number): RelationDefinition | undefined {
    const t = this.#i32;
    const head = t[w]!;
    const u8 = this.#u8;
    const dv = this.#dv;
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

/** The number of table entries that keeps `n` relations at most half full (a power of 2, at least 1024). */
function tableCapacityFor(n: number): number {
  let capacity = 1024;
  while (capacity < n * 2) capacity *= 2;
  return capacity;
}

/** A Relation cache entry from a validated Relation record: a private copy of the message, offsets rebased to it. */
function relationAt(u8: Uint8Array, t: Int32Array, off: number, length: number, body: number, relationId: number): Relation {
  const n = t[body + 4]!;
  const columns = new Int32Array(2 * n);
  for (let c = 0; c < n; c++) {
    columns[2 * c] = t[body + 5 + 2 * c]! - off;
    columns[2 * c + 1] = t[body + 6 + 2 * c]!;
  }
  const nameOffset = t[body + 2]! - off;
  const nameLength = t[body + 3]!;
  const bytes = copyBytes(u8, off, off + length);
  return new Relation(bytes, {
    relationId,
    namespaceOffset: t[body]! - off,
    namespaceLength: t[body + 1]!,
    nameOffset,
    nameLength,
    replicaIdentity: bytes[nameOffset + nameLength + 1]!,
    columns,
  });
}

function roundUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}
