/**
 * pgoutput-wasm/pipeline: source → format → sink, with acknowledgements
 * that follow durability (run.ts). A source is a replication stream, a
 * stream that starts with its snapshot, or a capture file; a format turns
 * messages into records (JSON Lines, the messages as sent, or your own); a
 * sink makes them durable (stdout, a file, or your own) and says when. The
 * CLI's `tail` and `decode` are compositions of these. For Node, Deno and
 * Bun: the file sink uses node:fs and node:zlib.
 *
 * @example
 * ```ts
 * import { createDecoder } from "pgoutput-wasm";
 * import { replicate } from "pgoutput-wasm/pg";
 * import { FORMATS, Pipeline, openSink, streamSource } from "pgoutput-wasm/pipeline";
 * const jsonl = FORMATS.jsonl!;
 * const decoder = await createDecoder({ values: jsonl.values() }); // the values the format writes
 * const stream = await replicate({ connection, slot: "app_cdc", publications: "app", ack: "manual", decoder });
 * const format = jsonl.create({ decoder }, { transactions: true });
 * await new Pipeline({ source: streamSource(stream), format, sink: await openSink("file:changes.jsonl") }).run();
 * ```
 */
export {
  Pipeline, type PipelineOptions, type PipelineResult, type PipelineSource, type PipelineStats, type SourceItem,
} from "./run.ts";
export { captureSource, snapshotSource, streamSource, type StreamSourceOptions } from "./sources.ts";
export { Records, type RecordInfo, type RecordKind, type RecordTransaction } from "./records.ts";
export { changeId, compareChangePositions, parseChangeId, type ChangePosition } from "./change-id.ts";
export { StreamResequencer, type ResequencerOptions } from "./resequence.ts";
export type { Format, FormatContext, FormatDefinition, FormatItem, FormatOptionSpec, FormatOptionValues } from "./format.ts";
export { SinkError, headersRefused, type Sink, type SinkDefinition } from "./sink.ts";
export { SinkMeter } from "../sinks/meter.ts";
export {
  METRICS_CONTENT_TYPE, formatExposition, metricsText,
  type MetricFamily, type MetricLabels, type MetricSample, type MetricsSource,
} from "../metrics/exposition.ts";
export { FORMATS, formatNamed, formatOptions } from "../formats/index.ts";
export { JsonLinesWriter, changesToJsonLines, type JsonLinesOptions } from "../jsonl/writer.ts";
export { changeValueOptions } from "../jsonl/json-text.ts";
export { SINKS, openSink, sinkFor } from "../sinks/index.ts";
export { writableSink, type WritableSinkOptions } from "../sinks/stdout.ts";
export { fileSink, type FileSinkOptions } from "../sinks/file.ts";
