/**
 * The options of `replicate()`, and their normalized form: defaults filled
 * in, LSNs parsed, combinations checked before anything touches the network.
 */
import type { BackendChoice } from "../create-decoder.ts";
import type { StandbyStatus } from "../walsender.ts";
import type { AckMode } from "../ack.ts";
import { parseLsn } from "../lsn.ts";
import { isProtocolVersion, PROTOCOL_SINCE, PROTOCOL_VERSIONS, protocolNeeded, type ProtocolVersion } from "../layout.ts";
import { checkMaxMessageSize } from "../limits.ts";
import { ReplicationError } from "./errors.ts";
import type { ConnectionOption, PgModule } from "./client.ts";
import type { StreamingMode } from "./commands.ts";
import { COALESCE_MS, HIGH_WATER_MARK, RECEIVE_TIMEOUT_MS, STATUS_INTERVAL_MS, STOP_TIMEOUT_MS } from "./defaults.ts";
import type { HealthOptions, ReplicationHealth, SlotLostEvent } from "./health.ts";
import { heartbeatQuery, type HeartbeatOptions } from "./heartbeat.ts";
import { publicationSpec, type PublicationOptions, type PublicationReport, type PublicationSpec } from "./publication.ts";
import { reconnectPolicy, type ReconnectEvent, type ReconnectOptions, type ReconnectPolicy, type ReconnectedEvent } from "./reconnect.ts";

export type { StreamingMode };

/** A replication slot to stream from. */
export interface SlotOptions {
  /** Slot name. */
  name: string;
  /**
   * Create the slot when it does not exist (`CREATE_REPLICATION_SLOT ...
   * LOGICAL pgoutput`, with `TWO_PHASE` when `twoPhase` is set). An existing
   * slot is used as it is (it must use the pgoutput plugin). Default false.
   */
  create?: boolean;
  /**
   * Create it as a temporary slot: dropped when the connection ends, so a
   * reconnect cannot resume from it. Implies `create`. Default false.
   */
  temporary?: boolean;
  /**
   * Create the slot as a failover slot (`FAILOVER`, PostgreSQL 17+:
   * synchronized to standbys with `sync_replication_slots`). Only applies
   * when the slot is created; on an older server replicate() rejects with
   * UNSUPPORTED_BY_SERVER. Default false.
   */
  failover?: boolean;
  /**
   * What to do when the slot was invalidated (found at start: `wal_status`
   * lost or an invalidation reason): `error` (default) rejects with
   * SLOT_LOST; `recreate` drops it, creates it again, calls `onSlotLost`
   * with the LSN range whose changes are lost, and streams from the new
   * slot.
   */
  onLost?: "error" | "recreate";
}

