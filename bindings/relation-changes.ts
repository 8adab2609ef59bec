/**
 * Schema changes seen in the stream: a `RelationChanged` item when a
 * Relation message describes its table differently from the one seen before
 * for the same OID — a column added, dropped or renamed, a type or type
 * modifier changed, a column's key flag changed, the replica identity or
 * the table's name or schema changed. pgoutput sends a Relation message
 * before the first change of a table in a session and again after anything
 * invalidates its cache entry, often with nothing different: those say
 * nothing new and make no item.
 *
 * Where it lives: the comparison needs the shape last *handed over*, not the
 * decoder's cache, which is reset on every reconnect (the server sends every
 * Relation again) and runs ahead of the consumer by a batch. So each
 * consumer of a stream in order — the stream's iteration, the pipeline after
 * it replays streamed transactions — keeps a `RelationShapes` of its own,
 * fed the Relation messages as it hands them on. It remembers what it
 * changed until the transaction that carried it is confirmed: a new
 * connection starts over from the confirmed position, and `rollback()` puts
 * the shapes back as they were there, so a redelivered transaction carries
 * the same RelationChanged items as its first delivery.
 *
 * pgoutput sends no column numbers, only the columns in order (dropped ones
 * left out), so columns are matched by name; an unmatched old column and an
 * unmatched new one at the same position are a rename (a drop of the last
 * column and an add between two changes look the same: no protocol field
 * tells them apart).
 */
import type { Relation, RelationColumn, ReplicaIdentity } from "./relation.ts";
import { formatLsn } from "./lsn.ts";

/** One difference between two shapes of a relation. */
export type RelationChange =
  | { readonly kind: "columnAdded"; readonly column: string; readonly typeId: number; readonly typeModifier: number; readonly isKey: boolean }
  | { readonly kind: "columnDropped"; readonly column: string }
  | { readonly kind: "columnRenamed"; readonly column: string; readonly oldName: string }
  | { readonly kind: "typeChanged"; readonly column: string; readonly oldTypeId: number; readonly oldTypeModifier: number; readonly typeId: number; readonly typeModifier: number }
  | { readonly kind: "keyChanged"; readonly column: string; readonly isKey: boolean }
  | { readonly kind: "replicaIdentityChanged"; readonly oldReplicaIdentity: ReplicaIdentity; readonly replicaIdentity: ReplicaIdentity }
  | { readonly kind: "relationRenamed"; readonly oldNamespace: string; readonly oldName: string; readonly namespace: string; readonly name: string };

/**
 * A Relation message that changed its table's shape, delivered right after
 * it: in stream order, before the first change of the new shape.
 *
 * @example
 * ```ts
 * for await (const item of stream) {
 *   if (item.kind === "RelationChanged") {
 *     for (const c of item.changes) if (c.kind === "columnAdded") await addColumn(item.relation.name, c.column);
 *   }
 * }
 * ```
 */
export interface RelationChanged {
  readonly kind: "RelationChanged";
  /** OID of the relation. */
  readonly relationId: number;
  /**
   * The shape handed over before. `undefined` only in the pipeline, for a
   * table first seen inside the transaction a restart resumed in the
   * middle of (Pipeline: what the destination holds is positioned).
   */
  readonly previous: Relation | undefined;
  /** The shape from now on (the decoder's cache entry). */
  readonly relation: Relation;
  /** What differs, in column order; empty when `previous` is unknown. */
  readonly changes: readonly RelationChange[];
  /** The Relation message's WAL position (its XLogData start), when it came in one. */
  readonly walStart: bigint | undefined;
  /** Inside a streamed transaction's block: its xid. */
  readonly xid: number | undefined;
  /** Plain fields (Relations as their `toJSON()`), bigints kept. */
  materialize(): Record<string, unknown>;
  /** JSON-safe: LSN as `X/Y`. */
  toJSON(): Record<string, unknown>;
}

