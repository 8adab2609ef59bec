/**
 * What the initial snapshot copies, read from the catalogs inside the
 * snapshot's transaction: the tables of the publications
 * (`pg_publication_tables`: with `publish_via_partition_root` a partition
 * root, otherwise the leaves), their published columns (the column list,
 * `attnames`, PostgreSQL 15+) and row filters (`rowfilter`, 15+), and the
 * Relation (`R`) and Type (`Y`) messages pgoutput would send for them, so
 * that snapshot rows decode against the same relation metadata as
 * streamed changes. The queries are sent without parameters (the simple
 * query protocol): a copy connection may be a walsender
 * (`replication=database`), which refuses the extended protocol.
 */
import type { Client } from "pg";
import { quoteIdent } from "./commands.ts";

/** An SQL string literal whatever standard_conforming_strings says (an E'' string: backslashes always escaped). */
export function sqlLiteral(text: string): string {
  return `E'${text.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;
}

/** A table to copy. */
export interface SnapshotTable {
  relationId: number;
  schema: string;
  name: string;
  /** `r` plain, `p` partitioned (copied through its root: every partition). */
  kind: "r" | "p";
  columns: string[];
  /** The publications' row filter (ORed across publications), or undefined for every row. */
  rowFilter: string | undefined;
  /** Estimated rows (`pg_class.reltuples` scaled to the heap's current size, summed over partitions; 0 when never analyzed). */
  estimatedRows: number;
  /** Heap pages now (the largest partition's), for ctid chunking. */
  pages: number;
  /** The Relation message, and Type messages for non-built-in column types, framed for `decodeFramed`. */
  metadata: Uint8Array;
}

interface PublishedRow {
  oid: string;
  nspname: string;
  relname: string;
  relkind: string;
  relreplident: string;
  attnames: string[] | null;
  rowfilter: string | null;
  reltuples: string;
  relpages: string;
}

interface ColumnRow {
  attnum: number;
  attname: string;
  atttypid: string;
  atttypmod: number;
  generated: boolean;
  key: boolean;
  typnspname: string;
  typname: string;
}

/** The first OID not assigned to a built-in object: pgoutput sends a Type message for types at or above it. */
const FIRST_NON_BUILTIN_OID = 10000;

function publishedQuery(serverVersion: number, publications: readonly string[]): string {
  const lists = serverVersion >= 150000 ? "pt.attnames::text[] AS attnames, pt.rowfilter" : "NULL::text[] AS attnames, NULL::text AS rowfilter";
  // The heap the rows live in: the table itself, or a partitioned table's leaves. (pg_partition_tree()
  // has no rows for a table that is not partitioned, so it cannot be used for both.) Pages are the
  // heap's size now, not relpages (0 until the first VACUUM or ANALYZE); rows scale reltuples' density
  // to that size, as the planner does, and are 0 when never analyzed (reltuples -1).
  const heaps = `(SELECT c.oid AS relid WHERE c.relkind <> 'p'
      UNION ALL SELECT t.relid FROM pg_catalog.pg_partition_tree(c.oid) t WHERE c.relkind = 'p' AND t.isleaf) h
    JOIN pg_catalog.pg_class k ON k.oid = h.relid,
    LATERAL (SELECT pg_catalog.pg_relation_size(k.oid) / current_setting('block_size')::int8 AS pages) p`;
  return `SELECT c.oid::int8::text AS oid, n.nspname, c.relname, c.relkind::text AS relkind, c.relreplident::text AS relreplident, ${lists},
    (SELECT coalesce(sum(CASE WHEN k.reltuples < 0 THEN 0 WHEN k.relpages > 0 THEN round(k.reltuples / k.relpages * p.pages) ELSE k.reltuples END), 0)
      FROM ${heaps})::text AS reltuples,
    (SELECT coalesce(max(p.pages), 0) FROM ${heaps})::text AS relpages
  FROM pg_catalog.pg_publication_tables pt
  JOIN pg_catalog.pg_namespace n ON n.nspname = pt.schemaname
  JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
  WHERE pt.pubname = ANY(ARRAY[${publications.map(sqlLiteral).join(", ")}]::text[])
  ORDER BY n.nspname, c.relname`;
}

const columnsQuery = (oid: string): string => `SELECT a.attnum, a.attname, a.atttypid::int8::text AS atttypid, a.atttypmod,
    a.attgenerated <> '' AS generated,
    CASE c.relreplident
      WHEN 'f' THEN true
      WHEN 'n' THEN false
      ELSE EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND a.attnum = ANY(i.indkey)
                   AND CASE c.relreplident WHEN 'd' THEN i.indisprimary ELSE i.indisreplident END)
    END AS key,
    tn.nspname AS typnspname, t.typname
  FROM pg_catalog.pg_attribute a
  JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
  JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
  JOIN pg_catalog.pg_namespace tn ON tn.oid = t.typnamespace
  WHERE a.attrelid = ${Number(oid)}::oid AND a.attnum > 0 AND NOT a.attisdropped
  ORDER BY a.attnum`;

const encoder = new TextEncoder();

/** Writes pgoutput messages, each framed with its Uint32 length. */
class MessageWriter {
  #parts: number[] = [];
  #frames: number[][] = [];

  begin(tag: string): this {
    this.#parts = [tag.charCodeAt(0)];
    this.#frames.push(this.#parts);
    return this;
  }
  int8(v: number): this {
    this.#parts.push(v & 0xff);
    return this;
  }
  int16(v: number): this {
    this.#parts.push((v >> 8) & 0xff, v & 0xff);
    return this;
  }
  int32(v: number): this {
    this.#parts.push((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);
    return this;
  }
  string(s: string): this {
    for (const b of encoder.encode(s)) this.#parts.push(b);
    this.#parts.push(0);
    return this;
  }
  bytes(): Uint8Array {
    const total = this.#frames.reduce((n, f) => n + 4 + f.length, 0);
    const out = new Uint8Array(total);
    const dv = new DataView(out.buffer);
    let w = 0;
    for (const f of this.#frames) {
      dv.setUint32(w, f.length);
      out.set(f, w + 4);
      w += 4 + f.length;
    }
    return out;
  }
}

/** pgoutput writes the pg_catalog namespace as an empty string. */
function namespaceOf(nspname: string): string {
  return nspname === "pg_catalog" ? "" : nspname;
}

function orFilters(filters: (string | null)[]): string | undefined {
  // A publication without a filter publishes every row (PostgreSQL ORs row filters across publications).
  if (filters.some((f) => f === null)) return undefined;
  return filters.map((f) => `(${f})`).join(" OR ");
}

/**
 * The tables of `publications` as the snapshot copies them. `only`
 * restricts them to names given as `schema.table` or `table` (public).
 */
export async function readSnapshotTables(client: Client, publications: readonly string[], serverVersion: number, only?: readonly string[]): Promise<SnapshotTable[]> {
  const rows = (await client.query<PublishedRow>(publishedQuery(serverVersion, publications))).rows;
  const byOid = new Map<string, PublishedRow[]>();
  for (const r of rows) byOid.set(r.oid, [...(byOid.get(r.oid) ?? []), r]);
  const wanted = only === undefined ? undefined : new Set(only.map((t) => (t.includes(".") ? t : `public.${t}`)));
  const tables: SnapshotTable[] = [];
  for (const [oid, same] of byOid) {
    const first = same[0]!;
    if (wanted !== undefined && !wanted.has(`${first.nspname}.${first.relname}`)) continue;
    const published = new Set(same.flatMap((r) => r.attnames ?? []));
    const cols = (await client.query<ColumnRow>(columnsQuery(oid))).rows.filter((c) =>
      first.attnames !== null ? published.has(c.attname) : !c.generated,
    );
    // Before 18 pgoutput never sends generated columns, whatever the column list says.
    const sent = serverVersion >= 180000 ? cols : cols.filter((c) => !c.generated);
    const w = new MessageWriter();
    for (const c of sent) {
      if (Number(c.atttypid) >= FIRST_NON_BUILTIN_OID) w.begin("Y").int32(Number(c.atttypid)).string(namespaceOf(c.typnspname)).string(c.typname);
    }
    w.begin("R").int32(Number(oid)).string(namespaceOf(first.nspname)).string(first.relname).int8(first.relreplident.charCodeAt(0)).int16(sent.length);
    for (const c of sent) w.int8(c.key ? 1 : 0).string(c.attname).int32(Number(c.atttypid)).int32(c.atttypmod);
    tables.push({
      relationId: Number(oid),
      schema: first.nspname,
      name: first.relname,
      kind: first.relkind === "p" ? "p" : "r",
      columns: sent.map((c) => c.attname),
      rowFilter: orFilters(same.map((r) => r.rowfilter)),
      estimatedRows: Number(first.reltuples),
      pages: Number(first.relpages),
      metadata: w.bytes(),
    });
  }
  return tables;
}

/**
 * A part of a table to copy: all of it, or the heap pages [fromPage, toPage)
 * (toPage undefined: to the end); a backfill chunk adds its conditions, its
 * key order and its size.
 */
export interface CopyTask {
  table: SnapshotTable;
  fromPage?: number;
  toPage?: number;
  where?: readonly string[];
  orderBy?: string;
  limit?: number;
}

/**
 * Splits big tables into ctid page ranges (each a TID range scan on 14+),
 * so that `parallel` connections share them; the last range is open-ended,
 * so rows on pages added after the estimate are copied too.
 */
export function planTasks(tables: readonly SnapshotTable[], parallel: number, chunkPages: number): CopyTask[] {
  const tasks: CopyTask[] = [];
  for (const table of tables) {
    const chunks = parallel > 1 ? Math.min(parallel * 4, Math.floor(table.pages / chunkPages)) : 0;
    if (chunks < 2) {
      tasks.push({ table });
      continue;
    }
    const step = Math.ceil(table.pages / chunks);
    for (let i = 0; i < chunks; i++) {
      tasks.push({ table, fromPage: i * step, toPage: i === chunks - 1 ? undefined : (i + 1) * step });
    }
  }
  // Biggest first, so that one large table does not finish last on one connection.
  return tasks.sort((a, b) => taskPages(b) - taskPages(a));
}

function taskPages(t: CopyTask): number {
  return (t.toPage ?? t.table.pages) - (t.fromPage ?? 0);
}

/** The COPY command of a task. */
export function copyCommand(task: CopyTask, format: "binary" | "text"): string {
  const t = task.table;
  const target = `${quoteIdent(t.schema)}.${quoteIdent(t.name)}`;
  const cols = t.columns.map(quoteIdent).join(", ");
  const fmt = format === "binary" ? " (FORMAT binary)" : "";
  const where: string[] = [];
  if (t.rowFilter !== undefined) where.push(`(${t.rowFilter})`);
  if (task.fromPage !== undefined && task.fromPage > 0) where.push(`ctid >= '(${task.fromPage},0)'::tid`);
  if (task.toPage !== undefined) where.push(`ctid < '(${task.toPage},0)'::tid`);
  for (const w of task.where ?? []) where.push(`(${w})`);
  const tail = `${task.orderBy !== undefined ? ` ORDER BY ${task.orderBy}` : ""}${task.limit !== undefined ? ` LIMIT ${task.limit}` : ""}`;
  if (t.kind === "r" && where.length === 0 && tail === "" && cols.length > 0) return `COPY ${target} (${cols}) TO STDOUT${fmt}`;
  // ONLY: an inheritance parent's children are tables of their own in pgoutput.
  const from = t.kind === "p" ? target : `ONLY ${target}`;
  return `COPY (SELECT ${cols} FROM ${from}${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""}${tail}) TO STDOUT${fmt}`;
}
