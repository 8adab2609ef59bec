/**
 * Transactions of any size in bounded memory (issue 26), against real
 * PostgreSQL 15 and 18: one transaction far larger than the client's
 * bounds, with protocol 1 (not streamed: the server sends it at its
 * commit) and protocol 4 (streamed while in progress: the client holds its
 * blocks until the StreamCommit), through `transactions()`, `tail` to
 * stdout and `tail --sink file:`. Each client runs in a process of its own,
 * so that its peak RSS (VmHWM) is the client's alone; each id must arrive
 * exactly once.
 *
 * The default suite runs it scaled down (a 64 MB transaction, bounds of
 * 1 MiB) so that it takes seconds; `npm run test:large` (PGOUTPUT_LARGE=1)
 * runs it at 2 GB with the default bounds, which takes many minutes.
 * What is asserted either way: every change once, the acknowledgement only
 * after the final fragment, peak RSS under 256 MiB, and memory that does not
 * follow the transaction's size — for `transactions()` the live heap (after
 * a full collection at every fragment), for `tail` a control run with a
 * bound larger than the transaction, which shows the test can tell.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { replicate, type Transaction } from "../bindings/pg/index.ts";
import { DEFAULT_MAX_TRANSACTION_BYTES } from "../bindings/pg/transactions.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BUILD = `large-transaction${process.env.PGOUTPUT_LARGE === "1" ? "-2gb" : ""}`;
const LIB = path.join(ROOT, "build", BUILD);
const MAIN = path.join(LIB, "cli", "main.js");
const CONSUMER = path.join(ROOT, "test", "support", "large-consumer.mjs");

const LARGE = process.env.PGOUTPUT_LARGE === "1";
const MiB = 1 << 20;
/** Bytes of text per row: inline (under the TOAST threshold), so uncompressed: the WAL and the wire carry them all. */
const ROW_TEXT = 1900;
const TRANSACTION_BYTES = LARGE ? 2.1e9 : 64e6;
const ROWS = Math.ceil(TRANSACTION_BYTES / ROW_TEXT);
/** The client's bounds: the defaults at 2 GB, scaled down with the transaction. */
const MAX_TRANSACTION_BYTES = LARGE ? undefined : 1 * MiB;
const HELD_MIB = LARGE ? undefined : 1;
const RSS_LIMIT = 256 * MiB;
/** The live heap's growth while the transaction goes through: a few fragments and buffers, far below its size. */
const LIVE_LIMIT = LARGE ? 160 * MiB : 24 * MiB;
const TIMEOUT = LARGE ? 3_600_000 : 120_000;

/** PGOUTPUT_LARGE_MAJORS=18 (say) runs one version only. */
const MAJORS = (process.env.PGOUTPUT_LARGE_MAJORS ?? "15,18").split(",").map(Number) as PgMajor[];
/** Not streamed (protocol 1), streamed: protocol 4 (streaming parallel) where the server has it (16+), else 2 (streaming on). */
const PROTOCOLS = [1, 4] as const;
const wire = (major: PgMajor, proto: 1 | 4): { proto: number; streaming: "off" | "on" | "parallel" } =>
  proto === 1 ? { proto: 1, streaming: "off" } : major >= 16 ? { proto: 4, streaming: "parallel" } : { proto: 2, streaming: "on" };
const CONSUMERS = ["transactions", "stdout", "file", "control"] as const;
const clusters = new Map<PgMajor, Cluster>();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "pgoutputwasm-largetx-"));
const slotName = (consumer: string, proto: number) => `large_${consumer}_p${proto}`;

