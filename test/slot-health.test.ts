/**
 * Slot health, lost slots, heartbeats, failover slots and publication
 * management of `pgoutput-wasm/pg`, against real PostgreSQL 15 and 18 (and
 * 17, only for failover slots): health() figures compared with what
 * pg_replication_slots says; a slot made to lose its WAL (a dedicated
 * cluster with max_slot_wal_keep_size = 1MB, a backlog of switched WAL
 * segments and a checkpoint) reported as SLOT_LOST with its reason, and
 * recreated on request with the lost LSN range; an idle published database
 * beside traffic in another one, with and without heartbeats; failover
 * slots on 17 and the error on 15; publications created and checked.
 * Every wait is bounded.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { ClientConfig } from "pg";
import { formatLsn, parseLsn } from "../bindings/lsn.ts";
import { replicate, ReplicationError, type ReplicateOptions, type ReplicationStream, type Transaction } from "../bindings/pg/index.ts";
import type { ReplicationHealth, SlotLostEvent } from "../bindings/pg/index.ts";
import type { PublicationReport } from "../bindings/pg/index.ts";
import { createSlotCommand } from "../bindings/pg/commands.ts";
import { normalizeOptions } from "../bindings/pg/options.ts";
import { fromPgError } from "../bindings/pg/errors.ts";
import { classifySlotError } from "../bindings/pg/slot-state.ts";
import type { PgMajor } from "../devkit/cluster/cluster.ts";
import { startClusters, startedCluster, stopClusters, type StartedCluster } from "./support/clusters.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(ok: () => boolean | Promise<boolean>, timeoutMs = 15_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

type Ctx = StartedCluster;

/** 15 and 18, and 17 for failover slots. */
const clusters = new Map<PgMajor, Ctx>();
/** 15 and 18 keeping at most 1 MB of WAL for a slot (max_slot_wal_keep_size): a slot soon loses its WAL. */
const lost = new Map<PgMajor, Ctx>();
const streams = new Set<ReplicationStream>();
let seq = 0;

beforeAll(async () => {
  // Two at a time: the machine has two cores.
  await startClusters([15, 18], clusters, startedCluster);
  await startClusters([15, 18], lost, startedCluster, { settings: { max_slot_wal_keep_size: "'1MB'" } });
  await startClusters([17], clusters, startedCluster);
});

afterAll(() => stopClusters([...clusters.values(), ...lost.values()], streams));

const ctx = (major: PgMajor) => clusters.get(major)!;

async function open(c: Ctx, options: Omit<ReplicateOptions, "connection"> & { connection?: ReplicateOptions["connection"] }): Promise<ReplicationStream> {
  const s = await replicate({ connection: c.config, ...options });
  streams.add(s);
  return s;
}

async function fresh(c: Ctx): Promise<{ table: string; pub: string; slot: string }> {
  const n = ++seq;
  await c.cluster.query(`CREATE TABLE h${n} (id int PRIMARY KEY, v text)`);
  await c.cluster.query(`CREATE PUBLICATION hpub${n} FOR TABLE h${n}`);
  return { table: `h${n}`, pub: `hpub${n}`, slot: `hslot${n}` };
}

async function slotRow(c: Ctx, slot: string, db?: string): Promise<{ confirmed: bigint; lag: bigint; failover?: boolean } | undefined> {
  const client = new pg.Client({ ...c.config, database: db ?? c.config.database });
  await client.connect();
  try {
    const rows = (await client.query(
      `SELECT confirmed_flush_lsn::text AS c, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint::text AS lag${c.major >= 17 ? ", failover" : ""}
       FROM pg_replication_slots WHERE slot_name = $1`, [slot])).rows;
    const r = rows[0];
    return r === undefined ? undefined : { confirmed: parseLsn(r.c), lag: BigInt(r.lag), failover: r.failover };
  } finally {
    await client.end();
  }
}

