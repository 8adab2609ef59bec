// Plain SQL clients of a harness cluster, for tests, benchmarks and scripts.
import pg from "pg";
import type { ClientConfig } from "pg";
import type { Cluster } from "./cluster.ts";

/** What pg.Client, pg.Pool and replicate() take to reach the cluster as its superuser. */
export const clientConfig = (c: Cluster): ClientConfig => ({ host: c.host, port: c.port, user: c.user, database: c.database });

/** Runs `fn` with a connected client, ended afterwards whatever `fn` does. */
export async function withClient<T>(config: ClientConfig, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client(config);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
