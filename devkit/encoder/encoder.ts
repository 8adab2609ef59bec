/**
 * Test-support encoder: builds pgoutput messages from plain descriptions and
 * returns, with the bytes, the value a decoder's `materialize()` must give
 * for them (see `materializeMessage` in bindings/materialize.ts).
 *
 * Descriptions use the decoder's conventions: xids and OIDs are unsigned
 * 32-bit numbers, LSNs `bigint`, timestamps `bigint` µs since the Unix epoch
 * (the encoder writes the wire's µs since 2000-01-01; PostgreSQL's ±infinity,
 * the int64 extremes, are written as they are).
 *
 * Every builder also records where its fields start (`offsets`), so tests can
 * corrupt a given field or predict the offset an error must name.
 *
 * @example
 * ```ts
 * const rel = { relationId: 16384, namespace: "public", relationName: "t",
 *               columns: [{ name: "id", typeId: 23, isKey: true }] };
 * const r = encode.relation(rel);
 * const i = encode.insert({ relation: rel, newTuple: ["1"] });
 * decoder.decode(r.bytes);
 * expect(decoder.decode(i.bytes).materialize()).toEqual(i.expected);
 * const capture = frame([r, i]);    // [uint32 BE length][message] ...
 * ```
 */
import type { DecodeOptions } from "../../bindings/decoder.ts";
import type { MessageKind, OldTupleType, ReplicaIdentity } from "../../bindings/messages.ts";
import type { MaterializedColumn } from "../../bindings/tuple.ts";
import { layoutOf } from "../../bindings/layout.ts";
import { concatBytes } from "../../bindings/copy-bytes.ts";

/** µs between the Unix epoch and PostgreSQL's epoch, 2000-01-01 (written out here, not imported, so the encoder checks the decoder). */
export const PG_EPOCH_UNIX_US = 946_684_800_000_000n;
/** PostgreSQL's -infinity / +infinity timestamps (DT_NOBEGIN / DT_NOEND). */
export const TIME_NEG_INFINITY = -(2n ** 63n);
export const TIME_POS_INFINITY = 2n ** 63n - 1n;
export const MAX_LSN = 2n ** 64n - 1n;
export const MAX_U32 = 0xffff_ffff;

/** A built message: its bytes, the expected `materialize()` value, and the start offset of each field (keys like `newTuple.column[3]`). */
export interface Encoded {
  readonly kind: MessageKind;
  readonly bytes: Uint8Array;
  readonly expected: Record<string, unknown>;
  readonly offsets: Readonly<Record<string, number>>;
}

// ---------------------------------------------------------------------------
// Byte writer

const utf8 = new TextEncoder();

/** A growable big-endian byte writer with named offsets. */
export class Writer {
  #buf = new Uint8Array(64);
  #view = new DataView(this.#buf.buffer);
  #pos = 0;
  readonly offsets: Record<string, number> = {};

  get length(): number {
    return this.#pos;
  }

  #room(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#pos));
    this.#buf = next;
    this.#view = new DataView(next.buffer);
  }

  /** Records the current offset under a field name. */
  mark(name: string): this {
    this.offsets[name] = this.#pos;
    return this;
  }

  u8(v: number): this {
    if (!Number.isInteger(v) || v < -128 || v > 255) throw new RangeError(`u8 out of range: ${v}`);
    this.#room(1);
    this.#buf[this.#pos++] = v & 0xff;
    return this;
  }

  char(c: string): this {
    return this.u8(c.charCodeAt(0));
  }

  i16(v: number): this {
    if (!Number.isInteger(v) || v < -32768 || v > 65535) throw new RangeError(`i16 out of range: ${v}`);
    this.#room(2);
    this.#view.setUint16(this.#pos, v & 0xffff);
    this.#pos += 2;
    return this;
  }

  /** A 32-bit integer, signed or unsigned (written as its low 32 bits). */
  i32(v: number): this {
    if (!Number.isInteger(v) || v < -(2 ** 31) || v > MAX_U32) throw new RangeError(`i32 out of range: ${v}`);
    this.#room(4);
    this.#view.setUint32(this.#pos, v >>> 0);
    this.#pos += 4;
    return this;
  }

  u64(v: bigint): this {
    if (v < 0n || v > MAX_LSN) throw new RangeError(`u64 out of range: ${v}`);
    this.#room(8);
    this.#view.setBigUint64(this.#pos, v);
    this.#pos += 8;
    return this;
  }

  i64(v: bigint): this {
    if (v < TIME_NEG_INFINITY || v > TIME_POS_INFINITY) throw new RangeError(`i64 out of range: ${v}`);
    this.#room(8);
    this.#view.setBigInt64(this.#pos, v);
    this.#pos += 8;
    return this;
  }

  /** A timestamp given as µs since the Unix epoch, written as µs since 2000-01-01. */
  time(unixMicros: bigint): this {
    return this.i64(toWireTime(unixMicros));
  }

  raw(bytes: ArrayLike<number>): this {
    this.#room(bytes.length);
    this.#buf.set(bytes, this.#pos);
    this.#pos += bytes.length;
    return this;
  }

  /** A NUL-terminated UTF-8 string (must not contain NUL). */
  cstring(s: string): this {
    if (s.includes("\0")) throw new RangeError("a pgoutput String cannot contain NUL");
    this.raw(utf8.encode(s));
    return this.u8(0);
  }

  /** A copy of what was written. */
  finish(): Uint8Array {
    return this.#buf.slice(0, this.#pos);
  }
}

