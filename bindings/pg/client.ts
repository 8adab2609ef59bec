/**
 * Opening a `replication=database` connection with `pg` (a dependency of
 * the package): imported dynamically (or handed over by the user), so the
 * rest of the package never loads it. Also the few
 * internals of `pg` the stream relies on, typed structurally here because
 * `@types/pg` does not describe them.
 */
import type { Client, ClientConfig } from "pg";
import { ReplicationError, fromPgError } from "./errors.ts";
import type { RawSocket } from "./socket.ts";
import { ConnectionStringError, parseConnectionString } from "./conninfo.ts";
import { connectionSecrets } from "../redact.ts";
import { ConnectionGuard } from "./guard.ts";
import type { ConnectionLimits } from "./defaults.ts";
import { useInPlaceReads } from "./in-place-reads.ts";

/** What the stream uses of `client.connection` (pg's Connection): its socket, which it takes over (socket.ts). */
export interface PgConnection {
  readonly stream: RawSocket;
}

/** pg's Connection under `client` (not in @types/pg; absent for pg-native). */
export function pgConnection(client: Client): PgConnection | undefined {
  return (client as unknown as { connection?: PgConnection }).connection;
}

/** The client as the stream uses it. */
export interface PgReplicationClient {
  readonly client: Client;
  readonly connection: PgConnection;
}

/** The `pg` module, as far as the package uses it (`replicate()`'s `pg` option). */
export type PgModule = { Client: new (config: ClientConfig) => Client };

/** `replicate()`'s `connection` option: a connection string, a pg ClientConfig, or a function returning a new pg.Client. */
export type ConnectionOption = string | ClientConfig | (() => Client | Promise<Client>);

export async function loadPg(given: PgModule | undefined): Promise<PgModule> {
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

/**
 * The `connection` option, checked before anything touches the network: a
 * string (or a ClientConfig's `connectionString`) parsed into a ClientConfig
 * here, so `pg` never sees — or echoes — the string; and the passwords that
 * must not appear in error messages.
 */
export interface ResolvedConnection {
  config: ClientConfig | undefined;
  factory: (() => Client | Promise<Client>) | undefined;
  /** For `redact()`; openClient adds the password of a client from `factory`. */
  secrets: string[];
}

function parsed(text: string, secrets: string[]): ClientConfig {
  secrets.push(...connectionSecrets(text));
  try {
    const config = parseConnectionString(text);
    if (typeof config.password === "string") secrets.push(config.password);
    return config;
  } catch (e) {
    if (!(e instanceof ConnectionStringError)) throw e;
    throw new ReplicationError(`invalid connection string: ${e.message}`, { code: "INVALID_OPTION", cause: e });
  }
}

/** Throws an INVALID_OPTION `ReplicationError` for a connection string that does not parse. */
export function resolveConnection(connection: ConnectionOption): ResolvedConnection {
  const secrets: string[] = [];
  if (typeof connection === "function") return { config: undefined, factory: connection, secrets };
  if (typeof connection === "string") return { config: parsed(connection, secrets), factory: undefined, secrets };
  if (connection === null || typeof connection !== "object") {
    throw new ReplicationError("connection must be a connection string, a pg ClientConfig or a function returning a pg.Client", { code: "INVALID_OPTION" });
  }
  const { connectionString, ...rest } = connection;
  if (typeof rest.password === "string") secrets.push(rest.password);
  // As in pg, what the connection string says wins over the other fields.
  const config = typeof connectionString === "string" ? { ...rest, ...parsed(connectionString, secrets) } : { ...rest };
  return { config, factory: undefined, secrets };
}

/**
 * Creates a client for `target`, guards it (guard.ts: `limits`) and
 * connects it. `replication` makes it a `replication=database` connection;
 * a user's factory makes those anyway (they run plain SQL too). `created`
 * sees the client before it connects (a reconnect ends one that takes too
 * long). `inPlaceReads`: the stream's reads may land in its decoder's
 * memory (in-place-reads.ts; not for a factory's client, which keeps its
 * socket). The password of a factory's client joins the secrets redacted from
 * errors. Rejects with pg's error, or the guard's (`connectError()`: what
 * it saw of the startup, when pg's own words say less).
 */
export async function connectClient(
  target: ResolvedConnection, pgModule: PgModule | undefined,
  how: { replication: boolean; limits: ConnectionLimits; applicationName?: string; created?: (client: Client) => void; inPlaceReads?: boolean },
): Promise<Client> {
  let client: Client;
  if (target.factory !== undefined) {
    client = await target.factory();
    // pg keeps the password on the client (not enumerable); it may be a function.
    const password = (client as unknown as { password?: unknown }).password;
    if (typeof password === "string" && !target.secrets.includes(password)) target.secrets.push(password);
  } else {
    const pg = await loadPg(pgModule);
    const config: ClientConfig & { replication?: string } = { ...target.config };
    if (how.replication) config.replication = "database";
    if (how.applicationName !== undefined) config.application_name = how.applicationName;
    client = new pg.Client(config);
    if (how.inPlaceReads === true) useInPlaceReads(client);
  }
  // An 'error' event without a listener would crash the process; failures
  // reach the caller through the active query (and the stream's own listeners).
  client.on("error", () => {});
  const guard = ConnectionGuard.attach(client, how.limits);
  how.created?.(client);
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => {});
    throw guard === undefined ? e : guard.connectError(e);
  }
  return client;
}

/** Creates and connects the replication client described by `connection` (see `connectClient`). */
export async function openClient(
  connection: ResolvedConnection, pgModule: PgModule | undefined, limits: ConnectionLimits, inPlaceReads: boolean, created?: (client: Client) => void,
): Promise<PgReplicationClient> {
  let client: Client;
  try {
    client = await connectClient(connection, pgModule, { replication: true, limits, created, inPlaceReads });
  } catch (e) {
    throw fromPgError(e, "could not connect", "CONNECT_FAILED", connection.secrets);
  }
  const conn = pgConnection(client);
  if (!conn || typeof conn.stream?.write !== "function" || typeof conn.stream.listeners !== "function") {
    await client.end().catch(() => {});
    throw new ReplicationError("the pg client has no usable `connection` (pg-native is not supported)", { code: "CONNECT_FAILED" });
  }
  return { client, connection: conn };
}

/** Ends `client` (Terminate), waiting for pg at most a second; then destroys `socket`, if given, should the server not have closed it. */
export async function endClient(client: Client, socket?: { destroy(): unknown }): Promise<void> {
  let timeout: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([client.end().catch(() => {}), new Promise<void>((resolve) => (timeout = setTimeout(resolve, 1000)))]);
  clearTimeout(timeout);
  socket?.destroy();
}
