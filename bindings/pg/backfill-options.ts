/**
 * `stream.backfill()`'s contract: its options and their checks, what it
 * needs of its stream (`BackfillSetup`) and what it answers: the run
 * (`BackfillRun`, `BackfillStats`) and the hook the stream's iteration
 * calls (`BackfillHook`).
 */
import type { PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { BackfillItem, BackfillProgress } from "../backfill-items.ts";
import type { PgModule, ResolvedConnection } from "./client.ts";
import type { ReplicationError } from "./errors.ts";
import type { NormalizedOptions } from "./options.ts";
import { refused } from "./backfill-catalog.ts";

/** `stream.backfill()`'s options. */
export interface BackfillOptions {
  /** Tables of the stream's publications (`schema.table`, or `table` in public), backfilled one after another in this order. */
  tables: readonly string[];
  /** Rows per chunk (default 1024): the memory a chunk takes, and how long a watermark window stays open. */
  chunkRows?: number;
  /** An SQL condition on the rows to backfill: one for every table, or by table name. */
  where?: string | Readonly<Record<string, string>>;
  /** Where an earlier backfill got to (the `progress` of the last item made durable): resumes each table after it. */
  progress?: readonly BackfillProgress[];
  /**
   * Decodes the chunks' rows (they outlive the stream's own batches): made
   * like the stream's decoder, used for nothing else. Default: one of the
   * same backend with default value options.
   */
  decoder?: PgoutputDecoder;
}

/** What a backfill needs of its stream (replicate() provides it). */
export interface BackfillSetup {
  connection: ResolvedConnection;
  pg: PgModule | undefined;
  options: NormalizedOptions;
  serverVersion: number;
  decoder: PgoutputDecoder;
  /** Wakes the stream's waiting pull (a failure is thrown by the iteration without waiting for the next message). */
  wakeUp?: () => void;
}

/** What the stream's iteration asks of a backfill (iteration.ts). */
export interface BackfillHook {
  /** A message reached in stream order; true when it was a watermark of this backfill (not handed over). */
  observe(msg: PgoutputMessage): boolean;
  /** The next backfill item, to hand over before the stream's next message; throws what failed the backfill. */
  take(): BackfillItem | undefined;
}

/** A backfill running on a stream (`stream.backfill()`): its items come with the stream's message iteration. */
export interface BackfillRun {
  /** Every table's progress now (copies): what to pass back as `progress` to resume. */
  readonly progress: BackfillProgress[];
  readonly stats: BackfillStats;
  /** Every table is complete. */
  readonly done: boolean;
  /** `stop()` was called, or a failure stopped it. */
  readonly stopped: boolean;
  /** The failure that ended it, if any (also thrown by the stream's iteration, in stream order). */
  readonly error: ReplicationError | undefined;
  /** Ends it (the stream goes on); what was handed over stays handed over. */
  stop(): Promise<void>;
}

/** What a backfill did so far. */
export interface BackfillStats {
  /** Chunks read (including those read again). */
  chunks: number;
  /** Rows handed over. */
  rows: number;
  /** Rows of chunks dropped because a live change the chunk did not see touched them. */
  dropped: number;
  /** Keys queued to be read again (a row a live change left without its unchanged TOASTed values). */
  reread: number;
  /** Chunks read again whole (a change whose place could not be settled). */
  repeated: number;
}

/** Refuses, as INVALID_OPTION errors that say what to change, options or a stream a backfill cannot run with. */
export function checkBackfillOptions(setup: BackfillSetup, options: BackfillOptions): void {
  if (options === null || typeof options !== "object") throw refused("options must be an object with tables");
  if (!Array.isArray(options.tables) || options.tables.length === 0 || options.tables.some((t) => typeof t !== "string" || t.length === 0)) {
    throw refused("tables must be a non-empty list of table names");
  }
  const chunkRows = options.chunkRows;
  if (chunkRows !== undefined && (!Number.isInteger(chunkRows) || chunkRows < 1)) throw refused(`chunkRows must be a positive integer, not ${String(chunkRows)}`);
  if (!setup.options.messages) {
    throw refused("the stream was started without messages: true (the watermarks are logical decoding messages); replicate({ messages: true, ... })");
  }
  if (setup.serverVersion < 130000) throw refused("needs PostgreSQL 13 or later (pg_current_snapshot, pg_current_xact_id)");
}
