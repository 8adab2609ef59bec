// Restarting a test cluster (pg_ctl restart), for tests that need the
// server to go away and come back on the same port with the same data.
//
// It works from what a running cluster tells about itself, so cluster.ts
// needs no change: the data directory (SHOW data_directory), the postmaster's
// PID (postmaster.pid) and its executable (/proc/<pid>/exe, whose directory
// also holds pg_ctl). pg_ctl runs as the server's OS user, as in
// bindings/cli/run-as.ts.
//
// Note: the cluster's shared connection (cluster.query) does not survive a
// restart. After restartCluster(), use cluster.connect() or a pg.Pool.

import * as fs from "node:fs";
import * as path from "node:path";
import pg from "pg";
import { getRunAs, runAsUser } from "../../bindings/cli/run-as.ts";
import type { Cluster } from "./cluster.ts";

export interface RestartOptions {
  /**
   * pg_ctl's shutdown mode: `fast` (default; clean, a shutdown checkpoint) or
   * `immediate` (a crash: recovery on start; unflushed WAL is lost).
   */
  mode?: "fast" | "immediate";
  /** Seconds pg_ctl waits for the stop and for the start. Default 60. */
  timeoutSeconds?: number;
}

/** Where a running cluster lives: its data directory and its binaries. */
export async function clusterPaths(cluster: Cluster): Promise<{ dataDir: string; binDir: string; logFile: string }> {
  const client = await cluster.connect();
  let dataDir: string;
  try {
    dataDir = (await client.query<{ data_directory: string }>("SHOW data_directory")).rows[0]!.data_directory;
  } finally {
    await client.end();
  }
  const pid = Number(fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  const binDir = path.dirname(fs.readlinkSync(`/proc/${pid}/exe`));
  // bindings/cli/server.ts starts the server with its log beside the data directory.
  return { dataDir, binDir, logFile: path.join(path.dirname(dataDir), "server.log") };
}

/**
 * Restarts the server (pg_ctl restart -m fast|immediate -w) and waits until
 * it accepts connections again. Connections open before are gone.
 */
export async function restartCluster(cluster: Cluster, options: RestartOptions = {}): Promise<void> {
  const { dataDir, binDir, logFile } = await clusterPaths(cluster);
  const t = options.timeoutSeconds ?? 60;
  const args = ["restart", "-D", dataDir, "-m", options.mode ?? "fast", "-w", "-t", String(t), "-l", logFile, "-s"];
  const pgCtl = path.join(binDir, "pg_ctl");
  await runAsUser(await getRunAs(), pgCtl, args, 2 * t * 1000 + 10_000);
  // pg_ctl -w waits for the server to accept connections; make sure with a real one.
  const deadline = Date.now() + t * 1000;
  for (;;) {
    const client = new pg.Client({ host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("SELECT 1");
      await client.end();
      return;
    } catch (e) {
      await client.end().catch(() => {});
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