export interface ReplicateOptions {
  /**
   * How to connect: a connection string — a URL (`postgres://user:pw@host/db`)
   * or libpq keyword/value pairs (`host=db dbname=app user=u password='p w'`),
   * parsed here — or a `pg` ClientConfig (both get `replication: "database"`
   * added), or a function returning a new, not yet connected `pg.Client`
   * created with `replication: "database"`. A string that does not parse is
   * an INVALID_OPTION error; no error message shows the password.
   */
  connection: ConnectionOption;
  /** The slot: its name (an existing slot) or `{ name, create, temporary }`. */
  slot: string | SlotOptions;
  /** Publication name(s): pgoutput's `publication_names`. */
  publications: string | readonly string[];
  /**
   * Where to start: a bigint or `X/Y`. The server starts at the later of this
   * and the slot's `confirmed_flush_lsn`, and skips transactions that
   * committed before it. To resume after an error, pass the previous
   * stream's `lastAckedLsn`. Default: the slot's position.
   */
  startLsn?: bigint | string;
  /**
   * pgoutput protocol version 1-4. Default: the lowest the other options
   * need (1; 2 for streaming, 3 for two-phase, 4 for parallel streaming).
   */
  protoVersion?: ProtocolVersion;
  /** Stream large in-progress transactions: `off` (default), `on` / `true`, or `parallel` (protocol 4). */
  streaming?: boolean | StreamingMode;
  /** Column values in binary format (pgoutput `binary`). */
  binary?: boolean;
  /** Send logical decoding messages (`pg_logical_emit_message`). */
  messages?: boolean;
  /** Decode prepared transactions at PREPARE (`two_phase`; protocol 3, PostgreSQL 15+). */
  twoPhase?: boolean;
  /** `none`: only changes without a replication origin; `any` (server default): all. PostgreSQL 16+. */
  origin?: "any" | "none";
  /**
   * `auto` (default): a transaction is acknowledged once its last message (or
   * the whole transaction, from `transactions()`) was handed over and the
   * consumer asked for the next item. `manual`: only through `ack(lsn)`.
   */
  ack?: AckMode;
  /** Milliseconds between standby status updates. Default 10 000. */
  statusIntervalMs?: number;
  /**
   * Backpressure: when the bytes received and not yet handed over (queued
   * CopyData payloads plus the rest of the decoded batch) reach this, the
   * socket is paused. Default 8 MiB.
   */
  highWaterMark?: number;
  /** A paused socket resumes once the consumer brought those bytes down to this. Default a quarter of `highWaterMark`. */
  lowWaterMark?: number;
  /** Also yield `PrimaryKeepalive` objects from the message iteration. Default false. */
  keepalives?: boolean;
  /** The decoder: `wasm` (default), `baseline`, `auto` (wasm where it runs), or an instance (it is reset; use one per stream). */
  decoder?: BackendChoice;
  /**
   * Like PostgreSQL's `wal_receiver_timeout`: after half of it with nothing
   * received, a status update asking for a reply is sent; after all of it,
   * the stream fails with a retryable RECEIVE_TIMEOUT (a stalled server, a
   * half-open connection). Time the socket is paused for backpressure does
   * not count. 0 turns it off. Default 60 000. Before START_REPLICATION, and
   * on the side and snapshot copy connections, the same silence while an
   * answer is awaited fails the connection (guard.ts).
   */
  receiveTimeoutMs?: number;
  /**
   * Largest backend message accepted, checked at its header before its
   * bytes are buffered: a larger one fails the stream (DECODE_ERROR caused
   * by MESSAGE_TOO_LARGE). Default 1 GiB, PostgreSQL's largest value. Only
   * for the decoders made by `replicate()`; a decoder instance keeps its own.
   * Also the bound on every message of the connections pg parses (guard.ts).
   */
  maxMessageSize?: number;
  /**
   * When the consumer keeps up with the server, the milliseconds the socket
   * is left unread after a small read so that the next read is larger: the
   * consumer then wakes once per gathered read instead of once per few
   * hundred bytes (its CPU per GB falls several-fold), at the cost of up to
   * this much latency. With it, a busy consumer also stops the reading once
   * 64 KiB are queued: the rest waits in the kernel until the consumer asks
   * again and comes in one read, so the queue stays far below `highWaterMark`.
   * 0 turns both off (reads go on until `highWaterMark`). Default 1.
   */
  coalesceMs?: number;
  /** Milliseconds `stop()` waits for the server to end the stream before closing the socket. Default 10 000. */
  stopTimeoutMs?: number;
  /**
   * The socket's reads land in the decoder's memory and are decoded there
   * (Node, a connection without TLS, made by `replicate()` rather than
   * a `connection` function): no copy on the way. Off by default: each read
   * is copied into a queue, then into the decoder, which on a loopback
   * walsender still gives more rows per second (bench/replicate.bench.ts
   * measures both). Default false.
   */
  inPlaceReads?: boolean;
  /** The `pg` module, when it cannot be imported dynamically (e.g. a bundle). */
  pg?: PgModule;
  /** Called once with the error that ended the stream (an error that is reconnected from does not end it: see `onReconnect`). */
  onError?: (error: ReplicationError) => void;
  /** Called after every standby status update sent. */
  onStatus?: (status: Required<StandbyStatus>) => void;
  /** Sample `stream.health()` on an interval (to `onHealth`); without it nothing is polled. */
  health?: HealthOptions;
  /** Called with each health sample of `health.intervalMs`. */
  onHealth?: (health: ReplicationHealth) => void;
  /** Write a heartbeat into the WAL every `intervalMs` from a side connection, so an idle slot still advances. */
  heartbeat?: HeartbeatOptions;
  /**
   * The primary, when `connection` is a physical standby (PostgreSQL 16+),
   * as `connection` is given (a plain, not a replication, connection is
   * made). A standby cannot write, so what must write goes here: heartbeats,
   * and while a slot is created on the standby, `pg_log_standby_snapshot()`
   * every 500 ms so that the creation finishes on an idle primary (bindings/pg/standby.ts).
   * Without it, `heartbeat` on a standby is rejected and a slot creation
   * waits for the primary's next running-transactions record.
   */
  primary?: ConnectionOption;
  /** Deliver LogicalMessages with the heartbeat prefix (`pgoutput-wasm.heartbeat`) to the consumer. Default false: filtered. */
  deliverHeartbeats?: boolean;
  /**
   * A `RelationChanged` item right after each Relation message that changes
   * its table's shape (relation-changes.ts). Default true.
   */
  relationChanges?: boolean;
  /**
   * `capture: true`: the DDL commands the event trigger wrote (ddl.ts;
   * install it first with `installDdlCapture`) come as `Ddl` items, in
   * commit order. Asks pgoutput for messages; other messages are still
   * delivered only with `messages`.
   */
  ddl?: { capture: boolean };
  /**
   * End the stream after the last transaction that ends at or before this
   * LSN (bigint or `X/Y`): the iteration is done once the server's WAL
   * reached it, what ends after it is not handed over, and (`ack: "auto"`)
   * the stream stops with it acknowledged. With `ack: "manual"` the
   * iteration ends and the acknowledgements and `stop()` are yours.
   */
  stopAt?: bigint | string;
  /** Create or check the (single) publication named in `publications` before streaming. */
  publication?: PublicationOptions;
  /** Called with what the publication check found (created, or how it differs from what was asked). */
  onPublication?: (report: PublicationReport) => void;
  /** Called, loudly, when `slot.onLost: "recreate"` replaced an invalidated slot. */
  onSlotLost?: (event: SlotLostEvent) => void;
  /** Called with NoticeResponse fields (e.g. PostgreSQL 18's warning about a missing publication). */
  onNotice?: (notice: { severity?: string; code?: string; message: string }) => void;
  // --- automatic reconnect (reconnect.ts)
  /**
   * Reconnect after a retryable failure (`ReplicationError.retryable`: the
   * connection lost, the server restarting or ending the stream, the
   * walsender terminated, RECEIVE_TIMEOUT, the slot still held by the old
   * walsender), with exponential backoff and full jitter, resuming from
   * `lastAckedLsn`; the iterations go on. `false`: the stream ends with the
   * error. Default on (`{ initialDelayMs: 500, maxDelayMs: 30 000,
   * multiplier: 2, maxAttempts: Infinity }`); off for a temporary slot,
   * which is gone with its connection. Only failures after the start are
   * retried: `replicate()` itself rejects.
   */
  reconnect?: boolean | ReconnectOptions;
  /** Called before each reconnect attempt's wait. */
  onReconnect?: (event: ReconnectEvent) => void;
  /** Called once streaming again after a reconnect. */
  onReconnected?: (event: ReconnectedEvent) => void;
}

