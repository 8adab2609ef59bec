/**
 * End to end: `replicate()` draining a backlog from a real walsender, no
 * values touched (each message's kind read, as a consumer must at least do).
 *
 *   node build/bench/bench/replicate.bench.js [--rows N] [--rounds R] [--warmup W] [--major 15|18] [--values] [--write]
 *     [--only wasm|wasm-in-place|baseline|pg-logical-replication]
 *
 * (`--only` runs one competitor, for a profile: node --cpu-prof ...). Each
 * competitor first runs `--warmup` unmeasured rounds (default 1), so that no
 * figure includes compiling the code: a replication client runs for hours.
 *
 * A throwaway PostgreSQL (15 by default) gets one slot per round, then a
 * backlog of N rows (~260 bytes of pgoutput each, in transactions of 1,000),
 * so every round decodes the same WAL. Each round opens a stream on its own
 * slot and iterates until the last Commit. Reported per round and as
 * medians: wall time, consumer CPU (process.cpuUsage, user + system),
 * socket MB received, MB/s, rows/s and CPU seconds per GB of messages.
 * Rounds rotate wasm, wasm-in-place (`inPlaceReads`: socket reads land in
 * the decoder's memory; wasm copies each into a queue, then into the
 * decoder), baseline and
 * pg-logical-replication's service with its own PgoutputPlugin (which parses
 * every value with pg-types: it has no lazy form), so the rows/s ratio is
 * what a user switching libraries sees. `--values` has ours touch every
 * value too (`newTuple.values()`), as the plugin does.
 */
