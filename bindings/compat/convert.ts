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
import type { PgoutputMessage, ReplicaIdentity } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import type * as T from "./types.ts";
import { compatLsn, compatLsnAt, compatLsnOrNull, compatTimeAt, lsnOfHalves, timeOfHalves } from "./lsn.ts";
import type { TypeParserSource } from "./type-parsers.ts";
import { rawTuple, type RawTuple } from "../views/tuple.ts";
import { readString } from "../utf8.ts";
import { Slab } from "./slab.ts";
import { fastParserFor } from "./pg-defaults.ts";
import { NOT_FAST, type FastParser } from "./fast-parsers.ts";
import { rowBuilder, type RowBuilder } from "./rows.ts";
import type { TapeDecoder, TapeRecord } from "../kernel/decoder.ts";
import { FLAG_BACKEND, FLAG_KEEPALIVE, FLAG_XID, HEADER_WORDS, H_OFFSET } from "../tape.ts";
import { fieldOffset, fixedSize, KIND_BINARY as KIND_B, KIND_TEXT as KIND_T, KIND_UNCHANGED as KIND_U, layoutOf } from "../layout.ts";

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


// Tags convertRecord reads from the tape itself; every other kind goes through its view.
const TAG_BEGIN = 0x42, TAG_COMMIT = 0x43, TAG_RELATION = 0x52, TAG_TYPE = 0x59;
const TAG_INSERT = 0x49, TAG_UPDATE = 0x55, TAG_DELETE = 0x44;
const OLD_KEY = 0x4b, OLD_ROW = 0x4f;
/** A fixed field's offset from the first byte after the tag and streamed xid (layout.ts). */
const at = (tag: number, field: string): number => fieldOffset(layoutOf(tag)!, field);
const BEGIN_LSN = at(TAG_BEGIN, "finalLsn"), BEGIN_TIME = at(TAG_BEGIN, "commitTime"), BEGIN_XID = at(TAG_BEGIN, "xid");
const COMMIT_FLAGS = at(TAG_COMMIT, "flags"), COMMIT_LSN = at(TAG_COMMIT, "commitLsn");
const COMMIT_END_LSN = at(TAG_COMMIT, "endLsn"), COMMIT_TIME = at(TAG_COMMIT, "commitTime");
const TYPE_ID = at(TAG_TYPE, "typeId");
const CHANGE_RELATION = at(TAG_INSERT, "relationId");
const NOT_PLAIN = (FLAG_KEEPALIVE | FLAG_BACKEND | FLAG_XID) << 8;
/** Whole Begin and Commit messages: the tag and their fixed fields (they have no others). */
const BEGIN_BYTES = 1 + fixedSize(layoutOf(TAG_BEGIN)!), COMMIT_BYTES = 1 + fixedSize(layoutOf(TAG_COMMIT)!);
/** The largest message convertFixed reads: a decoder refusing messages of this size must see them. */
export const FIXED_MAX = Math.max(BEGIN_BYTES, COMMIT_BYTES);

