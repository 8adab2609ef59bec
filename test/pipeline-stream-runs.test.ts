/**
 * The pipeline's whole-batch path on a replication stream (`tail`): the
 * stream's source offers the socket reader's decoded batch (readyBatch),
 * the JSON Lines format writes plain transactions from the kernel, and the
 * stream does for the messages passed over (skipReady) what it does for
 * each one handed out: counts, commit times, what is acknowledged. Two
 * slots made before the workload read the same WAL; the pipeline that
 * takes runs must give the sink what the one taking every message alone
 * gives, byte for byte, with the same acknowledgements, and leave each
 * slot confirmed at the same place.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClientConfig } from "pg";
import { formatNamed } from "../bindings/formats/index.ts";
import { replicate, type ReplicationStream } from "../bindings/pg/index.ts";
import { Pipeline } from "../bindings/pipeline/run.ts";
import { streamSource, type PipelineSource } from "../bindings/pipeline/sources.ts";
import type { FormatOptionValues } from "../bindings/pipeline/format.ts";
import { parseLsn } from "../bindings/lsn.ts";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import type { ChangePosition } from "../bindings/pipeline/change-id.ts";
import { backend } from "./support/backends.ts";
import { recording, type Recorded } from "./support/recording-sink.ts";

let cluster: Cluster;
let config: ClientConfig;
const streams = new Set<ReplicationStream>();

beforeAll(async () => {
  cluster = await startCluster(15);
  config = { host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database };
});

afterAll(async () => {
  await Promise.all([...streams].map((s) => s.stop().catch(() => {})));
  await cluster?.stop();
});

/** Plain transactions of every row change and column kind the kernel's lines write or decline, and messages between them. */
const WORKLOAD = (t: string): string[] => [
  `INSERT INTO ${t} SELECT g, md5(g::text), g * 1.5, g % 2 = 0, now(), '{"a": 1}', '\\x00ff'::bytea, NULL FROM generate_series(1, 3000) g`,
  `UPDATE ${t} SET v = v || '!' WHERE id % 7 = 0`,
  `UPDATE ${t} SET big = repeat('x', 20000) WHERE id = 5`,
  `UPDATE ${t} SET n = 2 WHERE id = 5`, // big unchanged: TOAST not sent, "u" in the line
  `DELETE FROM ${t} WHERE id % 11 = 0`,
  `BEGIN; INSERT INTO ${t} (id) VALUES (100001); SELECT pg_logical_emit_message(true, 'p', 'in a transaction'); INSERT INTO ${t} (id) VALUES (100002); COMMIT`,
  `SELECT pg_logical_emit_message(false, 'p', 'outside')`,
  `ALTER TABLE ${t} ADD COLUMN extra int DEFAULT 7`,
  `INSERT INTO ${t} (id) SELECT g FROM generate_series(200001, 200500) g`,
  `TRUNCATE ${t}`,
  `INSERT INTO ${t} (id, v) VALUES (1, 'after the truncate')`,
];

/** `runs.mostTransactions`: the most transactions one run took. */
type Seen = Recorded & { stats: { transactions: number; inserts: number; updates: number; deletes: number }; confirmed: string; runs: { mostTransactions: number } };

/** A pipeline over slot `slot` until it confirmed a transaction ending past `past`. */
async function run(slot: string, publication: string, past: bigint, batches: boolean, options: FormatOptionValues, delivered?: ChangePosition): Promise<Seen> {
  const jsonl = formatNamed("jsonl");
  const decoder = await backend.create({ values: jsonl.values() });
  const stream = await replicate({ connection: config, slot, publications: [publication], ack: "manual", decoder, reconnect: false, messages: true, statusIntervalMs: 100 });
  streams.add(stream);
  const source: PipelineSource = streamSource(stream);
  if (!batches) delete (source as { readyBatch?: unknown }).readyBatch;
  const { seen: recorded, format, sink, runs } = recording(jsonl.create({ decoder }, options), delivered);
  const seen: Seen = Object.assign(recorded, { stats: { transactions: 0, inserts: 0, updates: 0, deletes: 0 }, confirmed: "", runs });
  const pipeline: Pipeline = new Pipeline({
    source, format, sink, replayDecoder: await backend.create({ values: jsonl.values() }),
    onAck: (lsn) => void (lsn > past && pipeline.stop()),
  });
  await pipeline.run();
  const { transactions, inserts, updates, deletes } = stream.stats;
  seen.stats = { transactions, inserts, updates, deletes };
  await stream.stop();
  streams.delete(stream);
  seen.confirmed = (await cluster.query<{ c: string }>("SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = $1", [slot]))[0]!.c;
  return seen;
}

describe(`pipeline whole-batch path on a replication stream (${backend.name})`, () => {
  const variants: [string, FormatOptionValues][] = [["default", {}], ["transactions", { transactions: true }]];
  for (const [variant, options] of variants) {
    it(`${variant}: the same lines, records, acknowledgements, counts and confirmed position as one message at a time`, async () => {
      const t = `runs_${backend.name}_${variant}`;
      await cluster.query(`CREATE TABLE ${t} (id bigint PRIMARY KEY, v text, n numeric, b boolean, at timestamptz, j jsonb, raw bytea, big text)`);
      await cluster.query(`CREATE PUBLICATION ${t}_pub FOR TABLE ${t}`);
      for (const s of ["one", "runs", "one_held", "runs_held"]) await cluster.query(`SELECT pg_create_logical_replication_slot('${t}_${s}', 'pgoutput')`);
      for (const step of WORKLOAD(t)) await cluster.query(step);
      const past = parseLsn((await cluster.query<{ l: string }>("SELECT pg_current_wal_insert_lsn()::text AS l"))[0]!.l);
      await cluster.query(`INSERT INTO ${t} (id) VALUES (999999)`); // the last transaction: each run stops once it is confirmed

      const one = await run(`${t}_one`, `${t}_pub`, past, false, options);
      const runs = await run(`${t}_runs`, `${t}_pub`, past, true, options);
      expect(one.fromBatches).toBe(0);
      // Of about 4,220 messages, all but the Relation, Truncate, Message and a few others: the runs took them.
      expect(runs.fromBatches).toBeGreaterThan(4000);
      // The workload's small transactions come in one socket read: one run takes several.
      expect(runs.runs.mostTransactions).toBeGreaterThan(1);
      expect(runs.lines.length).toBeGreaterThan(0);
      expect(runs.lines).toBe(one.lines);
      expect(runs.records).toEqual(one.records);
      expect(runs.acks).toEqual(one.acks);
      expect(runs.stats).toEqual(one.stats);
      expect(runs.stats.inserts).toBeGreaterThan(3000);
      expect(runs.confirmed).toBe(one.confirmed);
      expect(parseLsn(runs.confirmed)).toBeGreaterThan(past);

      // A destination that holds the first 1,000 records of the 3,000-row transaction (a restart's redelivery):
      // those are taken back one by one, and the rest of the transaction, and all after it, come from the runs.
      const held = runs.positions.find((p) => p.index === 1000)!;
      const oneHeld = await run(`${t}_one_held`, `${t}_pub`, past, false, options, held);
      const runsHeld = await run(`${t}_runs_held`, `${t}_pub`, past, true, options, held);
      expect(oneHeld.records.length).toBeLessThan(one.records.length - 1000);
      expect(runsHeld.lines).toBe(oneHeld.lines);
      expect(runsHeld.records).toEqual(oneHeld.records);
      expect(runsHeld.acks).toEqual(oneHeld.acks);
      expect(runsHeld.fromBatches).toBeGreaterThan(3000);
    });
  }
});