import { replicate } from "../bindings/pg/index.ts";
import { LogicalReplicationService, PgoutputPlugin } from "pg-logical-replication";
import { clientConfig, withClient } from "../devkit/cluster/client.ts";
import { startCluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { numberArg } from "./args.ts";
import { writeTable } from "./report.ts";

const rows = numberArg("rows", 300_000);
const rounds = numberArg("rounds", 6);
const warmup = numberArg("warmup", 1);
const major = numberArg("major", 15) as PgMajor;
const values = process.argv.includes("--values");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const cluster = await startCluster(major);
try {
  const all = ["wasm", "wasm-in-place", "baseline", "pg-logical-replication"] as const;
  const only = process.argv.indexOf("--only");
  const competitors = only >= 0 ? all.filter((c) => c === process.argv[only + 1]) : all;
  if (competitors.length === 0) throw new Error(`--only takes one of ${all.join(", ")}`);
  const warm = warmup * competitors.length;
  await withClient(clientConfig(cluster), async (client) => {
    await client.query("CREATE TABLE e2e (id int PRIMARY KEY, a int, b text, c timestamptz, d numeric)");
    await client.query("CREATE PUBLICATION e2e_pub FOR TABLE e2e");
    for (let r = 0; r < warm + rounds; r++) await client.query(`SELECT pg_create_logical_replication_slot('e2e_${r}', 'pgoutput')`);
    for (let from = 1; from <= rows; from += 1000) {
      await client.query(
        `INSERT INTO e2e SELECT g, g * 7, repeat(md5(g::text), 6), now(), g * 1.25 FROM generate_series(${from}, ${Math.min(rows, from + 999)}) g`,
      );
    }
  });

  const results: Record<string, { wall: number[]; cpu: number[]; mb: number[] }> = {};
  for (let r = 0; r < warm + rounds; r++) {
    const who = competitors[r % competitors.length]!;
    const slot = `e2e_${r}`;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let inserts = 0;
    let mb: number;
    let batches = 0;
    if (who === "pg-logical-replication") {
      const service = new LogicalReplicationService({ connectionString: cluster.connectionString });
      await new Promise<void>((resolve, reject) => {
        service.on("data", (_lsn: string, msg: { tag: string }) => {
          if (msg.tag === "insert") inserts++;
          else if (msg.tag === "commit" && inserts >= rows) resolve();
        });
        service.on("error", reject);
        service.subscribe(new PgoutputPlugin({ protoVersion: 1, publicationNames: ["e2e_pub"] }), slot).catch(reject);
      });
      await service.stop();
      mb = NaN; // it does not count bytes; the MB/s figure comes from our rounds
    } else {
      const s = await replicate({
        connection: cluster.connectionString,
        slot, publications: "e2e_pub", decoder: who === "wasm-in-place" ? "wasm" : who, inPlaceReads: who === "wasm-in-place",
      });
      for await (const m of s) {
        if (m.kind === "Insert") {
          inserts++;
          if (values) m.newTuple.values();
        } else if (m.kind === "Commit" && inserts >= rows) break;
      }
      mb = s.stats.bytes / 1e6;
      batches = s.stats.batches;
      await s.stop();
    }
    const wall = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(cpu0);
    if (r < warm) continue;
    const cpu = (c.user + c.system) / 1e6;
    (results[who] ??= { wall: [], cpu: [], mb: [] }).wall.push(wall);
    results[who].cpu.push(cpu);
    results[who].mb.push(mb);
    const perGb = Number.isNaN(mb) ? "" : ` = ${((cpu / mb) * 1000).toFixed(1)} CPU s/GB`;
    console.log(`round ${r} ${who}: ${inserts} rows in ${wall.toFixed(2)} s (${Math.round(inserts / wall)} rows/s), consumer CPU ${cpu.toFixed(2)} s${perGb}`);
    if (process.env.CPU_SPLIT) console.log(`  user ${(c.user / 1e6).toFixed(2)} s, system ${(c.system / 1e6).toFixed(2)} s${batches ? `, ${batches} decode calls` : ""}`);
  }
  const ours = median(results.wasm?.mb ?? [NaN]);
  const plrRows = rows / median(results["pg-logical-replication"]?.wall ?? [NaN]);
  const table: string[][] = [];
  const perGbOf: Record<string, number> = {};
  for (const [who, r] of Object.entries(results)) {
    const wall = median(r.wall);
    const cpu = median(r.cpu);
    const mb = Number.isNaN(median(r.mb)) ? ours : median(r.mb);
    console.log(
      `${who}: median ${(mb / wall).toFixed(1)} MB/s, ${Math.round(rows / wall)} rows/s (${(rows / wall / plrRows).toFixed(2)}x pg-logical-replication), ` +
        `consumer CPU ${((cpu / mb) * 1000).toFixed(1)} s/GB (${((100 * cpu) / wall).toFixed(0)}% of a core); wall ${Math.min(...r.wall).toFixed(2)}-${Math.max(...r.wall).toFixed(2)} s`,
    );
    perGbOf[who] = (cpu / mb) * 1000;
    table.push([who, (mb / wall).toFixed(1), Math.round(rows / wall).toLocaleString("en"), `${((cpu / mb) * 1000).toFixed(1)} s`, `${((100 * cpu) / wall).toFixed(0)}%`]);
  }
  if (process.argv.includes("--write") && perGbOf.wasm !== undefined) {
    writeTable("end-to-end", {
      title: "End to end",
      about: [
        `\`replicate()\` draining a backlog of ${rows.toLocaleString("en")} rows from a real walsender (PostgreSQL ${major}, throwaway cluster, a slot per round;`,
        `${rounds} rounds rotate the competitors after ${warmup} warm-up each, medians; this machine's 2 cores run the server too, so the stream is`,
        `server-bound)${values ? ", every value of every row touched (`newTuple.values()`, as pg-logical-replication's plugin does)" : ", each message's kind read"}.`,
        "`wasm`: the default reader (socket reads copied to a queue, then into the decoder); `wasm-in-place`: `inPlaceReads: true`",
        "(reads land in the decoder's memory); pg-logical-replication 2.5.0: its service and plugin.",
      ],
      command: `node build/bench/bench/replicate.bench.js --rows ${rows} --rounds ${rounds} --major ${major}${values ? " --values" : ""} --write`,
      columns: ["competitor", "MB/s", "rows/s", "consumer CPU per GB", "of a core"],
      rows: table,
      targets: values ? [{ name: "streaming client CPU per GB, every value touched (wasm)", target: 4, measured: perGbOf.wasm, unit: "s/GB", atMost: true, met: perGbOf.wasm <= 4 }] : [],
    });
  }
  const inPlace = results["wasm-in-place"];
  const copied = results.wasm;
  if (inPlace !== undefined && copied !== undefined) {
    // Paired: the rounds of the two are adjacent in the rotation.
    const perGb = (r: { cpu: number[]; mb: number[] }, i: number) => r.cpu[i]! / r.mb[i]!;
    const ratios = inPlace.cpu.map((_, i) => perGb(inPlace, i) / perGb(copied, i)).filter((x) => Number.isFinite(x));
    console.log(
      `in-place reads: CPU per GB ${median(ratios).toFixed(2)}x the copying reader's (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}, ${ratios.length} pairs)`,
    );
  }
} finally {
  await cluster.stop();
}