/** Options with defaults applied and values checked. */
export interface NormalizedOptions {
  slot: { name: string; create: boolean; temporary: boolean; failover: boolean; onLost: "error" | "recreate" };
  publications: string[];
  startLsn: bigint;
  protoVersion: ProtocolVersion;
  streaming: StreamingMode;
  binary: boolean;
  messages: boolean;
  twoPhase: boolean;
  origin: "any" | "none" | undefined;
  ack: AckMode;
  statusIntervalMs: number;
  highWaterMark: number;
  lowWaterMark: number;
  keepalives: boolean;
  receiveTimeoutMs: number;
  coalesceMs: number;
  inPlaceReads: boolean;
  maxMessageSize: number | undefined;
  stopTimeoutMs: number;
  health: HealthOptions | undefined;
  heartbeat: Required<HeartbeatOptions> | undefined;
  deliverHeartbeats: boolean;
  relationChanges: boolean;
  ddl: boolean;
  /** Messages other than the DDL trigger's are delivered (the `messages` option; `messages` may be on for `ddl` alone). */
  userMessages: boolean;
  stopAt: bigint | undefined;
  publication: PublicationSpec | undefined;
  reconnect: ReconnectPolicy | false;
}

function invalid(message: string): ReplicationError {
  return new ReplicationError(message, { code: "INVALID_OPTION" });
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(Number.isFinite(value) && value > 0)) throw invalid(`${name} must be a positive number, not ${String(value)}`);
  return value;
}

