/**
 * Turns this package's decoded messages (views, PostgreSQL's names) into
 * pg-logical-replication's plain objects (its names, see types.ts). Keeps
 * what its PgoutputPlugin keeps: the relations by OID (the very object a
 * Relation message was emitted as is the `relation` of later changes) and the
 * names from Type messages.
 *
 * Everything returned is a plain object that stays valid after the decoder's
 * next call.
 */
import type { PgoutputMessage, RelationMessage, ReplicaIdentity } from "../messages.ts";
import type { Tuple } from "../tuple.ts";
import type * as T from "./types.ts";
import { compatLsn, compatLsnOrNull } from "./lsn.ts";
import type { TypeParserSource } from "./type-parsers.ts";
import { rawTuple, type RawTuple } from "../views/tuple.ts";
import { readString } from "../utf8.ts";
import { Slab } from "./slab.ts";
import { fastParserFor } from "./pg-defaults.ts";
import { NOT_FAST, type FastParser } from "./fast-parsers.ts";

const REPLICA_IDENTITY: Record<ReplicaIdentity, T.MessageRelation["replicaIdentity"]> = {
  d: "default",
  n: "nothing",
  f: "full",
  i: "index",
};

type BufferCtor = { from(buf: ArrayBufferLike, offset: number, length: number): Uint8Array };
const NodeBuffer = (globalThis as { Buffer?: BufferCtor }).Buffer;

/** A Node `Buffer` over a copy (as pg-logical-replication hands out), or the copy itself without Buffer. */
function buffer(copy: Uint8Array): Uint8Array {
  return NodeBuffer === undefined ? copy : NodeBuffer.from(copy.buffer, copy.byteOffset, copy.byteLength);
}


const KIND_T = 0x74;
const KIND_B = 0x62;
const KIND_U = 0x75;

export class CompatConverter {
  readonly #relations = new Map<number, T.MessageRelation>();
  readonly #types = new Map<number, { typeSchema: string; typeName: string }>();
  readonly #parsers: () => TypeParserSource;
  /** Per relation, each column's fast parser (pg-defaults.ts) or undefined; decided once per Relation message. */
  readonly #plans = new WeakMap<T.MessageRelation, RowPlan>();
  readonly #slab = new Slab();
  /** Filled by rawTuple for the row being read (one object, not one per row). */
  readonly #raw: RawTuple = { u8: new Uint8Array(0), dv: new DataView(new ArrayBuffer(0)), t: new Int32Array(0), base: 0, length: 0 };

  /** `parsers` is asked for once per Relation message (so it can load lazily). */
  constructor(parsers: () => TypeParserSource) {
    this.#parsers = parsers;
  }

