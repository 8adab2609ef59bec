/**
 * The wire layout of every pgoutput message, written out once (see
 * PostgreSQL's protocol-logicalrep-message-formats chapter and its proto.c).
 *
 * A message is its tag byte, then its fields in order. The view getters'
 * offsets (views/views.ts), the error field names (kernel/error.ts), the
 * test encoder (devkit/encoder) and the fuzzer's field locator (devkit/fuzz)
 * are derived from these tables; the kernel (kernel/decode.ts, built for
 * wasm and for TS) stays hand-written for speed, and
 * test/layout.test.ts proves they agree with the tables for every kind.
 *
 * Plain data: derive what you need at module load, not per call.
 */
import type { MessageKind } from "./messages.ts";
import {
  F_XID, F_FLAGS, F_LSN, F_END_LSN, F_TIME, F_TIME2, F_NAME, F_NAMESPACE, F_PREFIX, F_CONTENT_LENGTH, F_CONTENT,
  F_RELATION_ID, F_REPLICA_IDENTITY, F_COLUMN_COUNT, F_COLUMN_FLAGS, F_TYPE_ID, F_TUPLE_TYPE, F_TUPLE_COLUMN_COUNT,
  F_OPTIONS, F_RELATION_COUNT, F_RELATION_IDS, F_FIRST_SEGMENT, F_SUB_XID, F_GID, F_WAL_START, F_WAL_END,
  F_SEND_TIME, F_REPLY_REQUESTED,
} from "./tape.ts";

/**
 * Wire types. Fixed: u8, i16, u32 (Int32 read unsigned: xids, OIDs, counts),
 * lsn (uint64), time (int64 µs since 2000-01-01). Variable: cstring
 * (NUL-terminated), bytes (as many as the preceding count field says),
 * tuple (TupleData), columns (the Relation's column list, count before it),
 * oids (Int32 OIDs, count before it).
 */
export type WireType = "u8" | "i16" | "u32" | "lsn" | "time" | "cstring" | "bytes" | "tuple" | "columns" | "oids";

/**
 * When a field is present (always, if unset):
 * - `streamed`: only inside a streamed block (the record's FLAG_XID), right after the tag;
 * - `v4`: only when bytes remain after the fields before it (Stream Abort's protocol-4 fields; FLAG_ABORT_V4);
 * - `old`: only when the message has an old tuple (Update with 'K' or 'O').
 */
export type Presence = "streamed" | "v4" | "old";

export interface LayoutField {
  /** The name views, materialize() and errors use. */
  readonly name: string;
  readonly type: WireType;
  /** The kernel's field code (tape.ts F_*) for errors in this field (for tuple/columns: their first part's). */
  readonly code: number;
  readonly when?: Presence;
  /** The encoder's offset mark, when not `name` (e.g. the tuple-type byte is marked as the tuple). */
  readonly mark?: string;
}

export interface PayloadLayout {
  readonly tag: number;
  /** PostgreSQL's name of the message (protocol-logicalrep-message-formats, protocol-replication). */
  readonly pgName: string;
  readonly fields: readonly LayoutField[];
}

export interface MessageLayout extends PayloadLayout {
  readonly kind: MessageKind;
}

/** Bytes of a fixed-size type, or -1. */
export function sizeOf(type: WireType): number {
  switch (type) {
    case "u8": return 1;
    case "i16": return 2;
    case "u32": return 4;
    case "lsn": case "time": return 8;
    default: return -1;
  }
}

function f(name: string, type: WireType, code: number, when?: Presence, mark?: string): LayoutField {
  return when === undefined && mark === undefined ? { name, type, code } : { name, type, code, when, mark };
}
function m(tag: string, kind: MessageKind, pgName: string, fields: LayoutField[]): MessageLayout {
  return { tag: tag.charCodeAt(0), kind, pgName, fields };
}

const STREAMED_XID = f("xid", "u32", F_XID, "streamed");
const XID = f("xid", "u32", F_XID);
const FLAGS = f("flags", "u8", F_FLAGS);
const GID = f("gid", "cstring", F_GID);
const RELATION_ID = f("relationId", "u32", F_RELATION_ID);
const NEW_TUPLE = [f("tupleType", "u8", F_TUPLE_TYPE, undefined, "newTuple"), f("newTuple", "tuple", F_TUPLE_COLUMN_COUNT)];