function messageLimit(max: number): number {
  try {
    return checkMaxMessageSize(max);
  } catch (cause) {
    throw new ReplicationError((cause as Error).message, { code: "INVALID_OPTION", cause });
  }
}

function reconnectOption(option: ReplicateOptions["reconnect"]): ReconnectPolicy | false {
  try {
    return reconnectPolicy(option);
  } catch (cause) {
    throw new ReplicationError((cause as Error).message, { code: "INVALID_OPTION", cause });
  }
}

/** An LSN option (bigint or `X/Y`), checked. */
function lsnOption(name: string, value: bigint | string | undefined): bigint | undefined {
  if (value === undefined) return undefined;
  let lsn: bigint;
  try {
    lsn = typeof value === "bigint" ? value : parseLsn(value);
  } catch (cause) {
    throw new ReplicationError(`${name}: ${(cause as Error).message}`, { code: "INVALID_OPTION", cause });
  }
  if (lsn < 0n || lsn > 0xffff_ffff_ffff_ffffn) throw invalid(`${name} out of range: ${lsn}`);
  return lsn;
}

/** Fills in defaults and checks the options; throws an INVALID_OPTION `ReplicationError`. */
export function normalizeOptions(o: ReplicateOptions): NormalizedOptions {
  if (o === null || typeof o !== "object") throw invalid("replicate() needs an options object");
  if (o.connection === undefined || o.connection === null) throw invalid("connection is required");

  const slotIn = typeof o.slot === "string" ? { name: o.slot } : o.slot;
  if (!slotIn || typeof slotIn.name !== "string" || slotIn.name.length === 0) throw invalid("slot name is required");
  // PostgreSQL's own rule (ReplicationSlotValidateName).
  if (!/^[a-z0-9_]{1,63}$/.test(slotIn.name)) {
    throw invalid(`slot name ${JSON.stringify(slotIn.name)} may only contain lower-case letters, digits and underscores (at most 63)`);
  }
  const temporary = slotIn.temporary === true;
  const onLost = slotIn.onLost ?? "error";
  if (onLost !== "error" && onLost !== "recreate") throw invalid(`slot.onLost must be "error" or "recreate", not ${String(slotIn.onLost)}`);
  const failover = slotIn.failover === true;
  if (failover && temporary) throw invalid("a temporary slot cannot be a failover slot");
  const slot = { name: slotIn.name, create: slotIn.create === true || temporary, temporary, failover, onLost };

  const publications = typeof o.publications === "string" ? [o.publications] : [...(o.publications ?? [])];
  if (publications.length === 0 || publications.some((p) => typeof p !== "string" || p.length === 0)) {
    throw invalid("at least one publication name is required");
  }

  const startLsn = lsnOption("startLsn", o.startLsn) ?? 0n;
  const stopAt = lsnOption("stopAt", o.stopAt);
  if (o.ddl !== undefined && (o.ddl === null || typeof o.ddl !== "object" || typeof o.ddl.capture !== "boolean")) {
    throw invalid("ddl must be { capture: true } or { capture: false }");
  }
  const ddl = o.ddl?.capture === true;

  const streaming: StreamingMode =
    o.streaming === undefined || o.streaming === false ? "off" : o.streaming === true ? "on" : o.streaming;
  if (streaming !== "off" && streaming !== "on" && streaming !== "parallel") {
    throw invalid(`streaming must be off, on or parallel, not ${String(o.streaming)}`);
  }
  const twoPhase = o.twoPhase === true;
  const since = PROTOCOL_SINCE;
  const protoVersion: unknown = o.protoVersion ?? protocolNeeded(streaming, twoPhase);
  if (!isProtocolVersion(protoVersion)) throw invalid(`protoVersion must be ${PROTOCOL_VERSIONS.slice(0, -1).join(", ")} or ${PROTOCOL_VERSIONS.at(-1)}, not ${String(protoVersion)}`);
  if (streaming === "on" && protoVersion < since.streaming) throw invalid(`streaming needs protoVersion ${since.streaming} or later`);
  if (streaming === "parallel" && protoVersion < since.parallel) throw invalid(`streaming "parallel" needs protoVersion ${since.parallel}`);
  if (twoPhase && protoVersion < since.twoPhase) throw invalid(`twoPhase needs protoVersion ${since.twoPhase} or later`);

  if (o.origin !== undefined && o.origin !== "any" && o.origin !== "none") {
    throw invalid(`origin must be "any" or "none", not ${String(o.origin)}`);
  }
  const ack = o.ack ?? "auto";
  if (ack !== "auto" && ack !== "manual") throw invalid(`ack must be "auto" or "manual", not ${String(o.ack)}`);

  const highWaterMark = positive("highWaterMark", o.highWaterMark, HIGH_WATER_MARK);
  const lowWaterMark = o.lowWaterMark === undefined ? highWaterMark / 4 : o.lowWaterMark;
  if (!(Number.isFinite(lowWaterMark) && lowWaterMark >= 0 && lowWaterMark <= highWaterMark)) {
    throw invalid(`lowWaterMark must be between 0 and highWaterMark (${highWaterMark}), not ${String(o.lowWaterMark)}`);
  }

  return {
    slot,
    publications,
    startLsn,
    protoVersion,
    streaming,
    binary: o.binary === true,
    messages: o.messages === true || ddl,
    twoPhase,
    origin: o.origin,
    ack,
    statusIntervalMs: positive("statusIntervalMs", o.statusIntervalMs, STATUS_INTERVAL_MS),
    highWaterMark,
    lowWaterMark,
    keepalives: o.keepalives === true,
    receiveTimeoutMs: o.receiveTimeoutMs === 0 ? 0 : positive("receiveTimeoutMs", o.receiveTimeoutMs, RECEIVE_TIMEOUT_MS),
    coalesceMs: o.coalesceMs === 0 ? 0 : positive("coalesceMs", o.coalesceMs, COALESCE_MS),
    inPlaceReads: o.inPlaceReads === true,
    maxMessageSize: o.maxMessageSize === undefined ? undefined : messageLimit(o.maxMessageSize),
    stopTimeoutMs: positive("stopTimeoutMs", o.stopTimeoutMs, STOP_TIMEOUT_MS),
    health: o.health === undefined ? undefined : { intervalMs: positive("health.intervalMs", o.health?.intervalMs ?? Number.NaN, 0) },
    heartbeat: o.heartbeat === undefined ? undefined : {
      intervalMs: positive("heartbeat.intervalMs", o.heartbeat?.intervalMs ?? Number.NaN, 0),
      query: heartbeatQuery(o.heartbeat.query),
    },
    deliverHeartbeats: o.deliverHeartbeats === true,
    relationChanges: o.relationChanges !== false,
    ddl,
    userMessages: o.messages === true,
    stopAt,
    publication: o.publication === undefined ? undefined : publicationSpec(o.publication, publications),
    reconnect: temporary ? false : reconnectOption(o.reconnect),
  };
}
