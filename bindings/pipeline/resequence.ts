/**
 * Streamed (in-progress) transactions replayed as plain ones, so that a
 * format only ever sees Begin … Commit. With `streaming` on, a large
 * transaction's changes come in StreamStart … StreamStop blocks that
 * interleave with other transactions; they are held here as the bytes the
 * server sent (each message with its XLogData positions) and, at the
 * StreamCommit, decoded again by a decoder of their own and handed on
 * between a Begin and a Commit made from the StreamCommit's fields
 * (StreamPrepare: BeginPrepare … Prepare). A StreamAbort drops the
 * transaction, or the changes of the subtransaction it names.
 *
 * The replay needs nothing from outside the transaction: pgoutput sends a
 * streamed transaction its own Relation and Type messages, inside its
 * blocks. It decodes a few MiB at a time, so a transaction's views never
 * need more memory than that; what is held is the wire bytes (about the
 * size the server sent).
 */
import type { PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import { StreamedTransactions } from "../streamed-transactions.ts";
import { toPostgresTimestamp } from "../time.ts";

/** Held messages decoded per replay call. */
const REPLAY_BYTES = 4 << 20;
/** `w`, walStart, walEnd, sendTime: the XLogData header the replay decodes the held messages behind. */
const XLOG_HEADER = 25;
/** Kinds that belong to a subtransaction (dropped when it aborts); Relation, Type and Origin do not. */
const CHANGE_KINDS = new Set(["Insert", "Update", "Delete", "Truncate", "Message"]);

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
  readonly #held = new StreamedTransactions<Uint8Array>();
  readonly #decoder: PgoutputDecoder;

  /** `replay`: a decoder made like the stream's (the same value options), used for nothing else. */
  constructor(replay: PgoutputDecoder) {
    this.#decoder = replay;
  }

  /** Whether `msg` must go through push(): a streaming message, or one inside a block. Every other message passes as it is. */
  takes(msg: { kind: string }): boolean {
    return this.#held.blockXid !== undefined || msg.kind.startsWith("Stream");
  }

  /** Streamed transactions held. */
  get held(): number {
    return this.#held.size;
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
        const items = this.#held.take(msg.xid)?.items ?? [];
        const commit = msg.kind === "StreamCommit";
        yield commit
          ? synthetic({ kind: "Begin", streamed: true, xid: msg.xid, finalLsn: msg.commitLsn, commitTime: msg.commitTime })
          : synthetic({ kind: "BeginPrepare", streamed: true, xid: msg.xid, gid: msg.gid, prepareLsn: msg.prepareLsn, endLsn: msg.endLsn, prepareTime: msg.prepareTime });
        yield* this.#replayed(items);
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
        this.#held.add(payloadOf(msg), CHANGE_KINDS.has(msg.kind) ? (msg as { xid?: number }).xid : undefined);
    }
  }

  /** Forgets what is held (the stream starts over after a reconnect). */
  reset(): void {
    this.#held.reset();
  }

  *#replayed(items: readonly Uint8Array[]): Generator<PgoutputMessage> {
    const decoder = this.#decoder;
    for (let i = 0; i < items.length; ) {
      const chunk: Uint8Array[] = [];
      for (let bytes = 0; i < items.length && (chunk.length === 0 || bytes + items[i]!.length <= REPLAY_BYTES); i++) {
        chunk.push(items[i]!);
        bytes += items[i]!.length;
      }
      decoder.inStream = true; // the held changes carry their xid, as inside a block
      const batch = decoder.decodeCopyData(chunk);
      for (let k = 0; k < batch.length; k++) yield batch.get(k) as PgoutputMessage;
    }
  }
}

/** The message as an XLogData payload: its positions, then its bytes (a copy: it outlives the batch). */
function payloadOf(msg: PgoutputMessage): Uint8Array {
  const body = msg.bytes();
  const out = new Uint8Array(XLOG_HEADER + body.length);
  const dv = new DataView(out.buffer);
  out[0] = 0x77; // w
  dv.setBigUint64(1, msg.walStart ?? 0n);
  dv.setBigUint64(9, msg.walEnd ?? 0n);
  dv.setBigInt64(17, msg.sendTime === undefined ? 0n : toPostgresTimestamp(msg.sendTime));
  out.set(body, XLOG_HEADER);
  return out;
}
