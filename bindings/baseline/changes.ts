/**
 * Row changes: Insert (`I`), Update (`U`), Delete (`D`) and Truncate (`T`).
 * A change names its relation by OID; the view holds the cache entry current
 * when the message was decoded (or `undefined` if none was seen).
 */
import type { Delete, Insert, OldTupleType, Truncate, Update } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { ParseContext } from "./context.ts";
import type { Reader } from "./reader.ts";
import { type BaselineTuple, checkColumnCount, parseTupleData } from "./tuple.ts";
import { type Lease, MessageView } from "./view.ts";

const NEW = 0x4e; // N
const KEY = 0x4b; // K
const OLD = 0x4f; // O

/** `I`: [xid], Int32 relation OID, Byte1 `N`, TupleData. */
export function parseInsert(r: Reader, ctx: ParseContext): InsertView {
  const xid = ctx.inStream ? r.u32("xid") : undefined;
  const relationId = r.u32("relationId");
  const relation = ctx.relations.get(relationId);
  if (r.u8("tupleType") !== NEW) throw r.error("INVALID_VALUE", "tupleType", r.pos - 1, "expected N before the new tuple");
  const at = r.pos;
  const newTuple = parseTupleData(r, ctx, "newTuple", relation);
  r.done();
  checkColumnCount(r, relation, "newTuple", at);
  return new InsertView(ctx.lease, r.bytes, r.start, r.end, xid, relationId, relation, newTuple);
}

/** Members of Insert, Update and Delete. */
abstract class ChangeView extends MessageView {
  readonly #xid: number | undefined;
  readonly #relationId: number;
  readonly #relation: Relation | undefined;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number,
    xid: number | undefined, relationId: number, relation: Relation | undefined,
  ) {
    super(lease, bytes, start, end);
    this.#xid = xid;
    this.#relationId = relationId;
    this.#relation = relation;
  }

  get xid(): number | undefined {
    this.live();
    return this.#xid;
  }
  get relationId(): number {
    this.live();
    return this.#relationId;
  }
  get relation(): Relation | undefined {
    this.live();
    return this.#relation;
  }
}

export class InsertView extends ChangeView implements Insert {
  readonly #newTuple: BaselineTuple;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number,
    xid: number | undefined, relationId: number, relation: Relation | undefined, newTuple: BaselineTuple,
  ) {
    super(lease, bytes, start, end, xid, relationId, relation);
    this.#newTuple = newTuple;
  }

  get kind(): "Insert" {
    this.live();
    return "Insert";
  }
  get newTuple(): BaselineTuple {
    this.live();
    return this.#newTuple;
  }
}

/** `U`: [xid], Int32 relation OID, optionally `K` or `O` + TupleData, then `N` + TupleData. */
export function parseUpdate(r: Reader, ctx: ParseContext): UpdateView {
  const xid = ctx.inStream ? r.u32("xid") : undefined;
  const relationId = r.u32("relationId");
  const relation = ctx.relations.get(relationId);
  let type = r.u8("tupleType");
  let oldTupleType: OldTupleType | null = null;
  let oldTuple: BaselineTuple | null = null;
  let oldAt = -1;
  if (type === KEY || type === OLD) {
    oldTupleType = type === KEY ? "K" : "O";
    oldAt = r.pos;
    oldTuple = parseTupleData(r, ctx, "oldTuple", relation);
    type = r.u8("tupleType");
  }
  if (type !== NEW) {
    const expected = oldTuple === null ? "K, O or N" : "N";
    throw r.error("INVALID_VALUE", "tupleType", r.pos - 1, `invalid tuple type 0x${type.toString(16)} (expected ${expected})`);
  }
  const newAt = r.pos;
  const newTuple = parseTupleData(r, ctx, "newTuple", relation);
  r.done();
  if (oldAt >= 0) checkColumnCount(r, relation, "oldTuple", oldAt);
  checkColumnCount(r, relation, "newTuple", newAt);
  return new UpdateView(ctx.lease, r.bytes, r.start, r.end, xid, relationId, relation, oldTupleType, oldTuple, newTuple);
}

