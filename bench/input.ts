/**
 * A benchmark corpus in memory, in the forms the competitors take it:
 * - `chunks`: the capture file ([uint32 BE length][message]...) cut into
 *   64 KB pieces at arbitrary byte positions, as a socket hands them over
 *   (what `push()` and the JS walk take);
 * - `messages`: one Buffer per message (views into the file), for
 *   pg-logical-replication's `parse(buffer)`, whose form takes whole
 *   messages only. Splitting is done before the clock starts.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { gunzipSync } from "node:zlib";
import type { CorpusInfo } from "../devkit/capture/corpus.ts";

export const CHUNK = 64 * 1024;

export interface BenchInput {
  /** File name without extension, e.g. `proto1-text-pg15-default`. */
  name: string;
  path: string;
  /** The sidecar written by corpus.ts, when present. */
  info: CorpusInfo | undefined;
  /** Number of messages. */
  messages: number;
  /** Sum of the message lengths (MB/s figures are message bytes per second). */
  messageBytes: number;
  /** Size of the capture file: message bytes + 4 per message. */
  frameBytes: number;
  /** The file in 64 KB pieces. */
  chunks: Uint8Array[];
  /** One Buffer per message (made on first use). */
  readonly split: Buffer[];
}

export function loadInput(path: string): BenchInput {
  let file: Buffer = readFileSync(path);
  if (file[0] === 0x1f && file[1] === 0x8b) file = gunzipSync(file);
  const dv = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let messages = 0;
  let messageBytes = 0;
  for (let p = 0; p + 4 <= file.length; ) {
    const len = dv.getUint32(p);
    if (p + 4 + len > file.length) throw new Error(`${path}: frame at ${p} runs past the end of the file`);
    messages++;
    messageBytes += len;
    p += 4 + len;
  }
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < file.length; i += CHUNK) chunks.push(file.subarray(i, Math.min(i + CHUNK, file.length)));
  let info: CorpusInfo | undefined;
  try {
    info = JSON.parse(readFileSync(path.replace(/(\.gz)?$/, "").replace(/\.bin$/, "") + ".json", "utf8")) as CorpusInfo;
  } catch {
    info = undefined;
  }
  let split: Buffer[] | undefined;
  return {
    name: basename(path).replace(/\.gz$/, "").replace(/\.bin$/, ""),
    path,
    info,
    messages,
    messageBytes,
    frameBytes: file.length,
    chunks,
    get split() {
      if (split === undefined) {
        split = new Array<Buffer>(messages);
        let p = 0;
        for (let i = 0; i < messages; i++) {
          const len = dv.getUint32(p);
          split[i] = file.subarray(p + 4, p + 4 + len);
          p += 4 + len;
        }
      }
      return split;
    },
  };
}
