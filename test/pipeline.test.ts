/**
 * The pipeline (bindings/pipeline/run.ts) over the captures from real
 * PostgreSQL 15 and 18 (test/fixtures), with sinks that hold, reorder and
 * fail their writes: acknowledgements only in order and only of what is
 * durable, the in-flight window bounds what is pulled, redeliveries after a
 * restart are taken back by id, limit / stop / failure end it as documented,
 * and streamed transactions replayed as plain ones give the same changes as
 * the TransactionAssembler (an independent reading of the streaming protocol).
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import { transactionEnd } from "../bindings/ack.ts";
import { jsonl } from "../bindings/formats/jsonl.ts";
import { Pipeline, type PipelineSource, type SourceItem } from "../bindings/pipeline/run.ts";
import type { Records } from "../bindings/pipeline/records.ts";
import { SinkError, type Sink } from "../bindings/pipeline/sink.ts";
import { parseChangeId } from "../bindings/pipeline/change-id.ts";
import { TransactionAssembler, type Transaction } from "../bindings/pg/transactions.ts";
import { backend } from "./support/backends.ts";
import { encode } from "../devkit/encoder/encoder.ts";
import { liveBytes } from "./support/memory.ts";

const fixture = (name: string): Uint8Array => gunzipSync(readFileSync(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))));

const decoder = (): Promise<PgoutputDecoder> => backend.create({ values: jsonl.values() });

/** `n` transactions of 1-5 inserts each, commit LSNs increasing, as a walsender would send them (no streaming). */
function manyTransactions(n: number): Uint8Array[] {
  const rel = { relationId: 16390, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }] };
  const out: Uint8Array[] = [encode.relation(rel).bytes];
  let lsn = 0x1000_0000n;
  for (let t = 0; t < n; t++) {
    const commitTime = 1_700_000_000_000_000n + BigInt(t);
    const finalLsn = lsn + 0x100n;
    out.push(encode.begin({ finalLsn, commitTime, xid: 1000 + t }).bytes);
    for (let k = 0; k <= t % 5; k++) out.push(encode.insert({ relation: rel, newTuple: [String(t * 10 + k), `row ${t}.${k}`] }).bytes);
    out.push(encode.commit({ commitLsn: finalLsn, endLsn: finalLsn + 0x30n, commitTime }).bytes);
    lsn = finalLsn + 0x30n;
  }
  return out;
}

/** Every message of a capture, materialized, then re-decoded one at a time as the source yields (views valid until the next). */
async function messagesOf(name: string): Promise<Uint8Array[]> {
  const d = await decoder();
  const out: Uint8Array[] = [];
  for (const m of d.push(fixture(name))) out.push(m.bytes());
  d.end();
  return out;
}

/**
 * A source over a capture's messages: `plan` lists the message indexes it
 * yields, in order; a `restart` entry starts a new connection (generation
 * + 1) from the first message after the last acknowledged end, as a
 * walsender would. Records what was acknowledged. With `ready`, it also
 * offers items through `takeReady()` (two of every three), as the capture
 * and stream sources do, so the pipeline's promise-free path is tested too.
 */
class CaptureSource implements PipelineSource {
  readonly acks: bigint[] = [];
  generation = 0;
  pulled = 0;
  stopped = false;
  readonly takeReady: (() => SourceItem | undefined) | undefined;
  readonly #d: PgoutputDecoder;
  readonly #messages: Uint8Array[];
  readonly #ends: (bigint | undefined)[] = [];
  readonly #restartAfter: number[];
  #at = 0;
  #offers = 0;

