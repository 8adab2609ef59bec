/**
 * Records → stream entries for the Redis sink, in chunks of one script call
 * each (redis-append.ts).
 *
 * Per change (default): an entry per record, id `<commit LSN>-<index>`,
 * fields `id` (the change id, `X/Y:N`), `op` (the record's kind), `table`
 * (`schema.table`, when it has one), `xid`, `time` (commit time, ISO 8601,
 * µs), `payload` (the record without its newline). The stream is the key
 * template's, per table; records without a table go to the messages key.
 *
 * Per transaction: an entry per transaction, id `<commit LSN>-0`, fields
 * `lsn`, `xid`, `time`, `count`, `payload` (its records as JSON Lines). A
 * transaction's records may come in several batches (the pipeline cuts a
 * large one): they are copied and held until its end, up to
 * `max_transaction_bytes`.
 *
 * Snapshot rows are not in commit order: their ids use the LSN just before
 * the snapshot's consistent point, below every change streamed after it.
 */
import { ByteSink } from "../jsonl/sink.ts";
import { formatLsn } from "../lsn.ts";
import type { RecordTransaction, Records } from "../pipeline/records.ts";
import { SinkError } from "../pipeline/sink.ts";
import type { Relation } from "../relation.ts";
import { timestampToISO } from "../time.ts";
import { AppendChunk, constantBulk, entrySeq, type StreamKey } from "./redis-append.ts";
import { expandKey } from "./redis-target.ts";

/** A chunk ready to send: the command, and what it covers. */
export interface EncodedChunk {
  readonly command: Uint8Array;
  /** The position the chunk before it ended at ('' for none). */
  readonly after: string;
  readonly last: string;
  readonly keys: readonly StreamKey[];
  readonly entryKeys: readonly number[];
}

export interface EntryLayout {
  readonly mode: "change" | "transaction";
  readonly prefix: string;
  readonly keyTemplate: string;
  readonly messagesKey: string;
  readonly entriesPerCall: number;
  readonly maxTransactionBytes: number;
  readonly sha: string;
  readonly positionKey: Uint8Array;
  readonly maxlen: string;
}

/** Where a chunk is cut, besides its entry count. */
const CHUNK_BYTES = 1 << 20;

const utf8 = new TextEncoder();

/** ASCII text as a whole bulk string. */
function asciiBulk(text: string): Uint8Array {
  return utf8.encode(`$${text.length}\r\n${text}\r\n`);
}

function streamKey(name: string): StreamKey {
  return { name, bytes: utf8.encode(name) };
}

/** What is written for a transaction, once per transaction. */
interface TxnText {
  readonly txn: RecordTransaction;
  /** The LSN ids are made from, decimal and as the position's first 16 hex digits. */
  readonly dec: string;
  readonly hex: string;
  /** The `xid` and `time` values as bulk strings, encoded once per transaction. */
  readonly xid: Uint8Array | undefined;
  readonly time: Uint8Array | undefined;
}

/** A per-transaction entry being gathered. */
interface OpenTransaction {
  readonly text: TxnText;
  readonly bytes: ByteSink;
  count: number;
  /** The last record's seq (redis-append.ts). */
  lastSeq: number;
}

export class EntryEncoder {
  readonly #o: EntryLayout;
  readonly #body = new ByteSink();
  readonly #tables = new WeakMap<Relation, { key: StreamKey; table: Uint8Array }>();
  readonly #keys = new Map<string, StreamKey>();
  readonly #messages: StreamKey;
  readonly #transactions: StreamKey;
  #text: TxnText | undefined;
  #open: OpenTransaction | undefined;
  /** The position the last chunk made ends at. */
  last: string;

  constructor(o: EntryLayout, after: string) {
    this.#o = o;
    this.last = after;
    this.#messages = streamKey(expandKey(o.messagesKey, { prefix: o.prefix }));
    this.#transactions = o.mode === "transaction" ? streamKey(expandKey(o.keyTemplate, { prefix: o.prefix })) : this.#messages;
  }

