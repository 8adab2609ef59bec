/**
 * The sinks side by side, in one run: changes/s and client CPU seconds per
 * GB delivered from the same backlog of about a million changes, through
 * the same pipeline (a real walsender → jsonl → the sink), with `stdout`
 * written to /dev/null (`tail > /dev/null`) as the bound a sink is measured
 * against.
 *
 *   npm run build:bench && node build/bench/bench/sinks.bench.js [--rows N] [--per-txn R] [--only stdout,nats,redis,http] [--major 15|18] [--write]
 *   (--write: bench/results/sinks.table.json, for the README)
 *   node build/bench/bench/sinks.bench.js --only nats --profile .tmp/prof   # then: node build/bench/bench/profile.js top .tmp/prof/nats.cpuprofile
 *
 * The backlog is a bulk insert (not the sink tests' workload, whose values
 * suite makes few changes per second to generate): `rows` rows (default
 * 1,000,000) of a bigint key, a text, an int and a timestamptz, committed
 * `per-txn` rows at a time (default 1,000), after one slot per case was
 * made, so every case reads the same WAL. A case's time runs from the
 * stream's start to the acknowledgement of the backlog's last transaction:
 * what the sink confirmed. CPU is this process's (the broker's is its own).
 *
 * `--profile DIR` writes each case's CPU profile, of the case's run alone
 * (not the backlog's making), to DIR/<case>.cpuprofile.
 *
 * A sink case is an entry of CASES: its name, how to open it (and what it
 * needs started first, e.g. a broker), how to stop what it started.
 */
import { createWriteStream, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import * as path from "node:path";
import pg from "pg";
import { jsonl } from "../bindings/formats/jsonl.ts";
import { replicate } from "../bindings/pg/index.ts";
import { Pipeline } from "../bindings/pipeline/run.ts";
import type { Sink } from "../bindings/pipeline/sink.ts";
import { streamSource } from "../bindings/pipeline/sources.ts";
import { createDecoder } from "../bindings/create-decoder.ts";
import { TYPES_QUERY, typesFromCatalog, type CatalogTypeRow } from "../bindings/values/catalog.ts";
import { parseLsn } from "../bindings/lsn.ts";
import { writableSink } from "../bindings/sinks/stdout.ts";
import { natsSink, natsOptions } from "../bindings/sinks/nats.ts";
import { startNats } from "../devkit/brokers/nats.ts";
import type { Broker } from "../devkit/brokers/tied.ts";
import { redisSink } from "../bindings/sinks/redis.ts";
import { httpSink } from "../bindings/sinks/http.ts";
import { startRedis } from "../devkit/brokers/redis.ts";
import { spawn } from "node:child_process";
import { startCluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { arg, numberArg } from "./args.ts";
import { writeTable } from "./report.ts";

const rows = numberArg("rows", 1_000_000);
const perTxn = numberArg("per-txn", 1000);
const major = numberArg("major", 18) as PgMajor;

interface SinkCase {
  name: string;
  /** Starts what the sink needs (a broker); returns how to open the sink and how to stop it all. */
  start(): Promise<{ open(): Promise<Sink>; stop(): Promise<void>; note?(): string }>;
}

const CASES: SinkCase[] = [
  {
    name: "stdout",
    start: async () => ({
      open: async () => writableSink(createWriteStream("/dev/null"), { name: "stdout" }),
      stop: async () => {},
    }),
  },
  {
    name: "nats",
    start: async () => {
      const broker: Broker = await startNats();
      const server = serverCpu(`-p ${broker.port} `);
      return {
        open: () => natsSink(natsOptions(`${broker.url}?create=true&stream=BENCH`)),
        stop: () => broker.stop(),
        note: () => `JetStream, file storage, one message per change, each PubAck awaited (pipelined); nats-server CPU ${server().toFixed(1)} s`,
      };
    },
  },
  // --- Redis Streams and the HTTP webhook (issue 22, i22-redis) ---
  {
    name: "redis",
    start: async () => {
      const broker: Broker = await startRedis(["--auto-aof-rewrite-percentage", "0"]);
      const server = serverCpu(`redis-server 127.0.0.1:${broker.port}`); // its process title
      return {
        open: () => redisSink(`${broker.url}?prefix=bench`),
        stop: () => broker.stop(),
        note: () => `one entry per change, pipelined script calls of up to 1,000 XADDs, AOF appendfsync always; redis-server CPU ${server().toFixed(1)} s`,
      };
    },
  },
  {
    name: "http",
    start: async () => {
      const receiver = await startReceiver();
      return {
        open: () => httpSink(`${receiver.url}?batch_records=1000`),
        stop: receiver.stop,
        note: () => `JSON Lines, 1,000 records per POST, one request at a time, a receiver that reads the body and answers 204 (its own process); receiver CPU ${receiver.cpu().toFixed(1)} s`,
      };
    },
  },
];

/** A webhook receiver in a process of its own (its CPU is not the client's): reads each body, answers 204. */
async function startReceiver(): Promise<{ url: string; stop(): Promise<void>; cpu(): number }> {
  const code = `const s = require("node:http").createServer((q, r) => { q.resume(); q.on("end", () => { r.writeHead(204); r.end(); }); });
s.listen(0, "127.0.0.1", () => console.log(s.address().port)); process.stdin.on("end", () => process.exit(0)); process.stdin.resume();`;
  const child = spawn(process.execPath, ["-e", code], { stdio: ["pipe", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve) => child.stdout!.once("data", (d) => resolve(Number(String(d).trim()))));
  const cpu = serverCpu(`-e const s = require("node:http")`);
  return {
    url: `http://127.0.0.1:${port}/hook`,
    cpu,
    stop: async () => {
      child.stdin!.end();
      await new Promise((r) => child.once("exit", r));
    },
  };
}

/** CPU seconds used so far by the process whose command line contains `marker` (from /proc), from now on. */
function serverCpu(marker: string): () => number {
  // A process may end between the listing and the read (other jobs run here): it is not the one.
  const cmdline = (p: string) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, "utf8").replace(/\0/g, " ");
    } catch {
      return "";
    }
  };
  const pid = readdirSync("/proc").find((p) => /^\d+$/.test(p) && cmdline(p).includes(marker) && !cmdline(p).startsWith("sh"));
  const ticks = () => {
    if (pid === undefined) return 0;
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      return (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      return 0;
    }
  };
  const base = ticks();
  return () => ticks() - base;
}

