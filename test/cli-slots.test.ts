// `pgoutput-wasm slots`, and tail's --heartbeat and --failover, end to end:
// the CLI compiled as published (test/support/build-cli.ts) runs as a child
// process against real PostgreSQL 15 and 18. The table and the JSON are
// compared with what pg_replication_slots says about a real slot with a
// backlog; errors give one line that never shows the password; tail
// --heartbeat on a database with no other traffic makes the slot advance
// (and prints no heartbeat line); --failover creates a failover slot on 18
// and is refused on 15.

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseLsn } from "../bindings/lsn.ts";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { buildCli, removeCli, runCli, type CliRun } from "./support/build-cli.ts";
import { startCli } from "./support/run-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MAIN = join(ROOT, "build", "cli-test-slots", "cli", "main.js");
const HBA = ["host all pwuser 127.0.0.1/32 scram-sha-256"];
const PASSWORD = "s3cr3t-pw";

/** Runs the CLI to its end (killed after 60 s). */
const run = (args: string[]) => runCli(MAIN, args);

/**
 * Runs `tail` until `ready()` says it streams (polled every 100 ms, 30 s at most), then stops it as Ctrl-C
 * does. Not after a fixed time: on a busy machine the CLI may not yet listen for the signal, and dies by it.
 */
async function runUntil(args: string[], ready: () => Promise<boolean>): Promise<CliRun> {
  const { child, exited } = startCli(MAIN, args);
  let ended = false;
  void exited.then(() => (ended = true));
  for (let i = 0; i < 300 && !ended && !(await ready()); i++) await new Promise((r) => setTimeout(r, 100));
  child.kill("SIGINT");
  return exited;
}

const clusters = new Map<PgMajor, Cluster>();
const url = (c: Cluster, db = c.database) => `postgres://${c.user}@${c.host}:${c.port}/${db}`;

beforeAll(async () => {
  const [c15, c18] = await Promise.all([startCluster(15, { hba: HBA }), startCluster(18, { hba: HBA }), buildCli("cli-test-slots")]);
  clusters.set(15, c15);
  clusters.set(18, c18);
  for (const c of [c15, c18]) {
    await c.query(`CREATE TABLE st (id int PRIMARY KEY, v text); CREATE PUBLICATION stp FOR TABLE st; CREATE ROLE pwuser LOGIN REPLICATION PASSWORD '${PASSWORD}'`);
  }
});

afterAll(async () => {
  await Promise.all([...clusters.values()].map((c) => c.stop()));
  await removeCli("cli-test-slots");
});

