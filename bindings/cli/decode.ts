/**
 * `pgoutput-wasm decode FILE|-`: reads a capture file — repeated
 * `[uint32 big-endian length][pgoutput message]`, gzipped or not — in 64 KB
 * chunks and writes one JSON object per message (JSON Lines). LSNs are
 * `X/Y` strings, 64-bit numbers decimal strings, tuple columns
 * `{kind, text}` / `{kind, base64}` / `null` / `{kind: "unchanged"}`; with
 * `--values` also the typed values by column name.
 *
 * `--format NAME` writes any output format instead (`--changes` is
 * `--format jsonl`, tail's lines: docs/cli-output.md), with its options
 * (`-o NAME=VALUE`). A capture has no XLogData headers, so change lines
 * carry no `lsn` of their own (B/C lines with `--transactions` do).
 */
import { createReadStream } from "node:fs";
import { createGunzip } from "node:zlib";
import type { Readable } from "node:stream";
import { createDecoder } from "../create-decoder.ts";
import { CliError, usage } from "./errors.ts";
import { isPgoutputError } from "../errors.ts";
import { layoutOf } from "../layout.ts";
import { MAX_MESSAGE_SIZE } from "../limits.ts";
import { quotedBytes } from "../quoted-bytes.ts";
import { Pipeline } from "../pipeline/run.ts";
import { captureSource } from "../pipeline/sources.ts";
import { SinkError } from "../pipeline/sink.ts";
import { writableSink } from "../sinks/stdout.ts";
import type { Command } from "./command.ts";
import { BACKEND, NUMBERS_AS_STRINGS, TABLES, TRANSACTIONS, type Flag, type FlagValues } from "./flags.ts";
import { FORMAT, OPTION, chosenFormat, headersUsage } from "./output.ts";

const GZIP_MAGIC = 0x1f8b;

const VALUES: Flag = { name: "values", type: "boolean", default: false, formatOption: "values", description: "add typed column values (newValues, oldValues)" };
const CHANGES: Flag = {
  name: "changes", type: "boolean", default: false,
  description: "tail's output instead (--format jsonl): one line per change, typed\n(docs/cli-output.md), shaped by the next three flags",
};
/** tail's --format, whose default here is every message as sent (`messages`); `pretty` indents the one chosen. */
const DECODE_FORMAT: Flag = { ...FORMAT, default: undefined, description: FORMAT.description.replace("(default jsonl)", "(default messages; pretty: the chosen one, indented)") };
const STATS: Flag = { name: "stats", type: "boolean", default: false, description: "print counts by message kind to stderr (counting views every\nmessage: --changes runs slower with it)" };

const sections = [{ title: "options", flags: [BACKEND, STATS, DECODE_FORMAT, OPTION, VALUES, CHANGES, TRANSACTIONS, TABLES, NUMBERS_AS_STRINGS] }];

export const decode: Command = {
  name: "decode",
  synopsis: "FILE|- [options]",
  summary: "decode a capture file (gzipped or not) to JSON Lines, or tail's lines",
  examples: ["npx pgoutput-wasm decode capture.bin.gz --changes --stats"],
  description: `Decodes a capture file ([uint32 big-endian length][pgoutput message]...,
gzipped or not; - reads stdin), as written by pgoutput-wasm capture, to one
JSON object per message on stdout.`,
  sections,
  notes: `A message that does not decode: what decoded before it is printed, then one
line on stderr naming the message, the field and the byte offset in the
capture; exit code 1 (2 for bad options).`,
  positionals: true,
  run: decodeCommand,
};

async function decodeCommand(values: FlagValues, positionals: string[]): Promise<number> {
  const backend = values.backend as "wasm" | "baseline";
  if (positionals.length !== 1) throw usage("decode takes one FILE (or - for stdin)");
  const changes = values.changes === true;
  const layoutOnly = values.format === undefined || values.format === "pretty";
  if (changes && !layoutOnly) throw usage("--changes is --format jsonl: give one of them");
  const file = positionals[0]!;
  const chosen = chosenFormat(values, sections[0]!.flags, layoutOnly ? (changes ? "jsonl" : "messages") : (values.format as string));
  const definition = chosen.format;
  const options = values.format === "pretty" ? { ...chosen.options, pretty: true } : chosen.options;
  if (definition.headers?.(options) === true) throw headersUsage(definition, "stdout");
  const made = () => createDecoder({ backend, values: definition.values(undefined, options) });
  const decoder = await made();
  const counts = new Map<string, number>();
  let bytes = 0;
  // The capture's first bytes, to tell a file that is not a capture from one that fails to decode.
  let head = new Uint8Array(0);
  const started = performance.now();
  const pipeline = new Pipeline({
    source: captureSource(await openCapture(file), decoder, (chunk) => {
      if (head.length < HEAD) head = Uint8Array.from([...head, ...chunk.subarray(0, HEAD - head.length)]);
      bytes += chunk.length;
    }),
    format: definition.create({ decoder }, options),
    sink: writableSink(process.stdout),
    raw: definition.raw,
    replayDecoder: definition.raw ? undefined : await made(),
    // What decoded before a bad message is printed: a bug report shows where it broke.
    writePartial: true,
    // Only for --stats: a pipeline given onItem makes a view of every message (no whole lines from the kernel).
    onItem: values.stats === true ? (item) => void counts.set(item.kind, (counts.get(item.kind) ?? 0) + 1) : undefined,
  });
  try {
    await pipeline.run();
  } catch (e) {
    // The reader went away (decode ... | head): stop quietly.
    if (e instanceof SinkError && (e.cause as NodeJS.ErrnoException | undefined)?.code === "EPIPE") return 0;
    if (!isPgoutputError(e) || pipeline.stats.items > 0 || looksLikeCapture(head)) throw e;
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
