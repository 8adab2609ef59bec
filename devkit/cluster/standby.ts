// A streaming physical standby of a test cluster (startStandby), for what
// PostgreSQL 16+ allows on a standby: logical slots and decoding (the base
// backup below needs 15+: pg_backup_start).
//
// The npm builds ship no pg_basebackup, so the base backup is taken the way
// it does it, by hand: a physical slot on the primary (reserving WAL at
// once, so nothing the standby needs is recycled), pg_backup_start(), a copy
// of the data directory without what pg_basebackup leaves out (pg_wal,
// pg_replslot, ... and postmaster.pid), pg_backup_stop() whose label file
// becomes backup_label, then standby.signal and the settings pg_basebackup
// -R writes (primary_conninfo, primary_slot_name), plus hot_standby_feedback
// so that the primary keeps the catalog rows a standby's logical slot needs.
// The standby is a server of server.ts like any other: its folder, port and
// cleanup (whatever ends the process) are the same; stop() also drops its
// physical slot on the primary when the primary is still there.

import * as fs from "node:fs";
import * as path from "node:path";
import { getRunAs, giveToServer, type RunAs } from "../../bindings/cli/run-as.ts";
import { startServer } from "../../bindings/cli/server.ts";
import type { Cluster, StartOptions } from "./cluster.ts";
import { clusterPaths } from "./restart.ts";

export interface Standby extends Cluster {
  /** The physical slot on the primary the standby streams from. */
  physicalSlot: string;
}

/** Directories whose contents pg_basebackup leaves out (src/backend/backup/basebackup.c: excludeDirContents). */
const EMPTY_DIRS = new Set(["pg_wal", "pg_replslot", "pg_stat_tmp", "pg_dynshmem", "pg_notify", "pg_serial", "pg_snapshots", "pg_subtrans"]);
/** Files it leaves out (excludeFiles), and the configuration startServer writes anew. */
const SKIPPED = new Set(["postmaster.pid", "postmaster.opts", "backup_label", "tablespace_map", "standby.signal", "recovery.signal", "postgresql.auto.conf"]);

/** Copies a live data directory: files that vanish meanwhile (a recycled segment, a stats temp file) are skipped; WAL replay mends the rest. */
function copyLive(from: string, to: string, runAs: RunAs, top = true): void {
  fs.mkdirSync(to, { mode: 0o700, recursive: true });
  giveToServer(runAs, to);
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (top && SKIPPED.has(entry.name)) continue;
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    try {
      if (entry.isDirectory()) {
        if (top && EMPTY_DIRS.has(entry.name)) {
          fs.mkdirSync(dst, { mode: 0o700 });
          giveToServer(runAs, dst);
          if (entry.name === "pg_wal") {
            fs.mkdirSync(path.join(dst, "archive_status"), { mode: 0o700 });
            giveToServer(runAs, path.join(dst, "archive_status"));
          }
        } else copyLive(src, dst, runAs, false);
      } else if (entry.isFile()) {
        fs.copyFileSync(src, dst);
        fs.chmodSync(dst, 0o600);
        giveToServer(runAs, dst);
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
}

let count = 0;

/**
 * Starts a hot standby of `primary` (15+; 16+ for logical slots on it),
 * streaming from a new physical slot, and waits until it accepts
 * connections. `opts.settings` are added to (and override) the standby's.
 */
export async function startStandby(primary: Cluster, opts: StartOptions = {}): Promise<Standby> {
  const runAs = await getRunAs();
  const { dataDir: source, binDir } = await clusterPaths(primary);
  const physicalSlot = `standby_${process.pid}_${++count}`;
  await primary.query("SELECT pg_catalog.pg_create_physical_replication_slot($1, true)", [physicalSlot]);
  const backup = async (_bin: string, _runAs: RunAs, dataDir: string): Promise<void> => {
    const client = await primary.connect();
    try {
      await client.query("SELECT pg_catalog.pg_backup_start('pgoutput-wasm standby', true)");
      copyLive(source, dataDir, runAs);
      const { labelfile, spcmapfile } = (await client.query<{ labelfile: string; spcmapfile: string }>(
        "SELECT labelfile, spcmapfile FROM pg_catalog.pg_backup_stop(false)",
      )).rows[0]!;
      const files: [string, string][] = [["backup_label", labelfile], ["standby.signal", ""]];
      if (spcmapfile.length > 0) files.push(["tablespace_map", spcmapfile]);
      for (const [name, text] of files) {
        fs.writeFileSync(path.join(dataDir, name), text, { mode: 0o600 });
        giveToServer(runAs, path.join(dataDir, name));
      }
    } finally {
      await client.end().catch(() => {});
    }
  };
  let server;
  try {
    server = await startServer({
      ...opts,
      bin: binDir,
      major: primary.major,
      settings: {
        primary_conninfo: `host=${primary.host} port=${primary.port} user=${primary.user} application_name=${physicalSlot}`,
        primary_slot_name: physicalSlot,
        hot_standby_feedback: "on",
        ...opts.settings,
      },
      initDataDir: backup,
    });
  } catch (e) {
    await primary.query("SELECT pg_catalog.pg_drop_replication_slot($1)", [physicalSlot]).catch(() => {});
    throw e;
  }
  const stopServer = server.stop;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= (async () => {
    await stopServer();
    await primary.query("SELECT pg_catalog.pg_drop_replication_slot($1)", [physicalSlot]).catch(() => {});
  })());
  return { ...server, major: primary.major, physicalSlot, stop };
}

/** Waits until the standby has replayed the primary's WAL up to the primary's position now. */
export async function waitForReplay(primary: Cluster, standby: Cluster, timeoutMs = 30_000): Promise<void> {
  const [{ lsn }] = await primary.query<{ lsn: string }>("SELECT pg_catalog.pg_current_wal_lsn()::text AS lsn");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [{ done }] = await standby.query<{ done: boolean }>(
      "SELECT coalesce(pg_catalog.pg_last_wal_replay_lsn() >= $1::pg_lsn, false) AS done", [lsn],
    );
    if (done) return;
    if (Date.now() > deadline) throw new Error(`the standby did not replay up to ${lsn} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
