/**
 * A bounded workload for the sink tests, and what a sink must end up
 * holding for it.
 *
 * - `setupWorkload()` makes a schema with several tables — one column of
 *   every type of the values suite (test/support/values-cases.ts), a
 *   TOASTed table whose updates leave the big value unchanged, a REPLICA
 *   IDENTITY FULL table, a plain keyed one — and a publication of them.
 * - `runWorkload()` commits `transactions` transactions of 1-50 changes
 *   each (inserts, updates including unchanged-TOAST ones and key
 *   updates, deletes), seeded, so a run is the same every time.
 * - `expectedRecords()` reads the slot made before the workload through the
 *   pipeline with the JSON Lines format into memory: every record's id,
 *   kind, table and line, in commit order. A broker must hold exactly these
 *   (by id), once each, in this order per subject/key, with these bytes.
 *
 * Make the slots (`createSlots()`) before the workload: the reference slot
 * and the one the sink under test streams from see the same changes.
 */
import pg from "pg";
import type { ClientConfig } from "pg";
import { replicate } from "../../bindings/pg/replicate.ts";
import type { ReplicateOptions } from "../../bindings/pg/options.ts";
import type { ReplicationStream } from "../../bindings/pg/stream.ts";
import { jsonl } from "../../bindings/formats/jsonl.ts";
import { Pipeline, type PipelineResult } from "../../bindings/pipeline/run.ts";
import type { Sink } from "../../bindings/pipeline/sink.ts";
import { streamSource } from "../../bindings/pipeline/sources.ts";
import type { RecordKind } from "../../bindings/pipeline/records.ts";
import { createDecoder } from "../../bindings/create-decoder.ts";
import { TYPES_QUERY, typesFromCatalog, type CatalogTypeRow } from "../../bindings/values/catalog.ts";
import type { Cluster, PgMajor } from "../../devkit/cluster/cluster.ts";
import { parseLsn } from "../../bindings/lsn.ts";
import { parseChangeId } from "../../bindings/pipeline/change-id.ts";
import { CASES, SETUP_SQL } from "./values-cases.ts";
import { startClusters } from "./clusters.ts";

export interface Workload {
  schema: string;
  publication: string;
  tables: string[];
}

/** One record a sink must hold. */
export interface ExpectedRecord {
  id: string;
  kind: RecordKind;
  schema: string | undefined;
  table: string | undefined;
  /** The JSON line, without its newline. */
  line: string;
}

/** A column name for each distinct type of the values suite. */
function typeColumns(major: number): { name: string; type: string; values: string[] }[] {
  const byType = new Map<string, string[]>();
  for (const c of CASES) {
    if (c.since !== undefined && c.since > major) continue;
    byType.set(c.type, [...(byType.get(c.type) ?? []), c.sql]);
  }
  return [...byType].map(([type, values], i) => ({ name: `c${i}`, type, values }));
}

/** Creates the schema, its tables and a publication; returns their names. */
export async function setupWorkload(client: pg.Client, schema: string): Promise<Workload> {
  const major = Number((await client.query("SHOW server_version_num")).rows[0].server_version_num) / 10000;
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.query(`SET search_path = ${schema}, public`);
  for (const sql of SETUP_SQL) await client.query(sql);
  const cols = typeColumns(Math.floor(major));
  const qualify = (t: string) => t.replace(/\bvalues_/g, `${schema}.values_`);
  await client.query(`CREATE TABLE ${schema}.typed (id int PRIMARY KEY, ${cols.map((c) => `${c.name} ${qualify(c.type)}`).join(", ")})`);
  await client.query(`CREATE TABLE ${schema}.docs (id int PRIMARY KEY, title text, body text)`);
  await client.query(`ALTER TABLE ${schema}.docs ALTER COLUMN body SET STORAGE EXTERNAL`);
  await client.query(`CREATE TABLE ${schema}.full_rows (k int, v text)`);
  await client.query(`ALTER TABLE ${schema}.full_rows REPLICA IDENTITY FULL`);
  await client.query(`CREATE TABLE ${schema}.plain (id bigint PRIMARY KEY, v text)`);
  const tables = ["typed", "docs", "full_rows", "plain"];
  await client.query(`CREATE PUBLICATION ${schema}_pub FOR TABLE ${tables.map((t) => `${schema}.${t}`).join(", ")}`);
  return { schema, publication: `${schema}_pub`, tables };
}

