/**
 * What the server says about a replication slot: one row of
 * `pg_replication_slots` (the columns the server version has), joined with
 * its walsender's `pg_stat_replication` row and the server's current WAL
 * position. Used by `stream.health()`, the lost-slot check at start and the
 * `slots` CLI command.
 *
 * Columns by version: `wal_status` / `safe_wal_size` 13+, `two_phase` 14+,
 * `conflicting` 16+, `invalidation_reason` / `failover` 17+. A field is
 * `undefined` when the server has no such column, `null` when it has one
 * and it is NULL.
 */
import { parseLsn } from "../lsn.ts";
import { quoteLiteral } from "./commands.ts";
import { ReplicationError } from "./errors.ts";

export interface SlotState {
  name: string;
  plugin: string | null;
  slotType: string;
  database: string | null;
  temporary: boolean;
  active: boolean;
  /** PID of the walsender holding the slot. */
  activePid: number | null;
  /** Oldest WAL the slot keeps (NULL once invalidated). */
  restartLsn: bigint | null;
  confirmedFlushLsn: bigint | null;
  /** `pg_current_wal_lsn()` (on a standby: the last replayed position) when sampled. */
  currentWalLsn: bigint;
  /** current WAL − confirmed_flush_lsn: the WAL the consumer has not confirmed. */
  lagBytes: bigint | null;
  /** current WAL − restart_lsn: the WAL the slot makes the server keep. */
  retainedBytes: bigint | null;
  /** `reserved`, `extended`, `unreserved` or `lost` (13+). */
  walStatus: string | null | undefined;
  /** Bytes that can still be written before the slot is in danger of losing WAL (13+; NULL without max_slot_wal_keep_size). */
  safeWalSize: bigint | null | undefined;
  /** Invalidated by a conflict with recovery (16+). */
  conflicting: boolean | null | undefined;
  /** `wal_removed`, `rows_removed`, `wal_level_insufficient`, `idle_timeout` (17+). */
  invalidationReason: string | null | undefined;
  /** A failover slot, synchronized to standbys (17+). */
  failover: boolean | undefined;
  /** pg_stat_replication's flush_lag / replay_lag of the walsender, in ms (NULL when idle or not active). */
  flushLagMs: number | null;
  replayLagMs: number | null;
}

interface Row {
  slot_name: string;
  plugin: string | null;
  slot_type: string;
  database: string | null;
  temporary: boolean;
  active: boolean;
  active_pid: number | null;
  restart_lsn: string | null;
  confirmed_flush_lsn: string | null;
  current_lsn: string;
  lag_bytes: string | null;
  retained_bytes: string | null;
  wal_status?: string | null;
  safe_wal_size?: string | null;
  conflicting?: boolean | null;
  invalidation_reason?: string | null;
  failover?: boolean;
  flush_lag_ms: number | null;
  replay_lag_ms: number | null;
}

/** The query for all slots (or the one named), with the columns `serverVersion` has. Plain SQL: runs on a replication=database connection too. */
export function slotStateQuery(serverVersion: number, name?: string): string {
  const cols = [
    "s.slot_name::text", "s.plugin::text", "s.slot_type", "s.database::text", "s.temporary", "s.active", "s.active_pid",
    "s.restart_lsn::text AS restart_lsn", "s.confirmed_flush_lsn::text AS confirmed_flush_lsn", "cur.lsn::text AS current_lsn",
    "pg_catalog.pg_wal_lsn_diff(cur.lsn, s.confirmed_flush_lsn)::bigint::text AS lag_bytes",
    "pg_catalog.pg_wal_lsn_diff(cur.lsn, s.restart_lsn)::bigint::text AS retained_bytes",
    "(extract(epoch FROM r.flush_lag) * 1000)::float8 AS flush_lag_ms",
    "(extract(epoch FROM r.replay_lag) * 1000)::float8 AS replay_lag_ms",
  ];
  if (serverVersion >= 130000) cols.push("s.wal_status", "s.safe_wal_size::text AS safe_wal_size");
  if (serverVersion >= 160000) cols.push("s.conflicting");
  if (serverVersion >= 170000) cols.push("s.invalidation_reason", "s.failover");
  return `SELECT ${cols.join(", ")}
FROM pg_catalog.pg_replication_slots s
CROSS JOIN (SELECT CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_lsn() END AS lsn) cur
LEFT JOIN pg_catalog.pg_stat_replication r ON r.pid = s.active_pid
${name === undefined ? "" : `WHERE s.slot_name = ${quoteLiteral(name)}\n`}ORDER BY s.slot_name`;
}

