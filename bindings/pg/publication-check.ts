/**
 * An existing publication compared with the `publication` option
 * (publication.ts), or a missing one created: `ensurePublication()`.
 *
 * Membership is read from pg_publication_rel (the tables named in the
 * publication, as a partitioned table and not its partitions) and
 * pg_publication_namespace (TABLES IN SCHEMA, 15+), with each table's row
 * filter as the server deparses it (pg_get_expr) and its column list. A
 * row filter asked for is compared with that text first; when the two
 * differ as text, the server deparses the one asked for too, in a
 * publication created and rolled back at once (a brief
 * SHARE UPDATE EXCLUSIVE lock on the table, lock_timeout 5 s), so that
 * `id > 10` and `(id > 10)` count as the same filter and nothing else does.
 */
import type { Client } from "pg";
import { quoteLiteral } from "./commands.ts";
import { ReplicationError } from "./errors.ts";
import { patiently } from "./guard.ts";
import { createPublicationCommand, OPERATIONS, tableIdent, type PublicationReport, type PublicationSpec, type PublicationTableSpec } from "./publication.ts";

interface PubRow {
  oid: number;
  puballtables: boolean;
  pubinsert: boolean;
  pubupdate: boolean;
  pubdelete: boolean;
  pubtruncate: boolean;
  /** 13+ */
  pubviaroot?: boolean;
  /** 18+: `n` none, `s` stored */
  pubgencols?: string;
}

interface MemberRow {
  schema: string;
  name: string;
  /** 15+: the deparsed row filter, NULL without one. */
  rowfilter?: string | null;
  /** 15+: the column list, NULL for all columns. */
  columns?: string[] | null;
}

const qualified = (r: { schema: string; name: string }) => `${r.schema}.${r.name}`;

/** What the spec asks that `serverVersion` does not have, as UNSUPPORTED_BY_SERVER. */
function checkServer(spec: PublicationSpec, serverVersion: number): void {
  const need = (what: string, major: number) => {
    if (serverVersion < major * 10000) {
      throw new ReplicationError(`publication ${what} needs PostgreSQL ${major} or later; the server is ${Math.floor(serverVersion / 10000)}`, { code: "UNSUPPORTED_BY_SERVER" });
    }
  };
  if (spec.tables !== "all" && spec.tables.some((t) => t.where !== undefined)) need("row filters (where)", 15);
  if (spec.tables !== "all" && spec.tables.some((t) => t.columns !== undefined)) need("column lists (columns)", 15);
  if (spec.publishViaPartitionRoot) need("publishViaPartitionRoot", 13);
  if (spec.publishGeneratedColumns !== "none") need("publishGeneratedColumns", 18);
}

/** Creates the publication if asked and missing, else compares it with the spec. */
export async function ensurePublication(client: Client, spec: PublicationSpec, serverVersion: number): Promise<PublicationReport> {
  checkServer(spec, serverVersion);
  const cols = ["oid::int AS oid", "puballtables", "pubinsert", "pubupdate", "pubdelete", "pubtruncate"];
  if (serverVersion >= 130000) cols.push("pubviaroot");
  if (serverVersion >= 180000) cols.push("pubgencols::text AS pubgencols");
  const pub = (await client.query<PubRow>(`SELECT ${cols.join(", ")} FROM pg_catalog.pg_publication WHERE pubname = ${quoteLiteral(spec.name)}`)).rows[0];
  if (pub === undefined) {
    if (!spec.create) {
      throw new ReplicationError(`publication "${spec.name}" does not exist (publication: { create: true } creates it, or CREATE PUBLICATION)`, { code: "INVALID_OPTION" });
    }
    // Waits for locks on the tables (a long transaction holding one): no receive timeout.
    await patiently(client, () => client.query(createPublicationCommand(spec)));
    return { name: spec.name, created: true, differences: [] };
  }
  return { name: spec.name, created: false, differences: await compare(client, spec, pub, serverVersion) };
}

function membersQuery(pubOid: number, serverVersion: number): string {
  const extra = serverVersion >= 150000
    ? `, pg_catalog.pg_get_expr(pr.prqual, pr.prrelid) AS rowfilter,
  CASE WHEN pr.prattrs IS NULL THEN NULL ELSE ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a
    WHERE a.attrelid = pr.prrelid AND a.attnum = ANY(pr.prattrs::int2[]) ORDER BY a.attnum) END AS columns`
    : "";
  return `SELECT n.nspname::text AS schema, c.relname::text AS name${extra}
FROM pg_catalog.pg_publication_rel pr JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE pr.prpubid = ${pubOid} ORDER BY 1, 2`;
}

