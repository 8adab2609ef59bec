/**
 * Turns this package's decoded messages (views, PostgreSQL's names) into
 * pg-logical-replication's plain objects (its names, see types.ts), keeping
 * what its PgoutputPlugin keeps (relations.ts). A tape decoder's messages
 * mostly take the record path instead (record.ts), which reads the tape
 * without views and comes here for the kinds it does not read itself.
 *
 * Everything returned is a plain object that stays valid after the decoder's
 * next call.
 */
import type { PgoutputMessage } from "../messages.ts";
import type { Tuple } from "../tuple.ts";
import type * as T from "./types.ts";
import { compatLsn, compatLsnOrNull } from "./lsn.ts";
import type { TypeParserSource } from "./type-parsers.ts";
import { rawTuple, type RawTuple } from "../views/tuple.ts";
import { CompatRelations } from "./relations.ts";
import { TapeRows } from "./tape-rows.ts";

type BufferCtor = { from(buf: ArrayBufferLike, offset: number, length: number): Uint8Array };
const NodeBuffer = (globalThis as { Buffer?: BufferCtor }).Buffer;

/** A Node `Buffer` over a copy (as pg-logical-replication hands out), or the copy itself without Buffer. */
function buffer(copy: Uint8Array): Uint8Array {
  return NodeBuffer === undefined ? copy : NodeBuffer.from(copy.buffer, copy.byteOffset, copy.byteLength);
}

export class CompatConverter {
  readonly relations: CompatRelations;
  readonly rows = new TapeRows();
  /** Filled by rawTuple for the row being read (one object, not one per row). */
  readonly #raw: RawTuple = { u8: new Uint8Array(0), dv: new DataView(new ArrayBuffer(0)), t: new Int32Array(0), base: 0, length: 0 };

  /** `parsers` is asked for once per Relation message (so it can load lazily). */
  constructor(parsers: () => TypeParserSource) {
    this.relations = new CompatRelations(parsers);
  }

  /** Forgets relations and types (pg-logical-replication never does; PostgreSQL re-sends them per session anyway). */
  clear(): void {
    this.relations.clear();
  }

