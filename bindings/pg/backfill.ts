/**
 * A backfill (incremental snapshot) of tables while the stream runs:
 * `stream.backfill({ tables })`. Each table is read in key order, in chunks
 * of `chunkRows`, each between a low and a high watermark written into the
 * WAL (backfill-chunk.ts); the stream hands a chunk's rows over where its
 * high watermark is, as `BackfillRow` items among the live changes, and a
 * `BackfillComplete` after a table's last row.
 *
 * Which rows of a chunk are handed over (backfill-window.ts): those no live
 * change between the watermarks from a transaction the chunk's snapshot
 * does not see has touched (the live change wins), so a row handed over is
 * the row as it is at that point of the stream: never older than a change
 * before it.
 *
 * Read again (the table's `reread` keys), so that the consumer ends with
 * every column: a dropped row whose newer change is an Update with
 * unchanged TOASTed columns (pgoutput leaves out what did not change, and
 * the consumer may not hold the row yet), and the new key of an Update
 * that changes the key with unchanged TOASTed columns (its old row may not
 * be handed over yet). A change whose place cannot be settled — a streamed
 * or prepared transaction (its changes come before its commit), a key that
 * is itself unchanged TOAST, a window too busy to hold — makes the chunk be
 * read again, whole.
 *
 * Memory: one chunk (at most `chunkRows` rows, plus the keys read again)
 * and the changes of its window until the chunk is held; the next chunk is
 * read once the consumer has taken the rows of the last one (backfill-run.ts).
 *
 * This file starts one: checks the options and tables, opens its connection.
 */
import type { Client } from "pg";
import { createDecoder } from "../create-decoder.ts";
import { connectClient } from "./client.ts";
import { connectionLimits } from "./defaults.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import { WALSENDER_OUTPUT_SETTINGS } from "./snapshot-copy.ts";
import { qualifiedName, readBackfillTable } from "./backfill-catalog.ts";
import { checkBackfillOptions, type BackfillOptions, type BackfillSetup } from "./backfill-options.ts";
import { Backfill } from "./backfill-run.ts";
import { tableState, type TableState } from "./backfill-state.ts";

export type { BackfillComplete, BackfillItem, BackfillProgress, BackfillRow } from "../backfill-items.ts";
export type { BackfillHook, BackfillOptions, BackfillRun, BackfillSetup, BackfillStats } from "./backfill-options.ts";
export { Backfill } from "./backfill-run.ts";

/**
 * Checks the tables (published, with a usable key), opens the backfill's
 * connection and starts it. Refusals are INVALID_OPTION errors naming the
 * table and what to change.
 */
export async function startBackfill(setup: BackfillSetup, options: BackfillOptions): Promise<Backfill> {
  checkBackfillOptions(setup, options);
  const limits = connectionLimits(setup.options);
  let client: Client;
  try {
    client = await connectClient(setup.connection, setup.pg, { replication: false, limits, applicationName: "pgoutput-wasm backfill" });
  } catch (e) {
    throw fromPgError(e, "backfill: could not connect", "CONNECT_FAILED", setup.connection.secrets);
  }
  try {
    await client.query(WALSENDER_OUTPUT_SETTINGS);
    const resume = new Map((options.progress ?? []).map((p) => [qualifiedName(p.table), p]));
    const states: TableState[] = [];
    for (const name of options.tables) {
      const table = await readBackfillTable(client, setup.options.publications, setup.serverVersion, name);
      states.push(tableState(table, resume.get(table.qualified)));
    }
    const decoder = options.decoder ?? (await createDecoder({ backend: setup.decoder.backend, maxMessageSize: setup.options.maxMessageSize }));
    return new Backfill(setup, states, options, decoder, client);
  } catch (e) {
    await client.end().catch(() => {});
    throw e instanceof ReplicationError ? e : fromPgError(e, "backfill", "SERVER_ERROR", setup.connection.secrets);
  }
}