/** µs since the Unix epoch → the wire's µs since 2000-01-01 (±infinity kept). */
export function toWireTime(unixMicros: bigint): bigint {
  if (unixMicros === TIME_NEG_INFINITY || unixMicros === TIME_POS_INFINITY) return unixMicros;
  const wire = unixMicros - PG_EPOCH_UNIX_US;
  if (wire <= TIME_NEG_INFINITY || wire >= TIME_POS_INFINITY) {
    throw new RangeError(`timestamp ${unixMicros} does not fit the wire (or is an infinity sentinel after conversion)`);
  }
  return wire;
}

// ---------------------------------------------------------------------------
// Descriptions

/**
 * One column of a TupleData: a `MaterializedColumn`, or a shorthand —
 * a string (text), `null` (NULL), a `Uint8Array` (binary), `UNCHANGED`
 * (unchanged TOAST) — or `{ raw }`: bytes written verbatim in the column's
 * place (kind byte included), for malformed input; its expected value is
 * meaningless.
 */
export type ColumnDesc = MaterializedColumn | string | null | Uint8Array | typeof UNCHANGED | { raw: ArrayLike<number> };

/** Shorthand for an unchanged TOASTed column (`u`). */
export const UNCHANGED = { kind: "unchanged" } as const;

export interface RelationColumnDesc {
  name: string;
  typeId: number;
  /** `atttypmod`; default -1. */
  typeModifier?: number;
  /** Raw flags byte; default from `isKey` (1) or 0. */
  flags?: number;
  isKey?: boolean;
}

export interface RelationDesc {
  relationId: number;
  namespace: string;
  relationName: string;
  /** Default `d`. */
  replicaIdentity?: ReplicaIdentity;
  columns: readonly RelationColumnDesc[];
  /** Present only inside a streamed block. */
  xid?: number;
}

/** What a change message needs to know of its relation: its OID, and its names when the decoder has seen its Relation message. */
export interface ChangeTarget {
  /** OID; defaults to `relation.relationId`. */
  relationId?: number;
  /** The relation as the decoder knows it; omit when it has seen no Relation message for the OID (then no names are expected). */
  relation?: Pick<RelationDesc, "relationId" | "namespace" | "relationName">;
  /** Present only inside a streamed block. */
  xid?: number;
}

function u32(v: number, what: string): number {
  if (!Number.isInteger(v) || v < 0 || v > MAX_U32) throw new RangeError(`${what} must be an unsigned 32-bit integer: ${v}`);
  return v;
}

function normalizeColumn(c: ColumnDesc): MaterializedColumn | { raw: ArrayLike<number> } {
  if (c === null) return { kind: "null" };
  if (typeof c === "string") return { kind: "text", text: c };
  if (c instanceof Uint8Array) return { kind: "binary", bytes: c };
  return c;
}

function writeTuple(w: Writer, field: string, columns: readonly ColumnDesc[]): MaterializedColumn[] {
  const expected: MaterializedColumn[] = [];
  w.mark(`${field}.count`).i16(columns.length);
  columns.forEach((desc, i) => {
    const c = normalizeColumn(desc);
    w.mark(`${field}.column[${i}]`);
    if ("raw" in c) {
      w.raw(c.raw);
      expected.push({ kind: "null" }); // meaningless for malformed input
      return;
    }
    switch (c.kind) {
      case "null":
        w.char("n");
        expected.push({ kind: "null" });
        break;
      case "unchanged":
        w.char("u");
        expected.push({ kind: "unchanged" });
        break;
      case "text": {
        const b = utf8.encode(c.text);
        w.char("t").mark(`${field}.column[${i}].length`).i32(b.length).mark(`${field}.column[${i}].value`).raw(b);
        expected.push({ kind: "text", text: c.text });
        break;
      }
      case "binary":
        w.char("b").mark(`${field}.column[${i}].length`).i32(c.bytes.length).mark(`${field}.column[${i}].value`).raw(c.bytes);
        expected.push({ kind: "binary", bytes: c.bytes.slice() });
        break;
      default:
        throw new TypeError(`bad column description ${JSON.stringify(c)}`);
    }
  });
  return expected;
}

