/**
 * The Redis Streams sink (bindings/sinks/redis.ts) against a real
 * redis-server (devkit/brokers: AOF, fsync always) and PostgreSQL 15 and 18:
 * the shared workload lands exactly once, in commit order per stream, payload
 * equal to the JSON line; a call refused in the middle of a pipeline (a
 * proxy makes the server answer NOSCRIPT for it alone) cannot let the ones
 * behind it land first; Redis halted for 10 s mid-stream loses nothing and
 * the slot never passes what Redis holds; kill -9 of the consuming process
 * at five points adds no duplicate and loses nothing; refusals that
 * retrying will not change are SinkErrors that name the stream and hide the
 * password.
 */
import { spawn, type ChildProcess } from "node:child_process";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PgMajor } from "../devkit/cluster/cluster.ts";
import { startRedis } from "../devkit/brokers/redis.ts";
import type { Broker } from "../devkit/brokers/tied.ts";
import { formatLsn, parseLsn } from "../bindings/lsn.ts";
import { parseChangeId } from "../bindings/pipeline/change-id.ts";
import { Records, RecordTransaction } from "../bindings/pipeline/records.ts";
import { SinkError } from "../bindings/pipeline/sink.ts";
import type { Relation } from "../bindings/relation.ts";
import { redisSink } from "../bindings/sinks/redis.ts";
import { entryIdOf } from "../bindings/sinks/redis-append.ts";
import {
  confirmedFlush, createSlots, expectedRecords, isRestartShape, runWorkload, setupWorkload, startWorkloadServers, streamInto, walEnd,
  type ExpectedRecord, type Workload, type WorkloadServer,
} from "./support/sink-workload.ts";
import { streamUntil } from "./support/sink-run.ts";
import { compareEntryIds, readStreams, redisCli, topEntryId, topEntryIdInAof, type StreamEntry } from "./support/redis-read.ts";
import { respProxy, unknownScript } from "./support/resp-proxy.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";

const CLI_FOLDER = "cli-test-sink-redis";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const brokers = new Set<Broker>();
async function redis(extra: string[] = []): Promise<Broker> {
  const b = await startRedis(["--auto-aof-rewrite-percentage", "0", ...extra]);
  brokers.add(b);
  return b;
}
afterAll(async () => {
  for (const b of brokers) await b.stop();
});

/** A batch of `txns` transactions of `count` inserts each into table `t` (lines `{"t":n,"k":k}`), commit LSNs from `lsn`. */
function batch(txns: { lsn: bigint; count: number; table?: string }[]): Records {
  const r = new Records();
  for (const t of txns) {
    r.txn = new RecordTransaction(Number(t.lsn % 100000n), t.lsn, 1_700_000_000_000_000n);
    const rel = t.table === undefined ? undefined : ({ namespace: "public", name: t.table } as Relation);
    for (let k = 0; k < t.count; k++) {
      r.bytes.str(`{"lsn":"${formatLsn(t.lsn)}","k":${k}}\n`);
      r.end("insert", rel);
    }
    r.acks.push({ after: r.length, lsn: t.lsn + 0x30n });
  }
  return r;
}

const lsns = (n: number, from = 0x1000_0000n) => Array.from({ length: n }, (_, i) => from + BigInt(i) * 0x100n);

