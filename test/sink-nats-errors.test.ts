/**
 * The NATS sink's refusals and edges against a real nats-server, with
 * records made here (no PostgreSQL): a missing stream, credentials refused
 * and never shown, an unreachable server, a subject no stream takes or
 * another stream takes, a message over max_payload, a stream that holds
 * what this sink did not write or went back, and close() while the broker
 * is down. Each is a SinkError naming the sink, the subject or stream, and
 * the remedy; nothing is confirmed that the stream does not hold.
 */
import { describe, expect, it } from "vitest";
import { connect, headers } from "nats";
import { startNats } from "../devkit/brokers/nats.ts";
import { natsSink, natsOptions, type NatsSink } from "../bindings/sinks/nats.ts";
import { Records, RecordTransaction, type RecordKind } from "../bindings/pipeline/records.ts";
import { SinkError } from "../bindings/pipeline/sink.ts";
import { closedPort } from "./support/closed-port.ts";
import { encode } from "../devkit/encoder/encoder.ts";
import { createDecoder } from "../bindings/create-decoder.ts";
import { jsonl } from "../bindings/formats/jsonl.ts";
import { transactionEnd } from "../bindings/ack.ts";
import { parseLsn } from "../bindings/lsn.ts";
import { Pipeline, type PipelineSource, type SourceItem } from "../bindings/pipeline/run.ts";

/** A batch of one transaction at `lsn`: `lines` as records of `kind` (no table: cdc.message or cdc.transaction), from position `first`. */
function batch(lines: string[], o: { lsn?: bigint; kind?: RecordKind; first?: number } = {}): Records {
  const lsn = o.lsn ?? 0x16b3748n;
  const r = new Records();
  r.txn = new RecordTransaction(777, lsn, 1_700_000_000_123_456n);
  r.txn.next = o.first ?? 0;
  for (const l of lines) {
    r.bytes.str(`${l}\n`);
    r.end(o.kind ?? "message");
  }
  r.acks.push({ after: r.length, lsn: lsn + 0x30n });
  return r;
}

async function withNats<T>(f: (url: string, halt: () => Promise<void>) => Promise<T>, extra: string[] = []): Promise<T> {
  const broker = await startNats(extra);
  try {
    return await f(broker.url, () => broker.halt());
  } finally {
    await broker.stop();
  }
}

async function addStream(url: string, name: string, subjects: string[], config: Record<string, unknown> = {}): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    await (await nc.jetstreamManager()).streams.add({ name, subjects, ...config });
  } finally {
    await nc.close();
  }
}

async function refusal(p: Promise<unknown>): Promise<SinkError> {
  const e = await p.then(() => undefined, (x: unknown) => x);
  expect(e).toBeInstanceOf(SinkError);
  expect((e as SinkError).details.sink).toBe("nats");
  return e as SinkError;
}