/**
 * Writes the message's fields in its layout's order (bindings/layout.ts),
 * marking each, from the values in `d` (by field name), up to its first
 * tuple, column list or OID list (those the builders write themselves);
 * returns the index of that field. Absent: the streamed xid when `d.xid` is
 * undefined, the v4 fields when null/undefined. A u8 value may be a
 * one-character string (written as its code) or a boolean.
 */
function writeFields(w: Writer, tag: string, d: Record<string, unknown>): number {
  const fields = layoutOf(tag.charCodeAt(0))!.fields;
  let i = 0;
  for (; i < fields.length; i++) {
    const f = fields[i]!;
    const v = d[f.name];
    if ((f.when === "streamed" || f.when === "v4") && v == null) continue;
    if (f.type === "tuple" || f.type === "columns" || f.type === "oids" || f.when === "old") break;
    w.mark(f.mark ?? f.name);
    switch (f.type) {
      case "u8": w.u8(typeof v === "string" ? v.charCodeAt(0) : typeof v === "boolean" ? (v ? 1 : 0) : (v as number)); break;
      case "i16": w.i16(v as number); break;
      case "u32": w.i32(u32(v as number, f.name)); break;
      case "lsn": w.u64(v as bigint); break;
      case "time": w.time(v as bigint); break;
      case "cstring": w.cstring(v as string); break;
      case "bytes": w.raw(v as Uint8Array); break;
    }
  }
  return i;
}

function start(tag: string): Writer {
  return new Writer().mark("tag").char(tag);
}

/** The streamed xid is expected when given (writeFields writes it). */
function withXid(expected: Record<string, unknown>, xid: number | undefined): void {
  if (xid !== undefined) expected.xid = xid;
}

function done(kind: MessageKind, w: Writer, expected: Record<string, unknown>): Encoded {
  return { kind, bytes: w.finish(), expected: { kind, ...expected }, offsets: w.offsets };
}

function relationNames(t: ChangeTarget): { relationId: number; names: Record<string, unknown> } {
  const relationId = t.relationId ?? t.relation?.relationId;
  if (relationId === undefined) throw new TypeError("a change needs relationId or relation");
  const names = t.relation === undefined ? {} : { namespace: t.relation.namespace, relationName: t.relation.relationName };
  return { relationId: u32(relationId, "relationId"), names };
}

// ---------------------------------------------------------------------------
// Builders, one per message kind