  constructor(d: PgoutputDecoder, messages: Uint8Array[], ends: (bigint | undefined)[], restartAfter: number[] = [], ready = sourcesOfferReady) {
    this.#d = d;
    this.#messages = messages;
    this.#ends = ends;
    this.#restartAfter = [...restartAfter];
    if (ready) this.takeReady = () => (++this.#offers % 3 === 0 ? undefined : this.#next());
  }

  ack(lsn: bigint): void {
    this.acks.push(lsn);
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<SourceItem> {
    for (let item = this.#next(); item !== undefined; item = this.#next()) {
      yield item;
      await Promise.resolve();
    }
  }

  /** The plan's next item, or undefined at its end. */
  #next(): SourceItem | undefined {
    for (let i = this.#at; i < this.#messages.length; i = this.#at) {
      if (this.#restartAfter.length > 0 && i === this.#restartAfter[0]) {
        this.#restartAfter.shift();
        // A new connection: from the message after the last acknowledged transaction end.
        const acked = this.acks.length === 0 ? 0n : this.acks[this.acks.length - 1]!;
        let from = 0;
        for (let k = 0; k < i; k++) if (this.#ends[k] !== undefined && this.#ends[k]! <= acked) from = k + 1;
        this.generation++;
        this.#d.reset();
        this.#at = from;
        continue;
      }
      this.pulled++;
      this.#at = i + 1;
      return this.#d.decode(this.#messages[i]!) as SourceItem;
    }
    return undefined;
  }
}

/** Transaction end positions by message index: a capture has no XLogData, so the ends come from the messages. */
async function endsOf(messages: Uint8Array[]): Promise<(bigint | undefined)[]> {
  const d = await decoder();
  return messages.map((m) => transactionEnd(d.decode(m)));
}

interface Written {
  ids: string[];
  bytes: number;
  acks: bigint[];
}

/** A sink that keeps what it is given; `hold` writes until `release(k)` resolves the k-th. */
class TestSink implements Sink {
  readonly name = "test";
  readonly written: Written[] = [];
  readonly #pending: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  readonly transactionEnds: boolean;
  constructor(readonly options: { hold?: boolean; failAt?: number; transactionEnds?: boolean } = {}) {
    this.transactionEnds = options.transactionEnds === true;
  }

  write(records: Records): Promise<void> {
    const ids = Array.from({ length: records.length }, (_, i) => records.id(i));
    this.written.push({ ids, bytes: records.bytes.len, acks: records.acks.map((a) => a.lsn) });
    if (this.options.failAt === this.written.length) return Promise.reject(new SinkError("refused", { sink: "test", hint: "none" }));
    if (this.options.hold !== true) return Promise.resolve();
    return new Promise((resolve, reject) => this.#pending.push({ resolve, reject }));
  }

  get waiting(): number {
    return this.#pending.length;
  }

  release(k: number): void {
    this.#pending[k]!.resolve();
  }

  async close(): Promise<void> {}
}

const ids = (sink: TestSink) => sink.written.flatMap((w) => w.ids);

/** Whether the CaptureSources a test makes offer takeReady (set by the describe block). */
let sourcesOfferReady = false;

for (const ready of [false, true]) describe(`pipeline (${backend.name}${ready ? ", items also taken ready" : ""})`, () => {
  beforeAll(() => {
    sourcesOfferReady = ready;
  });

  it("a streamed transaction is written in batches of about holdBytes as it is replayed at its commit, not whole", async () => {
    const rel = { relationId: 16390, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }] };
    const frames: Uint8Array[] = [encode.streamStart({ xid: 77, firstSegment: true }).bytes, encode.relation(rel).bytes];
    for (let i = 0; i < 2000; i++) frames.push(encode.insert({ relation: rel, xid: 77, newTuple: [String(i), "x".repeat(500)] }).bytes);
    frames.push(encode.streamStop().bytes, encode.streamCommit({ xid: 77, commitLsn: 0x9000n, endLsn: 0x9100n, commitTime: 1n }).bytes);
    const d = await decoder();
    const source: PipelineSource = {
      async *[Symbol.asyncIterator]() {
        for (const f of frames) yield d.decode(f) as SourceItem;
      },
      ack: () => {},
      stop: async () => {},
    };
    const batches: number[] = [];
    let records = 0;
    const sink: Sink = { name: "sizes", write: async (r) => void (batches.push(r.bytes.len), (records += r.length)), close: async () => {} };
    const holdBytes = 64 << 10;
    await new Pipeline({ source, format: jsonl.create({ decoder: d }, {}), sink, replayDecoder: await decoder(), holdBytes }).run();
    expect(records).toBe(2000);
    expect(batches.length).toBeGreaterThan(10);
    expect(Math.max(...batches)).toBeLessThan(holdBytes + 2048);
  });

  it("memory does not follow the number of items read: a run of 200,000 leaves nothing per item behind", async () => {
    const n = 200_000;
    let growth = 0;
    let before = 0;
    const keepalive = { kind: "PrimaryKeepalive", walEnd: 0x100n, sendTime: 0n, replyRequested: false } as unknown as SourceItem;
    const source: PipelineSource = {
      async *[Symbol.asyncIterator]() {
        for (let i = 0; i < n; i++) {
          if (i === 1000) before = liveBytes();
          yield keepalive;
        }
        growth = liveBytes() - before;
      },
      ack: () => {},
      stop: async () => {},
    };
    const sink: Sink = { name: "null", write: async () => {}, close: async () => {} };
    const d = await decoder();
    const run = await new Pipeline({ source, format: jsonl.create({ decoder: d }, {}), sink }).run();
    expect(run.stats.items).toBe(n);
    // Each read raced against one promise that lived as long as the run kept ~300 bytes per item (60 MB here).
    expect(growth).toBeLessThan(8 << 20);
  });

  it("every change once, in order, acknowledged after it was written; ids are commit LSN:position", async () => {
    const messages = await messagesOf("pg15-replica-identity.bin.gz");
    const ends = await endsOf(messages);
    const source = new CaptureSource(await decoder(), messages, ends);
    const sink = new TestSink();
    const d = await decoder();
    const result = await new Pipeline({ source, format: jsonl.create({ decoder: d }, {}), sink, replayDecoder: await decoder() }).run();
    expect(result.reason).toBe("ended");
    const all = ids(sink);
    expect(all.length).toBeGreaterThan(10);
    expect(new Set(all).size).toBe(all.length);
    const positions = all.map((id) => parseChangeId(id)!);
    for (let i = 1; i < positions.length; i++) {
      const [a, b] = [positions[i - 1]!, positions[i]!];
      expect(a.lsn < b.lsn || (a.lsn === b.lsn && a.index < b.index), `${all[i - 1]} before ${all[i]}`).toBe(true);
    }
    // Every transaction end was acknowledged, in order.
    const expected = ends.filter((e): e is bigint => e !== undefined);
    expect(source.acks.at(-1)).toBe(expected.at(-1));
    for (let i = 1; i < source.acks.length; i++) expect(source.acks[i]! > source.acks[i - 1]!).toBe(true);
    expect(source.stopped).toBe(true);
  });

  it("writes resolved out of order are acknowledged in order; nothing past a write not yet durable", async () => {
    const messages = await messagesOf("pg15-truncate.bin.gz");
    const ends = await endsOf(messages);
    const source = new CaptureSource(await decoder(), messages, ends);
    const sink = new TestSink({ hold: true });
    const d = await decoder();
    // batchBytes 1: every transaction end is written at once, one write each.
    const run = new Pipeline({ source, format: jsonl.create({ decoder: d }, {}), sink, replayDecoder: await decoder(), batchBytes: 1 }).run();
    for (let i = 0; i < 200 && sink.waiting < 3; i++) await new Promise((r) => setTimeout(r, 5));
    expect(sink.waiting).toBeGreaterThanOrEqual(3);
    sink.release(2);
    sink.release(1);
    await new Promise((r) => setTimeout(r, 20));
    expect(source.acks).toEqual([]); // the first write is not durable yet
    sink.release(0);
    await new Promise((r) => setTimeout(r, 20));
    expect(source.acks.length).toBe(1); // the three settled in turn: one acknowledgement of the third's last end
    for (let k = 3; ; k++) {
      for (let i = 0; i < 200 && sink.waiting <= k && source.pulled < messages.length; i++) await new Promise((r) => setTimeout(r, 5));
      if (sink.waiting <= k) break;
      sink.release(k);
    }
    await run;
    expect(source.acks.at(-1)).toBe(ends.filter((e) => e !== undefined).at(-1));
  });

  it("the in-flight window bounds what is pulled from the source while the sink holds its writes", async () => {
    const messages = manyTransactions(300);
    const ends = await endsOf(messages);
    const source = new CaptureSource(await decoder(), messages, ends);
    const sink = new TestSink({ hold: true });
    const d = await decoder();
    const pipeline = new Pipeline({ source, format: jsonl.create({ decoder: d }, {}), sink, replayDecoder: await decoder(), batchBytes: 1, window: { records: 5 } });
    const run = pipeline.run();
    for (let i = 0; i < 100; i++) await new Promise((r) => setTimeout(r, 2));
    const stats = pipeline.stats;
    expect(stats.inFlight).toBeGreaterThan(5);
    expect(stats.inFlight).toBeLessThanOrEqual(5 + 5); // one transaction (at most 5 changes) over the window, no more
    const pulled = source.pulled;
    await new Promise((r) => setTimeout(r, 50));
    expect(source.pulled).toBe(pulled); // stopped pulling
    expect(source.acks).toEqual([]);
    pipeline.stop();
    for (let k = 0; k < sink.waiting; k++) sink.release(k);
    await run;
    expect(source.acks.length).toBeGreaterThan(0);
  });

  it("transactionEnds: a sink that asks gets the batches that hold only a transaction's end (the records came in earlier batches)", async () => {
    const messages = manyTransactions(20);
    const ends = (await endsOf(messages)).filter((e): e is bigint => e !== undefined);
    for (const transactionEnds of [false, true]) {
      const source = new CaptureSource(await decoder(), messages, await endsOf(messages));
      const sink = new TestSink({ transactionEnds });
      // holdBytes 1: each change is written as it comes, so a transaction's end comes alone.
      await new Pipeline({ source, format: jsonl.create({ decoder: await decoder() }, {}), sink, replayDecoder: await decoder(), holdBytes: 1 }).run();
      const endsOnly = sink.written.filter((w) => w.ids.length === 0);
      expect(endsOnly.flatMap((w) => w.acks)).toEqual(transactionEnds ? ends : []);
      expect(source.acks.at(-1)).toBe(ends.at(-1));
    }
  });

  it("a restart resends what was not acknowledged: nothing is written twice, nothing is missing", async () => {
    const messages = [...await messagesOf("pg15-toast-unchanged.bin.gz"), ...manyTransactions(60).slice(0)];
    const ends = await endsOf(messages);
    const reference = new TestSink();
    await new Pipeline({ source: new CaptureSource(await decoder(), messages, ends), format: jsonl.create({ decoder: await decoder() }, {}), sink: reference, replayDecoder: await decoder() }).run();
    // Restarts in the middle of transactions and between them; a sink that holds writes, so some were handed over and not acknowledged.
    const restarts = [7, 19, 20, 33, 34, 60, Math.floor(messages.length / 2), messages.length - 2].filter((k) => k > 0 && k < messages.length).sort((a, b) => a - b);
    const source = new CaptureSource(await decoder(), messages, ends, restarts);
    const sink = new TestSink();
    const pipeline = new Pipeline({ source, format: jsonl.create({ decoder: await decoder() }, {}), sink, replayDecoder: await decoder(), holdBytes: 1 });
    const result = await pipeline.run();
    expect(source.generation).toBe(restarts.length);
    expect(ids(sink)).toEqual(ids(reference));
    expect(result.stats.skipped).toBeGreaterThan(0); // something came again and was taken back
  });

  it("limit: cut inside a transaction, written, its end not acknowledged; stop(): the open transaction dropped", async () => {
    const messages = manyTransactions(20);
    const ends = await endsOf(messages);
    const sink = new TestSink();
    const source = new CaptureSource(await decoder(), messages, ends);
    // 1+2+3 changes in the first three transactions: the 7th is the first of the fourth.
    const result = await new Pipeline({ source, format: jsonl.create({ decoder: await decoder() }, {}), sink, replayDecoder: await decoder(), limit: 7 }).run();
    expect(result.reason).toBe("limit");
    expect(ids(sink).length).toBe(7);
    const last = parseChangeId(ids(sink).at(-1)!)!;
    expect(last.index).toBe(0);
    expect(source.acks.at(-1)).toBe(ends.filter((e) => e !== undefined)[2]); // the third's end, not the cut fourth's
    for (const a of source.acks) expect(a <= last.lsn).toBe(true);

    // stop() while a transaction is open: what was finished is written and acknowledged, the open one is not written.
    const held = new CaptureSource(await decoder(), messages, ends);
    const sink2 = new TestSink();
    let seen = 0;
    const pipeline = new Pipeline({
      source: held, format: jsonl.create({ decoder: await decoder() }, {}), sink: sink2, replayDecoder: await decoder(),
      onItem: (item) => {
        if (item.kind === "Insert" && ++seen === 8) pipeline.stop(); // the 2nd insert of the 4th transaction
      },
    });
    expect((await pipeline.run()).reason).toBe("stopped");
    expect(ids(sink2).length).toBe(6);
    expect(held.acks.at(-1)).toBe(ends.filter((e) => e !== undefined)[2]);
  });

  it("a sink's permanent failure ends the run with its error; nothing after it is acknowledged", async () => {
    const messages = await messagesOf("pg15-truncate.bin.gz");
    const ends = await endsOf(messages);
    const source = new CaptureSource(await decoder(), messages, ends);
    const sink = new TestSink({ failAt: 2 });
    const run = new Pipeline({ source, format: jsonl.create({ decoder: await decoder() }, {}), sink, replayDecoder: await decoder(), batchBytes: 1 }).run();
    await expect(run).rejects.toBeInstanceOf(SinkError);
    const firstBatchEnd = source.acks.at(-1);
    expect(source.acks.length).toBeLessThanOrEqual(1);
    if (firstBatchEnd !== undefined) {
      const written = parseChangeId(sink.written[0]!.ids.at(-1)!)!;
      expect(firstBatchEnd > written.lsn).toBe(true);
    }
    expect(source.stopped).toBe(true);
  });

  for (const name of ["pg15-streaming.bin.gz", "pg18-streaming.bin.gz", "pg18-parallel-abort.bin.gz", "pg18-two-phase.bin.gz"]) {
    it(`${name}: streamed transactions replayed as plain ones give the TransactionAssembler's changes, at their commit`, async () => {
      const messages = await messagesOf(name);
      const ends = await endsOf(messages);
      const lines: string[] = [];
      const sink: Sink = {
        name: "lines",
        write: async (r) => {
          for (let i = 0; i < r.length; i++) lines.push(`${r.kinds[i]} ${r.id(i)} ${Buffer.from(r.bytesOf(i)).toString()}`);
        },
        close: async () => {},
      };
      const source = new CaptureSource(await decoder(), messages, ends);
      await new Pipeline({ source, format: jsonl.create({ decoder: await decoder() }, { transactions: true }), sink, replayDecoder: await decoder() }).run();
      // The assembler's reading: per transaction, its Insert/Update/Delete/Truncate in order.
      const assembler = new TransactionAssembler();
      const d = await decoder();
      const expected: string[] = [];
      for (const bytes of messages) {
        const item = assembler.push(d.decode(bytes) as PgoutputMessage);
        if (item === undefined || !("messages" in item)) continue;
        const tx = item as Transaction;
        for (const m of tx.messages) {
          const kind = m.kind as string;
          if (kind === "Insert" || kind === "Update" || kind === "Delete") expected.push(`${tx.xid} ${kind[0]}`);
          else if (kind === "Truncate") for (let k = 0; k < (m.relationIds as number[]).length; k++) expected.push(`${tx.xid} T`);
        }
      }
      const got = lines
        .filter((l) => ["insert", "update", "delete", "truncate"].includes(l.split(" ")[0]!))
        .map((l) => {
          const obj = JSON.parse(l.slice(l.indexOf("{")));
          return `${obj.xid} ${obj.action}`;
        });
      expect(got).toEqual(expected);
      if (name.includes("streaming")) expect(lines.some((l) => l.includes('"streamed":true'))).toBe(true);
    });
  }
});
