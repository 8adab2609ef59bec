/**
 * Bookkeeping for the aliasing harness (test/aliasing.test.ts): what a test
 * kept from a decoder call, what it must stay equal to, and the problems
 * found, collected as readable lines so one failing run lists every kept
 * thing that changed (instead of stopping at the first).
 */
import { isPgoutputError } from "../../bindings/errors.ts";
import { deepEqual } from "../../devkit/encoder/encoder.ts";

/** A value kept from a call; `got` is read when compared (so a lazy getter is first touched then). */
export interface Kept {
  readonly what: string;
  readonly got: () => unknown;
  readonly want: unknown;
}

export class Keeper {
  readonly problems: string[] = [];
  readonly #kept: Kept[] = [];
  /** The ArrayBuffer of the pooled input: nothing kept may view it. */
  readonly #input: ArrayBufferLike;

  constructor(input: ArrayBufferLike) {
    this.#input = input;
  }

  /** Compares `fresh` now (`when` says after what), and keeps it for `finish`. */
  add(fresh: readonly Kept[], when: string): void {
    this.compare(fresh, when);
    this.#kept.push(...fresh);
  }

  /** Compares everything kept so far. */
  finish(when: string): void {
    this.compare(this.#kept, when);
  }

  compare(list: readonly Kept[], when: string): void {
    for (const k of list) {
      let got: unknown;
      try {
        got = k.got();
      } catch (e) {
        this.problems.push(`${k.what} ${when}: threw ${e instanceof Error ? e.message : String(e)}`);
        continue;
      }
      const views = viewsOf(got, this.#input);
      const equal = deepEqual(got, k.want);
      if (views || !equal) {
        const what = `${k.what} ${when}: ${views ? "holds a view of the input buffer; " : ""}`;
        this.problems.push(equal ? `${what}(still equal)` : `${what}${show(got)}, expected ${show(k.want)}`);
      }
    }
  }

  /** `touch()` must throw STALE_VIEW (a view used after its decoder's next call). */
  expectStale(what: string, touch: () => unknown): void {
    try {
      const value = touch();
      this.problems.push(`${what}: no STALE_VIEW, gave ${show(value)}`);
    } catch (e) {
      if (!isPgoutputError(e) || e.code !== "STALE_VIEW") {
        this.problems.push(`${what}: threw ${isPgoutputError(e) ? e.code : String(e)} instead of STALE_VIEW`);
      }
    }
  }
}

/** True when `value` is, or contains, a byte array over `buffer`. */
function viewsOf(value: unknown, buffer: ArrayBufferLike, seen = new Set<object>()): boolean {
  if (typeof value !== "object" || value === null || seen.has(value)) return false;
  seen.add(value);
  if (ArrayBuffer.isView(value)) return value.buffer === buffer;
  for (const v of Object.values(value)) if (viewsOf(v, buffer, seen)) return true;
  return false;
}

/** A short printable form (bigints, byte arrays and symbols included). */
export function show(v: unknown): string {
  const text = (() => {
    try {
      // `this[key]` is the value before its toJSON (a Buffer's would list every byte).
      return JSON.stringify(v, function (this: Record<string, unknown>, key: string, x: unknown) {
        const raw = key === "" ? v : this[key];
        if (raw instanceof Uint8Array) return `bytes[${raw.length}] ${Buffer.from(raw.subarray(0, 12)).toString("hex")}`;
        return typeof x === "bigint" ? `${x}n` : typeof x === "symbol" ? x.toString() : x;
      }) ?? String(v);
    } catch {
      return String(v);
    }
  })();
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}
