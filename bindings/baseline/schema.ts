/**
 * Schema messages: Relation (`R`) and Type (`Y`). Both update the decoder's
 * caches once the whole message has been read and found valid.
 */
import type { RelationColumn, RelationMessage, ReplicaIdentity, TypeMessage } from "../messages.ts";
import type { TypeInfo } from "../decoder.ts";
import { Relation } from "../relation.ts";
import { readString } from "../utf8.ts";
import type { ParseContext } from "./context.ts";
import type { Reader } from "./reader.ts";
import { type Lease, MessageView } from "./view.ts";
import { copyBytes } from "../copy-bytes.ts";

const REPLICA_DEFAULT = 0x64; // d
const REPLICA_NOTHING = 0x6e; // n
const REPLICA_FULL = 0x66; // f
const REPLICA_INDEX = 0x69; // i

/**
 * `R`: [xid], Int32 OID, String namespace, String name, Int8 replica identity,
 * Int16 ncols, then per column Int8 flags, String name, Int32 type OID, Int32 typmod.
 * Replaces the relation's cache entry with a `Relation` over a private copy of the message.
 */
export function parseRelation(r: Reader, ctx: ParseContext): RelationView {
  const xid = ctx.inStream ? r.u32("xid") : undefined;
  const relationId = r.u32("relationId");
  const namespaceOffset = r.string("namespace");
  const namespaceLength = r.stringLength;
  const nameOffset = r.string("relationName");
  const nameLength = r.stringLength;
  const replicaIdentity = r.u8("replicaIdentity");
  if (
    replicaIdentity !== REPLICA_DEFAULT && replicaIdentity !== REPLICA_NOTHING &&
    replicaIdentity !== REPLICA_FULL && replicaIdentity !== REPLICA_INDEX
  ) {
    throw r.error("INVALID_VALUE", "replicaIdentity", r.pos - 1, `invalid replica identity 0x${replicaIdentity.toString(16)} (expected d, n, f or i)`);
  }
  const n = r.i16("columnCount");
  if (n < 0) throw r.error("INVALID_LENGTH", "columnCount", r.pos - 2, `negative column count ${n}`);

  const b = r.bytes;
  const start = r.start;
  const end = r.end;
  // Per column: offset of its flags byte (relative to the copy) and length of its name.
  const columns = new Int32Array(2 * n);
  let p = r.pos;
  for (let i = 0; i < n; i++) {
    if (p >= end) throw r.error("INCOMPLETE", `columns[${i}].flags`, p, "message ends before a column");
    let q = p + 1;
    while (q < end && b[q] !== 0) q++;
    if (q === end) throw r.error("INCOMPLETE", `columns[${i}].name`, p + 1, "no NUL terminates a column name before the message ends");
    columns[2 * i] = p - start;
    columns[2 * i + 1] = q - p - 1;
    p = q + 1;
    if (end - p < 4) throw r.error("INCOMPLETE", `columns[${i}].typeId`, p, "message ends inside a column type OID");
    if (end - p < 8) throw r.error("INCOMPLETE", `columns[${i}].typeModifier`, p + 4, "message ends inside a column type modifier");
    p += 8;
  }
  r.pos = p;
  r.done();

  const relation = new Relation(copyBytes(b, start, end), {
    relationId,
    namespaceOffset: namespaceOffset - start,
    namespaceLength,
    nameOffset: nameOffset - start,
    nameLength,
    replicaIdentity,
    columns,
  });
  ctx.relations.set(relationId, relation);
  return new RelationView(ctx.lease, b, start, end, xid, relation);
}

/** The Relation message; its strings and columns come from the cache entry it created. */
export class RelationView extends MessageView implements RelationMessage {
  readonly #xid: number | undefined;
  readonly #relation: Relation;

  constructor(lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number | undefined, relation: Relation) {
    super(lease, bytes, start, end);
    this.#xid = xid;
    this.#relation = relation;
  }

  get kind(): "Relation" {
    this.live();
    return "Relation";
  }
  get xid(): number | undefined {
    this.live();
    return this.#xid;
  }
  get relationId(): number {
    this.live();
    return this.#relation.relationId;
  }
  get namespace(): string {
    this.live();
    return this.#relation.namespace;
  }
  get relationName(): string {
    this.live();
    return this.#relation.name;
  }
  get replicaIdentity(): ReplicaIdentity {
    this.live();
    return this.#relation.replicaIdentity;
  }
  get columns(): readonly RelationColumn[] {
    this.live();
    return this.#relation.columns;
  }
  get relation(): Relation {
    this.live();
    return this.#relation;
  }
}

/** `Y`: [xid], Int32 type OID, String namespace, String type name. Replaces the type's cache entry. */
export function parseType(r: Reader, ctx: ParseContext): TypeView {
  const xid = ctx.inStream ? r.u32("xid") : undefined;
  const typeId = r.u32("typeId");
  const namespaceOffset = r.string("namespace");
  const namespaceLength = r.stringLength;
  const nameOffset = r.string("typeName");
  const nameLength = r.stringLength;
  r.done();
  const b = r.bytes;
  // Decoded now: the cache entry outlives the input.
  const info: TypeInfo = {
    typeId,
    namespace: readString(b, namespaceOffset, namespaceLength),
    typeName: readString(b, nameOffset, nameLength),
  };
  ctx.types.set(typeId, info);
  ctx.values.learnType(typeId, info.namespace, info.typeName);
  return new TypeView(ctx.lease, b, r.start, r.end, xid, info);
}

export class TypeView extends MessageView implements TypeMessage {
  readonly #xid: number | undefined;
  readonly #info: TypeInfo;

  constructor(lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number | undefined, info: TypeInfo) {
    super(lease, bytes, start, end);
    this.#xid = xid;
    this.#info = info;
  }

  get kind(): "Type" {
    this.live();
    return "Type";
  }
  get xid(): number | undefined {
    this.live();
    return this.#xid;
  }
  get typeId(): number {
    this.live();
    return this.#info.typeId;
  }
  get namespace(): string {
    this.live();
    return this.#info.namespace;
  }
  get typeName(): string {
    this.live();
    return this.#info.typeName;
  }
}
