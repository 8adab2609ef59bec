/**
 * Automatic reconnect of a replication stream: the policy (`reconnect`
 * option), its backoff schedule, and the events it reports. The stream
 * (stream.ts) decides when to reconnect — a retryable `ReplicationError`
 * reached in stream order — and `replicate()` supplies how (a new
 * connection and START_REPLICATION from `lastAckedLsn`).
 *
 * The schedule is exponential backoff with full jitter (as in AWS's
 * "Exponential Backoff And Jitter"): attempt n waits a uniformly random
 * time in [0, min(maxDelayMs, initialDelayMs × multiplier^(n-1))], so
 * clients cut off by the same server restart do not all come back at once.
 */
import type { ReplicationError } from "./errors.ts";

/** The `reconnect` option: `false` turns reconnecting off; `true` or an object (missing fields default) turns it on. */
export interface ReconnectOptions {
  /** The cap of the first wait, in ms. Default 500. */
  initialDelayMs?: number;
  /** The largest cap, in ms. Default 30 000. */
  maxDelayMs?: number;
  /** Growth of the cap per attempt. Default 2. */
  multiplier?: number;
  /** Attempts per outage before the stream ends with the last error. Default unlimited (`Infinity`). */
  maxAttempts?: number;
  /** The jitter's source of randomness, in [0, 1). Default `Math.random` (tests pass their own). */
  random?: () => number;
}

/** The policy with defaults applied. */
export type ReconnectPolicy = Required<ReconnectOptions>;

/** Told before each wait: the attempt (1 for the first after a failure), how long it waits, and why. */
export interface ReconnectEvent {
  attempt: number;
  delayMs: number;
  /** The error that ended the previous connection, or made the previous attempt fail. */
  cause: ReplicationError;
}

/** Told once streaming again. */
export interface ReconnectedEvent {
  /** Attempts it took. */
  attempts: number;
  /** The position streaming resumed from (`lastAckedLsn`). */
  startLsn: bigint;
  /** Milliseconds between noticing the failure and streaming again. */
  downtimeMs: number;
}

export const RECONNECT_DEFAULTS: ReconnectPolicy = Object.freeze({
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  multiplier: 2,
  maxAttempts: Infinity,
  random: Math.random,
});

/** The policy of a `reconnect` option value (`undefined` means on, with the defaults); `false` for off. Throws a RangeError naming a bad field. */
export function reconnectPolicy(option: boolean | ReconnectOptions | undefined): ReconnectPolicy | false {
  if (option === false) return false;
  if (option === undefined || option === true) return RECONNECT_DEFAULTS;
  if (option === null || typeof option !== "object") throw new RangeError(`reconnect must be a boolean or an object, not ${String(option)}`);
  const p = { ...RECONNECT_DEFAULTS, ...dropUndefined(option) };
  const check = (name: keyof ReconnectPolicy, ok: boolean) => {
    if (!ok) throw new RangeError(`reconnect.${name} must be ${name === "multiplier" ? "at least 1" : "a positive number"}, not ${String(p[name])}`);
  };
  check("initialDelayMs", Number.isFinite(p.initialDelayMs) && p.initialDelayMs >= 0);
  check("maxDelayMs", Number.isFinite(p.maxDelayMs) && p.maxDelayMs >= p.initialDelayMs);
  check("multiplier", Number.isFinite(p.multiplier) && p.multiplier >= 1);
  check("maxAttempts", p.maxAttempts === Infinity || (Number.isInteger(p.maxAttempts) && p.maxAttempts >= 1));
  if (typeof p.random !== "function") throw new RangeError(`reconnect.random must be a function, not ${String(p.random)}`);
  return Object.freeze(p);
}

function dropUndefined(o: ReconnectOptions): ReconnectOptions {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** The cap of attempt `attempt` (1-based): initialDelayMs × multiplier^(attempt-1), at most maxDelayMs. */
export function backoffCap(attempt: number, policy: ReconnectPolicy): number {
  const cap = policy.initialDelayMs * policy.multiplier ** Math.max(0, attempt - 1);
  return Number.isFinite(cap) && cap < policy.maxDelayMs ? cap : policy.maxDelayMs;
}

/** The wait before attempt `attempt`: full jitter, the policy's `random()` (in [0, 1)) times its cap, in whole ms. */
export function backoffDelay(attempt: number, policy: ReconnectPolicy): number {
  const r = policy.random();
  return Math.floor((r >= 0 && r < 1 ? r : 0) * backoffCap(attempt, policy));
}

/**
 * A wait that `cancel()` ends early (stop() during a backoff): resolves
 * after `ms`, or at once when cancelled. The timer is not unref'd: during
 * the wait there is no socket, and it is what keeps the process alive.
 */
export function cancellableSleep(ms: number): { done: Promise<void>; cancel: () => void } {
  let cancel!: () => void;
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    cancel = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { done, cancel };
}