export const encode = {
  /** `B` Begin. */
  begin(d: { finalLsn: bigint; commitTime: bigint; xid: number }): Encoded {
    const w = start("B");
    writeFields(w, "B", d);
    return done("Begin", w, { finalLsn: d.finalLsn, commitTime: d.commitTime, xid: d.xid });
  },

  /** `C` Commit. */
  commit(d: { flags?: number; commitLsn: bigint; endLsn: bigint; commitTime: bigint }): Encoded {
    const flags = d.flags ?? 0;
    const w = start("C");
    writeFields(w, "C", { ...d, flags });
    return done("Commit", w, { flags, commitLsn: d.commitLsn, endLsn: d.endLsn, commitTime: d.commitTime });
  },

  /** `O` Origin. */
  origin(d: { originLsn: bigint; name: string }): Encoded {
    const w = start("O");
    writeFields(w, "O", d);
    return done("Origin", w, { originLsn: d.originLsn, name: d.name });
  },

  /** `M` logical decoding message; `content` as bytes or a string (UTF-8). */
  message(d: { xid?: number; transactional?: boolean; flags?: number; lsn: bigint; prefix: string; content: Uint8Array | string }): Encoded {
    const flags = d.flags ?? (d.transactional ? 1 : 0);
    const content = typeof d.content === "string" ? utf8.encode(d.content) : d.content;
    const w = start("M");
    const e: Record<string, unknown> = {};
    withXid(e, d.xid);
    writeFields(w, "M", { ...d, flags, contentLength: content.length, content });
    Object.assign(e, { flags, transactional: (flags & 1) !== 0, lsn: d.lsn, prefix: d.prefix, content: content.slice() });
    return done("Message", w, e);
  },

  /** `R` Relation. */
  relation(d: RelationDesc): Encoded {
    const w = start("R");
    const e: Record<string, unknown> = {};
    withXid(e, d.xid);
    const replicaIdentity = d.replicaIdentity ?? "d";
    writeFields(w, "R", { ...d, replicaIdentity, columnCount: d.columns.length });
    const columns = d.columns.map((c, i) => {
      const flags = c.flags ?? (c.isKey ? 1 : 0);
      const typeModifier = c.typeModifier ?? -1;
      w.mark(`columns[${i}]`).u8(flags).mark(`columns[${i}].name`).cstring(c.name);
      w.mark(`columns[${i}].typeId`).i32(u32(c.typeId, "typeId")).mark(`columns[${i}].typeModifier`).i32(typeModifier);
      return { flags, isKey: (flags & 1) !== 0, name: c.name, typeId: c.typeId, typeModifier };
    });
    Object.assign(e, { relationId: d.relationId, namespace: d.namespace, relationName: d.relationName, replicaIdentity, columns });
    return done("Relation", w, e);
  },

  /** `Y` Type. */
  type(d: { xid?: number; typeId: number; namespace: string; typeName: string }): Encoded {
    const w = start("Y");
    const e: Record<string, unknown> = {};
    withXid(e, d.xid);
    writeFields(w, "Y", d);
    Object.assign(e, { typeId: d.typeId, namespace: d.namespace, typeName: d.typeName });
    return done("Type", w, e);
  },

  /** `I` Insert. */
  insert(d: ChangeTarget & { newTuple: readonly ColumnDesc[] }): Encoded {
    const { relationId, names } = relationNames(d);
    const w = start("I");
    const e: Record<string, unknown> = {};
    withXid(e, d.xid);
    writeFields(w, "I", { xid: d.xid, relationId, tupleType: "N" });
    e.relationId = relationId;
    e.newTuple = writeTuple(w, "newTuple", d.newTuple);
    return done("Insert", w, { ...e, ...names });
  },

  /** `U` Update: no old row (`oldTupleType` omitted/null), the key (`K`) or the whole old row (`O`). */
  update(d: ChangeTarget & { oldTupleType?: OldTupleType | null; oldTuple?: readonly ColumnDesc[] | null; newTuple: readonly ColumnDesc[] }): Encoded {
    const { relationId, names } = relationNames(d);
    const oldTupleType = d.oldTupleType ?? null;
    if ((oldTupleType === null) !== (d.oldTuple == null)) throw new TypeError("oldTupleType and oldTuple go together");
    const w = start("U");
    const e: Record<string, unknown> = {};
    withXid(e, d.xid);
    writeFields(w, "U", { xid: d.xid, relationId });
    e.relationId = relationId;
    e.oldTupleType = oldTupleType;
    e.oldTuple = null;
    if (oldTupleType !== null) {
      w.mark("oldTuple").char(oldTupleType);
      e.oldTuple = writeTuple(w, "oldTuple", d.oldTuple!);
    }
    w.mark("newTuple").char("N");
    e.newTuple = writeTuple(w, "newTuple", d.newTuple);
    return done("Update", w, { ...e, ...names });
  },

  /** `D` Delete. */
  delete(d: ChangeTarget & { oldTupleType: OldTupleType; oldTuple: readonly ColumnDesc[] }): Encoded {
    const { relationId, names } = relationNames(d);
    const w = start("D");
    const e: Record<string, unknown> = {};
    withXid(e, d.xid);
    writeFields(w, "D", { xid: d.xid, relationId, tupleType: d.oldTupleType });
    Object.assign(e, { relationId, oldTupleType: d.oldTupleType });
    e.oldTuple = writeTuple(w, "oldTuple", d.oldTuple);
    return done("Delete", w, { ...e, ...names });
  },

  /** `T` Truncate; `options` or the two booleans. */
  truncate(d: { xid?: number; options?: number; cascade?: boolean; restartIdentity?: boolean; relationIds: readonly number[] }): Encoded {
    const options = d.options ?? ((d.cascade ? 1 : 0) | (d.restartIdentity ? 2 : 0));
    const w = start("T");
    const e: Record<string, unknown> = {};
    withXid(e, d.xid);
    writeFields(w, "T", { xid: d.xid, relationCount: d.relationIds.length, options });
    d.relationIds.forEach((id, i) => w.mark(`relationIds[${i}]`).i32(u32(id, "relationId")));
    Object.assign(e, {
      options,
      cascade: (options & 1) !== 0,
      restartIdentity: (options & 2) !== 0,
      relationIds: [...d.relationIds],
    });
    return done("Truncate", w, e);
  },

  /** `S` Stream Start. */
  streamStart(d: { xid: number; firstSegment: boolean }): Encoded {
    const w = start("S");
    writeFields(w, "S", d);
    return done("StreamStart", w, { xid: d.xid, firstSegment: d.firstSegment });
  },

  /** `E` Stream Stop. */
  streamStop(): Encoded {
    return done("StreamStop", start("E"), {});
  },

  /** `c` Stream Commit. */
  streamCommit(d: { xid: number; flags?: number; commitLsn: bigint; endLsn: bigint; commitTime: bigint }): Encoded {
    const flags = d.flags ?? 0;
    const w = start("c");
    writeFields(w, "c", { ...d, flags });
    return done("StreamCommit", w, { xid: d.xid, flags, commitLsn: d.commitLsn, endLsn: d.endLsn, commitTime: d.commitTime });
  },

  /** `A` Stream Abort; give `abortLsn` and `abortTime` (protocol 4, parallel streaming) or neither. */
  streamAbort(d: { xid: number; subXid: number; abortLsn?: bigint | null; abortTime?: bigint | null }): Encoded {
    const abortLsn = d.abortLsn ?? null;
    const abortTime = d.abortTime ?? null;
    if ((abortLsn === null) !== (abortTime === null)) throw new TypeError("abortLsn and abortTime go together");
    const w = start("A");
    writeFields(w, "A", { ...d, abortLsn, abortTime });
    return done("StreamAbort", w, { xid: d.xid, subXid: d.subXid, abortLsn, abortTime });
  },

  /** `b` Begin Prepare. */
  beginPrepare(d: { prepareLsn: bigint; endLsn: bigint; prepareTime: bigint; xid: number; gid: string }): Encoded {
    const w = start("b");
    writeFields(w, "b", d);
    return done("BeginPrepare", w, { prepareLsn: d.prepareLsn, endLsn: d.endLsn, prepareTime: d.prepareTime, xid: d.xid, gid: d.gid });
  },

  /** `P` Prepare. */
  prepare(d: PrepareDesc): Encoded {
    return preparedLike("P", "Prepare", d);
  },

  /** `p` Stream Prepare. */
  streamPrepare(d: PrepareDesc): Encoded {
    return preparedLike("p", "StreamPrepare", d);
  },

  /** `K` Commit Prepared. */
  commitPrepared(d: { flags?: number; commitLsn: bigint; endLsn: bigint; commitTime: bigint; xid: number; gid: string }): Encoded {
    const flags = d.flags ?? 0;
    const w = start("K");
    writeFields(w, "K", { ...d, flags });
    return done("CommitPrepared", w, {
      flags, commitLsn: d.commitLsn, endLsn: d.endLsn, commitTime: d.commitTime, xid: d.xid, gid: d.gid,
    });
  },

  /** `r` Rollback Prepared. */
  rollbackPrepared(d: {
    flags?: number; prepareEndLsn: bigint; rollbackEndLsn: bigint; prepareTime: bigint; rollbackTime: bigint; xid: number; gid: string;
  }): Encoded {
    const flags = d.flags ?? 0;
    const w = start("r");
    writeFields(w, "r", { ...d, flags });
    return done("RollbackPrepared", w, {
      flags, prepareEndLsn: d.prepareEndLsn, rollbackEndLsn: d.rollbackEndLsn,
      prepareTime: d.prepareTime, rollbackTime: d.rollbackTime, xid: d.xid, gid: d.gid,
    });
  },
};

