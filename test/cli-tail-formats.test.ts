/**
 * `tail --format debezium` and `--format cloudevents`, the CLI compiled as
 * published, against a real PostgreSQL 18: binary CloudEvents of Debezium
 * events into the HTTP sink (a webhook on 127.0.0.1), each request read
 * back by the `cloudevents` SDK; the source the events name is the
 * database and slot tail streamed from (what only tail knows: connected-
 * source.ts passes them to the format).
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HTTP, type CloudEventV1 } from "cloudevents";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";
import { startWebhook, type Webhook } from "./support/webhook.ts";

const CLI_FOLDER = "cli-test-tail-formats";

let cluster: Cluster;
let cli: Promise<string>;
let hook: Webhook;

beforeAll(async () => {
  cli = buildCli(CLI_FOLDER);
  cli.catch(() => {}); // awaited by the test
  [cluster, hook] = await Promise.all([startCluster(18), startWebhook()]);
  await cluster.query(`CREATE TABLE public.customers (id int PRIMARY KEY, email text NOT NULL);
    CREATE PUBLICATION tf_pub FOR TABLE public.customers`);
}, 120_000);

afterAll(async () => {
  await hook?.close();
  await cluster?.stop();
  await removeCli(CLI_FOLDER);
});

describe("tail --format cloudevents -o data=debezium -o mode=binary --sink http://…", () => {
  it("one request per event, its attributes the ce- headers, the Debezium event the body, source the database and slot", async () => {
    const main = await cli;
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
    const child = spawn(process.execPath, [main, "tail", "-c", cluster.connectionString, "--publication", "tf_pub", "--slot", "tf_cli", "--create-slot",
      "--format", "cloudevents", "-o", "data=debezium", "-o", "mode=binary", "-o", "transaction-metadata", "--sink", hook.url], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    try {
      for (let deadline = Date.now() + 30_000; ; ) {
        const rows = await cluster.query(`SELECT 1 FROM pg_replication_slots s JOIN pg_stat_activity a ON a.pid = s.active_pid
          WHERE s.slot_name = 'tf_cli' AND a.query LIKE 'START_REPLICATION%'`);
        if (rows.length > 0) break;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`tail did not start streaming: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await cluster.query("BEGIN; INSERT INTO public.customers VALUES (1, 'a@example.com'); UPDATE public.customers SET email = 'b@example.com' WHERE id = 1; COMMIT");
      for (let deadline = Date.now() + 30_000; hook.accepted.length < 4 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
      const events = hook.accepted.map((req) => HTTP.toEvent({ headers: req.headers, body: req.body.toString() }) as CloudEventV1<Record<string, any>>);
      expect(events.map((e) => e.type)).toEqual(["postgresql.transaction.begin", "postgresql.change.insert", "postgresql.change.update", "postgresql.transaction.commit"]);
      expect(new Set(events.map((e) => e.source))).toEqual(new Set([`/postgresql/${cluster.database}/tf_cli`]));
      expect(events.map((e) => e.subject)).toEqual([undefined, "public.customers", "public.customers", undefined]);
      expect(events.map((e) => e.data!.status ?? e.data!.op)).toEqual(["BEGIN", "c", "u", "END"]);
      expect(events[1]!.data!.source).toMatchObject({ connector: "postgresql", name: cluster.database, db: cluster.database, schema: "public", table: "customers" });
      expect(events[2]!.data!.after).toEqual({ id: 1, email: "b@example.com" });
      expect(hook.accepted.map((req) => req.headers["change-ids"])).toEqual(events.map((e) => e.id));
    } finally {
      child.kill("SIGINT");
      expect(await exited, stderr).toBe(0);
      await cluster.query("SELECT pg_drop_replication_slot('tf_cli')");
    }
  }, 120_000);
});
