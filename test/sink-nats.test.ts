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
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { ClientConfig } from "pg";
import { connect } from "nats";
import { startNats } from "../devkit/brokers/nats.ts";
import type { Broker } from "../devkit/brokers/tied.ts";
import type { PgMajor } from "../devkit/cluster/cluster.ts";
import { natsSink, natsOptions, type NatsSink } from "../bindings/sinks/nats.ts";
import { tableSubject } from "../bindings/sinks/nats-options.ts";
import { parseChangeId } from "../bindings/pipeline/change-id.ts";
import { formatLsn, parseLsn } from "../bindings/lsn.ts";
import { SinkError } from "../bindings/pipeline/sink.ts";
import { createSlots, expectedRecords, isRestartShape, rng, runWorkload, setupWorkload, streamInto, walEnd, type ExpectedRecord, type Workload } from "./support/sink-workload.ts";
import { delayProxy } from "./support/delay-proxy.ts";
import { frameFilter } from "./support/nats-frames.ts";
import { liveBytes } from "./support/memory.ts";
import { startClusters, startedCluster, stopClusters, type StartedCluster } from "./support/clusters.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";

type Ctx = StartedCluster;

const MAJORS: PgMajor[] = [15, 18];
const ctxs = new Map<PgMajor, Ctx>();
let seq = 0;

beforeAll(async () => {
  await startClusters(MAJORS, ctxs, startedCluster);
}, 120_000);

