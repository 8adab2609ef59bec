/**
 * What durability costs a capture: a backlog of many small transactions
 * streamed from a real walsender through the pipeline (stream → capture
 * format → a file), acknowledged as the sink makes it durable, with the
 * file sink's group commit (sinks/file.ts), with one write and fdatasync
 * per batch (what it did before), and without any flush (the bound).
 *
 *   node build/bench/bench/capture.bench.js [--txns N] [--rows R] [--rounds K] [--major 15|18] [--sink-only]
 *
 * A throwaway PostgreSQL gets one slot per round, then N transactions of R
 * rows each (~150 bytes of pgoutput per row), committed one by one, so every
 * round reads the same WAL into a new file in the temp directory. Then the
 * same capture is read back from its file (captureSource, a source that is
 * never the bottleneck) through each sink again, which shows the sink's own
 * cost. Reported per round: wall time, MB/s of capture written,
 * transactions/s, the fdatasync calls (counted on the FileHandle), and the
 * batches the pipeline handed over.
 */
import { createReadStream, rmSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { capture } from "../bindings/formats/capture.ts";
import { replicate } from "../bindings/pg/index.ts";
import { Pipeline } from "../bindings/pipeline/run.ts";
import type { Records } from "../bindings/pipeline/records.ts";
import type { Sink } from "../bindings/pipeline/sink.ts";
import { captureSource, streamSource } from "../bindings/pipeline/sources.ts";
import { createDecoder } from "../bindings/create-decoder.ts";
import { fileSink } from "../bindings/sinks/file.ts";
import { clientConfig, withClient } from "../devkit/cluster/client.ts";
import { startCluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { numberArg } from "./args.ts";

const txns = numberArg("txns", 50_000);
const rowsPerTxn = numberArg("rows", 1);
const rounds = numberArg("rounds", 2);
const major = numberArg("major", 15) as PgMajor;

// Count every fdatasync, whoever calls it.
let syncs = 0;
{
  const probe = await open(join(tmpdir(), `pgoutputwasm-bench-probe-${process.pid}`), "w");
  const proto = Object.getPrototypeOf(probe) as FileHandle;
  const datasync = proto.datasync;
  proto.datasync = function (this: FileHandle) {
    syncs++;
    return datasync.call(this);
  };
  await probe.close();
  rmSync(join(tmpdir(), `pgoutputwasm-bench-probe-${process.pid}`));
}

/** The file sink as it was before group commit: each batch one write and one fdatasync, in order. */
async function perBatchSink(path: string): Promise<Sink> {
  const fh = await open(path, "w");
  let chain: Promise<void> = Promise.resolve();
  return {
    name: "file",
    write(records: Records): Promise<void> {
      const bytes = records.bytes.buf.subarray(0, records.bytes.len);
      chain = chain.then(async () => {
        await fh.write(bytes, 0, bytes.length);
        await fh.datasync();
      });
      return chain;
    },
    async close() {
      await chain;
      await fh.close();
    },
  };
}

const VARIANTS: Record<string, (path: string) => Promise<Sink>> = {
  "group commit": (path) => fileSink(path, { truncate: true }),
  "fdatasync per batch": perBatchSink,
  "no flush": (path) => fileSink(path, { truncate: true, fsync: false }),
};

/**
 * Each sink alone, fed as the pipeline feeds it: 512 batches of 64 KiB
 * (its batchBytes), at most 16 MiB in flight (its window): the disk's
 * flushes, with next to no CPU.
 */
async function sinkAlone(): Promise<void> {
  const { Records } = await import("../bindings/pipeline/records.ts");
  for (const variant of Object.keys(VARIANTS)) {
    const file = join(tmpdir(), `pgoutputwasm-bench-sink-${process.pid}.bin`);
    const sink = await VARIANTS[variant]!(file);
    const batch = new Records();
    batch.bytes.ensure(64 << 10);
    batch.bytes.len = 64 << 10;
    batch.end("message");
    const before = syncs;
    const started = performance.now();
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < 512; i++) {
      inFlight.push(sink.write(batch));
      if (inFlight.length >= 256) await inFlight.shift();
    }
    await Promise.all(inFlight);
    await sink.close();
    const wall = (performance.now() - started) / 1000;
    console.log(`sink alone, ${variant}: 32 MiB in ${wall.toFixed(2)} s = ${(33.554432 / wall).toFixed(0)} MB/s; ${syncs - before} fdatasync`);
    rmSync(file, { force: true });
  }
}

if (process.argv.includes("--sink-only")) {
  await sinkAlone();
  process.exit(0);
}

const cluster = await startCluster(major);
try {
  const names = Object.keys(VARIANTS);
  const total = rounds * names.length;
  await withClient(clientConfig(cluster), async (client) => {
    await client.query("CREATE TABLE cap_bench (id bigint PRIMARY KEY, a int, b text)");
    await client.query("CREATE PUBLICATION cap_bench_pub FOR TABLE cap_bench");
    for (let r = 0; r < total; r++) await client.query(`SELECT pg_create_logical_replication_slot('cap_bench_${r}', 'pgoutput')`);
    const t0 = performance.now();
    await client.query(`DO $$ BEGIN
      FOR t IN 0..${txns - 1} LOOP
        INSERT INTO cap_bench SELECT t * ${rowsPerTxn} + g, g, repeat('x', 80) FROM generate_series(1, ${rowsPerTxn}) g;
        COMMIT;
      END LOOP; END $$`);
    console.log(`backlog: ${txns} transactions of ${rowsPerTxn} row(s) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  });
  // Begin, the rows, Commit; and one Relation first.
  const messages = txns * (rowsPerTxn + 2) + 1;

  const kept = join(tmpdir(), `pgoutputwasm-bench-capture-${process.pid}-kept.bin`);
  const report = (label: string, s: Pipeline["stats"], wall: number, before: number) =>
    console.log(
      `${label}: ${s.records} messages, ${(s.bytes / 1e6).toFixed(1)} MB in ${wall.toFixed(2)} s = ${(s.bytes / 1e6 / wall).toFixed(1)} MB/s, ` +
        `${Math.round(txns / wall)} txn/s; ${syncs - before} fdatasync, ${s.writes} batches`,
    );
  for (let r = 0; r < total; r++) {
    const variant = names[r % names.length]!;
    const file = r === total - 1 ? kept : join(tmpdir(), `pgoutputwasm-bench-capture-${process.pid}.bin`);
    const stream = await replicate({
      connection: cluster.connectionString, slot: `cap_bench_${r}`, publications: "cap_bench_pub", ack: "manual", statusIntervalMs: 1000,
    });
    const sink = await VARIANTS[variant]!(file);
    const before = syncs;
    const started = performance.now();
    const pipeline = new Pipeline({ source: streamSource(stream), format: capture.create({ decoder: stream.decoder }, {}), sink, raw: true, limit: messages });
    const result = await pipeline.run();
    report(`live round ${r} ${variant}`, result.stats, (performance.now() - started) / 1000, before);
    if (file !== kept) rmSync(file, { force: true });
  }
  for (let r = 0; r < total; r++) {
    const variant = names[r % names.length]!;
    const file = join(tmpdir(), `pgoutputwasm-bench-capture-${process.pid}.bin`);
    const decoder = await createDecoder({ backend: "wasm" });
    const sink = await VARIANTS[variant]!(file);
    const before = syncs;
    const started = performance.now();
    const source = captureSource(createReadStream(kept, { highWaterMark: 64 * 1024 }), decoder);
    const result = await new Pipeline({ source, format: capture.create({ decoder }, {}), sink, raw: true }).run();
    report(`from the file, round ${r} ${variant}`, result.stats, (performance.now() - started) / 1000, before);
    rmSync(file, { force: true });
  }
  rmSync(kept, { force: true });
  await sinkAlone();
} finally {
  await cluster.stop();
}
