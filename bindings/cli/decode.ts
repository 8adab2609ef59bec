/**
 * `pgoutput-wasm decode FILE|-`: reads a capture file — repeated
 * `[uint32 big-endian length][pgoutput message]`, gzipped or not — in 64 KB
 * chunks and writes one JSON object per message (JSON Lines). LSNs are
 * `X/Y` strings, 64-bit numbers decimal strings, tuple columns
 * `{kind, text}` / `{kind, base64}` / `null` / `{kind: "unchanged"}`; with
 * `--values` also the typed values by column name.
 *
 * `--changes` prints `tail`'s shape instead (docs/cli-output.md): one line
 * per change with typed values, after wal2json's format-version 2. A capture
 * has no XLogData headers, so change lines carry no `lsn` of their own
 * (B/C lines with `--transactions` do).
 */
import { createReadStream } from "node:fs";
import { createGunzip } from "node:zlib";
import { parseArgs } from "node:util";
import type { Readable } from "node:stream";
import { createDecoder } from "../create-decoder.ts";
import { CliError, usage } from "./errors.ts";
import { isPgoutputError } from "../errors.ts";
import { layoutOf } from "../layout.ts";
import { MAX_MESSAGE_SIZE } from "../limits.ts";
import { quotedBytes } from "../quoted-bytes.ts";
import { jsonl } from "../formats/jsonl.ts";
import { messages } from "../formats/messages.ts";
import { formatOptions } from "../formats/index.ts";
import type { FormatOptionValues } from "../pipeline/format.ts";
import { Pipeline } from "../pipeline/run.ts";
import { captureSource } from "../pipeline/sources.ts";
import { SinkError } from "../pipeline/sink.ts";
import { writableSink } from "../sinks/stdout.ts";

const GZIP_MAGIC = 0x1f8b;

export const DECODE_USAGE = `usage: pgoutput-wasm decode FILE|- [options]

Decodes a capture file ([uint32 big-endian length][pgoutput message]...,
gzipped or not; - reads stdin), as written by pgoutput-wasm capture, to one
JSON object per message on stdout.

options:
  --backend wasm|baseline   decoder to use (default wasm)
  --stats                   print counts by message kind to stderr
  --values                  add typed column values (newValues, oldValues)
  --changes                 tail's output instead: one line per change, typed
                            (docs/cli-output.md); with
  --transactions            also print B (begin) and C (commit) lines
  --tables LIST             only these tables: schema.table or table; repeat or comma-separate
  --numbers-as-strings      int8 and numeric as JSON strings
  --format jsonl|pretty     one line per object (default), or indented

A message that does not decode: what decoded before it is printed, then one
line on stderr naming the message, the field and the byte offset in the
capture; exit code 1 (2 for bad options).
`;

