/**
 * The defaults of `replicate()`'s options and the limits of the connections
 * the package makes: a leaf module (it imports nothing of pg/), so that the
 * options, the connection guard and the CLI can all read them without
 * importing each other.
 */
import { MAX_MESSAGE_SIZE } from "../limits.ts";

/** `receiveTimeoutMs`: PostgreSQL's `wal_receiver_timeout` default. */
export const RECEIVE_TIMEOUT_MS = 60_000;
/** `statusIntervalMs`: PostgreSQL's `wal_receiver_status_interval` default. */
export const STATUS_INTERVAL_MS = 10_000;
/** `highWaterMark`, in bytes (`lowWaterMark` defaults to a quarter of it). */
export const HIGH_WATER_MARK = 8 << 20;
/** `coalesceMs`. */
export const COALESCE_MS = 1;
/** `stopTimeoutMs`. */
export const STOP_TIMEOUT_MS = 10_000;

/** What a connection pg parses is held to (guard.ts). */
export interface ConnectionLimits {
  /** The largest backend message body accepted, in bytes. */
  maxMessageSize: number;
  /** Silence allowed while an answer is awaited, in ms; 0 turns the timeout off. */
  receiveTimeoutMs: number;
}

/** The limits of the stream's options (a decoder passed in without `maxMessageSize` keeps its own; its connections get the ceiling). */
export function connectionLimits(o: { maxMessageSize: number | undefined; receiveTimeoutMs: number }): ConnectionLimits {
  return { maxMessageSize: o.maxMessageSize ?? MAX_MESSAGE_SIZE, receiveTimeoutMs: o.receiveTimeoutMs };
}

/** `replicate()`'s defaults, for connections made without its options (the CLI's preflight and `slots`). */
export const DEFAULT_LIMITS: ConnectionLimits = Object.freeze({ maxMessageSize: MAX_MESSAGE_SIZE, receiveTimeoutMs: RECEIVE_TIMEOUT_MS });