  /** The chunks for a batch (none when it only holds the start of a transaction, per transaction). */
  encode(records: Records): EncodedChunk[] {
    const out: EncodedChunk[] = [];
    let chunk = new AppendChunk(this.#body);
    const room = () => {
      if (chunk.entries < this.#o.entriesPerCall && this.#body.len < CHUNK_BYTES) return;
      out.push(this.#seal(chunk));
      chunk = new AppendChunk(this.#body);
    };
    let ack = 0;
    if (this.#open !== undefined && records.acks[0]?.after === 0) {
      // The transaction held from earlier batches ended with no more records (the sink asks for such batches: transactionEnds).
      this.#transaction(chunk, this.#open);
      this.#open = undefined;
    }
    for (let i = 0; i < records.length; i++) {
      const text = this.#textOf(records, i);
      if (this.#o.mode === "change" || text.txn.snapshot) {
        room();
        this.#change(chunk, records, i, text);
        continue;
      }
      let open = this.#open;
      if (open !== undefined && open.text.txn.lsn !== text.txn.lsn) {
        // A record of another transaction: the open one ended (its end was in an earlier batch).
        room();
        this.#transaction(chunk, open);
        open = this.#open = undefined;
      }
      open ??= this.#open = { text, bytes: new ByteSink(), count: 0, lastSeq: 0 };
      open.bytes.bytes(records.bytesOf(i));
      open.count++;
      open.lastSeq = entrySeq(records.positions[i]!, records.subs[i]!);
      if (open.bytes.len > this.#o.maxTransactionBytes) {
        throw new SinkError(`redis: the transaction at ${formatLsn(text.txn.lsn)} is larger than ${this.#o.maxTransactionBytes} bytes, the most held for one entry`, {
          sink: "redis", target: this.#transactions.name, hint: "write it per change (mode=change), or raise max_transaction_bytes",
        });
      }
      while (ack < records.acks.length && records.acks[ack]!.after <= i) ack++;
      const ends = (ack < records.acks.length && records.acks[ack]!.after === i + 1) || text.txn.xid === undefined;
      if (ends) {
        room();
        this.#transaction(chunk, open);
        this.#open = undefined;
      }
    }
    if (chunk.entries > 0) out.push(this.#seal(chunk));
    return out;
  }

  #seal(chunk: AppendChunk): EncodedChunk {
    const after = this.last;
    const command = chunk.finish(this.#o.sha, this.#o.positionKey, after, this.#o.maxlen);
    this.last = chunk.last;
    return { command, after, last: chunk.last, keys: chunk.keys, entryKeys: chunk.entryKeys };
  }

  #textOf(records: Records, i: number): TxnText {
    const txn = records.txns[i]!;
    if (this.#text?.txn === txn) return this.#text;
    let lsn: bigint;
    if (txn.ordered) lsn = txn.lsn;
    else if (txn.snapshot && txn.lsn > 0n) lsn = txn.lsn - 1n;
    else {
      throw new SinkError(`redis: a ${records.kinds[i]} record outside any transaction has no position to make its entry id from`, {
        sink: "redis", hint: "the redis sink takes the changes of transactions and snapshot rows",
      });
    }
    return (this.#text = {
      txn,
      dec: lsn.toString(),
      hex: lsn.toString(16).padStart(16, "0"),
      xid: txn.xid === undefined ? undefined : asciiBulk(String(txn.xid)),
      time: txn.time === undefined ? undefined : asciiBulk(timestampToISO(txn.time)),
    });
  }

  #tableOf(rel: Relation): { key: StreamKey; table: Uint8Array } {
    let t = this.#tables.get(rel);
    if (t === undefined) {
      const name = this.#o.mode === "change"
        ? expandKey(this.#o.keyTemplate, { prefix: this.#o.prefix, schema: rel.namespace, table: rel.name })
        : this.#transactions.name;
      let key = this.#keys.get(name);
      if (key === undefined) this.#keys.set(name, (key = streamKey(name)));
      t = { key, table: utf8.encode(`${rel.namespace}.${rel.name}`) };
      this.#tables.set(rel, t);
    }
    return t;
  }

  #change(chunk: AppendChunk, records: Records, i: number, text: TxnText): void {
    const seq = entrySeq(records.positions[i]!, records.subs[i]!);
    const rel = records.relations[i];
    const t = rel === undefined ? undefined : this.#tableOf(rel);
    const pairs = 3 + (t === undefined ? 0 : 1) + (text.xid === undefined ? 0 : 1) + (text.time === undefined ? 0 : 1);
    chunk.entry(t?.key ?? (this.#o.mode === "change" ? this.#messages : this.#transactions), `${text.dec}-${seq}`, text.hex + seq.toString(16).padStart(12, "0"), pairs);
    chunk.field("id", records.id(i));
    chunk.field("op", constantBulk(records.kinds[i]!));
    if (t !== undefined) chunk.fieldBytes("table", t.table);
    if (text.xid !== undefined) chunk.field("xid", text.xid);
    if (text.time !== undefined) chunk.field("time", text.time);
    chunk.fieldBytes("payload", records.payloadOf(i));
  }

  #transaction(chunk: AppendChunk, open: OpenTransaction): void {
    const text = open.text;
    const pairs = 3 + (text.xid === undefined ? 0 : 1) + (text.time === undefined ? 0 : 1);
    chunk.entry(this.#transactions, `${text.dec}-0`, text.hex + open.lastSeq.toString(16).padStart(12, "0"), pairs);
    chunk.field("lsn", formatLsn(text.txn.lsn));
    if (text.xid !== undefined) chunk.field("xid", text.xid);
    if (text.time !== undefined) chunk.field("time", text.time);
    chunk.field("count", String(open.count));
    chunk.fieldBytes("payload", open.bytes.buf.subarray(0, open.bytes.len));
  }
}