describe("NATS sink: streams", () => {
  it("no stream for its subjects: a SinkError with the command that makes one, or create=true", () =>
    withNats(async (url) => {
      const e = await refusal(natsSink(natsOptions(url)));
      expect(e.message).toMatch(/^nats: no stream on nats:\/\/127\.0\.0\.1:\d+ takes cdc\.\*\.\*$/);
      expect(e.hint).toBe("create it (nats stream add CDC --subjects 'cdc.*.*,cdc.message,cdc.transaction' --storage file), or add create=true to the URL");
      const named = await refusal(natsSink(natsOptions(`${url}?stream=ORDERS`)));
      expect(named.message).toMatch(/no stream ORDERS on .* \(for subjects cdc\.\*\.\*, cdc\.message, cdc\.transaction\)/);
      expect(named.details.target).toBe("ORDERS");
    }));

  it("create=true makes it: the sink's subjects, file storage, the duplicate window asked for", () =>
    withNats(async (url) => {
      const sink = await natsSink(natsOptions(`${url}?create=true&prefix=db1&duplicate_window=10m`));
      await sink.close();
      expect(sink.stream).toBe("DB1");
      const nc = await connect({ servers: url });
      try {
        const info = await (await nc.jetstreamManager()).streams.info("DB1");
        expect(info.config.subjects).toEqual(["db1.*.*", "db1.message", "db1.transaction"]);
        expect(info.config.storage).toBe("file");
        expect(info.config.duplicate_window).toBe(600e9);
      } finally {
        await nc.close();
      }
    }));

  it("found by its subjects when not named; several candidates are refused", () =>
    withNats(async (url) => {
      await addStream(url, "PUBLIC", ["cdc.public.*"]);
      const one = await natsSink(natsOptions(url));
      expect(one.stream).toBe("PUBLIC");
      await one.close();
      await addStream(url, "OTHER", ["cdc.other.*"]);
      const e = await refusal(natsSink(natsOptions(url)));
      expect(e.message).toMatch(/several streams take cdc\.\*\.\*: (OTHER, PUBLIC|PUBLIC, OTHER)/);
      expect(e.hint).toMatch(/stream=NAME/);
    }));

  it("a subject the stream does not take: a SinkError naming it, the stream's subjects and the remedy", () =>
    withNats(async (url) => {
      await addStream(url, "CDC", ["cdc.*.*"]);
      const sink = await natsSink(natsOptions(`${url}?stream=CDC`));
      const e = await refusal(sink.write(batch(['{"action":"M"}'])));
      expect(e.message).toBe("nats: no stream takes cdc.message; stream CDC takes cdc.*.*");
      expect(e.details.target).toBe("cdc.message");
      expect(e.hint).toMatch(/add the sink's subjects to stream CDC/);
      await sink.close();
    }));

  it("a subject another stream takes: refused there (Nats-Expected-Stream), never stored in it", () =>
    withNats(async (url) => {
      await addStream(url, "CDC", ["cdc.*.*", "cdc.transaction"]);
      await addStream(url, "MSG", ["cdc.message"]);
      const sink = await natsSink(natsOptions(`${url}?stream=CDC`));
      const e = await refusal(sink.write(batch(['{"action":"M"}'])));
      expect(e.message).toMatch(/stream MSG refused cdc\.message \(id 0\/16B3748:0\): expected stream does not match \(err_code 10060\)/);
      expect(e.hint).toMatch(/another stream \(MSG\) takes cdc\.message/);
      await sink.close();
      const nc = await connect({ servers: url });
      try {
        expect((await (await nc.jetstreamManager()).streams.info("MSG")).state.messages).toBe(0);
      } finally {
        await nc.close();
      }
    }));

  it("a message over the server's max_payload: a SinkError naming the subject, the id and the limit", () =>
    withNats(async (url) => {
      const sink = await natsSink(natsOptions(`${url}?create=true`));
      const e = await refusal(sink.write(batch([`"${"x".repeat(1_100_000)}"`])));
      expect(e.message).toMatch(/^nats: cdc\.message \(id 0\/16B3748:0\) is \d+ bytes with its headers, over the server's max_payload of 1048576$/);
      expect(e.hint).toMatch(/raise max_payload/);
      await sink.close();
    }));
});

describe("NATS sink: what the stream holds", () => {
  it("writes resolve once stored, with the documented headers; delivered() reads the position back", () =>
    withNats(async (url) => {
      const sink = await natsSink(natsOptions(`${url}?create=true`));
      await sink.write(batch(["1", "2"], { kind: "commit" }));
      await sink.write(batch(["3"], { lsn: 0x16b3800n }));
      expect(sink.acked).toBe(3);
      expect(await sink.delivered!()).toEqual({ lsn: 0x16b3800n, index: 0 });
      await sink.close();
      const nc = await connect({ servers: url });
      try {
        const m = await (await nc.jetstreamManager()).streams.getMessage("CDC", { seq: 2 });
        expect(m.subject).toBe("cdc.transaction");
        expect(new TextDecoder().decode(m.data)).toBe("2");
        expect(Object.fromEntries([...m.header.keys()].map((k) => [k, m.header.get(k)]))).toEqual({
          "Nats-Msg-Id": "0/16B3748:1", "Nats-Expected-Stream": "CDC", "Nats-Expected-Last-Sequence": "1",
          "Pg-Commit-Lsn": "0/16B3748", "Pg-Xid": "777", "Pg-Commit-Time": "2023-11-14T22:13:20.123456Z", "Pg-Operation": "commit",
        });
      } finally {
        await nc.close();
      }
    }));

  it("a stream whose last message this sink did not write is refused at start, and a writer beside it mid-run", () =>
    withNats(async (url) => {
      await addStream(url, "CDC", ["cdc.>"]);
      const nc = await connect({ servers: url });
      const js = nc.jetstream();
      try {
        const sink = await natsSink(natsOptions(`${url}?stream=CDC`));
        await sink.write(batch(["1"]));
        await js.publish("cdc.message", new TextEncoder().encode("not ours"), { msgID: "0/1:0" });
        const mid = await refusal(sink.write(batch(["2"], { lsn: 0x16b3800n })));
        expect(mid.message).toMatch(/stream CDC holds messages this sink did not write \(sequence 2 on cdc\.message, id 0\/1:0\)/);
        expect(mid.hint).toMatch(/only writer/);
        await sink.close();
        await js.publish("cdc.message", new TextEncoder().encode("no id"));
        const start = await refusal(natsSink(natsOptions(`${url}?stream=CDC`)));
        expect(start.message).toMatch(/last message of stream CDC \(sequence 3 on cdc\.message\) has no Nats-Msg-Id/);
        const h = headers();
        h.set("Nats-Msg-Id", "hello");
        await js.publish("cdc.message", new Uint8Array(), { headers: h });
        expect((await refusal(natsSink(natsOptions(`${url}?stream=CDC`)))).message).toMatch(/has id "hello", not a change id/);
      } finally {
        await nc.close();
      }
    }));

  it("a stream that went back (deleted and made again): a SinkError, not a silent restart", () =>
    withNats(async (url) => {
      await addStream(url, "CDC", ["cdc.>"]);
      const sink = await natsSink(natsOptions(`${url}?stream=CDC&ack_timeout=1s`));
      await sink.write(batch(["1", "2"]));
      const nc = await connect({ servers: url });
      try {
        const jsm = await nc.jetstreamManager();
        await jsm.streams.delete("CDC");
        await jsm.streams.add({ name: "CDC", subjects: ["cdc.>"] });
      } finally {
        await nc.close();
      }
      const e = await refusal(sink.write(batch(["3"], { lsn: 0x16b3800n })));
      expect(e.message).toMatch(/stream CDC went back from sequence 2 to 0: it lost messages it had confirmed/);
      await sink.close();
    }));

  it("close() while the broker is down: what it did not confirm is rejected, not resolved, and close() does not hang", () =>
    withNats(async (url, halt) => {
      const sink: NatsSink = await natsSink(natsOptions(`${url}?create=true&ack_timeout=300ms`));
      await sink.write(batch(["1"]));
      await halt();
      let settled = false;
      const pending = sink.write(batch(["2"], { lsn: 0x16b3800n })).finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 1000));
      expect(settled).toBe(false);
      expect(sink.pending).toBe(1);
      const started = Date.now();
      await sink.close();
      expect(Date.now() - started).toBeLessThan(2000);
      const e = await refusal(pending);
      expect(e.message).toMatch(/closed with 1 message\(s\) the stream CDC had not confirmed/);
    }));
});

