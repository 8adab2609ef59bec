/**
 * Automatic reconnect of `replicate()` (issue 14) against real PostgreSQL
 * 15 and 18: during a bounded workload the walsender is terminated
 * (pg_terminate_backend), the server restarted (`pg_ctl restart -m
 * immediate`), or the walsender stalled (SIGSTOP, caught by a short
 * receiveTimeoutMs). The consumer's loop never sees an error; every
 * committed row arrives at least once; no transaction arrives after a status
 * update acknowledging it was sent; the redelivered ones are marked, and only
 * those; each fault is followed by reconnect events. Also: `reconnect: false`
 * keeps the old behaviour, non-retryable failures are not retried, the
 * backoff schedule, and stop() during a backoff wait.
 */
import { afterEach, describe, expect, it } from "vitest";
import pg from "pg";
import type { ClientConfig } from "pg";
import {
  ReplicationError, replicate, type ReconnectEvent, type ReconnectedEvent, type ReplicateOptions, type ReplicationStream, type Transaction,
} from "../bindings/pg/index.ts";
import { normalizeOptions } from "../bindings/pg/options.ts";
import { backoffCap, backoffDelay, reconnectPolicy, RECONNECT_DEFAULTS } from "../bindings/pg/reconnect.ts";
import { formatLsn } from "../bindings/lsn.ts";
import type { PgMajor } from "../devkit/cluster/cluster.ts";
import { restartCluster } from "../devkit/cluster/restart.ts";
import { pooledClusters, type PooledCluster } from "./support/clusters.ts";
import { startFakeWalsender, type FakeWalsender } from "./support/fake-walsender.ts";
import { backend } from "../devkit/encoder/walsender-encoder.ts";
import * as net from "node:net";

// ------------------------------------------------------------------ the schedule

describe("reconnect policy and backoff schedule", () => {
  it("defaults, validation, off for `false` and for temporary slots", () => {
    const base = { connection: "x", slot: "s", publications: "p" } as const;
    expect(normalizeOptions(base).reconnect).toEqual(RECONNECT_DEFAULTS);
    expect(RECONNECT_DEFAULTS).toMatchObject({ initialDelayMs: 500, maxDelayMs: 30_000, multiplier: 2, maxAttempts: Infinity });
    expect(normalizeOptions({ ...base, reconnect: false }).reconnect).toBe(false);
    expect(normalizeOptions({ ...base, slot: { name: "s", temporary: true } }).reconnect).toBe(false);
    expect(normalizeOptions({ ...base, reconnect: { maxAttempts: 3 } }).reconnect).toMatchObject({ initialDelayMs: 500, maxAttempts: 3 });
    for (const bad of [{ initialDelayMs: -1 }, { maxDelayMs: 10, initialDelayMs: 20 }, { multiplier: 0.5 }, { maxAttempts: 0 }, { maxAttempts: 1.5 }, { random: 3 as never }]) {
      expect(() => normalizeOptions({ ...base, reconnect: bad }), JSON.stringify(bad)).toThrow(ReplicationError);
    }
  });

  it("the cap grows by the multiplier up to maxDelayMs; the delay is full jitter of the cap", () => {
    const draws = [0, 0.999999, 0.5, 0.25, 0.75, 0.1, 0.9, 0.5, 0.5, 0.5];
    let i = 0;
    const policy = reconnectPolicy({ initialDelayMs: 100, maxDelayMs: 5000, multiplier: 2, random: () => draws[i++ % draws.length]! });
    if (policy === false) throw new Error("policy off");
    expect([1, 2, 3, 4, 5, 6, 7, 8, 50, 2000].map((a) => backoffCap(a, policy))).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000]);
    const delays = [1, 2, 3, 4, 5, 6, 7].map((a) => backoffDelay(a, policy));
    expect(delays).toEqual([0, 199, 200, 200, 1200, 320, 4500]);
    // Each delay lies in [0, cap]; the same attempt with other draws gives other delays (jitter).
    expect(backoffDelay(3, policy)).toBe(200); // draw 0.5
    expect(backoffDelay(3, policy)).toBe(200);
    const spread = new Set(Array.from({ length: 20 }, () => backoffDelay(6, reconnectPolicy({ initialDelayMs: 100 }) as never)));
    expect(spread.size).toBeGreaterThan(5);
    for (const d of spread) expect(d >= 0 && d <= 3200).toBe(true);
  });
});