  convert(msg: PgoutputMessage): T.AnyMessage {
    switch (msg.kind) {
      case "Begin":
        return { tag: "begin", commitLsn: compatLsn(msg.finalLsn), commitTime: msg.commitTime, xid: msg.xid };
      case "Commit":
        return {
          tag: "commit", flags: msg.flags, commitLsn: compatLsn(msg.commitLsn),
          commitEndLsn: compatLsn(msg.endLsn), commitTime: msg.commitTime,
        };
      case "Origin":
        return { tag: "origin", originLsn: compatLsn(msg.originLsn), originName: msg.name };
      case "Type": {
        this.relations.type(msg.typeId, msg.namespace, msg.typeName);
        return { tag: "type", typeOid: msg.typeId, typeSchema: msg.namespace, typeName: msg.typeName };
      }
      case "Relation":
        return this.relations.define(msg.relation);
      case "Insert": {
        const relation = this.relations.known(msg.relationId, "insert");
        return streamed<T.MessageInsert>({ tag: "insert", relation, new: this.#row(msg.newTuple, relation) }, msg.xid);
      }
      case "Update": {
        const relation = this.relations.known(msg.relationId, "update");
        let key: T.Row | null = null;
        let old: T.Row | null = null;
        if (msg.oldTupleType === "K") key = this.#key(msg.oldTuple!, relation);
        else if (msg.oldTupleType === "O") old = this.#row(msg.oldTuple!, relation);
        const row = this.#row(msg.newTuple, relation, old);
        return streamed<T.MessageUpdate>({ tag: "update", relation, key, old, new: row }, msg.xid);
      }
      case "Delete": {
        const relation = this.relations.known(msg.relationId, "delete");
        const key = msg.oldTupleType === "K" ? this.#key(msg.oldTuple, relation) : null;
        const old = msg.oldTupleType === "O" ? this.#row(msg.oldTuple, relation) : null;
        return streamed<T.MessageDelete>({ tag: "delete", relation, key, old }, msg.xid);
      }
      case "Truncate":
        return streamed<T.MessageTruncate>(
          {
            tag: "truncate", cascade: msg.cascade, restartIdentity: msg.restartIdentity,
            relations: msg.relationIds.map((id) => this.relations.get(id)),
          },
          msg.xid,
        );
      case "Message":
        return streamed<T.MessageMessage>(
          {
            tag: "message", flags: msg.flags, transactional: msg.transactional,
            messageLsn: compatLsn(msg.lsn), prefix: msg.prefix, content: buffer(msg.content),
          },
          msg.xid,
        );
      case "StreamStart":
        return { tag: "stream_start", xid: msg.xid, firstSegment: msg.firstSegment };
      case "StreamStop":
        return { tag: "stream_stop" };
      case "StreamCommit":
        return {
          tag: "stream_commit", xid: msg.xid, flags: msg.flags, commitLsn: compatLsn(msg.commitLsn),
          commitEndLsn: compatLsn(msg.endLsn), commitTime: msg.commitTime,
        };
      case "StreamAbort":
        return {
          tag: "stream_abort", xid: msg.xid, subXid: msg.subXid,
          abortLsn: compatLsnOrNull(msg.abortLsn), abortTime: msg.abortTime,
        };
      case "BeginPrepare":
        return {
          tag: "begin_prepare", prepareLsn: compatLsn(msg.prepareLsn), prepareEndLsn: compatLsn(msg.endLsn),
          prepareTime: msg.prepareTime, xid: msg.xid, gid: msg.gid,
        };
      case "Prepare":
      case "StreamPrepare":
        return {
          tag: msg.kind === "Prepare" ? "prepare" : "stream_prepare", flags: msg.flags,
          prepareLsn: compatLsn(msg.prepareLsn), prepareEndLsn: compatLsn(msg.endLsn),
          prepareTime: msg.prepareTime, xid: msg.xid, gid: msg.gid,
        };
      case "CommitPrepared":
        return {
          tag: "commit_prepared", flags: msg.flags, commitLsn: compatLsn(msg.commitLsn),
          commitEndLsn: compatLsn(msg.endLsn), commitTime: msg.commitTime, xid: msg.xid, gid: msg.gid,
        };
      case "RollbackPrepared":
        return {
          tag: "rollback_prepared", flags: msg.flags, prepareEndLsn: compatLsn(msg.prepareEndLsn),
          rollbackEndLsn: compatLsn(msg.rollbackEndLsn), prepareTime: msg.prepareTime,
          rollbackTime: msg.rollbackTime, xid: msg.xid, gid: msg.gid,
        };
    }
  }

  /** A row object; an unchanged TOASTed column takes `fallback`'s value for it (the old row), else `undefined`. */
  #row(tuple: Tuple, relation: T.MessageRelation, fallback?: T.Row | null): T.Row {
    const raw = this.#raw;
    // A tape view's TUPLE starts at its column count, the word before its first column's offset.
    if (rawTuple(tuple, raw)) return this.rows.row(raw, raw.base - 1, this.relations.plan(relation), fallback);
    const row: T.Row = Object.create(null);
    const columns = relation.columns;
    for (let i = 0; i < tuple.length; i++) {
      const column = columns[i]!;
      switch (tuple.kind(i)) {
        case "text":
          row[column.name] = column.parser(tuple.text(i) as string);
          break;
        case "null":
          row[column.name] = null;
          break;
        case "unchanged":
          row[column.name] = fallback?.[column.name];
          break;
        case "binary":
          row[column.name] = buffer(tuple.bytes(i) as Uint8Array);
          break;
      }
    }
    return row;
  }

  /** The key columns of a key tuple; a NULL there stands for "not part of the key" and becomes `undefined`. */
  #key(tuple: Tuple, relation: T.MessageRelation): T.Row {
    const row = this.#row(tuple, relation);
    const key: T.Row = Object.create(null);
    for (const name of relation.keyColumns) key[name] = row[name] === null ? undefined : row[name];
    return key;
  }
}

/** Adds the streamed transaction's xid (inside a Stream Start / Stop block only). */
function streamed<M extends T.StreamedXid>(msg: M, xid: number | undefined): M {
  if (xid !== undefined) msg.xid = xid;
  return msg;
}