describe("NATS sink: connecting", () => {
  it("credentials refused: at once, a SinkError with the remedy, the password never shown; the right ones work", () =>
    withNats(async (url) => {
      const hostPort = url.slice("nats://".length);
      const started = Date.now();
      const e = await refusal(natsSink(natsOptions(`nats://alice:wr0ng-pw@${hostPort}?create=true`)));
      expect(Date.now() - started).toBeLessThan(5000);
      expect(e.message).toMatch(/nats: nats:\/\/127\.0\.0\.1:\d+ refused the credentials/);
      expect(e.hint).toMatch(/user and password/);
      expect(JSON.stringify({ m: e.message, h: e.hint, t: e.details.target, c: String(e.cause ?? "") })).not.toContain("wr0ng-pw");
      const sink = await natsSink(natsOptions(`nats://alice:r1ght-pw@${hostPort}?create=true`));
      await sink.write(batch(["1"]));
      await sink.close();
    }, ["--user", "alice", "--pass", "r1ght-pw"]));

  it("a token: refused when wrong, never shown", () =>
    withNats(async (url) => {
      const hostPort = url.slice("nats://".length);
      const e = await refusal(natsSink(natsOptions(`nats://b4d-t0ken@${hostPort}?create=true`)));
      expect(`${e.message} ${e.hint}`).not.toContain("b4d-t0ken");
      const sink = await natsSink(natsOptions(`nats://g00d-t0ken@${hostPort}?create=true`));
      await sink.close();
    }, ["--auth", "g00d-t0ken"]));

  it("nothing listening: retried until connect_timeout, then a SinkError that says where and what to check", async () => {
    const port = await closedPort();
    const started = Date.now();
    const e = await refusal(natsSink(natsOptions(`nats://127.0.0.1:${port}?connect_timeout=1s`)));
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(e.message).toMatch(new RegExp(`cannot reach nats://127\\.0\\.0\\.1:${port} .* after 1 s`));
    expect(e.hint).toMatch(/nats-server running/);
  });
});