  /** Forgets relations and types (pg-logical-replication never does; PostgreSQL re-sends them per session anyway). */
  clear(): void {
    this.#relations.clear();
    this.#types.clear();
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
        const out: T.MessageType = { tag: "type", typeOid: msg.typeId, typeSchema: msg.namespace, typeName: msg.typeName };
        this.#types.set(msg.typeId, { typeSchema: out.typeSchema, typeName: out.typeName });
        return out;
      }
      case "Relation":
        return this.#relation(msg);
      case "Insert": {
        const relation = this.#known(msg.relationId, "insert");
        return streamed<T.MessageInsert>({ tag: "insert", relation, new: this.#row(msg.newTuple, relation) }, msg.xid);
      }
      case "Update": {
        const relation = this.#known(msg.relationId, "update");
        let key: T.Row | null = null;
        let old: T.Row | null = null;
        if (msg.oldTupleType === "K") key = this.#key(msg.oldTuple!, relation);
        else if (msg.oldTupleType === "O") old = this.#row(msg.oldTuple!, relation);
        const row = this.#row(msg.newTuple, relation, old);
        return streamed<T.MessageUpdate>({ tag: "update", relation, key, old, new: row }, msg.xid);
      }
      case "Delete": {
        const relation = this.#known(msg.relationId, "delete");
        const key = msg.oldTupleType === "K" ? this.#key(msg.oldTuple, relation) : null;
        const old = msg.oldTupleType === "O" ? this.#row(msg.oldTuple, relation) : null;
        return streamed<T.MessageDelete>({ tag: "delete", relation, key, old }, msg.xid);
      }
      case "Truncate":
        return streamed<T.MessageTruncate>(
          {
            tag: "truncate", cascade: msg.cascade, restartIdentity: msg.restartIdentity,
            relations: msg.relationIds.map((id) => this.#relations.get(id)!),
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

  #relation(msg: RelationMessage): T.MessageRelation {
    const parsers = this.#parsers();
    const columns: T.RelationColumn[] = msg.columns.map((c) => ({
      flags: c.flags,
      name: c.name,
      typeOid: c.typeId,
      typeMod: c.typeModifier,
      typeSchema: null,
      typeName: null,
      ...this.#types.get(c.typeId),
      parser: parsers.getTypeParser(c.typeId),
    }));
    const out: T.MessageRelation = {
      tag: "relation",
      relationOid: msg.relationId,
      schema: msg.namespace,
      name: msg.relationName,
      replicaIdentity: REPLICA_IDENTITY[msg.replicaIdentity],
      columns,
      keyColumns: columns.filter((c) => (c.flags & 1) !== 0).map((c) => c.name),
    };
    this.#relations.set(msg.relationId, out);
    this.#plans.set(out, {
      names: columns.map((c) => c.name),
      parsers: columns.map((c) => c.parser),
      fast: columns.map((c) => fastParserFor(c.typeOid, c.parser)),
    });
    return out;
  }

  #known(relationId: number, what: string): T.MessageRelation {
    const relation = this.#relations.get(relationId);
    if (relation === undefined) {
      throw new Error(`missing relation: ${what} for relation OID ${relationId} before any Relation message for it`);
    }
    return relation;
  }

  /** A row object; an unchanged TOASTed column takes `fallback`'s value for it (the old row), else `undefined`. */
  #row(tuple: Tuple, relation: T.MessageRelation, fallback?: T.Row | null): T.Row {
    const raw = this.#raw;
    if (rawTuple(tuple, raw)) return this.#rawRow(raw, relation, fallback);
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

  /**
   * `#row` over the tape bytes directly: typed columns parsed from their
   * bytes where pg-types' default parser is in place, and the binary values
   * of the row copied once (from the first binary column to the row's end)
   * into memory the plugin owns, each value a view of that copy, so that
   * none of them changes when the decoder's input is reused.
   */
  #rawRow(raw: RawTuple, relation: T.MessageRelation, fallback?: T.Row | null): T.Row {
    const row: T.Row = Object.create(null);
    const { names, parsers, fast } = this.#plans.get(relation)!;
    const { u8, dv, t, base, length } = raw;
    let copy: Uint8Array | undefined;
    let shift = 0;
    for (let i = 0; i < length; i++) {
      const name = names[i]!;
      const p = t[base + i]!;
      const k = u8[p];
      if (k === KIND_T) {
        const len = dv.getInt32(p + 1);
        const f = fast[i];
        let v: unknown = NOT_FAST;
        if (f !== undefined) v = f(u8, p + 5, len);
        row[name] = v === NOT_FAST ? parsers[i]!(readString(u8, p + 5, len)) : v;
      } else if (k === KIND_B) {
        const len = dv.getInt32(p + 1);
        if (copy === undefined) {
          const placed = this.#slab.copy(u8, p, rowEnd(raw));
          copy = placed.slab;
          shift = placed.offset - p;
        }
        const at = p + 5 + shift;
        row[name] = copy.subarray(at, at + len);
      } else if (k === KIND_U) {
        row[name] = fallback?.[name];
      } else {
        row[name] = null;
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

/** What `#rawRow` needs of a relation's columns, in arrays (made once per Relation message). */
interface RowPlan {
  names: string[];
  parsers: T.RelationColumn["parser"][];
  /** The column's fast parser, where its parser is still pg-types' default (pg-defaults.ts). */
  fast: (FastParser | undefined)[];
}

/** Where the row's last column ends on the tape. */
function rowEnd(raw: RawTuple): number {
  const { u8, dv, t, base, length } = raw;
  const last = t[base + length - 1]!;
  const k = u8[last];
  return k === KIND_T || k === KIND_B ? last + 5 + dv.getInt32(last + 1) : last + 1;
}

/** Adds the streamed transaction's xid (inside a Stream Start / Stop block only). */
function streamed<M extends T.StreamedXid>(msg: M, xid: number | undefined): M {
  if (xid !== undefined) msg.xid = xid;
  return msg;
}
