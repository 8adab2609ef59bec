/**
 * The state a replication stream's parts share (lifecycle.ts composes them):
 * where the stream is in its life, and why it ends. Only lifecycle.ts
 * changes it; the socket reader, liveness, the reconnect loop and the
 * iteration read it. Each part keeps the rest of its state to itself.
 */
import type { ReplicationError } from "./errors.ts";

/**
 * `starting`: START_REPLICATION sent, waiting for CopyBothResponse;
 * `streaming`; `stopping`: CopyDone sent, reading until ReadyForQuery;
 * `reconnecting`: between connections; `closed`.
 */
export type Phase = "starting" | "streaming" | "stopping" | "reconnecting" | "closed";

export interface StreamState {
  phase: Phase;
  /** stop() was called. */
  stopRequested: boolean;
  /** Why the socket is gone (closed, failed, timed out): thrown once everything received before was delivered. */
  lost: ReplicationError | undefined;
  /** The error that ended the stream. */
  error: ReplicationError | undefined;
}

/** The stream's counters (each part counts its own), for monitoring and tests. */
export interface StreamCounters {
  /** Messages decoded from the socket: CopyData payloads (XLogData, keepalives) and other backend messages. */
  payloads: number;
  /** Socket bytes received after START_REPLICATION. */
  bytes: number;
  /** `pushBackend` calls. */
  batches: number;
  /** Times the socket was paused for backpressure. */
  pauses: number;
  /** Standby status updates sent. */
  statusUpdates: number;
  /** Reconnects that succeeded (the counters run on across them). */
  reconnects: number;
  /** Milliseconds spent in the decoder's `pushBackend` calls (the kernel's walk of each batch). */
  decodeMs: number;
  /** Connections given up on for RECEIVE_TIMEOUT (nothing received for `receiveTimeoutMs`). */
  receiveTimeouts: number;
  /** Transactions reached in stream order: Commit, StreamCommit, CommitPrepared (a redelivered one counts again). */
  transactions: number;
  /** Changes reached in stream order, by kind (those of a streamed transaction as its blocks come, even if it is aborted later). */
  inserts: number;
  updates: number;
  deletes: number;
  truncates: number;
}

/** Counters of a new stream. */
export function newCounters(): StreamCounters {
  return {
    payloads: 0, bytes: 0, batches: 0, pauses: 0, statusUpdates: 0, reconnects: 0,
    decodeMs: 0, receiveTimeouts: 0, transactions: 0, inserts: 0, updates: 0, deletes: 0, truncates: 0,
  };
}

/** Counters of a stream (`stream.stats`), with its buffer figures. */
export interface ReplicationStats extends StreamCounters {
  /** Bytes received and not yet handed over: queued, or decoded and not yet iterated. */
  bufferedBytes: number;
  /** The most bytes ever buffered at once (what backpressure bounds). */
  bufferedHighWater: number;
}
