/**
 * Plain-object and JSON forms of messages, shared by both backends: they
 * read a message through its public interface, so the wasm views and the
 * baseline produce the same objects by construction.
 */
import type { MessageKind, PgoutputMessage } from "./messages.ts";
import type { Tuple } from "./tuple.ts";
import { formatLsn } from "./lsn.ts";
import { toBase64 } from "./utf8.ts";

/** The fields of each message kind, in protocol order (besides `kind`). */
export const MESSAGE_FIELDS: Record<MessageKind, readonly string[]> = {
  Begin: ["finalLsn", "commitTime", "xid"],
  Commit: ["flags", "commitLsn", "endLsn", "commitTime"],
  Origin: ["originLsn", "name"],
  Message: ["xid", "flags", "transactional", "lsn", "prefix", "content"],
  Relation: ["xid", "relationId", "namespace", "relationName", "replicaIdentity", "columns"],
  Type: ["xid", "typeId", "namespace", "typeName"],
  Insert: ["xid", "relationId", "newTuple"],
  Update: ["xid", "relationId", "oldTupleType", "oldTuple", "newTuple"],
  Delete: ["xid", "relationId", "oldTupleType", "oldTuple"],
  Truncate: ["xid", "options", "cascade", "restartIdentity", "relationIds"],
  StreamStart: ["xid", "firstSegment"],
  StreamStop: [],
  StreamCommit: ["xid", "flags", "commitLsn", "endLsn", "commitTime"],
  StreamAbort: ["xid", "subXid", "abortLsn", "abortTime"],
  BeginPrepare: ["prepareLsn", "endLsn", "prepareTime", "xid", "gid"],
  Prepare: ["flags", "prepareLsn", "endLsn", "prepareTime", "xid", "gid"],
  CommitPrepared: ["flags", "commitLsn", "endLsn", "commitTime", "xid", "gid"],
  RollbackPrepared: ["flags", "prepareEndLsn", "rollbackEndLsn", "prepareTime", "rollbackTime", "xid", "gid"],
  StreamPrepare: ["flags", "prepareLsn", "endLsn", "prepareTime", "xid", "gid"],
};

const TUPLE_FIELDS = new Set(["newTuple", "oldTuple"]);
/** Fields every message may have, when it came in an XLogData. */
const XLOGDATA_FIELDS = ["walStart", "walEnd", "sendTime"] as const;
/** bigint fields that are LSNs (the rest are times). */
const LSN_FIELDS = new Set([
  "finalLsn", "commitLsn", "endLsn", "originLsn", "lsn", "abortLsn", "prepareLsn", "prepareEndLsn", "rollbackEndLsn",
  "walStart", "walEnd",
]);

/** Copies a message into a plain object (bigints kept, tuples as column arrays, relation named). */
export function materializeMessage(msg: PgoutputMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { kind: msg.kind };
  const src = msg as unknown as Record<string, unknown>;
  for (const field of MESSAGE_FIELDS[msg.kind]) {
    const value = src[field];
    if (value === undefined) continue; // xid outside a streamed block
    if (TUPLE_FIELDS.has(field)) out[field] = value === null ? null : (value as Tuple).materialize();
    else if (field === "columns") out[field] = (value as object[]).map((c) => ({ ...c }));
    else if (field === "relationIds") out[field] = [...(value as number[])];
    else out[field] = value;
  }
  for (const field of XLOGDATA_FIELDS) if (msg[field] !== undefined) out[field] = msg[field];
  if ("relation" in msg && msg.kind !== "Relation" && msg.relation !== undefined) {
    out.namespace = msg.relation.namespace;
    out.relationName = msg.relation.name;
  }
  return out;
}

/** A JSON-safe object: LSNs as `X/Y`, other 64-bit numbers as decimal strings, bytes as base64. */
export function messageToJSON(msg: PgoutputMessage): Record<string, unknown> {
  const out = materializeMessage(msg);
  for (const [key, value] of Object.entries(out)) {
    if (typeof value === "bigint") out[key] = LSN_FIELDS.has(key) ? formatLsn(value) : value.toString();
    else if (value instanceof Uint8Array) out[key] = toBase64(value);
    else if (TUPLE_FIELDS.has(key) && value !== null) out[key] = (src(msg, key) as Tuple).toJSON();
  }
  return out;
}

function src(msg: PgoutputMessage, key: string): unknown {
  return (msg as unknown as Record<string, unknown>)[key];
}
