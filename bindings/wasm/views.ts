/**
 * Message views of the wasm backend: two numbers (batch, record) and getters
 * that read the message's bytes where the tape says its fields are. Nothing
 * is decoded until a getter is called. Field offsets follow the protocol
 * layout after the tag byte (and the streamed xid, when FLAG_XID is set).
 */
import type * as M from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import { H_TAG, H_OFFSET, H_LENGTH, HEADER_WORDS, FLAG_XID, FLAG_ABORT_V4, FLAG_XLOGDATA, FLAG_KEEPALIVE, FLAG_BACKEND } from "../tape.ts";
import { BackendMessage, PrimaryKeepalive, type WalMessage } from "../walsender.ts";
import { materializeMessage, messageToJSON } from "../materialize.ts";
import { fromPostgresTimestamp } from "../time.ts";
import { readString } from "../utf8.ts";
import type { WasmBatch } from "./batch.ts";
import { WasmTuple } from "./tuple.ts";

abstract class View implements M.MessageBase {
  abstract readonly kind: M.MessageKind;
  protected readonly b: WasmBatch;
  /** Index of the message in its batch. */
  protected readonly i: number;
  /** Word position of the record. */
  protected readonly r: number;

  constructor(b: WasmBatch, i: number, r: number) {
    this.b = b;
    this.i = i;
    this.r = r;
  }

  /** Returns `value` if the batch is still live (memoized members check too). */
  protected live<T>(value: T): T {
    this.b.live();
    return value;
  }

  /** Offset of the first field after the tag (and the streamed xid). */
  protected get p0(): number {
    const b = this.b;
    b.live();
    const t = b.t;
    return t[this.r + H_OFFSET]! + 1 + ((t[this.r + H_TAG]! >> 8) & FLAG_XID ? 4 : 0);
  }

  /** The streamed transaction's xid, if the message carries one. */
  protected get streamedXid(): number | undefined {
    const b = this.b;
    b.live();
    return (b.t[this.r + H_TAG]! >> 8) & FLAG_XID ? b.dv.getUint32(b.t[this.r + H_OFFSET]! + 1) : undefined;
  }

  /** The XLogData header fields, when the message came in one (its 24 bytes precede the tag). */
  get walStart(): bigint | undefined {
    return this.#xlog(24);
  }
  get walEnd(): bigint | undefined {
    return this.#xlog(16);
  }
  get sendTime(): bigint | undefined {
    const t = this.#xlog(8);
    return t === undefined ? undefined : fromPostgresTimestamp(BigInt.asIntN(64, t));
  }
  #xlog(back: number): bigint | undefined {
    const b = this.b;
    b.live();
    return (b.t[this.r + H_TAG]! >> 8) & FLAG_XLOGDATA ? b.dv.getBigUint64(b.t[this.r + H_OFFSET]! - back) : undefined;
  }

  /** Word position of the record's body. */
  protected get body(): number {
    this.b.live();
    return this.r + HEADER_WORDS;
  }

  protected rdU8(o: number): number {
    return this.b.u8[o]!;
  }
  protected rdU32(o: number): number {
    return this.b.dv.getUint32(o);
  }
  protected rdLsn(o: number): bigint {
    return this.b.dv.getBigUint64(o);
  }
  protected rdTime(o: number): bigint {
    return fromPostgresTimestamp(this.b.dv.getBigInt64(o));
  }
  /** A String whose (offset, length) is at body word w. */
  protected str(w: number): string {
    const b = this.b;
    b.live();
    return readString(b.u8, b.t[w]!, b.t[w + 1]!);
  }

  bytes(): Uint8Array {
    const b = this.b;
    b.live();
    const o = b.t[this.r + H_OFFSET]!;
    return b.u8.slice(o, o + b.t[this.r + H_LENGTH]!);
  }
  materialize(): Record<string, unknown> {
    return materializeMessage(this as unknown as M.PgoutputMessage);
  }
  toJSON(): Record<string, unknown> {
    return messageToJSON(this as unknown as M.PgoutputMessage);
  }
}

class BeginView extends View implements M.Begin {
  get kind() { return this.live("Begin" as const); }
  get finalLsn() { return this.rdLsn(this.p0); }
  get commitTime() { return this.rdTime(this.p0 + 8); }
  get xid() { return this.rdU32(this.p0 + 16); }
}

class CommitView extends View implements M.Commit {
  get kind() { return this.live("Commit" as const); }
  get flags() { return this.rdU8(this.p0); }
  get commitLsn() { return this.rdLsn(this.p0 + 1); }
  get endLsn() { return this.rdLsn(this.p0 + 9); }
  get commitTime() { return this.rdTime(this.p0 + 17); }
}

class OriginView extends View implements M.Origin {
  get kind() { return this.live("Origin" as const); }
  get originLsn() { return this.rdLsn(this.p0); }
  get name() { return this.str(this.body); }
}

