/**
 * `file:PATH`: appended to a file (created if missing); `.gz` at the end of
 * the name compresses it. A batch is durable once written and flushed to
 * disk (`fdatasync`; for gzip after a sync flush of the compressor, so the
 * file decompresses up to the last acknowledged record even if the process
 * dies next). Writes are made one after another, in order.
 *
 * Group commit: the batches that arrive while a write and its flush are
 * under way are written together, with one flush, when it is done. A
 * flush costs the same for a few bytes as for many, so the number of
 * flushes follows the disk's pace, not the number of batches: a fast
 * stream of small transactions is not held to one flush per batch.
 */
import { open, type FileHandle } from "node:fs/promises";
import { constants, createGzip, type Gzip } from "node:zlib";
import type { Records } from "../pipeline/records.ts";
import { SinkError, headersRefused, type Sink, type SinkDefinition } from "../pipeline/sink.ts";
import { SinkMeter } from "./meter.ts";

/** The path of a `file:` target: `file:out.jsonl`, `file:///tmp/out.jsonl`. */
export function filePath(target: string): string {
  if (target.startsWith("file://")) return decodeURIComponent(new URL(target).pathname);
  if (target.startsWith("file:")) return target.slice("file:".length);
  return target;
}

export interface FileSinkOptions {
  /** Flush to disk before a write resolves (default true). */
  fsync?: boolean;
  /** Empty the file first instead of appending (`capture FILE` replaces it). Default false. */
  truncate?: boolean;
}

interface Pending {
  bytes: Uint8Array;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export async function fileSink(path: string, options: FileSinkOptions = {}): Promise<Sink> {
  const fsync = options.fsync !== false;
  let fh: FileHandle;
  try {
    fh = await open(path, options.truncate === true ? "w" : "a");
  } catch (e) {
    throw new SinkError(`file: cannot open ${path}: ${(e as Error).message}`, { sink: "file", target: path, cause: e });
  }
  const gzip: Gzip | undefined = path.endsWith(".gz") ? createGzip() : undefined;
  const fail = (e: unknown) => new SinkError(`file: cannot write ${path}: ${(e as Error).message}`, { sink: "file", target: path, cause: e });
  /** Compressed `parts`, sync-flushed (`final`: the gzip trailer too). */
  const compressed = (parts: readonly Uint8Array[], final: boolean): Promise<Uint8Array[]> =>
    new Promise((resolve, reject) => {
      const out: Buffer[] = [];
      const onData = (b: Buffer) => out.push(b);
      const onError = (e: Error) => done(e);
      gzip!.on("data", onData);
      gzip!.once("error", onError);
      const done = (e?: Error | null) => {
        gzip!.off("data", onData);
        gzip!.off("error", onError);
        if (e) reject(e);
        else resolve(out);
      };
      for (const p of parts) gzip!.write(p);
      // The trailer is all out at 'end' (the end callback, at 'finish', may come before its last 'data').
      if (final) gzip!.once("end", () => done()).end();
      else gzip!.flush(constants.Z_SYNC_FLUSH, () => done());
    });
  const put = async (parts: readonly Uint8Array[]): Promise<void> => {
    const bytes = parts.filter((p) => p.length > 0);
    if (bytes.length > 0) await fh.writev(bytes);
    if (fsync) await fh.datasync();
  };

  const meter = new SinkMeter("file");
  const queue: Pending[] = [];
  let writing: Promise<void> | undefined;
  let failed: SinkError | undefined;
  /** Writes what is queued, a round at a time (everything that came meanwhile), until nothing is. */
  const drain = async (): Promise<void> => {
    while (queue.length > 0) {
      const round = queue.splice(0);
      try {
        if (failed !== undefined) throw failed;
        const parts = round.map((p) => p.bytes);
        await put(gzip === undefined ? parts : await compressed(parts, false));
        for (const p of round) p.resolve();
      } catch (e) {
        // What the file holds after a failed write is not known: nothing after it is durable.
        failed ??= e instanceof SinkError ? e : fail(e);
        for (const p of round) p.reject(failed);
      }
    }
    writing = undefined;
  };
  return {
    name: "file",
    write(records: Records): Promise<void> {
      const refused = headersRefused(records, "file");
      if (refused !== undefined) return meter.track(records, Promise.reject(refused));
      const bytes = records.bytes.buf.subarray(0, records.bytes.len);
      return meter.track(records, new Promise<void>((resolve, reject) => {
        queue.push({ bytes, resolve, reject });
        writing ??= drain();
      }));
    },
    metrics: () => meter.metrics(),
    collectMetrics: () => meter.collectMetrics(),
    async close(): Promise<void> {
      await writing;
      try {
        if (gzip !== undefined && failed === undefined) await put(await compressed([], true));
      } finally {
        await fh.close();
      }
    },
  };
}

export const file: SinkDefinition = {
  name: "file",
  schemes: ["file:"],
  summary: "appended to file:PATH, flushed to disk before acknowledged; .gz: gzipped",
  create: (target) => fileSink(filePath(target)),
};
