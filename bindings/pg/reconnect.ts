/**
 * Automatic reconnect of a replication stream: the policy (`reconnect`
 * option), its backoff schedule, the events it reports, and the loop that
 * runs it (`Reconnector`). The stream (iteration.ts) decides when to reconnect
 * — a retryable `ReplicationError` reached in stream order — and
 * `replicate()` supplies how (a new connection and START_REPLICATION from
 * `lastAckedLsn`).
 *
 * A reconnect closes the connection, resets the decoder (views of the old
 * batches go stale; the server sends Relations again), drops the open
 * transaction (it is not acknowledged and comes again whole), and after the
 * backoff a new connection streams from `lastAckedLsn`; the pull that met
 * the error waits for it.
 *
 * The schedule is exponential backoff with full jitter (as in AWS's
 * "Exponential Backoff And Jitter"): attempt n waits a uniformly random
 * time in [0, min(maxDelayMs, initialDelayMs × multiplier^(n-1))], so
 * clients cut off by the same server restart do not all come back at once.
 */
import type { Client } from "pg";
import { ReplicationError, fromPgError } from "./errors.ts";
import type { RawSocket } from "./socket.ts";
import type { StreamCounters, StreamState } from "./stream-state.ts";

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

/** A new connection for a reconnect: connected, pg done with it, and the START_REPLICATION to send. */
export interface StreamConnection {
  client: Client;
  socket: RawSocket;
  command: string;
}

/** How to reconnect: the policy, and a new connection streaming from `startLsn` (ended by `connect` when `signal` aborts). */
export interface ReconnectHow {
  policy: ReconnectPolicy;
  connect: (startLsn: bigint, signal: AbortSignal) => Promise<StreamConnection>;
}

/** What the reconnect loop asks of the stream. */
export interface ReconnectHost {
  /** The position a new connection streams from. */
  lastAckedLsn(): bigint;
  /** The connection failed: what was handed over comes again (redelivery.ts). */
  outage(): void;
  /** Lets the current connection go (closed, its bytes and state dropped). */
  detach(): Promise<void>;
  /** A new connection becomes the stream's; `start` sends its START_REPLICATION. */
  attach(conn: StreamConnection): void;
  start(command: string): Promise<void>;
  /** Ends the stream. */
  fail(error: ReplicationError): void;
  /** Wakes the pull that waits for the reconnect. */
  wakeUp(): void;
  onReconnect: ((event: ReconnectEvent) => void) | undefined;
  onReconnected: ((event: ReconnectedEvent) => void) | undefined;
}

/** Runs reconnects for a stream: one at a time, each an outage with its backoff attempts. */
export class Reconnector {
  readonly #how: ReconnectHow | undefined;
  readonly #state: StreamState;
  readonly #stats: Pick<StreamCounters, "reconnects">;
  readonly #host: ReconnectHost;
  readonly #receiveTimeoutMs: number;
  readonly #secrets: readonly string[];
  #running: Promise<void> | undefined;
  /** Cancels a backoff wait (stop()). */
  #cancelWait: (() => void) | undefined;

  /** Without `how`, nothing is retried: a failure ends the stream. */
  constructor(
    how: ReconnectHow | undefined, options: { receiveTimeoutMs: number; secrets: readonly string[] },
    state: StreamState, stats: StreamCounters, host: ReconnectHost,
  ) {
    this.#how = how;
    this.#receiveTimeoutMs = options.receiveTimeoutMs;
    this.#secrets = options.secrets;
    this.#state = state;
    this.#stats = stats;
    this.#host = host;
  }

  /** The running reconnect (pulls wait for it; stop() awaits it). */
  get running(): Promise<void> | undefined {
    return this.#running;
  }

  /** Starts a reconnect for a retryable `error` when the policy allows; returns whether one runs (the pull waits for it). */
  retry(error: ReplicationError): boolean {
    if (this.#running !== undefined) return true;
    if (this.#how === undefined || !error.retryable || this.#state.stopRequested || this.#state.error !== undefined) return false;
    this.#running = this.#loop(this.#how, error)
      .catch((e: unknown) => this.#giveUp(fromPgError(e, "could not reconnect", "CONNECTION_LOST", this.#secrets)))
      .finally(() => {
        this.#running = undefined;
        this.#host.wakeUp();
      });
    return true;
  }

  /** Ends a backoff wait now (stop()). */
  cancel(): void {
    this.#cancelWait?.();
  }

  async #loop({ policy, connect }: ReconnectHow, cause: ReplicationError): Promise<void> {
    const state = this.#state;
    const host = this.#host;
    const since = Date.now();
    host.outage();
    await host.detach();
    for (let attempt = 1; ; attempt++) {
      if (state.stopRequested) return;
      if (attempt > policy.maxAttempts) return this.#giveUp(cause);
      const delayMs = backoffDelay(attempt, policy);
      tell(() => host.onReconnect?.({ attempt, delayMs, cause }));
      if (state.stopRequested) return; // stopped from the callback
      const wait = cancellableSleep(delayMs);
      this.#cancelWait = wait.cancel;
      await wait.done;
      this.#cancelWait = undefined;
      if (state.stopRequested) return;
      const startLsn = host.lastAckedLsn();
      try {
        const conn = await this.#connectWithin(connect, startLsn);
        if (state.stopRequested) {
          await conn.client.end().catch(() => {});
          return;
        }
        host.attach(conn);
        await host.start(conn.command);
      } catch (e) {
        const error = fromPgError(e, "could not reconnect", "CONNECTION_LOST", this.#secrets);
        if (state.stopRequested) return;
        if (state.phase === "starting") await host.detach();
        if (!error.retryable) return this.#giveUp(error);
        cause = error;
        continue;
      }
      this.#stats.reconnects++;
      tell(() => host.onReconnected?.({ attempts: attempt, startLsn, downtimeMs: Date.now() - since }));
      return;
    }
  }

  /**
   * A new connection, given up on (a retryable CONNECT_FAILED) after
   * `receiveTimeoutMs`: a server that accepts the TCP connection and then
   * says nothing must not hold the reconnect forever. The connection being
   * opened is ended (the abort), or closed should it still come.
   */
  #connectWithin(connect: ReconnectHow["connect"], startLsn: bigint): Promise<StreamConnection> {
    const ms = this.#receiveTimeoutMs;
    const abort = new AbortController();
    const attempt = connect(startLsn, abort.signal);
    if (ms <= 0) return attempt;
    let timer: ReturnType<typeof setTimeout> | undefined;
    attempt.then((conn) => (abort.signal.aborted ? conn.client.end().catch(() => {}) : undefined), () => {});
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new ReplicationError(`no connection within receiveTimeoutMs (${ms} ms)`, { code: "CONNECT_FAILED" }));
      }, ms);
    });
    return Promise.race([attempt, timeout]).finally(() => clearTimeout(timer));
  }

  /** Ends the stream with the error that made reconnecting hopeless. */
  #giveUp(error: ReplicationError): void {
    this.#running = undefined; // the stream's fail() ends it only outside a reconnect's start
    this.#host.fail(error);
  }
}

/** A callback that throws must not break the reconnect. */
function tell(call: () => void): void {
  try {
    call();
  } catch {
    /* the consumer's problem, not the stream's */
  }
}
