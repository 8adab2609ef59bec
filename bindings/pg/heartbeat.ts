/**
 * Heartbeats (the `heartbeat` option): every `intervalMs` a small WAL
 * record is written from the side connection, by default a non-transactional
 * logical decoding message. A slot on a database with no published traffic
 * then still sees WAL of its own database, the walsender's position moves
 * past it, and the stream confirms it when idle: the slot advances, the
 * server can recycle WAL, and lag is measurable. The messages themselves are
 * filtered out of the stream by their prefix (unless `deliverHeartbeats`).
 */
import { ReplicationError } from "./errors.ts";
import type { SideConnection } from "./side-connection.ts";

/** `replicate()`'s `heartbeat` option. */
export interface HeartbeatOptions {
  /** Milliseconds between heartbeats. */
  intervalMs: number;
  /** SQL run on the side connection. Default `SELECT pg_logical_emit_message(false, 'pgoutput-wasm.heartbeat', now()::text)`. */
  query?: string;
}

/** The prefix of the default heartbeat message; LogicalMessages with it are not delivered by default. */
export const HEARTBEAT_PREFIX = "pgoutput-wasm.heartbeat";

export const DEFAULT_HEARTBEAT_QUERY = `SELECT pg_catalog.pg_logical_emit_message(false, '${HEARTBEAT_PREFIX}', now()::text)`;

/** The heartbeat query: the default, or a non-empty string of the user's. */
export function heartbeatQuery(query: string | undefined): string {
  if (query === undefined) return DEFAULT_HEARTBEAT_QUERY;
  if (typeof query !== "string" || query.trim().length === 0) {
    throw new ReplicationError("heartbeat.query must be a non-empty SQL string", { code: "INVALID_OPTION" });
  }
  return query;
}

/** Counters of the heartbeats sent, for `health()`. */
export interface HeartbeatStats {
  sent: number;
  failed: number;
  /** The last failure's message (redacted), if any. */
  lastError: string | undefined;
  /** When the last heartbeat succeeded (ms since the Unix epoch). */
  lastAt: number | undefined;
}

/**
 * Runs the query every `intervalMs`, one at a time (a slow one is not
 * overlapped). A failure is counted and the side connection reopened at the
 * next beat: heartbeats are best effort and never end the stream.
 */
export class Heartbeat {
  readonly stats: HeartbeatStats = { sent: 0, failed: 0, lastError: undefined, lastAt: undefined };
  readonly #timer: ReturnType<typeof setInterval>;
  #running = false;

  constructor(side: SideConnection, options: Required<HeartbeatOptions>) {
    this.#timer = setInterval(() => {
      if (this.#running) return;
      this.#running = true;
      side.query(options.query).then(
        () => {
          this.stats.sent++;
          this.stats.lastAt = Date.now();
        },
        (e: unknown) => {
          this.stats.failed++;
          this.stats.lastError = (e as Error).message;
        },
      ).finally(() => (this.#running = false));
    }, options.intervalMs);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
