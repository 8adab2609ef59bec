import type { Cluster } from "../../devkit/cluster/cluster.ts";

/**
 * Waits until a walsender streams from the slot (START_REPLICATION). Not just
 * `active`: the slot is also active while CREATE_REPLICATION_SLOT runs, and
 * released for a moment before START_REPLICATION takes it again.
 */
export async function waitStreaming(c: Pick<Cluster, "query">, slot: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await c.query(
      `SELECT 1 FROM pg_replication_slots s JOIN pg_stat_activity a ON a.pid = s.active_pid
       WHERE s.slot_name = $1 AND a.query LIKE 'START_REPLICATION%'`, [slot]);
    if (rows.length > 0) return;
    if (Date.now() > deadline) throw new Error(`slot ${slot} not streaming`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
