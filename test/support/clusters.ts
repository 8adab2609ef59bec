import { afterAll, beforeAll } from "vitest";
import pg from "pg";
import type { ClientConfig } from "pg";
import { clientConfig } from "../../devkit/cluster/client.ts";
import { startCluster, type Cluster, type PgMajor, type StartOptions } from "../../devkit/cluster/cluster.ts";

export { clientConfig, withClient } from "../../devkit/cluster/client.ts";

/** A started cluster, with what clients take to reach it as its superuser. */
export interface StartedCluster {
  major: PgMajor;
  cluster: Cluster;
  config: ClientConfig;
}

/** The `make` of startClusters for a file that needs nothing more than the cluster and its config. */
export const startedCluster = (cluster: Cluster, config: ClientConfig): StartedCluster => ({ major: cluster.major, cluster, config });

/**
 * Starts a cluster per major (each with `opts`), in parallel, and puts what
 * `make` builds on each into `into` as it comes (so the caller's afterAll
 * stops every cluster that did start); then throws the first failure, if any.
 */
export async function startClusters<T>(majors: readonly PgMajor[], into: Map<PgMajor, T>, make: (cluster: Cluster, config: ClientConfig) => T | Promise<T>, opts: StartOptions = {}): Promise<void> {
  const started = await Promise.allSettled(majors.map((m) => startCluster(m, opts)));
  for (const s of started) {
    if (s.status !== "fulfilled") continue;
    into.set(s.value.major, await make(s.value, clientConfig(s.value)));
  }
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
}

/** SQL through a pool survives a server restart (cluster.query does not); its commits are synchronous. */
export function syncCommitPool(config: ClientConfig, max: number): pg.Pool {
  const pool = new pg.Pool({ ...config, max, options: "-c synchronous_commit=on" });
  pool.on("error", () => {}); // idle clients die with a restart
  return pool;
}

/**
 * After a file's tests: the streams still in `streams` are stopped first (a
 * stream left running would see its server go), then the clusters.
 */
export async function stopClusters(clusters: Iterable<StartedCluster>, streams: ReadonlySet<{ stop(): Promise<unknown> }> = new Set()): Promise<void> {
  await Promise.all([...streams].map((s) => s.stop().catch(() => {})));
  await Promise.all([...clusters].map((c) => c.cluster.stop()));
}

/** A cluster with a pool for the test's SQL. */
export interface PooledCluster extends StartedCluster {
  /** SQL through a pool: survives a server restart (cluster.query does not). Commits are synchronous. */
  pool: pg.Pool;
}

/**
 * The file's clusters: started before its tests, each with a pool of `poolMax`
 * clients; after them, the streams still in `streams` are stopped, then the
 * pools and the clusters.
 */
export function pooledClusters(majors: readonly PgMajor[], poolMax: number, streams: ReadonlySet<{ stop(): Promise<unknown> }> = new Set()): Map<PgMajor, PooledCluster> {
  const ctxs = new Map<PgMajor, PooledCluster>();
  beforeAll(async () => {
    await startClusters(majors, ctxs, (cluster, config) => ({ ...startedCluster(cluster, config), pool: syncCommitPool(config, poolMax) }));
  });
  afterAll(async () => {
    await Promise.all([...streams].map((s) => s.stop().catch(() => {})));
    for (const c of ctxs.values()) {
      await c.pool.end().catch(() => {});
      await c.cluster.stop();
    }
  });
  return ctxs;
}
