/**
 * Prometheus metrics, for real: the exposition writer against the format's
 * rules; `stream.metrics()`, `snapshot.metrics()`, a pipeline's and its
 * sinks' against real PostgreSQL 15 and 18, the figures compared with what
 * the test wrote and with what the server says, every text passed through
 * `promtool check metrics` (Debian's prometheus 2.42 package); and `tail
 * --metrics` scraped by a real Prometheus server on 127.0.0.1, whose HTTP
 * API answers a query with the value the stream reported. Every wait is
 * bounded; the servers and folders go with the test process.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { replicate, SnapshotReplication } from "../bindings/pg/index.ts";
import { formatExposition, metricsText, type MetricFamily } from "../bindings/metrics/exposition.ts";
import { FORMATS, Pipeline, fileSink, snapshotSource } from "../bindings/pipeline/index.ts";
import { Records, RecordTransaction } from "../bindings/pipeline/records.ts";
import { httpSink } from "../bindings/sinks/http.ts";
import { createDecoder } from "../bindings/create-decoder.ts";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { freePort } from "../devkit/brokers/tied.ts";
import { promtoolCheck, startPrometheus, type Prometheus } from "../devkit/brokers/prometheus.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";
import { parseMetricsAddress } from "../bindings/cli/metrics-server.ts";
import { startWebhook, type Webhook } from "./support/webhook.ts";

const CLI_FOLDER = "cli-test-metrics";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(what: string, get: () => T | undefined | Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The value of the sample `name{labels…}` (labels given must match, others are ignored), or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

async function expectLintClean(text: string): Promise<void> {
  const r = await promtoolCheck(text);
  expect(r.output, "promtool check metrics").toBe("");
  expect(r.code).toBe(0);
}

describe("the exposition format", () => {
  it("HELP and TYPE per family, escaped label values, Go floats, same-named families merged", () => {
    const fams: MetricFamily[] = [
      { name: "pgoutput_wasm_x_total", type: "counter", help: "a \\ back\nslash", samples: [{ labels: { slot: 'a"b\\c\nd' }, value: 3 }] },
      { name: "pgoutput_wasm_g", type: "gauge", help: "g", samples: [{ value: NaN }, { labels: { k: "1" }, value: Infinity }, { labels: { k: "2" }, value: -Infinity }, { labels: { k: "3" }, value: 2n ** 64n - 1n }] },
      { name: "pgoutput_wasm_x_total", type: "counter", help: "ignored", samples: [{ labels: { slot: "b" }, value: 0.5 }] },
      { name: "pgoutput_wasm_empty", type: "gauge", help: "no samples", samples: [] },
    ];
    expect(formatExposition(fams)).toBe([
      "# HELP pgoutput_wasm_x_total a \\\\ back\\nslash",
      "# TYPE pgoutput_wasm_x_total counter",
      'pgoutput_wasm_x_total{slot="a\\"b\\\\c\\nd"} 3',
      'pgoutput_wasm_x_total{slot="b"} 0.5',
      "# HELP pgoutput_wasm_g g",
      "# TYPE pgoutput_wasm_g gauge",
      "pgoutput_wasm_g NaN",
      'pgoutput_wasm_g{k="1"} +Inf',
      'pgoutput_wasm_g{k="2"} -Inf',
      'pgoutput_wasm_g{k="3"} 18446744073709551615',
      "",
    ].join("\n"));
  });

  it("refuses what a scraper would: bad names, a family of two types, a sample twice", () => {
    const one = (name: string, labels: Record<string, string> = {}): MetricFamily => ({ name, type: "gauge", help: "h", samples: [{ labels, value: 1 }] });
    expect(() => formatExposition([one("9lives")])).toThrow(/metric name "9lives"/);
    expect(() => formatExposition([one("ok", { "bad-label": "x" })])).toThrow(/label name "bad-label"/);
    expect(() => formatExposition([one("ok", { __reserved: "x" })])).toThrow(/begins with __/);
    expect(() => formatExposition([one("ok", { a: "1" }), one("ok", { a: "1" })])).toThrow(/given twice/);
    expect(() => formatExposition([one("ok"), { ...one("ok"), type: "counter" }])).toThrow(/both a gauge and a counter/);
  });

  it("--metrics addresses: a bare port is 127.0.0.1's; IPv6 in brackets; anything else a usage error", () => {
    expect(parseMetricsAddress("9187")).toEqual({ host: "127.0.0.1", port: 9187 });
    expect(parseMetricsAddress(":9187")).toEqual({ host: "127.0.0.1", port: 9187 });
    expect(parseMetricsAddress("0.0.0.0:80")).toEqual({ host: "0.0.0.0", port: 80 });
    expect(parseMetricsAddress("localhost:0")).toEqual({ host: "localhost", port: 0 });
    expect(parseMetricsAddress("[::1]:9187")).toEqual({ host: "::1", port: 9187 });
    for (const bad of ["", "host", "host:", "host:99999", "::1:9187", "a:b:1", "[::1]", "9187x"]) {
      expect(() => parseMetricsAddress(bad), bad).toThrow(/--metrics must be HOST:PORT or PORT/);
    }
  });

  it("promtool tells good from bad (so its silence below means something)", async () => {
    expect((await promtoolCheck("# HELP a_total x\n# TYPE a_total counter\na_total 1\n")).code).toBe(0);
    const bad = await promtoolCheck("# HELP a x\n# TYPE a counter\na 1\n");
    expect(bad.code).not.toBe(0);
    expect(bad.output).toMatch(/_total/);
  });
});

describe("sink metrics: the http sink against a local webhook", () => {
  const hooks: Webhook[] = [];
  afterAll(async () => {
    for (const h of hooks) await h.close();
  });
  const batch = (n: number): Records => {
    const r = new Records();
    r.txn = new RecordTransaction(7, 0x100n, undefined);
    for (let k = 0; k < n; k++) (r.bytes.str(`{"n":${k}}\n`), r.end("insert"));
    r.acks.push({ after: r.length, lsn: 0x130n });
    return r;
  };

  it("a 503 then 204: one retry, records acknowledged, nothing in flight; a 400: one permanent error", async () => {
    const hook = await startWebhook((_, n) => ({ status: n === 0 ? 503 : 204 }));
    hooks.push(hook);
    const sink = await httpSink(hook.url);
    const r = batch(3);
    const bytes = r.bytes.len;
    const written = sink.write(r);
    expect(sample(await sink.metrics(), "pgoutput_wasm_sink_in_flight_records", { sink: "http" })).toBe(3);
    await written;
    const text = await sink.metrics();
    expect(sample(text, "pgoutput_wasm_sink_retries_total", { sink: "http" })).toBe(1);
    expect(sample(text, "pgoutput_wasm_sink_records_total", { sink: "http" })).toBe(3);
    expect(sample(text, "pgoutput_wasm_sink_bytes_total", { sink: "http" })).toBe(bytes);
    expect(sample(text, "pgoutput_wasm_sink_acked_records_total", { sink: "http" })).toBe(3);
    expect(sample(text, "pgoutput_wasm_sink_in_flight_records", { sink: "http" })).toBe(0);
    expect(sample(text, "pgoutput_wasm_sink_errors_total", { sink: "http" })).toBe(0);
    await expectLintClean(text);
    await sink.close();

    const refusing = await startWebhook(() => ({ status: 400 }));
    hooks.push(refusing);
    const bad = await httpSink(refusing.url);
    await expect(bad.write(batch(2))).rejects.toThrow(/400/);
    await expect(bad.write(batch(1))).rejects.toThrow(); // the same failure again: counted once
    const after = await bad.metrics();
    expect(sample(after, "pgoutput_wasm_sink_errors_total", { sink: "http" })).toBe(1);
    expect(sample(after, "pgoutput_wasm_sink_acked_records_total", { sink: "http" })).toBe(0);
    expect(sample(after, "pgoutput_wasm_sink_in_flight_records", { sink: "http" })).toBe(0);
    await bad.close();
  });
});

// ------------------------------------------------------------ PostgreSQL 15 and 18

const clusters = new Map<PgMajor, Cluster>();
const streams = new Set<{ stop(): Promise<void> }>();
const folders: string[] = [];
let seq = 0;

beforeAll(async () => {
  const [c15, c18] = await Promise.all([startCluster(15), startCluster(18)]);
  clusters.set(15, c15);
  clusters.set(18, c18);
}, 120_000);

afterAll(async () => {
  await Promise.all([...streams].map((s) => s.stop().catch(() => {})));
  await Promise.all([...clusters.values()].map((c) => c.stop()));
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

async function fresh(c: Cluster, rows = 0): Promise<{ table: string; pub: string; slot: string }> {
  const n = ++seq;
  await c.query(`CREATE TABLE m${n} (id int PRIMARY KEY, v text)`);
  if (rows > 0) await c.query(`INSERT INTO m${n} SELECT g, 'v' || g FROM generate_series(1, ${rows}) g`);
  await c.query(`CREATE PUBLICATION mpub${n} FOR TABLE m${n}`);
  return { table: `m${n}`, pub: `mpub${n}`, slot: `mslot${n}` };
}

const connection = (c: Cluster) => ({ host: c.host, port: c.port, user: c.user, database: c.database });

describe.each([15, 18] as const)("PostgreSQL %i", (major) => {
  const cluster = () => clusters.get(major)!;

  it("stream.metrics(): changes, transactions, bytes, decode time, heartbeats and the slot's lag and WAL, lint-clean", async () => {
    const c = cluster();
    const { table, pub, slot } = await fresh(c);
    const stream = await replicate({ connection: connection(c), slot: { name: slot, create: true }, publications: pub, heartbeat: { intervalMs: 100 } });
    streams.add(stream);
    const consumed = (async () => {
      for await (const _ of stream.transactions()) { /* acknowledged as the loop asks for the next one */ }
    })();
    await c.query(`BEGIN; INSERT INTO ${table} VALUES (1, 'a'), (2, 'b'), (3, 'c'); COMMIT`);
    await c.query(`BEGIN; UPDATE ${table} SET v = 'z' WHERE id = 1; DELETE FROM ${table} WHERE id = 2; COMMIT`);
    await waitFor("both transactions", () => (stream.stats.transactions >= 2 ? true : undefined));
    await waitFor("a heartbeat", async () => ((sample(await stream.metrics({ slot: false }), "pgoutput_wasm_heartbeats_sent_total") ?? 0) > 0 ? true : undefined));

    const text = await stream.metrics();
    const l = { slot, publication: pub };
    expect(sample(text, "pgoutput_wasm_received_changes_total", { ...l, operation: "insert" })).toBe(3);
    expect(sample(text, "pgoutput_wasm_received_changes_total", { ...l, operation: "update" })).toBe(1);
    expect(sample(text, "pgoutput_wasm_received_changes_total", { ...l, operation: "delete" })).toBe(1);
    expect(sample(text, "pgoutput_wasm_received_changes_total", { ...l, operation: "truncate" })).toBe(0);
    expect(sample(text, "pgoutput_wasm_received_transactions_total", l)).toBe(2);
    expect(sample(text, "pgoutput_wasm_received_bytes_total", l)).toBeGreaterThan(0);
    expect(sample(text, "pgoutput_wasm_received_bytes_total", l)).toBeLessThanOrEqual(stream.stats.bytes);
    expect(sample(text, "pgoutput_wasm_decode_seconds_total", l)).toBeGreaterThan(0);
    expect(sample(text, "pgoutput_wasm_heartbeats_sent_total", l)).toBeGreaterThan(0);
    expect(sample(text, "pgoutput_wasm_heartbeat_failures_total", l)).toBe(0);
    expect(sample(text, "pgoutput_wasm_reconnects_total", l)).toBe(0);
    expect(sample(text, "pgoutput_wasm_receive_timeouts_total", l)).toBe(0);
    expect(sample(text, "pgoutput_wasm_commit_lag_seconds", l)).toBeGreaterThanOrEqual(0);
    expect(sample(text, "pgoutput_wasm_last_commit_timestamp_seconds", l)).toBeCloseTo(Date.now() / 1000, -2);
    expect(sample(text, "pgoutput_wasm_slot_up", l)).toBe(1);
    expect(sample(text, "pgoutput_wasm_slot_active", l)).toBe(1);
    expect(sample(text, "pgoutput_wasm_slot_lost", l)).toBe(0);
    expect(sample(text, "pgoutput_wasm_slot_lag_seconds", l)).toBeGreaterThanOrEqual(0);
    // The server's own figures, read just after: lag and retained WAL within what the heartbeats added meanwhile.
    const [row] = await c.query<{ lag: string; retained: string }>(
      `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::text AS lag, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::text AS retained
       FROM pg_replication_slots WHERE slot_name = $1`, [slot]);
    const retained = sample(text, "pgoutput_wasm_wal_retained_bytes", l)!;
    expect(retained).toBeGreaterThan(0);
    expect(retained).toBeLessThanOrEqual(Number(row!.retained) + 1_000_000); // restart_lsn may have moved on meanwhile
    expect(sample(text, "pgoutput_wasm_slot_lag_bytes", l)).toBeGreaterThanOrEqual(0);
    expect(sample(text, "pgoutput_wasm_slot_lag_bytes", l)).toBeLessThanOrEqual(Number(row!.lag) + 1_000_000);
    await expectLintClean(text);

    // Without the slot's view: nothing read on the server.
    const own = await stream.metrics({ slot: false });
    expect(sample(own, "pgoutput_wasm_slot_up")).toBeUndefined();
    expect(sample(own, "pgoutput_wasm_received_transactions_total", l)).toBe(2);

    await stream.stop();
    await consumed;
    const ended = await stream.metrics();
    expect(sample(ended, "pgoutput_wasm_received_transactions_total", l)).toBe(2);
    expect(sample(ended, "pgoutput_wasm_slot_up"), "a stopped stream opens no connection").toBeUndefined();
  });

  it("snapshot.metrics(): rows and tables copied, then its stream's; a pipeline and its file sink's", async () => {
    const c = cluster();
    const { table, pub, slot } = await fresh(c, 25);
    const jsonl = FORMATS.jsonl!;
    const decoder = await createDecoder({ values: jsonl.values() });
    const run = await replicate({ connection: connection(c), slot: { name: slot, create: true }, publications: pub, ack: "manual", decoder, snapshot: {} });
    expect(run).toBeInstanceOf(SnapshotReplication);
    const snapshot = run as SnapshotReplication;
    streams.add(snapshot);
    const dir = mkdtempSync(join(tmpdir(), "pgoutputwasm-metrics-"));
    folders.push(dir);
    const sink = await fileSink(join(dir, "out.jsonl"));
    const pipeline = new Pipeline({ source: snapshotSource(snapshot), format: jsonl.create({ decoder }, {}), sink, replayDecoder: await createDecoder({ values: jsonl.values() }) });
    const done = pipeline.run();
    await waitFor("the snapshot", () => (pipeline.stats.durable >= 25 ? true : undefined));
    await c.query(`INSERT INTO ${table} VALUES (100, 'x'), (101, 'y')`);
    await waitFor("the insert acknowledged", () => (pipeline.stats.acks >= 1 && pipeline.stats.durable >= 27 ? true : undefined));

    const l = { slot, publication: pub };
    const text = await metricsText(snapshot, pipeline);
    expect(sample(text, "pgoutput_wasm_snapshot_rows_total", l)).toBe(25);
    expect(sample(text, "pgoutput_wasm_snapshot_tables", l)).toBe(1);
    expect(sample(text, "pgoutput_wasm_snapshot_tables_copied_total", l)).toBe(1);
    expect(sample(text, "pgoutput_wasm_snapshot_bytes_total", l)).toBeGreaterThan(25 * 4);
    expect(sample(text, "pgoutput_wasm_received_changes_total", { ...l, operation: "insert" })).toBe(2);
    expect(sample(text, "pgoutput_wasm_sink_records_total", { sink: "file" })).toBe(27);
    expect(sample(text, "pgoutput_wasm_sink_acked_records_total", { sink: "file" })).toBe(27);
    expect(sample(text, "pgoutput_wasm_sink_in_flight_records", { sink: "file" })).toBe(0);
    expect(sample(text, "pgoutput_wasm_sink_errors_total", { sink: "file" })).toBe(0);
    expect(sample(text, "pgoutput_wasm_pipeline_acks_total", { sink: "file" })).toBeGreaterThanOrEqual(1);
    expect(sample(await snapshot.metrics({ slot: false }), "pgoutput_wasm_snapshot_rows_total", l)).toBe(25);
    await expectLintClean(text);
    pipeline.stop();
    await done;
  });
});

