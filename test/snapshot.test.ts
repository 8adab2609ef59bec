/**
 * The initial snapshot (`replicate({ snapshot })`) against real PostgreSQL
 * 15 and 18: tables of mixed types (TOASTed values, NULLs, arrays, a table
 * without a primary key, a partitioned table published through its root,
 * a column list and a row filter) copied while another connection inserts,
 * updates and deletes; snapshot rows then streamed changes replayed into
 * in-memory tables must equal the server's final contents, every snapshot
 * row and every streamed Insert must be a new key (no duplicate from the
 * hand-off) and every Update/Delete must find its row (no gap). Binary and
 * text COPY give the values of the values suite; a terminated copy backend
 * gives SNAPSHOT_INCOMPLETE and the slot is gone. The COPY re-framing is
 * checked on hostile bytes: typed errors only.
 */
import * as fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg, { type ClientConfig } from "pg";
import { replicate, ReplicationError, type SnapshotReplication } from "../bindings/pg/index.ts";
import { CopyReframer } from "../bindings/pg/copy-reframe.ts";
import { copyCommand, planTasks, readSnapshotTables } from "../bindings/pg/snapshot-catalog.ts";
import { isPgoutputError } from "../bindings/errors.ts";
import { createDecoder } from "../bindings/create-decoder.ts";
import type { Tuple } from "../bindings/tuple.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import type { Cluster, PgMajor } from "../devkit/cluster/cluster.ts";
import { startClusters, withClient } from "./support/clusters.ts";
import { CASES, SETUP_SQL } from "./support/values-cases.ts";
import { TYPES_QUERY, typesFromCatalog } from "../bindings/values/index.ts";

const MAJORS: PgMajor[] = [15, 18];
const clusters = new Map<PgMajor, { cluster: Cluster; config: ClientConfig }>();
let seq = 0;

beforeAll(async () => {
  await startClusters(MAJORS, clusters, (cluster, config) => ({ cluster, config }));
}, 120_000);

afterAll(async () => {
  for (const c of clusters.values()) await c.cluster.stop();
});

/** A JSON-comparable form of a decoded value (bigints, bytes, dates made explicit). */
function canon(v: unknown): string {
  return JSON.stringify(v, (_, x) => {
    if (typeof x === "bigint") return `${x}n`;
    if (x instanceof Uint8Array) return `bytes:${Buffer.from(x).toString("hex")}`;
    return x;
  });
}

function rowOf(t: Tuple, previous?: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < t.length; i++) {
    const kind = t.kind(i);
    if (kind === "unchanged") {
      if (previous === undefined) throw new Error(`unchanged TOAST in column ${i} without an old row`);
      out.push(previous[i]!);
    } else out.push(kind === "null" ? "null" : canon(t.value(i)));
  }
  return out;
}

/** In-memory tables: by key (the first column) for keyed tables, a multiset of whole rows otherwise. */
class Replica {
  readonly keyed = new Map<string, Map<string, string[]>>();
  readonly bags = new Map<string, Map<string, number>>();
  readonly problems: string[] = [];

  constructor(readonly keyedTables: ReadonlySet<string>) {}

  #keyed(table: string): Map<string, string[]> {
    let m = this.keyed.get(table);
    if (m === undefined) this.keyed.set(table, (m = new Map()));
    return m;
  }

  #bag(table: string): Map<string, number> {
    let m = this.bags.get(table);
    if (m === undefined) this.bags.set(table, (m = new Map()));
    return m;
  }

  insert(table: string, row: string[], source: string): void {
    if (this.keyedTables.has(table)) {
      const m = this.#keyed(table);
      if (m.has(row[0]!)) this.problems.push(`${source}: ${table} key ${row[0]} twice`);
      m.set(row[0]!, row);
    } else {
      const m = this.#bag(table);
      const k = JSON.stringify(row);
      m.set(k, (m.get(k) ?? 0) + 1);
    }
  }

  remove(table: string, key: string[] | undefined, source: string): string[] | undefined {
    if (this.keyedTables.has(table)) {
      const m = this.#keyed(table);
      const old = key === undefined ? undefined : m.get(key[0]!);
      if (old === undefined) this.problems.push(`${source}: ${table} key ${key?.[0]} missing`);
      else m.delete(key![0]!);
      return old;
    }
    const m = this.#bag(table);
    const k = JSON.stringify(key);
    const n = m.get(k) ?? 0;
    if (n === 0) this.problems.push(`${source}: ${table} row ${k.slice(0, 80)} missing`);
    else if (n === 1) m.delete(k);
    else m.set(k, n - 1);
    return key;
  }

  apply(msg: PgoutputMessage): void {
    if (msg.kind !== "Insert" && msg.kind !== "Update" && msg.kind !== "Delete") return;
    const table = msg.relation!.name;
    if (msg.kind === "Insert") return this.insert(table, rowOf(msg.newTuple), "stream insert");
    if (msg.kind === "Delete") {
      this.remove(table, rowOf(msg.oldTuple!), "stream delete");
      return;
    }
    const key = msg.oldTuple ? rowOf(msg.oldTuple) : rowOf(msg.newTuple, this.keyed.get(table)?.get(canon(msg.newTuple.value(0))));
    const old = this.remove(table, key, "stream update");
    this.insert(table, rowOf(msg.newTuple, old), "stream update");
  }

  /** Sorted rows of a table, for comparison. */
  rows(table: string): string[] {
    if (this.keyedTables.has(table)) return [...(this.keyed.get(table)?.values() ?? [])].map((r) => JSON.stringify(r)).sort();
    return [...(this.bags.get(table) ?? new Map<string, number>())].flatMap(([k, n]) => Array<string>(n).fill(k)).sort();
  }
}

