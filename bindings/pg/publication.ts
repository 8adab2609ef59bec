/**
 * Publication management (the `publication` option): before streaming, the
 * publication named in `publications` is created when missing (with
 * `create: true`) or checked against what was asked — its tables (or FOR
 * ALL TABLES) with their row filters and column lists, its operations,
 * `publish_via_partition_root` and `publish_generated_columns` — and the
 * differences are reported (`onPublication`; publication-check.ts), not
 * fixed: altering a publication others may use is the owner's decision.
 * Runs on the replication connection before START_REPLICATION (a
 * replication=database connection runs plain SQL).
 */
import { quoteIdent, quoteLiteral } from "./commands.ts";
import { ReplicationError } from "./errors.ts";

export type PublishOperation = "insert" | "update" | "delete" | "truncate";
export const OPERATIONS: readonly PublishOperation[] = ["insert", "update", "delete", "truncate"];

/**
 * A published table with what of it is published (PostgreSQL 15+ for
 * `where` and `columns`).
 *
 * @example
 * ```ts
 * { name: "public.orders", where: "status <> 'draft'", columns: ["id", "status", "total"] }
 * ```
 */
export interface PublicationTable {
  /** `name` or `schema.name` (case-sensitive, not quoted). */
  name: string;
  /**
   * Row filter: a boolean SQL expression over the table's columns, as in
   * `FOR TABLE t WHERE (expr)`. Only rows for which it is true are
   * published; an UPDATE moving a row in or out of it arrives as an INSERT
   * or a DELETE (PostgreSQL's rule). With UPDATE or DELETE published it may
   * only use replica identity columns.
   */
  where?: string;
  /**
   * Column list: only these columns are published (case-sensitive, not
   * quoted). With UPDATE or DELETE published it must hold the replica
   * identity columns.
   */
  columns?: readonly string[];
}

/** `replicate()`'s `publication` option. */
export interface PublicationOptions {
  /** Create the publication when it is missing. Default false: only check it. */
  create?: boolean;
  /** Tables (`name`, `schema.name` or a `PublicationTable`) or `"all"` (FOR ALL TABLES). Default `"all"`. */
  tables?: readonly (string | PublicationTable)[] | "all";
  /** Operations published. Default all four. */
  operations?: readonly PublishOperation[];
  /**
   * `publish_via_partition_root` (PostgreSQL 13+): changes to a partition
   * are published as changes to its partitioned table (one Relation for the
   * whole tree). Default false: each leaf partition is its own relation.
   */
  publishViaPartitionRoot?: boolean;
  /**
   * `publish_generated_columns` (PostgreSQL 18+): `stored` publishes the
   * values of stored generated columns; `none` (the default) leaves them
   * out (a column list can still name them).
   */
  publishGeneratedColumns?: "none" | "stored";
}

/** A table of the checked option. */
export interface PublicationTableSpec {
  /** As given (`name` or `schema.name`). */
  name: string;
  where: string | undefined;
  columns: string[] | undefined;
}

/** The checked `publication` option. */
export interface PublicationSpec {
  name: string;
  create: boolean;
  tables: "all" | PublicationTableSpec[];
  operations: PublishOperation[];
  publishViaPartitionRoot: boolean;
  publishGeneratedColumns: "none" | "stored";
}

/** What `replicate()` found (or did): `differences` is empty when the publication is as asked. */
export interface PublicationReport {
  name: string;
  created: boolean;
  /** One sentence per difference, e.g. `row filter of public.orders is (total > 0); asked for (total > 10)`. */
  differences: string[];
}

function invalid(message: string): ReplicationError {
  return new ReplicationError(message, { code: "INVALID_OPTION" });
}

const TABLE_NAME = /^[^.\s]+(\.[^.\s]+)?$/;

function tableSpec(t: unknown): PublicationTableSpec {
  const given = typeof t === "string" ? { name: t } : t;
  if (given === null || typeof given !== "object" || typeof (given as PublicationTable).name !== "string" || !TABLE_NAME.test((given as PublicationTable).name)) {
    throw invalid(`publication.tables: ${JSON.stringify(t)} is not a table name (name or schema.name) nor { name, where?, columns? }`);
  }
  const { name, where, columns } = given as PublicationTable;
  if (where !== undefined && (typeof where !== "string" || where.trim().length === 0)) throw invalid(`publication.tables: the row filter of ${name} must be a non-empty SQL expression`);
  if (columns !== undefined && (!Array.isArray(columns) || columns.length === 0 || columns.some((c) => typeof c !== "string" || c.length === 0))) {
    throw invalid(`publication.tables: the column list of ${name} must be a non-empty list of column names`);
  }
  return { name, where: where?.trim(), columns: columns === undefined ? undefined : [...columns] };
}

/** Checks the option; the publication is the one name in `publications`. */
export function publicationSpec(o: PublicationOptions, publications: readonly string[]): PublicationSpec {
  if (o === null || typeof o !== "object") throw invalid("publication must be an object");
  if (publications.length !== 1) throw invalid(`the publication option needs exactly one name in publications, not ${publications.length}`);
  const tables = o.tables ?? "all";
  if (tables !== "all" && (!Array.isArray(tables) || tables.length === 0)) throw invalid('publication.tables must be "all" or a non-empty list of tables');
  const operations = [...(o.operations ?? OPERATIONS)];
  if (operations.length === 0 || operations.some((op) => !OPERATIONS.includes(op))) {
    throw invalid(`publication.operations must be a non-empty list of ${OPERATIONS.join(", ")}`);
  }
  if (o.publishViaPartitionRoot !== undefined && typeof o.publishViaPartitionRoot !== "boolean") throw invalid("publication.publishViaPartitionRoot must be a boolean");
  const generated = o.publishGeneratedColumns ?? "none";
  if (generated !== "none" && generated !== "stored") throw invalid(`publication.publishGeneratedColumns must be "none" or "stored", not ${String(generated)}`);
  return {
    name: publications[0]!,
    create: o.create === true,
    tables: tables === "all" ? "all" : tables.map(tableSpec),
    operations,
    publishViaPartitionRoot: o.publishViaPartitionRoot === true,
    publishGeneratedColumns: generated,
  };
}

/** A table name as given, as a quoted (schema-qualified when given) identifier. */
export function tableIdent(name: string): string {
  return name.split(".").map(quoteIdent).join(".");
}

/** `FOR TABLE` entries: the table, its column list and its row filter. */
export function tableClause(t: PublicationTableSpec): string {
  const columns = t.columns === undefined ? "" : ` (${t.columns.map(quoteIdent).join(", ")})`;
  return `${tableIdent(t.name)}${columns}${t.where === undefined ? "" : ` WHERE (${t.where})`}`;
}

/** `CREATE PUBLICATION` for the spec (publication parameters at their defaults are left out: older servers lack them). */
export function createPublicationCommand(spec: PublicationSpec, name: string = spec.name): string {
  const what = spec.tables === "all" ? "FOR ALL TABLES" : `FOR TABLE ${spec.tables.map(tableClause).join(", ")}`;
  const params = [`publish = ${quoteLiteral(spec.operations.join(", "))}`];
  if (spec.publishViaPartitionRoot) params.push("publish_via_partition_root = true");
  if (spec.publishGeneratedColumns !== "none") params.push(`publish_generated_columns = ${spec.publishGeneratedColumns}`);
  return `CREATE PUBLICATION ${quoteIdent(name)} ${what} WITH (${params.join(", ")})`;
}
