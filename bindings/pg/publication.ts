/**
 * Publication management (the `publication` option): before streaming, the
 * publication named in `publications` is created when missing (with
 * `create: true`) or checked against what was asked — its tables (or FOR
 * ALL TABLES) and its operations — and the differences are reported
 * (`onPublication`), not fixed: altering a publication others may use is
 * the owner's decision. Runs on the replication connection before
 * START_REPLICATION (a replication=database connection runs plain SQL).
 */
import type { Client } from "pg";
import { quoteIdent, quoteLiteral } from "./commands.ts";
import { ReplicationError } from "./errors.ts";
import { patiently } from "./guard.ts";

export type PublishOperation = "insert" | "update" | "delete" | "truncate";
const OPERATIONS: readonly PublishOperation[] = ["insert", "update", "delete", "truncate"];

/** `replicate()`'s `publication` option. */
export interface PublicationOptions {
  /** Create the publication when it is missing. Default false: only check it. */
  create?: boolean;
  /** Tables (`name` or `schema.name`) or `"all"` (FOR ALL TABLES). Default `"all"`. */
  tables?: readonly string[] | "all";
  /** Operations published. Default all four. */
  operations?: readonly PublishOperation[];
}

/** The checked `publication` option. */
export interface PublicationSpec {
  name: string;
  create: boolean;
  /** `all`, or table names as given (`name` or `schema.name`, case-sensitive, not quoted). */
  tables: "all" | string[];
  operations: PublishOperation[];
}

/** What `replicate()` found (or did): `differences` is empty when the publication is as asked. */
export interface PublicationReport {
  name: string;
  created: boolean;
  differences: string[];
}

function invalid(message: string): ReplicationError {
  return new ReplicationError(message, { code: "INVALID_OPTION" });
}

/** Checks the option; the publication is the one name in `publications`. */
export function publicationSpec(o: PublicationOptions, publications: readonly string[]): PublicationSpec {
  if (o === null || typeof o !== "object") throw invalid("publication must be an object");
  if (publications.length !== 1) throw invalid(`the publication option needs exactly one name in publications, not ${publications.length}`);
  const tables = o.tables ?? "all";
  if (tables !== "all") {
    if (!Array.isArray(tables) || tables.length === 0) throw invalid('publication.tables must be "all" or a non-empty list of table names');
    for (const t of tables) {
      if (typeof t !== "string" || !/^[^.\s]+(\.[^.\s]+)?$/.test(t)) throw invalid(`publication.tables: ${JSON.stringify(t)} is not a table name (name or schema.name)`);
    }
  }
  const operations = [...(o.operations ?? OPERATIONS)];
  if (operations.length === 0 || operations.some((op) => !OPERATIONS.includes(op))) {
    throw invalid(`publication.operations must be a non-empty list of ${OPERATIONS.join(", ")}`);
  }
  return { name: publications[0]!, create: o.create === true, tables: tables === "all" ? "all" : [...tables], operations };
}

/** A table name as given, as a quoted (schema-qualified when given) identifier. */
function tableIdent(name: string): string {
  return name.split(".").map(quoteIdent).join(".");
}

/** `CREATE PUBLICATION` for the spec. */
export function createPublicationCommand(spec: PublicationSpec): string {
  const what = spec.tables === "all" ? "FOR ALL TABLES" : `FOR TABLE ${spec.tables.map(tableIdent).join(", ")}`;
  return `CREATE PUBLICATION ${quoteIdent(spec.name)} ${what} WITH (publish = ${quoteLiteral(spec.operations.join(", "))})`;
}

interface PubRow {
  puballtables: boolean;
  pubinsert: boolean;
  pubupdate: boolean;
  pubdelete: boolean;
  pubtruncate: boolean;
}

const qualified = (r: { schema: string; name: string }) => `${r.schema}.${r.name}`;

/** Creates the publication if asked and missing, else compares it with the spec. */
export async function ensurePublication(client: Client, spec: PublicationSpec): Promise<PublicationReport> {
  const pub = (await client.query<PubRow>(
    `SELECT puballtables, pubinsert, pubupdate, pubdelete, pubtruncate FROM pg_catalog.pg_publication WHERE pubname = ${quoteLiteral(spec.name)}`,
  )).rows[0];
  if (pub === undefined) {
    if (!spec.create) {
      throw invalid(`publication "${spec.name}" does not exist (publication: { create: true } creates it, or CREATE PUBLICATION)`);
    }
    // Waits for locks on the tables (a long transaction holding one): no receive timeout.
    await patiently(client, () => client.query(createPublicationCommand(spec)));
    return { name: spec.name, created: true, differences: [] };
  }
  const differences: string[] = [];
  const published = OPERATIONS.filter((op) => pub[`pub${op}`]);
  const asked = OPERATIONS.filter((op) => spec.operations.includes(op));
  if (published.join() !== asked.join()) {
    differences.push(`publishes ${published.join(", ") || "nothing"}; asked for ${asked.join(", ")}`);
  }
  if (spec.tables === "all") {
    if (!pub.puballtables) differences.push("is not FOR ALL TABLES; asked for all tables");
  } else {
    const has = (await client.query<{ schema: string; name: string }>(
      `SELECT schemaname::text AS schema, tablename::text AS name FROM pg_catalog.pg_publication_tables WHERE pubname = ${quoteLiteral(spec.name)}`,
    )).rows.map(qualified);
    // The asked names resolved as the server does (search_path for unqualified ones).
    const list = spec.tables.map((t) => quoteLiteral(tableIdent(t))).join(", ");
    const resolved = (await client.query<{ given: string; schema: string | null; name: string | null }>(
      `SELECT t.given, n.nspname::text AS schema, c.relname::text AS name FROM unnest(ARRAY[${list}]::text[]) WITH ORDINALITY AS t(given, i)
       LEFT JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass(t.given) LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace ORDER BY t.i`,
    )).rows;
    const gone = resolved.filter((r) => r.name === null).map((r) => r.given);
    if (gone.length > 0) differences.push(`asked-for tables that do not exist: ${gone.join(", ")}`);
    const want = resolved.filter((r) => r.name !== null).map((r) => qualified({ schema: r.schema!, name: r.name! }));
    if (pub.puballtables) differences.push(`is FOR ALL TABLES; asked for ${want.join(", ")}`);
    else {
      const missing = want.filter((t) => !has.includes(t));
      const extra = has.filter((t) => !want.includes(t));
      if (missing.length > 0) differences.push(`does not publish ${missing.join(", ")}`);
      if (extra.length > 0) differences.push(`also publishes ${extra.join(", ")}`);
    }
  }
  return { name: spec.name, created: false, differences };
}