describe.each([15, 18] as const)("PostgreSQL %i", (major) => {
  it("slots prints the table and the JSON of a real slot with a backlog", async () => {
    const c = clusters.get(major)!;
    await c.query(`SELECT pg_create_logical_replication_slot('cli_slot_${major}', 'pgoutput')`);
    // The clusters run with synchronous_commit off; on for this commit, so that its WAL is written
    // (pg_current_wal_lsn, the write position, could otherwise trail it by the unwritten WAL buffers).
    await c.query(`BEGIN; SET LOCAL synchronous_commit = on; INSERT INTO st SELECT g, repeat('x', 500) FROM generate_series(1, 2000) g; COMMIT`);
    const [row] = await c.query(`SELECT confirmed_flush_lsn::text AS c, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint AS lag FROM pg_replication_slots WHERE slot_name = $1`, [`cli_slot_${major}`]);

    const json = await run(["slots", "-c", url(c), "--json"]);
    expect(json.stderr).toBe("");
    expect(json.code).toBe(0);
    const slots = JSON.parse(json.stdout) as Record<string, unknown>[];
    const s = slots.find((x) => x.slot_name === `cli_slot_${major}`)!;
    expect(s).toMatchObject({
      plugin: "pgoutput", slot_type: "logical", active: false, active_pid: null, confirmed_flush_lsn: row.c,
      wal_status: "reserved", safe_wal_size: null, invalidation_reason: null, lost: null, failover: major >= 17 ? false : null,
    });
    // Sampled after the query above: at least that lag, and the lag covers the 1 MB of rows.
    expect(s.lag_bytes as number).toBeGreaterThanOrEqual(Number(row.lag));
    expect(s.lag_bytes as number).toBeGreaterThan(1_000_000);
    expect(parseLsn(s.current_wal_lsn as string) - parseLsn(s.confirmed_flush_lsn as string)).toBe(BigInt(s.lag_bytes as number));

    const table = await run(["slots", "-c", url(c)]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]!.split(/\s+/)).toEqual(["slot", "plugin", "active_pid", "confirmed_flush", "lag", "retained", "safe_wal_size", "wal_status", "invalidation", "failover"]);
    const cells = lines.find((l) => l.startsWith(`cli_slot_${major} `))!.split(/\s{2,}/);
    expect(cells[0]).toBe(`cli_slot_${major}`);
    expect(cells.slice(1, 4)).toEqual(["pgoutput", "-", row.c]);
    expect(cells[4]).toMatch(/^\d+\.\d MiB$/); // binary units, labelled so
    expect(cells.slice(6)).toEqual(["-", "reserved", "-", major >= 17 ? "false" : "-"]);
    await c.query(`SELECT pg_drop_replication_slot('cli_slot_${major}')`);
  });

  it("slots --help, bad options and a failed login: usage, exit codes, no password in the output", async () => {
    const c = clusters.get(major)!;
    const help = await run(["slots", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: pgoutput-wasm slots/);
    const bad = await run(["slots", "--nope"]);
    expect(bad.code).toBe(2);
    const wrong = `postgres://pwuser:${PASSWORD}x@${c.host}:${c.port}/${c.database}`;
    const denied = await run(["slots", "-c", wrong]);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/^pgoutput-wasm: .*password authentication failed/);
    expect(denied.stderr).not.toContain(PASSWORD);
    expect(denied.stdout).toBe("");
  });

  it("tail --heartbeat on a database without other traffic: the slot advances, no heartbeat is printed", async () => {
    const c = clusters.get(major)!;
    const slot = `hb_slot_${major}`;
    await c.query(`SELECT pg_create_logical_replication_slot('${slot}', 'pgoutput')`);
    const before = (await c.query(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = $1`, [slot]))[0].c as string;
    const flushed = async () => parseLsn((await c.query(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = $1`, [slot]))[0].c as string);
    const r = await runUntil(["tail", "-c", url(c), "--publication", "stp", "--slot", slot, "--messages", "--heartbeat", "0.2"], async () => (await flushed()) > parseLsn(before));
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(""); // heartbeats are filtered; nothing else happened
    const after = (await c.query(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = $1`, [slot]))[0].c as string;
    expect(parseLsn(after) > parseLsn(before)).toBe(true);
    await c.query(`SELECT pg_drop_replication_slot('${slot}')`);
  });

  it("tail --failover: a failover slot on 18, refused with one clear line on 15", async () => {
    const c = clusters.get(major)!;
    const slot = `fo_slot_${major}`;
    const args = ["tail", "-c", url(c), "--publication", "stp", "--slot", slot, "--create-slot", "--failover"];
    const active = async () => (await c.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND active`, [slot])).length > 0;
    const r = major === 18 ? await runUntil(args, active) : await run(args);
    if (major === 18) {
      expect(r.code).toBe(0);
      expect((await c.query(`SELECT failover FROM pg_replication_slots WHERE slot_name = $1`, [slot]))[0]).toEqual({ failover: true });
      await c.query(`SELECT pg_drop_replication_slot('${slot}')`);
    } else {
      expect(r.code).toBe(1);
      expect(r.stderr).toBe("pgoutput-wasm: failover slots need PostgreSQL 17 or later; this server is 15 (hint: leave out the option, or use a newer PostgreSQL)\n");
      expect(await c.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = $1`, [slot])).toEqual([]);
    }
    const usage = await run(["tail", "-c", url(c), "--publication", "stp", "--failover"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--failover needs a permanent slot/);
  });
});
