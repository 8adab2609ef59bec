import type { PgoutputDecoder } from "../../bindings/decoder.ts";

/**
 * `bytes` given to the decoder's `push` (or `pushBackend`) in chunks cut at
 * `cuts`, then end(); each batch materialized at once, the messages in order.
 */
export function pushSplit(d: PgoutputDecoder, bytes: Uint8Array, cuts: readonly number[], push: "push" | "pushBackend" = "push"): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let p = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(...d[push](bytes.subarray(p, c)).materialize());
    p = c;
  }
  d.end();
  return out;
}