// ------------------------------------------------------------------ real servers

const MAJORS: PgMajor[] = [15, 18];
type Ctx = PooledCluster;
const streams = new Set<ReplicationStream>();
const ctxs = pooledClusters(MAJORS, 3, streams);
let seq = 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Iterates to the end; the error the iteration threw (undefined when it just ended). */
async function iterationError(items: AsyncIterable<unknown>): Promise<unknown> {
  try {
    for await (const _ of items);
  } catch (e) {
    return e;
  }
  return undefined;
}

async function sql<T = any>(c: Ctx, text: string, params?: unknown[]): Promise<T[]> {
  return (await c.pool.query(text, params as any[])).rows as T[];
}

async function setup(c: Ctx): Promise<{ table: string; pub: string; slot: string }> {
  const n = ++seq;
  await sql(c, `CREATE TABLE r${n} (id int PRIMARY KEY, tx int, v text)`);
  await sql(c, `CREATE PUBLICATION rpub${n} FOR TABLE r${n}`);
  await sql(c, `SELECT pg_create_logical_replication_slot('rslot${n}', 'pgoutput')`);
  return { table: `r${n}`, pub: `rpub${n}`, slot: `rslot${n}` };
}

async function walsenderPid(c: Ctx, slot: string): Promise<number> {
  const rows = await sql<{ pid: number | null }>(c, `SELECT active_pid AS pid FROM pg_replication_slots WHERE slot_name = $1`, [slot]);
  return rows[0]?.pid ?? 0;
}

/** Rows of transaction `tx`: every fourth is big (more than the socket buffers hold), so a fault can cut one. */
const rowsOf = (tx: number): number => (tx % 4 === 0 ? 30_000 : 3);
const idsOf = (tx: number): number[] => Array.from({ length: rowsOf(tx) }, (_, i) => tx * 100_000 + i);

/** What one run observed. */
interface Run {
  reconnects: ReconnectEvent[];
  reconnected: ReconnectedEvent[];
  /** Max flushed position sent in a status update so far. */
  acked: bigint;
  ids: Set<number>;
  /** Violations, as text (asserted empty at the end, so that the loop itself never throws). */
  problems: string[];
  /** Transactions (by end LSN) delivered more than once, and how many were marked. */
  again: number;
  marked: number;
  /** A Begin came while the previous transaction was still open (the cut-off one, sent again). */
  restartedInside: number;
  /**
   * Transaction 8's Commit came on the first connection, after the fault: the walsender had sent all of it
   * into the socket buffers before it was killed (Linux lets a loopback connection's grow to tens of MB).
   */
  deliveredWhole: boolean;
}

type Fault = "terminate" | "restart" | "stall";

/**
 * Writes transactions 1..8, faults when the consumer is 100 rows into
 * transaction 8 (big), then writes 9..16 while the stream reconnects.
 * The consumer acknowledges (manual) each transaction three transactions
 * after it, so some handed-over ones are unacknowledged when the fault comes.
 */
