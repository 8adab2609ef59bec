/**
 * Message views over the tape (both backends). One class serves every message kind:
 * `kind` is a plain data property and the field getters switch on the tag.
 * A class per kind reads nicer, but then every view-creating and
 * `msg.kind`-reading site sees 19 object shapes and goes megamorphic; one
 * shape keeps them monomorphic, which roughly halves the cost of the lazy
 * path (measured with bench/suite.bench.ts). Getters of fields a kind does
 * not have return `undefined`; the public types (messages.ts) never expose
 * them.
 *
 * A view is three numbers over its batch: message index, record position,
 * and the offset of the first field after the tag (and the streamed xid).
 * Nothing is decoded until a getter is called; every getter first checks
 * that the batch is still live.
 */
import type * as M from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import { H_TAG, H_OFFSET, H_LENGTH, HEADER_WORDS, FLAG_XID, FLAG_ABORT_V4, FLAG_XLOGDATA, FLAG_KEEPALIVE, FLAG_BACKEND } from "../tape.ts";
import { kindOfTag } from "../messages.ts";
import { materializeMessage, messageToJSON } from "../materialize.ts";
import { fromPostgresTimestamp } from "../time.ts";
import { readString } from "../utf8.ts";
import { BackendMessage, PrimaryKeepalive, type WalMessage } from "../walsender.ts";
import type { BatchMemory } from "./batch-memory.ts";
import { TapeTuple } from "./tuple.ts";
import { copyBytes } from "../copy-bytes.ts";
import { KEEPALIVE, XLOGDATA, STREAMED_XID_SIZE, fieldOffset, fixedSize, offsetTable } from "../layout.ts";

/** A module-local copy: read in every view's constructor, where an imported binding costs a check per read. */
const XID_BYTES: number = STREAMED_XID_SIZE;
// Field offsets from p0, per tag (-1: the kind has no such fixed field), from the layout (layout.ts).
const XID = offsetTable("xid"), FLAGS = offsetTable("flags"), COMMIT_TIME = offsetTable("commitTime");
const COMMIT_LSN = offsetTable("commitLsn"), END_LSN = offsetTable("endLsn"), FINAL_LSN = offsetTable("finalLsn");
const ORIGIN_LSN = offsetTable("originLsn"), LSN = offsetTable("lsn"), RELATION_ID = offsetTable("relationId");
const TYPE_ID = offsetTable("typeId"), OPTIONS = offsetTable("options"), RELATION_COUNT = offsetTable("relationCount");
const FIRST_SEGMENT = offsetTable("firstSegment"), SUB_XID = offsetTable("subXid"), ABORT_LSN = offsetTable("abortLsn");
const ABORT_TIME = offsetTable("abortTime"), PREPARE_LSN = offsetTable("prepareLsn"), PREPARE_TIME = offsetTable("prepareTime");
const PREPARE_END_LSN = offsetTable("prepareEndLsn"), ROLLBACK_END_LSN = offsetTable("rollbackEndLsn");
const ROLLBACK_TIME = offsetTable("rollbackTime");
const RELATION_IDS = offsetTable("relationIds"); // Truncate's OIDs: the first variable field, after the fixed ones
// The XLogData header before a message's tag, and a keepalive's fields after its tag.
const XLOG_HEADER = fixedSize(XLOGDATA);
const WAL_START = fieldOffset(XLOGDATA, "walStart") - XLOG_HEADER, WAL_END = fieldOffset(XLOGDATA, "walEnd") - XLOG_HEADER;
const SEND_TIME = fieldOffset(XLOGDATA, "sendTime") - XLOG_HEADER;
const K_WAL_END = 1 + fieldOffset(KEEPALIVE, "walEnd"), K_SEND_TIME = 1 + fieldOffset(KEEPALIVE, "sendTime");
const K_REPLY = 1 + fieldOffset(KEEPALIVE, "replyRequested");

// Tags, as the getters switch on them.
const O = 0x4f, MSG = 0x4d, R = 0x52, Y = 0x59, I = 0x49, U = 0x55, D = 0x44, T = 0x54;
const BP = 0x62, P = 0x50, CP = 0x4b, RP = 0x72, SP = 0x70;

