/**
 * tail's and capture's flags as typed, checked settings. What `replicate()`
 * checks itself (the slot name's rule, the start LSN, which protocol
 * version streaming and two-phase need) is left to it: its option check
 * (normalizeOptions) runs here on the settings, before anything starts, and
 * its INVALID_OPTION errors become usage errors in the CLI's words. What
 * only the CLI knows is checked here: which flags go with a connection and
 * which with the embedded server, the values' syntax, a failover slot that
 * would be the temporary default.
 */
import { isReplicationError, type ReplicationError } from "../pg/errors.ts";
import { normalizeOptions, type StreamingMode } from "../pg/options.ts";
import type { ProtocolVersion } from "../layout.ts";
import { PG_ENV } from "./connection.ts";
import { DEMO_PUBLICATION, DEMO_SLOT } from "./demo-workload.ts";
import { usage, type CliError } from "./errors.ts";
import { listFlag, type FlagValues } from "./flags.ts";

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
  /** `X/Y`, checked by replicate()'s option check. */
  startLsn: string | undefined;
  protoVersion: ProtocolVersion | undefined;
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
  /** Tables to backfill while streaming (bindings/pg/backfill.ts). */
  backfill: string[];
  maxMessages: number | undefined;
  /** --heartbeat SECONDS, in ms (bindings/pg/heartbeat.ts). */
  heartbeatMs: number | undefined;
  /** --failover: create the slot as a failover slot (PostgreSQL 17+). */
  failover: boolean;
  /** --primary: the primary of a standby --connection (replicate()'s `primary`). */
  primary: string | undefined;
  /** --ddl: the DDL trigger's messages as Ddl items (Q lines). */
  ddl: boolean;
  /** --until X/Y: replicate()'s `stopAt`, checked by its option check. */
  until: string | undefined;
  /** Reconnect after a retryable failure (replicate()'s `reconnect`): not with --no-reconnect, nor for a command without that flag. */
  reconnect: boolean;
}

export function positiveInt(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) <= 0) throw usage(`--${name} must be a positive whole number, not ${JSON.stringify(text)}`);
  return Number(text);
}

/** Checks the flags (SOURCE_FLAGS and RUN_FLAGS, flags.ts; their choices are checked by parseFlags); throws usage errors (exit code 2). */
export function sourceSettings(f: FlagValues, env: NodeJS.ProcessEnv = process.env): SourceSettings {
  const str = (name: string) => f[name] as string | undefined;
  const flag = (name: string) => f[name] === true;
  const connection = str("connection");
  const pg = str("pg");
  const fromEnv = PG_ENV.some((k) => (env[k] ?? "") !== "");
  const mode = connection !== undefined || (fromEnv && pg === undefined) ? "connect" : "embedded";
  if (pg !== undefined && connection !== undefined) throw usage("--pg starts an embedded PostgreSQL; it does not go with --connection");
  const major = pg === undefined ? 18 : Number(pg);
  // Only the npm embedded build ships with the package; any other version is a server of the user's.
  if (major !== 18) throw usage(`--pg must be 18 (the embedded PostgreSQL), not ${JSON.stringify(pg)}`, "for another version, start it yourself and use --connection postgres://...");
  const publications = listFlag(f.publication as string[] | undefined);
  if (mode === "connect" && publications.length === 0) {
    throw usage("--publication is required with a connection", "name a publication (CREATE PUBLICATION name FOR ALL TABLES makes one)");
  }
  if (mode === "embedded") {
    for (const name of ["slot", "publication", "start-lsn", "primary"]) {
      if (f[name] !== undefined) throw usage(`--${name} needs --connection (without one, the embedded demo uses its own slot and publication)`);
    }
  }
  let heartbeatMs: number | undefined;
  const heartbeat = str("heartbeat");
  if (heartbeat !== undefined) {
    const seconds = Number(heartbeat);
    if (!/^\d+(\.\d+)?$/.test(heartbeat) || !(seconds > 0)) throw usage(`--heartbeat must be a positive number of seconds, not ${JSON.stringify(heartbeat)}`);
    heartbeatMs = Math.max(1, Math.round(seconds * 1000));
  }
  if (flag("failover") && mode === "connect" && (str("slot") === undefined || flag("temporary"))) {
    throw usage("--failover needs a permanent slot: --slot NAME (a temporary slot cannot be a failover slot)");
  }
  const proto = str("proto");
  const settings: SourceSettings = {
    heartbeatMs,
    failover: flag("failover"),
    primary: str("primary"),
    mode,
    connection,
    major,
    slot: str("slot"),
    createSlot: flag("create-slot"),
    temporary: flag("temporary"),
    publications,
    startLsn: str("start-lsn"),
    protoVersion: proto === undefined ? undefined : (Number(proto) as ProtocolVersion),
    streaming: str("streaming") as StreamingMode | undefined,
    binary: flag("binary"),
    messages: f.messages as boolean | undefined,
    twoPhase: flag("two-phase"),
    ack: (str("ack") ?? "auto") as AckChoice,
    backend: (str("backend") ?? "wasm") as "wasm" | "baseline",
    follow: flag("follow"),
    progress: flag("progress"),
    snapshot: flag("snapshot"),
    backfill: listFlag(f.backfill as string[] | undefined),
    maxMessages: positiveInt("max-messages", str("max-messages")),
    reconnect: f["no-reconnect"] === false,
    ddl: flag("ddl"),
    until: str("until"),
  };
  if (settings.backfill.length > 0 && settings.snapshot) throw usage("--backfill and --snapshot exclude each other", "--snapshot copies every published table at the start; --backfill reads tables while streaming from an existing slot");
  if (settings.backfill.length > 0 && settings.messages === false) throw usage("--backfill needs --messages (its watermarks are logical decoding messages)");
  checkWithReplicate(settings);
  return settings;
}

/** replicate()'s option names in the CLI's words (its messages name them). */
const FLAG_OF: readonly [RegExp, string][] = [
  [/\bslot name\b/g, "--slot"],
  [/\bstartLsn\b/g, "--start-lsn"],
  [/\bprotoVersion\b/g, "--proto"],
  [/\btwoPhase\b/g, "--two-phase"],
  [/^streaming\b/g, "--streaming"],
  [/^stopAt\b/g, "--until"],
];

/** An INVALID_OPTION of replicate()'s option check as a usage error. */
function usageOf(e: ReplicationError): CliError {
  return usage(FLAG_OF.reduce((text, [word, flag]) => text.replace(word, flag), e.message));
}

/** replicate()'s own check of what the settings will ask of it (the slot and publication as openSource() names them). */
function checkWithReplicate(s: SourceSettings): void {
  try {
    normalizeOptions({
      connection: "checked when connecting",
      slot: s.mode === "embedded" ? { name: DEMO_SLOT, create: true } : { name: s.slot ?? DEMO_SLOT, temporary: s.temporary || s.slot === undefined },
      publications: s.mode === "embedded" ? [DEMO_PUBLICATION] : s.publications,
      startLsn: s.startLsn,
      protoVersion: s.protoVersion,
      streaming: s.streaming,
      twoPhase: s.twoPhase,
      stopAt: s.until,
    });
  } catch (e) {
    if (isReplicationError(e) && e.code === "INVALID_OPTION") throw usageOf(e);
    throw e;
  }
}
