/**
 * The pipeline's reads of its source's next item, each raced against a
 * stop (stop(), a sink's failure) and, while finished records wait
 * unwritten, the linger timer: a read waiting for the source gives way to
 * them after LINGER_MS. One promise per read, settled by whichever comes
 * first: racing each read against one promise that lives as long as the
 * run would leave a reaction on it per item (30 MB per 100,000 changes).
 */
import type { SourceItem } from "./sources.ts";

export const STOP = Symbol("stop");
export const LINGER = Symbol("linger");

/**
 * How long finished records wait for more before they are written, when the
 * source said more had arrived but it turned out to be nothing for the
 * format (a keepalive, a filtered heartbeat, the start of a frame).
 */
const LINGER_MS = 2;

export type ReadResult = IteratorResult<SourceItem> | typeof STOP | typeof LINGER;

export class SourceReads {
  /** Whether the run is to stop (asked for, or a write failed): a read then settles with STOP at once. */
  readonly #stopping: () => boolean;
  /** Wakes the read being awaited, if any. */
  #wake: ((why: typeof STOP | typeof LINGER) => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The timer fired: a read waiting for the source gives way to the waiting records. */
  #due = false;

  constructor(stopping: () => boolean) {
    this.#stopping = stopping;
  }

  /** Whether the linger timer is armed (finished records wait). */
  get lingering(): boolean {
    return this.#timer !== undefined;
  }

  /** The source's next item, or STOP, or (with `linger`, once the timer fired) LINGER, whichever comes first. */
  read(pending: Promise<IteratorResult<SourceItem>>, linger: boolean): Promise<ReadResult> {
    return new Promise<ReadResult>((resolve, reject) => {
      this.#wake = (why) => {
        if (why === STOP || linger) resolve(why);
      };
      pending.then(resolve, reject);
      if (this.#stopping()) queueMicrotask(() => resolve(STOP));
      else if (linger && this.#due) queueMicrotask(() => resolve(LINGER)); // after pending's reaction: an item already there comes first
    }).finally(() => {
      this.#wake = undefined;
    });
  }

  /** Ends the read being awaited with STOP. */
  stop(): void {
    this.#wake?.(STOP);
  }

  /** Finished records wait for what the source says arrived: for LINGER_MS at most, then a waiting read gives way. */
  arm(): void {
    this.#due = false;
    this.#timer = setTimeout(() => {
      this.#due = true;
      this.#wake?.(LINGER);
    }, LINGER_MS);
  }

  disarm(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#due = false;
  }
}
