/**
 * `tail --metrics HOST:PORT`: an HTTP server answering `GET /metrics` with
 * the run's metrics in the Prometheus text exposition format (the stream's
 * or snapshot's, the pipeline's and the sink's; docs/metrics.md). A bare
 * PORT (or `:PORT`) listens on 127.0.0.1 only: exposing the endpoint
 * beyond the machine is a choice made by naming the address.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { METRICS_CONTENT_TYPE } from "../metrics/exposition.ts";
import { CliError, usage } from "./errors.ts";
import type { Flag } from "./flags.ts";

export const METRICS: Flag = {
  name: "metrics", type: "string", value: "HOST:PORT",
  description: `serve Prometheus metrics at http://HOST:PORT/metrics (PORT alone:
127.0.0.1; docs/metrics.md lists them)`,
};

export interface MetricsAddress {
  host: string;
  port: number;
}

/** `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT`; the host defaults to 127.0.0.1. A usage error otherwise. */
export function parseMetricsAddress(text: string): MetricsAddress {
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]]*):)?(\d{1,5})$/.exec(text.trim());
  const port = m === null ? Number.NaN : Number(m[2]);
  if (m === null || port > 65535) throw usage(`--metrics must be HOST:PORT or PORT (e.g. 127.0.0.1:9187), not ${JSON.stringify(text)}`);
  const host = m[1] === undefined || m[1] === "" ? "127.0.0.1" : m[1].replace(/^\[(.*)\]$/, "$1");
  return { host, port };
}

export interface MetricsServer {
  /** `http://host:port/metrics`, with the port bound (for port 0). */
  readonly url: string;
  close(): Promise<void>;
}

/** Listens on `address`; each GET /metrics is answered with `collect()`'s text. A port that cannot be bound is a CliError. */
export async function serveMetrics(address: MetricsAddress, collect: () => Promise<string>): Promise<MetricsServer> {
  const server = createServer((req, res) => void answer(req, res, collect));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(address.port, address.host, () => {
      server.off("error", reject);
      resolve();
    });
  }).catch((e: NodeJS.ErrnoException) => {
    throw new CliError(
      `cannot serve metrics on ${address.host}:${address.port}: ${e.code ?? e.message}`,
      e.code === "EADDRINUSE" ? "another process listens there: choose another --metrics port" : "check the --metrics address (a local interface, and a port this user may bind)",
    );
  });
  server.unref(); // the run, not a scraper's connection, decides when the process ends
  const bound = server.address();
  const port = typeof bound === "object" && bound !== null ? bound.port : address.port;
  const host = address.host.includes(":") ? `[${address.host}]` : address.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

async function answer(req: IncomingMessage, res: ServerResponse, collect: () => Promise<string>): Promise<void> {
  const path = (req.url ?? "/").split("?")[0];
  if (path !== "/metrics") {
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found: the metrics are at /metrics\n");
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }).end("GET /metrics\n");
    return;
  }
  let body: string;
  try {
    body = await collect();
  } catch (e) {
    res.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end(`could not collect the metrics: ${(e as Error).message}\n`);
    return;
  }
  res.writeHead(200, { "content-type": METRICS_CONTENT_TYPE, "content-length": Buffer.byteLength(body) });
  res.end(req.method === "HEAD" ? undefined : body);
}
