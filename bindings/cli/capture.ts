/**
 * `pgoutput-wasm capture FILE|-`: records the pgoutput messages of a live
 * stream to a capture file — the format `decode` reads: repeated
 * `[uint32 big-endian length][pgoutput message]`, gzipped when FILE ends in
 * `.gz` — for bug reports and benchmarks. Same connection options as
 * `tail`; without a connection it records the embedded demo.
 *
 * The bytes are the server's, as received (the XLogData payload after its
 * 25-byte header: each message's `bytes()`); decoding the stream drives
 * acknowledgements and backpressure. With `--ack
 * auto` (default) what was written is acknowledged when the capture ends,
 * after the file is complete.
 */
import { createWriteStream } from "node:fs";
import { createGzip } from "node:zlib";
import { parseArgs } from "node:util";
import type { Writable } from "node:stream";
import type { PgoutputMessage } from "../messages.ts";
import { CliError, explain, usage } from "./errors.ts";
import { StatusLine, formatBytes } from "./status.ts";
import { Interrupted, SOURCE_OPTIONS, openSource, positiveInt, sourceSettings, type Source, type SourceFlags } from "./source.ts";
import { transactionEnd } from "../ack.ts";

export const CAPTURE_USAGE = `usage: pgoutput-wasm capture FILE|- [options]

Records a live stream to a capture file: [uint32 big-endian length][pgoutput
message]..., gzipped when FILE ends in .gz; - writes to stdout. Read it back
with: pgoutput-wasm decode FILE

Without --connection: records the embedded demo (see pgoutput-wasm tail --help)
and exits when its workload is recorded.

options: those of tail for the connection and the slot (--connection,
--publication, --slot, --create-slot, --temporary, --start-lsn, --proto,
--streaming, --binary, --messages, --two-phase, --pg, --follow, --backend,
--progress), and
  --max-messages N       stop after N messages
  --seconds S            stop after S seconds
  --ack auto|none        auto (default): when the capture ends, acknowledge the
                         transactions written; none: leave the slot where it was
`;

