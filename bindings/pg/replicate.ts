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
 * After a retryable error (connection lost, walsender terminated, server
 * restart, receive timeout) the stream reconnects by itself and resumes from
 * the last acknowledged position (`reconnect`, on by default): no committed
 * transaction is lost; the only ones delivered again are those that were
 * never acknowledged. With `reconnect: false`, the same by hand:
 *
 * ```ts
 * let stream = await replicate({ ...options, reconnect: false });
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
import { openClient, pgConnection, resolveConnection } from "./client.ts";
import { createSlotCommand, startReplicationCommand } from "./commands.ts";
import { HealthMonitor } from "./health.ts";
import { SideConnection } from "./side-connection.ts";
import { patiently } from "./guard.ts";
import { connectionLimits } from "./defaults.ts";
import { prepareSlot } from "./slot-prepare.ts";
import { classifySlotError, readSlotState } from "./slot-state.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import { normalizeOptions, type ReplicateOptions } from "./options.ts";
import { ReplicationStream } from "./stream.ts";
import type { StreamConnection } from "./reconnect.ts";
import { SnapshotReplication } from "./snapshot.ts";
import { exportedSnapshot, normalizeSnapshot, type SnapshotOptions, type SnapshotReplicateOptions } from "./snapshot-options.ts";
import { ensurePublication } from "./publication-check.ts";
import { checkStandby, inRecovery, whileLoggingSnapshots } from "./standby.ts";

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
  const limits = connectionLimits(opts);
  // Connects on first use only (heartbeats, a slot creation on a standby: standby.ts), so nothing to close before that.
  const primary = options.primary === undefined ? undefined : new SideConnection(resolveConnection(options.primary), options.pg, limits);
  const { client, connection } = await openClient(target, options.pg, limits, opts.inPlaceReads);
  let creating = <T>(work: Promise<T>): Promise<T> => work;
  let stream: ReplicationStream | undefined;
  let monitor: HealthMonitor | undefined;
  let version = 0;
  const name = opts.slot.name;
  const newStream = (start: bigint): ReplicationStream =>
    new ReplicationStream({
      client,
      socket: connection.stream,
      decoder,
      options: opts,
      start,
      serverVersion: version,
      callbacks: {
        onError: options.onError, onStatus: options.onStatus, onNotice: options.onNotice,
        onReconnect: options.onReconnect, onReconnected: options.onReconnected,
      },
      secrets: target.secrets,
      connection: { target, pg: options.pg },
      monitor: (monitor = new HealthMonitor(new SideConnection(target, options.pg, limits), version, opts, options, primary)),
      reconnect: opts.reconnect === false ? undefined : {
        policy: opts.reconnect,
        connect: async (lsn, signal): Promise<StreamConnection> => {
          const again = await openClient(target, options.pg, limits, opts.inPlaceReads, (client) => {
            // Given up on: end() would wait for a silent server's goodbye; the socket is destroyed instead.
            signal.addEventListener("abort", () => pgConnection(client)?.stream.destroy(), { once: true });
          });
          try {
            // The slot again, as at the start: lost while away is SLOT_LOST (or recreated, loudly, when asked);
            // gone is SLOT_MISSING even with `create`: a slot made now would silently skip what was missed.
            await prepareSlot(again.client, { ...opts, slot: { ...opts.slot, create: false }, publication: undefined }, version, options);
          } catch (e) {
            await again.client.end().catch(() => {});
            throw classifySlotError(fromPgError(e, "could not start replication", "CONNECTION_LOST", target.secrets), name);
          }
          return { client: again.client, socket: again.connection.stream, command: startReplicationCommand(name, lsn, opts) };
        },
      },
    });
  try {
    version = Number((await client.query<{ server_version_num: string }>("SHOW server_version_num")).rows[0]?.server_version_num);
    // Only asked when it changes something: where heartbeats go, and how a slot is created.
    if ((primary !== undefined || opts.heartbeat !== undefined) && (await inRecovery(client))) {
      checkStandby(version, primary !== undefined, opts.heartbeat !== undefined);
      if (primary !== undefined) creating = (work) => whileLoggingSnapshots(primary, work);
    }
    if (snapshot !== undefined) {
      if (!opts.slot.temporary && (await readSlotState((sql) => client.query(sql).then((r) => r.rows as unknown[]), version, name)) !== undefined) {
        throw new ReplicationError(`snapshot needs a new slot; "${name}" exists (stream from it without snapshot, or drop it)`, { code: "INVALID_OPTION" });
      }
      if (opts.publication !== undefined) options.onPublication?.(await ensurePublication(client, opts.publication, version));
      // No command may run on this connection between the creation and START_REPLICATION: it would end the export.
      const created = await patiently(client, () => creating(client.query(createSlotCommand(name, {
        temporary: opts.slot.temporary, twoPhase: opts.twoPhase, failover: opts.slot.failover, exportSnapshot: true,
      }, version))));
      const exported = exportedSnapshot(created.rows[0]);
      stream = newStream(exported.consistentPoint);
      const run = new SnapshotReplication({
        stream, startCommand: startReplicationCommand(name, exported.consistentPoint, opts), replicationClient: client, exported,
        options: opts, snapshot, connection: target, pg: options.pg, serverVersion: version,
      });
      await run.prepare(); // on failure it has dropped the slot and closed the connection
      return run;
    }
    const confirmed = await prepareSlot(client, opts, version, options, creating);
    const start = opts.startLsn > confirmed ? opts.startLsn : confirmed;
    stream = newStream(start);
    await stream.start(startReplicationCommand(name, start, opts));
    return stream;
  } catch (e) {
    if (stream !== undefined) await stream.stop().catch(() => {});
    else await client.end().catch(() => {});
    await monitor?.close();
    await primary?.close();
    throw classifySlotError(fromPgError(e, "could not start replication", "CONNECTION_LOST", target.secrets), opts.slot.name);
  }
}
