/**
 * `file:PATH`: appended to a file (created if missing); `.gz` at the end of
 * the name compresses it. A batch is durable once written and flushed to
 * disk (`fdatasync`; for gzip after a sync flush of the compressor, so the
 * file decompresses up to the last acknowledged record even if the process
 * dies next). Writes are made one after another, in order.
 */
import { open, type FileHandle } from "node:fs/promises";
import { constants, createGzip, type Gzip } from "node:zlib";
import type { Records } from "../pipeline/records.ts";
import { SinkError, type Sink, type SinkDefinition } from "../pipeline/sink.ts";

/** The path of a `file:` target: `file:out.jsonl`, `file:///tmp/out.jsonl`. */
export function filePath(target: string): string {
  if (target.startsWith("file://")) return decodeURIComponent(new URL(target).pathname);
  if (target.startsWith("file:")) return target.slice("file:".length);
  return target;
}

export async function fileSink(path: string, options: { fsync?: boolean } = {}): Promise<Sink> {
  const fsync = options.fsync !== false;
  let fh: FileHandle;
  try {
    fh = await open(path, "a");
  } catch (e) {
    throw new SinkError(`file: cannot open ${path}: ${(e as Error).message}`, { sink: "file", target: path, cause: e });
  }
  const gzip: Gzip | undefined = path.endsWith(".gz") ? createGzip() : undefined;
  let chain: Promise<void> = Promise.resolve();
  const fail = (e: unknown) => new SinkError(`file: cannot write ${path}: ${(e as Error).message}`, { sink: "file", target: path, cause: e });
  const compressed = (bytes: Uint8Array, final: boolean): Promise<Uint8Array> =>
    new Promise((resolve, reject) => {
      const parts: Buffer[] = [];
      const onData = (b: Buffer) => parts.push(b);
      gzip!.on("data", onData);
      const done = (e?: Error | null) => {
        gzip!.off("data", onData);
        if (e) reject(e);
        else resolve(Buffer.concat(parts));
      };
      if (final) gzip!.end(bytes, () => done());
      else gzip!.write(bytes, () => gzip!.flush(constants.Z_SYNC_FLUSH, () => done()));
    });
  const put = async (bytes: Uint8Array): Promise<void> => {
    if (bytes.length > 0) await fh.write(bytes, 0, bytes.length);
    if (fsync) await fh.datasync();
  };
  return {
    name: "file",
    write(records: Records): Promise<void> {
      const bytes = records.bytes.buf.subarray(0, records.bytes.len);
      const step = chain.then(async () => put(gzip === undefined ? bytes : await compressed(bytes, false)));
      chain = step.catch(() => {});
      return step.catch((e: unknown) => Promise.reject(fail(e)));
    },
    async close(): Promise<void> {
      await chain;
      try {
        if (gzip !== undefined) await put(await compressed(new Uint8Array(), true));
      } finally {
        await fh.close();
      }
    },
  };
}

export const file: SinkDefinition = {
  name: "file",
  schemes: ["file:"],
  summary: "appended to a file, flushed to disk per batch (file:PATH; .gz compresses)",
  create: (target) => fileSink(filePath(target)),
};