export class UpdateView extends ChangeView implements Update {
  readonly #oldTupleType: OldTupleType | null;
  readonly #oldTuple: BaselineTuple | null;
  readonly #newTuple: BaselineTuple;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number,
    xid: number | undefined, relationId: number, relation: Relation | undefined,
    oldTupleType: OldTupleType | null, oldTuple: BaselineTuple | null, newTuple: BaselineTuple,
  ) {
    super(lease, bytes, start, end, xid, relationId, relation);
    this.#oldTupleType = oldTupleType;
    this.#oldTuple = oldTuple;
    this.#newTuple = newTuple;
  }

  get kind(): "Update" {
    this.live();
    return "Update";
  }
  get oldTupleType(): OldTupleType | null {
    this.live();
    return this.#oldTupleType;
  }
  get oldTuple(): BaselineTuple | null {
    this.live();
    return this.#oldTuple;
  }
  get newTuple(): BaselineTuple {
    this.live();
    return this.#newTuple;
  }
}

/** `D`: [xid], Int32 relation OID, Byte1 `K` or `O`, TupleData. */
export function parseDelete(r: Reader, ctx: ParseContext): DeleteView {
  const xid = ctx.inStream ? r.u32("xid") : undefined;
  const relationId = r.u32("relationId");
  const relation = ctx.relations.get(relationId);
  const type = r.u8("tupleType");
  if (type !== KEY && type !== OLD) {
    throw r.error("INVALID_VALUE", "tupleType", r.pos - 1, `invalid tuple type 0x${type.toString(16)} (expected K or O)`);
  }
  const at = r.pos;
  const oldTuple = parseTupleData(r, ctx, "oldTuple", relation);
  r.done();
  checkColumnCount(r, relation, "oldTuple", at);
  return new DeleteView(ctx.lease, r.bytes, r.start, r.end, xid, relationId, relation, type === KEY ? "K" : "O", oldTuple);
}

export class DeleteView extends ChangeView implements Delete {
  readonly #oldTupleType: OldTupleType;
  readonly #oldTuple: BaselineTuple;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number,
    xid: number | undefined, relationId: number, relation: Relation | undefined,
    oldTupleType: OldTupleType, oldTuple: BaselineTuple,
  ) {
    super(lease, bytes, start, end, xid, relationId, relation);
    this.#oldTupleType = oldTupleType;
    this.#oldTuple = oldTuple;
  }

  get kind(): "Delete" {
    this.live();
    return "Delete";
  }
  get oldTupleType(): OldTupleType {
    this.live();
    return this.#oldTupleType;
  }
  get oldTuple(): BaselineTuple {
    this.live();
    return this.#oldTuple;
  }
}

/** `T`: [xid], Int32 nrels, Int8 options, Int32 relation OID × nrels. */
export function parseTruncate(r: Reader, ctx: ParseContext): TruncateView {
  const xid = ctx.inStream ? r.u32("xid") : undefined;
  const n = r.i32("relationCount");
  if (n < 0) throw r.error("INVALID_LENGTH", "relationCount", r.pos - 4, `negative relation count ${n}`);
  const options = r.u8("options");
  const room = r.end - r.pos;
  // Check the count before allocating: a corrupt count must not size an array.
  if (n > room >> 2) throw r.error("INCOMPLETE", "relationIds", r.pos + (room & ~3), `message ends after ${room >> 2} of ${n} relation OIDs`);
  const relationIds: number[] = new Array(n);
  const relations: (Relation | undefined)[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const id = r.u32("relationIds");
    relationIds[i] = id;
    relations[i] = ctx.relations.get(id);
  }
  r.done();
  return new TruncateView(ctx.lease, r.bytes, r.start, r.end, xid, options, relationIds, relations);
}

export class TruncateView extends MessageView implements Truncate {
  readonly #xid: number | undefined;
  readonly #options: number;
  readonly #relationIds: readonly number[];
  readonly #relations: readonly (Relation | undefined)[];

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number | undefined,
    options: number, relationIds: readonly number[], relations: readonly (Relation | undefined)[],
  ) {
    super(lease, bytes, start, end);
    this.#xid = xid;
    this.#options = options;
    this.#relationIds = relationIds;
    this.#relations = relations;
  }

  get kind(): "Truncate" {
    this.live();
    return "Truncate";
  }
  get xid(): number | undefined {
    this.live();
    return this.#xid;
  }
  get options(): number {
    this.live();
    return this.#options;
  }
  get cascade(): boolean {
    this.live();
    return (this.#options & 1) !== 0;
  }
  get restartIdentity(): boolean {
    this.live();
    return (this.#options & 2) !== 0;
  }
  get relationIds(): readonly number[] {
    this.live();
    return this.#relationIds;
  }
  get relations(): readonly (Relation | undefined)[] {
    this.live();
    return this.#relations;
  }
}