class MessageView extends View implements M.Message {
  get kind() { return this.live("Message" as const); }
  get xid() { return this.streamedXid; }
  get flags() { return this.rdU8(this.p0); }
  get transactional() { return (this.flags & 1) !== 0; }
  get lsn() { return this.rdLsn(this.p0 + 1); }
  get prefix() { return this.str(this.body); }
  get content() {
    const w = this.body + 2;
    const o = this.b.t[w]!;
    return this.b.u8.slice(o, o + this.b.t[w + 1]!);
  }
  get contentText() { return this.str(this.body + 2); }
}

class RelationView extends View implements M.RelationMessage {
  get kind() { return this.live("Relation" as const); }
  get xid() { return this.streamedXid; }
  get relation(): Relation {
    this.b.live();
    return this.b.relations[this.i] as Relation;
  }
  get relationId() { return this.relation.relationId; }
  get namespace() { return this.relation.namespace; }
  get relationName() { return this.relation.name; }
  get replicaIdentity() { return this.relation.replicaIdentity; }
  get columns() { return this.relation.columns; }
}

class TypeView extends View implements M.TypeMessage {
  get kind() { return this.live("Type" as const); }
  get xid() { return this.streamedXid; }
  get typeId() { return this.rdU32(this.p0); }
  get namespace() { return this.str(this.body); }
  get typeName() { return this.str(this.body + 2); }
}

abstract class ChangeView extends View {
  get xid() { return this.streamedXid; }
  get relationId() { return this.rdU32(this.p0); }
  get relation(): Relation | undefined {
    this.b.live();
    return this.b.relations[this.i] as Relation | undefined;
  }
  protected tuple(w: number): Tuple {
    return new WasmTuple(this.b, w, this.relation);
  }
  /** The word after a TUPLE that starts at word w. */
  protected afterTuple(w: number): number {
    return w + 1 + this.b.t[w]!;
  }
}