beforeAll(async () => {
  const compiled = buildCli(BUILD);
  const started = await Promise.allSettled(MAJORS.map((m) => startCluster(m, { settings: { logical_decoding_work_mem: "4MB", max_wal_size: "4GB" } })));
  for (const s of started) if (s.status === "fulfilled") clusters.set(s.value.major, s.value);
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  await compiled;
  await Promise.all([...clusters.values()].map(async (c) => {
    await c.query(`CREATE TABLE big (id int PRIMARY KEY, v text); CREATE PUBLICATION p_big FOR TABLE big`);
    // Every slot before the transaction: each client reads it from its own.
    for (const proto of PROTOCOLS) {
      for (const consumer of CONSUMERS) {
        if (consumer === "control" && (proto === 1 || LARGE)) continue;
        await c.query(`SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, [slotName(consumer, proto)]);
      }
    }
    const t0 = performance.now();
    await c.query(`INSERT INTO big SELECT g, lpad(g::text, ${ROW_TEXT}, 'x') FROM generate_series(1, ${ROWS}) g`);
    await c.query(`INSERT INTO big VALUES (${ROWS + 1}, 'marker')`);
    const [{ bytes }] = await c.query<{ bytes: string }>(`SELECT pg_total_relation_size('big')::text AS bytes`);
    console.info(`PostgreSQL ${c.major}: one transaction of ${ROWS} rows (${(Number(bytes) / MiB).toFixed(0)} MiB on disk) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }));
}, LARGE ? 3_600_000 : 180_000);

afterAll(async () => {
  for (const c of clusters.values()) await c.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
  await removeCli(BUILD);
});

/** A child's peak RSS, polled from /proc (VmHWM only grows: the last reading before the exit is the peak, give or take the last interval). */
function watchPeak(pid: number): () => number {
  let peak = 0;
  const read = () => {
    try {
      const m = /^VmHWM:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
      if (m) peak = Math.max(peak, Number(m[1]) * 1024);
    } catch {
      /* ended */
    }
  };
  const timer = setInterval(read, 25);
  return () => {
    clearInterval(timer);
    return peak;
  };
}

/** Exactly-once bookkeeping over ids 1..ROWS + 1. */
class Ids {
  readonly #seen = new Uint8Array(ROWS + 2);
  duplicates = 0;
  count = 0;
  add(id: number): void {
    if (this.#seen[id]) this.duplicates++;
    this.#seen[id] = 1;
    this.count++;
  }
  get missing(): number {
    let n = 0;
    for (let id = 1; id <= ROWS + 1; id++) if (!this.#seen[id]) n++;
    return n;
  }
}

/** The id in a JSON line of `tail`'s (the first column's value: `"name":"id","type":"integer","value":N`). */
const ID = /"name":"id","type":"integer","value":(\d+)/;

function addLines(ids: Ids, lines: AsyncIterable<string>): Promise<void> {
  return (async () => {
    for await (const line of lines) {
      const m = ID.exec(line);
      if (m) ids.add(Number(m[1]));
    }
  })();
}

interface TailRun {
  peak: number;
  code: number | null;
  stderr: string;
  ids: Ids;
}

async function tail(c: Cluster, proto: 1 | 4, consumer: "stdout" | "file" | "control"): Promise<TailRun> {
  const file = path.join(tmp, `${c.major}-${consumer}-p${proto}.jsonl`);
  const args = [
    MAIN, "tail", "-c", c.connectionString, "--publication", "p_big", "--slot", slotName(consumer, proto), "--proto", String(wire(c.major, proto).proto),
    "--streaming", wire(c.major, proto).streaming, "--max-messages", String(ROWS + 1),
    ...(consumer === "control" ? ["--held-memory", String(Math.ceil((2 * TRANSACTION_BYTES) / MiB))] : HELD_MIB === undefined ? [] : ["--held-memory", String(HELD_MIB)]),
    ...(consumer === "file" ? ["--sink", `file:${file}`] : []),
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_OPTIONS: "" } });
  const peak = watchPeak(child.pid!);
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const ids = new Ids();
  const reading = addLines(ids, createInterface({ input: child.stdout, crlfDelay: Infinity }));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  const run = { peak: peak(), code, stderr, ids };
  await reading;
  if (consumer === "file") {
    await addLines(ids, createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity }));
    fs.rmSync(file, { force: true });
  }
  return run;
}

interface ConsumerResult {
  changes: number;
  duplicates: number;
  missing: number;
  fragments: number;
  maxFragmentMessages: number;
  streamed: boolean;
  ackedBeforeFinal: boolean;
  ackedAfter: boolean;
  rss0: number;
  hwm: number;
  liveGrowth: number;
  seconds: number;
}

async function consume(c: Cluster, proto: 1 | 4): Promise<ConsumerResult> {
  const config = JSON.stringify({
    lib: LIB, connection: { host: c.host, port: c.port, user: c.user, database: c.database }, slot: slotName("transactions", proto),
    publication: "p_big", protoVersion: wire(c.major, proto).proto, streaming: proto === 1 ? undefined : wire(c.major, proto).streaming, maxTransactionBytes: MAX_TRANSACTION_BYTES, rows: ROWS,
  });
  const child = spawn(process.execPath, ["--expose-gc", CONSUMER, config], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_OPTIONS: "" } });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  if (code !== 0) throw new Error(`the consumer exited with ${String(code)}: ${err}`);
  return JSON.parse(out.trim().split("\n").pop()!) as ConsumerResult;
}

const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;

