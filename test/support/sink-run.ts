/**
 * Runs a sink test's pipeline (streamInto) until a position the test knows
 * only later — once a concurrent workload is done — is confirmed to the
 * slot, or a deadline passes. `progress()` reads what was confirmed so far.
 */
import type { ClientConfig } from "pg";
import type { PipelineResult, Pipeline } from "../../bindings/pipeline/run.ts";
import type { Sink } from "../../bindings/pipeline/sink.ts";
import { streamInto, type StreamIntoOptions, type Workload } from "./sink-workload.ts";

/** Past any LSN: streamInto's own end condition never holds. */
const NEVER = 2n ** 63n;

export interface UntilRun {
  /** The last position confirmed to the slot (0 before any). */
  acked(): bigint;
  /** Resolves with the run's result, or rejects with the pipeline's failure. */
  readonly done: Promise<PipelineResult>;
}

export function streamUntil(config: ClientConfig, w: Workload, slot: string, sink: Sink, target: () => bigint | undefined, deadlineMs: number, o: StreamIntoOptions = {}): UntilRun {
  let pipeline: Pipeline | undefined;
  const deadline = Date.now() + deadlineMs;
  const acked = () => pipeline?.stats.acked ?? 0n;
  const watch = setInterval(() => {
    const t = target();
    if ((t !== undefined && acked() >= t) || Date.now() > deadline) pipeline?.stop();
  }, 50);
  const done = streamInto(config, w, slot, sink, NEVER, {
    ...o,
    started: (p, s) => {
      pipeline = p;
      o.started?.(p, s);
    },
  }).finally(() => clearInterval(watch));
  return { acked, done };
}
