/**
 * `replicate()`: connects, prepares the slot, starts streaming, and returns
 * the running `ReplicationStream`.
 *
 * @example
 * ```ts
 * import { replicate } from "pgoutput-wasm/pg";
 *
 * const stream = await replicate({
 *   connection: "postgres://replicator@db/app",
 *   slot: { name: "app_cdc", create: true },
 *   publications: ["app"],
 *   streaming: "on",          // large transactions arrive while in progress
 * });
 * for await (const tx of stream.transactions()) {
 *   for (const change of tx.messages) await apply(change);
 *   // acknowledged (ack: "auto") when the loop asks for the next transaction
 * }
 * ```
 *
 * Resuming after an error (connection lost, walsender terminated, server
 * restart): start a new stream from the last acknowledged position. No
 * committed transaction is lost; the only ones delivered again are those
 * that were never acknowledged.
 *
 * ```ts
 * let stream = await replicate(options);
 * for (;;) {
 *   try {
 *     for await (const tx of stream.transactions()) await apply(tx);
 *     break; // stopped
 *   } catch (e) {
 *     if (!(e instanceof ReplicationError && e.retryable)) throw e;
 *     await sleep(1000);
 *     stream = await replicate({ ...options, startLsn: stream.lastAckedLsn });
 *   }
 * }
 * ```
 */
import type { Client } from "pg";
import type { PgoutputDecoder } from "../decoder.ts";
import { createDecoder, isBackendChoice } from "../create-decoder.ts";
import { parseLsn } from "../lsn.ts";
import { openClient, resolveConnection } from "./client.ts";
import { createSlotCommand, slotQuery, startReplicationCommand } from "./commands.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import { normalizeOptions, type ReplicateOptions } from "./options.ts";
import { ReplicationStream } from "./stream.ts";
import { SnapshotReplication, exportedSnapshot, normalizeSnapshot, type SnapshotOptions, type SnapshotReplicateOptions } from "./snapshot.ts";

async function makeDecoder(choice: ReplicateOptions["decoder"], maxMessageSize: number | undefined): Promise<PgoutputDecoder> {
  if (!isBackendChoice(choice ?? "wasm")) {
    throw new ReplicationError(`decoder must be "wasm", "baseline", "auto" or a decoder, not ${String(choice)}`, { code: "INVALID_OPTION" });
  }
  const decoder = await createDecoder({ backend: choice ?? "wasm", maxMessageSize });
  if (decoder === choice) decoder.reset(); // a new connection: the server sends every Relation again
  return decoder;
}

interface SlotRow {
  plugin: string | null;
  slot_type: string;
  confirmed_flush_lsn: string | null;
}

async function readSlot(client: Client, name: string): Promise<SlotRow | undefined> {
  const res = await client.query<SlotRow>(slotQuery(name));
  return res.rows[0];
}

/**
 * Opens a `replication=database` connection, creates the slot if asked,
 * and starts streaming pgoutput from it. Rejects with a `ReplicationError`
 * (INVALID_OPTION, CONNECT_FAILED, or SERVER_ERROR with the SQLSTATE: 42704
 * missing slot, 55006 slot in use, 0A000 unsupported option, ...).
 */
export async function replicate(options: ReplicateOptions & { snapshot: true | SnapshotOptions }): Promise<SnapshotReplication>;
export async function replicate(options: ReplicateOptions): Promise<ReplicationStream>;
export async function replicate(options: SnapshotReplicateOptions): Promise<ReplicationStream | SnapshotReplication>;
export async function replicate(options: ReplicateOptions | SnapshotReplicateOptions): Promise<ReplicationStream | SnapshotReplication> {
  const opts = normalizeOptions(options);
  const snapshot = normalizeSnapshot((options as Partial<SnapshotReplicateOptions>).snapshot, opts.binary);
  if (snapshot !== undefined && options.startLsn !== undefined) {
    throw new ReplicationError("snapshot and startLsn exclude each other: a snapshot streams from its new slot's consistent point", { code: "INVALID_OPTION" });
  }
  const target = resolveConnection(options.connection);
  const decoder = await makeDecoder(options.decoder, opts.maxMessageSize);
  const { client, connection } = await openClient(target, options.pg);
  let stream: ReplicationStream | undefined;
  let version = 0;
  const newStream = (start: bigint): ReplicationStream =>
    new ReplicationStream({
      client,
      socket: connection.stream,
      decoder,
      options: opts,
      start,
      serverVersion: version,
      callbacks: { onError: options.onError, onStatus: options.onStatus, onNotice: options.onNotice },
      secrets: target.secrets,
    });
  try {
    version = Number((await client.query<{ server_version_num: string }>("SHOW server_version_num")).rows[0]?.server_version_num);
    const name = opts.slot.name;
    let slot = opts.slot.temporary ? undefined : await readSlot(client, name);
    if (snapshot !== undefined) {
      if (slot !== undefined) {
        throw new ReplicationError(`snapshot needs a new slot; "${name}" exists (stream from it without snapshot, or drop it)`, { code: "INVALID_OPTION" });
      }
      // No command may run on this connection between the creation and START_REPLICATION: it would end the export.
      const created = await client.query(createSlotCommand(name, { temporary: opts.slot.temporary, twoPhase: opts.twoPhase, exportSnapshot: true }, version));
      const exported = exportedSnapshot(created.rows[0]);
      stream = newStream(exported.consistentPoint);
      const run = new SnapshotReplication({
        stream, startCommand: startReplicationCommand(name, exported.consistentPoint, opts), replicationClient: client, exported,
        options: opts, snapshot, connection: target, pg: options.pg, serverVersion: version,
      });
      await run.prepare(); // on failure it has dropped the slot and closed the connection
      return run;
    }
    if (slot === undefined && opts.slot.create) {
      await client.query(createSlotCommand(name, { temporary: opts.slot.temporary, twoPhase: opts.twoPhase }, version));
      slot = await readSlot(client, name);
    }
    if (slot !== undefined && (slot.slot_type !== "logical" || slot.plugin !== "pgoutput")) {
      throw new ReplicationError(`replication slot "${name}" is a ${slot.slot_type} slot${slot.plugin ? ` of plugin ${slot.plugin}` : ""}, not a pgoutput slot`, {
        code: "INVALID_OPTION",
      });
    }
    // A missing slot is the server's error to report (42704) at START_REPLICATION.
    const confirmed = slot?.confirmed_flush_lsn ? parseLsn(slot.confirmed_flush_lsn) : 0n;
    const start = opts.startLsn > confirmed ? opts.startLsn : confirmed;
    stream = newStream(start);
    await stream.start(startReplicationCommand(name, start, opts));
    return stream;
  } catch (e) {
    if (stream !== undefined) await stream.stop().catch(() => {});
    else await client.end().catch(() => {});
    throw fromPgError(e, "could not start replication", "CONNECTION_LOST", target.secrets);
  }
}