/** One layout per pgoutput message kind. */
export const LAYOUTS: readonly MessageLayout[] = [
  m("B", "Begin", "Begin", [f("finalLsn", "lsn", F_LSN), f("commitTime", "time", F_TIME), XID]),
  m("C", "Commit", "Commit", [FLAGS, f("commitLsn", "lsn", F_LSN), f("endLsn", "lsn", F_END_LSN), f("commitTime", "time", F_TIME)]),
  m("O", "Origin", "Origin", [f("originLsn", "lsn", F_LSN), f("name", "cstring", F_NAME)]),
  m("M", "Message", "Message", [
    STREAMED_XID, FLAGS, f("lsn", "lsn", F_LSN), f("prefix", "cstring", F_PREFIX),
    f("contentLength", "u32", F_CONTENT_LENGTH), f("content", "bytes", F_CONTENT),
  ]),
  m("R", "Relation", "Relation", [
    STREAMED_XID, RELATION_ID, f("namespace", "cstring", F_NAMESPACE), f("relationName", "cstring", F_NAME),
    f("replicaIdentity", "u8", F_REPLICA_IDENTITY), f("columnCount", "i16", F_COLUMN_COUNT, undefined, "columns.count"),
    f("columns", "columns", F_COLUMN_FLAGS),
  ]),
  m("Y", "Type", "Type", [STREAMED_XID, f("typeId", "u32", F_TYPE_ID), f("namespace", "cstring", F_NAMESPACE), f("typeName", "cstring", F_NAME)]),
  m("I", "Insert", "Insert", [STREAMED_XID, RELATION_ID, ...NEW_TUPLE]),
  m("U", "Update", "Update", [
    STREAMED_XID, RELATION_ID, f("tupleType", "u8", F_TUPLE_TYPE, "old", "oldTuple"),
    f("oldTuple", "tuple", F_TUPLE_COLUMN_COUNT, "old"), ...NEW_TUPLE,
  ]),
  m("D", "Delete", "Delete", [
    STREAMED_XID, RELATION_ID, f("tupleType", "u8", F_TUPLE_TYPE, undefined, "oldTuple"), f("oldTuple", "tuple", F_TUPLE_COLUMN_COUNT),
  ]),
  m("T", "Truncate", "Truncate", [
    STREAMED_XID, f("relationCount", "u32", F_RELATION_COUNT, undefined, "relationIds.count"), f("options", "u8", F_OPTIONS),
    f("relationIds", "oids", F_RELATION_IDS),
  ]),
  m("S", "StreamStart", "Stream Start", [XID, f("firstSegment", "u8", F_FIRST_SEGMENT)]),
  m("E", "StreamStop", "Stream Stop", []),
  m("c", "StreamCommit", "Stream Commit", [
    XID, FLAGS, f("commitLsn", "lsn", F_LSN), f("endLsn", "lsn", F_END_LSN), f("commitTime", "time", F_TIME),
  ]),
  m("A", "StreamAbort", "Stream Abort", [
    XID, f("subXid", "u32", F_SUB_XID), f("abortLsn", "lsn", F_END_LSN, "v4"), f("abortTime", "time", F_TIME, "v4"),
  ]),
  m("b", "BeginPrepare", "Begin Prepare", [
    f("prepareLsn", "lsn", F_LSN), f("endLsn", "lsn", F_END_LSN), f("prepareTime", "time", F_TIME), XID, GID,
  ]),
  m("P", "Prepare", "Prepare", [
    FLAGS, f("prepareLsn", "lsn", F_LSN), f("endLsn", "lsn", F_END_LSN), f("prepareTime", "time", F_TIME), XID, GID,
  ]),
  m("K", "CommitPrepared", "Commit Prepared", [
    FLAGS, f("commitLsn", "lsn", F_LSN), f("endLsn", "lsn", F_END_LSN), f("commitTime", "time", F_TIME), XID, GID,
  ]),
  m("r", "RollbackPrepared", "Rollback Prepared", [
    FLAGS, f("prepareEndLsn", "lsn", F_LSN), f("rollbackEndLsn", "lsn", F_END_LSN), f("prepareTime", "time", F_TIME),
    f("rollbackTime", "time", F_TIME2), XID, GID,
  ]),
  m("p", "StreamPrepare", "Stream Prepare", [
    FLAGS, f("prepareLsn", "lsn", F_LSN), f("endLsn", "lsn", F_END_LSN), f("prepareTime", "time", F_TIME), XID, GID,
  ]),
];