/** The differences between two shapes of a relation (empty: the same shape). */
export function relationChanges(old: Relation, now: Relation): RelationChange[] {
  const out: RelationChange[] = [];
  if (old.namespace !== now.namespace || old.name !== now.name) {
    out.push({ kind: "relationRenamed", oldNamespace: old.namespace, oldName: old.name, namespace: now.namespace, name: now.name });
  }
  if (old.replicaIdentity !== now.replicaIdentity) {
    out.push({ kind: "replicaIdentityChanged", oldReplicaIdentity: old.replicaIdentity, replicaIdentity: now.replicaIdentity });
  }
  const before = old.columns;
  const after = now.columns;
  const oldNames = new Set(before.map((c) => c.name));
  const newNames = new Set(after.map((c) => c.name));
  // A rename: an old column no longer there, at the same position as a new column that was not there.
  const renamedFrom = new Map<number, RelationColumn>();
  for (let i = 0; i < Math.min(before.length, after.length); i++) {
    if (!newNames.has(before[i]!.name) && !oldNames.has(after[i]!.name)) renamedFrom.set(i, before[i]!);
  }
  const renamedOld = new Set([...renamedFrom.values()].map((c) => c.name));
  for (const c of before) {
    if (!newNames.has(c.name) && !renamedOld.has(c.name)) out.push({ kind: "columnDropped", column: c.name });
  }
  const byName = new Map(before.map((c) => [c.name, c]));
  after.forEach((c, i) => {
    const from = renamedFrom.get(i);
    const was = from ?? byName.get(c.name);
    if (from !== undefined) out.push({ kind: "columnRenamed", column: c.name, oldName: from.name });
    if (was === undefined) {
      out.push({ kind: "columnAdded", column: c.name, typeId: c.typeId, typeModifier: c.typeModifier, isKey: c.isKey });
      return;
    }
    if (was.typeId !== c.typeId || was.typeModifier !== c.typeModifier) {
      out.push({ kind: "typeChanged", column: c.name, oldTypeId: was.typeId, oldTypeModifier: was.typeModifier, typeId: c.typeId, typeModifier: c.typeModifier });
    }
    if (was.isKey !== c.isKey) out.push({ kind: "keyChanged", column: c.name, isKey: c.isKey });
  });
  return out;
}

/** A RelationChanged item (plain object; its Relations are cache entries, which outlive any batch). */
export function relationChanged(
  previous: Relation | undefined, relation: Relation, changes: readonly RelationChange[], walStart: bigint | undefined, xid: number | undefined,
): RelationChanged {
  const plain = (json: boolean): Record<string, unknown> => ({
    kind: "RelationChanged",
    relationId: relation.relationId,
    previous: previous?.toJSON(),
    relation: relation.toJSON(),
    changes: changes.map((c) => ({ ...c })),
    walStart: json && walStart !== undefined ? formatLsn(walStart) : walStart,
    xid,
  });
  return {
    kind: "RelationChanged", relationId: relation.relationId, previous, relation, changes, walStart, xid,
    materialize: () => plain(false), toJSON: () => plain(true),
  };
}

interface Undo {
  relationId: number;
  previous: Relation | undefined;
  /** The end of the transaction that carried it, once it ended; until then `undefined`. */
  endLsn: bigint | undefined;
}

/**
 * The shapes handed over, by OID, and what changed them since the
 * confirmed position (see the file's comment).
 */
export class RelationShapes {
  readonly #shapes = new Map<number, Relation>();
  #undo: Undo[] = [];

  /**
   * A Relation message handed over: its item if the shape differs from the
   * one before (`baseline`: a first sight makes one too, with no previous).
   */
  observe(msg: { relation: Relation; walStart?: bigint; xid?: number | undefined }, baseline = false): RelationChanged | undefined {
    const now = msg.relation;
    const old = this.#shapes.get(now.relationId);
    const changes = old === undefined ? [] : relationChanges(old, now);
    this.#shapes.set(now.relationId, now);
    if (old !== undefined && changes.length === 0) return undefined;
    this.#undo.push({ relationId: now.relationId, previous: old, endLsn: undefined });
    return old === undefined && !baseline ? undefined : relationChanged(old, now, changes, msg.walStart, msg.xid);
  }

  /** Whether a change observed waits for its transaction's end (ended() has something to do). */
  get awaitingEnd(): boolean {
    const undo = this.#undo;
    return undo.length > 0 && undo[undo.length - 1]!.endLsn === undefined;
  }

  /** A transaction ended at `endLsn` (handed over): the changes it carried are undone until that is confirmed. */
  ended(endLsn: bigint): void {
    for (let i = this.#undo.length - 1; i >= 0 && this.#undo[i]!.endLsn === undefined; i--) this.#undo[i]!.endLsn = endLsn;
  }

  /** Everything that ends at or before `lsn` is confirmed: its shapes stay whatever comes. */
  confirmed(lsn: bigint): void {
    if (this.#undo.length === 0) return;
    let keep = 0;
    while (keep < this.#undo.length && this.#undo[keep]!.endLsn !== undefined && this.#undo[keep]!.endLsn! <= lsn) keep++;
    if (keep > 0) this.#undo = this.#undo.slice(keep);
  }

  /** The stream starts over from the confirmed position: the shapes as they were there. */
  rollback(): void {
    for (let i = this.#undo.length - 1; i >= 0; i--) {
      const u = this.#undo[i]!;
      if (u.previous === undefined) this.#shapes.delete(u.relationId);
      else this.#shapes.set(u.relationId, u.previous);
    }
    this.#undo = [];
  }
}