/**
 * Builds a message back from a materialized value (what `materialize()`
 * returns): the inverse of decoding. Insert/Update/Delete values that name
 * their relation (`namespace`, `relationName`) expect it known again.
 */
export function encodeValue(value: Record<string, unknown>): Encoded {
  // The builders' descriptions are the materialized fields (plus `relation` for changes);
  // the value is untyped, so it is handed over as such.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const v = value as any;
  const relation = value.relationName === undefined
    ? undefined
    : { relationId: v.relationId, namespace: v.namespace, relationName: v.relationName };
  switch (value.kind as MessageKind) {
    case "Begin": return encode.begin(v);
    case "Commit": return encode.commit(v);
    case "Origin": return encode.origin(v);
    case "Message": return encode.message(v);
    case "Relation": return encode.relation(v);
    case "Type": return encode.type(v);
    case "Insert": return encode.insert({ ...v, relation });
    case "Update": return encode.update({ ...v, relation });
    case "Delete": return encode.delete({ ...v, relation });
    case "Truncate": return encode.truncate(v);
    case "StreamStart": return encode.streamStart(v);
    case "StreamStop": return encode.streamStop();
    case "StreamCommit": return encode.streamCommit(v);
    case "StreamAbort": return encode.streamAbort(v);
    case "BeginPrepare": return encode.beginPrepare(v);
    case "Prepare": return encode.prepare(v);
    case "CommitPrepared": return encode.commitPrepared(v);
    case "RollbackPrepared": return encode.rollbackPrepared(v);
    case "StreamPrepare": return encode.streamPrepare(v);
    default: throw new TypeError(`no message kind ${String(value.kind)}`);
  }
}

