// The CLI's status output says what it measures: sizes and rates in binary
// units labelled as such (KiB/MiB/GiB, MiB/s: they were computed with 1024
// and labelled kB/MB), and `tail` without --slot (a temporary slot) says
// where it streams from — the slot's consistent point, which is also the
// stream's lastAckedLsn — not "from 0/0". Against a real PostgreSQL 15.

import { spawn } from "node:child_process";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { formatLsn, parseLsn } from "../bindings/lsn.ts";
import { replicate } from "../bindings/pg/index.ts";
import { StatusLine, formatBytes } from "../bindings/cli/status.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FOLDER = "cli-test-status";
const MAIN = join(ROOT, "build", FOLDER, "cli", "main.js");

describe("sizes and rates: binary units, labelled so", () => {
  it("formatBytes", () => {
    expect([0, 1023, 1024, 1536, 1024 * 1024 - 52, 3 * 2 ** 20, 1.5 * 2 ** 30].map(formatBytes))
      .toEqual(["0 B", "1023 B", "1.0 KiB", "1.5 KiB", "1023.9 KiB", "3.0 MiB", "1.50 GiB"]);
  });

  it("the summary's rate is MiB/s", () => {
    let text = "";
    const out = new Writable({ write: (chunk, _enc, done) => ((text += String(chunk)), done()) }) as unknown as NodeJS.WriteStream;
    const status = new StatusLine({
      out, enabled: true, label: "tail", writtenUnit: "lines",
      sample: () => ({ messages: 10, bytes: 3 * 2 ** 20, written: 4, transactions: 2, lsn: 0x100n, acked: 0x100n }),
    });
    status.start();
    status.stop();
    expect(text).toMatch(/^tail: 4 lines, 2 transactions; 10 messages \(3\.0 MiB\) in [\d.]+ s, [\d.k]+ msg\/s, [\d.]+ MiB\/s; acknowledged up to 0\/100\n$/);
  });
});

describe("a temporary slot: where streaming starts", () => {
  let cluster: Cluster;
  beforeAll(async () => {
    [cluster] = await Promise.all([startCluster(15), buildCli(FOLDER)]);
    await cluster.query("CREATE TABLE st_t (id int PRIMARY KEY); CREATE PUBLICATION p_st FOR TABLE st_t");
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await removeCli(FOLDER);
  });

  it("replicate(): lastAckedLsn is the temporary slot's confirmed_flush_lsn (its consistent point), not 0", async () => {
    const stream = await replicate({ connection: cluster.connectionString, slot: { name: "st_temp", temporary: true }, publications: "p_st", reconnect: false });
    try {
      const [slot] = await cluster.query<{ lsn: string }>("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = 'st_temp' AND temporary");
      expect(stream.lastAckedLsn).toBeGreaterThan(0n);
      expect(formatLsn(stream.lastAckedLsn)).toBe(slot!.lsn);
      expect(stream.lastReceivedLsn).toBe(stream.lastAckedLsn);
    } finally {
      await stream.stop();
    }
  });

  it("tail without --slot: 'streaming from host:port, slot ... (temporary), from X/Y', X/Y the slot's start", async () => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
    const child = spawn(process.execPath, [MAIN, "tail", "-c", cluster.connectionString, "--publication", "p_st", "--progress", "--max-messages", "1"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    try {
      for (let i = 0; i < 300 && !/streaming from/.test(stderr); i++) await new Promise((r) => setTimeout(r, 100));
      const note = /streaming from 127\.0\.0\.1:\d+, slot (pgoutput_wasm_\w+) \(temporary\), from ([0-9A-F]+\/[0-9A-F]+)\n/.exec(stderr);
      expect(note, stderr).not.toBeNull();
      const [slot] = await cluster.query<{ lsn: string }>("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [note![1]!]);
      expect(parseLsn(note![2]!)).toBeGreaterThan(0n);
      // The slot's start: acknowledgements since may have moved confirmed_flush_lsn on, never back.
      expect(parseLsn(note![2]!)).toBeLessThanOrEqual(parseLsn(slot!.lsn));
      await cluster.query("INSERT INTO st_t VALUES (1)");
      expect(await exited).toBe(0);
    } finally {
      clearTimeout(timer);
      child.kill("SIGKILL");
    }
    expect(stderr).not.toMatch(/from 0\/0/);
  });
});