async function faultRun(c: Ctx, fault: Fault, iterate: "messages" | "transactions"): Promise<{ run: Run; stream: ReplicationStream }> {
  const { table, pub, slot } = await setup(c);
  const run: Run = { reconnects: [], reconnected: [], acked: 0n, ids: new Set(), problems: [], again: 0, marked: 0, restartedInside: 0, deliveredWhole: false };
  const stream = await replicate({
    connection: c.config, slot, publications: pub, ack: "manual", statusIntervalMs: 100, highWaterMark: 64 << 10,
    receiveTimeoutMs: fault === "stall" ? 1500 : 60_000,
    // Each fault runs with both socket readers: the copying one, and reads that land in the decoder's memory.
    inPlaceReads: iterate === "transactions",
    reconnect: { initialDelayMs: 50, maxDelayMs: 400 },
    onReconnect: (e) => run.reconnects.push(e),
    onReconnected: (e) => run.reconnected.push(e),
    onStatus: (st) => {
      if (st.flushed > run.acked) run.acked = st.flushed;
    },
  });
  streams.add(stream);
  const write = async (from: number, to: number) => {
    for (let tx = from; tx <= to; tx++) {
      await sql(c, `INSERT INTO ${table} SELECT g, ${tx}, repeat('w', 100) FROM generate_series(${tx * 100_000}, ${tx * 100_000 + rowsOf(tx) - 1}) g`);
    }
  };
  const expected = new Set<number>();
  for (let tx = 1; tx <= 16; tx++) for (const id of idsOf(tx)) expected.add(id);

  let faulted = false;
  let stopped = 0; // the SIGSTOPped pid, continued in the finally
  let second: Promise<void> | undefined;
  const injectFault = async (): Promise<void> => {
    faulted = true;
    await writing; // transaction 8 is committed: no write is cut by the fault
    if (fault === "terminate") {
      const r = await sql(c, `SELECT pg_terminate_backend(active_pid) AS ok FROM pg_replication_slots WHERE slot_name = $1`, [slot]);
      if (r[0]?.ok !== true) run.problems.push(`terminate: ${JSON.stringify(r)}`);
    } else if (fault === "restart") {
      await restartCluster(c.cluster, { mode: "immediate" });
    } else {
      stopped = await walsenderPid(c, slot);
      process.kill(stopped, "SIGSTOP");
      // Continued once the client gave up on it: then it sees the closed socket, exits and frees the slot.
      void (async () => {
        for (let i = 0; i < 400 && run.reconnects.length === 0; i++) await sleep(50);
        if (stopped) process.kill(stopped, "SIGCONT");
        stopped = 0;
      })();
    }
    second = write(9, 16);
  };

  const ends: bigint[] = []; // handed over, in order, for the lagging acknowledgement
  const seen = new Set<bigint>(); // end LSNs (transactions) or final LSNs (Begin) delivered before
  const note = (key: bigint, marked: boolean, end: bigint) => {
    if (end <= run.acked) run.problems.push(`${formatLsn(end)} delivered after a status update acknowledged ${formatLsn(run.acked)}`);
    const before = seen.has(key);
    if (before) run.again++;
    if (marked) run.marked++;
    if (marked !== before) run.problems.push(`${formatLsn(key)}: marked ${marked}, delivered before ${before}`);
    seen.add(key);
  };
  const ackLagging = (end: bigint) => {
    ends.push(end);
    if (ends.length > 3) stream.ack(ends[ends.length - 4]!);
  };
  const complete = () => second !== undefined && [...expected].every((id) => run.ids.has(id));
  const deadline = Date.now() + 90_000;
  const writing = write(1, 8);
  try {
    if (iterate === "transactions") {
      for await (const item of stream.transactions()) {
        if (item.kind !== "commit") continue;
        const t = item as Transaction;
        note(t.endLsn, t.redelivered, t.endLsn);
        const txs = new Set<number>();
        for (const m of t.messages) {
          if (m.kind !== "Insert") continue;
          const id = Number((m.newTuple as { text?: string }[])[0]!.text);
          run.ids.add(id);
          txs.add(Math.floor(id / 100_000));
        }
        for (const tx of txs) if (t.messages.filter((m) => m.kind === "Insert").length !== rowsOf(tx)) run.problems.push(`tx ${tx} not whole`);
        ackLagging(t.endLsn);
        if (!faulted && txs.has(7)) await injectFault(); // 8 (big) is being sent or about to be
        if (complete() || Date.now() > deadline) break;
      }
    } else {
      let open: { final: bigint; rows: number; tx: number; marked: boolean } | undefined;
      for await (const m of stream) {
        if (m.kind === "Begin") {
          if (open !== undefined) run.restartedInside++;
          open = { final: m.finalLsn, rows: 0, tx: 0, marked: stream.redelivering };
          note(m.finalLsn, stream.redelivering, m.finalLsn);
        } else if (m.kind === "Insert" && open) {
          const id = Number(m.newTuple.text(0));
          run.ids.add(id);
          open.rows++;
          open.tx = Math.floor(id / 100_000);
          if (stream.redelivering !== open.marked) run.problems.push(`redelivering changed inside ${formatLsn(open.final)}`);
          if (!faulted && open.tx === 8 && open.rows === 100) await injectFault();
        } else if (m.kind === "Commit" && open) {
          if (stream.redelivering !== open.marked) run.problems.push(`redelivering changed at the Commit of ${formatLsn(open.final)}`);
          if (m.endLsn <= run.acked) run.problems.push(`commit ${formatLsn(m.endLsn)} after ack ${formatLsn(run.acked)}`);
          if (open.rows !== rowsOf(open.tx)) run.problems.push(`tx ${open.tx}: ${open.rows} rows`);
          if (open.tx === 8 && faulted && run.reconnects.length === 0) run.deliveredWhole = true;
          ackLagging(m.endLsn);
          open = undefined;
          if (complete() || Date.now() > deadline) break;
        }
      }
    }
  } finally {
    if (stopped) process.kill(stopped, "SIGCONT");
    await writing;
    await second;
  }
  await stream.stop();
  expect(stream.error).toBeUndefined();
  expect(run.problems).toEqual([]);
  const missing = [...expected].filter((id) => !run.ids.has(id));
  expect(missing.length, `missing ${missing.slice(0, 5)}`).toBe(0);
  expect(run.reconnects.length).toBeGreaterThanOrEqual(1);
  expect(run.reconnected.length).toBeGreaterThanOrEqual(1);
  expect(stream.stats.reconnects).toBe(run.reconnected.length);
  for (const e of run.reconnects) expect(e.cause.retryable).toBe(true);
  console.info(
    `PostgreSQL ${c.major} ${fault} (${iterate}): causes [${run.reconnects.map((e) => `${e.attempt}:${e.cause.code} ${e.cause.sqlstate ?? ""} ${e.delayMs}ms`).join(", ")}], ` +
      `back after ${run.reconnected.map((e) => `${e.attempts} attempts ${e.downtimeMs} ms`).join(", ")}; delivered again ${run.again} (marked ${run.marked}), ` +
      `restarted inside ${run.restartedInside}${run.deliveredWhole ? " (transaction 8 arrived whole before the loss)" : ""}; ${stream.stats.bytes} bytes, ${stream.stats.payloads} payloads`,
  );
  return { run, stream };
}