/** Big-endian 32-bit words of a byte array, unsigned and signed. */
const u32 = (b: Uint8Array, o: number): number => ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;
const i32 = (b: Uint8Array, o: number): number => (b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!;

export class CompatConverter {
  readonly #relations = new Map<number, T.MessageRelation>();
  readonly #types = new Map<number, { typeSchema: string; typeName: string }>();
  readonly #parsers: () => TypeParserSource;
  /** Per relation, each column's fast parser (pg-defaults.ts) or undefined; decided once per Relation message. */
  readonly #plans = new WeakMap<T.MessageRelation, RowPlan>();
  readonly #slab = new Slab();
  /** Filled by rawTuple for the row being read (one object, not one per row). */
  readonly #raw: RawTuple = { u8: new Uint8Array(0), dv: new DataView(new ArrayBuffer(0)), t: new Int32Array(0), base: 0, length: 0 };
  /** The column values of the row being built (one array, refilled per row). */
  readonly #values: unknown[] = [];

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
        return this.#relation(msg.relation);
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

  /**
   * A Begin or Commit straight from the message's bytes, or `undefined` for
   * any other message. More than half of a stream's messages are these two,
   * and the decoder has nothing to check in them but their length (every
   * value of their fixed fields is valid) and nothing to learn from them:
   * with the exact length, the kernel would accept the message and leave
   * its state as it was, so it is not called; any other length goes to it
   * and gets its error.
   */
  convertFixed(b: Uint8Array): T.MessageBegin | T.MessageCommit | undefined {
    const n = b.length;
    if (n === BEGIN_BYTES && b[0] === TAG_BEGIN) {
      const l = 1 + BEGIN_LSN, c = 1 + BEGIN_TIME;
      return {
        tag: "begin", commitLsn: lsnOfHalves(u32(b, l), u32(b, l + 4)), commitTime: timeOfHalves(i32(b, c), u32(b, c + 4)),
        xid: u32(b, 1 + BEGIN_XID),
      };
    }
    if (n === COMMIT_BYTES && b[0] === TAG_COMMIT) {
      const l = 1 + COMMIT_LSN, e = 1 + COMMIT_END_LSN, c = 1 + COMMIT_TIME;
      return {
        tag: "commit", flags: b[1 + COMMIT_FLAGS]!, commitLsn: lsnOfHalves(u32(b, l), u32(b, l + 4)),
        commitEndLsn: lsnOfHalves(u32(b, e), u32(b, e + 4)), commitTime: timeOfHalves(i32(b, c), u32(b, c + 4)),
      };
    }
    return undefined;
  }

  /**
   * `convert(decoder.decode(buffer))` for a tape decoder, without the view:
   * the kinds that make up nearly all of a stream (Begin, Commit, Insert,
   * Update, Delete, and Relation and Type for their caches) are read from
   * the message's tape record as the decoder left it; the others go
   * through `convert` on the record's view.
   */
  convertRecord(rec: TapeRecord, decoder: TapeDecoder): T.AnyMessage {
    const { u8, dv, t, w } = rec;
    const head = t[w]!;
    if ((head & NOT_PLAIN) !== 0) return this.#convertView(decoder);
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
        const relation = this.#known(dv.getUint32(p0 + CHANGE_RELATION), "insert");
        return { tag: "insert", relation, new: this.#tapeRow(rec, w + HEADER_WORDS, relation, undefined) };
      }
      case TAG_UPDATE: {
        const relation = this.#known(dv.getUint32(p0 + CHANGE_RELATION), "update");
        const body = w + HEADER_WORDS;
        const type = t[body]!;
        let key: T.Row | null = null;
        let old: T.Row | null = null;
        let next = body + 1;
        if (type !== 0) {
          if (type === OLD_KEY) key = this.#tapeKey(rec, next, relation);
          else old = this.#tapeRow(rec, next, relation, undefined);
          next += 1 + t[next]!;
        }
        return { tag: "update", relation, key, old, new: this.#tapeRow(rec, next, relation, old) };
      }
      case TAG_DELETE: {
        const relation = this.#known(dv.getUint32(p0 + CHANGE_RELATION), "delete");
        const body = w + HEADER_WORDS;
        const type = t[body]!;
        const key = type === OLD_KEY ? this.#tapeKey(rec, body + 1, relation) : null;
        const old = type === OLD_ROW ? this.#tapeRow(rec, body + 1, relation, undefined) : null;
        return { tag: "delete", relation, key, old };
      }
      case TAG_RELATION:
        return this.#relation(decoder.relations.get(dv.getUint32(p0))!);
      case TAG_TYPE: {
        const body = w + HEADER_WORDS;
        const out: T.MessageType = {
          tag: "type", typeOid: dv.getUint32(p0 + TYPE_ID),
          typeSchema: readString(u8, t[body]!, t[body + 1]!), typeName: readString(u8, t[body + 2]!, t[body + 3]!),
        };
        this.#types.set(out.typeOid, { typeSchema: out.typeSchema, typeName: out.typeName });
        return out;
      }
      default:
        return this.#convertView(decoder);
    }
  }

  /** A message `convertRecord` does not read itself (streamed ones included: they carry an xid), through its view. */
  #convertView(decoder: TapeDecoder): T.AnyMessage {
    return this.convert(decoder.recordView() as PgoutputMessage);
  }

  /**
   * A row from the TUPLE at tape word `w` (its column count, then each
   * column's kind-byte offset): each text value through the column's fast
   * parser or its type parser, binary values copied once per row into the
   * plugin's slab, then the relation's row builder.
   */
  #tapeRow(rec: TapeRecord | RawTuple, w: number, relation: T.MessageRelation, fallback: T.Row | null | undefined): T.Row {
    const { u8, dv, t } = rec;
    const plan = this.#plans.get(relation)!;
    const { names, parsers, fast } = plan;
    const n = t[w]!;
    const vals = this.#values;
    let copy: Uint8Array | undefined;
    let shift = 0;
    for (let i = 0; i < n; i++) {
      const p = t[w + 1 + i]!;
      const k = u8[p];
      if (k === KIND_T) {
        const len = dv.getInt32(p + 1);
        const f = fast[i];
        let v: unknown = NOT_FAST;
        if (f !== undefined) v = f(u8, p + 5, len);
        vals[i] = v === NOT_FAST ? parsers[i]!(readString(u8, p + 5, len)) : v;
      } else if (k === KIND_B) {
        const len = dv.getInt32(p + 1);
        if (copy === undefined) {
          shift = this.#slab.copy(u8, p, tupleEnd(u8, dv, t, w)) - p;
          copy = this.#slab.held;
        }
        const from = p + 5 + shift;
        vals[i] = copy.subarray(from, from + len);
      } else if (k === KIND_U) {
        vals[i] = fallback?.[names[i]!];
      } else {
        vals[i] = null;
      }
    }
    // The kernel checked the tuple's width against the relation's; a converter fed another decoder's
    // relations could still disagree, and then gets pg-logical-replication's row of the first n columns.
    if (n === names.length) return plan.build(vals);
    const row: T.Row = Object.create(null);
    for (let i = 0; i < n; i++) row[names[i]!] = vals[i];
    return row;
  }

  /** The key columns of a key TUPLE at word `w` (the others are NULL placeholders there); a NULL key value becomes `undefined`. */
  #tapeKey(rec: TapeRecord, w: number, relation: T.MessageRelation): T.Row {
    const row = this.#tapeRow(rec, w, relation, undefined);
    const plan = this.#plans.get(relation)!;
    const { names, keys } = plan;
    const vals = this.#values;
    for (let j = 0; j < keys.length; j++) {
      const v = row[names[keys[j]!]!];
      vals[j] = v === null ? undefined : v;
    }
    return plan.buildKey(vals);
  }

  #relation(rel: Relation): T.MessageRelation {
    const parsers = this.#parsers();
    const columns: T.RelationColumn[] = rel.columns.map((c) => ({
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
      relationOid: rel.relationId,
      schema: rel.namespace,
      name: rel.name,
      replicaIdentity: REPLICA_IDENTITY[rel.replicaIdentity],
      columns,
      keyColumns: columns.filter((c) => (c.flags & 1) !== 0).map((c) => c.name),
    };
    this.#relations.set(rel.relationId, out);
    const names = columns.map((c) => c.name);
    const keys: number[] = [];
    columns.forEach((c, i) => {
      if ((c.flags & 1) !== 0) keys.push(i);
    });
    this.#plans.set(out, {
      names,
      parsers: columns.map((c) => c.parser),
      fast: columns.map((c) => fastParserFor(c.typeOid, c.parser)),
      build: rowBuilder(names),
      keys,
      buildKey: rowBuilder(out.keyColumns),
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
    // A tape view's TUPLE starts at its column count, the word before its first column's offset.
    if (rawTuple(tuple, raw)) return this.#tapeRow(raw, raw.base - 1, relation, fallback);
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

/** What `#tapeRow` and `#tapeKey` need of a relation's columns, in arrays (made once per Relation message). */
interface RowPlan {
  names: string[];
  parsers: T.RelationColumn["parser"][];
  /** The column's fast parser, where its parser is still pg-types' default (pg-defaults.ts). */
  fast: (FastParser | undefined)[];
  /** Makes the row object from the column values (rows.ts). */
  build: RowBuilder;
  /** Indices of the key columns, and the maker of key objects from their values. */
  keys: number[];
  buildKey: RowBuilder;
}

/** Where the last column of the TUPLE at tape word `w` ends. */
function tupleEnd(u8: Uint8Array, dv: DataView, t: Int32Array, w: number): number {
  const last = t[w + t[w]!]!;
  const k = u8[last];
  return k === KIND_T || k === KIND_B ? last + 5 + dv.getInt32(last + 1) : last + 1;
}

/** Adds the streamed transaction's xid (inside a Stream Start / Stop block only). */
function streamed<M extends T.StreamedXid>(msg: M, xid: number | undefined): M {
  if (xid !== undefined) msg.xid = xid;
  return msg;
}
