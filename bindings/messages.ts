/**
 * The public shapes of decoded pgoutput messages: one interface per message
 * of PostgreSQL's "Logical Replication Message Formats", discriminated by
 * `kind` (PostgreSQL's name for the message). Field names are camelCase forms
 * of the protocol documentation's field descriptions.
 *
 * Both backends (the wasm decoder and the pure-TS baseline) return objects
 * that implement these interfaces. The objects are views over the decoder's
 * input: valid until the decoder's next call, after which touching them
 * throws a `PgoutputError` with code `STALE_VIEW`. Call `materialize()` for
 * plain objects that live on, or `toJSON()` for a JSON-safe form.
 *
 * Value conventions:
 * - xids and OIDs are unsigned 32-bit numbers (0 .. 2^32-1);
 * - LSNs are `bigint` (see `lsn.ts` for `formatLsn`/`parseLsn`);
 * - timestamps are `bigint` microseconds since the Unix epoch
 *   (see `time.ts` for Date and ISO helpers).
 *
 * @example
 * ```ts
 * const msg = decoder.decode(bytes);
 * if (msg.kind === "Insert") console.log(msg.relation?.name, msg.newTuple.text("id"));
 * ```
 */
import type { Relation, RelationColumn, ReplicaIdentity } from "./relation.ts";
import type { Tuple } from "./tuple.ts";

/** Message kinds, by the one-byte tag PostgreSQL sends. */
export const MessageTag = {
  Begin: 0x42, // B
  Commit: 0x43, // C
  Origin: 0x4f, // O
  Message: 0x4d, // M
  Relation: 0x52, // R
  Type: 0x59, // Y
  Insert: 0x49, // I
  Update: 0x55, // U
  Delete: 0x44, // D
  Truncate: 0x54, // T
  StreamStart: 0x53, // S
  StreamStop: 0x45, // E
  StreamCommit: 0x63, // c
  StreamAbort: 0x41, // A
  BeginPrepare: 0x62, // b
  Prepare: 0x50, // P
  CommitPrepared: 0x4b, // K
  RollbackPrepared: 0x72, // r
  StreamPrepare: 0x70, // p
} as const;

export type MessageKind = keyof typeof MessageTag;

const kindByTag: (MessageKind | undefined)[] = [];
for (const [name, tag] of Object.entries(MessageTag)) kindByTag[tag] = name as MessageKind;

/** The message kind for a tag byte, or `undefined` for a byte that is no pgoutput tag. */
export function kindOfTag(tag: number): MessageKind | undefined {
  return kindByTag[tag];
}

/** Members every message has. */
export interface MessageBase {
  /** PostgreSQL's name of the message. */
  readonly kind: MessageKind;
  /** A copy of the message's bytes, tag included. */
  bytes(): Uint8Array;
  /** For a message that came in an XLogData: the WAL start of the data (its LSN), else `undefined`. */
  readonly walStart?: bigint;
  /** For a message that came in an XLogData: the server's current end of WAL. */
  readonly walEnd?: bigint;
  /** For a message that came in an XLogData: the server's clock at transmission, µs since the Unix epoch. */
  readonly sendTime?: bigint;
  /** A plain object with the same fields (bigint kept), independent of the decoder's memory. */
  materialize(): Record<string, unknown>;
  /** A JSON-safe plain object: LSNs as `X/Y`, 64-bit numbers as strings, bytes as base64. */
  toJSON(): Record<string, unknown>;
}

/** Fields of change and schema messages that carry the streamed transaction's xid. */
export interface Streamed {
  /** Xid of the streamed transaction; only present (not `undefined`) inside a Stream Start / Stream Stop block. */
  readonly xid: number | undefined;
}

/**
 * On the Begin and Commit (BeginPrepare and Prepare) that the pipeline makes
 * from a streamed transaction's end, when it replays the transaction's
 * blocks as a plain one (pipeline/resequence.ts); never on a decoded message.
 */
export interface Replayed {
  readonly streamed?: true;
}

/** `B`: start of a (non-streamed) transaction. */
export interface Begin extends MessageBase, Replayed {
  readonly kind: "Begin";
  /** The final LSN of the transaction. */
  readonly finalLsn: bigint;
  /** Commit timestamp of the transaction, µs since the Unix epoch. */
  readonly commitTime: bigint;
  /** Xid of the transaction. */
  readonly xid: number;
}