for (const major of MAJORS) {
  describe(`PostgreSQL ${major}: reconnect through faults`, () => {
    const c = () => ctxs.get(major)!;
    for (const fault of ["terminate", "restart", "stall"] as const) {
      it(`${fault}: messages — no error, every row, redelivered ones marked, the cut-off transaction begins again`, async () => {
        const { run } = await faultRun(c(), fault, "messages");
        // The consumer was 100 rows into transaction 8 (30 000 rows, ~5 MB) when the walsender was killed: its
        // Begin comes again, unless the walsender had sent it all before (then it arrived whole on the first
        // connection: the socket buffers of a loopback connection can grow past it). A stalled walsender's
        // buffered rest may still arrive whole.
        if (fault !== "stall") expect(run.restartedInside >= 1 || run.deliveredWhole, "transaction 8 cut off and not begun again").toBe(true);
        expect(run.again).toBeGreaterThanOrEqual(1); // at least the unacknowledged 6 and 7
      }, 120_000);
      it(`${fault}: transactions — no error, every row once whole, redelivered ones marked`, async () => {
        const { run } = await faultRun(c(), fault, "transactions");
        // Three transactions were handed over and not acknowledged when the fault came.
        expect(run.again).toBeGreaterThanOrEqual(1);
        expect(run.marked).toBe(run.again);
      }, 120_000);
    }

    it("reconnect: false — the stream ends with the retryable error, as before", async () => {
      const { table, pub, slot } = await setup(c());
      const events: ReconnectEvent[] = [];
      const s = await replicate({ connection: c().config, slot, publications: pub, reconnect: false, onReconnect: (e) => events.push(e) });
      streams.add(s);
      await sql(c(), `INSERT INTO ${table} VALUES (1, 1, 'x')`);
      let error: unknown;
      try {
        for await (const m of s) {
          if (m.kind === "Commit") await sql(c(), `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1`, [slot]);
        }
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ReplicationError);
      expect((error as ReplicationError).retryable).toBe(true);
      expect(await s.closed).toBe(error);
      expect(events).toEqual([]);
      expect(s.stats.reconnects).toBe(0);
    });

    it("stop() during a backoff wait ends the iteration at once, without another connection", async () => {
      const { table, pub, slot } = await setup(c());
      const events: ReconnectEvent[] = [];
      const s = await replicate({
        connection: c().config, slot, publications: pub,
        reconnect: { initialDelayMs: 60_000, maxDelayMs: 60_000, random: () => 0.99 },
        onReconnect: (e) => {
          events.push(e);
          void s.stop();
        },
      });
      streams.add(s);
      await sql(c(), `INSERT INTO ${table} VALUES (1, 1, 'x')`);
      const t0 = Date.now();
      const kinds: string[] = [];
      for await (const m of s) {
        kinds.push(m.kind);
        if (m.kind === "Commit") await sql(c(), `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1`, [slot]);
      }
      const ms = Date.now() - t0;
      expect(kinds).toEqual(["Begin", "Relation", "Insert", "Commit"]);
      expect(events).toHaveLength(1);
      expect(events[0]!.delayMs).toBe(59_400);
      expect(ms).toBeLessThan(events[0]!.delayMs); // ended by stop(), not by the wait
      expect(await s.closed).toBeUndefined();
      expect(s.stats.reconnects).toBe(0);
      // Nothing reconnected behind the stopped stream: the slot goes inactive (the terminated walsender exits).
      for (let i = 0; i < 100 && (await walsenderPid(c(), slot)) !== 0; i++) await sleep(50);
      expect(await walsenderPid(c(), slot)).toBe(0);
    });

    if (major === 15) {
      it("a non-retryable server error (missing publication, 42704) ends the stream without a reconnect", async () => {
        const { table, slot } = await setup(c());
        const events: ReconnectEvent[] = [];
        const errors: ReplicationError[] = [];
        const s = await replicate({ connection: c().config, slot, publications: "no_such_pub", onReconnect: (e) => events.push(e), onError: (e) => errors.push(e) });
        streams.add(s);
        await sql(c(), `INSERT INTO ${table} VALUES (1, 1, 'x')`);
        const error = await iterationError(s.transactions());
        expect(error).toMatchObject({ code: "SERVER_ERROR", sqlstate: "42704", retryable: false });
        expect(events).toEqual([]);
        expect(errors).toEqual([error]);
      });
    }
  });
}

