/**
 * What the drop-in keeps of a stream, as pg-logical-replication's
 * PgoutputPlugin does: the relations by OID (the very object a Relation
 * message was emitted as is the `relation` of later changes) and the names
 * from Type messages; and, per relation, how its rows are built (RowPlan).
 */
import type { Relation } from "../relation.ts";
import type * as T from "./types.ts";
import type { TypeParserSource } from "./type-parsers.ts";
import { fastParserFor } from "./pg-defaults.ts";
import type { FastParser } from "./fast-parsers.ts";
import { rowBuilder, type RowBuilder } from "./rows.ts";
import { compiledRow, type CompiledRow } from "./row-code.ts";

const REPLICA_IDENTITY: Record<Relation["replicaIdentity"], T.MessageRelation["replicaIdentity"]> = {
  d: "default",
  n: "nothing",
  f: "full",
  i: "index",
};

/** What the row readers need of a relation's columns, in arrays (made once per Relation message). */
export interface RowPlan {
  names: string[];
  parsers: T.RelationColumn["parser"][];
  /** The column's fast parser, where its parser is still pg-types' default (pg-defaults.ts). */
  fast: (FastParser | undefined)[];
  /** Makes the row object from the column values (rows.ts). */
  build: RowBuilder;
  /** The compiled reader of whole rows (row-code.ts); `undefined` where code generation is refused. */
  read: CompiledRow | undefined;
  /** Indices of the key columns, and the maker of key objects from their values. */
  keys: number[];
  buildKey: RowBuilder;
}

export class CompatRelations {
  readonly #relations = new Map<number, T.MessageRelation>();
  readonly #types = new Map<number, { typeSchema: string; typeName: string }>();
  readonly #plans = new WeakMap<T.MessageRelation, RowPlan>();
  readonly #parsers: () => TypeParserSource;

  /** `parsers` is asked for once per Relation message (so it can load lazily). */
  constructor(parsers: () => TypeParserSource) {
    this.#parsers = parsers;
  }

  /** Forgets relations and types (pg-logical-replication never does; PostgreSQL re-sends them per session anyway). */
  clear(): void {
    this.#relations.clear();
    this.#types.clear();
  }

  /** A Type message's names, for the columns of later Relation messages. */
  type(typeOid: number, typeSchema: string, typeName: string): void {
    this.#types.set(typeOid, { typeSchema, typeName });
  }

  /** The relation a change names; pg-logical-replication's error when no Relation message came first. */
  known(relationId: number, what: string): T.MessageRelation {
    const relation = this.#relations.get(relationId);
    if (relation === undefined) {
      throw new Error(`missing relation: ${what} for relation OID ${relationId} before any Relation message for it`);
    }
    return relation;
  }

  /** The relation as a Truncate lists it (`undefined` when unknown, as pg-logical-replication gives). */
  get(relationId: number): T.MessageRelation {
    return this.#relations.get(relationId)!;
  }

  plan(relation: T.MessageRelation): RowPlan {
    return this.#plans.get(relation)!;
  }

  /** A Relation message: its object (kept for the changes that follow) and its row plan, with the type parsers of now. */
  define(rel: Relation): T.MessageRelation {
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
    const rowParsers = columns.map((c) => c.parser);
    const fast = columns.map((c) => fastParserFor(c.typeOid, c.parser));
    this.#plans.set(out, {
      names,
      parsers: rowParsers,
      fast,
      build: rowBuilder(names),
      read: compiledRow(names, rowParsers, fast),
      keys,
      buildKey: rowBuilder(out.keyColumns),
    });
    return out;
  }
}
