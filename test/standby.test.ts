/**
 * Replication from a physical standby, against a real primary and
 * streaming standby pair of PostgreSQL 18 (the npm build;
 * devkit/cluster/standby.ts): a slot created on the standby of an idle
 * primary (which waits for ever without `primary`, and finishes with it:
 * pg_log_standby_snapshot() there), changes made on the primary streamed
 * from the standby, heartbeats written to the primary advancing the
 * standby's slot while nothing else happens (and nothing advancing without
 * them), the errors for a heartbeat with no primary and for a primary that
 * refuses the snapshot request or the password (never shown), an initial
 * snapshot taken on the standby,
 * `tail --primary` end to end, and a PostgreSQL 15 standby refused.
 * Every wait is bounded.
 */
import type { Client, ClientConfig } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseLsn } from "../bindings/lsn.ts";
import { replicate, ReplicationError, type ReplicateOptions, type ReplicationStream } from "../bindings/pg/index.ts";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { startStandby, waitForReplay, type Standby } from "../devkit/cluster/standby.ts";
import { buildCli, removeCli, runCli } from "./support/build-cli.ts";
import { committed, take } from "./support/take.ts";

const CLI_FOLDER = "cli-test-standby";
const PW_USER = "pwuser";
/** A wrong password for PW_USER: what the primary is asked with, and must never be shown. */
const WRONG = "wr0ng-s3cret-pw";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let primary: Cluster;
let standby: Standby;
let main: string;
const streams = new Set<ReplicationStream>();
const clients = new Set<Client>();
const config = (c: Cluster): ClientConfig => ({ host: c.host, port: c.port, user: c.user, database: c.database });
const url = (c: Cluster) => `postgres://${c.user}@${c.host}:${c.port}/${c.database}`;

