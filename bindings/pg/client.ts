/**
 * Opening a `replication=database` connection with `pg`, which is an
 * optional peer dependency: imported dynamically (or handed over by the
 * user), so the rest of the package works without it. Also the few
 * internals of `pg` the stream relies on, typed structurally here because
 * `@types/pg` does not describe them.
 */
import type { Client, ClientConfig } from "pg";
import type { ReplicateOptions } from "./options.ts";
import { ReplicationError, fromPgError } from "./errors.ts";

/** The CopyData event `pg` emits on `client.connection` (a view of pg's parser buffer). */
export interface CopyDataEvent {
  chunk: Uint8Array;
}

/** What the stream uses of `client.connection` (pg's Connection). */
export interface PgConnection {
  readonly stream: { pause(): unknown; resume(): unknown; isPaused?(): boolean; destroy?(): unknown };
  on(event: "copyData", listener: (msg: CopyDataEvent) => void): unknown;
  once(event: "replicationStart", listener: () => void): unknown;
  removeListener(event: string, listener: (...args: never[]) => void): unknown;
  /** Sends a CopyData message (a Buffer: pg's serializer copies with Buffer#copy). */
  sendCopyFromChunk(chunk: Uint8Array): void;
  /** Sends CopyDone. */
  endCopyFrom(): void;
}

/** The client as the stream uses it. */
export interface PgReplicationClient {
  readonly client: Client;
  readonly connection: PgConnection;
}

type PgModule = { Client: new (config: ClientConfig) => Client };

async function loadPg(given: ReplicateOptions["pg"]): Promise<PgModule> {
  if (given) return given;
  try {
    const mod = (await import("pg")) as unknown as { default?: PgModule } & Partial<PgModule>;
    const pg = mod.default ?? mod;
    if (typeof pg.Client !== "function") throw new Error("the module has no Client");
    return pg as PgModule;
  } catch (cause) {
    throw new ReplicationError("pgoutput-wasm/pg needs the `pg` package (npm install pg), or pass it as the `pg` option", {
      code: "CONNECT_FAILED",
      cause,
    });
  }
}

/** Creates and connects the replication client described by `connection`. */
export async function openClient(connection: ReplicateOptions["connection"], pgModule: ReplicateOptions["pg"]): Promise<PgReplicationClient> {
  let client: Client;
  if (typeof connection === "function") {
    client = await connection();
  } else {
    const pg = await loadPg(pgModule);
    const config: ClientConfig = typeof connection === "string" ? { connectionString: connection } : { ...connection };
    (config as ClientConfig & { replication: string }).replication = "database";
    client = new pg.Client(config);
  }
  // An 'error' event without a listener would crash the process; the stream
  // learns of failures through its own listeners and the active query.
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => {});
    throw fromPgError(e, "could not connect", "CONNECT_FAILED");
  }
  const conn = (client as unknown as { connection?: PgConnection }).connection;
  if (!conn || typeof conn.sendCopyFromChunk !== "function" || typeof conn.on !== "function") {
    await client.end().catch(() => {});
    throw new ReplicationError("the pg client has no usable `connection` (pg-native is not supported)", { code: "CONNECT_FAILED" });
  }
  return { client, connection: conn };
}