/** A CPU profile of this process from now until `stop(file)`, which writes it. */
async function startProfile(): Promise<{ stop(file: string): Promise<void> }> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  return {
    async stop(file) {
      const { profile } = await session.post("Profiler.stop");
      session.disconnect();
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(profile));
    },
  };
}

const profileDir = arg("profile");
const only = (arg("only") ?? CASES.map((c) => c.name).join(",")).split(",");
const cases = CASES.filter((c) => only.includes(c.name));

// Large transactions decoded in memory, not spilled (the test clusters' 64kB makes the server the bottleneck).
const cluster = await startCluster(major, { settings: { logical_decoding_work_mem: "'256MB'" } });
const config = { host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database };
const admin = new pg.Client(config);
await admin.connect();
interface Result {
  name: string;
  changes: number;
  bytes: number;
  seconds: number;
  cpu: number;
  note?: string;
}
const results: Result[] = [];
try {
  await admin.query("CREATE TABLE bench_t (id bigint PRIMARY KEY, v text, n int, at timestamptz)");
  await admin.query("CREATE PUBLICATION bench_pub FOR TABLE bench_t");
  for (const c of cases) await admin.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [`bench_${c.name}`]);
  const t0 = performance.now();
  // One statement, a COMMIT per transaction inside it: a backlog of small transactions without a round trip each.
  await admin.query(`DO $$ BEGIN
    FOR t IN 0..${Math.ceil(rows / perTxn) - 1} LOOP
      INSERT INTO bench_t SELECT g, md5(g::text) || ' row ' || g, g % 1000, now() FROM generate_series(t * ${perTxn} + 1, LEAST(${rows}, (t + 1) * ${perTxn})) g;
      COMMIT;
    END LOOP; END $$`);
  const end = parseLsn((await admin.query("SELECT pg_current_wal_insert_lsn()::text AS l")).rows[0].l as string);
  console.log(`backlog: ${rows} inserts in ${Math.ceil(rows / perTxn)} transactions, PostgreSQL ${cluster.version}, made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const types = typesFromCatalog((await admin.query<CatalogTypeRow>(TYPES_QUERY)).rows);
  const lastCommit = rows;

  for (const c of cases) {
    const started = await c.start();
    try {
      const sink = await started.open();
      const values = jsonl.values(types);
      const decoder = await createDecoder({ values });
      const stream = await replicate({ connection: config, slot: `bench_${c.name}`, publications: ["bench_pub"], ack: "manual", decoder, reconnect: false });
      let changes = 0;
      const counting: Sink = {
        name: sink.name,
        transactionEnds: sink.transactionEnds,
        write: (r) => ((changes += r.length), sink.write(r)),
        delivered: sink.delivered?.bind(sink),
        close: () => sink.close(),
      };
      const pipeline = new Pipeline({
        source: streamSource(stream), format: jsonl.create({ decoder }, {}), replayDecoder: await createDecoder({ values }), sink: counting,
        onAck: (lsn) => {
          if (lsn >= end) pipeline.stop();
        },
      });
      // The backlog's last commit may not be the last WAL record: stop once all of it was confirmed and nothing more comes.
      const idle = setInterval(() => {
        if (pipeline.stats.durable >= lastCommit && !stream.ready) pipeline.stop();
      }, 100);
      const profiler = profileDir === undefined ? undefined : await startProfile();
      const cpu0 = process.cpuUsage();
      const w0 = performance.now();
      const result = await pipeline.run();
      const seconds = (performance.now() - w0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      if (profiler !== undefined) await profiler.stop(path.join(profileDir!, `${c.name}.cpuprofile`));
      clearInterval(idle);
      await stream.stop();
      results.push({ name: c.name, changes: result.stats.durable, bytes: result.stats.bytes, seconds, cpu: (cpu.user + cpu.system) / 1e6, note: started.note?.() });
      if (result.stats.durable !== rows) console.log(`${c.name}: ${result.stats.durable} changes confirmed, not ${rows}`);
    } finally {
      await started.stop();
    }
  }
} finally {
  await admin.end();
  await cluster.stop();
}

const bound = results.find((r) => r.name === "stdout");
console.log("\nsink      changes/s   MB/s   client CPU s/GB   vs stdout");
const rowsOut: string[][] = [];
for (const r of results) {
  const rate = r.changes / r.seconds;
  const ratio = bound === undefined ? "" : `${((rate / (bound.changes / bound.seconds)) * 100).toFixed(0)}%`;
  console.log(
    `${r.name.padEnd(8)}  ${Math.round(rate).toString().padStart(9)}  ${(r.bytes / 1e6 / r.seconds).toFixed(1).padStart(5)}  ${(r.cpu / (r.bytes / 1e9)).toFixed(1).padStart(16)}   ${ratio.padStart(8)}` +
      `   (${r.changes} changes, ${(r.bytes / 1e6).toFixed(0)} MB in ${r.seconds.toFixed(1)} s, CPU ${r.cpu.toFixed(1)} s${r.note ? `; ${r.note}` : ""})`,
  );
  rowsOut.push([r.name, Math.round(rate).toLocaleString("en"), (r.bytes / 1e6 / r.seconds).toFixed(1), (r.cpu / (r.bytes / 1e9)).toFixed(1), ratio || "—", r.note ?? ""]);
}
if (process.argv.includes("--write")) {
  writeTable("sinks", {
    title: "Sinks",
    about: [
      `A backlog of ${rows.toLocaleString("en")} inserts (a bigint key, a text, an int and a timestamptz) in transactions of ${perTxn.toLocaleString("en")}, from a real`,
      `walsender (PostgreSQL ${major}) through the same pipeline (JSON Lines) into each sink, each case from a slot of its own; a case's`,
      "time runs from the stream's start to the acknowledgement of the backlog's last transaction, what the sink confirmed.",
      "`stdout` writes to /dev/null (`tail > /dev/null`): the bound a sink is measured against. CPU is this process's (the broker's is its own).",
    ],
    command: `node build/bench/bench/sinks.bench.js --rows ${rows} --per-txn ${perTxn} --major ${major} --write`,
    columns: ["sink", "changes/s", "MB/s", "client CPU s/GB", "vs stdout", "note"],
    rows: rowsOut,
    targets: [],
  });
}