export class MessageView {
  // `declare`d and assigned in the constructor: on Node 20's V8, class field
  // definitions cost far more than assignments, and a view is made per message.
  declare readonly kind: M.MessageKind;
  declare private readonly b: BatchMemory;
  /** Index of the message in its batch. */
  declare private readonly i: number;
  /** Word position of the record. */
  declare private readonly r: number;
  declare private readonly tag: number;
  /** Offset of the first field after the tag (and the streamed xid). */
  declare private readonly p0: number;
  /** Memoized tuples. */
  declare private oldMemo: Tuple | null | undefined;
  declare private newMemo: Tuple | undefined;
  /** The change's relation, once looked up (null: unknown). */
  declare private relMemo: Relation | null | undefined;

  constructor(b: BatchMemory, i: number, r: number) {
    const t = b.t;
    const head = t[r]!;
    const tag = head & 0xff;
    this.kind = kindOfTag(tag)!;
    this.b = b;
    this.i = i;
    this.r = r;
    this.tag = tag;
    this.p0 = t[r + H_OFFSET]! + 1 + ((head >> 8) & FLAG_XID ? XID_BYTES : 0);
    this.oldMemo = undefined;
    this.newMemo = undefined;
    this.relMemo = undefined;
  }

  // Readers: each checks that the batch is live first.
  private rdU8(o: number): number {
    this.b.live();
    return this.b.u8[o]!;
  }
  private rdU32(o: number): number {
    this.b.live();
    return this.b.dv.getUint32(o);
  }
  private rdLsn(o: number): bigint {
    this.b.live();
    return this.b.dv.getBigUint64(o);
  }
  private rdTime(o: number): bigint {
    this.b.live();
    return fromPostgresTimestamp(this.b.dv.getBigInt64(o));
  }
  /** A String whose (offset, length) is at body word w. */
  private str(w: number): string {
    const b = this.b;
    b.live();
    const at = this.r + HEADER_WORDS + w;
    return readString(b.u8, b.t[at]!, b.t[at + 1]!);
  }
  /** Returns `value` once the batch is checked to be live. */
  private live<T>(value: T): T {
    this.b.live();
    return value;
  }
  private flag(f: number): boolean {
    this.b.live();
    return ((this.b.t[this.r + H_TAG]! >> 8) & f) !== 0;
  }
  private body(w: number): number {
    this.b.live();
    return this.b.t[this.r + HEADER_WORDS + w]!;
  }

  // Fixed fields: `o` is the field's offset from p0 for this kind, -1 if it has none.
  private u32At(o: number): number | undefined {
    return o < 0 ? undefined : this.rdU32(this.p0 + o);
  }
  private lsnAt(o: number): bigint | undefined {
    return o < 0 ? undefined : this.rdLsn(this.p0 + o);
  }
  private timeAt(o: number): bigint | undefined {
    return o < 0 ? undefined : this.rdTime(this.p0 + o);
  }

  // Fields shared by many kinds.
  get xid(): number | undefined {
    const o = XID[this.tag]!;
    if (o >= 0) return this.rdU32(this.p0 + o);
    return this.flag(FLAG_XID) ? this.rdU32(this.p0 - XID_BYTES) : undefined; // streamed
  }
  get flags(): number | undefined {
    const o = FLAGS[this.tag]!;
    return o < 0 ? undefined : this.rdU8(this.p0 + o);
  }
  get commitTime(): bigint | undefined {
    return this.timeAt(COMMIT_TIME[this.tag]!);
  }
  get commitLsn(): bigint | undefined {
    return this.lsnAt(COMMIT_LSN[this.tag]!);
  }
  get endLsn(): bigint | undefined {
    return this.lsnAt(END_LSN[this.tag]!);
  }
  get namespace(): string | undefined {
    return this.tag === R ? this.relation!.namespace : this.tag === Y ? this.str(0) : undefined;
  }

  // Begin
  get finalLsn(): bigint | undefined {
    return this.lsnAt(FINAL_LSN[this.tag]!);
  }

  // Origin
  get originLsn(): bigint | undefined {
    return this.lsnAt(ORIGIN_LSN[this.tag]!);
  }
  get name(): string | undefined {
    return this.tag === O ? this.str(0) : undefined;
  }

