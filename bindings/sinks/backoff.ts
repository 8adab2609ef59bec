/**
 * Waiting between attempts at a destination that refused for now (a broker
 * restarting, a webhook answering 503): exponential, capped, with jitter
 * (half the step fixed, half random), so that many clients a restart cut off
 * at once do not come back in the same instant. Reset after a success.
 */

/** A failed attempt that will be made again after `delayMs` (for a status line or a log). */
export interface RetryInfo {
  readonly sink: string;
  /** What failed, credentials removed. */
  readonly error: string;
  /** Failed attempts in a row. */
  readonly attempt: number;
  readonly delayMs: number;
}

export type RetryListener = (info: RetryInfo) => void;

export interface BackoffOptions {
  /** The first wait (default 100 ms). */
  initialMs?: number;
  /** The longest wait (default 10 s). */
  maxMs?: number;
}

export class Backoff {
  #attempt = 0;
  readonly #initial: number;
  readonly #max: number;

  constructor(o: BackoffOptions = {}) {
    this.#initial = o.initialMs ?? 100;
    this.#max = o.maxMs ?? 10_000;
  }

  /** Failed attempts since the last success. */
  get attempts(): number {
    return this.#attempt;
  }

  /** The wait before the next attempt. */
  next(): number {
    const step = Math.min(this.#max, this.#initial * 2 ** Math.min(this.#attempt++, 30));
    return step / 2 + Math.random() * (step / 2);
  }

  reset(): void {
    this.#attempt = 0;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
