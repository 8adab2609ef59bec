/**
 * Replication from a physical standby (PostgreSQL 16+; the `primary`
 * option). A standby decodes the WAL it replays, so a logical slot on it
 * works as on a primary, but a standby cannot write:
 *
 * - Creating a slot waits for a running-transactions record (xl_running_xacts)
 *   logged after the creation began. A primary logs one every 15 s only
 *   after other WAL, so on an idle primary the creation waits for the next
 *   write, possibly forever. With `primary`, the record is asked for there
 *   (`pg_log_standby_snapshot()`) every STANDBY_SNAPSHOT_INTERVAL_MS while
 *   the creation runs.
 * - Heartbeats are WAL writes: they go to `primary`, reach the standby by
 *   replication, and let its slot advance. On a standby without `primary`,
 *   `heartbeat` is rejected (INVALID_OPTION), as every beat would fail.
 */
import type { Client } from "pg";
import { ReplicationError } from "./errors.ts";
import type { SideConnection } from "./side-connection.ts";

/** How often a slot creation on a standby asks the primary for a running-transactions record. */
export const STANDBY_SNAPSHOT_INTERVAL_MS = 500;

const LOG_STANDBY_SNAPSHOT = "SELECT pg_catalog.pg_log_standby_snapshot()";

/** How the error of a primary that refused the request begins (the CLI tells it apart by this). */
export const PRIMARY_REFUSED = "could not log a standby snapshot on the primary";

/** Whether the server of `client` is a standby (in recovery). */
export async function inRecovery(client: Client): Promise<boolean> {
  const row = (await client.query<{ standby: boolean }>("SELECT pg_catalog.pg_is_in_recovery() AS standby")).rows[0];
  return row?.standby === true;
}

/** The checks replicate() makes once it knows the server is a standby. */
export function checkStandby(serverVersion: number, hasPrimary: boolean, heartbeat: boolean): void {
  if (serverVersion < 160000) {
    throw new ReplicationError(`logical replication from a standby needs PostgreSQL 16 or later; this standby is ${Math.floor(serverVersion / 10000)}`, {
      code: "UNSUPPORTED_BY_SERVER",
    });
  }
  if (heartbeat && !hasPrimary) {
    throw new ReplicationError("heartbeat on a standby needs the primary option: a standby cannot write WAL (heartbeats go to the primary)", {
      code: "INVALID_OPTION",
    });
  }
}

/**
 * Runs `work` (a slot creation on a standby) while asking the primary for a
 * running-transactions record every STANDBY_SNAPSHOT_INTERVAL_MS, one
 * request at a time. A request the primary refuses (no EXECUTE on
 * pg_log_standby_snapshot(), superuser-only by default) rejects at once
 * with its error, instead of leaving the creation waiting with no reason
 * given; the caller closes the replication connection, which ends it.
 * A lost connection is retried at the next tick (the side connection
 * reopens).
 */
export function whileLoggingSnapshots<T>(primary: SideConnection, work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setInterval> | undefined;
  const refused = new Promise<never>((_, reject) => {
    let running = false;
    const tick = () => {
      if (running) return;
      running = true;
      primary.query(LOG_STANDBY_SNAPSHOT).then(
        () => (running = false),
        (e: ReplicationError) => {
          running = false;
          if (e.code === "SERVER_ERROR" && !e.retryable) {
            reject(new ReplicationError(`${PRIMARY_REFUSED} (slot creation on a standby waits for one): ${e.message}`, {
              code: "SERVER_ERROR", sqlstate: e.sqlstate, cause: e,
            }));
          }
        },
      );
    };
    timer = setInterval(tick, STANDBY_SNAPSHOT_INTERVAL_MS);
    tick();
  });
  refused.catch(() => {});
  return Promise.race([work, refused]).finally(() => clearInterval(timer));
}
