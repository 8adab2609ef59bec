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
import type { PgoutputDecoder } from "../decoder.ts";
import { createDecoder, isBackendChoice } from "../create-decoder.ts";
import { openClient, resolveConnection } from "./client.ts";
import { startReplicationCommand } from "./commands.ts";
import { HealthMonitor } from "./health.ts";
import { SideConnection } from "./side-connection.ts";
import { prepareSlot } from "./slot-prepare.ts";
import { classifySlotError } from "./slot-state.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import { normalizeOptions, type ReplicateOptions } from "./options.ts";
import { ReplicationStream } from "./stream.ts";

async function makeDecoder(choice: ReplicateOptions["decoder"], maxMessageSize: number | undefined): Promise<PgoutputDecoder> {
  if (!isBackendChoice(choice ?? "wasm")) {
    throw new ReplicationError(`decoder must be "wasm", "baseline", "auto" or a decoder, not ${String(choice)}`, { code: "INVALID_OPTION" });
  }
  const decoder = await createDecoder({ backend: choice ?? "wasm", maxMessageSize });
  if (decoder === choice) decoder.reset(); // a new connection: the server sends every Relation again
  return decoder;
}

/**
 * Opens a `replication=database` connection, creates the slot if asked,
 * and starts streaming pgoutput from it. Rejects with a `ReplicationError`
 * (INVALID_OPTION, CONNECT_FAILED, SLOT_MISSING (sqlstate 42704), SLOT_LOST,
 * UNSUPPORTED_BY_SERVER, or SERVER_ERROR with the SQLSTATE: 55006 slot in
 * use, 0A000 unsupported option, ...).
 */
export async function replicate(options: ReplicateOptions): Promise<ReplicationStream> {
  const opts = normalizeOptions(options);
  const target = resolveConnection(options.connection);
  const decoder = await makeDecoder(options.decoder, opts.maxMessageSize);
  const { client, connection } = await openClient(target, options.pg);
  let stream: ReplicationStream | undefined;
  let monitor: HealthMonitor | undefined;
  try {
    const version = Number((await client.query<{ server_version_num: string }>("SHOW server_version_num")).rows[0]?.server_version_num);
    const name = opts.slot.name;
    const slot = await prepareSlot(client, opts, version, options);
    const confirmed = slot?.confirmedFlushLsn ?? 0n;
    const start = opts.startLsn > confirmed ? opts.startLsn : confirmed;
    stream = new ReplicationStream({
      client,
      socket: connection.stream,
      decoder,
      options: opts,
      start,
      serverVersion: version,
      callbacks: { onError: options.onError, onStatus: options.onStatus, onNotice: options.onNotice },
      secrets: target.secrets,
      monitor: (monitor = new HealthMonitor(new SideConnection(target, options.pg), version, opts, options)),
    });
    await stream.start(startReplicationCommand(name, start, opts));
    return stream;
  } catch (e) {
    if (stream !== undefined) await stream.stop().catch(() => {});
    else await client.end().catch(() => {});
    await monitor?.close();
    throw classifySlotError(fromPgError(e, "could not start replication", "CONNECTION_LOST", target.secrets), opts.slot.name);
  }
}
