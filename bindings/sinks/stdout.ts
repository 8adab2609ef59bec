/**
 * `-`: standard output (or any Node writable). A batch is durable once the
 * stream's write callback ran: the bytes reached the file, pipe or terminal
 * behind it. The batch's buffer is written as it is, without a copy (the
 * pipeline leaves it alone until the write settles).
 */
import type { Writable } from "node:stream";
import type { Records } from "../pipeline/records.ts";
import { SinkError, headersRefused, type Sink, type SinkDefinition } from "../pipeline/sink.ts";
import { SinkMeter } from "./meter.ts";

export interface WritableSinkOptions {
  /** Called before each write (the CLI clears its status line when both share a terminal). */
  beforeWrite?: () => void;
  /** The name in messages (default `stdout`). */
  name?: string;
}

/** A sink over a writable stream; a failed write (EPIPE: the reader went away) rejects with a SinkError whose cause has the code. */
export function writableSink(out: Writable, options: WritableSinkOptions = {}): Sink {
  const name = options.name ?? "stdout";
  let failed: Error | undefined;
  const onError = (e: Error) => (failed ??= e);
  out.on("error", onError);
  const fail = (e: Error) => new SinkError(`${name}: ${e.message}`, { sink: name, cause: e });
  const meter = new SinkMeter(name);
  return {
    name,
    write(records: Records): Promise<void> {
      if (failed !== undefined) return meter.track(records, Promise.reject(fail(failed)));
      const refused = headersRefused(records, name);
      if (refused !== undefined) return meter.track(records, Promise.reject(refused));
      options.beforeWrite?.();
      return meter.track(records, new Promise((resolve, reject) => {
        out.write(records.bytes.buf.subarray(0, records.bytes.len), (e) => (e ? reject(fail(e)) : resolve()));
      }));
    },
    metrics: () => meter.metrics(),
    collectMetrics: () => meter.collectMetrics(),
    async close(): Promise<void> {
      out.off("error", onError);
    },
  };
}

export const stdout: SinkDefinition = {
  name: "stdout",
  schemes: ["-"],
  summary: "standard output (the default)",
  create: async () => writableSink(process.stdout),
};