async function waitUntil(ok: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const insertLsn = async () => parseLsn((await primary.query<{ l: string }>("SELECT pg_current_wal_insert_lsn()::text AS l"))[0]!.l);
const confirmedOnStandby = async (slot: string) =>
  parseLsn((await standby.query<{ c: string }>("SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = $1", [slot]))[0]!.c);

/**
 * Waits until the primary is idle for good: the one WAL writer left when
 * nothing else runs is the background writer's running-transactions record,
 * logged once per 15 s and only after other WAL; so once the WAL end moved
 * past `after` (our last write) by itself, that record is written, and no
 * other comes until something writes again.
 */
async function untilIdle(after: bigint): Promise<void> {
  await waitUntil(async () => (await insertLsn()) > after, 40_000, "the primary's background writer to log its running transactions");
}

async function open(options: Omit<ReplicateOptions, "connection"> & { connection?: ReplicateOptions["connection"] }): Promise<ReplicationStream> {
  const s = await replicate({ connection: config(standby), ...options });
  streams.add(s);
  return s;
}

/** Reads the stream to its end, as a consumer does (an idle stream confirms the keepalives' positions as it reads them). */
async function drain(s: ReplicationStream): Promise<void> {
  for await (const _ of s) void _;
}

let idleFrom = 0n;

beforeAll(async () => {
  primary = await startCluster(18, { hba: [`host all ${PW_USER} 127.0.0.1/32 scram-sha-256`] });
  [standby, main] = await Promise.all([startStandby(primary), buildCli(CLI_FOLDER)]);
  await primary.query("CREATE TABLE st (id int PRIMARY KEY, v text)");
  await primary.query("CREATE PUBLICATION stpub FOR TABLE st");
  await primary.query("CREATE ROLE nosnap LOGIN");
  await primary.query(`CREATE ROLE ${PW_USER} LOGIN SUPERUSER PASSWORD 'the-right-one'`);
  idleFrom = await insertLsn();
  await waitForReplay(primary, standby);
});

afterAll(async () => {
  await Promise.all([...streams].map((s) => s.stop().catch(() => {})));
  await Promise.all([...clients].map((c) => c.end().catch(() => {})));
  await standby?.stop();
  await primary?.stop();
  await removeCli(CLI_FOLDER);
});

describe("PostgreSQL 18: a logical slot on a streaming standby", () => {
  it("on an idle primary a creation on the standby waits; with primary it finishes, and changes made on the primary stream from it", async () => {
    expect((await standby.query<{ r: boolean }>("SELECT pg_is_in_recovery() AS r"))[0]!.r).toBe(true);
    await untilIdle(idleFrom);
    // Without the primary's help: the creation waits (for ever, on an idle primary).
    const raw = await standby.connect({ replication: "database" });
    clients.add(raw);
    raw.on("error", () => {});
    const waiting = raw.query("CREATE_REPLICATION_SLOT idle_wait LOGICAL pgoutput").then(() => "created", (e: Error) => e.message);
    expect(await Promise.race([waiting, sleep(3000).then(() => "still waiting")])).toBe("still waiting");

    const t = Date.now();
    const s = await open({ primary: config(primary), slot: { name: "on_standby", create: true }, publications: "stpub" });
    const createMs = Date.now() - t;
    expect(createMs).toBeLessThan(10_000); // a record is asked for every 500 ms
    // The record the primary logged serves every creation waiting on the standby.
    expect(await Promise.race([waiting, sleep(10_000).then(() => "still waiting")])).toBe("created");

    await primary.query("INSERT INTO st VALUES (1, 'one')");
    await primary.query("INSERT INTO st VALUES (2, 'two'), (3, 'three')");
    const txs = await committed(s, 2);
    const inserts = txs.map((tx) => tx.messages.filter((m) => m.kind === "Insert"));
    expect(inserts.map((r) => r.length)).toEqual([1, 2]);
    expect(JSON.stringify(inserts, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v))).toContain("three");
    await s.stop();
    expect(s.lastAckedLsn).toBeGreaterThan(0n);
    console.log(`slot created on the standby of an idle primary in ${createMs} ms`);
  });

  it("idle primary: without heartbeats the standby's slot stays; with them (written on the primary) it advances", async () => {
    const quiet = await open({ slot: "on_standby", publications: "stpub", statusIntervalMs: 200 });
    const reading = drain(quiet);
    await sleep(1500); // status updates carry what the stream confirms
    const before = await confirmedOnStandby("on_standby");
    const walBefore = await insertLsn();
    await sleep(1500);
    expect(await insertLsn()).toBe(walBefore); // nothing written on the primary ...
    expect(await confirmedOnStandby("on_standby")).toBe(before); // ... so nothing to confirm
    await quiet.stop();
    await reading;

    const clientBackends = async () => (await primary.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend'"))[0]!.n;
    const backends = await clientBackends();
    const beating = await open({ primary: config(primary), slot: "on_standby", publications: "stpub", statusIntervalMs: 200, heartbeat: { intervalMs: 200 } });
    const beats = drain(beating);
    await waitUntil(async () => (await confirmedOnStandby("on_standby")) > before, 15_000, "the standby's slot to advance");
    const h = await beating.health();
    expect(h.heartbeats).toMatchObject({ failed: 0 });
    expect(h.heartbeats!.sent).toBeGreaterThan(0);
    expect(await insertLsn()).toBeGreaterThan(walBefore); // the heartbeats went to the primary
    expect(h.slot.currentWalLsn).toBeGreaterThan(before); // the standby's replayed position
    expect(h.lost).toBeUndefined();
    await beating.stop();
    await beats;
    // The primary's connection was opened for the heartbeats and is closed with the stream.
    await waitUntil(async () => (await clientBackends()) === backends, 5000, "the connection to the primary to close");
  });

  it("heartbeat on a standby needs primary; a primary that refuses pg_log_standby_snapshot() fails the creation with its error", async () => {
    const e1 = await replicate({ connection: config(standby), slot: "on_standby", publications: "stpub", heartbeat: { intervalMs: 1000 } }).catch((x: unknown) => x);
    expect(e1).toBeInstanceOf(ReplicationError);
    expect(e1).toMatchObject({ code: "INVALID_OPTION" });
    expect((e1 as Error).message).toMatch(/needs the primary option/);

    const walsenders = async () => (await standby.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'walsender'"))[0]!.n;
    const before = await walsenders();
    const e2 = await replicate({
      connection: config(standby), primary: { ...config(primary), user: "nosnap" }, slot: { name: "refused", create: true }, publications: "stpub",
    }).catch((x: unknown) => x);
    expect(e2).toMatchObject({ code: "SERVER_ERROR", sqlstate: "42501" });
    expect((e2 as Error).message).toMatch(/could not log a standby snapshot on the primary.*pg_log_standby_snapshot/);
    // A primary that rejects the password: its error, without the password.
    const e3 = await replicate({
      connection: config(standby), primary: `postgres://${PW_USER}:${WRONG}@${primary.host}:${primary.port}/postgres`, slot: { name: "refused", create: true }, publications: "stpub",
    }).catch((x: unknown) => x);
    expect(e3).toMatchObject({ code: "SERVER_ERROR", sqlstate: "28P01" });
    expect(`${(e3 as Error).message} ${JSON.stringify(e3)} ${String((e3 as Error).stack)}`).not.toContain(WRONG);
    // The creation ended with the replication connection: no slot, no walsender left on the standby.
    await waitUntil(async () => (await walsenders()) === before
      && (await standby.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'refused'")).length === 0, 15_000, "the refused creation to end");
  });

  it("snapshot: true on the standby: the rows the primary holds (copied from the standby), then the changes after them", async () => {
    const run = await replicate({ connection: config(standby), primary: config(primary), slot: { name: "snap_standby", create: true }, publications: "stpub", snapshot: true });
    const rows: unknown[] = [];
    const after = take(run[Symbol.asyncIterator](), 1, (item) => {
      if (item.kind === "SnapshotRow") rows.push(item.tuple.toObject().id);
      if (item.kind === "SnapshotComplete") void primary.query("INSERT INTO st VALUES (4, 'after the snapshot')");
      return item.kind === "Insert" ? item.newTuple.toObject() : undefined;
    });
    try {
      expect(await after).toEqual([{ id: 4, v: "after the snapshot" }]);
    } finally {
      await run.stop();
    }
    expect(rows.sort()).toEqual([1, 2, 3]);
  });

  it("tail --primary: a slot created on the standby, changes from the primary, heartbeats there; --heartbeat without it refused", async () => {
    let done = false;
    const writer = (async () => {
      for (let i = 100; i < 160; i++) {
        await primary.query("INSERT INTO st VALUES ($1, 'cli')", [i]);
        await sleep(250);
        if (done) return;
      }
    })();
    const run = await runCli(main, [
      "tail", "-c", url(standby), "--primary", url(primary), "--publication", "stpub", "--slot", "cli_standby", "--create-slot",
      "--heartbeat", "0.2", "--max-messages", "3",
    ]);
    done = true;
    await writer;
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split("\n").map((l) => JSON.parse(l) as { action: string; table?: string });
    expect(lines.map((l) => `${l.action} ${l.table}`)).toEqual(["I st", "I st", "I st"]);
    expect((await standby.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'cli_standby'")).length).toBe(1);

    const refused = await runCli(main, ["tail", "-c", url(standby), "--publication", "stpub", "--slot", "cli_standby", "--heartbeat", "1", "--max-messages", "1"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/primary/);
    const badPassword = await runCli(main, [
      "tail", "-c", url(standby), "--primary", `postgres://${PW_USER}:${WRONG}@${primary.host}:${primary.port}/postgres`, "--publication", "stpub", "--max-messages", "1",
    ]);
    expect(badPassword.code).toBe(1);
    expect(badPassword.stderr).toMatch(new RegExp(`^pgoutput-wasm: --primary: authentication failed at ${primary.host}:${primary.port}: password authentication failed for user "${PW_USER}"`));
    expect(badPassword.stderr).toMatch(/check the user and password \(--primary postgres:/);
    expect(badPassword.stdout + badPassword.stderr).not.toContain(WRONG);
    const usage = await runCli(main, ["tail", "--primary", url(primary)]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--primary needs --connection/);
  });
});

describe("PostgreSQL 15: no logical decoding on a standby", () => {
  it("with primary (or heartbeat) replicate() says so before anything is created: UNSUPPORTED_BY_SERVER", async () => {
    const primary15 = await startCluster(15);
    let standby15: Standby | undefined;
    try {
      standby15 = await startStandby(primary15);
      const e = await replicate({ connection: config(standby15), primary: config(primary15), slot: { name: "s15", create: true }, publications: "p" }).catch((x: unknown) => x);
      expect(e).toMatchObject({ code: "UNSUPPORTED_BY_SERVER" });
      expect((e as Error).message).toMatch(/needs PostgreSQL 16 or later; this standby is 15/);
      expect(await standby15.query("SELECT 1 FROM pg_replication_slots")).toEqual([]);
    } finally {
      await standby15?.stop();
      await primary15.stop();
    }
  });
});