// ------------------------------------------------------------ tail --metrics, scraped by Prometheus

describe("tail --metrics, scraped by a Prometheus server", () => {
  let main: string;
  const children: ChildProcess[] = [];
  let prometheus: Prometheus | undefined;
  beforeAll(async () => {
    main = await buildCli(CLI_FOLDER);
  }, 120_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    await prometheus?.stop();
    await removeCli(CLI_FOLDER);
  });

  const tail = (args: string[]) => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
    const child = spawn(process.execPath, [main, "tail", ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    child.stdout!.resume();
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    return { child, exited, stderr: () => stderr };
  };

  it("a bad address is a usage error; a port in use, an error with a hint", async () => {
    const bad = tail(["--metrics", "localhost:http"]);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toMatch(/--metrics must be HOST:PORT or PORT/);
    const c = clusters.get(18)!;
    const busy = await startWebhook();
    try {
      const inUse = tail(["-c", c.connectionString, "--publication", "none", "--metrics", new URL(busy.url).host]);
      expect(await inUse.exited).toBe(1);
      expect(inUse.stderr()).toMatch(/cannot serve metrics on 127\.0\.0\.1:\d+: EADDRINUSE/);
      expect(inUse.stderr()).toMatch(/choose another --metrics port/);
    } finally {
      await busy.close();
    }
  });

  it("PostgreSQL 15 and 18: Prometheus's query answers with the count each stream reported", async () => {
    const runs: { major: PgMajor; slot: string; port: number; rows: number; t: ReturnType<typeof tail> }[] = [];
    for (const [major, rows] of [[15, 4], [18, 7]] as const) {
      const c = clusters.get(major)!;
      const { table, pub, slot } = await fresh(c);
      const port = await freePort();
      // --no-reconnect: should this test process die, its cluster goes with it, and so does the tail.
      const t = tail(["-c", c.connectionString, "--publication", pub, "--slot", slot, "--create-slot", "--no-reconnect", "--metrics", `127.0.0.1:${port}`, "--progress"]);
      runs.push({ major, slot, port, rows, t });
      // Streaming, not just active: the slot is active while CREATE_REPLICATION_SLOT runs too.
      await waitFor(`tail on ${major} streaming`, async () => ((await c.query(
        `SELECT 1 FROM pg_replication_slots s JOIN pg_stat_activity a ON a.pid = s.active_pid WHERE s.slot_name = $1 AND a.query LIKE 'START_REPLICATION%'`, [slot],
      )).length > 0 ? true : undefined), 30_000);
      await c.query(`INSERT INTO ${table} SELECT g, 'r' FROM generate_series(1, ${rows}) g`);
    }
    const scrape = async (port: number) => {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
      return res.text();
    };
    // What each stream reports, once its changes are through.
    const reported = new Map<string, number>();
    for (const r of runs) {
      const text = await waitFor(`${r.rows} inserts on ${r.major}`, async () => {
        const t = await scrape(r.port);
        return sample(t, "pgoutput_wasm_sink_acked_records_total", { sink: "stdout" }) === r.rows ? t : undefined;
      }, 30_000);
      const inserts = sample(text, "pgoutput_wasm_received_changes_total", { slot: r.slot, operation: "insert" })!;
      expect(inserts).toBe(r.rows);
      reported.set(r.slot, inserts);
      await expectLintClean(text);
      expect((await fetch(`http://127.0.0.1:${r.port}/other`)).status).toBe(404);
    }

    prometheus = await startPrometheus(runs.map((r) => `127.0.0.1:${r.port}`), 250);
    const prom = prometheus;
    const answer = await waitFor("Prometheus to have scraped both", async () => {
      const got = await prom.query('pgoutput_wasm_received_changes_total{job="pgoutput",operation="insert"}');
      return got.length === runs.length ? got : undefined;
    }, 20_000);
    for (const s of answer) expect(Number(s.value[1]), s.metric.slot).toBe(reported.get(s.metric.slot!));
    expect(new Set(answer.map((s) => s.metric.slot))).toEqual(new Set(reported.keys()));
    const up = await prom.query('up{job="pgoutput"}');
    expect(up.map((s) => s.value[1])).toEqual(runs.map(() => "1"));
    const acked = await prom.query('sum(pgoutput_wasm_sink_acked_records_total{job="pgoutput"})');
    expect(Number(acked[0]!.value[1])).toBe(runs.reduce((n, r) => n + r.rows, 0));

    for (const r of runs) {
      r.t.child.kill("SIGINT");
      expect(await r.t.exited, r.t.stderr()).toBe(0);
      expect(r.t.stderr()).toContain(`metrics at http://127.0.0.1:${r.port}/metrics`);
      await expect(fetch(`http://127.0.0.1:${r.port}/metrics`), "the endpoint ends with the run").rejects.toThrow();
    }
    await prometheus.stop();
    prometheus = undefined;
  });
});
