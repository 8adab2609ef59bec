// `pgoutput-wasm tail --snapshot` end to end (the CLI compiled as published,
// run as a child process against a real PostgreSQL 18): every existing row
// printed as an `S` line first, then the changes committed after the
// snapshot as `I` lines, and the snapshot's end on the status output.

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
let cluster: Cluster;
let main: string;

beforeAll(async () => {
  [cluster, main] = await Promise.all([startCluster(18), buildCli("cli-test-snapshot")]);
  await cluster.query(`CREATE TABLE cs (id int PRIMARY KEY, v text, arr int4[]);
    INSERT INTO cs SELECT g, 'v' || g, ARRAY[g] FROM generate_series(1, 50) g;
    CREATE TABLE cs_other (id int PRIMARY KEY);
    INSERT INTO cs_other VALUES (7);
    CREATE PUBLICATION p_cs FOR TABLE cs, cs_other`);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await removeCli("cli-test-snapshot");
});

it("prints the snapshot's rows as S lines, then the changes after it", async () => {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
  const child = spawn(process.execPath, [main, "tail", "-c", cluster.connectionString, "--publication", "p_cs", "--snapshot", "--progress", "--max-messages", "53"], {
    cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      stdout += d;
      if (stdout.split("\n").length > 51) resolve();
    });
    const timer = setInterval(() => {
      if (Date.now() > deadline) {
        clearInterval(timer);
        reject(new Error(`no snapshot lines: ${stdout.slice(0, 200)} ${stderr}`));
      }
    }, 100);
    child.on("close", () => clearInterval(timer));
    exited.then(() => clearInterval(timer));
  });
  await cluster.query("INSERT INTO cs VALUES (51, 'after', '{}'), (52, 'after', NULL)");
  expect(await exited, stderr).toBe(0);
  const lines = stdout.trim().split("\n").map((l) => JSON.parse(l));
  expect(lines).toHaveLength(53);
  const snapshot = lines.slice(0, 51);
  expect(snapshot.every((l) => l.action === "S")).toBe(true);
  expect(snapshot.filter((l) => l.table === "cs").map((l) => l.columns[0].value).sort((a: number, b: number) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  expect(snapshot.find((l) => l.table === "cs_other").columns).toEqual([{ name: "id", type: "integer", value: 7 }]);
  expect(snapshot.find((l) => l.table === "cs" && l.columns[0].value === 3).columns).toEqual([
    { name: "id", type: "integer", value: 3 }, { name: "v", type: "text", value: "v3" }, { name: "arr", type: "integer[]", value: [3] },
  ]);
  expect(lines.slice(51).map((l) => [l.action, l.columns[0].value])).toEqual([["I", 51], ["I", 52]]);
  expect(stderr).toMatch(/snapshot complete: 51 rows of 2 tables/);
}, 60_000);
