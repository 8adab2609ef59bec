/**
 * The sinks, by the destinations they take: one entry per sink file.
 */
import type { Sink, SinkDefinition, SinkOptionValues } from "../pipeline/sink.ts";
import { redact } from "../redact.ts";
import { file } from "./file.ts";
import { http } from "./http.ts";
import { nats } from "./nats.ts";
import { redis } from "./redis.ts";
import { stdout } from "./stdout.ts";

export const SINKS: readonly SinkDefinition[] = [stdout, file, nats, redis, http];

/** The definition whose scheme `target` has (`-` for stdout), or a TypeError that lists them. */
export function sinkFor(target: string): SinkDefinition {
  const found = SINKS.find((s) => s.schemes.some((scheme) => (scheme === "-" ? target === "-" : target.toLowerCase().startsWith(scheme))));
  if (found === undefined) throw new TypeError(`no sink takes ${JSON.stringify(redact(target))}: one of ${SINKS.flatMap((s) => s.schemes).join(", ")}`);
  return found;
}

/** Opens the sink for `target`. */
export function openSink(target: string, options?: SinkOptionValues): Promise<Sink> {
  return sinkFor(target).create(target, options);
}