/** A small deterministic generator (xorshift32). */
export function rng(seed: number): () => number {
  let x = seed | 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/**
 * Commits `transactions` transactions of 1-50 changes each on `client`.
 * Returns the number of row changes made.
 */
/** `pauseMs`: a pause after each transaction, so that the workload lasts (a test that kills its consumer mid-stream needs a stream that is still growing). */
export async function runWorkload(client: pg.Client, w: Workload, o: { transactions: number; seed?: number; pauseMs?: number }): Promise<number> {
  const major = Number((await client.query("SHOW server_version_num")).rows[0].server_version_num) / 10000;
  const cols = typeColumns(Math.floor(major));
  const s = w.schema;
  // The values' SQL names the schema's types unqualified (ARRAY[...]::values_mood[]): on any client, this schema's.
  await client.query(`SET search_path = ${s}, public`);
  const random = rng(o.seed ?? 42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const qualify = (t: string) => t.replace(/\bvalues_/g, `${s}.values_`);
  const live = { typed: new Set<number>(), docs: new Set<number>(), plain: new Set<number>(), full: 0 };
  let nextId = 1;
  let changes = 0;
  const big = (n: number) => `repeat(md5('${n}') || md5('${n * 7}'), 80)`; // 5 KB, stored out of line
  for (let t = 0; t < o.transactions; t++) {
    const n = 1 + Math.floor(random() * 50);
    const statements: string[] = [];
    for (let k = 0; k < n; k++) {
      const r = random();
      const id = nextId++;
      if (r < 0.3) {
        const values = cols.map((c) => `(${pick(c.values)})::${qualify(c.type)}`);
        statements.push(`INSERT INTO ${s}.typed VALUES (${id}, ${values.join(", ")})`);
        live.typed.add(id);
      } else if (r < 0.45) {
        statements.push(`INSERT INTO ${s}.docs VALUES (${id}, 'title ${id}', ${big(id)})`);
        live.docs.add(id);
      } else if (r < 0.55 && live.docs.size > 0) {
        // The body is not touched: it comes as unchanged TOAST.
        statements.push(`UPDATE ${s}.docs SET title = 'retitled ${id}' WHERE id = ${pick([...live.docs])}`);
      } else if (r < 0.62 && live.typed.size > 0) {
        const c = pick(cols);
        statements.push(`UPDATE ${s}.typed SET ${c.name} = (${pick(c.values)})::${qualify(c.type)} WHERE id = ${pick([...live.typed])}`);
      } else if (r < 0.7) {
        statements.push(`INSERT INTO ${s}.full_rows VALUES (${id % 97}, 'v${id}')`);
        live.full++;
      } else if (r < 0.75 && live.full > 0) {
        statements.push(`UPDATE ${s}.full_rows SET v = 'w${id}' WHERE ctid = (SELECT ctid FROM ${s}.full_rows LIMIT 1)`);
      } else if (r < 0.9) {
        statements.push(`INSERT INTO ${s}.plain VALUES (${id}, 'p${id}')`);
        live.plain.add(id);
      } else if (r < 0.95 && live.plain.size > 0) {
        // A key update: the old key comes as the identity.
        const old = pick([...live.plain]);
        live.plain.delete(old);
        live.plain.add(id);
        statements.push(`UPDATE ${s}.plain SET id = ${id} WHERE id = ${old}`);
      } else {
        const table = live.typed.size > 0 && random() < 0.5 ? "typed" : "plain";
        const set = live[table];
        if (set.size === 0) continue;
        const victim = pick([...set]);
        set.delete(victim);
        statements.push(`DELETE FROM ${s}.${table} WHERE id = ${victim}`);
      }
      changes++;
    }
    await client.query(`BEGIN; ${statements.join("; ")}; COMMIT`);
    if (o.pauseMs !== undefined) await new Promise((r) => setTimeout(r, o.pauseMs));
  }
  return changes;
}

/** Creates logical slots for pgoutput now (before the workload), so each sees every change after this point. */
export async function createSlots(client: pg.Client, names: readonly string[]): Promise<void> {
  for (const n of names) await client.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [n]);
}

/**
 * The server's current end of WAL: the insert position, past the end of every
 * commit made so far (with synchronous_commit off, the write position
 * pg_current_wal_lsn() may still be inside the last commits, and a run cut
 * there misses them).
 */
export async function walEnd(client: pg.Client): Promise<bigint> {
  const { rows } = await client.query("SELECT pg_current_wal_insert_lsn()::text AS lsn");
  const [hi, lo] = (rows[0].lsn as string).split("/");
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

/** What `streamInto()` takes beyond the slot and the sink. */
export interface StreamIntoOptions {
  binary?: boolean;
  /** The pipeline's in-flight window. */
  window?: { records?: number; bytes?: number };
  /** Called with the pipeline once it runs (a test may stop it, read its stats). */
  started?: (pipeline: Pipeline, stream: ReplicationStream) => void;
  /** Replication options beyond the slot's (statusIntervalMs: how closely confirmed_flush_lsn follows the acks; highWaterMark, ...). */
  replicate?: Omit<Partial<ReplicateOptions>, "connection" | "slot" | "publications" | "ack" | "decoder">;
}

/**
 * Streams `slot` through the JSON Lines format into `sink` until the WAL end
 * `until` has been received and handed over (or the pipeline fails: its
 * error is thrown), then stops: what a sink under test is fed.
 */
export async function streamInto(config: ClientConfig, w: Workload, slot: string, sink: Sink, until: bigint, o: StreamIntoOptions = {}): Promise<PipelineResult> {
  const client = new pg.Client(config);
  await client.connect();
  let types: ReturnType<typeof typesFromCatalog>;
  try {
    types = typesFromCatalog((await client.query<CatalogTypeRow>(TYPES_QUERY)).rows);
  } finally {
    await client.end();
  }
  const values = jsonl.values(types);
  const decoder = await createDecoder({ values });
  const stream: ReplicationStream = await replicate({
    connection: config, slot, publications: [w.publication], ack: "manual", decoder, binary: o.binary === true, reconnect: false, ...o.replicate,
  });
  const pipeline = new Pipeline({
    source: streamSource(stream),
    format: jsonl.create({ decoder }, {}),
    replayDecoder: await createDecoder({ values }),
    sink,
    window: o.window,
    onAck: (lsn) => {
      if (lsn >= until) pipeline.stop();
    },
  });
  o.started?.(pipeline, stream);
  // The workload's last commit may not be the last WAL record: stop once nothing came for a while after `until`.
  const idle = setInterval(() => {
    if (stream.lastReceivedLsn >= until && !stream.ready) pipeline.stop();
  }, 500);
  try {
    return await pipeline.run();
  } finally {
    clearInterval(idle);
    await stream.stop();
  }
}

/**
 * Every record of the JSON Lines format from `slot` up to the WAL end `until`
 * (read, then the slot dropped): what a sink fed from a slot made at the same
 * point must hold. `binary` as the sink under test streams.
 */
export async function expectedRecords(config: ClientConfig, w: Workload, slot: string, until: bigint, o: { binary?: boolean } = {}): Promise<ExpectedRecord[]> {
  const out: ExpectedRecord[] = [];
  const text = new TextDecoder();
  await streamInto(config, w, slot, {
    name: "reference",
    write: async (r) => {
      for (let i = 0; i < r.length; i++) {
        const rel = r.relations[i];
        out.push({ id: r.id(i), kind: r.kinds[i]!, schema: rel?.namespace, table: rel?.name, line: text.decode(r.payloadOf(i)) });
      }
    },
    close: async () => {},
  }, until, o);
  const admin = new pg.Client(config);
  await admin.connect();
  try {
    await admin.query("SELECT pg_drop_replication_slot($1)", [slot]);
  } finally {
    await admin.end();
  }
  return out;
}

/**
 * Whether a record is one that a restart inside a transaction may add
 * (change-id.ts): the RelationChanged (`A` line) of a first sight, with no
 * previous shape, at a derived position (`X/Y:N.k`). A sink restarted mid-
 * transaction may hold these beyond the reference's records; never a change.
 */
export function isRestartShape(id: string, line: string): boolean {
  if (parseChangeId(id)?.sub === undefined) return false;
  const l = JSON.parse(line) as { action?: string; old?: unknown };
  return l.action === "A" && l.old === null;
}

/** A PostgreSQL server for a sink test, with a connected client for the workload's SQL. */
export interface WorkloadServer {
  readonly cluster: Cluster;
  readonly config: ClientConfig;
  readonly admin: pg.Client;
}

/** Starts one server per major version (in parallel); `stop()` ends them all, also after a failed start. */
export async function startWorkloadServers(majors: readonly PgMajor[]): Promise<{ get(major: PgMajor): WorkloadServer; stop(): Promise<void> }> {
  const servers = new Map<PgMajor, WorkloadServer>();
  const stop = async () => {
    for (const s of servers.values()) {
      await s.admin.end().catch(() => {});
      await s.cluster.stop();
    }
  };
  try {
    await startClusters(majors, servers, (cluster, config) => ({ cluster, config, admin: new pg.Client(config) }));
    for (const s of servers.values()) await s.admin.connect();
  } catch (e) {
    await stop();
    throw e;
  }
  return { get: (major) => servers.get(major)!, stop };
}

/** The slot's confirmed_flush_lsn (0 when it has none). */
export async function confirmedFlush(s: WorkloadServer, slot: string): Promise<bigint> {
  const { rows } = await s.admin.query("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [slot]);
  return rows[0]?.lsn ? parseLsn(rows[0].lsn as string) : 0n;
}
