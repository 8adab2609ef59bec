/**
 * A Prometheus server for a test (Debian's `prometheus` package), on
 * 127.0.0.1, scraping the given targets every `scrapeIntervalMs`, its TSDB
 * in a folder of its own; tied to the test process (tied.ts): whatever ends
 * the test, the server dies and its folder is removed. Plus `promtool check
 * metrics`, the linter Prometheus ships, on an exposition text.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { startBroker, type Broker } from "./tied.ts";

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface Prometheus extends Broker {
  /** An instant query through the HTTP API (`/api/v1/query`): the vector's samples. */
  query(promql: string): Promise<PromSample[]>;
}

/** Starts Prometheus scraping `targets` (`host:port`, path /metrics) as job `pgoutput`. */
export async function startPrometheus(targets: readonly string[], scrapeIntervalMs = 500): Promise<Prometheus> {
  const broker = await startBroker("http", "prometheus", (port, dir) => {
    const config = path.join(dir, "prometheus.yml");
    fs.writeFileSync(config, [
      "global:",
      `  scrape_interval: ${scrapeIntervalMs}ms`,
      `  scrape_timeout: ${Math.max(100, scrapeIntervalMs - 100)}ms`,
      "scrape_configs:",
      "  - job_name: pgoutput",
      "    static_configs:",
      `      - targets: [${targets.map((t) => JSON.stringify(t)).join(", ")}]`,
      "",
    ].join("\n"));
    return [
      `--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn",
    ];
  });
  // The port opens before the TSDB is: until /-/ready says 200, queries get 503.
  const deadline = Date.now() + 15_000;
  while ((await fetch(`${broker.url}/-/ready`).then((r) => r.status, () => 0)) !== 200) {
    if (Date.now() > deadline) {
      await broker.stop();
      throw new Error("prometheus: not ready after 15 s");
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    ...broker,
    async query(promql) {
      const res = await fetch(`${broker.url}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = (await res.json()) as { status: string; error?: string; data?: { resultType: string; result: PromSample[] } };
      if (body.status !== "success") throw new Error(`prometheus: ${promql}: ${body.error ?? res.status}`);
      return body.data!.result;
    },
  };
}

/** `promtool check metrics` on `text` (stdin): its exit code and what it said. */
export function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("promtool", ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}
