/**
 * A format wrapper and a sink that record what a pipeline hands over, for
 * comparing the whole-batch path (Format.pushBatch) with one message at a
 * time: the bytes, each record's id, kind, key, position and transaction
 * (its xid and commit time), the transaction ends to acknowledge (by the
 * records before them: where a write ends depends on the source's reads),
 * and how many messages came from batches.
 */
import type { ChangePosition } from "../../bindings/pipeline/change-id.ts";
import type { Format } from "../../bindings/pipeline/format.ts";
import type { Records } from "../../bindings/pipeline/records.ts";
import type { Sink } from "../../bindings/pipeline/sink.ts";

export interface Recorded {
  lines: string;
  records: string[];
  positions: ChangePosition[];
  acks: string[];
  /** Messages the format took from batches (pushBatch). */
  fromBatches: number;
}

const text = new TextDecoder();

/** `inner` counted, and a sink whose destination holds everything up to `delivered` (a restart's redelivery takes back what it holds). */
export function recording(inner: Format, delivered?: ChangePosition): { seen: Recorded; format: Format; sink: Sink; runs: { mostTransactions: number } } {
  const seen: Recorded = { lines: "", records: [], positions: [], acks: [], fromBatches: 0 };
  /** The most transactions one pushBatch call ended (its Commit boundaries). */
  const runs = { mostTransactions: 0 };
  const format: Format = {
    push: (item, out) => inner.push(item, out),
    reset: () => inner.reset(),
    pushBatch: (batch, from, out, to, boundary) => {
      let commits = 0;
      const taken = inner.pushBatch!(batch, from, out, to, (i) => {
        if (batch.kind(i) === "Commit") commits++;
        boundary(i);
      });
      seen.fromBatches += taken - from;
      runs.mostTransactions = Math.max(runs.mostTransactions, commits);
      return taken;
    },
  };
  const sink: Sink = {
    name: "test",
    // Handed the batches of transaction ends alone too: every acknowledgement is seen, however the writes fell.
    transactionEnds: true,
    write: async (records: Records) => {
      const before = seen.records.length;
      seen.lines += text.decode(records.bytes.buf.subarray(0, records.bytes.len));
      for (let i = 0; i < records.length; i++) {
        const key = records.keyOf(i);
        const txn = records.txns[i]!;
        seen.records.push(`${records.id(i)} ${records.kinds[i]} xid ${txn.xid} at ${txn.time}${key === undefined ? "" : ` ${text.decode(key)}`}`);
        seen.positions.push({ lsn: records.txns[i]!.lsn, index: records.positions[i]!, sub: records.subs[i] });
      }
      for (const a of records.acks) seen.acks.push(`${before + a.after}@${a.lsn}`);
    },
    close: async () => {},
    delivered: async () => delivered,
  };
  return { seen, format, sink, runs };
}
