/**
 * The walsender's CopyData payloads: `w` XLogData (Int64 start LSN, Int64
 * end of WAL, Int64 send time, then one pgoutput message) and `k` primary
 * keepalive (Int64 end of WAL, Int64 send time, Byte1 reply requested).
 *
 * The reader is pointed at the whole payload. Errors in the XLogData or
 * keepalive header name no message kind; errors in the pgoutput message are
 * those of `parseMessage`, at offsets counted from the payload's start.
 */
import type { PgoutputMessage } from "../messages.ts";
import { PrimaryKeepalive, type WalMessage } from "../walsender.ts";
import type { Reader } from "./reader.ts";
import type { MessageView } from "./view.ts";

/** The payload tags. */
export const TAG_XLOGDATA = 0x77; // 'w'
export const TAG_KEEPALIVE = 0x6b; // 'k'

/** Bytes before the pgoutput message of an XLogData: 'w', start LSN, end of WAL, send time. */
export const XLOGDATA_PREFIX = 25;
/** The XLogData header after its tag: what a payload may exceed `maxMessageSize` by. */
export { XLOGDATA_HEADER } from "../tape.ts";

/**
 * Reads the payload the reader points at. `message` decodes the pgoutput
 * message the reader is then pointed at (with the decoder's stream state)
 * and must apply its state change.
 */
export function parseCopyData(r: Reader, message: () => PgoutputMessage): WalMessage {
  const s = r.start;
  if (s >= r.end) throw r.error("INCOMPLETE", "tag", s, "empty CopyData payload");
  const tag = r.bytes[s]!;
  r.pos = s + 1;
  if (tag === TAG_XLOGDATA) {
    const walStart = r.lsn("walStart");
    const walEnd = r.lsn("walEnd");
    const sendTime = r.time("sendTime");
    // The pgoutput message: its own start, kind and error offsets.
    r.reset(r.bytes, r.pos, r.end, r.origin + (r.pos - s), r.index);
    const msg = message();
    (msg as unknown as MessageView).setXLogData({ walStart, walEnd, sendTime });
    return msg;
  }
  if (tag === TAG_KEEPALIVE) {
    const walEnd = r.lsn("walEnd");
    const sendTime = r.time("sendTime");
    const replyRequested = r.u8("replyRequested") !== 0;
    r.done();
    return new PrimaryKeepalive(walEnd, sendTime, replyRequested);
  }
  throw r.error("UNKNOWN_MESSAGE", "tag", s, `unknown CopyData payload tag 0x${tag.toString(16)} (expected w or k)`);
}
