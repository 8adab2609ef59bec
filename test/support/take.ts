import type { ReplicationStream, Transaction } from "../../bindings/pg/index.ts";

/**
 * Reads `it` until `pick` has kept `n` items (it returns undefined for
 * those it skips), the iteration ends, or `timeoutMs` passes (then rejects,
 * saying how many of `what` came).
 */
export async function take<T, R>(it: AsyncIterator<T>, n: number, pick: (item: T) => R | undefined, timeoutMs = 15_000, what = "items"): Promise<R[]> {
  const out: R[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`only ${out.length} of ${n} ${what} arrived`)), timeoutMs)));
  try {
    while (out.length < n) {
      const r = await Promise.race([it.next(), timeout]);
      if (r.done) break;
      const kept = pick(r.value);
      if (kept !== undefined) out.push(kept);
    }
  } finally {
    clearTimeout(timer);
  }
  return out;
}

/** The first `n` committed transactions of the stream (which is iterated once). */
export function committed(s: ReplicationStream, n: number, timeoutMs?: number): Promise<Transaction[]> {
  return take(s.transactions()[Symbol.asyncIterator](), n, (tx) => (tx.kind === "commit" ? tx : undefined), timeoutMs, "transactions");
}