/** The server's current rows of a table, decoded through a text COPY, sorted. */
async function serverRows(client: pg.Client, table: string, columns: string[], relationId: number, replica: SnapshotReplication): Promise<string[]> {
  const decoder = await createDecoder({ backend: "baseline" });
  const relation = replica.stream.decoder.relations.get(relationId)!;
  decoder.decodeFramed(frame(relation.bytes()));
  const reframer = new CopyReframer({ relationId, columns: columns.length, format: "text" });
  const text = await rawCopy(client, `COPY (SELECT ${columns.join(", ")} FROM ${table}) TO STDOUT`);
  reframer.push(text);
  reframer.end();
  const out: string[] = [];
  for (const m of decoder.decodeFramed(reframer.take())) if (m.kind === "Insert") out.push(JSON.stringify(rowOf(m.newTuple)));
  return out.sort();
}

function frame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + message.length);
  new DataView(out.buffer).setUint32(0, message.length);
  out.set(message, 4);
  return out;
}

/** A whole COPY TO STDOUT through copy-out.ts's submittable. */
async function rawCopy(client: pg.Client, command: string): Promise<Uint8Array> {
  const { copyOut } = await import("../bindings/pg/copy-out.ts");
  const parts: Buffer[] = [];
  await copyOut(client, command, (p) => parts.push(Buffer.from(p))).done;
  return new Uint8Array(Buffer.concat(parts));
}

/**
 * Runs `fn` with an admin client and `s`, a name no other test of the file
 * uses (`prefix` and a number), for what the test makes: its tables,
 * publication pub_s and slot slot_s (clusters are shared by the tests).
 */
async function withFresh(config: ClientConfig, prefix: string, fn: (admin: pg.Client, s: string) => Promise<void>): Promise<void> {
  const s = `${prefix}${++seq}`;
  await withClient(config, (admin) => fn(admin, s));
}

/** withFresh, and a schema `s` made first as the client's search_path (for the types the values suite's SETUP_SQL creates). */
async function withFreshSchema(config: ClientConfig, prefix: string, fn: (admin: pg.Client, s: string) => Promise<void>): Promise<void> {
  await withFresh(config, prefix, async (admin, s) => {
    await admin.query(`CREATE SCHEMA ${s}; SET search_path = ${s}`);
    await fn(admin, s);
  });
}

const TOAST = `repeat(md5(g::text) || md5((g * 7)::text), 100)`; // 6400 bytes, little compression: stored out of line