/** `C`: end of a transaction. */
export interface Commit extends MessageBase, Replayed {
  readonly kind: "Commit";
  /** Flags; currently unused (0). */
  readonly flags: number;
  /** The LSN of the commit. */
  readonly commitLsn: bigint;
  /** The end LSN of the transaction. */
  readonly endLsn: bigint;
  /** Commit timestamp, µs since the Unix epoch. */
  readonly commitTime: bigint;
}

/** `O`: the transaction originated on another server. */
export interface Origin extends MessageBase {
  readonly kind: "Origin";
  /** The LSN of the commit on the origin server. */
  readonly originLsn: bigint;
  /** Name of the origin. */
  readonly name: string;
}

/** `M`: a logical decoding message (`pg_logical_emit_message`). */
export interface Message extends MessageBase, Streamed {
  readonly kind: "Message";
  /** Flags; bit 0 set means transactional. */
  readonly flags: number;
  /** Whether the message was emitted transactionally (flags bit 0). */
  readonly transactional: boolean;
  /** The LSN of the logical decoding message. */
  readonly lsn: bigint;
  /** The prefix of the logical decoding message. */
  readonly prefix: string;
  /** The content (arbitrary bytes; a copy). */
  readonly content: Uint8Array;
  /** The content decoded as UTF-8 (invalid sequences become U+FFFD). */
  readonly contentText: string;
}

/** `R`: the description of a relation, sent before its first change and whenever it changes. */
export interface RelationMessage extends MessageBase, Streamed {
  readonly kind: "Relation";
  /** OID of the relation. */
  readonly relationId: number;
  /** Namespace (empty string for `pg_catalog`). */
  readonly namespace: string;
  /** Relation name. */
  readonly relationName: string;
  /** Replica identity setting: `d` default, `n` nothing, `f` full, `i` index. */
  readonly replicaIdentity: ReplicaIdentity;
  /** The columns, in order. */
  readonly columns: readonly RelationColumn[];
  /** The cached relation this message defines (outlives the batch). */
  readonly relation: Relation;
}

/** The relation cache owns the shape of a relation's columns (relation.ts); a Relation message has the same. */
export type { RelationColumn, ReplicaIdentity } from "./relation.ts";

/** `Y`: a non-built-in data type, sent before its first use. */
export interface TypeMessage extends MessageBase, Streamed {
  readonly kind: "Type";
  /** OID of the data type. */
  readonly typeId: number;
  /** Namespace (empty string for `pg_catalog`). */
  readonly namespace: string;
  /** Name of the data type. */
  readonly typeName: string;
}

/** Members of Insert, Update and Delete. */
interface Change extends Streamed {
  /** OID of the relation the change belongs to. */
  readonly relationId: number;
  /** The relation from the decoder's cache, `undefined` when no Relation message for it was seen. */
  readonly relation: Relation | undefined;
}

/** `I`: a new row. */
export interface Insert extends MessageBase, Change {
  readonly kind: "Insert";
  /** The new row. */
  readonly newTuple: Tuple;
}

/** Which old row an Update or Delete carries: `K` the key columns only, `O` the whole old row (REPLICA IDENTITY FULL). */
export type OldTupleType = "K" | "O";

/** `U`: a changed row. */
export interface Update extends MessageBase, Change {
  readonly kind: "Update";
  /** `K`, `O`, or `null` when no old row was sent (the key did not change). */
  readonly oldTupleType: OldTupleType | null;
  /** The key (`K`) or the whole old row (`O`), or `null`. */
  readonly oldTuple: Tuple | null;
  /** The new row. Columns whose TOASTed value did not change are of kind `unchanged`. */
  readonly newTuple: Tuple;
}

/** `D`: a removed row. */
export interface Delete extends MessageBase, Change {
  readonly kind: "Delete";
  /** `K` (key columns, others are null) or `O` (the whole old row). */
  readonly oldTupleType: OldTupleType;
  /** The key or the whole old row. */
  readonly oldTuple: Tuple;
}

