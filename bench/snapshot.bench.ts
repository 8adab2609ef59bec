/**
 * The initial snapshot's throughput: `replicate({ snapshot })` copying one
 * table, against a plain `pg` `SELECT *` of the same rows with pg-types'
 * default parsers.
 *
 *   node build/bench/bench/snapshot.bench.js [--rows N] [--rounds R] [--major 15|18] [--only NAME]
 *
 * A throwaway PostgreSQL (18 by default) gets a table of N rows (int,
 * int8, text of 96 bytes, timestamptz, numeric, bool, int4[]). Every round
 * runs each competitor once, in a rotated order: snapshot binary COPY
 * (wasm decoder, baseline decoder), snapshot text COPY (wasm), each with
 * `parallel: 1` on a temporary slot, binary wasm with `parallel: 2` (ctid
 * ranges of 512 pages on two connections), and `pg` SELECT. Every value of every
 * row is read (`tuple.value(i)`; pg parses them all anyway), so the figures
 * compare what a consumer gets. Reported: medians and ranges of rows/s and
 * MB/s (COPY bytes received; for pg the binary COPY size of the table, so
 * the MB/s figures are comparable), and the per-round ratio of each
 * competitor's time to pg's in that round.
 */
import pg from "pg";
import { replicate } from "../bindings/pg/index.ts";
import { startCluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { numberArg } from "./args.ts";

const rows = numberArg("rows", 200_000);
const rounds = numberArg("rounds", 5);
const major = numberArg("major", 18) as PgMajor;
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)]!;
const range = (xs: number[], digits = 2) => `${sorted(xs)[0]!.toFixed(digits)}-${sorted(xs)[xs.length - 1]!.toFixed(digits)}`;

type Who = "snapshot binary wasm" | "snapshot binary wasm parallel 2" | "snapshot binary baseline" | "snapshot text wasm" | "pg SELECT *";
const all: Who[] = ["snapshot binary wasm", "snapshot binary wasm parallel 2", "snapshot binary baseline", "snapshot text wasm", "pg SELECT *"];
// --only "snapshot binary wasm": one competitor (for profiling with --cpu-prof).
const only = process.argv.indexOf("--only");
const competitors: Who[] = only >= 0 ? all.filter((w) => w === process.argv[only + 1]) : all;

const cluster = await startCluster(major);
try {
  const config = { host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database };
  const client = new pg.Client(config);
  await client.connect();
  await client.query("CREATE TABLE snap (id int PRIMARY KEY, a int8, b text, c timestamptz, d numeric, e bool, f int4[])");
  await client.query(`INSERT INTO snap SELECT g, g * 7, repeat(md5(g::text), 3), '2024-01-01'::timestamptz + g * interval '1 s', g * 1.25, g % 2 = 0, ARRAY[g, g + 1]
    FROM generate_series(1, ${rows}) g`);
  await client.query("VACUUM ANALYZE snap");
  await client.query("CREATE PUBLICATION snap_pub FOR TABLE snap");
  await client.end();

  const results = new Map<Who, { seconds: number[]; mb: number[] }>(competitors.map((w) => [w, { seconds: [], mb: [] }]));
  const ratios = new Map<Who, number[]>(competitors.map((w) => [w, []]));
  let slot = 0;
  let copyBinaryMb = 0;

  async function runSnapshot(format: "binary" | "text", decoder: "wasm" | "baseline", parallel: number): Promise<{ seconds: number; mb: number; count: number }> {
    const t0 = performance.now();
    const run = await replicate({
      connection: config, slot: { name: `bench_${slot++}`, temporary: true }, publications: "snap_pub", decoder,
      // parallel 2: the table in ctid ranges of 512 pages over two connections.
      snapshot: { format, parallel, chunkPages: 512 },
    });
    let count = 0;
    let sink = 0;
    for await (const item of run) {
      if (item.kind === "SnapshotComplete") break;
      if (item.kind !== "SnapshotRow") continue;
      const t = item.tuple;
      for (let i = 0; i < t.length; i++) if (t.value(i) !== null) sink++;
      count++;
    }
    const seconds = (performance.now() - t0) / 1000;
    const mb = run.progress.bytes / 1e6;
    await run.stop();
    if (sink === 0) throw new Error("no values read");
    return { seconds, mb, count };
  }

  async function runSelect(): Promise<{ seconds: number; count: number }> {
    const t0 = performance.now();
    const c = new pg.Client(config);
    await c.connect();
    const res = await c.query("SELECT * FROM snap");
    await c.end();
    return { seconds: (performance.now() - t0) / 1000, count: res.rows.length };
  }

  for (let r = 0; r < rounds; r++) {
    const order = competitors.map((_, i) => competitors[(i + r) % competitors.length]!);
    const times = new Map<Who, number>();
    for (const who of order) {
      let seconds: number;
      let mb: number;
      let count: number;
      if (who === "pg SELECT *") {
        ({ seconds, count } = await runSelect());
        mb = copyBinaryMb;
      } else {
        const format = who.includes("text") ? "text" : "binary";
        ({ seconds, mb, count } = await runSnapshot(format, who.endsWith("baseline") ? "baseline" : "wasm", who.endsWith("parallel 2") ? 2 : 1));
        if (format === "binary") copyBinaryMb = mb;
      }
      if (count !== rows) throw new Error(`${who}: ${count} rows, expected ${rows}`);
      results.get(who)!.seconds.push(seconds);
      results.get(who)!.mb.push(mb);
      times.set(who, seconds);
    }
    for (const who of competitors) ratios.get(who)!.push(times.get(who)! / (times.get("pg SELECT *") ?? NaN));
    process.stderr.write(`round ${r + 1}/${rounds}: ${order.map((w) => `${w} ${times.get(w)!.toFixed(3)} s`).join(", ")}\n`);
  }

  console.log(`\n${rows} rows, PostgreSQL ${major}, ${rounds} paired rounds (order rotated); medians [ranges]`);
  console.log("| competitor | rows/s | MB/s | time / pg SELECT time |");
  console.log("|---|---|---|---|");
  for (const who of competitors) {
    const { seconds, mb } = results.get(who)!;
    const rps = seconds.map((s) => rows / s / 1000);
    const mbps = seconds.map((s, i) => (mb[i] || copyBinaryMb) / s);
    console.log(`| ${who} | ${median(rps).toFixed(0)}k [${range(rps, 0)}k] | ${median(mbps).toFixed(1)} [${range(mbps, 1)}] | ${median(ratios.get(who)!).toFixed(2)} [${range(ratios.get(who)!)}] |`);
  }
  console.log(`(MB: COPY bytes received; pg SELECT's MB/s uses the binary COPY size, ${copyBinaryMb.toFixed(1)} MB)`);
} finally {
  await cluster.stop();
}
