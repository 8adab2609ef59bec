// A throwaway PostgreSQL server from a directory of binaries: its own data
// directory in a temporary folder (temp-folders.ts), a free TCP port on
// 127.0.0.1, its socket in the same folder; stop() removes everything, and a
// server still running when the process ends (exit, a signal, kill -9) is
// stopped and its folder removed by temp-folders.ts. The CLI's
// embedded default (embedded.ts) and the development cluster harness
// (devkit/cluster/) both start servers here. `pg` is loaded with a dynamic
// import() when a server starts, so that importing this file costs nothing.
//
// Settings are tuned for logical decoding (wal_level=logical,
// logical_decoding_work_mem=64kB so that modest transactions get streamed)
// and for speed (fsync=off, ...); track_commit_timestamp = on (commit times
// can be read back), TimeZone = UTC and DateStyle = ISO (text output of
// timestamps is stable), autovacuum = off.
//
// Note synchronous_commit = off: pg_logical_slot_{get,peek}_binary_changes
// only decode WAL that is flushed, so a just-committed transaction can be
// missing for up to wal_writer_delay; flush first (pg_switch_wal or a
// flushing function) when calling those SQL functions.

import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import type { Client, ClientConfig } from "pg";
import { execFileAsync, getRunAs, giveToServer, runAsUser, wrap, type RunAs } from "./run-as.ts";
import { makeTempFolder, removeTempFolder } from "./temp-folders.ts";

export interface Server {
  major: number;
  /** `SHOW server_version`, e.g. "18.4". */
  version: string;
  host: string;
  port: number;
  user: string;
  database: string;
  /** postgres://user@127.0.0.1:port/db */
  connectionString: string;
  /** Runs a query on one shared pg.Client and returns its rows. */
  query<T = any>(sql: string, params?: unknown[]): Promise<T[]>;
  /** A fresh, connected client; the caller must end() it. */
  connect(opts?: { replication?: "database" }): Promise<Client>;
  /** The server's log file (in the temporary directory: gone after stop()). */
  logFile: string;
  /** Stops the server and removes the temporary directory. Idempotent. */
  stop(): Promise<void>;
}

export interface ServerOptions {
  /** Extra postgresql.conf settings (override the defaults). */
  settings?: Record<string, string>;
  /** Copy the server log to stderr when the server stops. */
  log?: boolean;
  /**
   * Extra pg_hba.conf lines, placed before the default ones (which trust
   * every local and 127.0.0.1 connection), e.g.
   * `host all alice 127.0.0.1/32 scram-sha-256` to make one role use a password.
   */
  hba?: string[];
}

export interface StartServerOptions extends ServerOptions {
  /** Directory holding initdb, pg_ctl and postgres, executable by the server's OS user. */
  bin: string;
  /** The major version the binaries are; the server must say the same. */
  major: number;
  /** Creates the data directory (default: initDataDir(), a plain initdb). */
  initDataDir?: (bin: string, runAs: RunAs, dataDir: string) => Promise<void>;
}

const SUPERUSER = "postgres";
const DATABASE = "postgres";
const HOST = "127.0.0.1";

const DEFAULT_SETTINGS: Record<string, string> = {
  listen_addresses: "'127.0.0.1'",
  wal_level: "logical",
  max_replication_slots: "32",
  max_wal_senders: "32",
  max_prepared_transactions: "16",
  logical_decoding_work_mem: "'64kB'",
  fsync: "off",
  synchronous_commit: "off",
  full_page_writes: "off",
  track_commit_timestamp: "on",
  timezone: "'UTC'",
  log_timezone: "'UTC'",
  datestyle: "'ISO, YMD'",
  max_connections: "50",
  shared_buffers: "'32MB'",
  wal_keep_size: "0",
  autovacuum: "off",
  logging_collector: "off",
  log_min_messages: "warning",
  log_line_prefix: "'%m [%p] '",
};

/** Asks the OS for a free TCP port on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, HOST, () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function tailLog(file: string, maxBytes = 8000): string {
  try {
    const buf = fs.readFileSync(file);
    return buf.subarray(Math.max(0, buf.length - maxBytes)).toString("utf8");
  } catch {
    return "(no server log)";
  }
}

function confValue(v: string): string {
  // Accept both already-quoted values and bare ones.
  if (/^'.*'$/s.test(v) || /^-?[0-9.]+[a-zA-Z]*$/.test(v) || /^(on|off|true|false|logical|replica|minimal)$/i.test(v)) {
    return v;
  }
  return `'${v.replace(/'/g, "''")}'`;
}

export function initdb(bin: string, runAs: RunAs, dataDir: string) {
  return runAsUser(runAs, path.join(bin, "initdb"), [
    "-D", dataDir,
    "-U", SUPERUSER,
    "--auth=trust",
    "-E", "UTF8",
    "--locale=C",
    "--no-sync",
    "--no-instructions",
    // 1 MB WAL segments instead of 16: less to write and to copy (LSNs are
    // byte positions either way).
    "--wal-segsize=1",
  ]);
}

/** A plain initdb of `dataDir` (the default way to create a data directory). */
export async function initDataDir(bin: string, runAs: RunAs, dataDir: string): Promise<void> {
  await initdb(bin, runAs, dataDir);
}

