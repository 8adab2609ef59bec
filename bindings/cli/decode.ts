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
import { PgoutputError, isPgoutputError } from "../errors.ts";
import type { MessageKind, PgoutputMessage } from "../messages.ts";
import type { Tuple } from "../tuple.ts";
import type { WalMessage } from "../walsender.ts";
import { toJsonValue } from "../values/json.ts";
import { changeValueOptions, lineText } from "./format.ts";
import { JsonLinesWriter } from "../jsonl/writer.ts";
import { CliError, usage } from "./errors.ts";
import { layoutOf } from "../layout.ts";
import { MAX_MESSAGE_SIZE } from "../limits.ts";
import { quotedBytes } from "../quoted-bytes.ts";

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
  const format = values.format;
  if (format !== "jsonl" && format !== "pretty") throw usage(`--format must be jsonl or pretty, not ${JSON.stringify(format)}`);
  const changes = values.changes;
  if (!changes && (values.transactions || values.tables !== undefined || values["numbers-as-strings"])) {
    throw usage("--transactions, --tables and --numbers-as-strings go with --changes");
  }
  if (changes && values.values) throw usage("--values and --changes are two different outputs: pick one");
  const pretty = format === "pretty";
  const file = positionals[0]!;
  // The reader went away (decode ... | head): stop quietly.
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(0);
  });
  const decoder = await createDecoder(changes ? { backend, values: changeValueOptions() } : { backend });
  // Change lines are written as bytes (bindings/jsonl): no JS string per value.
  const writer = changes
    ? new JsonLinesWriter({
        transactions: values.transactions,
        tables: (values.tables ?? []).flatMap((t) => t.split(",")).map((t) => t.trim()).filter((t) => t.length > 0),
        pretty,
        numbersAsStrings: values["numbers-as-strings"],
        types: decoder.types,
      })
    : undefined;
  const counts = new Map<MessageKind, number>();
  let bytes = 0;
  const started = performance.now();

  const print = async (messages: Iterable<WalMessage>): Promise<void> => {
    let out = "";
    for (const msg of messages) {
      if (writer !== undefined) {
        writer.push(msg as PgoutputMessage);
      } else {
        const obj = values.values ? withValues(msg as PgoutputMessage) : msg.toJSON();
        out += (pretty ? lineText(obj, true, false) : JSON.stringify(obj)) + "\n";
      }
      counts.set(msg.kind as MessageKind, (counts.get(msg.kind as MessageKind) ?? 0) + 1);
    }
    const bytes = writer?.take();
    if (bytes !== undefined ? bytes.length > 0 && !process.stdout.write(bytes) : out.length > 0 && !process.stdout.write(out)) {
      await new Promise((resolve) => process.stdout.once("drain", resolve));
    }
  };
  // Offsets in push() errors count from the decoder's unfinished frame; `base` is where that starts in the file.
  let base = 0;
  // Message indexes in push() errors count within that push; `before` is how many came before it.
  let before = 0;
  // The capture's first bytes, to tell a file that is not a capture from one that fails to decode.
  let head = new Uint8Array(0);
  try {
    for await (const chunk of await openCapture(file)) {
      const u8 = chunk as Uint8Array;
      if (head.length < HEAD) head = Uint8Array.from([...head, ...u8.subarray(0, HEAD - head.length)]);
      bytes += u8.length;
      const batch = decoder.push(u8);
      base += batch.consumed;
      before += batch.length;
      await print(batch);
    }
    decoder.end();
  } catch (error) {
    if (!isPgoutputError(error)) throw error;
    // What decoded before the bad message is printed first: a bug report shows where it broke.
    await print(error.decoded);
    const located = inFile(error, base, before);
    if (before + error.decoded.length > 0 || looksLikeCapture(head)) throw located;
    throw new CliError(
      `${located.code}: ${located.message}`,
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

/** The same error with its offset and message index counted from the start of the (decompressed) capture. */
function inFile(error: PgoutputError, base: number, before: number): PgoutputError {
  return error.withDetails({
    offset: error.offset === undefined ? undefined : base + error.offset,
    messageIndex: error.messageIndex === undefined ? undefined : before + error.messageIndex,
  });
}

/**
 * The message's JSON with typed column values added: `newValues` /
 * `oldValues` by column name (by position when the relation is unknown),
 * unchanged TOAST as `{"unchanged": true}`, 64-bit numbers as strings.
 */
function withValues(msg: PgoutputMessage): Record<string, unknown> {
  const json = msg.toJSON();
  if (msg.kind === "Insert" || msg.kind === "Update") json.newValues = tupleJson(msg.newTuple);
  if ((msg.kind === "Update" || msg.kind === "Delete") && msg.oldTuple !== null) json.oldValues = tupleJson(msg.oldTuple);
  return json;
}

function tupleJson(t: Tuple): unknown {
  return toJsonValue(t.relation !== undefined ? t.toObject() : t.values());
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
