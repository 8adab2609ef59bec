/**
 * The message shapes of pg-logical-replication's `PgoutputPlugin` (its
 * vocabulary: `tag`, `relationOid`, `commitEndLsn`, ...), which this drop-in
 * emits, plus the shapes for what that plugin cannot decode (protocol 2+
 * streaming and two-phase messages). Written from its documented output, not
 * imported: this package never loads pg-logical-replication (an optional
 * peer dependency: only its users install it).
 *
 * Conventions (theirs, kept for deep equality):
 * - LSNs: `XXXXXXXX/XXXXXXXX` (upper-case hex, zero-padded halves), `null` for 0/0;
 * - times: `bigint` µs since the Unix epoch;
 * - column values: text through pg's type parser for the column's type
 *   (`pg.types.getTypeParser(typeOid)`), `null` for NULL, a `Buffer` for a
 *   binary-format value, `undefined` for an unchanged TOASTed value (or the
 *   old row's value when the whole old row was sent);
 * - row objects have no prototype (`Object.create(null)`).
 *
 * Where this package differs on purpose (unsigned xids and OIDs, ...), see
 * docs/compat-differences.md.
 */
import type { ProtocolVersion } from "../layout.ts";

/** An LSN as `XXXXXXXX/XXXXXXXX`, or `null` for 0/0. */
export type Lsn = string | null;

/** A decoded row: column name → value. */
export type Row = Record<string, any>;

export interface Options {
  /** pgoutput protocol version: 1, 2 (streaming), 3 (two-phase), 4 (parallel streaming). */
  protoVersion: ProtocolVersion;
  /**
   * Publications, passed on as PostgreSQL's identifier list (as
   * pg-logical-replication does): a mixed-case name must be double-quoted.
   */
  publicationNames: string[];
  /** Logical decoding messages (`pg_logical_emit_message`). */
  messages?: boolean;
  /** Column values in binary (send) format; they are emitted as raw `Buffer`s. */
  binary?: boolean;
  /** Stream in-progress transactions: `true`/`"on"` (protocol 2+), `"parallel"` (protocol 4, PostgreSQL 16+). */
  streaming?: boolean | "on" | "off" | "parallel";
  /** Decode prepared transactions at PREPARE (protocol 3+, slot created with two_phase). */
  twoPhase?: boolean;
  /** `"none"`: only changes without a replication origin (PostgreSQL 16+). */
  origin?: "any" | "none";
}

export interface RelationColumn {
  name: string;
  flags: number;
  typeOid: number;
  typeMod: number;
  /** From a Type message for the column's type, if one came before the Relation message. */
  typeSchema: string | null;
  typeName: string | null;
  /** pg's text parser for the type, as looked up when the Relation message arrived. */
  parser: (raw: any) => any;
}

export interface MessageRelation {
  tag: "relation";
  relationOid: number;
  schema: string;
  name: string;
  replicaIdentity: "default" | "nothing" | "full" | "index";
  columns: RelationColumn[];
  /** Names of the columns flagged as part of the replica identity. */
  keyColumns: string[];
}

export interface MessageBegin {
  tag: "begin";
  /** The final LSN of the transaction (PostgreSQL's name: final_lsn). */
  commitLsn: Lsn;
  commitTime: bigint;
  xid: number;
}

export interface MessageCommit {
  tag: "commit";
  flags: number;
  commitLsn: Lsn;
  commitEndLsn: Lsn;
  commitTime: bigint;
}

export interface MessageOrigin {
  tag: "origin";
  originLsn: Lsn;
  originName: string;
}

export interface MessageType {
  tag: "type";
  typeOid: number;
  typeSchema: string;
  typeName: string;
}

/** Present on change, truncate and logical-message messages inside a Stream Start / Stream Stop block only. */
export interface StreamedXid {
  /** Xid of the streamed (in-progress) transaction. */
  xid?: number;
}

export interface MessageInsert extends StreamedXid {
  tag: "insert";
  relation: MessageRelation;
  new: Row;
}