/** Side-connection backends (plain client backends) with this application_name. */
async function sideBackends(c: Ctx, app: string): Promise<number> {
  const rows = await c.cluster.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM pg_stat_activity WHERE application_name = $1 AND backend_type = 'client backend'`, [app]);
  return Number(rows[0]!.n);
}

/** The first `n` committed transactions (a bounded wait; the stream is iterated once). */
async function collect(s: ReplicationStream, n: number, timeoutMs = 15_000): Promise<Transaction[]> {
  const out: Transaction[] = [];
  const it = s.transactions()[Symbol.asyncIterator]();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`only ${out.length} of ${n} transactions arrived`)), timeoutMs)));
  try {
    while (out.length < n) {
      const r = await Promise.race([it.next(), timeout]);
      if (r.done) break;
      if (r.value.kind === "commit") out.push(r.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return out;
}

describe("options and commands", () => {
  it("failover slots: FAILOVER on 17+, UNSUPPORTED_BY_SERVER before, never temporary", () => {
    expect(createSlotCommand("s", { failover: true }, 170004)).toBe(`CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput (SNAPSHOT 'nothing', FAILOVER)`);
    expect(createSlotCommand("s", { failover: true, twoPhase: true }, 180000)).toBe(`CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput (SNAPSHOT 'nothing', TWO_PHASE, FAILOVER)`);
    expect(() => createSlotCommand("s", { failover: true }, 160004)).toThrow(expect.objectContaining({ code: "UNSUPPORTED_BY_SERVER" }));
    const base = { connection: "x", slot: "s", publications: "p" } as const;
    expect(() => normalizeOptions({ ...base, slot: { name: "s", temporary: true, failover: true } })).toThrow(ReplicationError);
  });

  it("rejects bad health, heartbeat, publication and onLost options", () => {
    const base = { connection: "x", slot: "s", publications: "p" } as const;
    const bad: Partial<ReplicateOptions>[] = [
      { health: { intervalMs: 0 } }, { health: {} as never }, { heartbeat: { intervalMs: -5 } }, { heartbeat: { intervalMs: 100, query: " " } },
      { publication: { tables: [] } }, { publication: { tables: ["a b"] } }, { publication: { operations: ["merge" as never] } },
      { publications: ["a", "b"], publication: { create: true } }, { slot: { name: "s", onLost: "ignore" as never } },
    ];
    for (const b of bad) expect(() => normalizeOptions({ ...base, ...b } as ReplicateOptions), JSON.stringify(b)).toThrow(ReplicationError);
    const ok = normalizeOptions({ ...base, heartbeat: { intervalMs: 1000 }, health: { intervalMs: 500 } });
    expect(ok.heartbeat?.query).toBe(`SELECT pg_catalog.pg_logical_emit_message(false, 'pgoutput-wasm.heartbeat', now()::text)`);
    expect(ok.health).toEqual({ intervalMs: 500 });
  });
});

for (const major of [15, 18] as const) {
  describe(`PostgreSQL ${major}: health`, () => {
    it("health() agrees with pg_replication_slots within one status interval; no side connection unless asked; closed by stop()", async () => {
      const c = ctx(major);
      const { table, pub, slot } = await fresh(c);
      const app = `health_${slot}`;
      const s = await open(c, { connection: { ...c.config, application_name: app }, slot: { name: slot, create: true }, publications: pub, statusIntervalMs: 200 });
      await sleep(300);
      expect(await sideBackends(c, app)).toBe(0); // nothing polled, nothing opened

      for (let i = 0; i < 5; i++) await c.cluster.query(`INSERT INTO ${table} SELECT g, repeat('x', 100) FROM generate_series(${i * 100 + 1}, ${i * 100 + 100}) g`);
      const txs = await collect(s, 5);
      expect(txs.flatMap((t) => t.messages).filter((m) => m.kind === "Insert")).toHaveLength(500);
      const lastEnd = txs[4]!.endLsn;
      // The fifth is acknowledged only when the next item is asked for: acknowledge it now, then wait past one status interval.
      s.ack(lastEnd);
      await sleep(500);

      const bytesBefore = s.stats.bytes;
      const h = await s.health();
      const bytesAfter = s.stats.bytes; // keepalives may arrive meanwhile
      const row = (await slotRow(c, slot))!;
      expect(await sideBackends(c, app)).toBe(1);
      expect(h.slot.confirmedFlushLsn).toBe(s.lastAckedLsn); // the server has the stream's position
      expect(h.slot.confirmedFlushLsn! >= lastEnd).toBe(true);
      expect(row.confirmed).toBe(h.slot.confirmedFlushLsn);
      expect(h.slot.lagBytes).toBe(h.slot.currentWalLsn - h.slot.confirmedFlushLsn!);
      expect(row.lag >= h.slot.lagBytes!).toBe(true); // WAL only grows between the two reads
      expect(h.slot.activePid).toBeGreaterThan(0);
      expect(h.slot.plugin).toBe("pgoutput");
      expect(h.slot.walStatus).toBe("reserved");
      expect(h.slot.invalidationReason).toBe(major === 18 ? null : undefined); // 17+ have the column
      expect(h.slot.conflicting).toBe(major === 18 ? false : undefined);
      expect(h.lost).toBeUndefined();
      expect(h.bytes >= bytesBefore && h.bytes <= bytesAfter && h.bytes > 500 * 100).toBe(true);
      expect(h.messages).toBeGreaterThanOrEqual(5 * 103);
      expect(h.messagesPerSecond).toBeGreaterThan(0);
      // Commits reached the consumer within seconds of committing (same machine).
      expect(h.commitLagMs).toBeGreaterThanOrEqual(0);
      expect(h.commitLagMs!).toBeLessThan(10_000);

      // A consumer that does not confirm: the lag covers at least the WAL written since.
      const before = h.slot.currentWalLsn;
      await c.cluster.query(`INSERT INTO ${table} SELECT g, repeat('y', 1000) FROM generate_series(10001, 11000) g`);
      await sleep(400);
      const h2 = await s.health();
      expect(h2.slot.confirmedFlushLsn).toBe(h.slot.confirmedFlushLsn);
      expect(h2.slot.lagBytes! >= h2.slot.currentWalLsn - before).toBe(true);
      expect(h2.slot.currentWalLsn - before > 1_000_000n).toBe(true);

      await s.stop();
      await waitUntil(async () => (await sideBackends(c, app)) === 0, 5000, "the side connection to close");
    });

    it("health: { intervalMs } samples to onHealth while streaming, and stops with the stream", async () => {
      const c = ctx(major);
      const { table, pub, slot } = await fresh(c);
      const samples: ReplicationHealth[] = [];
      const app = `sampler_${slot}`;
      const s = await open(c, {
        connection: { ...c.config, application_name: app }, slot: { name: slot, create: true }, publications: pub,
        health: { intervalMs: 150 }, onHealth: (h) => samples.push(h),
      });
      await c.cluster.query(`INSERT INTO ${table} VALUES (1, 'a')`);
      await collect(s, 1);
      await waitUntil(() => samples.length >= 3, 10_000, "three samples");
      expect(samples.every((h) => h.slot.name === slot && h.slot.currentWalLsn > 0n)).toBe(true);
      // The side connection killed: a sample is skipped, the next one reconnects; the stream goes on.
      const [killed] = await c.cluster.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND backend_type = 'client backend'`, [app]);
      await c.cluster.query(`SELECT pg_terminate_backend($1)`, [killed!.pid]);
      const m = samples.length;
      await waitUntil(async () => samples.length >= m + 2 && (await sideBackends(c, app)) === 1, 10_000, "samples after a reconnect");
      const [again] = await c.cluster.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND backend_type = 'client backend'`, [app]);
      expect(again!.pid).not.toBe(killed!.pid);
      expect(s.error).toBeUndefined();
      await s.stop();
      const n = samples.length;
      await sleep(500);
      expect(samples.length).toBe(n);
    });

    it("a missing slot is SLOT_MISSING (sqlstate 42704), not retryable, with the remedy", async () => {
      const c = ctx(major);
      const { pub } = await fresh(c);
      const e = await replicate({ connection: c.config, slot: "no_such_slot_h", publications: pub }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ReplicationError);
      expect(e).toMatchObject({ code: "SLOT_MISSING", sqlstate: "42704", retryable: false });
      expect((e as Error).message).toMatch(/does not exist: create it/);
    });

    it("publication: created when missing, differences reported for an existing one, missing without create rejected", async () => {
      const c = ctx(major);
      const n = ++seq;
      await c.cluster.query(`CREATE TABLE pa${n} (id int PRIMARY KEY)`);
      await c.cluster.query(`CREATE TABLE pb${n} (id int PRIMARY KEY)`);
      const reports: PublicationReport[] = [];
      const onPublication = (r: PublicationReport) => reports.push(r);
      const e = await replicate({ connection: c.config, slot: { name: `pslot${n}`, create: true }, publications: `newpub${n}`, publication: { tables: [`pa${n}`] } }).catch((x: unknown) => x);
      expect(e).toMatchObject({ code: "INVALID_OPTION" });
      expect((e as Error).message).toMatch(/does not exist \(publication: \{ create: true \}/);

      const s = await open(c, { slot: { name: `pslot${n}`, create: true }, publications: `newpub${n}`, publication: { create: true, tables: [`pa${n}`], operations: ["insert", "update"] }, onPublication });
      expect(reports).toEqual([{ name: `newpub${n}`, created: true, differences: [] }]);
      const pubRow = (await c.cluster.query(`SELECT puballtables, pubinsert, pubupdate, pubdelete, pubtruncate FROM pg_publication WHERE pubname = $1`, [`newpub${n}`]))[0];
      expect(pubRow).toEqual({ puballtables: false, pubinsert: true, pubupdate: true, pubdelete: false, pubtruncate: false });
      await c.cluster.query(`INSERT INTO pa${n} VALUES (7)`);
      const [tx] = await collect(s, 1);
      expect(tx!.messages.some((m) => m.kind === "Insert")).toBe(true);
      await s.stop();

      // The same publication checked against something else: reported, not changed.
      const s2 = await open(c, { slot: `pslot${n}`, publications: `newpub${n}`, publication: { create: true, tables: [`public.pb${n}`, "no_such_table"] }, onPublication });
      expect(reports[1]!.created).toBe(false);
      expect(reports[1]!.differences).toEqual([
        "publishes insert, update; asked for insert, update, delete, truncate",
        "asked-for tables that do not exist: \"no_such_table\"",
        `does not publish public.pb${n}`,
        `also publishes public.pa${n}`,
      ]);
      await s2.stop();
      const s3 = await open(c, { slot: `pslot${n}`, publications: `newpub${n}`, publication: { tables: "all", operations: ["update", "insert"] }, onPublication });
      expect(reports[2]!.differences).toEqual(["is not FOR ALL TABLES; asked for all tables"]);
      await s3.stop();
      expect((await c.cluster.query(`SELECT count(*)::int AS n FROM pg_publication_tables WHERE pubname = $1`, [`newpub${n}`]))[0].n).toBe(1);
    });
  });

  describe(`PostgreSQL ${major}: heartbeats`, () => {
    it("an idle published database beside traffic elsewhere: heartbeats advance the slot and are filtered out", async () => {
      const c = ctx(major);
      const db = `idle${++seq}`;
      await c.cluster.query(`CREATE DATABASE ${db}`);
      const idle = new pg.Client({ ...c.config, database: db });
      await idle.connect();
      await idle.query(`CREATE TABLE quiet (id int PRIMARY KEY)`);
      await idle.query(`CREATE PUBLICATION quietpub FOR TABLE quiet`);
      await idle.end();
      const busy = ++seq;
      await c.cluster.query(`CREATE TABLE busy${busy} (id int, v text)`);
      const traffic = async (ms: number) => {
        const until = Date.now() + ms;
        for (let i = 0; Date.now() < until; i++) {
          await c.cluster.query(`INSERT INTO busy${busy} SELECT g, repeat('z', 200) FROM generate_series(1, 200) g`);
          await sleep(20);
        }
      };
      const run = async (slot: string, heartbeat: boolean) => {
        const received: string[] = [];
        const s = await open(c, {
          connection: { ...c.config, database: db }, slot: { name: slot, create: true }, publications: "quietpub", messages: true,
          statusIntervalMs: 200, ...(heartbeat ? { heartbeat: { intervalMs: 200 } } : {}),
        });
        const consumer = (async () => {
          for await (const m of s) if (m.kind === "Message") received.push(m.prefix);
        })();
        const start = (await slotRow(c, slot, db))!.confirmed;
        await traffic(3000);
        await sleep(1500);
        const end = (await slotRow(c, slot, db))!.confirmed;
        const filtered = s.progress.heartbeatsFiltered;
        await s.stop();
        await consumer;
        return { start, end, filtered, received };
      };
      const without = await run(`quiet_a${busy}`, false);
      const withHb = await run(`quiet_b${busy}`, true);
      console.log(`PG ${major}: without heartbeats ${formatLsn(without.start)} -> ${formatLsn(without.end)}, with ${formatLsn(withHb.start)} -> ${formatLsn(withHb.end)}`);
      expect(withHb.end > withHb.start).toBe(true);
      expect(withHb.filtered).toBeGreaterThan(0);
      expect(withHb.received).toEqual([]); // filtered from the consumer
      // Without heartbeats the slot advances too: the walsender's keepalives carry the WAL
      // position it has read past (the other database's traffic), and the stream confirms
      // a keepalive's position when nothing it handed over is unconfirmed (bindings/ack.ts).
      expect(without.end > without.start).toBe(true);
      expect(without.filtered).toBe(0);
    });
  });
}

describe("lost slots (max_slot_wal_keep_size = 1MB)", () => {
  for (const major of [15, 18] as const) {
    it(`lost${major}: an invalidated slot is SLOT_LOST with its reason; onLost: "recreate" replaces it and reports the lost range`, async () => {
      const c = lost.get(major)!;
      const { table, pub, slot } = await fresh(c);
      const s = await open(c, { slot: { name: slot, create: true }, publications: pub });
      await s.stop();
      const oldConfirmed = (await slotRow(c, slot))!.confirmed;
      // A backlog the slot may not keep: several switched segments, then a checkpoint.
      for (let i = 0; i < 4; i++) {
        await c.cluster.query(`INSERT INTO ${table} SELECT g, 'x' FROM generate_series(${i * 1000 + 1}, ${i * 1000 + 1000}) g`);
        await c.cluster.query(`SELECT pg_switch_wal()`);
      }
      await c.cluster.query(`CHECKPOINT`);
      const status = (await c.cluster.query(`SELECT wal_status FROM pg_replication_slots WHERE slot_name = $1`, [slot]))[0];
      expect(status.wal_status).toBe("lost");

      const e = await replicate({ connection: c.config, slot, publications: pub }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ReplicationError);
      expect(e).toMatchObject({ code: "SLOT_LOST", retryable: false });
      expect((e as Error).message).toMatch(new RegExp(`"${slot}" was invalidated \\(wal_removed\\): .*drop the slot`));

      // The walsender's own error for an invalidated slot (START_REPLICATION without the check before it).
      const raw = new pg.Client({ ...c.config, replication: "database" } as ClientConfig);
      await raw.connect();
      const serverError = await raw.query(`START_REPLICATION SLOT "${slot}" LOGICAL 0/0 (proto_version '1', publication_names '${pub}')`).catch((x: unknown) => x);
      await raw.end().catch(() => {});
      const classified = classifySlotError(fromPgError(serverError, "replication failed"), slot);
      expect(classified).toMatchObject({ code: "SLOT_LOST", retryable: false });
      expect(classified.message).toMatch(/was invalidated \(wal_removed\)/);
      expect((classified.cause as ReplicationError).sqlstate).toBe("55000");

      const events: SlotLostEvent[] = [];
      const r = await open(c, { slot: { name: slot, onLost: "recreate" }, publications: pub, onSlotLost: (ev) => events.push(ev) });
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ slot, reason: "wal_removed", lostFrom: oldConfirmed });
      expect(events[0]!.lostTo > events[0]!.lostFrom).toBe(true);
      const h = await r.health();
      expect(h.slot.walStatus).toBe("reserved");
      expect(h.slot.confirmedFlushLsn).toBe(events[0]!.lostTo);
      await c.cluster.query(`INSERT INTO ${table} VALUES (999999, 'after')`);
      const [tx] = await collect(r, 1);
      expect(tx!.messages.some((m) => m.kind === "Insert")).toBe(true);
      await r.stop();
    });
  }
});

describe("failover slots", () => {
  it("17: created with FAILOVER, visible in pg_replication_slots.failover and in health()", async () => {
    const c = ctx(17);
    const { pub, slot } = await fresh(c);
    const s = await open(c, { slot: { name: slot, create: true, failover: true }, publications: pub });
    expect((await slotRow(c, slot))!.failover).toBe(true);
    const h = await s.health();
    expect(h.slot.failover).toBe(true);
    await s.stop();
    const { pub: pub2, slot: plain } = await fresh(c);
    const p = await open(c, { slot: { name: plain, create: true }, publications: pub2 });
    expect((await p.health()).slot.failover).toBe(false);
    await p.stop();
  });

  it("15: refused with UNSUPPORTED_BY_SERVER, and no slot is left behind", async () => {
    const c = ctx(15);
    const { pub, slot } = await fresh(c);
    const e = await replicate({ connection: c.config, slot: { name: slot, create: true, failover: true }, publications: pub }).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "UNSUPPORTED_BY_SERVER", retryable: false });
    expect((e as Error).message).toBe("failover slots need PostgreSQL 17 or later; this server is 15");
    expect(await slotRow(c, slot)).toBeUndefined();
  });
});
