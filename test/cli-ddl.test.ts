// `pgoutput-wasm ddl install|remove|status` and `tail --ddl --until`, end to
// end: the CLI compiled as published (test/support/build-cli.ts) runs as a
// child process against a real PostgreSQL 18. The trigger is installed and
// removed only by the command; tail writes the captured command (a Q line)
// where it ran, the A line of the new shape before the first row of it, and
// ends by itself after the last transaction that ends at or before --until,
// which it acknowledged.

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { formatLsn, parseLsn } from "../bindings/lsn.ts";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { buildCli, removeCli, runCli } from "./support/build-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MAIN = join(ROOT, "build", "cli-test-ddl", "cli", "main.js");

const run = (args: string[]) => runCli(MAIN, args);

let cluster: Cluster;
const url = () => `postgres://${cluster.user}@${cluster.host}:${cluster.port}/${cluster.database}`;

beforeAll(async () => {
  [cluster] = await Promise.all([startCluster(18), buildCli("cli-test-ddl")]);
});

afterAll(async () => {
  await cluster?.stop();
  await removeCli("cli-test-ddl");
});

it("ddl install, tail --ddl --until, ddl remove", { timeout: 120_000 }, async () => {
  expect((await run(["ddl", "status", "-c", url()])).stdout).toBe("DDL capture is not installed\n");
  const install = await run(["ddl", "install", "-c", url()]);
  expect(install.stderr).toBe("");
  expect(install.code).toBe(0);
  expect((await run(["ddl", "status", "-c", url()])).stdout).toMatch(/^DDL capture is installed/);

  await cluster.query(`CREATE TABLE dt (id int PRIMARY KEY); CREATE PUBLICATION dtp FOR TABLE dt`);
  await cluster.query(`SELECT pg_create_logical_replication_slot('cli_ddl', 'pgoutput')`);
  await cluster.query(`INSERT INTO dt VALUES (1)`);
  await cluster.query(`BEGIN; ALTER TABLE dt ADD COLUMN b text; INSERT INTO dt VALUES (2, 'two'); COMMIT`);
  const until = (await cluster.query<{ l: string }>(`SELECT pg_current_wal_insert_lsn()::text AS l`))[0]!.l;
  await cluster.query(`INSERT INTO dt VALUES (3, 'after --until')`);

  const tail = await run(["tail", "-c", url(), "--publication", "dtp", "--slot", "cli_ddl", "--ddl", "--until", until]);
  expect(tail.code).toBe(0);
  const lines = tail.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines.map((l) => l.action)).toEqual(["I", "Q", "A", "I"]);
  expect(lines[1]).toMatchObject({ action: "Q", tag: "ALTER TABLE", command: "BEGIN; ALTER TABLE dt ADD COLUMN b text; INSERT INTO dt VALUES (2, 'two'); COMMIT" });
  expect(lines[2]).toMatchObject({ action: "A", table: "dt", changes: [{ change: "columnAdded", column: "b", type: "text" }] });
  const confirmed = parseLsn((await cluster.query<{ c: string }>(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = 'cli_ddl'`))[0]!.c);
  expect(confirmed <= parseLsn(until)).toBe(true);
  expect(confirmed > 0n).toBe(true);

  // --until in words replicate() does not take: a usage error naming the flag.
  const bad = await run(["tail", "-c", url(), "--publication", "dtp", "--slot", "cli_ddl", "--until", "nowhere"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toMatch(/--until/);

  const remove = await run(["ddl", "remove", "-c", url()]);
  expect(remove.code).toBe(0);
  expect((await run(["ddl", "status", "-c", url()])).stdout).toBe("DDL capture is not installed\n");
  expect((await run(["ddl", "frob", "-c", url()])).code).toBe(2);
  console.log(`tail --until ${until}: acknowledged ${formatLsn(confirmed)}`);
});
