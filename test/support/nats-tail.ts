/**
 * A consuming process for the kill -9 test (test/sink-nats.test.ts): a slot
 * through the jsonl pipeline into the NATS sink until it is killed. Prints
 * `ready` once it streams. Arguments: one JSON object
 * `{ config, publication, slot, url }`.
 */
import { natsSink, natsOptions } from "../../bindings/sinks/nats.ts";
import { streamInto } from "./sink-workload.ts";

const { config, publication, slot, url } = JSON.parse(process.argv[2]!) as { config: object; publication: string; slot: string; url: string };
const sink = await natsSink(natsOptions(url));
await streamInto(config, { schema: "", publication, tables: [] }, slot, sink, 2n ** 63n, {
  replicate: { statusIntervalMs: 100 },
  window: { records: 500 },
  started: () => process.stdout.write("ready\n"),
});
