/**
 * The drop-in's fast path over a tape decoder (both backends): `parse()`
 * without batches or views. Begin and Commit are read from the message's
 * bytes (`convertFixed`); any other message goes through the kernel
 * (`decodeOne`: the same copy, checks, errors and cache updates as
 * `decode()`), and the kinds that make up nearly all of a stream (Insert,
 * Update, Delete, and Relation and Type for their caches) are read from its
 * tape record; the others through the converter's view path (convert.ts).
 * Lives here, not in the decoder, so that a decoder used without the
 * drop-in carries nothing of it.
 */
import { decoderInternals, type DecoderInternals, type TapeDecoder } from "../kernel/decoder.ts";
import { fixedSize, layoutOf, tagFieldOffset } from "../layout.ts";
import { MessageTag, type PgoutputMessage } from "../messages.ts";
import { FLAG_BACKEND, FLAG_KEEPALIVE, FLAG_XID, HEADER_WORDS, H_OFFSET } from "../tape.ts";
import { readString } from "../utf8.ts";
import type { CompatConverter } from "./convert.ts";
import { compatLsnAt, compatTime, compatTimeAt, lsnOfHalves } from "./lsn.ts";
import type { TapeWords } from "./tape-rows.ts";
import type * as T from "./types.ts";

const TAG_BEGIN = MessageTag.Begin, TAG_COMMIT = MessageTag.Commit, TAG_RELATION = MessageTag.Relation, TAG_TYPE = MessageTag.Type;
const TAG_INSERT = MessageTag.Insert, TAG_UPDATE = MessageTag.Update, TAG_DELETE = MessageTag.Delete;
const OLD_KEY = 0x4b, OLD_ROW = 0x4f;
/** Fixed fields' offsets (layout.ts tagFieldOffset). */
const BEGIN_LSN = tagFieldOffset(TAG_BEGIN, "finalLsn"), BEGIN_TIME = tagFieldOffset(TAG_BEGIN, "commitTime"), BEGIN_XID = tagFieldOffset(TAG_BEGIN, "xid");
const COMMIT_FLAGS = tagFieldOffset(TAG_COMMIT, "flags"), COMMIT_LSN = tagFieldOffset(TAG_COMMIT, "commitLsn");
const COMMIT_END_LSN = tagFieldOffset(TAG_COMMIT, "endLsn"), COMMIT_TIME = tagFieldOffset(TAG_COMMIT, "commitTime");
const TYPE_ID = tagFieldOffset(TAG_TYPE, "typeId");
const CHANGE_RELATION = tagFieldOffset(TAG_INSERT, "relationId");
const NOT_PLAIN = (FLAG_KEEPALIVE | FLAG_BACKEND | FLAG_XID) << 8;
/** Whole Begin and Commit messages: the tag and their fixed fields (they have no others). */
const BEGIN_BYTES = 1 + fixedSize(layoutOf(TAG_BEGIN)!), COMMIT_BYTES = 1 + fixedSize(layoutOf(TAG_COMMIT)!);
/** The largest message convertFixed reads: a decoder refusing messages of this size must see them. */
const FIXED_MAX = Math.max(BEGIN_BYTES, COMMIT_BYTES);