  // Message
  get transactional(): boolean | undefined {
    return this.tag === MSG ? (this.rdU8(this.p0 + FLAGS[MSG]!) & 1) !== 0 : undefined;
  }
  get lsn(): bigint | undefined {
    return this.lsnAt(LSN[this.tag]!);
  }
  get prefix(): string | undefined {
    return this.tag === MSG ? this.str(0) : undefined;
  }
  get content(): Uint8Array | undefined {
    if (this.tag !== MSG) return undefined;
    const o = this.body(2);
    return copyBytes(this.b.u8, o, o + this.body(3));
  }
  get contentText(): string | undefined {
    return this.tag === MSG ? this.str(2) : undefined;
  }

  // Relation, Type, and the changes
  get relation(): Relation | undefined {
    const t = this.tag;
    if (t === R) return this.live(this.b.definedAt(this.i));
    if (t !== I && t !== U && t !== D) return undefined;
    if (this.relMemo === undefined) this.relMemo = this.b.relationOf(this.i, this.rdU32(this.p0 + RELATION_ID[t]!)) ?? null;
    return this.live(this.relMemo ?? undefined);
  }
  get relationId(): number | undefined {
    const t = this.tag;
    return t === I || t === U || t === D ? this.rdU32(this.p0 + RELATION_ID[t]!) : t === R ? this.relation!.relationId : undefined;
  }
  get relationName(): string | undefined {
    return this.tag === R ? this.relation!.name : undefined;
  }
  get replicaIdentity(): M.ReplicaIdentity | undefined {
    return this.tag === R ? this.relation!.replicaIdentity : undefined;
  }
  get columns(): readonly M.RelationColumn[] | undefined {
    return this.tag === R ? this.relation!.columns : undefined;
  }
  get typeId(): number | undefined {
    return this.u32At(TYPE_ID[this.tag]!);
  }
  get typeName(): string | undefined {
    return this.tag === Y ? this.str(2) : undefined;
  }

  // Insert, Update, Delete: body = [oldTupleType] [old TUPLE] [new TUPLE] as tape.ts lays out.
  get newTuple(): Tuple | undefined {
    const t = this.tag;
    if (t !== I && t !== U) return undefined;
    this.b.live();
    if (this.newMemo === undefined) {
      let w = this.r + HEADER_WORDS;
      if (t === U) w = this.b.t[w] === 0 ? w + 1 : w + 2 + this.b.t[w + 1]!; // skip the old tuple
      this.newMemo = new TapeTuple(this.b, w, this.relation);
    }
    return this.newMemo;
  }
  get oldTupleType(): M.OldTupleType | null | undefined {
    const t = this.tag;
    if (t !== U && t !== D) return undefined;
    const type = this.body(0);
    return type === 0 ? null : (String.fromCharCode(type) as M.OldTupleType);
  }
  get oldTuple(): Tuple | null | undefined {
    const t = this.tag;
    if (t !== U && t !== D) return undefined;
    this.b.live();
    if (this.oldMemo === undefined) {
      const w = this.r + HEADER_WORDS;
      this.oldMemo = this.b.t[w] === 0 ? null : new TapeTuple(this.b, w + 1, this.relation);
    }
    return this.oldMemo;
  }

  // Truncate
  get options(): number | undefined {
    const o = OPTIONS[this.tag]!;
    return o < 0 ? undefined : this.rdU8(this.p0 + o);
  }
  get cascade(): boolean | undefined {
    return this.tag === T ? (this.rdU8(this.p0 + OPTIONS[T]!) & 1) !== 0 : undefined;
  }
  get restartIdentity(): boolean | undefined {
    return this.tag === T ? (this.rdU8(this.p0 + OPTIONS[T]!) & 2) !== 0 : undefined;
  }
  get relationIds(): number[] | undefined {
    if (this.tag !== T) return undefined;
    const n = this.rdU32(this.p0 + RELATION_COUNT[T]!);
    const at = this.p0 + RELATION_IDS[T]!;
    const ids: number[] = new Array(n);
    for (let k = 0; k < n; k++) ids[k] = this.rdU32(at + 4 * k);
    return ids;
  }
  get relations(): (Relation | undefined)[] | undefined {
    return this.relationIds?.map((id) => this.b.relationOf(this.i, id));
  }

