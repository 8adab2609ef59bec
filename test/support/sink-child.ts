/**
 * A consuming process for the sinks' kill -9 tests: streams a slot through
 * the JSON Lines pipeline into the sink of a target URL (sinks/index.ts) and
 * runs until killed, or until SIGTERM (then it drains and ends).
 *
 * argv[2]: JSON {config, publication, slot, target}. Prints one JSON line per
 * event on stdout: {"started":true}, {"acked":"X/Y"}, {"ended":reason}, {"error":message}.
 */
import type { ClientConfig } from "pg";
import { isReplicationError } from "../../bindings/pg/errors.ts";
import { openSink } from "../../bindings/sinks/index.ts";
import { formatLsn } from "../../bindings/lsn.ts";
import { streamInto } from "./sink-workload.ts";

const { config, publication, slot, target } = JSON.parse(process.argv[2]!) as { config: ClientConfig; publication: string; slot: string; target: string };
const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);

try {
  const sink = await openSink(target);
  let acked: bigint | undefined;
  // The walsender of a killed predecessor may hold the slot for a moment (55006): try again.
  for (const deadline = Date.now() + 20_000; ; ) {
    try {
      const result = await streamInto(config, { schema: "", publication, tables: [] }, slot, sink, 2n ** 63n, {
        replicate: { reconnect: true },
        started: (pipeline) => {
          process.once("SIGTERM", () => pipeline.stop());
          say({ started: true });
          setInterval(() => {
            if (pipeline.stats.acked !== acked && pipeline.stats.acked !== undefined) say({ acked: formatLsn((acked = pipeline.stats.acked)) });
          }, 20).unref();
        },
      });
      say({ ended: result.reason });
      break;
    } catch (e) {
      if (!isReplicationError(e) || !e.retryable || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
} catch (e) {
  say({ error: String((e as Error).message) });
  process.exitCode = 1;
}
