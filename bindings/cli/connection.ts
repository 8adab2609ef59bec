/**
 * How the CLI reaches a server of the user's: `pg` (a dependency of the
 * package, imported here on first use, and a missing one is an error that
 * says what to install), the connection string or the PG* variables as a
 * ClientConfig (passwords remembered for redaction first), the connect
 * timeout, and the plain connection of the CLI's own queries (the
 * preflight, `slots`).
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Client, ClientConfig } from "pg";
import { ConnectionStringError, looksLikeUrl, parseConnectionString } from "../pg/conninfo.ts";
import { DEFAULT_LIMITS, endpointName } from "../pg/guard.ts";
import { connectClient } from "../pg/client.ts";
import { redactCli, rememberSecrets } from "./terminal.ts";
import { CliError, explain, usage, type ErrorContext } from "./errors.ts";

export type PgModule = { Client: new (config: ClientConfig) => Client };

/** The PG* variables that select a server instead of the embedded one. */
export const PG_ENV = ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"] as const;

/** How long the CLI waits for a server to accept and answer a connection, unless connect_timeout says otherwise (0: no limit). */
export const CONNECT_TIMEOUT_MS = 15_000;

const CONNECTION_HINT = "expected postgres://user:password@host:5432/database (percent-encode / ? % in the password) or host=... port=... dbname=... user=... password='...'";

/** `pg`, or a CliError with the install hint. */
export async function loadPg(): Promise<PgModule> {
  try {
    const mod = (await import("pg")) as unknown as { default?: PgModule } & Partial<PgModule>;
    const pg = mod.default ?? mod;
    if (typeof pg.Client !== "function") throw new Error("no Client");
    return pg as PgModule;
  } catch {
    throw new CliError("this command needs the pg package, a dependency of pgoutput-wasm, which is missing", "reinstall pgoutput-wasm, or npm install pg");
  }
}

/** `config` with the CLI's connect timeout where the connection string set none (pg's connectionTimeoutMillis). */
function withConnectTimeout(config: ClientConfig): ClientConfig {
  return { ...config, connectionTimeoutMillis: config.connectionTimeoutMillis ?? CONNECT_TIMEOUT_MS };
}

/** A factory of replication Clients made with the CLI's own `pg`. */
export function replicationClient(pg: PgModule, config: ClientConfig): () => Client {
  return () => new pg.Client({ ...withConnectTimeout(config), replication: "database" } as ClientConfig);
}

/**
 * A plain connection for the CLI's own queries (the preflight, `slots`):
 * guarded with replicate()'s default limits, connected as the library
 * connects (connectClient: what the guard saw of a failed startup), and
 * every failure explained for `context`.
 */
export async function connectSide(pg: PgModule, config: ClientConfig, context: ErrorContext): Promise<Client> {
  let client: Client;
  try {
    client = new pg.Client(withConnectTimeout(config));
  } catch (e) {
    throw usage(`invalid connection settings: ${redactCli((e as Error).message)}`, CONNECTION_HINT);
  }
  try {
    return await connectClient({ config: undefined, factory: () => client, secrets: [] }, undefined, { replication: false, limits: DEFAULT_LIMITS });
  } catch (e) {
    throw explain(e, context);
  }
}

/** Whether pg finds a password where it looks besides the connection: PGPASSWORD, or a password file (~/.pgpass, PGPASSFILE). */
function passwordInEnv(): boolean {
  if ((process.env.PGPASSWORD ?? "") !== "") return true;
  return existsSync(process.env.PGPASSFILE || join(homedir(), ".pgpass"));
}

/**
 * A ClientConfig from the connection string — a URL or keyword/value pairs,
 * parsed by bindings/pg/conninfo.ts — or from the PG* variables when there
 * is none. The string's passwords are remembered for redaction first, so
 * not even the error about a string that does not parse shows them.
 * `password`: whether any password may reach the server (in the string, or
 * where pg looks for one), so an authentication error can say none was given.
 */
export function connectionConfig(connection: string | undefined): { config: ClientConfig; target: string; user: string | undefined; password: boolean } {
  rememberSecrets(connection, process.env.PGPASSWORD);
  if (connection === undefined) {
    const host = process.env.PGHOST || "localhost";
    const port = process.env.PGPORT || "5432";
    return { config: {}, target: endpointName(host, port), user: process.env.PGUSER || process.env.USER, password: passwordInEnv() };
  }
  let config: ClientConfig;
  try {
    config = parseConnectionString(connection);
  } catch (e) {
    if (!(e instanceof ConnectionStringError)) throw e;
    const kind = looksLikeUrl(connection) ? "URL" : "string";
    throw usage(`invalid connection ${kind} ${JSON.stringify(redactCli(connection))}: ${e.message}`, CONNECTION_HINT);
  }
  rememberSecrets(undefined, typeof config.password === "string" ? config.password : undefined);
  const host = config.host || process.env.PGHOST || "localhost";
  const port = config.port || process.env.PGPORT || "5432";
  return { config, target: endpointName(host, port), user: config.user || process.env.PGUSER || process.env.USER, password: config.password !== undefined || passwordInEnv() };
}