/**
 * The pgoutput protocol versions (`proto_version`), and the first version
 * of each feature that needs a later one: streamed transactions
 * (`streaming`), two-phase commit (`two_phase`), parallel apply of streamed
 * transactions (`streaming 'parallel'`, which also adds Stream Abort's abort
 * LSN and time: the `v4` fields above).
 */
export const PROTOCOL_VERSIONS = [1, 2, 3, 4] as const;
export type ProtocolVersion = (typeof PROTOCOL_VERSIONS)[number];
export const PROTOCOL_SINCE = { streaming: 2, twoPhase: 3, parallel: 4 } as const satisfies Record<string, ProtocolVersion>;

/** The major PostgreSQL version that brought each protocol version. */
export const PROTOCOL_SERVER: Readonly<Record<ProtocolVersion, number>> = { 1: 10, 2: 14, 3: 15, 4: 16 };

/** The highest protocol version a server (`server_version_num`) speaks. */
export function maxProtocolVersion(serverVersionNum: number): ProtocolVersion {
  let max: ProtocolVersion = PROTOCOL_VERSIONS[0];
  for (const v of PROTOCOL_VERSIONS) if (serverVersionNum >= PROTOCOL_SERVER[v] * 10_000) max = v;
  return max;
}

/** The lowest protocol version a stream with these options needs. */
export function protocolNeeded(streaming: "off" | "on" | "parallel", twoPhase: boolean): ProtocolVersion {
  const since = PROTOCOL_SINCE;
  return streaming === "parallel" ? since.parallel : twoPhase ? since.twoPhase : streaming === "on" ? since.streaming : PROTOCOL_VERSIONS[0];
}

/** Whether `n` is a protocol version (an integer among PROTOCOL_VERSIONS). */
export function isProtocolVersion(n: unknown): n is ProtocolVersion {
  return (PROTOCOL_VERSIONS as readonly unknown[]).includes(n);
}

/** The walsender's CopyData payloads around the messages: 'w' XLogData (its header; a pgoutput message follows) and 'k' keepalive. */
export const XLOGDATA: PayloadLayout = {
  tag: 0x77, pgName: "XLogData",
  fields: [f("walStart", "lsn", F_WAL_START), f("walEnd", "lsn", F_WAL_END), f("sendTime", "time", F_SEND_TIME)],
};
export const KEEPALIVE: PayloadLayout = {
  tag: 0x6b, pgName: "Primary keepalive message",
  fields: [f("walEnd", "lsn", F_WAL_END), f("sendTime", "time", F_SEND_TIME), f("replyRequested", "u8", F_REPLY_REQUESTED)],
};

const byTag: (MessageLayout | undefined)[] = [];
for (const l of LAYOUTS) byTag[l.tag] = l;

/** The layout of a pgoutput message tag. */
export function layoutOf(tag: number): MessageLayout | undefined {
  return byTag[tag];
}

/** Bytes of the streamed xid, when a message carries one. */
export const STREAMED_XID_SIZE = sizeOf(STREAMED_XID.type);

/**
 * Offset of a fixed field from the first byte after the tag and the
 * streamed xid (a view's p0; the streamed xid itself is at -STREAMED_XID_SIZE);
 * -1 when the kind has no such field or it follows a variable-size one.
 */
export function fieldOffset(l: PayloadLayout, name: string): number {
  let o = 0;
  for (const fl of l.fields) {
    if (fl.when === "streamed") continue;
    if (fl.name === name) return o;
    const n = sizeOf(fl.type);
    if (n < 0) return -1;
    o += n;
  }
  return -1;
}

/** Bytes of a layout whose fields are all fixed and always present (-1 otherwise). */
export function fixedSize(l: PayloadLayout): number {
  let o = 0;
  for (const fl of l.fields) {
    const n = sizeOf(fl.type);
    if (n < 0 || fl.when !== undefined) return -1;
    o += n;
  }
  return o;
}

/** The offset of fixed field `name` of message `tag` from the first byte after its tag and streamed xid (fieldOffset). */
export function tagFieldOffset(tag: number, name: string): number {
  return fieldOffset(layoutOf(tag)!, name);
}

/** Per tag (0-255), the offset fieldOffset() gives for `name` (-1: none), for getters to index with their tag. */
export function offsetTable(name: string): Int8Array {
  const t = new Int8Array(256).fill(-1);
  for (const l of LAYOUTS) t[l.tag] = fieldOffset(l, name);
  return t;
}
