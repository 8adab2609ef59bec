/**
 * The competitors and how each is fed one whole corpus per benchmark op.
 *
 * - `wasm`, `baseline`: this package's two decoders, fed the 64 KB chunks
 *   through `push()` (the native API; the compat case uses the drop-in
 *   plugin, see below).
 * - `pg-logical-replication`: its `PgoutputPlugin` through its public entry,
 *   `plugin.parse(buffer)` once per message (what its
 *   LogicalReplicationService calls per XLogData). Its form takes whole
 *   messages only, so it gets the corpus pre-split (splitting is not timed).
 *   It decodes protocol 1 only (no Stream Start/Stop, no streamed xids).
 * - `js-walk`: the plain-JS structural walk of walk.ts, fed the 64 KB chunks
 *   (`kernel` case only).
 * - `js-formatter` (`jsonl` case only): the same JSON Lines through the JS
 *   path alone (JsonLinesWriter with `kernel: false`, every value a JS
 *   value) over a wasm decoder: what the kernel's columns are measured against.
 *
 * The compat case runs this package's `PgoutputPlugin` drop-in
 * (bindings/compat) with a wasm or baseline decoder, fed like
 * pg-logical-replication: `parse(buffer)` per pre-split message.
 */
import { PgoutputPlugin } from "pg-logical-replication";
import type { Pgoutput } from "pg-logical-replication";
import { BaselineDecoder, WasmDecoder } from "../bindings/index.ts";
import {
  JsonLinesWriter, Pipeline, Records, StreamResequencer, captureSource, changeValueOptions, formatNamed, formatOptions, type FormatOptionValues, type Sink,
} from "../bindings/pipeline/index.ts";
import type { PgoutputDecoder, PgoutputMessage } from "../bindings/index.ts";
import { PgoutputWasmPlugin } from "../bindings/compat/index.ts";
import type { AnyMessage } from "../bindings/compat/types.ts";
import type { BenchInput } from "./input.ts";
import type { ProtocolVersion } from "../bindings/layout.ts";
import { StructuralWalk } from "./walk.ts";

export type CompetitorId = "wasm" | "baseline" | "pg-logical-replication" | "js-walk" | "js-formatter";
export const COMPETITORS: readonly CompetitorId[] = ["wasm", "baseline", "pg-logical-replication", "js-walk", "js-formatter"];

export type InputForm = "64 KB chunks" | "pre-split messages";

/** pg-logical-replication's message type. */
export type PlrMessage = Pgoutput.Message;

/** Receives a checksum contribution per message, so that no work is dead code. */
export type Touch<M> = (msg: M) => number;

/** Where every pass adds its checksum; printed at the end so V8 must compute it. */
export const sink = { value: 0 };

export interface Competitors {
  wasm: WasmDecoder;
  baseline: BaselineDecoder;
  plr: PgoutputPlugin;
  walk: StructuralWalk;
  compatWasm: PgoutputWasmPlugin;
  compatBaseline: PgoutputWasmPlugin;
  /** Decoders with the change lines' value options (the jsonl case). */
  jsonlWasm: WasmDecoder;
  jsonlBaseline: BaselineDecoder;
}

export function makeCompetitors(input: BenchInput): Competitors {
  const protoVersion = Number(input.info?.options.proto_version ?? 1) as ProtocolVersion;
  const publicationNames = [input.info?.options.publication_names ?? "corpus_pub"];
  return {
    wasm: new WasmDecoder(),
    baseline: new BaselineDecoder(),
    // Its options type stops at 2; parse() ignores the options anyway.
    plr: new PgoutputPlugin({ protoVersion: Math.min(protoVersion, 2) as 1 | 2, publicationNames }),
    walk: new StructuralWalk(),
    compatWasm: new PgoutputWasmPlugin({ protoVersion, publicationNames, decoder: new WasmDecoder() }),
    compatBaseline: new PgoutputWasmPlugin({ protoVersion, publicationNames, decoder: new BaselineDecoder() }),
    jsonlWasm: new WasmDecoder({ values: changeValueOptions() }),
    jsonlBaseline: new BaselineDecoder({ values: changeValueOptions() }),
  };
}

/** Pushes every chunk; returns the number of messages. Without `touch`, only the decode (the kernel case). */
export function decoderPass(d: PgoutputDecoder, chunks: readonly Uint8Array[], touch?: Touch<PgoutputMessage>): number {
  let n = 0;
  let sum = 0;
  if (touch === undefined) {
    for (let c = 0; c < chunks.length; c++) n += d.push(chunks[c]!).length;
  } else {
    for (let c = 0; c < chunks.length; c++) {
      const batch = d.push(chunks[c]!);
      const len = batch.length;
      for (let i = 0; i < len; i++) sum += touch(batch.get(i));
      n += len;
    }
  }
  d.end();
  sink.value = (sink.value + sum) | 0;
  return n;
}