/** `T`: one TRUNCATE over one or more relations. */
export interface Truncate extends MessageBase, Streamed {
  readonly kind: "Truncate";
  /** Option bits: 1 CASCADE, 2 RESTART IDENTITY. */
  readonly options: number;
  readonly cascade: boolean;
  readonly restartIdentity: boolean;
  /** OIDs of the truncated relations. */
  readonly relationIds: readonly number[];
  /** The cached relations (an entry is `undefined` when unknown). */
  readonly relations: readonly (Relation | undefined)[];
}

/** `S`: start of a block of a streamed (in-progress) transaction. */
export interface StreamStart extends MessageBase {
  readonly kind: "StreamStart";
  /** Xid of the transaction. */
  readonly xid: number;
  /** Whether this is the first stream segment for this xid. */
  readonly firstSegment: boolean;
}

/** `E`: end of a block of a streamed transaction. */
export interface StreamStop extends MessageBase {
  readonly kind: "StreamStop";
}

/** `c`: commit of a streamed transaction. */
export interface StreamCommit extends MessageBase {
  readonly kind: "StreamCommit";
  /** Xid of the transaction. */
  readonly xid: number;
  /** Flags; currently unused (0). */
  readonly flags: number;
  readonly commitLsn: bigint;
  readonly endLsn: bigint;
  /** Commit timestamp, µs since the Unix epoch. */
  readonly commitTime: bigint;
}

/** `A`: abort of a streamed transaction or of one of its subtransactions. */
export interface StreamAbort extends MessageBase {
  readonly kind: "StreamAbort";
  /** Xid of the transaction. */
  readonly xid: number;
  /** Xid of the aborted subtransaction; equal to `xid` when the whole transaction aborted. */
  readonly subXid: number;
  /** LSN of the abort; only with `streaming = parallel` (protocol 4), else `null`. */
  readonly abortLsn: bigint | null;
  /** Abort timestamp, µs since the Unix epoch; only with protocol 4 parallel streaming, else `null`. */
  readonly abortTime: bigint | null;
}

/** Fields of the two-phase messages that name a prepared transaction. */
interface TwoPhase {
  /** Xid of the transaction. */
  readonly xid: number;
  /** The user-defined GID of the prepared transaction. */
  readonly gid: string;
}

/** `b`: start of a prepared transaction. */
export interface BeginPrepare extends MessageBase, TwoPhase, Replayed {
  readonly kind: "BeginPrepare";
  readonly prepareLsn: bigint;
  readonly endLsn: bigint;
  /** Prepare timestamp, µs since the Unix epoch. */
  readonly prepareTime: bigint;
}

/** `P`: a transaction was prepared. */
export interface Prepare extends MessageBase, TwoPhase, Replayed {
  readonly kind: "Prepare";
  readonly flags: number;
  readonly prepareLsn: bigint;
  readonly endLsn: bigint;
  readonly prepareTime: bigint;
}

/** `K`: a prepared transaction was committed. */
export interface CommitPrepared extends MessageBase, TwoPhase {
  readonly kind: "CommitPrepared";
  readonly flags: number;
  readonly commitLsn: bigint;
  readonly endLsn: bigint;
  readonly commitTime: bigint;
}

/** `r`: a prepared transaction was rolled back. */
export interface RollbackPrepared extends MessageBase, TwoPhase {
  readonly kind: "RollbackPrepared";
  readonly flags: number;
  readonly prepareEndLsn: bigint;
  readonly rollbackEndLsn: bigint;
  readonly prepareTime: bigint;
  readonly rollbackTime: bigint;
}

/** `p`: a streamed transaction was prepared. */
export interface StreamPrepare extends MessageBase, TwoPhase {
  readonly kind: "StreamPrepare";
  readonly flags: number;
  readonly prepareLsn: bigint;
  readonly endLsn: bigint;
  readonly prepareTime: bigint;
}

/** Any decoded pgoutput message; switch on `kind`. */
export type PgoutputMessage =
  | Begin | Commit | Origin | Message | RelationMessage | TypeMessage
  | Insert | Update | Delete | Truncate
  | StreamStart | StreamStop | StreamCommit | StreamAbort
  | BeginPrepare | Prepare | CommitPrepared | RollbackPrepared | StreamPrepare;
