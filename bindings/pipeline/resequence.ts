/**
 * Streamed (in-progress) transactions replayed as plain ones, so that a
 * format only ever sees Begin … Commit. With `streaming` on, a large
 * transaction's changes come in StreamStart … StreamStop blocks that
 * interleave with other transactions; they are held as the bytes the
 * server sent (each message with its XLogData positions) and, at the
 * StreamCommit, decoded again by a decoder of their own and handed on
 * between a Begin and a Commit made from the StreamCommit's fields
 * (StreamPrepare: BeginPrepare … Prepare). A StreamAbort drops the
 * transaction, or the changes of the subtransaction it names.
 *
 * Memory: what is held stays in memory up to `maxHeldBytes` for all the
 * transactions held together; a transaction that would pass it goes to a
 * temporary file of its own (held-log.ts: unlinked at once, so nothing is
 * left whatever ends the process), and the replay reads it back a few MiB
 * at a time (streamed-replay.ts). So a streamed transaction of any size
 * goes through in bounded memory; the price is its bytes written to and
 * read from the temp directory once.
 */
import type { PgoutputDecoder } from "../decoder.ts";
import { HeldBudget } from "../held-log.ts";
import type { PgoutputMessage } from "../messages.ts";
import { StreamedTransactions } from "../streamed-transactions.ts";
import { hold, replayed } from "../streamed-replay.ts";

/** Default memory for the streamed transactions held: beyond it they go to temporary files. */
export const DEFAULT_HELD_BYTES = 32 << 20;

export interface ResequencerOptions {
  /** Bytes held in memory for all streamed transactions together (default 32 MiB); beyond, in temporary files. */
  maxHeldBytes?: number;
  /** Where the temporary files are made (default the OS temp directory). */
  tempDir?: string;
}

/** The parts of a synthetic Begin / Commit / BeginPrepare / Prepare that formats read. */
function synthetic<T extends Record<string, unknown>>(fields: T): PgoutputMessage {
  const plain = { ...fields };
  return {
    ...plain,
    bytes: () => {
      throw new TypeError(`${String(fields.kind)} made from a streamed transaction's end has no bytes of its own`);
    },
    materialize: () => ({ ...plain }),
    toJSON: () => ({ ...plain }),
  } as unknown as PgoutputMessage;
}

export class StreamResequencer {
  readonly #held: StreamedTransactions;
  readonly #decoder: PgoutputDecoder;

  /** `replay`: a decoder made like the stream's (the same value options), used for nothing else. */
  constructor(replay: PgoutputDecoder, options: ResequencerOptions = {}) {
    this.#decoder = replay;
    this.#held = new StreamedTransactions(new HeldBudget(options.maxHeldBytes ?? DEFAULT_HELD_BYTES, options.tempDir));
  }

  /** Whether `msg` must go through push(): a streaming message, or one inside a block. Every other message passes as it is. */
  takes(msg: { kind: string }): boolean {
    return this.#held.blockXid !== undefined || msg.kind.startsWith("Stream");
  }

  /** Streamed transactions held. */
  get held(): number {
    return this.#held.size;
  }

  /** Memory held now and at most, and the transactions that went to a file. */
  get heldStats(): { bytes: number; highWater: number; spills: number } {
    const b = this.#held.budget;
    return { bytes: b.used, highWater: b.highWater, spills: b.spills };
  }

  /**
   * Feeds one message in stream order; yields what a format should see
   * instead: the message itself outside blocks, nothing for a message
   * held, a whole transaction at its StreamCommit / StreamPrepare.
   * Views yielded are valid until the next one is asked for.
   */
  *push(msg: PgoutputMessage): Generator<PgoutputMessage> {
    switch (msg.kind) {
      case "StreamStart":
        this.#held.start(msg.xid, msg.firstSegment);
        return;
      case "StreamStop":
        this.#held.stop();
        return;
      case "StreamAbort":
        this.#held.abort(msg.xid, msg.subXid);
        return;
      case "StreamCommit":
      case "StreamPrepare": {
        const held = this.#held.take(msg.xid);
        const commit = msg.kind === "StreamCommit";
        yield commit
          ? synthetic({ kind: "Begin", streamed: true, xid: msg.xid, finalLsn: msg.commitLsn, commitTime: msg.commitTime })
          : synthetic({ kind: "BeginPrepare", streamed: true, xid: msg.xid, gid: msg.gid, prepareLsn: msg.prepareLsn, endLsn: msg.endLsn, prepareTime: msg.prepareTime });
        if (held !== undefined) yield* replayed(held.log, this.#decoder);
        yield commit
          ? synthetic({ kind: "Commit", streamed: true, flags: 0, commitLsn: msg.commitLsn, endLsn: msg.endLsn, commitTime: msg.commitTime, walStart: msg.walStart })
          : synthetic({ kind: "Prepare", streamed: true, flags: 0, xid: msg.xid, gid: msg.gid, prepareLsn: msg.prepareLsn, endLsn: msg.endLsn, prepareTime: msg.prepareTime, walStart: msg.walStart });
        return;
      }
      default:
        if (this.#held.blockXid === undefined) {
          yield msg;
          return;
        }
        hold(this.#held, msg);
    }
  }

  /** Forgets what is held (the stream starts over after a reconnect). */
  reset(): void {
    this.#held.reset();
  }
}