describe("redis sink against redis-server", () => {
  it("ids from positions: a replay is answered 'not newer' and taken as delivered; delivered() reads the position key", async () => {
    const b = await redis();
    const sink = await redisSink(`${b.url}?entries_per_call=7`);
    expect(await sink.delivered()).toBeUndefined();
    const records = batch(lsns(5).map((lsn) => ({ lsn, count: 4, table: "t" })));
    await sink.write(records);
    await sink.write(records); // every entry again: refused by the server as not newer, and so confirmed
    await sink.close();
    const streams = await readStreams(b.port);
    const entries = streams.get("cdc:public.t")!;
    expect(entries.map((e) => e.id)).toEqual(lsns(5).flatMap((lsn) => [0, 1, 2, 3].map((k) => entryIdOf({ lsn, index: k }))));
    expect(entries[5]!.fields).toEqual({
      id: `${formatLsn(0x1000_0100n)}:1`, op: "insert", table: "public.t", xid: String(0x1000_0100n % 100000n), time: "2023-11-14T22:13:20.000000Z",
      payload: `{"lsn":"${formatLsn(0x1000_0100n)}","k":1}`,
    });
    const again = await redisSink(b.url);
    expect(await again.delivered()).toEqual({ lsn: 0x1000_0400n, index: 3 });
    await again.close();
  });

  it("one call refused in the middle of a pipeline (NOSCRIPT for it alone): the calls behind it do not land first; all land once, in order", async () => {
    const b = await redis();
    // The 3rd script call of the first connection is sent with a SHA-1 no script has: the server refuses it and runs nothing,
    // while the calls pipelined behind it reach the server intact.
    const proxy = await respProxy(b.port, (cmd, name, n) => (name === "EVALSHA" && n === 2 ? unknownScript(cmd) : cmd));
    try {
      const sink = await redisSink(`redis://127.0.0.1:${proxy.port}?entries_per_call=5`);
      const records = batch(lsns(40).map((lsn) => ({ lsn, count: 3, table: "t" })));
      await sink.write(records);
      await sink.close();
      const entries = (await readStreams(b.port)).get("cdc:public.t")!;
      expect(entries.map((e) => e.id)).toEqual(lsns(40).flatMap((lsn) => [0, 1, 2].map((k) => entryIdOf({ lsn, index: k }))));
      expect(new Set(entries.map((e) => e.fields.id)).size).toBe(120);
      // The 24 calls were pipelined: all sent before the answer to the 3rd came back, and the 22 from it on sent again.
      expect(proxy.seen.filter((n) => n === "EVALSHA").length).toBe(24 + 22);
    } finally {
      await proxy.close();
    }
  });

  it("OOM (maxmemory reached, noeviction): retried until memory comes back; nothing confirmed before, nothing lost, in order", async () => {
    const b = await redis(["--maxmemory-policy", "noeviction"]);
    const retries: string[] = [];
    const sink = await redisSink(b.url, undefined, { onRetry: (r) => retries.push(r.error) });
    await sink.write(batch(lsns(10).map((lsn) => ({ lsn, count: 2, table: "t" }))));
    await redisCli(b.port, "CONFIG", "SET", "maxmemory", "1");
    let done = false;
    const later = sink.write(batch(lsns(10, 0x2000_0000n).map((lsn) => ({ lsn, count: 2, table: "t" })))).then(() => (done = true));
    for (let i = 0; i < 100 && retries.length < 2; i++) await sleep(20);
    expect(retries[0]).toMatch(/^OOM /);
    expect(done, "not confirmed while redis refuses").toBe(false);
    await redisCli(b.port, "CONFIG", "SET", "maxmemory", "0");
    await later;
    // Its metrics (docs/metrics.md): each retry told, everything acknowledged, nothing in flight, no permanent error.
    const metrics = await sink.metrics();
    expect(metrics).toContain(`pgoutput_wasm_sink_retries_total{sink="redis"} ${retries.length}\n`);
    expect(metrics).toContain('pgoutput_wasm_sink_acked_records_total{sink="redis"} 40\n');
    expect(metrics).toContain('pgoutput_wasm_sink_in_flight_records{sink="redis"} 0\n');
    expect(metrics).toContain('pgoutput_wasm_sink_errors_total{sink="redis"} 0\n');
    await sink.close();
    const ids = (await readStreams(b.port)).get("cdc:public.t")!.map((e) => e.id);
    expect(ids).toEqual([...lsns(10), ...lsns(10, 0x2000_0000n)].flatMap((lsn) => [entryIdOf({ lsn, index: 0 }), entryIdOf({ lsn, index: 1 })]));
  });

  it("entries redis had confirmed are gone (the position key behind what it answered): a SinkError, nothing written after", async () => {
    const b = await redis();
    const sink = await redisSink(b.url);
    await sink.write(batch([{ lsn: 0x7000n, count: 2, table: "t" }]));
    // As after a restart that lost the last second of an appendfsync everysec AOF.
    await redisCli(b.port, "SET", "cdc:position", "0000000000001000000000000000");
    const e = await sink.write(batch([{ lsn: 0x8000n, count: 2, table: "t" }])).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(SinkError);
    expect((e as SinkError).message).toMatch(/position key cdc:position is at "0000000000001000000000000000", behind 000000000000700000000001ffff/);
    expect((e as SinkError).hint).toMatch(/lost writes/);
    await sink.close();
    expect(await redisCli(b.port, "XLEN", "cdc:public.t")).toBe(2);
  });

  it("WRONGTYPE: a SinkError naming the stream and the remedy; nothing after the refused entry lands", async () => {
    const b = await redis();
    await redisCli(b.port, "SET", "cdc:public.u", "not a stream");
    const sink = await redisSink(b.url);
    const records = batch([
      { lsn: 0x2000n, count: 2, table: "t" },
      { lsn: 0x2100n, count: 2, table: "u" },
      { lsn: 0x2200n, count: 2, table: "t" },
    ]);
    const e = await sink.write(records).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(SinkError);
    expect((e as SinkError).message).toMatch(/WRONGTYPE.*stream cdc:public\.u/);
    expect((e as SinkError).details.target).toBe("cdc:public.u");
    expect((e as SinkError).hint).toMatch(/holds something other than a stream/);
    await expect(sink.write(batch([{ lsn: 0x3000n, count: 1, table: "t" }]))).rejects.toBe(e);
    expect(await sink.metrics(), "one permanent error, however many writes it refuses").toContain('pgoutput_wasm_sink_errors_total{sink="redis"} 1\n');
    await sink.close();
    const t = (await readStreams(b.port)).get("cdc:public.t")!;
    expect(t.map((x) => x.id)).toEqual([entryIdOf({ lsn: 0x2000n, index: 0 }), entryIdOf({ lsn: 0x2000n, index: 1 })]);
    expect(await redisCli(b.port, "GET", "cdc:position")).toBe("0000000000002000" + (1 * 65536 + 65535).toString(16).padStart(12, "0")); // the last entry's position: LSN, then its seq
  });

  it("passwords: NOAUTH without one, WRONGPASS with a wrong one (SinkErrors without the password), the right one works", async () => {
    const b = await redis(["--requirepass", "right-s3cret"]);
    const none = await redisSink(b.url).then(() => undefined, (x: unknown) => x);
    expect(none).toBeInstanceOf(SinkError);
    expect((none as SinkError).message).toMatch(/NOAUTH/);
    expect((none as SinkError).hint).toMatch(/redis:\/\/:PASSWORD@host/);
    const wrong = await redisSink(`redis://:wr0ng-s3cret@127.0.0.1:${b.port}`).then(() => undefined, (x: unknown) => x);
    expect(wrong).toBeInstanceOf(SinkError);
    expect((wrong as SinkError).message).toMatch(/WRONGPASS/);
    expect(`${(wrong as SinkError).message} ${(wrong as SinkError).hint} ${(wrong as SinkError).details.target}`).not.toContain("wr0ng-s3cret");
    const sink = await redisSink(`redis://:right-s3cret@127.0.0.1:${b.port}/3`);
    await sink.write(batch([{ lsn: 0x4000n, count: 1, table: "t" }]));
    await sink.close();
    expect(await redisCli(b.port, "-a", "right-s3cret", "-n", "3", "XLEN", "cdc:public.t")).toBe(1);
  });

  it("a server that is not Redis, and an unknown option: typed errors", async () => {
    const http = await import("node:http");
    const server = http.createServer((_, res) => res.end("hello"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const port = (server.address() as { port: number }).port;
      const e = await redisSink(`redis://127.0.0.1:${port}`).then(() => undefined, (x: unknown) => x);
      expect(e).toBeInstanceOf(SinkError);
      expect((e as SinkError).message).toMatch(/^redis: redis:\/\/127\.0\.0\.1:\d+: it does not answer as Redis: not a RESP reply: it starts with "HTTP/);
    } finally {
      server.close();
    }
    await expect(redisSink("redis://127.0.0.1:1?maxlenn=5")).rejects.toThrow(/unknown option maxlenn/);
    await expect(redisSink("redis://127.0.0.1:1?key={prefix}:{tabel}")).rejects.toThrow(/\{tabel\}/);
    await expect(redisSink("redis://127.0.0.1:1?mode=transaction&key={prefix}:{table}")).rejects.toThrow(/\{table\}, which is not known here/);
  });

  it("a server that takes the connection and never answers: start gives up after connect_timeout with a SinkError, not a hang", async () => {
    const net = await import("node:net");
    const sockets = new Set<import("node:net").Socket>();
    const silent = net.createServer((s) => sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    try {
      const port = (silent.address() as { port: number }).port;
      const t0 = Date.now();
      const e = await redisSink(`redis://127.0.0.1:${port}?timeout=1&connect_timeout=2`).then(() => undefined, (x: unknown) => x);
      expect(e).toBeInstanceOf(SinkError);
      expect((e as SinkError).message).toMatch(/^redis: redis:\/\/127\.0\.0\.1:\d+: unreachable for 2 s: no answer for 1 s$/);
      expect(Date.now() - t0).toBeLessThan(8000);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  it("maxlen: ~N trims whole nodes (about N kept), N keeps exactly N", async () => {
    const b = await redis();
    const exact = await redisSink(`${b.url}?maxlen=10&prefix=exact`);
    await exact.write(batch(lsns(30).map((lsn) => ({ lsn, count: 1, table: "t" }))));
    await exact.close();
    expect(await redisCli(b.port, "XLEN", "exact:public.t")).toBe(10);
    const about = await redisSink(`${b.url}?maxlen=~10&prefix=about`);
    await about.write(batch(lsns(300).map((lsn) => ({ lsn, count: 1, table: "t" }))));
    await about.close();
    const n = (await redisCli(b.port, "XLEN", "about:public.t")) as number;
    expect(n).toBeGreaterThanOrEqual(10);
    expect(n).toBeLessThan(300);
  });

  it("per transaction: one entry per transaction, its records as JSON Lines, also when its end comes in a batch of its own", async () => {
    const b = await redis();
    const sink = await redisSink(`${b.url}?mode=transaction`);
    expect(sink.transactionEnds).toBe(true);
    // A transaction cut by the pipeline: its records in two batches, its end in a third that holds no record.
    const first = new Records();
    first.txn = new RecordTransaction(7, 0x5000n, 1_700_000_000_000_000n);
    for (let k = 0; k < 3; k++) (first.bytes.str(`{"k":${k}}\n`), first.end("insert"));
    const second = new Records();
    second.txn = first.txn;
    for (let k = 3; k < 5; k++) (second.bytes.str(`{"k":${k}}\n`), second.end("insert"));
    const end = new Records();
    end.acks.push({ after: 0, lsn: 0x5030n });
    await sink.write(first); // held: resolves at once, confirms nothing (no transaction end in it)
    await sink.write(second);
    expect(await redisCli(b.port, "EXISTS", "cdc:transactions")).toBe(0);
    await sink.write(end);
    await sink.write(batch([{ lsn: 0x6000n, count: 2, table: "t" }]));
    await sink.close();
    const entries = (await readStreams(b.port)).get("cdc:transactions")!;
    expect(entries.map((e) => e.id)).toEqual([`${0x5000n}-0`, `${0x6000n}-0`]);
    expect(entries[0]!.fields).toEqual({ lsn: "0/5000", xid: "7", time: "2023-11-14T22:13:20.000000Z", count: "5", payload: '{"k":0}\n{"k":1}\n{"k":2}\n{"k":3}\n{"k":4}\n' });
    const again = await redisSink(`${b.url}?mode=transaction`);
    expect(await again.delivered()).toEqual({ lsn: 0x6000n, index: 1 });
    await again.close();
  });

  it("per transaction: one larger than max_transaction_bytes is refused with a SinkError that names mode=change (the pipeline never needs it whole)", async () => {
    const b = await redis();
    const sink = await redisSink(`${b.url}?mode=transaction&max_transaction_bytes=100`);
    const first = new Records();
    first.txn = new RecordTransaction(8, 0x7000n, 1_700_000_000_000_000n);
    for (let k = 0; k < 3; k++) (first.bytes.str(`{"k":${k},"pad":"${"x".repeat(10)}"}\n`), first.end("insert"));
    await sink.write(first); // 81 bytes: held
    const second = new Records();
    second.txn = first.txn;
    second.bytes.str(`{"k":3,"pad":"${"x".repeat(10)}"}\n`);
    second.end("insert");
    await expect((async () => sink.write(second))()).rejects.toMatchObject({ message: /transaction at 0\/7000 is larger than 100 bytes/, hint: /mode=change/ });
    await sink.close().catch(() => {});
    expect(await redisCli(b.port, "EXISTS", "cdc:transactions")).toBe(0);
  });
});

// --- with PostgreSQL ------------------------------------------------------------------------

type Ctx = WorkloadServer;
const MAJORS: PgMajor[] = [15, 18];
let servers: Awaited<ReturnType<typeof startWorkloadServers>> | undefined;
let seq = 0;
/** The CLI as published (compiled), for the kill -9 runs. */
let cli: string;
const children = new Set<ChildProcess>();
beforeAll(async () => {
  [servers, cli] = await Promise.all([startWorkloadServers(MAJORS), buildCli(CLI_FOLDER)]);
}, 120_000);
afterAll(async () => {
  for (const p of children) p.kill("SIGKILL");
  await servers?.stop();
  await removeCli(CLI_FOLDER);
});
const ctxs = { get: (major: PgMajor): Ctx | undefined => servers?.get(major) };

/** A workload schema with its reference slot and the sink's slot, made before any change. */
async function fresh(c: Ctx): Promise<{ w: Workload; ref: string; slot: string }> {
  const n = ++seq;
  const w = await setupWorkload(c.admin, `rs${n}`);
  await createSlots(c.admin, [`rs${n}_ref`, `rs${n}_sink`]);
  return { w, ref: `rs${n}_ref`, slot: `rs${n}_sink` };
}

/**
 * Each expected record once, in its table's stream, in commit order there, payload equal to its line; nothing else but,
 * `restarted`, a first sight's RelationChanged that a restart inside a transaction adds (isRestartShape).
 */
function expectHolds(held: Map<string, StreamEntry[]>, expected: ExpectedRecord[], prefix: string, restarted = false): void {
  const want = new Set(expected.map((e) => e.id));
  const added = (e: StreamEntry) => restarted && !want.has(e.fields.id!) && isRestartShape(e.fields.id!, e.fields.payload!);
  const streams = new Map([...held].map(([key, entries]) => [key, entries.filter((e) => !added(e))] as const).filter(([, entries]) => entries.length > 0));
  const all = [...streams.values()].flat();
  const ids = all.map((e) => e.fields.id!);
  expect(new Set(ids).size, "no change twice").toBe(ids.length);
  expect(all.length).toBe(expected.length);
  const byKey = new Map<string, ExpectedRecord[]>();
  for (const r of expected) {
    const key = r.table === undefined ? `${prefix}:messages` : `${prefix}:${r.schema}.${r.table}`;
    const list = byKey.get(key);
    if (list === undefined) byKey.set(key, [r]);
    else list.push(r);
  }
  expect([...streams.keys()].sort()).toEqual([...byKey.keys()].sort());
  for (const [key, want] of byKey) {
    const got = streams.get(key)!;
    expect(got.map((e) => e.fields.id), `${key}: ids in commit order`).toEqual(want.map((r) => r.id));
    for (let i = 0; i < want.length; i++) {
      const p = parseChangeId(want[i]!.id)!;
      expect(got[i]!.id).toBe(entryIdOf(p));
      if (got[i]!.fields.payload !== want[i]!.line) expect(got[i]!.fields.payload, `${key} ${want[i]!.id}`).toBe(want[i]!.line);
      expect(got[i]!.fields.op).toBe(want[i]!.kind);
    }
  }
}

/** The commit LSN of the first expected transaction not wholly at or before `held`: the slot may be confirmed up to it, not past. */
function bound(expected: ExpectedRecord[], held: string | undefined): bigint | undefined {
  for (const r of expected) {
    const p = parseChangeId(r.id)!;
    if (held === undefined || compareEntryIds(entryIdOf(p), held) > 0) return p.lsn;
  }
  return undefined;
}

for (const major of MAJORS) {
  describe(`PostgreSQL ${major}`, () => {
    it("the shared workload: every change once, in commit order per table's stream, payload equal to its JSON line", async () => {
      const c = ctxs.get(major)!;
      const { w, ref, slot } = await fresh(c);
      await runWorkload(c.admin, w, { transactions: 400, seed: major });
      const until = await walEnd(c.admin);
      const expected = await expectedRecords(c.config, w, ref, until);
      expect(expected.length).toBeGreaterThan(4000);
      const b = await redis();
      const sink = await redisSink(`${b.url}?prefix=${w.schema}`);
      await streamInto(c.config, w, slot, sink, until);
      expectHolds(await readStreams(b.port), expected, w.schema);
      expect(await confirmedFlush(c, slot)).toBeGreaterThan(parseChangeId(expected[expected.length - 1]!.id)!.lsn);
    }, 90_000);

    it("redis halted for 10 s mid-stream (AOF): nothing lost; sampled every 100 ms, the slot never passes what redis holds", async () => {
      const c = ctxs.get(major)!;
      const { w, ref, slot } = await fresh(c);
      const b = await redis();
      const retries: string[] = [];
      const sink = await redisSink(`${b.url}?prefix=${w.schema}`, undefined, { onRetry: (r) => retries.push(r.error) });
      // Once the workload is done: what the reference slot read, and the position past its last commit.
      let expected: ExpectedRecord[] = [];
      let target: bigint | undefined;
      const writer = new pg.Client(c.config);
      await writer.connect();
      const workload = runWorkload(writer, w, { transactions: 300, seed: 100 + major }).then(async () => {
        expected = await expectedRecords(c.config, w, ref, await walEnd(writer));
        target = parseChangeId(expected[expected.length - 1]!.id)!.lsn + 1n;
      });
      const keys = [...w.tables.map((t) => `${w.schema}:${w.schema}.${t}`), `${w.schema}:messages`];
      const samples: { slot: bigint; held: string | undefined | "down"; at: number }[] = [];
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const s = await confirmedFlush(c, slot); // first the slot, then redis: redis only grows meanwhile
          const held = await topEntryId(b.port, keys).catch(() => "down" as const);
          samples.push({ slot: s, held, at: Date.now() });
          await sleep(100);
        }
      })();
      const run = streamUntil(c.config, w, slot, sink, () => target, 60_000);
      while (run.acked() === 0n) await sleep(20);
      const heldBeforeHalt = await topEntryId(b.port, keys);
      await b.halt();
      // What it holds while down: its AOF's top, at least what it answered before the halt (the AOF reader skips a rewritten base).
      const inAof = topEntryIdInAof(b.dir);
      const heldWhileDown = inAof === undefined || (heldBeforeHalt !== undefined && compareEntryIds(heldBeforeHalt, inAof) > 0) ? heldBeforeHalt : inAof;
      await sleep(10_000);
      await b.start();
      await workload;
      await run.done;
      sampling = false;
      await sampler;
      await writer.end();
      expectHolds(await readStreams(b.port), expected, w.schema);
      expect(retries.length, "the sink retried while redis was down").toBeGreaterThan(0);
      const down = samples.filter((s) => s.held === "down");
      // The samples cover the outage: how many fit in it depends on the machine's load, not on the sink.
      expect(down.length, "samples while redis was down").toBeGreaterThanOrEqual(10);
      expect(down[down.length - 1]!.at - down[0]!.at, "the samples span the outage").toBeGreaterThan(8_000);
      for (const s of samples) {
        const held = s.held === "down" ? heldWhileDown : s.held;
        const limit = bound(expected, held);
        if (limit !== undefined && s.slot > limit) expect(formatLsn(s.slot), `slot past what redis holds (${held})`).toBe(formatLsn(limit));
      }
      expect(run.acked()).toBeGreaterThanOrEqual(target!);
    }, 90_000);

    it("kill -9 of `tail --sink redis://...` at five random points, restarted on the same slot: every change once, none missing", async () => {
      const c = ctxs.get(major)!;
      const { w, ref, slot } = await fresh(c);
      const b = await redis();
      const keys = [...w.tables.map((t) => `${w.schema}:${w.schema}.${t}`), `${w.schema}:messages`];
      const tail = () => {
        const p = spawn(process.execPath, [cli, "tail", "-c", c.cluster.connectionString, "--publication", w.publication, "--slot", slot, "--sink", `${b.url}?prefix=${w.schema}`], {
          stdio: ["ignore", "ignore", "pipe"],
        });
        children.add(p);
        let stderr = "";
        p.stderr!.on("data", (d) => (stderr += String(d)));
        const exited = new Promise<number | null>((r) => p.once("exit", (code) => (children.delete(p), r(code))));
        return { p, exited, stderr: () => stderr };
      };
      /**
       * A tail that adds to what redis holds (or runs for `ms` without, once all is there), started again while a
       * killed one's walsender still holds the slot ("in use").
       */
      const running = async (since: string | undefined, ms: number) => {
        for (let attempt = 0; ; attempt++) {
          const t = tail();
          let exited: number | null | undefined;
          void t.exited.then((code) => (exited = code));
          for (const deadline = Date.now() + ms; exited === undefined && Date.now() < deadline; await sleep(20)) {
            const now = await topEntryId(b.port, keys);
            if (now !== undefined && (since === undefined || compareEntryIds(now, since) > 0)) break;
          }
          if (exited === undefined) return t;
          if (!/in use/.test(t.stderr()) || attempt > 20) throw new Error(`tail exited with ${exited}: ${t.stderr()}`);
          await sleep(200);
        }
      };
      const writer = new pg.Client(c.config);
      await writer.connect();
      let workloadDone = false;
      const workload = runWorkload(writer, w, { transactions: 300, seed: 200 + major }).then(() => (workloadDone = true));
      try {
        let seed = major;
        const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
        let top: string | undefined;
        for (let k = 0; k < 5; k++) {
          // Once it added to what redis holds, a random while more: killed mid-batch, mid-acknowledgement, mid-transaction.
          const run = await running(top, 5000);
          await sleep(random() * 500);
          run.p.kill("SIGKILL");
          await run.exited;
          top = await topEntryId(b.port, keys);
        }
        await workload;
        const expected = await expectedRecords(c.config, w, ref, await walEnd(writer));
        const last = parseChangeId(expected[expected.length - 1]!.id)!;
        const run = await running(top, 5000);
        for (const deadline = Date.now() + 30_000; Date.now() < deadline && (await topEntryId(b.port, keys)) !== entryIdOf(last); ) await sleep(50);
        run.p.kill("SIGTERM");
        expect(await run.exited, run.stderr()).toBe(0);
        expectHolds(await readStreams(b.port), expected, w.schema, true);
        expect(await confirmedFlush(c, slot), "tail acknowledged what redis confirmed as it stopped").toBeGreaterThan(last.lsn);
      } finally {
        for (const p of children) p.kill("SIGKILL");
        if (!workloadDone) await workload.catch(() => {});
        await writer.end();
      }
    }, 120_000);
  });
}
