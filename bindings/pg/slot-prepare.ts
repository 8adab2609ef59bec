/**
 * Before START_REPLICATION, on the replication connection: the publication
 * (created or checked, publication.ts), then the slot — created when asked
 * and missing (FAILOVER when asked, PostgreSQL 17+), checked to be a
 * pgoutput slot, and checked not to be invalidated. A missing slot is
 * SLOT_MISSING; an invalidated one SLOT_LOST, or with `slot.onLost:
 * "recreate"` dropped, created again and reported through `onSlotLost`.
 */
import type { Client } from "pg";
import { createSlotCommand, quoteIdent } from "./commands.ts";
import { ReplicationError } from "./errors.ts";
import { patiently } from "./guard.ts";
import type { SlotLostEvent } from "./health.ts";
import type { NormalizedOptions, ReplicateOptions } from "./options.ts";
import { ensurePublication } from "./publication-check.ts";
import { lostReason, readSlotState, slotLostError, slotMissingError } from "./slot-state.ts";
import { parseLsn } from "../lsn.ts";

/**
 * Makes the slot ready to stream from; resolves with its position, where
 * streaming starts unless `startLsn` is later: its confirmed_flush_lsn, or
 * for a temporary slot (created on this connection) the consistent point
 * CREATE_REPLICATION_SLOT answered — the same position, so the stream's
 * `lastAckedLsn` is where the slot starts rather than 0/0.
 */
export async function prepareSlot(
  client: Client, opts: NormalizedOptions, serverVersion: number,
  callbacks: Pick<ReplicateOptions, "onPublication" | "onSlotLost">,
  /** Wraps a slot creation (on a standby: while asking the primary for snapshots, standby.ts). */
  creating: <T>(work: Promise<T>) => Promise<T> = (work) => work,
): Promise<bigint> {
  if (opts.publication !== undefined) {
    const report = await ensurePublication(client, opts.publication, serverVersion);
    callbacks.onPublication?.(report);
  }
  const name = opts.slot.name;
  const run = (sql: string) => client.query(sql).then((r) => r.rows as unknown[]);
  // Creating waits for the transactions running then to end, dropping with WAIT for the slot's walsender to exit: no receive timeout.
  const create = () => patiently(client, () => creating(client.query(createSlotCommand(name, { temporary: opts.slot.temporary, twoPhase: opts.twoPhase, failover: opts.slot.failover }, serverVersion))));
  if (opts.slot.temporary) {
    const created = await create();
    const point = (created.rows[0] as { consistent_point?: unknown } | undefined)?.consistent_point;
    return typeof point === "string" ? parseLsn(point) : 0n;
  }
  let slot = await readSlotState(run, serverVersion, name);
  if (slot === undefined) {
    if (!opts.slot.create) throw slotMissingError(name, undefined, "42704");
    await create();
    slot = await readSlotState(run, serverVersion, name);
    if (slot === undefined) throw slotMissingError(name); // dropped meanwhile
  }
  if (slot.slotType !== "logical" || slot.plugin !== "pgoutput") {
    throw new ReplicationError(`replication slot "${name}" is a ${slot.slotType} slot${slot.plugin ? ` of plugin ${slot.plugin}` : ""}, not a pgoutput slot`, {
      code: "INVALID_OPTION",
    });
  }
  const reason = lostReason(slot);
  if (reason === undefined) return slot.confirmedFlushLsn ?? 0n;
  if (opts.slot.onLost !== "recreate") throw slotLostError(name, reason);
  // Recreate: everything between the old confirmed position and the new slot's consistent point is lost.
  await patiently(client, () => client.query(`DROP_REPLICATION_SLOT ${quoteIdent(name)} WAIT`));
  await create();
  const fresh = await readSlotState(run, serverVersion, name);
  if (fresh === undefined) throw slotMissingError(name);
  const event: SlotLostEvent = { slot: name, reason, lostFrom: slot.confirmedFlushLsn ?? 0n, lostTo: fresh.confirmedFlushLsn ?? fresh.currentWalLsn };
  callbacks.onSlotLost?.(event);
  return fresh.confirmedFlushLsn ?? 0n;
}