for (const major of MAJORS) {
  describe(`PostgreSQL ${major}: a ${(TRANSACTION_BYTES / 1e6).toFixed(0)} MB transaction`, () => {
    for (const proto of PROTOCOLS) {
      const how = proto === 1 ? "protocol 1, not streamed" : `protocol ${wire(major, proto).proto}, streamed`;

      it(`transactions(), ${how}: in fragments, each change once, acknowledged after the final one, memory bounded`, async () => {
        const r = await consume(clusters.get(major)!, proto);
        console.info(`PostgreSQL ${major} transactions() ${how}: ${r.changes} changes in ${r.fragments} fragments (at most ${r.maxFragmentMessages} messages) in ${r.seconds.toFixed(1)} s; ` +
          `RSS ${mib(r.rss0)} at start, peak ${mib(r.hwm)}; live heap growth ${mib(r.liveGrowth)}`);
        expect({ changes: r.changes, duplicates: r.duplicates, missing: r.missing }).toEqual({ changes: ROWS + 1, duplicates: 0, missing: 0 });
        expect(r.streamed).toBe(proto === 4);
        expect(r.fragments).toBeGreaterThan(TRANSACTION_BYTES / (MAX_TRANSACTION_BYTES ?? DEFAULT_MAX_TRANSACTION_BYTES) / 2);
        expect(r.ackedBeforeFinal).toBe(true);
        expect(r.ackedAfter).toBe(true);
        expect(r.liveGrowth).toBeLessThan(LIVE_LIMIT);
        expect(r.hwm).toBeLessThan(RSS_LIMIT);
      }, TIMEOUT);

      it(`tail to stdout and to a file sink, ${how}: each change once, RSS bounded`, async () => {
        const c = clusters.get(major)!;
        const runs = { stdout: await tail(c, proto, "stdout"), file: await tail(c, proto, "file") };
        for (const [name, run] of Object.entries(runs)) {
          console.info(`PostgreSQL ${major} tail ${name} ${how}: ${run.ids.count} lines, peak RSS ${mib(run.peak)}`);
          expect(run.code, run.stderr).toBe(0);
          expect({ count: run.ids.count, duplicates: run.ids.duplicates, missing: run.ids.missing }).toEqual({ count: ROWS + 1, duplicates: 0, missing: 0 });
          expect(run.peak).toBeLessThan(RSS_LIMIT);
        }
        if (proto === 4 && !LARGE) {
          // The same with a bound above the transaction's size: it is held in memory, and RSS shows it. (At 32 MB the
          // held transaction was within the peaks' run-to-run spread: 11-27 MiB above a bounded run, against 15 asked.)
          const control = await tail(c, proto, "control");
          console.info(`PostgreSQL ${major} tail control (held in memory) ${how}: peak RSS ${mib(control.peak)}`);
          expect(control.ids.count).toBe(ROWS + 1);
          // Against the file run: a stdout run's peak also holds what waits for the test's pipe reader (the
          // pipeline's in-flight window), which a busy machine slows: CI saw it 33 MiB above the file run's once.
          expect(runs.file.peak + TRANSACTION_BYTES / 2).toBeLessThan(control.peak);
          expect(runs.stdout.peak).toBeLessThan(control.peak);
        }
      }, TIMEOUT);
    }

    it("transactions(), protocol 1: a reconnect between fragments delivers the transaction again whole, from fragment 0, marked redelivered; acknowledged after its final fragment only", async () => {
      const c = clusters.get(major)!;
      const rows = 8000; // 15 MB: more than the socket's and the stream's buffers hold, so the server is still sending when the walsender goes
      await c.query(`CREATE TABLE re (id int PRIMARY KEY, v text); CREATE PUBLICATION p_re FOR TABLE re`);
      await c.query(`SELECT pg_create_logical_replication_slot('re', 'pgoutput')`);
      await c.query(`INSERT INTO re SELECT g, lpad(g::text, ${ROW_TEXT}, 'x') FROM generate_series(1, ${rows}) g`);
      const stream = await replicate({
        connection: { host: c.host, port: c.port, user: c.user, database: c.database }, slot: "re", publications: "p_re",
        highWaterMark: 256 << 10, lowWaterMark: 64 << 10, reconnect: { initialDelayMs: 50, maxDelayMs: 400 },
      });
      const seen: { fragment: number; final: boolean; redelivered: boolean; generation: number; ids: number[]; ackedBefore: bigint }[] = [];
      try {
        for await (const item of stream.transactions({ maxTransactionBytes: 256 << 10 })) {
          if (item.kind !== "commit") continue;
          const t = item as Transaction;
          const ids = t.messages.filter((m) => m.kind === "Insert").map((m) => Number((m.newTuple as { text: string }[])[0]!.text));
          seen.push({ fragment: t.fragment, final: t.final, redelivered: t.redelivered, generation: stream.generation, ids, ackedBefore: stream.lastAckedLsn });
          if (seen.length === 3) await c.query(`SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 're'`);
          if (t.final) {
            expect(stream.lastAckedLsn).toBeLessThan(t.endLsn);
            break;
          }
        }
      } finally {
        await stream.stop();
      }
      const again = seen.findIndex((s) => s.generation > 0);
      expect(again).toBeGreaterThanOrEqual(3);
      const [first, second] = [seen.slice(0, again), seen.slice(again)];
      expect(first.map((s) => s.fragment)).toEqual(first.map((_, i) => i));
      expect(first.every((s) => !s.final && !s.redelivered)).toBe(true);
      // Again whole: from fragment 0, every fragment marked, every id once.
      expect(second.map((s) => s.fragment)).toEqual(second.map((_, i) => i));
      expect(second.every((s) => s.redelivered)).toBe(true);
      expect(second.flatMap((s) => s.ids)).toEqual(Array.from({ length: rows }, (_, i) => i + 1));
      expect(second.at(-1)!.final).toBe(true);
    }, TIMEOUT);
  });
}
