/**
 * A held streamed transaction decoded again at its end: each message was
 * kept as an XLogData payload (its positions, then the bytes the server
 * sent), and a decoder of its own (made like the stream's, used for
 * nothing else) decodes them a few MiB at a time, so the views of a
 * transaction of any size never need more memory than that.
 *
 * The replay needs nothing from outside the transaction: pgoutput sends a
 * streamed transaction its own Relation and Type messages, inside its blocks.
 */
import type { PgoutputDecoder } from "./decoder.ts";
import type { HeldLog } from "./held-log.ts";
import type { PgoutputMessage } from "./messages.ts";
import type { StreamedTransactions } from "./streamed-transactions.ts";
import { toPostgresTimestamp } from "./time.ts";

/** Held messages decoded per replay call. */
const REPLAY_BYTES = 4 << 20;
/** `w`, walStart, walEnd, sendTime: the XLogData header the replay decodes the held messages behind. */
const XLOG_HEADER = 25;

/** Kinds that belong to a subtransaction (dropped when it aborts); Relation, Type and Origin do not. */
const CHANGE_KINDS = new Set(["Insert", "Update", "Delete", "Truncate", "Message"]);

/** The subtransaction a message inside a block belongs to (0: none, no abort removes it). */
function subtransactionOf(msg: { kind: string; xid?: number }): number {
  return CHANGE_KINDS.has(msg.kind) ? (msg.xid ?? 0) : 0;
}

const header = new Uint8Array(XLOG_HEADER);
const headerView = new DataView(header.buffer);

/** Holds a message inside a block as an XLogData payload: its positions, then its bytes (copied: the log outlives the batch). */
export function hold(held: StreamedTransactions, msg: PgoutputMessage): void {
  header[0] = 0x77; // w
  headerView.setBigUint64(1, msg.walStart ?? 0n);
  headerView.setBigUint64(9, msg.walEnd ?? 0n);
  headerView.setBigInt64(17, msg.sendTime === undefined ? 0n : toPostgresTimestamp(msg.sendTime));
  held.add(header, msg.bytes(), subtransactionOf(msg));
}

/** The held messages, decoded again in order; a view is valid until the next one is asked for. Closes the log at the end. */
export function* replayed(log: HeldLog, decoder: PgoutputDecoder): Generator<PgoutputMessage> {
  try {
    for (const chunk of log.chunks(REPLAY_BYTES)) {
      decoder.inStream = true; // the held changes carry their xid, as inside a block
      const batch = decoder.decodeCopyData(chunk);
      for (let k = 0; k < batch.length; k++) yield batch.get(k) as PgoutputMessage;
    }
  } finally {
    log.close();
  }
}
