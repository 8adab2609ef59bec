/**
 * Paired rounds in one process, for the benches that compare entries as
 * ratios: every round runs each entry once (at least 200 ms of passes) in
 * an order rotated per round, so load that lands on one round lands on
 * every entry of it; a ratio is the median of the per-round ratios.
 */
import { median } from "./report.ts";

export { median };

/** Seconds per pass of at least 200 ms of passes. */
export async function passTime(run: () => void | Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  let n = 0;
  let ms = 0;
  while ((ms = performance.now() - t0) < 200 || n < 2) {
    await run();
    n++;
  }
  return ms / 1000 / n;
}

/** Seconds per pass of each entry in each round (after one warm-up each). */
export async function pairedRounds(runs: readonly (() => void | Promise<unknown>)[], rounds: number): Promise<number[][]> {
  for (const run of runs) await passTime(run);
  const secs: number[][] = runs.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < runs.length; k++) {
      const i = (k + r) % runs.length;
      secs[i]!.push(await passTime(runs[i]!));
    }
  }
  return secs;
}

/** Entry i's speed over entry j's: the median of the per-round ratios, and their range. */
export function pairedRatio(secs: readonly number[][], i: number, j: number): string {
  const rs = secs[i]!.map((s, r) => secs[j]![r]! / s).sort((a, b) => a - b);
  return `${median(rs).toFixed(2)}x (${rs[0]!.toFixed(2)}-${rs[rs.length - 1]!.toFixed(2)})`;
}
