/**
 * What opening a source (source.ts) is made of, whichever server it is:
 * the hooks of the command, the cleanups to run in reverse on close or
 * failure, the check for a Ctrl-C while starting, the decoder made for the
 * command's format, and what tail and capture ask of replicate() on any
 * server — acknowledgements by the CLI (what its sink made durable), a
 * status update every second, the reconnect told on stderr.
 */
import type { ClientConfig } from "pg";
import type { PgoutputDecoder } from "../decoder.ts";
import { createDecoder } from "../create-decoder.ts";
import { formatLsn, parseLsn } from "../lsn.ts";
import { replicate } from "../pg/replicate.ts";
import type { ReplicationStream } from "../pg/stream.ts";
import { SnapshotReplication, type SnapshotReplicateOptions } from "../pg/snapshot.ts";
import type { ReplicateOptions } from "../pg/options.ts";
import type { TypeKnowledge, ValueOptions } from "../values/options.ts";
import { replicationClient, type PgModule } from "./connection.ts";
import type { DemoStep, WorkloadResult } from "./demo-workload.ts";
import { CliError, type ErrorContext } from "./errors.ts";
import type { SourceSettings } from "./settings.ts";

export interface SourceHooks {
  /** Whether the command was interrupted meanwhile (Ctrl-C while starting). */
  stopped: () => boolean;
  /** Messages for the user on stderr (shown when the status line is). */
  note: (text: string) => void;
  /** The decoder's `values` option, given the server's enum/domain types (the format's: FormatDefinition.values). */
  values?: (types: Record<number, TypeKnowledge>) => ValueOptions;
  /** A demo step starts. */
  onDemoStep?: (step: DemoStep, index: number) => void;
}

/** An open source: a stream (or a snapshot, then a stream) and what the command needs around it. */
export interface Source {
  stream: ReplicationStream;
  /** With --snapshot: iterate this (snapshot rows, then the stream's messages). */
  snapshot: SnapshotReplication | undefined;
  decoder: PgoutputDecoder;
  /** Another decoder made as `decoder` was (streamed transactions are replayed with it). */
  replayDecoder: () => Promise<PgoutputDecoder>;
  /** The server's end of WAL, for the lag. */
  walEnd: () => Promise<bigint | undefined>;
  /** The demo workload (embedded mode): resolves when its last transaction committed. */
  demo: Promise<WorkloadResult> | undefined;
  /** The connection string of the embedded server. */
  embeddedUrl: string | undefined;
  /** The database and the slot it streams from (what formats name the source by: Debezium's `source.db`, CloudEvents' `source`). */
  database: string | undefined;
  slot: string | undefined;
  /** For error messages. */
  context: ErrorContext;
  /** Stops the stream (if still running), the workload, the side connection and the embedded server. */
  close(): Promise<void>;
}

/** The server's end of WAL (the replayed end on a standby), for the status line's lag. */
const WAL_END = `SELECT (CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_lsn() END)::text AS lsn`;

/** Thrown when Ctrl-C came while starting: the command exits quietly with 0. */
export class Interrupted extends Error {
  constructor() {
    super("interrupted");
  }
}

export class Opening {
  readonly #cleanups: (() => Promise<void>)[] = [];

  constructor(
    readonly settings: SourceSettings,
    readonly hooks: SourceHooks,
    readonly pg: PgModule,
    readonly context: ErrorContext,
  ) {}

  /** Runs `cleanup` on close, after those deferred later. */
  defer(cleanup: () => Promise<void>): void {
    this.#cleanups.push(cleanup);
  }

  /** Everything deferred, newest first; failures are ignored (the command is ending). */
  readonly close = async (): Promise<void> => {
    for (const c of this.#cleanups.splice(0).reverse()) await c().catch(() => {});
  };

  /** Cleans up and throws Interrupted when Ctrl-C came meanwhile. */
  async check(): Promise<void> {
    if (!this.hooks.stopped()) return;
    await this.close();
    throw new Interrupted();
  }

  /** A decoder of the chosen backend writing values as the command's format does. */
  async decoder(types: Record<number, TypeKnowledge>): Promise<PgoutputDecoder> {
    const backend = this.settings.backend;
    try {
      return await createDecoder({ backend, values: this.hooks.values?.(types) ?? { types } });
    } catch (e) {
      throw new CliError(`the ${backend} decoder could not start: ${(e as Error).message}`, backend === "wasm" ? "try --backend baseline" : undefined);
    }
  }

  /** replicate() with what any server gets (see the file's comment) and `options`; the stream is stopped on close. */
  async replicate(
    config: ClientConfig, decoder: PgoutputDecoder, options: Pick<ReplicateOptions, "slot" | "publications" | "protoVersion" | "streaming" | "messages" | "startLsn" | "onNotice" | "primary">,
  ): Promise<{ stream: ReplicationStream; snapshot: SnapshotReplication | undefined }> {
    const s = this.settings;
    const run = await replicate({
      snapshot: s.snapshot ? {} : false,
      binary: s.binary,
      twoPhase: s.twoPhase,
      ack: "manual",
      decoder,
      statusIntervalMs: 1000,
      stopTimeoutMs: 5000,
      heartbeat: s.heartbeatMs === undefined ? undefined : { intervalMs: s.heartbeatMs },
      ddl: s.ddl ? { capture: true } : undefined,
      stopAt: s.until,
      ...this.#reconnectOptions(),
      ...options,
      connection: replicationClient(this.pg, config),
    } satisfies SnapshotReplicateOptions);
    const snapshot = run instanceof SnapshotReplication ? run : undefined;
    const stream = snapshot?.stream ?? (run as ReplicationStream);
    this.defer(() => (snapshot ?? stream).stop());
    return { stream, snapshot };
  }

  /** The opened source; `query` runs SQL on a connection of the CLI's (for the lag). */
  source(
    opened: Pick<Source, "stream" | "snapshot" | "database" | "slot">, decoder: PgoutputDecoder, types: Record<number, TypeKnowledge>,
    query: (sql: string) => Promise<{ lsn: string | null }[]>, demo: Pick<Source, "demo" | "embeddedUrl"> = { demo: undefined, embeddedUrl: undefined },
  ): Source {
    return {
      ...opened,
      ...demo,
      decoder,
      replayDecoder: () => this.decoder(types),
      walEnd: async () => {
        const rows = await query(WAL_END);
        return rows[0]?.lsn ? parseLsn(rows[0].lsn) : undefined;
      },
      context: this.context,
      close: this.close,
    };
  }

  #reconnectOptions(): Pick<ReplicateOptions, "reconnect" | "onReconnect" | "onReconnected"> {
    if (!this.settings.reconnect) return { reconnect: false };
    const note = this.hooks.note;
    return {
      reconnect: true,
      onReconnect: (e) => {
        note(`${e.attempt === 1 ? "connection lost" : "reconnect failed"} (${e.cause.message}); reconnecting in ${e.delayMs} ms (attempt ${e.attempt})`);
      },
      onReconnected: (e) => note(`reconnected after ${e.attempts} attempt(s), from ${formatLsn(e.startLsn)}; what was not acknowledged comes again`),
    };
  }
}