export async function startServer(opts: StartServerOptions): Promise<Server> {
  const { bin, major } = opts;
  const runAs = await getRunAs();
  const tmpDir = makeTempFolder(`pg${major}`);
  const dataDir = path.join(tmpDir, "data");
  const logFile = path.join(tmpDir, "server.log");
  const pgCtl = path.join(bin, "pg_ctl");
  // Removing the folder stops the server running in it (and waits for it).
  const cleanupDir = () => removeTempFolder(tmpDir);

  try {
    giveToServer(runAs, tmpDir);
    fs.chmodSync(tmpDir, 0o700);

    await (opts.initDataDir ?? initDataDir)(bin, runAs, dataDir);

    fs.writeFileSync(
      path.join(dataDir, "pg_hba.conf"),
      [
        "# written by bindings/cli/server.ts",
        ...(opts.hba ?? []),
        "local all all trust",
        "local replication all trust",
        "host all all 127.0.0.1/32 trust",
        "host replication all 127.0.0.1/32 trust",
        "",
      ].join("\n"),
    );

    let lastErr: unknown;
    for (let attempt = 0; attempt < 4; attempt++) {
      const port = await freePort();
      const settings: Record<string, string> = {
        ...DEFAULT_SETTINGS,
        port: String(port),
        // Clients here use TCP; the socket is only for local tools (psql -h <dir>).
        // A socket path must fit in 107 bytes: with a very long TMPDIR, go without.
        unix_socket_directories: Buffer.byteLength(tmpDir) + 20 < 107 ? `'${tmpDir}'` : "''",
        ...(opts.settings ?? {}),
      };
      const conf = Object.entries(settings).map(([k, v]) => `${k} = ${confValue(v)}`).join("\n");
      fs.writeFileSync(path.join(dataDir, "postgresql.auto.conf"), `# written by bindings/cli/server.ts\n${conf}\n`);
      giveToServer(runAs, path.join(dataDir, "pg_hba.conf"));
      giveToServer(runAs, path.join(dataDir, "postgresql.auto.conf"));
      try {
        await runAsUser(runAs, pgCtl, ["start", "-D", dataDir, "-l", logFile, "-w", "-t", "60", "-s"], 90_000);
      } catch (err) {
        lastErr = err;
        const log = tailLog(logFile);
        // A port taken between freePort() and bind(): try another one.
        if (!/could not bind|Address already in use|could not create any TCP\/IP sockets/i.test(log)) {
          throw new Error(`PostgreSQL ${major} did not start: ${(err as Error).message}\n--- server log ---\n${log}`);
        }
        continue;
      }
      return await connectServer(major, port, wrap(runAs, pgCtl, ["stop", "-D", dataDir, "-m", "fast", "-s"]), logFile, opts, cleanupDir);
    }
    throw lastErr instanceof Error ? lastErr : new Error(`PostgreSQL ${major} did not start`);
  } catch (err) {
    cleanupDir();
    throw err;
  }
}

type PgModule = { Client: new (config: ClientConfig) => Client };

/** The `pg` module (a dependency of the package), imported on first use. */
async function loadPg(): Promise<PgModule> {
  const mod = (await import("pg")) as unknown as { default?: PgModule } & Partial<PgModule>;
  const pg = mod.default ?? mod;
  if (typeof pg.Client !== "function") throw new Error("the pg module has no Client");
  return pg as PgModule;
}

async function connectServer(
  major: number,
  port: number,
  /** pg_ctl stop -m fast, as the server's OS user. */
  stopCmd: [string, string[]],
  logFile: string,
  opts: ServerOptions,
  cleanupDir: () => void,
): Promise<Server> {
  const base: ClientConfig = { host: HOST, port, user: SUPERUSER, database: DATABASE };
  const pg = await loadPg();
  const newClient = async (replication?: "database"): Promise<Client> => {
    const cfg = { ...base, ...(replication ? { replication } : {}) } as ClientConfig;
    const client = new pg.Client(cfg);
    await client.connect();
    return client;
  };
  const shared = await newClient();
  // An idle shared connection must not take the process down if the server
  // goes away first (e.g. stop() racing with a query).
  shared.on("error", () => {});
  let version: string;
  try {
    version = (await shared.query<{ server_version: string }>("SHOW server_version")).rows[0]!.server_version;
    if (Number.parseInt(version, 10) !== major) throw new Error(`expected PostgreSQL ${major}, the server says ${version}`);
  } catch (err) {
    await shared.end().catch(() => {});
    throw err;
  }

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      try {
        await shared.end();
      } catch {
        /* ignore */
      }
      try {
        // "fast" disconnects clients and shuts down cleanly; if it fails, removing the
        // folder stops the server the immediate way (no checkpoint needed: the data goes anyway).
        await execFileAsync(stopCmd[0], stopCmd[1], { timeoutMs: 30_000 }).catch(() => {});
      } finally {
        if (opts.log) process.stderr.write(`--- PostgreSQL ${major} log ---\n${tailLog(logFile, 1 << 20)}\n`);
        cleanupDir();
      }
    })();
    return stopping;
  };

  return {
    major,
    version,
    host: HOST,
    port,
    user: SUPERUSER,
    database: DATABASE,
    connectionString: `postgres://${SUPERUSER}@${HOST}:${port}/${DATABASE}`,
    async query<T = any>(sql: string, params?: unknown[]): Promise<T[]> {
      const res = await shared.query(sql, params as any[] | undefined);
      return res.rows as T[];
    },
    connect: (o) => newClient(o?.replication),
    logFile,
    stop,
  };
}