export async function captureCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...SOURCE_OPTIONS, seconds: { type: "string" } },
  });
  if (values.help) {
    process.stdout.write(CAPTURE_USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw usage("capture takes one FILE (or - for stdout)", "pgoutput-wasm capture changes.bin.gz");
  const file = positionals[0]!;
  const settings = sourceSettings(values as SourceFlags);
  if (settings.ack === "manual") throw usage("capture: --ack must be auto or none");
  const seconds = positiveInt("seconds", values.seconds);
  if (file === "-" && process.stdout.isTTY) throw usage("capture writes binary data: give a FILE, or redirect stdout");

  const stderr = process.stderr;
  let source: Source | undefined;
  let stopRequested = false;
  let stopped: (() => void) | undefined;
  const stoppedPromise = new Promise<void>((r) => (stopped = r));
  const requestStop = (): void => {
    if (stopRequested) process.exit(130);
    stopRequested = true;
    stopped?.();
  };
  process.on("SIGINT", requestStop);
  process.on("SIGTERM", requestStop);

  let written = 0;
  let bytesWritten = 0;
  let transactions = 0;
  let messages = 0;
  const status = new StatusLine({
    out: stderr,
    enabled: stderr.isTTY === true || settings.progress,
    label: "capture",
    writtenUnit: "messages",
    sample: () => ({
      messages,
      bytes: source?.stream.stats.bytes ?? 0,
      written,
      transactions,
      lsn: source?.stream.lastReceivedLsn ?? 0n,
      acked: source?.stream.lastAckedLsn ?? 0n,
    }),
    walEnd: () => source?.walEnd() ?? Promise.resolve(undefined),
  });

  let sink: Writable | undefined;
  let fileDone: Promise<void> = Promise.resolve();
  let sinkFailed: (e: Error) => void = () => {};
  const sinkError = new Promise<Error>((resolve) => (sinkFailed = resolve));
  const openSink = (): Writable => {
    const target: Writable = file === "-" ? process.stdout : createWriteStream(file);
    target.on("error", (e) => sinkFailed(e));
    const gz = file.endsWith(".gz") ? createGzip() : undefined;
    if (gz !== undefined) {
      gz.on("error", (e) => sinkFailed(e));
      gz.pipe(target, { end: file !== "-" });
    }
    if (file !== "-") fileDone = new Promise((resolve) => target.once("close", () => resolve()));
    else if (gz !== undefined) fileDone = new Promise((resolve) => gz.once("end", () => resolve()));
    return gz ?? target;
  };

  try {
    try {
      source = await openSource(settings, {
        stopped: () => stopRequested,
        note: (text) => status.note(`capture: ${text}`),
        onDemoStep: (step) => status.note(`demo: ${step.note}`),
      });
    } catch (e) {
      if (e instanceof Interrupted) return 0;
      throw e;
    }
    // Opened once streaming works: a failed connection leaves no (empty) file, nor truncates an old one.
    try {
      sink = openSink();
    } catch (e) {
      throw new CliError(`cannot write ${file}: ${(e as Error).message}`);
    }
    const src = source;
    const stream = src.stream;
    status.start();
    const timer = seconds === undefined ? undefined : setTimeout(() => stopped?.(), seconds * 1000);

    const committed = new Set<number>();
    let lastXid: number | undefined;
    let demoDone = false;
    const checkDemo = (): void => {
      if (lastXid !== undefined && committed.has(lastXid) && !settings.follow) {
        demoDone = true;
        stopped?.();
      }
    };
    src.demo?.then((r) => { lastXid = r.lastXid; checkDemo(); }, () => { if (!stopRequested) stopped?.(); });

    let openXid: number | undefined;
    let lastEnd: bigint | undefined;
    let chunks: Uint8Array[] = [];
    let chunkBytes = 0;
    const flushChunks = async (): Promise<void> => {
      if (chunks.length === 0) return;
      const buf = Buffer.concat(chunks);
      chunks = [];
      chunkBytes = 0;
      if (!sink!.write(buf)) {
        await Promise.race([new Promise((r) => sink!.once("drain", r)), sinkError]);
      }
    };

    const it = stream[Symbol.asyncIterator]();
    let streamError: unknown;
    let failure: Error | undefined;
    sinkError.then((e) => { failure = e; stopped?.(); });
    for (;;) {
      const pending = it.next();
      pending.catch(() => {});
      let next: IteratorResult<unknown> | undefined;
      try {
        next = await Promise.race([pending, stoppedPromise.then(() => undefined)]);
      } catch (e) {
        streamError = e;
        break;
      }
      if (next === undefined || next.done) break;
      messages++;
      const msg = next.value as PgoutputMessage;
      const payload = msg.bytes(); // the server's bytes of the message, as received
      const frame = new Uint8Array(4 + payload.length);
      new DataView(frame.buffer).setUint32(0, payload.length);
      frame.set(payload, 4);
      chunks.push(frame);
      chunkBytes += frame.length;
      written++;
      bytesWritten += frame.length;
      if (msg.kind === "Begin") openXid = msg.xid;
      const end = transactionEnd(msg);
      if (end !== undefined) {
        lastEnd = end;
        transactions++;
        const xid = msg.kind === "Commit" ? openXid : msg.kind === "StreamCommit" ? msg.xid : undefined;
        if (xid !== undefined) {
          committed.add(xid);
          checkDemo();
        }
      }
      if (chunkBytes >= 256 * 1024 || end !== undefined) await flushChunks();
      if ((settings.maxMessages !== undefined && written >= settings.maxMessages) || stopRequested || demoDone) break;
    }
    if (timer !== undefined) clearTimeout(timer);

    await flushChunks();
    // Complete the file, then acknowledge what is in it.
    if (sink !== process.stdout) sink.end();
    const outcome = await Promise.race([fileDone.then(() => undefined), sinkError]);
    failure ??= outcome;
    if (failure !== undefined) {
      await stream.stop();
      throw new CliError(`cannot write ${file}: ${failure.message}`);
    }
    if (settings.ack === "auto" && lastEnd !== undefined && !stream.error) stream.ack(lastEnd);
    await stream.stop();
    status.stop(`wrote ${written} messages (${formatBytes(bytesWritten)} before compression) to ${file}${demoDone ? "; demo complete" : ""}`);
    if (streamError !== undefined && !stopRequested) throw explain(streamError, src.context);
    return 0;
  } finally {
    status.stop();
    await source?.close();
    process.off("SIGINT", requestStop);
    process.off("SIGTERM", requestStop);
  }
}
