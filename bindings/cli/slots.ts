/**
 * `pgoutput-wasm slots -c URL`: each replication slot's health as a table
 * (or `--json`): name, plugin, active walsender, confirmed position, lag
 * behind the server's WAL, WAL it retains and may still retain
 * (safe_wal_size), wal_status, why it was invalidated, failover. The same
 * query as `stream.health()` (bindings/pg/slot-state.ts), on one ordinary
 * connection; columns the server version does not have are shown as "-".
 */
import { formatLsn } from "../lsn.ts";
import { lostReason, readSlotStates, type SlotState } from "../pg/slot-state.ts";
import { explain, type ErrorContext } from "./errors.ts";
import type { Command } from "./command.ts";
import { connectSide, connectionConfig, loadPg } from "./connection.ts";
import { CONNECTION, type Flag, type FlagValues } from "./flags.ts";
import { formatBytes } from "./status.ts";
import { printable } from "./terminal.ts";

const JSON_FLAG: Flag = { name: "json", type: "boolean", default: false, description: "one JSON array: LSNs as X/Y, byte counts as numbers, null when unknown" };

export const slots: Command = {
  name: "slots",
  synopsis: "[options]",
  summary: "each replication slot's health: lag, WAL retained, wal_status, invalidation",
  examples: ["npx pgoutput-wasm slots -c postgres://user@db/app"],
  description: `Prints the health of every replication slot of the server: name, plugin,
active walsender pid, confirmed flush LSN, lag (the server's current WAL
minus the confirmed position), WAL retained for the slot, safe_wal_size
(how much more may be written before the slot is in danger, PostgreSQL 13+,
with max_slot_wal_keep_size), wal_status, invalidation reason (17+; "lost"
slots on older servers show wal_removed) and failover (17+).`,
  sections: [{ title: "options", flags: [CONNECTION, JSON_FLAG] }],
  notes: "Exit code 0, 1 on errors (one line with a hint), 2 for bad options.",
  run: slotsCommand,
};

const bytes = (n: bigint | null | undefined): number | null => (n === null || n === undefined ? null : Number(n));
const lsn = (n: bigint | null): string | null => (n === null ? null : formatLsn(n));

/** One slot as the JSON output has it. */
export function slotJson(s: SlotState): Record<string, unknown> {
  return {
    slot_name: s.name,
    plugin: s.plugin,
    slot_type: s.slotType,
    database: s.database,
    temporary: s.temporary,
    active: s.active,
    active_pid: s.activePid,
    restart_lsn: lsn(s.restartLsn),
    confirmed_flush_lsn: lsn(s.confirmedFlushLsn),
    current_wal_lsn: formatLsn(s.currentWalLsn),
    lag_bytes: bytes(s.lagBytes),
    retained_bytes: bytes(s.retainedBytes),
    safe_wal_size: bytes(s.safeWalSize),
    wal_status: s.walStatus ?? null,
    invalidation_reason: s.invalidationReason ?? null,
    lost: lostReason(s) ?? null,
    conflicting: s.conflicting ?? null,
    failover: s.failover ?? null,
    flush_lag_ms: s.flushLagMs,
  };
}

const HEADER = ["slot", "plugin", "active_pid", "confirmed_flush", "lag", "retained", "safe_wal_size", "wal_status", "invalidation", "failover"];

function row(s: SlotState): string[] {
  const b = (n: bigint | null | undefined) => (n === null || n === undefined ? "-" : formatBytes(Number(n)));
  return [
    s.name, s.plugin ?? "-", s.activePid === null ? "-" : String(s.activePid), s.confirmedFlushLsn === null ? "-" : formatLsn(s.confirmedFlushLsn),
    b(s.lagBytes), b(s.retainedBytes), b(s.safeWalSize), s.walStatus ?? "-", lostReason(s) ?? "-", s.failover === undefined ? "-" : String(s.failover),
  ].map(printable);
}

/** The rows as aligned columns. */
export function slotTable(slots: readonly SlotState[]): string {
  const rows = [HEADER, ...slots.map(row)];
  const widths = HEADER.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n") + "\n";
}

async function slotsCommand(values: FlagValues): Promise<number> {
  const { config, target, user, password } = connectionConfig(values.connection as string | undefined);
  const context: ErrorContext = { target, user, password };
  const pg = await loadPg();
  const client = await connectSide(pg, config, context);
  let slots: SlotState[];
  try {
    const version = Number((await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")).rows[0]!.v);
    context.serverVersion = version;
    slots = await readSlotStates((sql) => client.query(sql).then((r) => r.rows as unknown[]), version);
  } catch (e) {
    throw explain(e, context);
  } finally {
    await client.end().catch(() => {});
  }
  process.stdout.write(values.json ? `${JSON.stringify(slots.map(slotJson), null, 2)}\n` : slots.length === 0 ? "no replication slots\n" : slotTable(slots));
  return 0;
}