class InsertView extends ChangeView implements M.Insert {
  #new: Tuple | undefined;
  get kind() { return this.live("Insert" as const); }
  get newTuple() { return this.live((this.#new ??= this.tuple(this.body))); }
}

class UpdateView extends ChangeView implements M.Update {
  #old: Tuple | null | undefined;
  #new: Tuple | undefined;
  get kind() { return this.live("Update" as const); }
  get oldTupleType() {
    const type = this.b.t[this.body]!;
    return type === 0 ? null : (String.fromCharCode(type) as M.OldTupleType);
  }
  get oldTuple() {
    if (this.#old === undefined) {
      const w = this.body;
      this.#old = this.b.t[w] === 0 ? null : this.tuple(w + 1);
    }
    return this.live(this.#old);
  }
  get newTuple() {
    if (this.#new === undefined) {
      const w = this.body;
      this.#new = this.tuple(this.b.t[w] === 0 ? w + 1 : this.afterTuple(w + 1));
    }
    return this.live(this.#new);
  }
}

class DeleteView extends ChangeView implements M.Delete {
  #old: Tuple | undefined;
  get kind() { return this.live("Delete" as const); }
  get oldTupleType() { return String.fromCharCode(this.b.t[this.body]!) as M.OldTupleType; }
  get oldTuple() { return this.live((this.#old ??= this.tuple(this.body + 1))); }
}

class TruncateView extends View implements M.Truncate {
  get kind() { return this.live("Truncate" as const); }
  get xid() { return this.streamedXid; }
  get options() { return this.rdU8(this.p0 + 4); }
  get cascade() { return (this.options & 1) !== 0; }
  get restartIdentity() { return (this.options & 2) !== 0; }
  get relationIds() {
    const p = this.p0;
    const n = this.rdU32(p);
    const ids: number[] = new Array(n);
    for (let k = 0; k < n; k++) ids[k] = this.rdU32(p + 5 + 4 * k);
    return ids;
  }
  get relations() {
    this.b.live();
    return this.b.relations[this.i] as (Relation | undefined)[];
  }
}

class StreamStartView extends View implements M.StreamStart {
  get kind() { return this.live("StreamStart" as const); }
  get xid() { return this.rdU32(this.p0); }
  get firstSegment() { return this.rdU8(this.p0 + 4) === 1; }
}

class StreamStopView extends View implements M.StreamStop {
  get kind() { return this.live("StreamStop" as const); }
}

class StreamCommitView extends View implements M.StreamCommit {
  get kind() { return this.live("StreamCommit" as const); }
  get xid() { return this.rdU32(this.p0); }
  get flags() { return this.rdU8(this.p0 + 4); }
  get commitLsn() { return this.rdLsn(this.p0 + 5); }
  get endLsn() { return this.rdLsn(this.p0 + 13); }
  get commitTime() { return this.rdTime(this.p0 + 21); }
}

class StreamAbortView extends View implements M.StreamAbort {
  get kind() { return this.live("StreamAbort" as const); }
  get xid() { return this.rdU32(this.p0); }
  get subXid() { return this.rdU32(this.p0 + 4); }
  private get v4() { return this.live(((this.b.t[this.r + H_TAG]! >> 8) & FLAG_ABORT_V4) !== 0); }
  get abortLsn() { return this.v4 ? this.rdLsn(this.p0 + 8) : null; }
  get abortTime() { return this.v4 ? this.rdTime(this.p0 + 16) : null; }
}

abstract class TwoPhaseView extends View {
  get gid() { return this.str(this.body); }
}

class BeginPrepareView extends TwoPhaseView implements M.BeginPrepare {
  get kind() { return this.live("BeginPrepare" as const); }
  get prepareLsn() { return this.rdLsn(this.p0); }
  get endLsn() { return this.rdLsn(this.p0 + 8); }
  get prepareTime() { return this.rdTime(this.p0 + 16); }
  get xid() { return this.rdU32(this.p0 + 24); }
}

/** Prepare, Stream Prepare and Commit Prepared share one layout: flags, LSN, end LSN, time, xid, GID. */
abstract class PreparedView extends TwoPhaseView {
  get flags() { return this.rdU8(this.p0); }
  get endLsn() { return this.rdLsn(this.p0 + 9); }
  get xid() { return this.rdU32(this.p0 + 25); }
}

class PrepareView extends PreparedView implements M.Prepare {
  get kind() { return this.live("Prepare" as const); }
  get prepareLsn() { return this.rdLsn(this.p0 + 1); }
  get prepareTime() { return this.rdTime(this.p0 + 17); }
}

class StreamPrepareView extends PreparedView implements M.StreamPrepare {
  get kind() { return this.live("StreamPrepare" as const); }
  get prepareLsn() { return this.rdLsn(this.p0 + 1); }
  get prepareTime() { return this.rdTime(this.p0 + 17); }
}

class CommitPreparedView extends PreparedView implements M.CommitPrepared {
  get kind() { return this.live("CommitPrepared" as const); }
  get commitLsn() { return this.rdLsn(this.p0 + 1); }
  get commitTime() { return this.rdTime(this.p0 + 17); }
}

class RollbackPreparedView extends TwoPhaseView implements M.RollbackPrepared {
  get kind() { return this.live("RollbackPrepared" as const); }
  get flags() { return this.rdU8(this.p0); }
  get prepareEndLsn() { return this.rdLsn(this.p0 + 1); }
  get rollbackEndLsn() { return this.rdLsn(this.p0 + 9); }
  get prepareTime() { return this.rdTime(this.p0 + 17); }
  get rollbackTime() { return this.rdTime(this.p0 + 25); }
  get xid() { return this.rdU32(this.p0 + 33); }
}

type ViewClass = new (b: WasmBatch, i: number, r: number) => View;

/** View classes by tag byte. */
const VIEWS: ViewClass[] = [];
VIEWS[0x42] = BeginView;
VIEWS[0x43] = CommitView;
VIEWS[0x4f] = OriginView;
VIEWS[0x4d] = MessageView;
VIEWS[0x52] = RelationView;
VIEWS[0x59] = TypeView;
VIEWS[0x49] = InsertView;
VIEWS[0x55] = UpdateView;
VIEWS[0x44] = DeleteView;
VIEWS[0x54] = TruncateView;
VIEWS[0x53] = StreamStartView;
VIEWS[0x45] = StreamStopView;
VIEWS[0x63] = StreamCommitView;
VIEWS[0x41] = StreamAbortView;
VIEWS[0x62] = BeginPrepareView;
VIEWS[0x50] = PrepareView;
VIEWS[0x4b] = CommitPreparedView;
VIEWS[0x72] = RollbackPreparedView;
VIEWS[0x70] = StreamPrepareView;

/** The view of message `index` of a batch (the kernel only records known tags). */
export function createView(b: WasmBatch, index: number): WalMessage {
  const r = b.records[index]!;
  const head = b.t[r]!;
  if (head & ((FLAG_KEEPALIVE | FLAG_BACKEND) << 8)) return plainMessage(b, r, head);
  const View = VIEWS[head & 0xff]!;
  return new View(b, index, r) as unknown as M.PgoutputMessage;
}

/** Keepalives and backend messages are rare: they are read out at once, not viewed. */
function plainMessage(b: WasmBatch, r: number, head: number): WalMessage {
  const o = b.t[r + H_OFFSET]!;
  if (head & (FLAG_KEEPALIVE << 8)) {
    return new PrimaryKeepalive(b.dv.getBigUint64(o + 1), fromPostgresTimestamp(b.dv.getBigInt64(o + 9)), b.u8[o + 17] === 1);
  }
  // A backend message record spans the whole frame: type byte, Int32 length, body.
  return new BackendMessage(String.fromCharCode(head & 0xff), b.u8.slice(o + 5, o + b.t[r + H_LENGTH]!));
}