  // Stream Start, Stream Abort
  get firstSegment(): boolean | undefined {
    const o = FIRST_SEGMENT[this.tag]!;
    return o < 0 ? undefined : this.rdU8(this.p0 + o) === 1;
  }
  get subXid(): number | undefined {
    return this.u32At(SUB_XID[this.tag]!);
  }
  get abortLsn(): bigint | null | undefined {
    const o = ABORT_LSN[this.tag]!;
    return o < 0 ? undefined : this.flag(FLAG_ABORT_V4) ? this.rdLsn(this.p0 + o) : null;
  }
  get abortTime(): bigint | null | undefined {
    const o = ABORT_TIME[this.tag]!;
    return o < 0 ? undefined : this.flag(FLAG_ABORT_V4) ? this.rdTime(this.p0 + o) : null;
  }

  // Two-phase
  get gid(): string | undefined {
    const t = this.tag;
    return t === BP || t === P || t === SP || t === CP || t === RP ? this.str(0) : undefined;
  }
  get prepareLsn(): bigint | undefined {
    return this.lsnAt(PREPARE_LSN[this.tag]!);
  }
  get prepareTime(): bigint | undefined {
    return this.timeAt(PREPARE_TIME[this.tag]!);
  }
  get prepareEndLsn(): bigint | undefined {
    return this.lsnAt(PREPARE_END_LSN[this.tag]!);
  }
  get rollbackEndLsn(): bigint | undefined {
    return this.lsnAt(ROLLBACK_END_LSN[this.tag]!);
  }
  get rollbackTime(): bigint | undefined {
    return this.timeAt(ROLLBACK_TIME[this.tag]!);
  }

  // XLogData header: it precedes the tag when the message came in one.
  get walStart(): bigint | undefined {
    return this.flag(FLAG_XLOGDATA) ? this.rdLsn(this.b.t[this.r + H_OFFSET]! + WAL_START) : undefined;
  }
  get walEnd(): bigint | undefined {
    return this.flag(FLAG_XLOGDATA) ? this.rdLsn(this.b.t[this.r + H_OFFSET]! + WAL_END) : undefined;
  }
  get sendTime(): bigint | undefined {
    return this.flag(FLAG_XLOGDATA) ? this.rdTime(this.b.t[this.r + H_OFFSET]! + SEND_TIME) : undefined;
  }

  bytes(): Uint8Array {
    const b = this.b;
    b.live();
    const o = b.t[this.r + H_OFFSET]!;
    return copyBytes(b.u8, o, o + b.t[this.r + H_LENGTH]!);
  }
  materialize(): Record<string, unknown> {
    this.b.live();
    return materializeMessage(this as unknown as M.PgoutputMessage);
  }
  toJSON(): Record<string, unknown> {
    this.b.live();
    return messageToJSON(this as unknown as M.PgoutputMessage);
  }
}

/** The view of message `index` of a batch. */
export function createView(b: BatchMemory, index: number): WalMessage {
  const r = b.recordAt(index);
  const head = b.t[r]!;
  if (head & ((FLAG_KEEPALIVE | FLAG_BACKEND) << 8)) return plainMessage(b, r, head);
  return new MessageView(b, index, r) as unknown as M.PgoutputMessage;
}

/** Keepalives and backend messages are rare: they are read out at once, not viewed. */
function plainMessage(b: BatchMemory, r: number, head: number): WalMessage {
  const o = b.t[r + H_OFFSET]!;
  if (head & (FLAG_KEEPALIVE << 8)) {
    return new PrimaryKeepalive(b.dv.getBigUint64(o + K_WAL_END), fromPostgresTimestamp(b.dv.getBigInt64(o + K_SEND_TIME)), b.u8[o + K_REPLY] !== 0); // any non-zero byte asks, as walreceiver.c reads it
  }
  // A backend message record spans the whole frame: type byte, Int32 length, body.
  return new BackendMessage(String.fromCharCode(head & 0xff), copyBytes(b.u8, o + 5, o + b.t[r + H_LENGTH]!));
}
