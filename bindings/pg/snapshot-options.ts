/**
 * The `snapshot` option of `replicate()` (snapshot.ts): its fields, their
 * defaults and checks, and what the slot creation answered (the exported
 * snapshot and the slot's consistent point).
 */
import { parseLsn } from "../lsn.ts";
import type { CopyFormat } from "./copy-reframe.ts";
import { ReplicationError } from "./errors.ts";
import type { ReplicateOptions } from "./options.ts";

/**
 * `replicate()`'s options with `snapshot`: copy every row the publications
 * hold first, then stream the changes after them, with no gap and no
 * duplicate (README "Initial snapshot"). The slot must not exist yet: it is
 * created with an exported snapshot. `replicate()` then resolves to a
 * `SnapshotReplication` (`snapshot: false` to a `ReplicationStream`).
 */
export interface SnapshotReplicateOptions extends ReplicateOptions {
  snapshot: boolean | SnapshotOptions;
}

/** The `snapshot` option of `replicate()`. */
export interface SnapshotOptions {
  /** Only these tables of the publications (`schema.table`, or `table` in public). Default: all. */
  tables?: readonly string[];
  /** Copy connections, each copying one table (or ctid range) at a time. Default 2. */
  parallel?: number;
  /** Rows decoded per batch at most (each batch is one decoder call). Default 1000. */
  batchRows?: number;
  /**
   * `binary`: COPY binary, values in their binary (send) format, the faster;
   * `text`: COPY text, values as pgoutput's text. Default: the stream's
   * format (`binary` option), so that snapshot rows and changes carry every
   * value in the same form (a type without a binary parser is bytes in one
   * and text in the other otherwise).
   */
  format?: CopyFormat;
  /** With `parallel > 1`, tables of more heap pages than this are copied in ctid ranges of about this size. Default 16384 (128 MiB). */
  chunkPages?: number;
  /** Called as the copy goes on (at most every 100 ms, and when a table is done). */
  onProgress?: (progress: SnapshotProgress) => void;
}

export interface SnapshotProgress {
  tables: number;
  tablesDone: number;
  /** Rows copied. */
  rows: number;
  /** COPY bytes received. */
  bytes: number;
  /** Rows expected, from `pg_class.reltuples` (0 for tables never analyzed). */
  estimatedRows: number;
}

/** The `snapshot` option with its defaults. */
export interface NormalizedSnapshot {
  tables: readonly string[] | undefined;
  parallel: number;
  batchRows: number;
  format: CopyFormat;
  chunkPages: number;
  onProgress: SnapshotOptions["onProgress"];
}

/** INVALID_OPTION, the message prefixed with `snapshot:`. */
export function invalid(message: string): ReplicationError {
  return new ReplicationError(`snapshot: ${message}`, { code: "INVALID_OPTION" });
}

function count(name: string, v: number | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || v < 1) throw invalid(`${name} must be a positive integer, not ${String(v)}`);
  return v;
}

/** The `snapshot` option checked, or undefined for none. */
export function normalizeSnapshot(o: SnapshotReplicateOptions["snapshot"] | undefined, streamBinary: boolean): NormalizedSnapshot | undefined {
  if (o === undefined || o === false) return undefined;
  const s: SnapshotOptions = o === true ? {} : o;
  if (s === null || typeof s !== "object") throw invalid("must be true or an options object");
  if (s.format !== undefined && s.format !== "binary" && s.format !== "text") throw invalid(`format must be binary or text, not ${String(s.format)}`);
  if (s.tables !== undefined && (!Array.isArray(s.tables) || s.tables.some((t) => typeof t !== "string" || t.length === 0))) {
    throw invalid("tables must be a list of table names");
  }
  return {
    tables: s.tables,
    parallel: count("parallel", s.parallel, 2),
    batchRows: count("batchRows", s.batchRows, 1000),
    format: s.format ?? (streamBinary ? "binary" : "text"),
    chunkPages: count("chunkPages", s.chunkPages, 16384),
    onProgress: s.onProgress,
  };
}

/** What the slot creation answered. */
export interface ExportedSnapshot {
  consistentPoint: bigint;
  snapshotName: string;
}

/** The row `CREATE_REPLICATION_SLOT` returns. */
export function exportedSnapshot(row: { consistent_point?: string; snapshot_name?: string | null } | undefined): ExportedSnapshot {
  if (row?.consistent_point === undefined || typeof row.snapshot_name !== "string") {
    throw new ReplicationError("CREATE_REPLICATION_SLOT returned no exported snapshot", { code: "SERVER_ERROR" });
  }
  return { consistentPoint: parseLsn(row.consistent_point), snapshotName: row.snapshot_name };
}
