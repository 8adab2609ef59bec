/**
 * The cloudevents format (bindings/formats/cloudevents.ts) against real
 * PostgreSQL 15 and 18 through a walsender and the library's Pipeline,
 * every event validated by the `cloudevents` SDK: structured events parsed
 * with `new CloudEvent()` (strict), binary ones read back from their
 * headers with `HTTP.toEvent()`; and through the real sinks: the HTTP sink
 * into a webhook (binary mode, one request per event; structured alone and
 * batched, `format=array`) and the NATS sink into a real nats-server
 * (JetStream), whose message headers carry the binary mode's attributes.
 * The options it refuses, before anything starts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CloudEvent, HTTP, type CloudEventV1 } from "cloudevents";
import { connect, type JsMsg } from "nats";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { startNats } from "../devkit/brokers/nats.ts";
import type { Broker } from "../devkit/brokers/tied.ts";
import { cloudevents } from "../bindings/formats/cloudevents.ts";
import { formatOptions } from "../bindings/formats/index.ts";
import { httpSink } from "../bindings/sinks/http.ts";
import { writableSink } from "../bindings/sinks/stdout.ts";
import { Records, RecordTransaction } from "../bindings/pipeline/records.ts";
import { PassThrough } from "node:stream";
import { natsOptions, natsSink } from "../bindings/sinks/nats.ts";
import type { FormatOptionValues } from "../bindings/pipeline/format.ts";
import type { Sink } from "../bindings/pipeline/sink.ts";
import { timestampToISO } from "../bindings/time.ts";
import { streamFormat, type StreamedRecord } from "./support/format-stream.ts";
import { startWebhook } from "./support/webhook.ts";
import * as docs from "./support/debezium-docs.ts";

const SETUP = `CREATE SCHEMA inventory; CREATE TABLE inventory.customers (id int PRIMARY KEY, first_name text NOT NULL, last_name text NOT NULL, email text NOT NULL);
  CREATE PUBLICATION ce_pub FOR TABLE inventory.customers`;

async function workload(c: import("pg").Client): Promise<void> {
  await c.query("BEGIN; INSERT INTO inventory.customers VALUES (1, 'Anne', 'Kretchmar', 'annek@noanswer.org'); INSERT INTO inventory.customers VALUES (2, 'Sally', 'Thomas', 'st@acme.com'); COMMIT");
  await c.query("UPDATE inventory.customers SET first_name = 'Anne Marie' WHERE id = 1");
  await c.query("DELETE FROM inventory.customers WHERE id = 2");
  await c.query("SELECT pg_logical_emit_message(true, 'foo', 'bar é')");
}

const KINDS = ["insert", "insert", "update", "delete", "message"];

/**
 * What every event of the workload must say, whatever the mode: its
 * attributes from the record's facts. The SDK's HTTP.toEvent() reads `time`
 * through a Date (ms) on some paths: `headers` then holds what it read (`ce-time`: the
 * header, or the structured event's own `time`), which must have the µs.
 */