const lsn = (text: string | null): bigint | null => (text === null ? null : parseLsn(text));
const big = (text: string | null | undefined): bigint | null | undefined => (text === undefined ? undefined : text === null ? null : BigInt(text));

function fromRow(r: Row): SlotState {
  return {
    name: r.slot_name,
    plugin: r.plugin,
    slotType: r.slot_type,
    database: r.database,
    temporary: r.temporary,
    active: r.active,
    activePid: r.active_pid,
    restartLsn: lsn(r.restart_lsn),
    confirmedFlushLsn: lsn(r.confirmed_flush_lsn),
    currentWalLsn: parseLsn(r.current_lsn),
    lagBytes: big(r.lag_bytes) ?? null,
    retainedBytes: big(r.retained_bytes) ?? null,
    walStatus: r.wal_status,
    safeWalSize: big(r.safe_wal_size),
    conflicting: r.conflicting,
    invalidationReason: r.invalidation_reason,
    failover: r.failover,
    flushLagMs: r.flush_lag_ms,
    replayLagMs: r.replay_lag_ms,
  };
}

/** Runs one SQL text and returns its rows (a pg Client's query, or the side connection's). */
export type RunSql = (sql: string) => Promise<unknown[]>;

/** Every slot. */
export async function readSlotStates(run: RunSql, serverVersion: number): Promise<SlotState[]> {
  return ((await run(slotStateQuery(serverVersion))) as Row[]).map(fromRow);
}

/** The slot named, or `undefined` when it does not exist. */
export async function readSlotState(run: RunSql, serverVersion: number, name: string): Promise<SlotState | undefined> {
  const row = ((await run(slotStateQuery(serverVersion, name))) as Row[])[0];
  return row === undefined ? undefined : fromRow(row);
}

/**
 * Why the slot can no longer be streamed from, or `undefined` while it can:
 * `invalidation_reason` where the server has it (17+); before that
 * `wal_removed` for `wal_status = 'lost'` (the only cause before 16) and
 * `rows_removed` for `conflicting` (16: a standby's slot invalidated by recovery).
 */
export function lostReason(s: SlotState): string | undefined {
  if (typeof s.invalidationReason === "string" && s.invalidationReason.length > 0) return s.invalidationReason;
  if (s.walStatus === "lost") return "wal_removed";
  if (s.conflicting === true) return "rows_removed";
  return undefined;
}

const REMEDY =
  "the changes since its confirmed position are gone from the server: drop the slot (SELECT pg_drop_replication_slot(name)), " +
  "create it again and re-synchronise the consumer (or pass slot: { onLost: \"recreate\" } to do the first two automatically)";

/** The SLOT_LOST error (non-retryable) for an invalidated slot. */
export function slotLostError(name: string, reason: string, detail?: string, cause?: unknown): ReplicationError {
  return new ReplicationError(`replication slot "${name}" was invalidated (${reason}): ${REMEDY}`, { code: "SLOT_LOST", detail, cause });
}

/** The SLOT_MISSING error (non-retryable). */
export function slotMissingError(name: string, cause?: unknown, sqlstate?: string): ReplicationError {
  return new ReplicationError(
    `replication slot "${name}" does not exist: create it (slot: { name, create: true }, or CREATE_REPLICATION_SLOT ... LOGICAL pgoutput)` +
      "; if it existed before, it was dropped and the changes it kept are gone",
    { code: "SLOT_MISSING", sqlstate, cause },
  );
}

/**
 * A walsender's ErrorResponse that means the slot is missing (42704) or was
 * invalidated (55000: PostgreSQL 15-16 "cannot read from logical replication
 * slot", 17+ "can no longer access replication slot", with a detail saying
 * it was invalidated), as SLOT_MISSING / SLOT_LOST; anything else unchanged.
 */
export function classifySlotError(e: ReplicationError, name: string): ReplicationError {
  if (e.code !== "SERVER_ERROR") return e;
  if (e.sqlstate === "42704" && /replication slot/i.test(e.message)) return slotMissingError(name, e, e.sqlstate);
  if (e.sqlstate === "55000" && /invalidated/i.test(`${e.message} ${e.detail ?? ""}`)) {
    const m = /due to "([a-z_]+)"/.exec(e.detail ?? "");
    const reason = m?.[1] ?? (/maximum reserved size/i.test(e.detail ?? "") ? "wal_removed" : "invalidated");
    return slotLostError(name, reason, e.detail, e);
  }
  return e;
}