/** Big-endian 32-bit words of a byte array, unsigned and signed. */
const u32 = (b: Uint8Array, o: number): number => ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;
const i32 = (b: Uint8Array, o: number): number => (b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!;

/**
 * A Begin or Commit straight from the message's bytes, or `undefined` for
 * any other message. More than half of a stream's messages are these two,
 * and the decoder has nothing to check in them but their length (every
 * value of their fixed fields is valid) and nothing to learn from them:
 * with the exact length, the kernel would accept the message and leave
 * its state as it was, so it is not called; any other length goes to it
 * and gets its error.
 */
export function convertFixed(b: Uint8Array): T.MessageBegin | T.MessageCommit | undefined {
  const n = b.length;
  if (n === BEGIN_BYTES && b[0] === TAG_BEGIN) {
    const l = 1 + BEGIN_LSN, c = 1 + BEGIN_TIME;
    return {
      tag: "begin", commitLsn: lsnOfHalves(u32(b, l), u32(b, l + 4)), commitTime: compatTime(i32(b, c), u32(b, c + 4)),
      xid: u32(b, 1 + BEGIN_XID),
    };
  }
  if (n === COMMIT_BYTES && b[0] === TAG_COMMIT) {
    const l = 1 + COMMIT_LSN, e = 1 + COMMIT_END_LSN, c = 1 + COMMIT_TIME;
    return {
      tag: "commit", flags: b[1 + COMMIT_FLAGS]!, commitLsn: lsnOfHalves(u32(b, l), u32(b, l + 4)),
      commitEndLsn: lsnOfHalves(u32(b, e), u32(b, e + 4)), commitTime: compatTime(i32(b, c), u32(b, c + 4)),
    };
  }
  return undefined;
}

export class RecordConverter {
  readonly decoder: TapeDecoder;
  readonly #d: DecoderInternals;
  readonly #converter: CompatConverter;
  /** Begin and Commit skip the kernel, unless the decoder refuses messages of their size. */
  readonly #fixed: boolean;
  /** The decoder's memory as the last record was read from it (one object, refilled per message). */
  readonly #mem: TapeWords = { u8: new Uint8Array(0), dv: new DataView(new ArrayBuffer(0)), t: new Int32Array(0) };

  constructor(decoder: TapeDecoder, converter: CompatConverter) {
    this.decoder = decoder;
    this.#d = decoderInternals(decoder);
    this.#converter = converter;
    this.#fixed = decoder.maxMessageSize >= FIXED_MAX;
  }

  /** `converter.convert(decoder.decode(message))`, without the view where the tape says it all. */
  parse(message: Uint8Array): T.AnyMessage {
    if (this.#fixed) {
      const fixed = convertFixed(message);
      if (fixed !== undefined) return fixed;
    }
    const d = this.#d;
    const definition = d.decodeOne(message);
    const m = d.memory;
    const mem = this.#mem;
    mem.u8 = m.u8;
    mem.dv = m.dv;
    mem.t = m.i32;
    const w = m.tape >> 2;
    return this.#convert(mem, w) ?? this.#converter.convert(d.view(w, message.length, definition) as PgoutputMessage);
  }

  /** The record at word `w` as pg-logical-replication's object, or `undefined` for a kind it leaves to the view path. */
  #convert(mem: TapeWords, w: number): T.AnyMessage | undefined {
    const { u8, dv, t } = mem;
    const head = t[w]!;
    // Keepalives, backend messages and streamed changes (which carry an xid) take the view path.
    if ((head & NOT_PLAIN) !== 0) return undefined;
    const relations = this.#converter.relations;
    const rows = this.#converter.rows;
    const p0 = t[w + H_OFFSET]! + 1;
    switch (head & 0xff) {
      case TAG_BEGIN:
        return { tag: "begin", commitLsn: compatLsnAt(dv, p0 + BEGIN_LSN), commitTime: compatTimeAt(dv, p0 + BEGIN_TIME), xid: dv.getUint32(p0 + BEGIN_XID) };
      case TAG_COMMIT:
        return {
          tag: "commit", flags: u8[p0 + COMMIT_FLAGS]!, commitLsn: compatLsnAt(dv, p0 + COMMIT_LSN),
          commitEndLsn: compatLsnAt(dv, p0 + COMMIT_END_LSN), commitTime: compatTimeAt(dv, p0 + COMMIT_TIME),
        };
      case TAG_INSERT: {
        const relation = relations.known(dv.getUint32(p0 + CHANGE_RELATION), "insert");
        return { tag: "insert", relation, new: rows.row(mem, w + HEADER_WORDS, relations.plan(relation), undefined) };
      }
      case TAG_UPDATE: {
        const relation = relations.known(dv.getUint32(p0 + CHANGE_RELATION), "update");
        const plan = relations.plan(relation);
        const body = w + HEADER_WORDS;
        const type = t[body]!;
        let key: T.Row | null = null;
        let old: T.Row | null = null;
        let next = body + 1;
        if (type !== 0) {
          if (type === OLD_KEY) key = rows.key(mem, next, plan);
          else old = rows.row(mem, next, plan, undefined);
          next += 1 + t[next]!;
        }
        return { tag: "update", relation, key, old, new: rows.row(mem, next, plan, old) };
      }
      case TAG_DELETE: {
        const relation = relations.known(dv.getUint32(p0 + CHANGE_RELATION), "delete");
        const plan = relations.plan(relation);
        const body = w + HEADER_WORDS;
        const type = t[body]!;
        const key = type === OLD_KEY ? rows.key(mem, body + 1, plan) : null;
        const old = type === OLD_ROW ? rows.row(mem, body + 1, plan, undefined) : null;
        return { tag: "delete", relation, key, old };
      }
      case TAG_RELATION:
        return relations.define(this.decoder.relations.get(dv.getUint32(p0))!);
      case TAG_TYPE: {
        const body = w + HEADER_WORDS;
        const out: T.MessageType = {
          tag: "type", typeOid: dv.getUint32(p0 + TYPE_ID),
          typeSchema: readString(u8, t[body]!, t[body + 1]!), typeName: readString(u8, t[body + 2]!, t[body + 3]!),
        };
        relations.type(out.typeOid, out.typeSchema, out.typeName);
        return out;
      }
      default:
        return undefined;
    }
  }
}
