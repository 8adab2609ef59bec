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
import { ensurePublication } from "./publication.ts";
import { lostReason, readSlotState, slotLostError, slotMissingError, type SlotState } from "./slot-state.ts";

/** The slot's state once it can be streamed from (`undefined` for a temporary slot, created by START's connection). */
export async function prepareSlot(
  client: Client, opts: NormalizedOptions, serverVersion: number,
  callbacks: Pick<ReplicateOptions, "onPublication" | "onSlotLost">,
): Promise<SlotState | undefined> {
  if (opts.publication !== undefined) {
    const report = await ensurePublication(client, opts.publication);
    callbacks.onPublication?.(report);
  }
  const name = opts.slot.name;
  const run = (sql: string) => client.query(sql).then((r) => r.rows as unknown[]);
  // Creating waits for the transactions running then to end, dropping with WAIT for the slot's walsender to exit: no receive timeout.
  const create = () => patiently(client, () => client.query(createSlotCommand(name, { temporary: opts.slot.temporary, twoPhase: opts.twoPhase, failover: opts.slot.failover }, serverVersion)));
  if (opts.slot.temporary) {
    await create();
    return undefined;
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
  if (reason === undefined) return slot;
  if (opts.slot.onLost !== "recreate") throw slotLostError(name, reason);
  // Recreate: everything between the old confirmed position and the new slot's consistent point is lost.
  await patiently(client, () => client.query(`DROP_REPLICATION_SLOT ${quoteIdent(name)} WAIT`));
  await create();
  const fresh = await readSlotState(run, serverVersion, name);
  if (fresh === undefined) throw slotMissingError(name);
  const event: SlotLostEvent = { slot: name, reason, lostFrom: slot.confirmedFlushLsn ?? 0n, lostTo: fresh.confirmedFlushLsn ?? fresh.currentWalLsn };
  callbacks.onSlotLost?.(event);
  return fresh;
}