describe("a fake walsender", () => {
  let fake: FakeWalsender | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it("a DECODE_ERROR is not retried: one START_REPLICATION, the error ends the iteration", async () => {
    let starts = 0;
    fake = await startFakeWalsender(async (socket) => {
      starts++;
      socket.write(backend.copyData(new Uint8Array([0x77, 0x3f])).bytes); // XLogData cut short
    });
    const events: ReconnectEvent[] = [];
    const s = await replicate({
      connection: { host: "127.0.0.1", port: fake.port, user: "fake", database: "fake" }, slot: "s", publications: "p",
      reconnect: { initialDelayMs: 10 }, onReconnect: (e) => events.push(e),
    });
    streams.add(s);
    const error = await iterationError(s);
    expect(error).toMatchObject({ code: "DECODE_ERROR", retryable: false });
    await sleep(200);
    expect(starts).toBe(1);
    expect(events).toEqual([]);
  });

  it("maxAttempts: after that many failed attempts the last error ends the stream (thrown, onError, closed)", async () => {
    fake = await startFakeWalsender(async (socket) => {
      setTimeout(() => socket.destroy(), 50);
    });
    const port = fake.port;
    const events: ReconnectEvent[] = [];
    const errors: ReplicationError[] = [];
    const s = await replicate({
      connection: { host: "127.0.0.1", port, user: "fake", database: "fake" }, slot: "s", publications: "p",
      reconnect: { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 3 },
      onReconnect: (e) => {
        events.push(e);
        if (e.attempt === 1) void fake!.close(); // nothing listens any more: every attempt is refused
      },
      onError: (e) => errors.push(e),
    });
    streams.add(s);
    const error = await iterationError(s);
    expect(events.map((e) => [e.attempt, e.cause.code])).toEqual([[1, "CONNECTION_LOST"], [2, "CONNECT_FAILED"], [3, "CONNECT_FAILED"]]);
    expect(error).toMatchObject({ code: "CONNECT_FAILED", retryable: true });
    expect(errors).toEqual([error]);
    expect(await s.closed).toBe(error);
    expect(s.stats.reconnects).toBe(0);
  });

  it("a new connection that never answers is given up on after receiveTimeoutMs, and the next attempt goes on", async () => {
    let starts = 0;
    fake = await startFakeWalsender(async (socket) => {
      if (++starts === 1) setTimeout(() => socket.destroy(), 50); // the first connection is lost
    });
    const held = new Set<net.Socket>();
    const silent = net.createServer((socket) => {
      held.add(socket); // accepts, reads, never says a word
      socket.resume();
      socket.on("close", () => held.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (n: number) => (n === 2 ? (silent.address() as net.AddressInfo).port : fake!.port);
    let made = 0;
    const events: ReconnectEvent[] = [];
    const back: ReconnectedEvent[] = [];
    try {
      const s = await replicate({
        connection: () => new pg.Client({ host: "127.0.0.1", port: port(++made), user: "fake", database: "fake", replication: "database" } as ClientConfig),
        slot: "s", publications: "p", receiveTimeoutMs: 600,
        reconnect: { initialDelayMs: 10, maxDelayMs: 20 }, onReconnect: (e) => events.push(e), onReconnected: (e) => back.push(e),
      });
      streams.add(s);
      const it = s[Symbol.asyncIterator]();
      const next = it.next(); // waits through the lost connection, the silent one and the third
      for (let i = 0; i < 100 && back.length === 0; i++) await sleep(50);
      expect(events.map((e) => e.cause.code)).toEqual(["CONNECTION_LOST", "CONNECT_FAILED"]);
      expect(events[1]!.cause.message).toMatch(/no connection within receiveTimeoutMs \(600 ms\)/);
      expect(back).toHaveLength(1);
      expect(back[0]!.attempts).toBe(2);
      expect(made).toBe(3);
      expect(starts).toBe(2);
      for (let i = 0; i < 40 && held.size > 0; i++) await sleep(50);
      expect(held.size).toBe(0); // the abandoned attempt's socket was closed by the client
      await s.stop();
      expect(await next).toEqual({ done: true, value: undefined });
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
