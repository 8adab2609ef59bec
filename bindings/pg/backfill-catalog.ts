/**
 * What a backfill reads, from the catalogs: the table as the publications
 * publish it (snapshot-catalog.ts: columns, row filter, the Relation and
 * Type messages) and the key its chunks are ordered by — the primary key,
 * or a unique index whose columns are all NOT NULL (no expressions, no
 * predicate). The key must be one a live change carries: the replica
 * identity's (pgoutput sends it as the old key of an Update that changes it
 * and of a Delete), or any with REPLICA IDENTITY FULL. Anything else is
 * refused with what to change.
 */
import type { Client } from "pg";
import { quoteIdent } from "./commands.ts";
import { ReplicationError } from "./errors.ts";
import { readSnapshotTables, sqlLiteral, type SnapshotTable } from "./snapshot-catalog.ts";

/** A table to backfill. */
export interface BackfillTable extends SnapshotTable {
  /** `schema.table`. */
  qualified: string;
  /** The key's columns, in index order: names, SQL types (`format_type`), and positions among `columns`. */
  key: { name: string; type: string; position: number }[];
}

interface KeyRow {
  primary: boolean;
  replident: boolean;
  names: string[];
  types: string[];
}

/** INVALID_OPTION, the message prefixed with `backfill:`. */
export function refused(message: string): ReplicationError {
  return new ReplicationError(`backfill: ${message}`, { code: "INVALID_OPTION" });
}

const keysQuery = (oid: number): string => `SELECT i.indisprimary AS primary, i.indisreplident AS replident,
    array(SELECT a.attname FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(n, o) JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n
          WHERE k.o <= i.indnkeyatts ORDER BY k.o)::text[] AS names,
    array(SELECT pg_catalog.format_type(a.atttypid, a.atttypmod) FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(n, o)
          JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n WHERE k.o <= i.indnkeyatts ORDER BY k.o)::text[] AS types
  FROM pg_catalog.pg_index i
  WHERE i.indrelid = ${oid}::oid AND i.indisunique AND i.indisvalid AND i.indimmediate AND i.indpred IS NULL AND i.indexprs IS NULL
    AND NOT EXISTS (SELECT 1 FROM unnest(i.indkey::int2[]) k(n) JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n WHERE NOT a.attnotnull)
  ORDER BY i.indisprimary DESC, i.indisreplident DESC, i.indnkeyatts, i.indexrelid`;

/** `name` as `schema.table` (a bare name is in public). */
export function qualifiedName(name: string): string {
  return name.includes(".") ? name : `public.${name}`;
}

/** The table named, as the publications publish it, with its key; refused when it is not published or has no usable key. */
export async function readBackfillTable(client: Client, publications: readonly string[], serverVersion: number, name: string): Promise<BackfillTable> {
  const qualified = qualifiedName(name);
  const [table] = await readSnapshotTables(client, publications, serverVersion, [qualified]);
  if (table === undefined) {
    throw refused(`${qualified} is not a table of the publication${publications.length > 1 ? "s" : ""} ${publications.join(", ")} (ALTER PUBLICATION ... ADD TABLE ${qualified} first: only published changes can be merged with it)`);
  }
  const identity = (await client.query<{ relreplident: string }>(`SELECT relreplident::text AS relreplident FROM pg_catalog.pg_class WHERE oid = ${table.relationId}::oid`)).rows[0]?.relreplident;
  const keys = (await client.query<KeyRow>(keysQuery(table.relationId))).rows;
  // The key a Delete (and a key-changing Update) carries: the replica identity's, or any with FULL.
  const usable = keys.filter((k) => identity === "f" || (identity === "d" ? k.primary : identity === "i" ? k.replident : false));
  const key = usable[0];
  if (key === undefined) {
    const why = identity === "n"
      ? "its REPLICA IDENTITY is NOTHING, so Deletes carry no key to merge with"
      : keys.length === 0
        ? "it has no primary key nor a unique index on NOT NULL columns"
        : identity === "d" ? "it has no primary key (its unique index is not its replica identity: ALTER TABLE ... REPLICA IDENTITY USING INDEX)"
        : "its replica identity index is not unique on NOT NULL columns";
    throw refused(`${qualified} has no usable key: ${why}`);
  }
  const positions = key.names.map((n) => table.columns.indexOf(n));
  const missing = key.names.filter((_, i) => positions[i]! < 0);
  if (missing.length > 0) throw refused(`${qualified}: key column ${missing.join(", ")} is not published (the publication's column list leaves it out)`);
  return { ...table, qualified, key: key.names.map((n, i) => ({ name: n, type: key.types[i]!, position: positions[i]! })) };
}

/** The key's columns, for ORDER BY and row comparisons: `("a", "b")`. */
export function keyColumns(table: BackfillTable): string {
  return `(${table.key.map((k) => quoteIdent(k.name)).join(", ")})`;
}

/** A key's column texts as a row literal of the key's types: `('1'::integer, 'x'::text)`. */
export function keyLiteral(table: BackfillTable, texts: readonly string[]): string {
  return `(${table.key.map((k, i) => `${sqlLiteral(texts[i]!)}::${k.type}`).join(", ")})`;
}