/** pg-logical-replication: parse() per message. */
export function plrPass(plugin: PgoutputPlugin, messages: readonly Buffer[], touch: Touch<PlrMessage>): number {
  let sum = 0;
  for (let i = 0; i < messages.length; i++) sum += touch(plugin.parse(messages[i]!));
  sink.value = (sink.value + sum) | 0;
  return messages.length;
}

/** This package's pg-logical-replication drop-in: parse() per message. */
export function compatPass(plugin: PgoutputWasmPlugin, messages: readonly Buffer[], touch: Touch<AnyMessage>): number {
  let sum = 0;
  for (let i = 0; i < messages.length; i++) sum += touch(plugin.parse(messages[i]!));
  sink.value = (sink.value + sum) | 0;
  return messages.length;
}

export function walkPass(walk: StructuralWalk, chunks: readonly Uint8Array[]): number {
  let n = 0;
  for (let c = 0; c < chunks.length; c++) n += walk.push(chunks[c]!);
  walk.end();
  sink.value = (sink.value + walk.sum) | 0;
  return n;
}

/** Bytes of JSON Lines the last jsonl pass wrote (for output MB/s). */
export interface OutputCount {
  bytes: number;
}

/**
 * `decode --changes` (`decode --format F -o …`) without the file and
 * stdout: a Pipeline over the chunks (captureSource, the format, a sink
 * that counts the bytes it is handed); what the CLI does between its read
 * and its write. `batches: false`: the source offers no batch, so every
 * message takes the format's push(), its JS path.
 */
export async function pipelinePass(
  d: PgoutputDecoder, replay: PgoutputDecoder, chunks: readonly Uint8Array[], out: OutputCount, format = "jsonl", options: FormatOptionValues = {}, batches = true,
): Promise<number> {
  let bytes = 0;
  const source = captureSource((async function* () {
    yield* chunks;
  })(), d);
  // Without the source's batch, every message goes through the format's push(): its JS path.
  if (!batches) delete (source as { readyBatch?: unknown }).readyBatch;
  const recordSink: Sink = { name: "count", write: async (r) => void (bytes += r.bytes.len), close: async () => {} };
  const definition = formatNamed(format);
  const result = await new Pipeline({ source, format: definition.create({ decoder: d }, formatOptions(definition, options)), sink: recordSink, replayDecoder: replay }).run();
  out.bytes = bytes;
  sink.value = (sink.value + bytes) | 0;
  return result.stats.items;
}

/**
 * `decode --changes` over the chunks: JsonLinesWriter's bytes per chunk
 * (`lines`: whole lines from the kernel, pushBatch; else per message, the
 * kernel writing the columns; `kernel: false`: the JS path alone).
 */
export function jsonlPass(d: PgoutputDecoder, chunks: readonly Uint8Array[], out: OutputCount, kernel = true, lines = kernel): number {
  const writer = new JsonLinesWriter({ decoder: d, kernel });
  // Made at the first streamed block: a decoder per pass would be part of what is timed.
  let replay: StreamResequencer | undefined;
  const records = new Records();
  let n = 0;
  let bytes = 0;
  for (let c = 0; c < chunks.length; c++) {
    const batch = d.push(chunks[c]!);
    const len = batch.length;
    // The kernel writes the lines it can (pushBatch); each message it leaves goes through push().
    for (let i = lines ? writer.pushBatch(batch, 0, records) : 0; i < len; i = lines ? writer.pushBatch(batch, i + 1, records) : i + 1) {
      const m = batch.get(i);
      if (m.kind === "StreamStart") replay ??= new StreamResequencer(d.backend === "wasm" ? new WasmDecoder({ values: changeValueOptions() }) : new BaselineDecoder({ values: changeValueOptions() }));
      if (replay?.takes(m) === true) for (const plain of replay.push(m)) writer.push(plain, records);
      else writer.push(m, records);
    }
    bytes += records.bytes.len;
    records.clear();
    n += len;
  }
  d.end();
  out.bytes = bytes;
  sink.value = (sink.value + bytes) | 0;
  return n;
}

/** The same lines through the JS path alone (JsonLinesWriter with `kernel: false`): what the kernel's columns are measured against. */
export function formatterPass(d: PgoutputDecoder, chunks: readonly Uint8Array[], out: OutputCount): number {
  return jsonlPass(d, chunks, out, false);
}