for (const major of MAJORS) {
  describe(`PostgreSQL ${major}`, () => {
    const c = () => clusters.get(major)!;

    it("snapshot + concurrent changes replay to the server's final contents, no key twice, none missing", async () => {
      await withFreshSchema(c().config, "snap", async (admin, s) => {
        await admin.query(`CREATE TABLE ${s}.items (id int PRIMARY KEY, v text, big text, arr int4[], amount numeric, at timestamptz, flag bool)`);
        await admin.query(`INSERT INTO ${s}.items SELECT g, CASE WHEN g % 5 = 0 THEN NULL ELSE 'v' || g END,
          CASE WHEN g % 50 = 0 THEN ${TOAST} END, ARRAY[g, NULL, -g], g * 1.25, '2024-01-01'::timestamptz + g * interval '1 minute', g % 2 = 0
          FROM generate_series(1, 60000) g`);
        await admin.query(`CREATE TABLE ${s}.nokey (a int, b text)`);
        await admin.query(`ALTER TABLE ${s}.nokey REPLICA IDENTITY FULL`);
        await admin.query(`INSERT INTO ${s}.nokey SELECT g % 1000, CASE WHEN g % 3 = 0 THEN NULL ELSE 'b' || (g % 7) END FROM generate_series(1, 20000) g`);
        await admin.query(`CREATE TABLE ${s}.parts (id int PRIMARY KEY, tag text) PARTITION BY RANGE (id)`);
        await admin.query(`CREATE TABLE ${s}.parts_lo PARTITION OF ${s}.parts FOR VALUES FROM (MINVALUE) TO (15000)`);
        await admin.query(`CREATE TABLE ${s}.parts_hi PARTITION OF ${s}.parts FOR VALUES FROM (15000) TO (MAXVALUE)`);
        await admin.query(`INSERT INTO ${s}.parts SELECT g, 't' || g FROM generate_series(1, 30000) g`);
        // A column list and a row filter: only id and w of rows with id % 3 <> 0.
        await admin.query(`CREATE TABLE ${s}.filtered (id int PRIMARY KEY, w text, secret text)`);
        await admin.query(`INSERT INTO ${s}.filtered SELECT g, 'w' || g, 'hidden' FROM generate_series(1, 3000) g`);
        await admin.query(`CREATE TABLE ${s}.done (id int PRIMARY KEY)`);
        await admin.query(`ANALYZE ${s}.items, ${s}.nokey, ${s}.parts`);
        // chunkPages 16 below: items, nokey and the partition root are all copied in ctid ranges.
        const pages = await admin.query(`SELECT relname, relpages FROM pg_class WHERE relnamespace = '${s}'::regnamespace AND relkind = 'r'`);
        for (const r of pages.rows) if (r.relname !== "done" && r.relname !== "filtered") expect(r.relpages, r.relname).toBeGreaterThanOrEqual(32);
        await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}.items, ${s}.nokey, ${s}.parts, ${s}.done,
          ${s}.filtered (id, w) WHERE (id % 3 <> 0) WITH (publish_via_partition_root = true)`);

        // Writes before, during and after the snapshot.
        const writer = new pg.Client(c().config);
        await writer.connect();
        let writing = true;
        let commits = 0;
        let next = 100_000;
        const writes = (async () => {
          for (let i = 0; writing; i++) {
            const k = 1 + ((i * 7919) % 60000);
            await writer.query(`BEGIN;
              INSERT INTO ${s}.items VALUES (${next}, 'new', ${i % 4 === 0 ? `(SELECT ${TOAST} FROM (SELECT ${i} AS g) x)` : "NULL"}, '{1,2}', 1.5, now(), true);
              UPDATE ${s}.items SET v = 'upd${i}' WHERE id = ${k};
              UPDATE ${s}.items SET big = NULL, arr = '{}' WHERE id = ${k + 50 - (k % 50)};
              DELETE FROM ${s}.items WHERE id = ${1 + ((i * 104729) % 60000)};
              INSERT INTO ${s}.nokey VALUES (${i % 1000}, 'w${i}');
              UPDATE ${s}.nokey SET b = 'u${i}' WHERE ctid = (SELECT ctid FROM ${s}.nokey WHERE a = ${(i * 13) % 1000} LIMIT 1);
              DELETE FROM ${s}.nokey WHERE ctid = (SELECT ctid FROM ${s}.nokey WHERE a = ${(i * 17) % 1000} LIMIT 1);
              INSERT INTO ${s}.parts VALUES (${next}, 'p');
              UPDATE ${s}.parts SET id = id + 200000 WHERE id = ${1 + ((i * 31) % 15000)};
              DELETE FROM ${s}.parts WHERE id = ${15000 + ((i * 37) % 15000)};
              UPDATE ${s}.filtered SET w = 'x${i}' WHERE id = ${1 + ((i * 3) % 3000)};
              COMMIT`);
            next++;
            commits++;
          }
        })();
        while (commits < 3) await new Promise((r) => setTimeout(r, 5));

        const progress: number[] = [];
        let estimatedRows = 0;
        const run = await replicate({
          // log_statement: the server's log shows which COPYs the copy connections ran.
          connection: { ...c().config, options: "-c log_statement=all" }, slot: { name: `slot_${s}`, create: true }, publications: `pub_${s}`,
          // Binary snapshot rows, text changes: the replay compares values across the two formats.
          snapshot: {
            parallel: 3, chunkPages: 16, batchRows: 500, format: "binary",
            onProgress: (p) => (progress.push(p.rows), (estimatedRows = p.estimatedRows)),
          },
          highWaterMark: 1 << 20,
        });
        const commitsAtStart = commits;
        const keyed = new Set(["items", "parts", "done", "filtered"]);
        const replica = new Replica(keyed);
        const relationIds = new Map<string, number>();
        let snapshotRows = 0;
        let commitsDuringSnapshot = -1;
        let sawChangeBeforeComplete = false;
        let complete = false;
        for await (const item of run) {
          if (item.kind === "SnapshotRow") {
            if (complete) sawChangeBeforeComplete = true;
            snapshotRows++;
            relationIds.set(item.relation.name, item.relation.relationId);
            replica.insert(item.relation.name, rowOf(item.tuple), "snapshot");
            continue;
          }
          if (item.kind === "SnapshotComplete") {
            complete = true;
            commitsDuringSnapshot = commits - commitsAtStart;
            expect(item.rows).toBe(snapshotRows);
            writing = false;
            await writes;
            await writer.query(`INSERT INTO ${s}.done VALUES (1)`);
            continue;
          }
          if (item.kind === "PrimaryKeepalive" || item.kind === "RelationChanged" || item.kind === "Ddl" || item.kind === "BackfillRow" || item.kind === "BackfillComplete") continue;
          if (!complete) sawChangeBeforeComplete = true;
          if (item.kind === "Insert" || item.kind === "Update" || item.kind === "Delete") relationIds.set(item.relation!.name, item.relation!.relationId);
          if (item.kind === "Insert" && item.relation?.name === "done") break;
          replica.apply(item);
        }
        await writer.end();
        expect(sawChangeBeforeComplete).toBe(false);
        expect(commitsDuringSnapshot).toBeGreaterThan(0);
        expect(snapshotRows).toBeGreaterThan(100_000);
        expect(progress.length).toBeGreaterThan(0);
        expect(progress[progress.length - 1]).toBe(snapshotRows);
        // The analyzed tables (items, nokey, parts: all but about 3,000 rows) are in the estimate.
        expect(estimatedRows).toBeGreaterThan(snapshotRows * 0.8);
        expect(estimatedRows).toBeLessThan(snapshotRows * 1.2);
        // Every big table was copied in ctid ranges, the plain tables as well as the partition root.
        const log = fs.readFileSync(c().cluster.logFile, "utf8");
        for (const table of ["items", "nokey", "parts"]) {
          const ranged = log.split("\n").filter((l) => l.includes(`COPY (SELECT`) && l.includes(`"${s}"."${table}"`) && l.includes("ctid <")).length;
          expect(ranged, table).toBeGreaterThanOrEqual(2);
        }
        expect(replica.problems).toEqual([]);
        const columns: Record<string, string[]> = {
          items: ["id", "v", "big", "arr", "amount", "at", "flag"], nokey: ["a", "b"], parts: ["id", "tag"], filtered: ["id", "w"],
        };
        for (const [table, cols] of Object.entries(columns)) {
          const from = table === "filtered" ? `${s}.${table} WHERE id % 3 <> 0` : `${s}.${table}`;
          const expected = await serverRows(admin, from, cols, relationIds.get(table)!, run);
          expect(expected.length, table).toBeGreaterThan(1000);
          const got = replica.rows(table);
          expect(got.length, table).toBe(expected.length);
          expect(got, table).toEqual(expected);
        }
        // The partition root is the relation, never a partition.
        expect(relationIds.has("parts_lo") || relationIds.has("parts_hi")).toBe(false);
        await run.stop();
      });
    }, 120_000);

    it("binary and text COPY give the values suite's values", async () => {
      await withFreshSchema(c().config, "vals", async (admin, s) => {
        for (const q of SETUP_SQL) await admin.query(q);
        const cases = CASES.filter((k) => (k.since ?? 0) <= major);
        const cols = cases.map((k, i) => `c${i} ${k.type}`).join(", ");
        await admin.query(`CREATE TABLE ${s}.v (id int PRIMARY KEY, ${cols})`);
        await admin.query(`INSERT INTO ${s}.v VALUES (1, ${cases.map((k) => `(${k.sql})::${k.type}`).join(", ")})`);
        await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}.v`);
        // Enums and domains need what the catalogs say of them, as for pgoutput values.
        const types = typesFromCatalog((await admin.query(TYPES_QUERY)).rows);
        for (const [format, backend] of [["binary", "wasm"], ["binary", "baseline"], ["text", "wasm"], ["text", "baseline"]] as const) {
          const decoder = await createDecoder({ backend, values: { types } });
          const run = await replicate({
            connection: c().config, slot: { name: `slot_${s}_${format}_${backend}`, temporary: true }, publications: `pub_${s}`,
            snapshot: { format, parallel: 1 }, decoder,
          });
          let rows = 0;
          for await (const item of run) {
            if (item.kind === "SnapshotComplete") break;
            if (item.kind !== "SnapshotRow") continue;
            rows++;
            cases.forEach((k, i) => {
              const what = `${format} ${backend} ${k.type} ${k.sql.slice(0, 50)}`;
              expect(item.tuple.kind(i + 1), what).toBe(format);
              if (format === "binary" && k.textOnly) expect(item.tuple.value(i + 1), what).toBeInstanceOf(Uint8Array);
              else expect(item.tuple.value(i + 1), what).toStrictEqual(k.expected);
            });
          }
          expect(rows).toBe(1);
          await run.stop();
        }
      });
    }, 60_000);

    it("a terminated copy backend fails the snapshot with SNAPSHOT_INCOMPLETE and drops the slot", async () => {
      await withFreshSchema(c().config, "term", async (admin, s) => {
        await admin.query(`CREATE TABLE ${s}.t (id int PRIMARY KEY, v text)`);
        await admin.query(`INSERT INTO ${s}.t SELECT g, repeat('x', 400) FROM generate_series(1, 50000) g`);
        await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}.t`);
        const slot = `slot_${s}`;
        const run = await replicate({
          connection: c().config, slot: { name: slot, create: true }, publications: `pub_${s}`, snapshot: { parallel: 1 }, highWaterMark: 64 << 10,
        });
        let rows = 0;
        let error: unknown;
        try {
          for await (const item of run) {
            if (item.kind !== "SnapshotRow") throw new Error(`got ${item.kind} from an interrupted snapshot`);
            if (++rows === 10) {
              await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgoutput-wasm snapshot'`);
            }
          }
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(ReplicationError);
        expect((error as ReplicationError).code).toBe("SNAPSHOT_INCOMPLETE");
        expect((error as Error).message).toMatch(/never completed.*slot was dropped/);
        expect(rows).toBeLessThan(50000);
        expect((await admin.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = $1`, [slot])).rows).toEqual([]);
      });
    }, 60_000);

    it("a slow consumer: what is buffered stays near highWaterMark whatever the table size", async () => {
      await withFresh(c().config, "slow", async (admin, s) => {
        await admin.query(`CREATE TABLE ${s} (id int PRIMARY KEY, v text)`);
        await admin.query(`INSERT INTO ${s} SELECT g, repeat('y', 300) FROM generate_series(1, 40000) g`); // ~13 MB
        await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}`);
        const highWaterMark = 256 << 10;
        const run = await replicate({
          connection: c().config, slot: { name: `slot_${s}`, temporary: true }, publications: `pub_${s}`, snapshot: { parallel: 2 }, highWaterMark, binary: true,
        });
        let rows = 0;
        for await (const item of run) {
          if (item.kind === "SnapshotComplete") break;
          if (item.kind === "SnapshotRow" && rows === 0) expect(item.tuple.kind(1)).toBe("binary"); // binary: true streams, and so copies, binary
          if (item.kind === "SnapshotRow" && ++rows % 2000 === 0) await new Promise((r) => setTimeout(r, 2));
        }
        expect(rows).toBe(40000);
        expect(run.progress.bytes).toBeGreaterThan(12_000_000);
        // Each of the 2 connections may overshoot by one batch (a quarter of the mark) and one socket read.
        expect(run.buffered.highWater).toBeLessThan(highWaterMark + 2 * (highWaterMark / 4 + (128 << 10)));
        await run.stop();
      });
    }, 60_000);

    it("copy connections are guarded: a row over maxMessageSize is refused at its CopyData header; a copy paused past receiveTimeoutMs, and past its own end, is not cut off", async () => {
      await withFresh(c().config, "guard", async (admin, s) => {
        await admin.query(`CREATE TABLE ${s} (id int PRIMARY KEY, v text)`);
        await admin.query(`ALTER TABLE ${s} ALTER COLUMN v SET STORAGE EXTERNAL`); // stored as written: the row is as long as the value
        await admin.query(`INSERT INTO ${s} SELECT g, repeat('z', CASE WHEN g = 500 THEN 200000 ELSE 100 END) FROM generate_series(1, 3000) g`);
        await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}`);
        // maxMessageSize 64 KiB: row 500's CopyData (200 kB) is refused by the guard before pg buffers it.
        const big = await replicate({
          connection: c().config, slot: { name: `slot_${s}`, create: true }, publications: `pub_${s}`, snapshot: { parallel: 1 }, maxMessageSize: 64 << 10,
        });
        let error: unknown;
        try {
          for await (const _ of big) { /* until the error */ }
        } catch (e) {
          error = e;
        }
        expect(error).toMatchObject({ code: "SNAPSHOT_INCOMPLETE" });
        expect((error as Error).message).toMatch(/never completed: the server sent a CopyData message \(0x64\) of 2000\d\d bytes, over maxMessageSize \(65536\)/);
        expect((error as { cause: { code: string; cause: { code: string } } }).cause).toMatchObject({ code: "DECODE_ERROR", cause: { code: "MESSAGE_TOO_LARGE" } });
        expect((await admin.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = $1`, [`slot_${s}`])).rows).toEqual([]);

        // receiveTimeoutMs 400 and a consumer that stops for 1.5 s with the copy paused by backpressure: every row arrives.
        const slow = await replicate({
          connection: c().config, slot: { name: `slot2_${s}`, temporary: true }, publications: `pub_${s}`, snapshot: { parallel: 1 },
          highWaterMark: 16 << 10, receiveTimeoutMs: 400,
        });
        let rows = 0;
        for await (const item of slow) {
          if (item.kind === "SnapshotComplete") break;
          if (++rows === 10) await new Promise((r) => setTimeout(r, 1500));
        }
        expect(rows).toBe(3000);
        await slow.stop();
      });
    }, 60_000);

    it("copy connections from a connection function (walsender connections, as the CLI makes them)", async () => {
      await withFresh(c().config, "fac", async (admin, s) => {
        await admin.query(`CREATE TABLE ${s} (id int PRIMARY KEY, v text)`);
        await admin.query(`INSERT INTO ${s} SELECT g, 'x' || g FROM generate_series(1, 5000) g`);
        await admin.query(`CREATE PUBLICATION "pub_${s}'\\" FOR TABLE ${s}`);
        let made = 0;
        const run = await replicate({
          connection: () => (made++, new pg.Client({ ...c().config, replication: "database" } as ClientConfig)),
          slot: { name: `slot_${s}`, temporary: true }, publications: `pub_${s}'\\`, snapshot: { parallel: 2 },
        });
        const ids = new Set<number>();
        for await (const item of run) {
          if (item.kind === "SnapshotComplete") break;
          if (item.kind !== "SnapshotRow") continue;
          expect(item.tuple.kind(0)).toBe("text"); // the stream's format (binary: false) by default
          ids.add(item.tuple.value(0) as number);
        }
        expect(ids.size).toBe(5000);
        expect(made).toBe(3); // the replication connection and 2 copy connections
        await run.stop();
      });
    });

    it("transactions(): materialized snapshot rows, SnapshotComplete, then whole transactions", async () => {
      await withFresh(c().config, "txs", async (admin, s) => {
        await admin.query(`CREATE TABLE ${s} (id int PRIMARY KEY, v text)`);
        await admin.query(`INSERT INTO ${s} SELECT g, 'x' || g FROM generate_series(1, 300) g`);
        await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}`);
        const run = await replicate({ connection: c().config, slot: { name: `slot_${s}`, temporary: true }, publications: `pub_${s}`, snapshot: { batchRows: 7, format: "binary" } });
        const kept: Record<string, unknown>[] = [];
        for await (const item of run.transactions()) {
          if (item.kind === "SnapshotRow") kept.push(item);
          else if (item.kind === "SnapshotComplete") await admin.query(`BEGIN; DELETE FROM ${s} WHERE id = 5; INSERT INTO ${s} VALUES (301, 'new'); COMMIT`);
          else if (item.kind === "commit") {
            expect(item.messages.map((m) => m.kind).filter((k) => k !== "Relation")).toEqual(["Delete", "Insert"]);
            break;
          }
        }
        // Materialized: still intact after everything decoded since.
        expect(kept).toHaveLength(300);
        // Binary COPY: the columns' send-format bytes, as pgoutput's binary mode materializes them.
        const ids = kept.map((r) => {
          const col = (r.newTuple as { kind: string; bytes: Uint8Array }[])[0]!;
          expect(col.kind).toBe("binary");
          return new DataView(col.bytes.buffer, col.bytes.byteOffset, 4).getInt32(0);
        });
        expect(ids.sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
        expect(kept[0]).toMatchObject({ kind: "SnapshotRow", relationName: s, namespace: "public" });
        await run.stop();
      });
    });

    it("tables: only the tables named; a name not in the publications is INVALID_OPTION and leaves no slot", async () => {
      await withFresh(c().config, "tbl", async (admin, s) => {
        await admin.query(`CREATE TABLE ${s}_a (id int PRIMARY KEY); INSERT INTO ${s}_a SELECT generate_series(1, 10)`);
        await admin.query(`CREATE TABLE ${s}_b (id int PRIMARY KEY); INSERT INTO ${s}_b SELECT generate_series(1, 20)`);
        await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}_a, ${s}_b`);
        const run = await replicate({ connection: c().config, slot: { name: `slot_${s}`, temporary: true }, publications: `pub_${s}`, snapshot: { tables: [`public.${s}_b`] } });
        const names = new Map<string, number>();
        for await (const item of run) {
          if (item.kind === "SnapshotComplete") break;
          if (item.kind === "SnapshotRow") names.set(item.relation.name, (names.get(item.relation.name) ?? 0) + 1);
        }
        expect([...names]).toEqual([[`${s}_b`, 20]]);
        await run.stop();
        await expect(replicate({ connection: c().config, slot: { name: `slot_${s}_x`, create: true }, publications: `pub_${s}`, snapshot: { tables: ["nope"] } }))
          .rejects.toMatchObject({ code: "INVALID_OPTION", message: expect.stringMatching(/nope/) });
        expect((await admin.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = $1`, [`slot_${s}_x`])).rows).toEqual([]);
      });
    });

    it("the catalog sizes an unpartitioned table from its heap: pages before any VACUUM, rows once analyzed, ctid ranges planned", async () => {
      await withFresh(c().config, "size", async (admin, s) => {
        await admin.query(`CREATE TABLE ${s} AS SELECT i, md5(i::text) m FROM generate_series(1, 200000) i`);
        await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}`);
        const version = Number((await admin.query("SHOW server_version_num")).rows[0].server_version_num);
        const [fresh] = await readSnapshotTables(admin, [`pub_${s}`], version);
        expect(fresh!.pages).toBeGreaterThan(1000); // 1667 pages of 8 KiB, though relpages is still 0
        expect(fresh!.estimatedRows).toBe(0); // never analyzed: no estimate rather than a wrong one
        await admin.query(`VACUUM ANALYZE ${s}`);
        const [table] = await readSnapshotTables(admin, [`pub_${s}`], version);
        expect(table!.estimatedRows).toBeGreaterThan(190_000);
        expect(table!.estimatedRows).toBeLessThan(210_000);
        const tasks = planTasks([table!], 3, 64);
        expect(tasks.length).toBe(12); // parallel × 4 ranges
        expect(tasks.map((t) => copyCommand(t, "text")).filter((q) => q.includes("ctid <")).length).toBe(11);
      });
    });

    it("an existing slot is refused (its snapshot is gone)", async () => {
      await withFresh(c().config, "exist", async (admin, s) => {
        await admin.query(`CREATE TABLE ${s} (id int PRIMARY KEY)`);
        await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}`);
        await admin.query(`SELECT pg_create_logical_replication_slot('slot_${s}', 'pgoutput')`);
        await expect(replicate({ connection: c().config, slot: { name: `slot_${s}`, create: true }, publications: `pub_${s}`, snapshot: true })).rejects.toMatchObject({
          code: "INVALID_OPTION",
        });
        await admin.query(`SELECT pg_drop_replication_slot('slot_${s}')`);
      });
    });
  });
}

describe("commands", () => {
  it("CREATE_REPLICATION_SLOT exports a snapshot in each syntax; COPY commands apply column lists, filters, ranges", async () => {
    const { createSlotCommand } = await import("../bindings/pg/commands.ts");
    expect(createSlotCommand("s", { exportSnapshot: true, twoPhase: true }, 150000)).toBe(`CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput (SNAPSHOT 'export', TWO_PHASE)`);
    expect(createSlotCommand("s", { exportSnapshot: true }, 140000)).toBe(`CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput EXPORT_SNAPSHOT`);
    const table = { relationId: 1, schema: "a b", name: "t", kind: "r" as const, columns: ["id", "w"], rowFilter: undefined, estimatedRows: 0, pages: 10, metadata: new Uint8Array() };
    expect(copyCommand({ table }, "binary")).toBe(`COPY "a b"."t" ("id", "w") TO STDOUT (FORMAT binary)`);
    expect(copyCommand({ table: { ...table, rowFilter: "(id % 3) <> 0" }, fromPage: 5, toPage: 9 }, "text")).toBe(
      `COPY (SELECT "id", "w" FROM ONLY "a b"."t" WHERE ((id % 3) <> 0) AND ctid >= '(5,0)'::tid AND ctid < '(9,0)'::tid) TO STDOUT`,
    );
    expect(copyCommand({ table: { ...table, kind: "p" }, fromPage: 0, toPage: 4 }, "binary")).toBe(
      `COPY (SELECT "id", "w" FROM "a b"."t" WHERE ctid < '(4,0)'::tid) TO STDOUT (FORMAT binary)`,
    );
  });
});

describe("options", () => {
  it("bad snapshot options and startLsn with a snapshot are INVALID_OPTION before any connection", async () => {
    const base = { connection: "postgres://nobody@127.0.0.1:1/x", slot: "s", publications: "p" };
    const bad = [{ parallel: 0 }, { parallel: 1.5 }, { batchRows: -1 }, { format: "csv" }, { tables: [""] }, { chunkPages: 0 }];
    for (const b of bad) {
      await expect(replicate({ ...base, snapshot: b as never }), JSON.stringify(b)).rejects.toMatchObject({ code: "INVALID_OPTION" });
    }
    await expect(replicate({ ...base, snapshot: true, startLsn: "0/10" })).rejects.toMatchObject({ code: "INVALID_OPTION" });
  });
});

describe("COPY re-framing of hostile bytes", () => {
  const header = Uint8Array.from([0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]);
  const tuple = Uint8Array.from([0, 2, 0, 0, 0, 4, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff]);
  const good = new Uint8Array([...header, ...tuple, ...tuple, 0xff, 0xff]);

  it("a valid stream split anywhere gives the same frames", () => {
    const whole = new CopyReframer({ relationId: 9, columns: 2, format: "binary" });
    whole.push(good);
    whole.end();
    const expected = whole.take();
    expect(whole.rows).toBe(2);
    for (let cut = 0; cut <= good.length; cut++) {
      const r = new CopyReframer({ relationId: 9, columns: 2, format: "binary" });
      r.push(good.subarray(0, cut));
      r.push(good.subarray(cut));
      r.end();
      expect(r.take()).toEqual(expected);
    }
  });

  // The frames a mutated stream re-frames to, decoded by both backends: the same values or the same typed errors.
  const enc = new TextEncoder();
  const relation = frame(Uint8Array.from([
    0x52, 0, 0, 0, 9, ...enc.encode("public"), 0, ...enc.encode("t"), 0, 0x64, 0, 2,
    1, ...enc.encode("a"), 0, 0, 0, 0, 23, 0xff, 0xff, 0xff, 0xff, 0, ...enc.encode("b"), 0, 0, 0, 0, 25, 0xff, 0xff, 0xff, 0xff,
  ]));
  let decoders: Awaited<ReturnType<typeof createDecoder>>[] = [];
  beforeAll(async () => {
    decoders = [await createDecoder({ backend: "wasm" }), await createDecoder({ backend: "baseline" })];
    for (const d of decoders) d.decodeFramed(relation);
  });
  const outcome = (f: () => unknown): unknown => {
    try {
      return canon(f());
    } catch (e) {
      if (!isPgoutputError(e)) throw e;
      return `error ${e.code}`;
    }
  };
  let twinChecks = 0;
  function twins(frames: Uint8Array): void {
    twinChecks++;
    const [wasm, baseline] = decoders.map((d) => outcome(() => {
      const out: unknown[] = [];
      for (const m of d.decodeFramed(frames)) {
        if (m.kind !== "Insert") continue;
        for (let i = 0; i < m.newTuple.length; i++) out.push(outcome(() => m.newTuple.value(i)));
      }
      return out;
    }));
    expect(wasm).toEqual(baseline);
  }

  it("every prefix and every byte mutation: frames or a typed error with field and offset, never anything else; wasm == baseline", () => {
    const check = (bytes: Uint8Array) => {
      const r = new CopyReframer({ relationId: 9, columns: 2, format: "binary", maxTupleBytes: 1 << 16 });
      try {
        r.push(bytes);
        r.end();
        twins(r.take());
      } catch (e) {
        if (!isPgoutputError(e)) throw e;
        expect(e.field).toMatch(/^copy\./);
        expect(e.offset).toBeGreaterThanOrEqual(0);
        expect(e.offset).toBeLessThanOrEqual(bytes.length);
      }
    };
    for (let cut = 0; cut < good.length; cut++) {
      const r = new CopyReframer({ relationId: 9, columns: 2, format: "binary" });
      r.push(good.subarray(0, cut));
      expect(() => r.end()).toThrow(expect.objectContaining({ code: "INCOMPLETE" }));
    }
    for (let i = 0; i < good.length; i++) {
      for (const b of [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff]) {
        const m = Uint8Array.from(good);
        m[i] = b;
        check(m);
      }
    }
    expect(twinChecks).toBeGreaterThan(50); // mutations that still re-frame were decoded by both backends
  });

  it("names the field and offset of a bad length and a wrong field count", () => {
    const r = new CopyReframer({ relationId: 9, columns: 2, format: "binary" });
    const bad = Uint8Array.from(good);
    bad.set([0xff, 0xff, 0xff, 0xfe], header.length + 2);
    expect(() => r.push(bad)).toThrow(expect.objectContaining({ code: "INVALID_LENGTH", field: "copy.tuple[0].field[0].length", offset: header.length + 2 }));
    const three = new CopyReframer({ relationId: 9, columns: 3, format: "binary" });
    expect(() => three.push(good)).toThrow(expect.objectContaining({ code: "COLUMN_COUNT_MISMATCH", offset: header.length }));
  });

  it("text rows: escapes, NULL, wrong field counts", () => {
    const r = new CopyReframer({ relationId: 9, columns: 2, format: "text" });
    r.push(new TextEncoder().encode("a\\tb\\\\c\\n\t\\N\n"));
    r.end();
    expect(r.rows).toBe(1);
    const frames = r.take();
    // [len]['I'][oid]['N'][2]['t'][len 7]"a\tb\\c\n"['n']
    expect(Array.from(frames.subarray(12, 13))).toEqual([0x74]);
    expect(new TextDecoder().decode(frames.subarray(17, 23))).toBe("a\tb\\c\n");
    expect(frames[23]).toBe(0x6e);
    const short = new CopyReframer({ relationId: 9, columns: 2, format: "text" });
    expect(() => short.push(new TextEncoder().encode("only\n"))).toThrow(expect.objectContaining({ code: "COLUMN_COUNT_MISMATCH" }));
    const cut = new CopyReframer({ relationId: 9, columns: 2, format: "text" });
    cut.push(new TextEncoder().encode("a\tb"));
    expect(() => cut.end()).toThrow(expect.objectContaining({ code: "INCOMPLETE" }));
  });
});