export interface PrepareDesc {
  flags?: number;
  prepareLsn: bigint;
  endLsn: bigint;
  prepareTime: bigint;
  xid: number;
  gid: string;
}

function preparedLike(tag: "P" | "p", kind: "Prepare" | "StreamPrepare", d: PrepareDesc): Encoded {
  const flags = d.flags ?? 0;
  const w = start(tag);
  writeFields(w, tag, { ...d, flags });
  return done(kind, w, { flags, prepareLsn: d.prepareLsn, endLsn: d.endLsn, prepareTime: d.prepareTime, xid: d.xid, gid: d.gid });
}

// ---------------------------------------------------------------------------
// Capture format

type MessageLike = Uint8Array | { bytes: Uint8Array };

function bytesOf(m: MessageLike): Uint8Array {
  return m instanceof Uint8Array ? m : m.bytes;
}

/** The capture format: each message as `[uint32 big-endian length][message]`. */
export function frame(list: readonly MessageLike[]): Uint8Array {
  let total = 0;
  for (const m of list) total += 4 + bytesOf(m).length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let p = 0;
  for (const m of list) {
    const b = bytesOf(m);
    view.setUint32(p, b.length);
    out.set(b, p + 4);
    p += 4 + b.length;
  }
  return out;
}

/** Offset of message `index`'s first byte (its tag) in `frame(list)`; `index === list.length` gives the total length + 4. */
export function framedOffset(list: readonly MessageLike[], index: number): number {
  let p = 0;
  for (let i = 0; i < index; i++) p += 4 + bytesOf(list[i]!).length;
  return p + 4;
}

/** Concatenates byte arrays. */
export const concat = (parts: readonly Uint8Array[]): Uint8Array => concatBytes(parts);

/** Hex dump for failure messages. */
export function hex(bytes: Uint8Array, max = 96): string {
  const s = Array.from(bytes.subarray(0, max), (b) => b.toString(16).padStart(2, "0")).join(" ");
  return bytes.length > max ? `${s} … (${bytes.length} bytes)` : s;
}

// ---------------------------------------------------------------------------
// Fixtures: one or more per message kind, with edge values

/** A message to decode after `setup` (decoded first, in order, on a reset decoder), optionally with decode options. */
export interface Fixture {
  readonly name: string;
  readonly setup: readonly Encoded[];
  readonly message: Encoded;
  readonly options?: DecodeOptions;
}

export const LSN_2_63 = 2n ** 63n;

/** Relations used by the fixtures. */
export const fixtureRelations = {
  users: {
    relationId: 16384,
    namespace: "public",
    relationName: "users",
    replicaIdentity: "d",
    columns: [
      { name: "id", typeId: 23, isKey: true },
      { name: "name", typeId: 25 },
      { name: "photo", typeId: 17 },
      { name: "bio", typeId: 25 },
    ],
  },
  // OID at the top of the unsigned range, non-ASCII names, replica identity full
  wide: {
    relationId: MAX_U32,
    namespace: "schéma_😀",
    relationName: "表",
    replicaIdentity: "f",
    columns: [
      { name: "ключ", typeId: 2 ** 31, typeModifier: 2 ** 31 - 1, isKey: true },
      { name: "", typeId: MAX_U32, typeModifier: -(2 ** 31) },
    ],
  },
  empty: { relationId: 2 ** 31, namespace: "", relationName: "", replicaIdentity: "n", columns: [] },
} satisfies Record<string, RelationDesc>;

/** The bytes of a tiny PNG header (a NUL and a 0xff in it): a bytea value for the fixtures. */
export const FIXTURE_PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0xff]);

/**
 * How the small all-kinds streams open (test/conformance.test.ts, test/portable/cases.ts):
 * Begin, Origin, users' Relation, a Type, then users' Insert, Update,
 * Update with a key old tuple and Delete, then empty's Relation.
 */
export function fixtureOpening(): Encoded[] {
  const { users, empty } = fixtureRelations;
  const png = FIXTURE_PNG;
  return [
    encode.begin({ finalLsn: 0x1000n, commitTime: 1_700_000_000_000_001n, xid: 700 }),
    encode.origin({ originLsn: 0xffn, name: "origin_ø" }),
    encode.relation(users),
    encode.type({ typeId: 40000, namespace: "public", typeName: "mood" }),
    encode.insert({ relation: users, newTuple: ["1", "Ann", png, null] }),
    encode.update({ relation: users, newTuple: ["1", "Ann B", png, UNCHANGED] }),
    encode.update({ relation: users, oldTupleType: "K", oldTuple: ["1", null, null, null], newTuple: ["2", "", new Uint8Array(0), "😀"] }),
    encode.delete({ relation: users, oldTupleType: "K", oldTuple: ["2", null, null, null] }),
    encode.relation(empty),
  ];
}