export interface MessageUpdate extends StreamedXid {
  tag: "update";
  relation: MessageRelation;
  /** The replica identity key (old key sent: the key changed), its other columns absent. */
  key: Row | null;
  /** The whole old row (REPLICA IDENTITY FULL). */
  old: Row | null;
  new: Row;
}

export interface MessageDelete extends StreamedXid {
  tag: "delete";
  relation: MessageRelation;
  key: Row | null;
  old: Row | null;
}

export interface MessageTruncate extends StreamedXid {
  tag: "truncate";
  cascade: boolean;
  restartIdentity: boolean;
  /** The truncated relations; an entry is `undefined` for an OID with no Relation message seen. */
  relations: MessageRelation[];
}

export interface MessageMessage extends StreamedXid {
  tag: "message";
  flags: number;
  transactional: boolean;
  messageLsn: Lsn;
  prefix: string;
  /** The content bytes (a `Buffer` where Node's Buffer exists). */
  content: Uint8Array;
}

// ---------------------------------------------------------------------------
// What pg-logical-replication's PgoutputPlugin cannot decode (it throws
// "unknown pgoutput message"): shapes in the same vocabulary.

/** `S` (protocol 2+): a block of a streamed transaction begins. */
export interface MessageStreamStart {
  tag: "stream_start";
  xid: number;
  firstSegment: boolean;
}

/** `E`: the block ends. */
export interface MessageStreamStop {
  tag: "stream_stop";
}

/** `c`: a streamed transaction committed. */
export interface MessageStreamCommit {
  tag: "stream_commit";
  xid: number;
  flags: number;
  commitLsn: Lsn;
  commitEndLsn: Lsn;
  commitTime: bigint;
}

/** `A`: a streamed transaction (`subXid === xid`) or one of its subtransactions aborted. */
export interface MessageStreamAbort {
  tag: "stream_abort";
  xid: number;
  subXid: number;
  /** With `streaming: "parallel"` (protocol 4) only, else `null`. */
  abortLsn: Lsn;
  /** With `streaming: "parallel"` (protocol 4) only, else `null`. */
  abortTime: bigint | null;
}

/** What `b`, `P` and `p` say of the prepared transaction. */
interface PreparedTransaction {
  prepareLsn: Lsn;
  prepareEndLsn: Lsn;
  prepareTime: bigint;
  xid: number;
  gid: string;
}

/** `b` (protocol 3+): a prepared transaction begins. */
export interface MessageBeginPrepare extends PreparedTransaction {
  tag: "begin_prepare";
}

/** `P`: the transaction was prepared. */
export interface MessagePrepare extends PreparedTransaction {
  tag: "prepare";
  flags: number;
}

/** `K`: a prepared transaction was committed. */
export interface MessageCommitPrepared {
  tag: "commit_prepared";
  flags: number;
  commitLsn: Lsn;
  commitEndLsn: Lsn;
  commitTime: bigint;
  xid: number;
  gid: string;
}

/** `r`: a prepared transaction was rolled back. */
export interface MessageRollbackPrepared {
  tag: "rollback_prepared";
  flags: number;
  prepareEndLsn: Lsn;
  rollbackEndLsn: Lsn;
  prepareTime: bigint;
  rollbackTime: bigint;
  xid: number;
  gid: string;
}

/** `p` (protocol 3+ with streaming): a streamed transaction was prepared. */
export interface MessageStreamPrepare extends PreparedTransaction {
  tag: "stream_prepare";
  flags: number;
}

/** What pg-logical-replication's PgoutputPlugin emits. */
export type Message =
  | MessageBegin | MessageCommit | MessageDelete | MessageInsert | MessageMessage
  | MessageOrigin | MessageRelation | MessageTruncate | MessageType | MessageUpdate;

/** Protocol 2+ messages only this plugin decodes. */
export type StreamMessage = MessageStreamStart | MessageStreamStop | MessageStreamCommit | MessageStreamAbort;
export type TwoPhaseMessage = MessageBeginPrepare | MessagePrepare | MessageCommitPrepared | MessageRollbackPrepared | MessageStreamPrepare;

/** Everything this plugin emits. */
export type AnyMessage = Message | StreamMessage | TwoPhaseMessage;
