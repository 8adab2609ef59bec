/**
 * `pgoutput-wasm capture FILE|-`: records the pgoutput messages of a live
 * stream to a capture file — the format `decode` reads, repeated
 * `[uint32 big-endian length][pgoutput message]`, gzipped when FILE ends in
 * `.gz` — for bug reports and benchmarks. It is tail's run with the
 * `capture` format (formats/capture.ts) and the file sink (sinks/file.ts,
 * replacing FILE) or stdout: a transaction is acknowledged once its
 * messages are written and flushed to disk.
 */
import { capture as captureFormat } from "../formats/capture.ts";
import { fileSink } from "../sinks/file.ts";
import { openSink } from "../sinks/index.ts";
import type { Command } from "./command.ts";
import { usage } from "./errors.ts";
import { RUN_FLAGS, SOURCE_FLAGS, UNTIL, type Flag } from "./flags.ts";
import { positiveInt, sourceSettings } from "./settings.ts";
import { formatBytes } from "./status.ts";
import { streamCommand } from "./stream-command.ts";

const SECONDS: Flag = { name: "seconds", type: "string", value: "S", description: "stop after S seconds" };

export const capture: Command = {
  name: "capture",
  synopsis: "FILE|- [options]",
  summary: "record a live stream to a capture file (.gz: gzipped); tail's connection options",
  examples: ["npx pgoutput-wasm capture out.bin.gz -c postgres://user@db/app --publication app --seconds 30"],
  description: `Records a live stream to a capture file: [uint32 big-endian length][pgoutput
message]..., the server's bytes as received, gzipped when FILE ends in .gz
(FILE is replaced); - writes to stdout. Read it back with: pgoutput-wasm
decode FILE. A transaction is acknowledged once its messages are written
and flushed to disk (--ack auto), so the slot never passes what the file
holds.

Without --connection: records the embedded demo (see pgoutput-wasm tail --help)
and exits when its workload is recorded.`,
  sections: [
    { title: "connection", flags: SOURCE_FLAGS },
    { title: "recording", flags: [...RUN_FLAGS, SECONDS, UNTIL] },
  ],
  positionals: true,
  async run(values, positionals) {
    if (positionals.length !== 1) throw usage("capture takes one FILE (or - for stdout)", "pgoutput-wasm capture changes.bin.gz");
    const file = positionals[0]!;
    const settings = sourceSettings(values);
    const seconds = positiveInt("seconds", values.seconds as string | undefined);
    if (file === "-" && process.stdout.isTTY) throw usage("capture writes binary data: give a FILE, or redirect stdout");
    return streamCommand({
      label: "capture", settings, format: captureFormat, formatOptions: {}, target: file, writtenUnit: "messages", seconds,
      openSink: () => (file === "-" ? openSink("-") : fileSink(file, { truncate: true })),
      summary: (stats) => `wrote ${stats.records} messages (${formatBytes(stats.bytes)} before compression) to ${file}`,
    });
  },
};