async function compare(client: Client, spec: PublicationSpec, pub: PubRow, serverVersion: number): Promise<string[]> {
  const differences: string[] = [];
  const published = OPERATIONS.filter((op) => pub[`pub${op}`]);
  const asked = OPERATIONS.filter((op) => spec.operations.includes(op));
  if (published.join() !== asked.join()) {
    differences.push(`publishes ${published.join(", ") || "nothing"}; asked for ${asked.join(", ")}`);
  }
  if (pub.pubviaroot !== undefined && pub.pubviaroot !== spec.publishViaPartitionRoot) {
    differences.push(`publish_via_partition_root is ${pub.pubviaroot}; asked for ${spec.publishViaPartitionRoot}`);
  }
  if (pub.pubgencols !== undefined) {
    const has = pub.pubgencols === "s" ? "stored" : "none";
    if (has !== spec.publishGeneratedColumns) differences.push(`publish_generated_columns is ${has}; asked for ${spec.publishGeneratedColumns}`);
  }
  if (spec.tables === "all") {
    if (!pub.puballtables) differences.push("is not FOR ALL TABLES; asked for all tables");
    return differences;
  }
  // The asked names resolved as the server does (search_path for unqualified ones).
  const list = spec.tables.map((t) => quoteLiteral(tableIdent(t.name))).join(", ");
  const resolved = (await client.query<{ given: string; schema: string | null; name: string | null }>(
    `SELECT t.given, n.nspname::text AS schema, c.relname::text AS name FROM unnest(ARRAY[${list}]::text[]) WITH ORDINALITY AS t(given, i)
     LEFT JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass(t.given) LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace ORDER BY t.i`,
  )).rows;
  const gone = resolved.filter((r) => r.name === null).map((r) => r.given);
  if (gone.length > 0) differences.push(`asked-for tables that do not exist: ${gone.join(", ")}`);
  const want = new Map<string, PublicationTableSpec>();
  resolved.forEach((r, i) => {
    if (r.name !== null) want.set(qualified({ schema: r.schema!, name: r.name }), spec.tables[i] as PublicationTableSpec);
  });
  if (pub.puballtables) {
    differences.push(`is FOR ALL TABLES; asked for ${[...want.keys()].join(", ")}`);
    return differences;
  }
  const members = new Map((await client.query<MemberRow>(membersQuery(pub.oid, serverVersion))).rows.map((m) => [qualified(m), m]));
  const schemas = serverVersion >= 150000 ? (await client.query<{ schema: string }>(
    `SELECT n.nspname::text AS schema FROM pg_catalog.pg_publication_namespace pn JOIN pg_catalog.pg_namespace n ON n.oid = pn.pnnspid WHERE pn.pnpubid = ${pub.oid} ORDER BY 1`,
  )).rows.map((r) => r.schema) : [];
  const missing = [...want.keys()].filter((t) => !members.has(t));
  const extra = [...members.keys()].filter((t) => !want.has(t));
  if (missing.length > 0) differences.push(`does not publish ${missing.join(", ")}`);
  if (extra.length > 0) differences.push(`also publishes ${extra.join(", ")}`);
  if (schemas.length > 0) differences.push(`also publishes the tables in schema ${schemas.join(", ")}`);
  if (serverVersion < 150000) return differences;
  const filters: [string, PublicationTableSpec, string][] = [];
  for (const [table, t] of want) {
    const m = members.get(table);
    if (m === undefined) continue;
    differences.push(...columnDifference(table, m.columns ?? null, t.columns));
    const has = m.rowfilter ?? null;
    if (has === null && t.where !== undefined) differences.push(`${table} has no row filter; asked for (${t.where})`);
    else if (has !== null && t.where === undefined) differences.push(`${table} has row filter ${has}; asked for none`);
    else if (has !== null && t.where !== undefined && !sameText(has, t.where)) filters.push([table, t, has]);
  }
  if (filters.length > 0) differences.push(...(await filterDifferences(client, filters, serverVersion)));
  return differences;
}

function columnDifference(table: string, has: string[] | null, asked: string[] | undefined): string[] {
  if (has === null && asked === undefined) return [];
  if (has === null) return [`${table} publishes all its columns; asked for ${asked!.join(", ")}`];
  if (asked === undefined) return [`${table} publishes only ${has.join(", ")}; asked for all columns`];
  const a = [...asked].sort();
  const h = [...has].sort();
  return a.join("\0") === h.join("\0") ? [] : [`column list of ${table} is ${has.join(", ")}; asked for ${asked.join(", ")}`];
}

const squeeze = (s: string) => s.replace(/\s+/g, " ").trim();

/** The deparsed filter `has` against the asked text, as text (pg_get_expr puts the expression in parentheses). */
function sameText(has: string, asked: string): boolean {
  return squeeze(has) === squeeze(asked) || squeeze(has) === `(${squeeze(asked)})`;
}

/** Row filters that differ as text, compared as the server deparses the asked ones. */
async function filterDifferences(client: Client, filters: [string, PublicationTableSpec, string][], serverVersion: number): Promise<string[]> {
  const probe = `pgoutput_wasm_probe_${process.pid}_${Date.now().toString(36)}`;
  let deparsed: Map<string, string | null>;
  try {
    await client.query("BEGIN");
    try {
      await client.query("SET LOCAL lock_timeout = '5s'");
      const tables = filters.map(([, t]) => t);
      await client.query(createPublicationCommand({ name: probe, create: true, tables, operations: [...OPERATIONS], publishViaPartitionRoot: false, publishGeneratedColumns: "none" }));
      const oid = (await client.query<{ oid: number }>(`SELECT oid::int AS oid FROM pg_catalog.pg_publication WHERE pubname = ${quoteLiteral(probe)}`)).rows[0]!.oid;
      deparsed = new Map((await client.query<MemberRow>(membersQuery(oid, serverVersion))).rows.map((m) => [qualified(m), m.rowfilter ?? null]));
    } finally {
      await client.query("ROLLBACK");
    }
  } catch (e) {
    const why = (e as Error).message;
    return filters.map(([table, t, has]) => `row filter of ${table} is ${has}; asked for (${t.where}) (not compared exactly: ${why})`);
  }
  return filters.filter(([table, , has]) => deparsed.get(table) !== has).map(([table, t, has]) => `row filter of ${table} is ${has}; asked for (${t.where})`);
}
