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
import type { RawSocket } from "./socket.ts";

/** What the stream uses of `client.connection` (pg's Connection): its socket, which it takes over (socket.ts). */
export interface PgConnection {
  readonly stream: RawSocket;
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
  if (!conn || typeof conn.stream?.write !== "function" || typeof conn.stream.listeners !== "function") {
    await client.end().catch(() => {});
    throw new ReplicationError("the pg client has no usable `connection` (pg-native is not supported)", { code: "CONNECT_FAILED" });
  }
  return { client, connection: conn };
}
