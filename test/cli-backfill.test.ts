// `pgoutput-wasm tail --backfill` end to end (the CLI compiled as published,
// run as a child process against a real PostgreSQL 18): a table that
// existed before the slot is written as `S` lines while streaming, the
// changes after it as `I` lines, its end on the status output; a table not
// in the publication is refused with the reason.

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";

const CLI_FOLDER = "cli-test-backfill";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
let cluster: Cluster;
let main: string;

beforeAll(async () => {
  [cluster, main] = await Promise.all([startCluster(18), buildCli(CLI_FOLDER)]);
  await cluster.query(`CREATE TABLE cb (id int PRIMARY KEY, v text);
    INSERT INTO cb SELECT g, 'v' || g FROM generate_series(1, 50) g;
    CREATE TABLE cb_hidden (id int PRIMARY KEY);
    CREATE PUBLICATION p_cb FOR TABLE cb`);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await removeCli(CLI_FOLDER);
});

function tail(args: string[]): { child: ReturnType<typeof spawn>; out: () => string; err: () => string; exited: Promise<number | null> } {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
  const child = spawn(process.execPath, [main, "tail", "-c", cluster.connectionString, "--publication", "p_cb", ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, out: () => stdout, err: () => stderr, exited };
}

it("writes a backfilled table's rows as S lines among the changes", async () => {
  const t = tail(["--backfill", "cb", "--progress", "--max-messages", "52"]);
  const deadline = Date.now() + 30_000;
  while (t.out().split("\n").length <= 50 && Date.now() < deadline && t.child.exitCode === null) await new Promise((r) => setTimeout(r, 50));
  await cluster.query("INSERT INTO cb VALUES (51, 'after'), (52, 'after')");
  expect(await t.exited, t.err()).toBe(0);
  const lines = t.out().trim().split("\n").map((l) => JSON.parse(l));
  expect(lines).toHaveLength(52);
  expect(lines.slice(0, 50).every((l) => l.action === "S")).toBe(true);
  expect(lines.slice(0, 50).map((l) => l.columns[0].value)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1)); // key order
  expect(lines.slice(50).map((l) => [l.action, l.columns[0].value])).toEqual([["I", 51], ["I", 52]]);
  expect(t.err()).toMatch(/backfill of public\.cb complete: 50 rows/);
}, 60_000);

it("refuses a table not in the publication", async () => {
  const t = tail(["--backfill", "cb_hidden", "--max-messages", "1"]);
  expect(await t.exited).not.toBe(0);
  expect(t.err()).toMatch(/public\.cb_hidden is not a table of the publication p_cb/);
}, 60_000);
