/**
 * A stream's pulls (`next()` calls) run one after another: concurrent
 * calls must not interleave. When nothing is in flight and the item is
 * already decoded, a pull is one resolved promise: no async function and
 * no chaining, which is what each message costs while the consumer keeps up.
 */

/** A pull step's answer when nothing is buffered yet. */
export const WAIT = Symbol("wait");

export class Pulls {
  #chain: Promise<unknown> = Promise.resolve();
  #inFlight = 0;
  /** The consumer is back (each pull's start: the ack tracker's next()). */
  readonly #back: () => void;
  /** Resolves when a step that gave WAIT may be tried again. */
  readonly #wait: () => Promise<void>;

  constructor(back: () => void, wait: () => Promise<void>) {
    this.#back = back;
    this.#wait = wait;
  }

  /** Whether a pull has not settled yet (the next item is its). */
  get inFlight(): boolean {
    return this.#inFlight !== 0;
  }

  /** One `next()`: the consumer is back, then `step` until it gives a result, waiting between tries. */
  pull<T>(step: () => T | typeof WAIT): Promise<T> {
    if (this.#inFlight === 0) {
      this.#back();
      let r: T | typeof WAIT;
      try {
        r = step();
      } catch (e) {
        return Promise.reject(e);
      }
      if (r !== WAIT) return Promise.resolve(r);
      return this.#track(this.#waitFor(step));
    }
    return this.#track(this.#chain.then(() => {
      this.#back();
      return this.#waitFor(step);
    }));
  }

  async #waitFor<T>(step: () => T | typeof WAIT): Promise<T> {
    for (;;) {
      const r = step();
      if (r !== WAIT) return r;
      await this.#wait();
    }
  }

  /** Counts a pull in flight until it settles; later pulls chain after it. */
  #track<T>(p: Promise<T>): Promise<T> {
    this.#inFlight++;
    const settled = () => {
      this.#inFlight--;
    };
    this.#chain = p.then(settled, settled);
    return p;
  }
}
