/** What a Pipeline (run.ts) is given, counts and returns. */
import type { PgoutputDecoder } from "../decoder.ts";
import type { Format } from "./format.ts";
import type { Sink } from "./sink.ts";
import type { PipelineSource, SourceItem } from "./sources.ts";

export interface PipelineOptions {
  source: PipelineSource;
  format: Format;
  sink: Sink;
  /** The decoder streamed transactions are replayed with (made like the source's, used for nothing else); needed for `streaming` on, unless `raw`. */
  replayDecoder?: PgoutputDecoder;
  /**
   * Streamed transactions are held until their StreamCommit: in memory up to
   * this many bytes for all of them together (default 32 MiB), beyond it in
   * temporary files (resequence.ts).
   */
  maxHeldBytes?: number;
  /** Where those files are made (default the OS temp directory). */
  tempDir?: string;
  /** The format takes the messages as sent, streamed blocks included (FormatDefinition.raw). */
  raw?: boolean;
  /** In flight at most (default 10,000 records, 16 MiB). */
  window?: { records?: number; bytes?: number };
  /** A batch is written at a transaction's end once it holds this much (default 64 KiB), */
  batchBytes?: number;
  /** … and in the middle of a transaction once it holds this much (default 1 MiB). */
  holdBytes?: number;
  /** Stop after this many records. */
  limit?: number;
  /** How long stop() waits for the writes in flight (default 10 s). */
  drainTimeoutMs?: number;
  /** At the end, also write the records of the last, unfinished transaction (`decode` of a capture shows all it read). */
  writePartial?: boolean;
  /** RelationChanged items for Relation messages that change their table's shape (default true). */
  relationChanges?: boolean;
  /** The DDL trigger's messages (pg/ddl.ts) as Ddl items (default false: they are Messages like any other). */
  ddl?: boolean;
  /** `false`: logical messages other than the DDL trigger's are dropped (the stream asks for messages for `ddl`). Default true. */
  messages?: boolean;
  /**
   * Every item as it is reached, before it is formatted (a status line, a
   * demo's bookkeeping). Given one, the pipeline makes a view of every
   * message: a format's whole-batch path (Format.pushBatch) is not taken.
   */
  onItem?: (item: SourceItem) => void;
  /** A transaction end was confirmed to the source (its records, and all before, are durable). */
  onAck?: (lsn: bigint) => void;
}

export interface PipelineStats {
  /** Items read from the source. */
  items: number;
  /** Records handed to the sink, and their bytes. */
  records: number;
  bytes: number;
  /** Records the sink confirmed. */
  durable: number;
  /** Records and bytes in flight. */
  inFlight: number;
  inFlightBytes: number;
  /** Sink writes. */
  writes: number;
  /** Records not written again because the destination had them (after a restart or reconnect). */
  skipped: number;
  /** The position confirmed to the source last, */
  acked: bigint | undefined;
  /** … and the confirmations made. */
  acks: number;
}

/** How a run ended. */
export interface PipelineResult {
  /** `stopped`: stop() or the limit; `ended`: the source ended. */
  reason: "stopped" | "limit" | "ended";
  stats: PipelineStats;
}
