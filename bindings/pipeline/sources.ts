/**
 * Pipeline sources: a replication stream, a stream that starts with its
 * initial snapshot, and a capture file (repeated `[uint32 length][message]`,
 * as `capture` writes it) decoded in chunks.
 */
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import { isPgoutputError } from "../errors.ts";
import { messageIteration, underived, type ReplicationStream } from "../pg/stream.ts";
import type { SnapshotReplication } from "../pg/snapshot.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { SnapshotComplete, SnapshotRow } from "../snapshot-items.ts";
import type { BackfillItem } from "../backfill-items.ts";
import type { PrimaryKeepalive } from "../walsender.ts";

/** What a source yields. */
export type SourceItem = PgoutputMessage | PrimaryKeepalive | SnapshotRow | SnapshotComplete | BackfillItem;

/** Where a pipeline's items come from. */
export interface PipelineSource {
  /** Items in stream order; a view is valid until the next one is asked for. */
  [Symbol.asyncIterator](): AsyncIterator<SourceItem>;
  /** Confirms every transaction that ends at or before `lsn`. */
  ack(lsn: bigint): void;
  /** Ends the source, reporting what was confirmed. */
  stop(): Promise<void>;
  /** Whether more is received already (the pipeline writes a batch before it would wait for more). */
  readonly ready?: boolean;
  /**
   * The next item, when the source holds it already (undefined otherwise):
   * the same item the iterator's next `next()` would give, with no promise.
   * The pipeline takes these between `next()` calls.
   */
  takeReady?(): SourceItem | undefined;
  /**
   * The decoded batch the next items come from and the index of the next
   * one, when the source holds it already; `skipReady(n)` passes over n of
   * them (taken from the batch by the format, Format.pushBatch).
   */
  readyBatch?(): { readonly batch: Batch; readonly index: number } | undefined;
  skipReady?(n: number): void;
  /**
   * Offers the item `next()` gave last again, as the ready batch's next
   * one (readyBatch, takeReady), when the source can: so the first message
   * of each batch can be a format's pushBatch's too. False: it cannot.
   */
  putBack?(): boolean;
  /** Counts the source's connections: when it changes, the source started over from what was confirmed. */
  readonly generation?: number;
  /** The snapshot's consistent point, when the source starts with a snapshot. */
  readonly consistentPoint?: bigint;
}

export interface StreamSourceOptions {
  /** `false`: the pipeline's confirmations are not passed on (the slot is acknowledged some other way, or never). Default true. */
  acknowledge?: boolean;
}

/**
 * A replication stream: acknowledged through `ack()` (make it with `ack: "manual"`, or auto acks run ahead of the sink).
 * Its iteration yields the messages as sent: the pipeline derives RelationChanged and Ddl items itself.
 */
export function streamSource(stream: ReplicationStream, options: StreamSourceOptions = {}): PipelineSource {
  if (stream.ackMode !== "manual") throw new TypeError('a pipeline acknowledges what its sink made durable: make the stream with ack: "manual"');
  underived(stream);
  const acknowledge = options.acknowledge !== false;
  let iteration: ReturnType<typeof messageIteration> | undefined;
  return {
    [Symbol.asyncIterator]: () => (iteration = messageIteration(stream)) as AsyncIterator<SourceItem>,
    takeReady: () => iteration?.takeReady() as SourceItem | undefined,
    readyBatch: () => iteration?.readyBatch() as { readonly batch: Batch; readonly index: number } | undefined,
    skipReady: (n) => iteration!.skipReady(n),
    ack: (lsn) => void (acknowledge && stream.ack(lsn)),
    stop: () => stream.stop(),
    get ready() {
      return stream.ready;
    },
    get generation() {
      return stream.generation;
    },
  };
}

/** Snapshot rows, then the stream's messages (`replicate({ snapshot })`, with `ack: "manual"`). */
export function snapshotSource(run: SnapshotReplication, options: StreamSourceOptions = {}): PipelineSource {
  const stream = streamSource(run.stream, options);
  return {
    [Symbol.asyncIterator]: () => run[Symbol.asyncIterator]() as AsyncIterator<SourceItem>,
    ack: (lsn) => stream.ack(lsn),
    stop: () => run.stop(),
    get ready() {
      return stream.ready;
    },
    get generation() {
      return stream.generation;
    },
    consistentPoint: run.consistentPoint,
  };
}

/**
 * A capture's bytes (split anywhere, e.g. a file read in chunks) through
 * `decoder.push()`. Nothing to acknowledge. A decode error is thrown after
 * the messages before it were yielded, with its offset and message index
 * counted from the start of the capture (`PgoutputError.withDetails`).
 */
export function captureSource(chunks: AsyncIterable<Uint8Array>, decoder: PgoutputDecoder, onChunk?: (chunk: Uint8Array) => void): PipelineSource {
  let batch: { length: number; get(i: number): SourceItem } | undefined;
  let index = 0;
  return {
    async *[Symbol.asyncIterator]() {
      // Offsets in push() errors count from the decoder's unfinished frame; `base` is where that starts.
      let base = 0;
      let before = 0;
      try {
        for await (const chunk of chunks) {
          onChunk?.(chunk);
          const b = decoder.push(chunk);
          base += b.consumed;
          before += b.length;
          batch = b as typeof batch;
          for (index = 0; index < b.length; ) yield b.get(index++) as SourceItem;
        }
        decoder.end();
      } catch (error) {
        batch = undefined; // what follows is not the batch's
        if (!isPgoutputError(error)) throw error;
        for (const msg of error.decoded) yield msg as SourceItem;
        throw error.withDetails({
          offset: error.offset === undefined ? undefined : base + error.offset,
          messageIndex: error.messageIndex === undefined ? undefined : before + error.messageIndex,
        });
      } finally {
        batch = undefined;
      }
    },
    ack: () => {},
    stop: async () => {},
    get ready() {
      return batch !== undefined && index < batch.length;
    },
    // The rest of the decoded chunk: the iterator goes on after what this took.
    takeReady: () => (batch !== undefined && index < batch.length ? batch.get(index++) : undefined),
    readyBatch: () => (batch !== undefined && index < batch.length ? { batch: batch as Batch, index } : undefined),
    skipReady: (n) => void (index += n),
    // The generator goes on from `index`, wherever the batch's takers left it.
    putBack: () => {
      if (batch === undefined || index === 0) return false;
      index--;
      return true;
    },
  };
}