export async function decodeCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      backend: { type: "string", default: "wasm" },
      stats: { type: "boolean", default: false },
      values: { type: "boolean", default: false },
      changes: { type: "boolean", default: false },
      format: { type: "string", default: "jsonl" },
      transactions: { type: "boolean", default: false },
      tables: { type: "string", multiple: true },
      "numbers-as-strings": { type: "boolean", default: false },
    },
  });
  const backend = values.backend;
  if (backend !== "wasm" && backend !== "baseline") throw usage(`--backend must be wasm or baseline, not ${backend}`);
  if (positionals.length !== 1) throw usage("decode takes one FILE (or - for stdin)");
  const layout = values.format;
  if (layout !== "jsonl" && layout !== "pretty") throw usage(`--format must be jsonl or pretty, not ${JSON.stringify(layout)}`);
  const changes = values.changes;
  if (!changes && (values.transactions || values.tables !== undefined || values["numbers-as-strings"])) {
    throw usage("--transactions, --tables and --numbers-as-strings go with --changes");
  }
  if (changes && values.values) throw usage("--values and --changes are two different outputs: pick one");
  const pretty = layout === "pretty";
  const file = positionals[0]!;
  const definition = changes ? jsonl : messages;
  const options: FormatOptionValues = changes
    ? { transactions: values.transactions, tables: (values.tables ?? []).flatMap((t) => t.split(",")).map((t) => t.trim()).filter((t) => t.length > 0), pretty, "numbers-as-strings": values["numbers-as-strings"] }
    : { values: values.values, pretty };
  const made = () => createDecoder({ backend, values: definition.values() });
  const decoder = await made();
  const counts = new Map<string, number>();
  let bytes = 0;
  let items = 0;
  // The capture's first bytes, to tell a file that is not a capture from one that fails to decode.
  let head = new Uint8Array(0);
  const started = performance.now();
  const pipeline = new Pipeline({
    source: captureSource(await openCapture(file), decoder, (chunk) => {
      if (head.length < HEAD) head = Uint8Array.from([...head, ...chunk.subarray(0, HEAD - head.length)]);
      bytes += chunk.length;
    }),
    format: definition.create({ decoder }, formatOptions(definition, options)),
    sink: writableSink(process.stdout),
    raw: definition.raw,
    replayDecoder: definition.raw ? undefined : await made(),
    // What decoded before a bad message is printed: a bug report shows where it broke.
    writePartial: true,
    onItem: (item) => {
      items++;
      counts.set(item.kind, (counts.get(item.kind) ?? 0) + 1);
    },
  });
  try {
    await pipeline.run();
  } catch (e) {
    // The reader went away (decode ... | head): stop quietly.
    if (e instanceof SinkError && (e.cause as NodeJS.ErrnoException | undefined)?.code === "EPIPE") return 0;
    if (!isPgoutputError(e) || items > 0 || looksLikeCapture(head)) throw e;
    throw new CliError(
      `${e.code}: ${e.message}`,
      `${file === "-" ? "stdin" : file} is not a capture file: it starts with ${quotedBytes(head)}, not [uint32 big-endian length][pgoutput message] (what pgoutput-wasm capture writes, gzipped or not)`,
    );
  }
  if (values.stats) {
    const seconds = (performance.now() - started) / 1000;
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    const lines = [...counts].sort((a, b) => b[1] - a[1]).map(([kind, n]) => `  ${kind.padEnd(18)} ${n}`);
    process.stderr.write(
      `${total} messages, ${bytes} bytes read in ${seconds.toFixed(3)} s (${decoder.backend})\n${lines.join("\n")}\n`,
    );
  }
  return 0;
}

/** How many of a capture's first bytes are kept: a frame header and a little more to show. */
const HEAD = 16;

/** Whether a capture's first bytes begin a frame: a length a message may have, then a pgoutput message tag. */
function looksLikeCapture(head: Uint8Array): boolean {
  if (head.length < 5) return false;
  const length = ((head[0]! << 24) | (head[1]! << 16) | (head[2]! << 8) | head[3]!) >>> 0;
  return length >= 1 && length <= MAX_MESSAGE_SIZE && layoutOf(head[4]!) !== undefined;
}

/** The file (or stdin) as a stream of raw capture bytes, gunzipped when it starts with gzip's magic. */
async function openCapture(file: string): Promise<Readable> {
  const input: Readable = file === "-" ? process.stdin : createReadStream(file, { highWaterMark: 64 * 1024 });
  const first = await peekTwo(input);
  return first === GZIP_MAGIC ? input.pipe(createGunzip({ chunkSize: 64 * 1024 })) : input;
}

/** Reads the first two bytes and puts them back. */
async function peekTwo(input: Readable): Promise<number> {
  return new Promise((resolve, reject) => {
    const onReadable = () => {
      const head = input.read(2) as Buffer | null;
      if (head === null) {
        if (input.readableEnded) done(-1);
        return;
      }
      input.unshift(head);
      done(head.length === 2 ? (head[0]! << 8) | head[1]! : -1);
    };
    const done = (v: number) => {
      input.off("readable", onReadable);
      input.off("error", reject);
      input.off("end", onEnd);
      resolve(v);
    };
    const onEnd = () => done(-1);
    input.on("readable", onReadable);
    input.once("error", reject);
    input.once("end", onEnd);
  });
}
