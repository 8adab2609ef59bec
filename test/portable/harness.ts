/**
 * A tiny assert and case runner for the runtime-agnostic cases: only ES
 * globals, so the same file runs under Node (vitest), Deno, Bun and a
 * browser. Each runner prints the summary line `N passed, N failed`.
 */

/** A named test: throws (or rejects) on failure. */
export type Case = () => void | Promise<void>;
export type Cases = Record<string, Case>;

export class AssertionError extends Error {
  override name = "AssertionError";
}

/** A readable form of decoded values (bigint as `123n`, bytes as hex). */
export function show(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) => {
      if (typeof x === "bigint") return `${x}n`;
      if (x instanceof Uint8Array) return `<${Array.from(x, (b) => b.toString(16).padStart(2, "0")).join(" ")}>`;
      if (typeof x === "symbol") return x.toString();
      return x;
    });
  } catch {
    return String(v);
  }
}

/** Structural equality: plain objects, arrays, Uint8Array, bigint, primitives; `undefined` keys count as absent. */
export function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    if (!(a instanceof Uint8Array && b instanceof Uint8Array) || a.length !== b.length) return false;
    return a.every((x, i) => x === b[i]);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => same(ao[k], bo[k]));
}

export function eq(actual: unknown, expected: unknown, label = "value"): void {
  if (!same(actual, expected)) throw new AssertionError(`${label}: expected ${show(expected)}, got ${show(actual)}`);
}

export function ok(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}

/** Runs `fn`, which must throw; returns what it threw. */
export function throws(fn: () => unknown, label = "call"): unknown {
  let result: unknown;
  try {
    result = fn();
  } catch (e) {
    return e;
  }
  throw new AssertionError(`${label}: expected an error, got ${show(result)}`);
}

/** `fn` that adds itself to `count` as passed or failed, for a runner's own test() (Deno.test, vitest's it). */
export function counted(fn: Case, count: { passed: number; failed: number }): () => Promise<void> {
  return async () => {
    try {
      await fn();
      count.passed++;
    } catch (e) {
      count.failed++;
      throw e;
    }
  };
}

export interface Outcome {
  passed: number;
  failed: number;
  failures: { name: string; error: string }[];
}

/** Runs every case in order; `log` gets one line per failure and the summary `N passed, N failed`. */
export async function runCases(cases: Cases, log: (line: string) => void = () => {}): Promise<Outcome> {
  const out: Outcome = { passed: 0, failed: 0, failures: [] };
  for (const [name, fn] of Object.entries(cases)) {
    try {
      await fn();
      out.passed++;
    } catch (e) {
      out.failed++;
      const error = e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : String(e);
      out.failures.push({ name, error });
      log(`FAIL ${name}\n  ${error.replace(/\n/g, "\n  ")}`);
    }
  }
  log(summary(out));
  return out;
}

/** The line every runner prints. */
export function summary(o: { passed: number; failed: number }): string {
  return `${o.passed} passed, ${o.failed} failed`;
}