function checkAttributes(e: CloudEventV1<unknown>, r: StreamedRecord, slot: string, headers?: Record<string, unknown>): void {
  expect(e.specversion).toBe("1.0");
  expect(e.id).toBe(r.id);
  expect(e.source).toBe(`/postgresql/postgres/${slot}`);
  expect(e.type).toBe(r.kind === "message" ? "postgresql.message" : `postgresql.change.${r.kind}`);
  expect(e.subject).toBe(r.table === undefined ? undefined : `inventory.${r.table}`);
  const time = timestampToISO(r.time!);
  if (headers === undefined) expect(e.time).toBe(time);
  else {
    expect([time, new Date(time).toISOString()]).toContain(e.time);
    if (headers["ce-time"] !== undefined) expect(headers["ce-time"]).toBe(time);
  }
  expect(e.datacontenttype).toBe("application/json");
  expect(e.pgoutputlsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
}

for (const major of [15, 18] as const) {
  describe(`cloudevents, PostgreSQL ${major}`, () => {
    let cluster: Cluster;
    let nats: Broker | undefined;
    let slot = 0;

    beforeAll(async () => {
      [cluster, nats] = await Promise.all([startCluster(major), major === 18 ? startNats() : undefined]);
      await cluster.query(SETUP);
    }, 120_000);

    afterAll(async () => {
      await nats?.stop();
      await cluster?.stop();
    });

    async function events(options: FormatOptionValues, sink?: Sink): Promise<{ records: StreamedRecord[]; slot: string }> {
      await cluster.query("TRUNCATE inventory.customers");
      const name = `ce_${++slot}`;
      const records = await streamFormat(cluster, {
        slot: name, publication: "ce_pub", format: cloudevents, options, messages: true, database: "postgres", workload, sink,
      });
      return { records, slot: name };
    }

    it("structured (the default, data jsonl): each line a valid CloudEvent of the change, its data the JSON Lines' line", async () => {
      const { records, slot } = await events({});
      expect(records.map((r) => r.kind)).toEqual(KINDS);
      for (const r of records) {
        const json = JSON.parse(r.text) as CloudEventV1<Record<string, unknown>>;
        const e = new CloudEvent(json); // strict: throws a ValidationError on any attribute the spec refuses
        checkAttributes(e, r, slot);
        expect(r.headers).toBeUndefined();
      }
      const data = records.map((r) => (JSON.parse(r.text) as { data: Record<string, unknown> }).data);
      expect(data.map((d) => d.action)).toEqual(["I", "I", "U", "D", "M"]);
      expect(data[0]!.columns).toEqual([
        { name: "id", type: "integer", value: 1 }, { name: "first_name", type: "text", value: "Anne" },
        { name: "last_name", type: "text", value: "Kretchmar" }, { name: "email", type: "text", value: "annek@noanswer.org" },
      ]);
      expect(data[4]).toMatchObject({ prefix: "foo", content: "bar é" });
    }, 120_000);

    it("binary, data debezium: the Debezium event as the body, the attributes as ce- headers (HTTP.toEvent), the key to sinks", async () => {
      const { records, slot } = await events({ mode: "binary", data: "debezium" });
      expect(records.map((r) => r.kind)).toEqual(KINDS);
      for (const r of records) {
        const e = HTTP.toEvent({ headers: r.headers!, body: r.text }) as CloudEventV1<Record<string, unknown>>;
        checkAttributes(e, r, slot, r.headers);
        expect(e.data).toEqual(JSON.parse(r.text));
      }
      const shapes = [docs.CREATE, { ...docs.CREATE, after: { ...docs.CREATE.after, id: 2, first_name: "Sally", last_name: "Thomas", email: "st@acme.com" } }, docs.UPDATE, docs.DELETE];
      expect(records.slice(0, 4).map((r, i) => docs.shapeDiff(JSON.parse(r.text), shapes[i]!))).toEqual([[], [], [], []]);
      expect(records.map((r) => r.key)).toEqual(['{"id":1}', '{"id":2}', '{"id":1}', '{"id":2}', '{"prefix":"foo"}']);
    }, 120_000);

    it("through the HTTP sink: binary mode one event per request; structured alone, and batched with format=array", async () => {
      const hook = await startWebhook();
      try {
        const binary = await httpSink(`${hook.url}?batch_records=100`);
        const { records, slot } = await events({ mode: "binary", data: "debezium" }, binary);
        await binary.close();
        expect(hook.accepted).toHaveLength(records.length);
        hook.accepted.forEach((req, i) => {
          const e = HTTP.toEvent({ headers: req.headers, body: req.body.toString() }) as CloudEventV1<unknown>;
          checkAttributes(e, records[i]!, slot, req.headers);
          expect(e.data).toEqual(JSON.parse(records[i]!.text));
          expect(req.headers["change-ids"]).toBe(records[i]!.id);
        });

        hook.accepted.length = 0;
        const alone = await httpSink(`${hook.url}?batch_records=1`);
        const structured = await events({}, alone);
        await alone.close();
        expect(hook.accepted.map((req) => req.headers["content-type"])).toEqual(KINDS.map(() => "application/cloudevents+json"));
        hook.accepted.forEach((req, i) => checkAttributes(HTTP.toEvent({ headers: req.headers, body: req.body.toString() }) as CloudEventV1<unknown>, structured.records[i]!, structured.slot, { "ce-time": JSON.parse(req.body.toString()).time }));

        hook.accepted.length = 0;
        const array = await httpSink(`${hook.url}?format=array`);
        const batched = await events({}, array);
        await array.close();
        const raw = hook.accepted.flatMap((req) => JSON.parse(req.body.toString()) as { time: string }[]);
        const got = hook.accepted.flatMap((req) => {
          expect(req.headers["content-type"]).toBe("application/cloudevents-batch+json");
          return HTTP.toEvent({ headers: req.headers, body: req.body.toString() }) as CloudEventV1<unknown>[];
        });
        expect(got).toHaveLength(KINDS.length);
        got.forEach((e, i) => checkAttributes(e, batched.records[i]!, batched.slot, { "ce-time": raw[i]!.time }));
      } finally {
        await hook.close();
      }
    }, 120_000);

    it("through the NATS sink: binary mode's ce- headers on each JetStream message, structured with its Content-Type", async () => {
      if (nats === undefined) return; // one PostgreSQL is enough for the broker's side
      const nc = await connect({ servers: nats.url });
      try {
        const jsm = await nc.jetstreamManager();
        for (const [name, options] of [["CE_BIN", { mode: "binary", data: "debezium" }], ["CE_STR", {}]] as const) {
          await jsm.streams.add({ name, subjects: [`${name}.>`], storage: "file" as never });
          const sink = await natsSink(natsOptions(`${nats.url}?stream=${name}&prefix=${name}`));
          const { records, slot } = await events(options, sink);
          await sink.close();
          const stored: JsMsg[] = [];
          const consumer = await nc.jetstream().consumers.get(name);
          for await (const m of await consumer.fetch({ max_messages: records.length, expires: 10_000 })) {
            stored.push(m);
            if (stored.length === records.length) break;
          }
          expect(stored).toHaveLength(records.length);
          stored.forEach((m, i) => {
            const headers = Object.fromEntries([...m.headers!.keys()].map((k) => [k.toLowerCase(), m.headers!.get(k)]));
            const body = new TextDecoder().decode(m.data);
            if (name === "CE_BIN") {
              const e = HTTP.toEvent({ headers, body }) as CloudEventV1<unknown>;
              checkAttributes(e, records[i]!, slot, headers);
              expect(headers["pg-key"]).toBe(records[i]!.key); // Debezium's key struct
              expect(e.data).toEqual(JSON.parse(records[i]!.text));
            } else {
              expect(headers["content-type"]).toBe("application/cloudevents+json");
              checkAttributes(new CloudEvent(JSON.parse(body) as CloudEventV1<unknown>), records[i]!, slot);
            }
          });
        }
        // A sink with no place for headers refuses binary events rather than write their data alone.
        const out = new PassThrough();
        const written: Buffer[] = [];
        out.on("data", (b: Buffer) => written.push(b));
        await expect(events({ mode: "binary" }, writableSink(out))).rejects.toThrow(/stdout: the records carry their attributes in headers \(cloudevents mode=binary\), which stdout has no place for/);
        expect(written).toEqual([]);
        const refused = await natsSink(natsOptions(`${nats.url}?stream=CE_BIN&prefix=CE_BIN&mode=transaction`));
        await expect(events({ mode: "binary" }, refused)).rejects.toThrow(/mode=transaction sends a transaction as one message, which has no place for each record's own headers/);
        await refused.close();
      } finally {
        await nc.close();
      }
    }, 120_000);
  });
}

describe("the HTTP sink and headers only some records have", () => {
  it("batched as usual (Debezium's key-change headers have no place in a batch); headers on every record: one request each", async () => {
    const hook = await startWebhook();
    try {
      const make = (every: boolean) => {
        const r = new Records();
        r.txn = new RecordTransaction(7, 0x1000n, 0n);
        if (every) r.headers = (_, i) => ({ "ce-id": String(i), "content-type": "application/json" });
        for (const [i, line] of ['{"a":1}', '{"b":2}'].entries()) {
          r.bytes.str(`${line}\n`);
          if (i === 0) r.header("__debezium.newkey", '{"id":2}');
          r.end("insert");
        }
        return r;
      };
      const sink = await httpSink(hook.url);
      await sink.write(make(false));
      expect(hook.accepted.map((q) => [q.body.toString(), q.headers["content-type"], q.headers["__debezium.newkey"]])).toEqual([['{"a":1}\n{"b":2}\n', "application/x-ndjson", undefined]]);
      hook.accepted.length = 0;
      await sink.write(make(true));
      expect(hook.accepted.map((q) => [q.body.toString(), q.headers["content-type"], q.headers["ce-id"], q.headers["__debezium.newkey"]])).toEqual([
        ['{"a":1}', "application/json", "0", '{"id":2}'], ['{"b":2}', "application/json", "1", undefined],
      ]);
      await sink.close();
    } finally {
      await hook.close();
    }
  });
});

describe("cloudevents options", () => {
  const check = (o: FormatOptionValues) => () => formatOptions(cloudevents, o);

  it("refuses what does not apply, naming why", () => {
    expect(check({ mode: "batch" })).toThrow(/option mode takes structured, binary, not "batch"/);
    expect(check({ data: "wal2json" })).toThrow(/option data takes jsonl, debezium, not "wal2json"/);
    expect(check({ "decimal-handling": "string" })).toThrow(/option decimal-handling is debezium's: it applies with -o data=debezium, not data=jsonl/);
    expect(check({ data: "debezium", transactions: true })).toThrow(/option transactions is jsonl's: it applies with -o data=jsonl, not data=debezium/);
    expect(check({ pretty: true })).toThrow(/format cloudevents has no option "pretty"/);
    expect(check({ source: " " })).toThrow(/source must not be empty/);
    expect(check({ data: "debezium", "skipped-operations": ["none", "c"] })).toThrow(/none leaves nothing out/);
    expect(check({ data: "debezium", mode: "binary", "decimal-handling": "precise" })()).toBeDefined();
  });
});