/** Every message kind, with variants and edge values; each decodes to its `expected` after its setup. */
export function fixtures(): Fixture[] {
  const { users, wide, empty } = fixtureRelations;
  const rUsers = encode.relation(users);
  const rWide = encode.relation(wide);
  const rEmpty = encode.relation(empty);
  const sStart = encode.streamStart({ xid: 2 ** 31 + 5, firstSegment: true });
  const XID = 2 ** 31 + 5;
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0x0d, 0x0a]);
  const list: Fixture[] = [];
  const add = (name: string, message: Encoded, setup: Encoded[] = [], options?: DecodeOptions) =>
    list.push({ name, message, setup, ...(options ? { options } : {}) });

  add("Begin", encode.begin({ finalLsn: 0x1_7864c0n, commitTime: 1_700_000_000_123_456n, xid: 742 }));
  add("Begin edge (xid 2^32-1, LSN 2^64-1, time before 2000)",
    encode.begin({ finalLsn: MAX_LSN, commitTime: 900_000_000_000_001n, xid: MAX_U32 }));
  add("Begin edge (xid 0, LSN 0, time before 1970)", encode.begin({ finalLsn: 0n, commitTime: -1n, xid: 0 }));
  add("Begin edge (xid 2^31, LSN 2^63, time = 2000-01-01)", encode.begin({ finalLsn: LSN_2_63, commitTime: PG_EPOCH_UNIX_US, xid: 2 ** 31 }));
  add("Begin with ±infinity timestamps", encode.begin({ finalLsn: 1n, commitTime: TIME_POS_INFINITY, xid: 1 }));
  add("Commit", encode.commit({ commitLsn: 0x16_b374d848n, endLsn: 0x16_b374d878n, commitTime: 1_700_000_000_654_321n }));
  add("Commit edge", encode.commit({ commitLsn: LSN_2_63 + 1n, endLsn: MAX_LSN, commitTime: TIME_NEG_INFINITY }));
  add("Origin", encode.origin({ originLsn: 0xabcdefn, name: "node_a" }));
  add("Origin empty name, max LSN", encode.origin({ originLsn: MAX_LSN, name: "" }));
  add("Origin non-ASCII name", encode.origin({ originLsn: 1n, name: "ŋöde-😀-東京" }));
  add("Message transactional", encode.message({ transactional: true, lsn: 0x100n, prefix: "app", content: "héllo 😀" }));
  add("Message non-transactional, binary content", encode.message({ transactional: false, lsn: MAX_LSN, prefix: "bin", content: png }));
  add("Message empty prefix and content", encode.message({ transactional: true, lsn: 0n, prefix: "", content: new Uint8Array(0) }));
  add("Message in stream (xid)", encode.message({ xid: XID, transactional: true, lsn: 5n, prefix: "p", content: "x" }), [sStart]);
  add("Relation", rUsers);
  add("Relation edge (OID 2^32-1, type OID 2^31, non-ASCII, empty column name)", rWide);
  add("Relation with zero columns", rEmpty);
  add("Relation in stream (xid)", encode.relation({ ...users, xid: XID }), [sStart]);
  add("Relation with identity index", encode.relation({ ...users, relationId: 1, replicaIdentity: "i" }));
  add("Type", encode.type({ typeId: 16500, namespace: "public", typeName: "mood" }));
  add("Type edge", encode.type({ typeId: MAX_U32, namespace: "", typeName: "тип😀" }));
  add("Type in stream (xid)", encode.type({ xid: 0, typeId: 0, namespace: "s", typeName: "t" }), [sStart]);
  add("Insert all column kinds", encode.insert({ relation: users, newTuple: ["1", "Ann", png, null] }), [rUsers]);
  add("Insert unchanged column", encode.insert({ relation: users, newTuple: ["1", "", new Uint8Array(0), UNCHANGED] }), [rUsers]);
  add("Insert unknown relation", encode.insert({ relationId: 99, newTuple: ["a", null, "c"] }));
  add("Insert zero columns", encode.insert({ relation: empty, newTuple: [] }), [rEmpty]);
  add("Insert non-ASCII", encode.insert({ relation: wide, newTuple: ["😀é東", "\u{10ffff}"] }), [rWide]);
  add("Insert in stream (xid)", encode.insert({ xid: XID, relation: users, newTuple: ["2", "B", null, "x"] }), [rUsers, sStart]);
  add("Insert in stream via option", encode.insert({ xid: MAX_U32, relation: users, newTuple: ["2", "B", null, "x"] }), [rUsers], { inStream: true });
  add("Update without old row", encode.update({ relation: users, newTuple: ["1", "Bob", null, UNCHANGED] }), [rUsers]);
  add("Update K", encode.update({ relation: users, oldTupleType: "K", oldTuple: ["1", null, null, null], newTuple: ["7", "Bob", png, "bio"] }), [rUsers]);
  add("Update O", encode.update({ relation: wide, oldTupleType: "O", oldTuple: ["a", null], newTuple: ["b", UNCHANGED] }), [rWide]);
  add("Update in stream (xid)", encode.update({ xid: XID, relation: users, oldTupleType: "K", oldTuple: ["1", null, null, null], newTuple: ["1", "a", null, null] }), [rUsers, sStart]);
  add("Update zero columns", encode.update({ relation: empty, oldTupleType: "O", oldTuple: [], newTuple: [] }), [rEmpty]);
  add("Delete K", encode.delete({ relation: users, oldTupleType: "K", oldTuple: ["1", null, null, null] }), [rUsers]);
  add("Delete O", encode.delete({ relation: wide, oldTupleType: "O", oldTuple: ["x", "y"] }), [rWide]);
  add("Delete in stream (xid)", encode.delete({ xid: XID, relation: users, oldTupleType: "O", oldTuple: ["1", "a", png, null] }), [rUsers, sStart]);
  add("Truncate", encode.truncate({ cascade: true, relationIds: [16384] }), [rUsers]);
  add("Truncate many, restart identity, edge OIDs", encode.truncate({ options: 3, relationIds: [0, 2 ** 31, MAX_U32, 16384] }), [rUsers]);
  add("Truncate zero relations", encode.truncate({ options: 2, relationIds: [] }));
  add("Truncate in stream (xid)", encode.truncate({ xid: XID, options: 0, relationIds: [16384] }), [sStart]);
  add("StreamStart first", encode.streamStart({ xid: XID, firstSegment: true }));
  add("StreamStart later segment", encode.streamStart({ xid: MAX_U32, firstSegment: false }));
  add("StreamStop", encode.streamStop(), [sStart]);
  add("StreamCommit", encode.streamCommit({ xid: XID, commitLsn: 0x20n, endLsn: 0x40n, commitTime: 1_600_000_000_000_000n }));
  add("StreamCommit edge", encode.streamCommit({ xid: MAX_U32, commitLsn: MAX_LSN, endLsn: LSN_2_63, commitTime: -62_135_596_800_000_000n }));
  add("StreamAbort (v2)", encode.streamAbort({ xid: XID, subXid: XID }));
  add("StreamAbort subtransaction (v2)", encode.streamAbort({ xid: 10, subXid: MAX_U32 }));
  add("StreamAbort (v4 abort LSN and time)", encode.streamAbort({ xid: XID, subXid: XID + 1, abortLsn: MAX_LSN, abortTime: -123_456_789n }));
  add("BeginPrepare", encode.beginPrepare({ prepareLsn: 0x10n, endLsn: 0x20n, prepareTime: 1_700_000_000_000_001n, xid: 77, gid: "gid-1" }));
  add("BeginPrepare edge", encode.beginPrepare({ prepareLsn: MAX_LSN, endLsn: 0n, prepareTime: 0n, xid: MAX_U32, gid: "" }));
  add("Prepare", encode.prepare({ prepareLsn: 0x10n, endLsn: 0x20n, prepareTime: 946_684_799_999_999n, xid: 2 ** 31, gid: "gid-😀" }));
  add("CommitPrepared", encode.commitPrepared({ commitLsn: LSN_2_63, endLsn: MAX_LSN, commitTime: 1n, xid: MAX_U32, gid: "g" }));
  add("RollbackPrepared", encode.rollbackPrepared({
    prepareEndLsn: 0x30n, rollbackEndLsn: MAX_LSN, prepareTime: -1_000_000n, rollbackTime: 1_700_000_000_000_000n, xid: 3, gid: "gid-Ω",
  }));
  add("StreamPrepare", encode.streamPrepare({ prepareLsn: 1n, endLsn: 2n, prepareTime: 3n, xid: XID, gid: "stream-gid" }));
  return list;
}

/**
 * Fast structural equality for decoded values (plain objects, arrays,
 * Uint8Array, bigint, primitives) — the hot-loop companion of `toEqual`:
 * check with it, and call `expect(...).toEqual(...)` only to report a
 * difference. Keys whose value is `undefined` count as absent, as for `toEqual`.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    if (!(a instanceof Uint8Array && b instanceof Uint8Array) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  if (ak.length !== bk.length) return false;
  for (const k of ak) if (!deepEqual(ao[k], bo[k])) return false;
  return true;
}
