/**
 * `stopAt`: the stream ends after the last transaction that ends at or
 * before an LSN. Transactions come in commit order, so the first message
 * that belongs past it ends the stream, unhanded: a Begin whose commit
 * record starts at or after it (its end is past it), a transaction end past
 * it (a Commit whose record ends after it: the transaction's earlier
 * messages were handed over, unacknowledged, as when any stream stops
 * inside a transaction), a non-transactional message at or after it. With
 * nothing in flight, a keepalive whose end of WAL reached it says every
 * transaction that ends before it was sent: the stream ends there too.
 */
import { transactionEnd } from "../ack.ts";
import type { PgoutputMessage } from "../messages.ts";

/** Whether `msg`, reached in stream order, belongs after `stopAt`. */
export function pastStop(msg: PgoutputMessage, stopAt: bigint): boolean {
  switch (msg.kind) {
    case "Begin":
      return msg.finalLsn >= stopAt;
    case "BeginPrepare":
      return msg.prepareLsn >= stopAt;
    case "Message":
      return !msg.transactional && msg.lsn >= stopAt;
    default: {
      const end = transactionEnd(msg);
      return end !== undefined && end > stopAt;
    }
  }
}