afterAll(async () => {
  await stopClusters(ctxs.values());
  await removeCli(CLI_OUT);
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

/** Every message of `stream`, in stream order (read by sequence, many requests in flight). */
async function readStream(url: string, stream: string): Promise<Stored[]> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await nc.jetstreamManager({ timeout: 30_000 });
    const { first_seq: first, last_seq: last, messages } = (await jsm.streams.info(stream)).state;
    const out: Stored[] = [];
    if (messages === 0) return out;
    const text = new TextDecoder();
    for (let from = first; from <= last; from += 64) {
      const got = await Promise.all(Array.from({ length: Math.min(64, last - from + 1) }, (_, k) => jsm.streams.getMessage(stream, { seq: from + k })));
      for (const m of got) {
        const headers: Record<string, string> = {};
        for (const k of m.header?.keys() ?? []) headers[k] = m.header.get(k);
        out.push({ seq: m.seq, subject: m.subject, id: headers["Nats-Msg-Id"] ?? "", headers, data: text.decode(m.data), time: m.time.getTime() });
      }
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

/** Runs `fn` with a nats-server of its own (JetStream on, an empty store), stopped afterwards whatever `fn` does. */
async function withNats(fn: (broker: Broker) => Promise<void>): Promise<void> {
  const broker = await startNats();
  try {
    await fn(broker);
  } finally {
    await broker.stop();
  }
}

/**
 * The stream CDC made on `broker` ahead of the sink (with `limits`), as an
 * operator does; then a sink on it (`?stream=CDC`, no create) reached at `via`
 * (a proxy's address; else the broker's), `params` added to its URL.
 */
async function cdcSink(broker: Broker, o: { limits?: Record<string, unknown>; via?: string; params?: string } = {}): Promise<NatsSink> {
  await createStream(broker.url, "CDC", o.limits);
  return natsSink(natsOptions(`${o.via ?? broker.url}?stream=CDC${o.params ?? ""}`));
}

/** The subject the sink puts an expected record on (default templates). */
function subjectOf(r: ExpectedRecord): string {
  if (r.table !== undefined) return tableSubject({ subject: "{prefix}.{schema}.{table}", prefix: "cdc" }, r.schema!, r.table);
  return r.kind === "message" ? "cdc.message" : "cdc.transaction";
}

/**
 * The stream holds exactly `expected`, once each, in commit order (so per subject too), payload and headers as documented;
 * `restarted`: besides, a first sight's RelationChanged that a restart inside a transaction adds (isRestartShape).
 */
function expectExactly(all: Stored[], expected: ExpectedRecord[], restarted = false): void {
  const want = new Set(expected.map((e) => e.id));
  const stored = restarted ? all.filter((m) => want.has(m.id) || !isRestartShape(m.id, m.data)) : all;
  const ids = stored.map((m) => m.id);
  expect(new Set(ids).size, "no id twice").toBe(ids.length);
  if (ids.length !== expected.length) {
    // Name the difference: which ids the stream holds that the reference has not, and the reverse.
    const have = new Set(ids);
    const extra = stored.filter((m) => !want.has(m.id)).map((m) => ({ seq: m.seq, id: m.id, subject: m.subject, data: m.data.slice(0, 200) }));
    const missing = expected.filter((e) => !have.has(e.id)).map((e) => ({ id: e.id, kind: e.kind, line: e.line.slice(0, 200) }));
    expect({ extra, missing, last: { stored: ids.at(-1), expected: expected.at(-1)?.id } }, "the stream holds exactly the reference's ids").toEqual({ extra: [], missing: [], last: {} });
  }
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

/** confirmed_flush_lsn of `slot`, every 100 ms, with the time each answer came back. */
function sampleFlush(config: ClientConfig, slot: string): { stop(): Promise<{ t: number; lsn: bigint }[]> } {
  const samples: { t: number; lsn: bigint }[] = [];
  let running = true;
  const loop = (async () => {
    const c = new pg.Client(config);
    await c.connect();
    try {
      while (running) {
        const started = Date.now();
        const { rows } = await c.query("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [slot]);
        if (rows[0]?.lsn) samples.push({ t: Date.now(), lsn: parseLsn(rows[0].lsn) });
        await sleep(Math.max(0, 100 - (Date.now() - started)));
      }
    } finally {
      await c.end();
    }
  })();
  return { stop: async () => ((running = false), await loop, samples) };
}

/** At every sample, each change of a transaction that commits before the slot's confirmed position was stored already. */
function expectFlushWithinStored(samples: { t: number; lsn: bigint }[], stored: Stored[], expected: ExpectedRecord[]): void {
  const storedAt = new Map(stored.map((m) => [m.id, m.time]));
  const recs = expected.map((e) => ({ id: e.id, lsn: parseChangeId(e.id)!.lsn, time: storedAt.get(e.id) ?? Infinity }));
  for (const s of samples) {
    const early = recs.find((r) => r.lsn < s.lsn && r.time > s.t);
    if (early !== undefined) expect.fail(`confirmed_flush_lsn ${formatLsn(s.lsn)} at ${s.t} passed ${early.id}, stored at ${early.time}`);
  }
}

async function slotFlush(config: ClientConfig, slot: string): Promise<bigint> {
  const c = new pg.Client(config);
  await c.connect();
  try {
    const { rows } = await c.query("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [slot]);
    return parseLsn(rows[0].lsn);
  } finally {
    await c.end();
  }
}

async function slotInactive(config: ClientConfig, slot: string): Promise<void> {
  const c = new pg.Client(config);
  await c.connect();
  try {
    for (let i = 0; i < 200; i++) {
      const { rows } = await c.query("SELECT active FROM pg_replication_slots WHERE slot_name = $1", [slot]);
      if (rows[0]?.active === false) return;
      await sleep(50);
    }
    throw new Error(`slot ${slot} still active after 10 s`);
  } finally {
    await c.end();
  }
}

const CLI_OUT = "cli-test-sink-nats";
let cli: Promise<string> | undefined;

/** `pgoutput-wasm tail --sink nats://…` as a user runs it (the compiled CLI), once its status line says it streams. */
async function startTail(ctx: Ctx, o: { publication: string; slot: string; url: string }): Promise<ChildProcess> {
  const main = await (cli ??= buildCli(CLI_OUT));
  const { host, port, user, database } = ctx.cluster;
  const args = ["tail", "-c", `postgres://${user}@${host}:${port}/${database}`, "--publication", o.publication, "--slot", o.slot, "--sink", o.url, "--progress"];
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
  const child = spawn(process.execPath, [main, ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (b) => {
      err += String(b);
      if (/^tail: \d+ lines/m.test(err)) resolve();
    });
    child.once("exit", (code) => reject(new Error(`tail exited (${code}) before streaming: ${err}`)));
  });
  return child;
}

async function kill9(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

/** One workload per server, streamed by several tests, each from a slot of its own made before it. */
interface Shared {
  w: Workload;
  end: bigint;
  expected: ExpectedRecord[];
  slot: (name: string) => string;
}

const SHARED_SLOTS = ["once", "again", "drop", "halt", "full", "txA", "txB"];

async function sharedWorkload(ctx: Ctx): Promise<Shared> {
  const { w, client, ref } = await prepare(ctx);
  try {
    const slots = new Map(SHARED_SLOTS.map((n) => [n, `${w.schema}_${n.toLowerCase()}`]));
    await createSlots(client, [...slots.values()]);
    await runWorkload(client, w, { transactions: 300, seed: ctx.major });
    const end = await walEnd(client);
    const expected = await expectedRecords(ctx.config, w, ref, end);
    return { w, end, expected, slot: (n) => slots.get(n)! };
  } finally {
    await client.end();
  }
}

/** The expected records grouped by transaction (commit LSN), in commit order. */
function transactionsOf(expected: ExpectedRecord[]): { lsn: bigint; records: ExpectedRecord[] }[] {
  const out: { lsn: bigint; records: ExpectedRecord[] }[] = [];
  for (const r of expected) {
    const lsn = parseChangeId(r.id)!.lsn;
    if (out.length === 0 || out[out.length - 1]!.lsn !== lsn) out.push({ lsn, records: [] });
    out[out.length - 1]!.records.push(r);
  }
  return out;
}

describe.each(MAJORS)("NATS JetStream sink, PostgreSQL %i", (major) => {
  const ctx = () => ctxs.get(major)!;
  let shared: Shared;

  beforeAll(async () => {
    shared = await sharedWorkload(ctx());
    expect(shared.expected.length).toBeGreaterThan(3000);
  }, 120_000);

  it("the workload: every change once, in commit order, payload the JSON line, headers; a restart after the duplicate window adds nothing", async () => {
    const { w, end, expected } = shared;
    await withNats(async (broker) => {
      const url = `${broker.url}?create=true&duplicate_window=1s`;
      const sink = await natsSink(natsOptions(url));
      expect(sink.stream).toBe("CDC");
      expect(await sink.delivered!()).toBeUndefined();
      await streamInto(ctx().config, w, shared.slot("once"), sink, end);
      const stored = await readStream(broker.url, "CDC");
      expectExactly(stored, expected);
      // A process started later, from a slot that sends everything again, once the stream forgot the ids.
      await sleep(1500);
      const again = await natsSink(natsOptions(url));
      expect(await again.delivered!()).toEqual(parseChangeId(expected[expected.length - 1]!.id));
      const result = await streamInto(ctx().config, w, shared.slot("again"), again, end);
      expect(result.stats.skipped).toBe(expected.length);
      expect(result.stats.records).toBe(0);
      expect((await readStream(broker.url, "CDC")).map((m) => m.id)).toEqual(stored.map((m) => m.id));
    });
  }, 60_000);

  it("mode=transaction: one message per transaction, its JSON Lines, the commit LSN as id; a restart adds nothing", async () => {
    const { w, end, expected } = shared;
    await withNats(async (broker) => {
      const url = `${broker.url}?create=true&stream=TX&mode=transaction&duplicate_window=1s`;
      const sink = await natsSink(natsOptions(url));
      // Small batches: the pipeline cuts the larger transactions (holdBytes), and the sink puts them together again.
      await streamInto(ctx().config, w, shared.slot("txA"), sink, end, { window: { records: 50 } });
      const stored = await readStream(broker.url, "TX");
      const txns = transactionsOf(expected);
      expect(stored.map((m) => m.id)).toEqual(txns.map((t) => formatLsn(t.lsn)));
      for (let i = 0; i < txns.length; i++) {
        const m = stored[i]!;
        expect(m.subject).toBe("cdc.transaction");
        expect(m.data).toBe(txns[i]!.records.map((r) => `${r.line}\n`).join(""));
        expect(m.headers["Pg-Changes"]).toBe(String(txns[i]!.records.length));
        expect(m.headers["Pg-Operation"]).toBe("transaction");
        expect(m.headers["Pg-Commit-Lsn"]).toBe(m.id);
      }
      await sleep(1500);
      const again = await natsSink(natsOptions(url));
      expect(await again.delivered!()).toEqual({ lsn: txns[txns.length - 1]!.lsn, index: Number.MAX_SAFE_INTEGER });
      const result = await streamInto(ctx().config, w, shared.slot("txB"), again, end);
      expect(result.stats.skipped).toBe(expected.length);
      expect((await readStream(broker.url, "TX")).length).toBe(txns.length);
    });
  }, 60_000);

  it("a publish the network loses, one it delivers late, PubAcks lost for 1.5 s: published again in order, nothing reordered, nothing twice", async () => {
    const { w, end, expected } = shared;
    await withNats(async (broker) => {
      // Three faults, each once the sink is publishing again after the round the one before caused (faults close in
      // time would share a round; a round is over when it publishes again what was not stored, in order): the 40th
      // change's first publish never reaches the server; the 200th new one after that reaches it late (the ones
      // after it are refused meanwhile); 200 PubAcks after that, none for 1.5 s (the stream holds what the sink has
      // no answer for, and says so when asked).
      const seen = new Set<string>();
      const fates: string[] = [];
      /** 0 before the drop; 1 and 3 waiting for the round to publish again; 2 counting new changes; 4 counting PubAcks; 5 PubAcks lost. */
      let phase = 0;
      let counted = 0;
      let ackless = { from: Infinity, to: Infinity };
      const proxy = await delayProxy(broker.port, 0, {
        fromClient: frameFilter((f) => {
          const id = /Nats-Msg-Id: ([^\r]+)/.exec(f.headers)?.[1];
          if (id === undefined) return "pass";
          const again = seen.has(id);
          seen.add(id);
          if (phase === 0 && seen.size === 40) {
            phase = 1;
            fates.push(`dropped ${id}`);
            return "drop";
          }
          if ((phase === 1 || phase === 3) && again) {
            phase++;
            counted = 0;
          } else if (phase === 2 && !again && ++counted === 200) {
            phase = 3;
            fates.push(`delayed ${id}`);
            return 1500;
          }
          return "pass";
        }),
        fromServer: frameFilter((f) => {
          // PubAcks of stored messages only: not refusals, nor the answers to the sink's reads of the stream.
          if (!/^\{"stream":"[^"]+",\s*"seq":\d+/.test(f.payload.toString())) return "pass";
          if (phase === 4 && ++counted === 200) {
            phase = 5;
            ackless = { from: Date.now(), to: Date.now() + 1500 };
          }
          const now = Date.now();
          return now >= ackless.from && now < ackless.to ? "drop" : "pass";
        }),
      });
      try {
        const sink = await cdcSink(broker, { via: `nats://127.0.0.1:${proxy.port}`, params: "&ack_timeout=500ms" });
        await streamInto(ctx().config, w, shared.slot("drop"), sink, end);
        expect(fates).toHaveLength(2);
        expect(phase, "the PubAcks were lost for 1.5 s").toBe(5);
        expect(sink.resyncs).toBeGreaterThanOrEqual(3);
        expect(sink.recovered).toBeGreaterThan(0);
        // Its metrics (docs/metrics.md): a resynchronization round is a retry; all acknowledged in the end.
        const metrics = await sink.metrics!();
        expect(metrics).toContain(`pgoutput_wasm_sink_retries_total{sink="nats"} ${sink.resyncs}\n`);
        expect(metrics).toContain('pgoutput_wasm_sink_in_flight_records{sink="nats"} 0\n');
        expect(metrics).toContain('pgoutput_wasm_sink_errors_total{sink="nats"} 0\n');
        expectExactly(await readStream(broker.url, "CDC"), expected);
      } finally {
        await proxy.close();
      }
    });
  }, 60_000);

  it("the broker stopped for 10 s mid-stream: nothing lost; the slot never passes what the stream holds (sampled every 100 ms)", async () => {
    const { w, end, expected } = shared;
    const slot = shared.slot("halt");
    await withNats(async (broker) => {
      const sink = await cdcSink(broker);
      const sampler = sampleFlush(ctx().config, slot);
      let halted: Promise<void> | undefined;
      let down: { from: number; to: number } | undefined;
      await streamInto(ctx().config, w, slot, sink, end, {
        window: { records: 300 },
        replicate: { statusIntervalMs: 100 },
        started: (pipeline) => {
          const watch = setInterval(() => {
            if (halted !== undefined || pipeline.stats.durable < expected.length / 3) return;
            clearInterval(watch);
            halted = (async () => {
              const from = Date.now();
              await broker.halt();
              await sleep(10_000);
              await broker.start();
              down = { from, to: Date.now() };
            })();
          }, 5);
        },
      });
      await halted;
      const samples = await sampler.stop();
      expect(down).toBeDefined();
      const during = samples.filter((s) => s.t > down!.from + 500 && s.t < down!.to);
      expect(during.length).toBeGreaterThan(50);
      expect(sink.resyncs).toBeGreaterThanOrEqual(1);
      const stored = await readStream(broker.url, "CDC");
      expectExactly(stored, expected);
      expectFlushWithinStored(samples, stored, expected);
      // The slot moved before the stop, held still during it, and caught up after: the stream may end within a
      // sampling interval of the broker's return (it had everything by then), so the last status update, sent as
      // the stream stopped, is awaited on the server rather than looked for among the samples.
      const firstLsn = parseChangeId(expected[0]!.id)!.lsn;
      expect(during[0]!.lsn).toBeGreaterThan(firstLsn);
      expect(during[during.length - 1]!.lsn).toBe(during[0]!.lsn);
      let after = samples[samples.length - 1]!.lsn;
      for (const deadline = Date.now() + 5000; after <= during[0]!.lsn && Date.now() < deadline; await sleep(100)) after = await slotFlush(ctx().config, slot);
      expect(after).toBeGreaterThan(during[0]!.lsn);
    });
  }, 90_000);

  it("a stream at its byte limit (discard new): a SinkError naming the subject and the remedy; the slot not advanced past what it holds", async () => {
    const { w, end, expected } = shared;
    const slot = shared.slot("full");
    await withNats(async (broker) => {
      const sink = await cdcSink(broker, { limits: { max_bytes: 300_000, discard: "new" as never } });
      const error = await streamInto(ctx().config, w, slot, sink, end, { replicate: { statusIntervalMs: 100 } }).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(SinkError);
      const e = error as SinkError;
      expect(e.message).toMatch(/stream CDC refused cdc\.nats\d+\.\w+ \(id [0-9A-F]+\/[0-9A-F]+:\d+\): maximum bytes exceeded/);
      expect(e.details.target).toMatch(/^cdc\./);
      expect(e.hint).toMatch(/max_bytes/);
      const stored = await readStream(broker.url, "CDC");
      expect(stored.length).toBeGreaterThan(0);
      expect(stored.length).toBeLessThan(expected.length);
      expect(stored.map((m) => m.id)).toEqual(expected.slice(0, stored.length).map((r) => r.id));
      const flushed = await slotFlush(ctx().config, slot);
      const firstMissing = parseChangeId(expected[stored.length]!.id)!.lsn;
      expect(flushed).toBeLessThanOrEqual(firstMissing);
      expectFlushWithinStored([{ t: Date.now(), lsn: flushed }], stored, expected);
    });
  }, 60_000);

  it("tail --sink nats://… killed with SIGKILL at five random points during the workload, restarted on the same slot: every change exactly once, none missing", async () => {
    await withNats(async (broker) => {
      const { w, client, ref, slot } = await prepare(ctx());
      const children: ChildProcess[] = [];
      try {
        await createStream(broker.url, "CDC");
        const tail = { publication: w.publication, slot, url: `${broker.url}?stream=CDC` };
        // Paced (about 12 s or more): the five kills must each fall while the stream still grows, however fast the machine.
        const workload = runWorkload(client, w, { transactions: 200, seed: major + 3, pauseMs: 60 });
        const random = rng(major * 7919);
        const counts: number[] = [];
        for (let k = 0; k < 5; k++) {
          const child = await startTail(ctx(), tail);
          children.push(child);
          // A random point once this run has delivered something (however slow the machine), so each kill falls mid-stream.
          const before = counts[counts.length - 1] ?? 0;
          for (let i = 0; i < 150 && (await streamCount(broker.url, "CDC")) <= before; i++) await sleep(100);
          await sleep(random() * 800);
          await kill9(child);
          await slotInactive(ctx().config, slot);
          counts.push(await streamCount(broker.url, "CDC"));
        }
        await workload;
        const end = await walEnd(client);
        const expected = await expectedRecords(ctx().config, w, ref, end);
        const last = await startTail(ctx(), tail);
        children.push(last);
        for (let i = 0; i < 600 && (await streamCount(broker.url, "CDC")) < expected.length; i++) await sleep(100);
        await sleep(500); // anything extra would show now
        // A stop by signal drains and exits 0.
        const exited = new Promise<number | null>((r) => last.once("exit", (code) => r(code)));
        last.kill("SIGTERM");
        expect(await exited).toBe(0);
        // The kills fell mid-stream: the stream grew between them, and held only part of the changes.
        expect(new Set(counts).size).toBeGreaterThanOrEqual(4);
        expect(counts.filter((c) => c > 0 && c < expected.length).length).toBeGreaterThanOrEqual(3);
        expectExactly(await readStream(broker.url, "CDC"), expected, true);
      } finally {
        for (const c of children) await kill9(c);
        await client.end();
      }
    });
  }, 120_000);

  it("a slow broker (40 ms round trips): memory stays within the window while a 40 MB backlog goes through", async () => {
    await withNats(async (broker) => {
      const { w, client, slot } = await prepare(ctx());
      const proxy = await delayProxy(broker.port, 20);
      try {
        for (let t = 0; t < 20; t++) await client.query(`INSERT INTO ${w.schema}.plain SELECT g, repeat('x', 2000) FROM generate_series(${t * 1000 + 1}, ${(t + 1) * 1000}) g`);
        const end = await walEnd(client);
        const sink = await cdcSink(broker, { via: `nats://127.0.0.1:${proxy.port}` });
        const window = { records: 200, bytes: 512 << 10 };
        const base = liveBytes();
        let peak = 0;
        let peakInFlight = 0;
        let timer: ReturnType<typeof setInterval> | undefined;
        await streamInto(ctx().config, w, slot, sink, end, {
          window,
          replicate: { highWaterMark: 1 << 20, lowWaterMark: 256 << 10 },
          started: (pipeline) => {
            timer = setInterval(() => {
              peak = Math.max(peak, liveBytes() - base);
              peakInFlight = Math.max(peakInFlight, pipeline.stats.inFlightBytes);
            }, 200);
          },
        });
        clearInterval(timer);
        expect(await streamCount(broker.url, "CDC")).toBe(20_000);
        // In flight: the window and one batch over it (a batch is cut at 1 MiB inside a transaction).
        expect(peakInFlight).toBeLessThanOrEqual(window.bytes + (1 << 20) + 8192);
        expect(peak).toBeLessThan(24 << 20);
      } finally {
        await proxy.close();
        await client.end();
      }
    });
  }, 90_000);
});

async function streamCount(url: string, stream: string): Promise<number> {
  const nc = await connect({ servers: url });
  try {
    return (await (await nc.jetstreamManager()).streams.info(stream)).state.messages;
  } finally {
    await nc.close();
  }
}