describe("NATS sink: mode=transaction through the pipeline", () => {
  it("a transaction cut into batches of one record each, its end alone in the last: the slot is confirmed only once the stream holds it", () =>
    withNats(async (url) => {
      const rel = { relationId: 16390, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }] };
      const frames: Uint8Array[] = [encode.relation(rel).bytes];
      for (let t = 0; t < 3; t++) {
        const finalLsn = 0x1000_0000n + BigInt(t) * 0x1000n;
        frames.push(encode.begin({ finalLsn, commitTime: 1_700_000_000_000_000n, xid: 900 + t }).bytes);
        for (let k = 0; k < 4; k++) frames.push(encode.insert({ relation: rel, newTuple: [String(t * 10 + k), `row ${t}.${k}`] }).bytes);
        frames.push(encode.commit({ commitLsn: finalLsn, endLsn: finalLsn + 0x30n, commitTime: 1_700_000_000_000_000n }).bytes);
      }
      const decoder = await createDecoder({ values: jsonl.values() });
      const sink = await natsSink(natsOptions(`${url}?create=true&mode=transaction`));
      const nc = await connect({ servers: url });
      const jsm = await nc.jetstreamManager();
      const early: string[] = [];
      const source: PipelineSource = {
        async *[Symbol.asyncIterator]() {
          for (const f of frames) yield decoder.decode(f) as SourceItem;
        },
        ack: (lsn) => {
          // Confirmed: the transaction that ends there must be in the stream already (asked a little later: it may hold more by then, never less).
          const commit = lsn - 0x30n;
          void jsm.streams.getMessage("CDC", { last_by_subj: "cdc.transaction" }).then(
            (m) => parseLsn(m.header.get("Nats-Msg-Id")) >= commit || early.push(`acked ${lsn.toString(16)}, stream at ${m.header.get("Nats-Msg-Id")}`),
            () => early.push(`acked ${lsn.toString(16)}, stream empty`),
          );
        },
        stop: async () => {},
      };
      try {
        // holdBytes 1: every record its own batch, so each Commit comes in a batch of its own, with no record.
        await new Pipeline({ source, format: jsonl.create({ decoder }, {}), sink, holdBytes: 1 }).run();
        await new Promise((r) => setTimeout(r, 200));
        expect(early).toEqual([]);
        const info = await jsm.streams.info("CDC");
        expect(info.state.messages).toBe(3);
        expect(transactionEnd(decoder.decode(frames[frames.length - 1]!))).toBe(0x1000_2030n);
      } finally {
        await nc.close();
      }
    }));
});
