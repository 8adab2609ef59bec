/**
 * Backfill while streaming (`stream.backfill()`) against real PostgreSQL 15
 * and 18: two tables that existed before the slot (one with TOASTed values
 * stored out of line) are backfilled while a writer inserts, updates (the
 * key too, and rows with unchanged TOAST) and deletes in both; a consumer
 * that upserts BackfillRows and applies the live changes must then hold
 * exactly the server's rows. A stream stopped mid-backfill and started
 * again with the saved progress resumes without a gap. A transaction whose
 * commit is in the WAL before a chunk's low watermark but that is still
 * running (waiting for a synchronous standby that never answers) is waited
 * out before the chunk is read. A streamed transaction whose change is in a
 * subtransaction (the change carries the subtransaction's xid) counts for
 * its whole transaction, in the window as in the consumer. A table not in
 * the publication, one without a usable key, and a stream without messages
 * are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg, { type ClientConfig } from "pg";
import { replicate, type BackfillProgress, type ReplicateOptions, type ReplicationStream } from "../bindings/pg/index.ts";
import { Pipeline } from "../bindings/pipeline/run.ts";
import { streamSource } from "../bindings/pipeline/sources.ts";
import type { Records } from "../bindings/pipeline/records.ts";
import { FORMATS } from "../bindings/formats/index.ts";
import { createDecoder } from "../bindings/create-decoder.ts";
import { BACKFILL_PREFIX, PgSnapshot, parseWatermark } from "../bindings/pg/backfill-chunk.ts";
import type { Backfill } from "../bindings/pg/backfill.ts";
import { encode } from "../devkit/encoder/encoder.ts";
import type { Tuple } from "../bindings/tuple.ts";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";

const MAJORS: PgMajor[] = [15, 18];
const clusters = new Map<PgMajor, { cluster: Cluster; config: ClientConfig }>();
let seq = 0;

beforeAll(async () => {
  const started = await Promise.all(MAJORS.map((m) => startCluster(m)));
  for (const cluster of started) {
    clusters.set(cluster.major, { cluster, config: { host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database } });
  }
}, 120_000);

afterAll(async () => {
  for (const c of clusters.values()) await c.cluster.stop();
});

const ITEMS = 2000;
const DOCS = 600;
/** 6400 bytes; with STORAGE EXTERNAL stored out of line, so an Update that leaves it sends it as unchanged TOAST. */
const TOAST = (g: string) => `repeat(md5(${g}::text), 200)`;
const MISSING = "<unchanged TOAST the consumer never had>";
/** docs row 1's title, as a format writes it. */
const TEXT_OF_FIRST_DOC = `"t1"`;

/** The consumer: rows by key (the first column's text), upserted. */
class Replica {
  readonly tables = new Map<string, Map<string, (string | null)[]>>();
  unchangedSeen = 0;
  backfillRows = 0;
  streamCommits = 0;
  /** Commits (plain and streamed) applied: the writer stays within WRITER_LEAD of them. */
  commits = 0;

  #table(name: string): Map<string, (string | null)[]> {
    let t = this.tables.get(name);
    if (t === undefined) this.tables.set(name, (t = new Map()));
    return t;
  }

  /** A row's texts; unchanged TOAST taken from `old` (what the consumer holds), or MISSING. */
  static texts(tuple: Tuple, old: (string | null)[] | undefined): (string | null)[] {
    const out: (string | null)[] = [];
    for (let i = 0; i < tuple.length; i++) {
      const kind = tuple.kind(i);
      out.push(kind === "null" ? null : kind === "unchanged" ? (old?.[i] ?? MISSING) : (tuple.text(i) as string));
    }
    return out;
  }

  upsert(table: string, tuple: Tuple): void {
    this.backfillRows++;
    const row = Replica.texts(tuple, undefined);
    this.#table(table).set(row[0]!, row);
  }

  /** Streamed transactions' changes, applied at their StreamCommit (as a consumer must: they may still abort). */
  readonly #streamed = new Map<number, (() => void)[]>();

  /** The open stream block's xid (a streamed change's own is its subtransaction's when it is in one). */
  #block: number | undefined;

  apply(msg: { kind: string; xid?: number | undefined; relation?: { name: string } | undefined; newTuple?: Tuple; oldTuple?: Tuple | null }): void {
    if (msg.kind === "StreamStart" || msg.kind === "StreamStop") {
      this.#block = msg.kind === "StreamStart" ? msg.xid : undefined;
      return;
    }
    if (msg.kind === "StreamCommit") {
      for (const op of this.#streamed.get(msg.xid!) ?? []) op();
      this.#streamed.delete(msg.xid!);
      return;
    }
    if (msg.kind !== "Insert" && msg.kind !== "Update" && msg.kind !== "Delete") return;
    const op = this.#change(msg.relation!.name, msg.kind, msg.oldTuple ? (msg.oldTuple.text(0) as string) : undefined, msg.newTuple);
    if (this.#block === undefined) return op();
    this.#streamed.set(this.#block, [...(this.#streamed.get(this.#block) ?? []), op]);
  }

  /** A change read now (views die with the next item), applied when the returned function is called. */
  #change(table: string, kind: string, oldKey: string | undefined, newTuple: Tuple | undefined): () => void {
    const t = this.#table(table);
    if (kind === "Delete") return () => void t.delete(oldKey!);
    const newKey = newTuple!.text(0) as string;
    if (newTuple!.unchangedColumns().length > 0) this.unchangedSeen++;
    const texts = Replica.texts(newTuple!, []).map((v, i) => (newTuple!.kind(i) === "unchanged" ? undefined : v));
    return () => {
      const old = t.get(oldKey ?? newKey);
      if (oldKey !== undefined) t.delete(oldKey);
      t.set(newKey, texts.map((v, i) => (v === undefined ? (old?.[i] ?? MISSING) : v)));
    };
  }

  rows(table: string): string[] {
    return [...(this.tables.get(table)?.values() ?? [])].map((r) => JSON.stringify(r)).sort();
  }
}

/** The server's rows, every column as its output text. */
async function serverRows(client: pg.Client, table: string): Promise<string[]> {
  const r = await client.query<string[]>({ text: `SELECT * FROM ${table}`, rowMode: "array", types: { getTypeParser: () => (v: string) => v } });
  return r.rows.map((row) => JSON.stringify(row)).sort();
}

/** The consumer holds exactly the server's items and docs: no row missing, none older, no column it was never sent. */
async function expectServer(admin: pg.Client, s: string, replica: Replica): Promise<void> {
  for (const table of ["items", "docs"]) {
    const mine = replica.rows(table);
    expect(mine.filter((r) => r.includes(MISSING)), table).toEqual([]);
    expect(mine, table).toEqual(await serverRows(admin, `${s}.${table}`));
  }
}

/** Schema, tables with rows from before the slot, the publication (items, docs, done; not other, nokey). */
async function setUp(admin: pg.Client, s: string): Promise<void> {
  await admin.query(`CREATE SCHEMA ${s}`);
  await admin.query(`CREATE TABLE ${s}.items (id int PRIMARY KEY, v text, n int)`);
  await admin.query(`INSERT INTO ${s}.items SELECT g, 'v' || g, g FROM generate_series(1, ${ITEMS}) g`);
  await admin.query(`CREATE TABLE ${s}.docs (id int PRIMARY KEY, title text, body text)`);
  await admin.query(`ALTER TABLE ${s}.docs ALTER body SET STORAGE EXTERNAL`);
  await admin.query(`INSERT INTO ${s}.docs SELECT g, 't' || g, CASE WHEN g % 3 <> 0 THEN ${TOAST("g")} END FROM generate_series(1, ${DOCS}) g`);
  await admin.query(`CREATE TABLE ${s}.done (id int PRIMARY KEY)`);
  await admin.query(`CREATE TABLE ${s}.other (id int PRIMARY KEY)`);
  await admin.query(`CREATE TABLE ${s}.nokey (a int, b text)`);
  await admin.query(`ALTER TABLE ${s}.nokey REPLICA IDENTITY FULL`);
  await admin.query(`CREATE PUBLICATION pub_${s} FOR TABLE ${s}.items, ${s}.docs, ${s}.done, ${s}.nokey`);
}

/** setUp, then a stream of the schema's publication on a temporary slot, with messages (the watermarks). */
async function setUpStream(admin: pg.Client, config: ClientConfig, s: string, options: Partial<ReplicateOptions> = {}): Promise<ReplicationStream> {
  await setUp(admin, s);
  return replicate({ connection: config, slot: { name: `slot_${s}`, create: true, temporary: true }, publications: `pub_${s}`, messages: true, ...options });
}

/**
 * How many commits the writer may be ahead of what the consumer applied. An
 * unpaced writer outruns the consumer on a busy machine, and each chunk then
 * waits for the stream to reach its high watermark behind a growing backlog
 * (runs of 180 s and more were seen); bounded, a run's length is the
 * backfill's own.
 */
const WRITER_LEAD = 20;

/** Inserts, updates (values, keys, rows with TOAST left unchanged) and deletes in both tables, one transaction after another, until stopped, never more than WRITER_LEAD commits ahead of `replica`. */
function startWriter(config: ClientConfig, s: string, replica: Replica, big = false): { commits: () => number; stop: () => Promise<void> } {
  const writer = new pg.Client(config);
  let writing = true;
  let commits = 0;
  const done = (async () => {
    await writer.connect();
    for (let i = 1, next = 1_000_000; writing; i++, next++) {
      while (writing && commits - replica.commits > WRITER_LEAD) await new Promise((r) => setTimeout(r, 5));
      if (!writing) break;
      const k = (p: number, n: number) => 1 + ((i * p) % n);
      await writer.query(`BEGIN;
        INSERT INTO ${s}.items VALUES (${next}, 'new', ${i});
        UPDATE ${s}.items SET v = 'u${i}' WHERE id = ${k(7919, ITEMS)};
        UPDATE ${s}.items SET id = -id WHERE id = ${k(104729, ITEMS)};
        DELETE FROM ${s}.items WHERE id = ${k(1299709, ITEMS)};
        INSERT INTO ${s}.docs VALUES (${next}, 'new', ${i % 2 === 0 ? `(SELECT ${TOAST(String(i))})` : "NULL"});
        UPDATE ${s}.docs SET title = 'u${i}' WHERE id = ${k(31, DOCS)};
        UPDATE ${s}.docs SET id = -id WHERE id = ${k(37, DOCS)};
        DELETE FROM ${s}.docs WHERE id = ${k(41, DOCS)};
        ${big && i % 5 === 0 ? `SAVEPOINT big; UPDATE ${s}.items SET n = n + 1 WHERE id % 2 = ${i % 2}; RELEASE SAVEPOINT big;` : ""}
        COMMIT`);
      commits++;
    }
  })();
  return {
    commits: () => commits,
    stop: async () => {
      writing = false;
      try {
        await done;
      } finally {
        await writer.end();
      }
    },
  };
}

/**
 * Consumes `stream` into `replica` (acknowledging each commit once applied)
 * until `until` says so; returns the progress of the last backfill item.
 */
async function consume(
  stream: ReplicationStream, replica: Replica, until: (item: { kind: string; table?: string }, completes: number) => boolean,
  progress: Map<string, BackfillProgress>, onRow?: (table: string, key: number) => void,
): Promise<number> {
  let completes = 0;
  for await (const item of stream) {
    if (item.kind === "PrimaryKeepalive") continue;
    if (item.kind === "Message") throw new Error(`a logical decoding message reached the consumer: ${item.prefix}`); // watermarks are filtered out
    if (item.kind === "BackfillRow") {
      replica.upsert(item.relation.name, item.tuple);
      onRow?.(item.relation.name, Number(item.tuple.text(0)));
      progress.set(item.progress.table, item.progress);
    } else if (item.kind === "BackfillComplete") {
      completes++;
      progress.set(item.progress.table, item.progress);
    } else {
      replica.apply(item);
      if (item.kind === "StreamCommit") replica.streamCommits++;
      if (item.kind === "Commit" || item.kind === "StreamCommit") {
        replica.commits++;
        stream.ack(item.endLsn);
      }
    }
    const table = item.kind === "Insert" ? item.relation?.name : undefined;
    if (until({ kind: item.kind, table }, completes)) break;
  }
  return completes;
}

/**
 * A `consume` end for a backfill of both tables: once both are complete, `settle()` (the writer stopped,
 * say), then a row into `done`; the end is that row, so every change before it has been consumed.
 */
function untilDone(admin: pg.Client, s: string, settle: () => Promise<unknown>): (item: { kind: string; table?: string }, completes: number) => boolean {
  let settled = false;
  return (item, completes) => {
    if (completes === 2 && !settled) {
      settled = true;
      void settle().then(() => admin.query(`INSERT INTO ${s}.done VALUES (1)`));
    }
    return item.kind === "Insert" && item.table === "done";
  };
}

/** One test's run: its schema's name, an admin connection, and the stream and writer it started (replaced or cleared as it goes). */
interface Run {
  readonly s: string;
  readonly admin: pg.Client;
  stream?: ReplicationStream;
  writer?: ReturnType<typeof startWriter>;
}

/** Runs `body` on a new schema name and admin connection; however it ends, its writer and stream stop, then the connection ends. */
async function withRun(config: ClientConfig, body: (run: Run) => Promise<void>): Promise<void> {
  const run: Run = { s: `bf${++seq}`, admin: new pg.Client(config) };
  await run.admin.connect();
  try {
    await body(run);
  } finally {
    await run.writer?.stop().catch(() => {});
    await run.stream?.stop();
    await run.admin.end();
  }
}

describe("watermarks and snapshots", () => {
  it("a snapshot sees what committed before it: below xmin, or below xmax and not running; 32-bit xids placed by xmax's epoch", () => {
    const s = new PgSnapshot("100:110:102,105");
    expect([99, 100, 101, 103, 109].map((x) => s.sees(x))).toEqual([true, true, true, true, true]);
    expect([102, 105, 110, 200].map((x) => s.sees(x))).toEqual([false, false, false, false]);
    // Epoch 1: xmax 2^32 + 10; xid 0xFFFFFFF0 is 2^32 - 16 (the epoch before), 5 is 2^32 + 5.
    const wrapped = new PgSnapshot(`${2 ** 32 - 20}:${2 ** 32 + 10}:${2 ** 32 + 5}`);
    expect(wrapped.sees(0xfffffff0)).toBe(true);
    expect(wrapped.sees(5)).toBe(false);
    expect(wrapped.sees(7)).toBe(true);
    expect(wrapped.sees(11)).toBe(false);
  });

  it("a watermark's content is read back, anything else is none", () => {
    expect(parseWatermark(JSON.stringify({ run: "r", seq: 3, mark: "high" }))).toEqual({ run: "r", seq: 3, mark: "high" });
    for (const text of ["", "{", "null", "[]", JSON.stringify({ run: "r", seq: "3", mark: "high" }), JSON.stringify({ run: "r", seq: 3, mark: "mid" })]) {
      expect(parseWatermark(text), text).toBeUndefined();
    }
  });
});

/** A backfill under a writer (held within WRITER_LEAD of the consumer). */
const UNDER_WRITER_MS = 90_000;

for (const major of MAJORS) {
  describe(`PostgreSQL ${major}`, () => {
    const c = () => clusters.get(major)!;

    for (const streamed of [false, true]) it(`backfills two tables under inserts, updates (keys, unchanged TOAST) and deletes${streamed ? ", large transactions streamed" : ""}: the replay equals the server`, () => withRun(c().config, async (run) => {
      const { s, admin } = run;
      await setUp(admin, s);
      // Streamed: the walsender streams a transaction once it holds 64 kB (every fifth one updates 1000 rows, in a subtransaction).
      const connection = streamed ? { ...c().config, options: "-c logical_decoding_work_mem=64kB" } : c().config;
      const stream = (run.stream = await replicate({ connection, slot: { name: `slot_${s}`, create: true }, publications: `pub_${s}`, messages: true, ack: "manual", streaming: streamed }));
      const replica = new Replica();
      const w = (run.writer = startWriter(c().config, s, replica, streamed));
      while (w.commits() < 3) await new Promise((r) => setTimeout(r, 5));
      const backfill = await stream.backfill({ tables: [`${s}.docs`, `${s}.items`], chunkRows: 250 });
      const progress = new Map<string, BackfillProgress>();
      let commitsAtComplete = 0;
      await consume(stream, replica, untilDone(admin, s, () => {
        commitsAtComplete = w.commits();
        return w.stop();
      }), progress);
      run.writer = undefined;
      expect(commitsAtComplete).toBeGreaterThan(5); // the writer ran throughout
      const stats = backfill.stats;
      expect(stats.rows).toBe(replica.backfillRows);
      expect(stats.chunks).toBeGreaterThanOrEqual(Math.ceil(ITEMS / 250) + Math.ceil(DOCS / 250));
      expect(replica.unchangedSeen).toBeGreaterThan(0); // Updates left TOASTed values out
      expect(stats.reread).toBeGreaterThan(0); // and their rows were read again (docs first: the writer runs throughout)
      if (streamed) expect(replica.streamCommits).toBeGreaterThan(0);
      expect(backfill.done).toBe(true);
      expect(progress.get(`${s}.items`)?.done).toBe(true);
      expect(progress.get(`${s}.docs`)?.done).toBe(true);
      await expectServer(admin, s, replica);
    }), UNDER_WRITER_MS);

    it("a transaction whose commit precedes the low watermark but that is still in the proc array (its xid past the snapshot's xmax) is waited out", () => withRun(c().config, async (run) => {
      const { s, admin } = run;
      // A commit waiting for a synchronous standby that never comes: its record is in the WAL (the stream has it), its xid still running.
      const held = new pg.Client(c().config);
      await held.connect();
      const pid = (await held.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      let update: Promise<unknown> | undefined;
      try {
        const stream = (run.stream = await setUpStream(admin, c().config, s, { ack: "manual" }));
        await admin.query("ALTER SYSTEM SET synchronous_standby_names = 'pgoutput_wasm_nobody'");
        await admin.query("SELECT pg_reload_conf()");
        await held.query("SET synchronous_commit = on");
        // Until the checkpointer has read the setting a commit does not wait: that update is an ordinary change, and another is tried.
        for (let tries = 0; update === undefined; tries++) {
          if (tries === 1000) throw new Error("synchronous_standby_names never took effect");
          let finished = false;
          const q = held.query(`UPDATE ${s}.items SET n = n + 1 WHERE id = 5`).then(() => (finished = true));
          while (!finished && update === undefined) {
            const r = await admin.query<{ wait_event: string | null }>("SELECT wait_event FROM pg_stat_activity WHERE pid = $1", [pid]);
            if (r.rows[0]?.wait_event === "SyncRep") update = q;
            else await new Promise((r) => setTimeout(r, 2));
          }
        }
        const backfill = await stream.backfill({ tables: [`${s}.items`, `${s}.docs`], chunkRows: 5000 });
        // Released once the chunk is read (the fault: it did not wait for the update), else after half a second (it waits, as it must).
        const release = (async () => {
          for (const start = Date.now(); backfill.stats.chunks === 0 && Date.now() - start < 500;) await new Promise((r) => setTimeout(r, 5));
          await admin.query("SELECT pg_cancel_backend($1)", [pid]);
          await update;
        })();
        const replica = new Replica();
        await consume(stream, replica, untilDone(admin, s, () => release), new Map());
        await release;
        await expectServer(admin, s, replica);
      } finally {
        await admin.query("ALTER SYSTEM RESET synchronous_standby_names").catch(() => {});
        await admin.query("SELECT pg_reload_conf()").catch(() => {});
        if (update !== undefined) await admin.query("SELECT pg_cancel_backend($1)", [pid]).catch(() => {});
        await update?.catch(() => {});
        await held.end();
      }
    }), 30_000);

    it("a streamed transaction committed between the watermarks, unseen by the chunk, whose change is in a subtransaction (its xid the subtransaction's) makes the chunk be read again", () => withRun(c().config, async (run) => {
      const { s, admin } = run;
      const stream = (run.stream = await setUpStream(admin, c().config, s));
      const relationId = Number((await admin.query<{ oid: string }>(`SELECT '${s}.items'::regclass::oid AS oid`)).rows[0]!.oid);
      // Past the chunk's snapshot (taken later, within 2^31 of it): a transaction it does not see.
      const top = Number((await admin.query<{ x: string }>("SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x")).rows[0]!.x) + 1000;
      const backfill = (await stream.backfill({ tables: [`${s}.items`], chunkRows: 5000 })) as Backfill;
      // The stream is not iterated: its window sees only the messages fed here, as decoded from the wire, around the chunk read meanwhile.
      const decoder = await createDecoder();
      const feed = (e: { bytes: Uint8Array }) => backfill.observe(decoder.decode(e.bytes));
      const mark = (m: "low" | "high") => encode.message({ lsn: 1n, prefix: BACKFILL_PREFIX, content: JSON.stringify({ run: backfill.run, seq: 1, mark: m }) });
      const relation = { relationId, namespace: s, relationName: "items" };
      feed(encode.relation({ ...relation, columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }, { name: "n", typeId: 23 }] }));
      expect(feed(mark("low"))).toBe(true);
      feed(encode.streamStart({ xid: top, firstSegment: true }));
      feed(encode.update({ xid: top + 1, relation, newTuple: ["5", "v5", "6"] }));
      feed(encode.streamStop());
      feed(encode.streamCommit({ xid: top, commitLsn: 2n, endLsn: 3n, commitTime: 0n }));
      while (backfill.stats.chunks === 0) await new Promise((r) => setTimeout(r, 5));
      expect(feed(mark("high"))).toBe(true);
      // Not handed over (the row may be older than the transaction's change): read again.
      expect(backfill.take()).toBeUndefined();
      while (backfill.stats.repeated === 0) await new Promise((r) => setTimeout(r, 5));
      expect(backfill.stats).toMatchObject({ rows: 0, repeated: 1 }); // and it is being read again (its high watermark is never fed)
      await backfill.stop();
    }), 30_000);

    it("a stream stopped mid-backfill resumes from the saved progress without a gap", () => withRun(c().config, async (run) => {
      const { s, admin } = run;
      await setUp(admin, s);
      const slot = { name: `slot_${s}`, create: true };
      const options = { connection: c().config, publications: `pub_${s}`, messages: true, ack: "manual" as const };
      const first = (run.stream = await replicate({ ...options, slot }));
      const replica = new Replica();
      const w = (run.writer = startWriter(c().config, s, replica));
      while (w.commits() < 3) await new Promise((r) => setTimeout(r, 5));
      const tables = [`${s}.items`, `${s}.docs`];
      await first.backfill({ tables, chunkRows: 150 });
      const progress = new Map<string, BackfillProgress>();
      // Stop in the middle of items: after 700 rows (the fifth chunk, part way through).
      await consume(first, replica, () => replica.backfillRows >= 700, progress);
      await first.stop();
      const saved = [...progress.values()];
      expect(saved[0]?.table).toBe(`${s}.items`);
      expect(saved[0]?.done).toBe(false);
      expect(saved[0]?.lastKey).not.toBeNull();
      const rowsBefore = replica.backfillRows;

      const stream = (run.stream = await replicate({ ...options, slot: { name: slot.name } }));
      const again = await stream.backfill({ tables, chunkRows: 150, progress: saved });
      const lastKey = Number(saved[0]!.lastKey![0]);
      const positiveKeys: number[] = [];
      await consume(stream, replica, untilDone(admin, s, () => w.stop()), progress, (table, key) => {
        if (table === "items" && key > 0) positiveKeys.push(key);
      });
      run.writer = undefined;
      // The second run read the rows after the saved key (and keys to read again, negative here), not the table again.
      expect(positiveKeys.length).toBeGreaterThan(0);
      expect(Math.min(...positiveKeys)).toBeGreaterThan(lastKey);
      expect(rowsBefore).toBeGreaterThanOrEqual(700);
      expect(again.done).toBe(true);
      await expectServer(admin, s, replica);
    }), UNDER_WRITER_MS);

    it("through the pipeline, jsonl and wal2json write backfill rows with backfill: ids no change shares", () => withRun(c().config, async (run) => {
      const { s, admin } = run;
      await setUp(admin, s);
      for (const name of ["jsonl", "wal2json"]) {
        const format = FORMATS[name]!;
        const decoder = await createDecoder({ values: format.values() });
        const stream = await replicate({
          connection: c().config, slot: { name: `slot_${s}_${name}`, create: true, temporary: true }, publications: `pub_${s}`, messages: true, ack: "manual", decoder,
        });
        const records: { id: string; kind: string; table: string | undefined; text: string }[] = [];
        let pipeline: Pipeline | undefined;
        let complete = false;
        const sink = {
          name: "test",
          write: async (r: Records) => {
            for (let i = 0; i < r.length; i++) {
              const info = r.record(i);
              records.push({ id: info.id, kind: info.kind, table: info.table, text: new TextDecoder().decode(info.bytes) });
            }
          },
          close: async () => {},
        };
        pipeline = new Pipeline({
          source: streamSource(stream), format: format.create({ decoder }, {}), sink, replayDecoder: await createDecoder({ values: format.values() }),
          onItem: (item) => {
            if (item.kind === "BackfillComplete") {
              complete = true;
              void admin.query(`UPDATE ${s}.items SET v = 'after' WHERE id = 1`);
            } else if (item.kind === "Commit" && complete) pipeline?.stop(); // that update's: the last item
          },
        });
        const backfill = await stream.backfill({ tables: [`${s}.docs`], chunkRows: 100, decoder: await createDecoder({ values: format.values() }) });
        await pipeline.run();
        expect(backfill.done).toBe(true);
        const rows = records.filter((r) => r.kind === "snapshot");
        expect(rows.length, name).toBe(DOCS);
        expect(rows.every((r) => /^backfill:[0-9A-F]+\/[0-9A-F]+:\d+$/.test(r.id)), name).toBe(true);
        const changes = records.filter((r) => r.kind !== "snapshot");
        expect(changes.length, name).toBeGreaterThan(0);
        expect(new Set(records.map((r) => r.id)).size, name).toBe(records.length);
        expect(rows[0]!.text, name).toContain(name === "jsonl" ? `"action":"S"` : `"kind":"insert"`);
        expect(rows[0]!.text, name).toContain(TEXT_OF_FIRST_DOC);
      }
    }), 60_000);

    it("a backfill whose connection is lost ends the iteration with a ReplicationError naming the table", () => withRun(c().config, async (run) => {
      const { s, admin } = run;
      const stream = (run.stream = await setUpStream(admin, c().config, s));
      await stream.backfill({ tables: [`${s}.items`], chunkRows: 50 });
      let rows = 0;
      const iteration = (async () => {
        for await (const item of stream) {
          if (item.kind !== "BackfillRow" || ++rows !== 1) continue;
          await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgoutput-wasm backfill'");
        }
      })();
      await expect(iteration).rejects.toMatchObject({ name: "ReplicationError", message: expect.stringMatching(new RegExp(`backfill of ${s}\\.items`)) });
      expect(rows).toBeLessThan(ITEMS);
    }), 30_000);

    it("refuses a table not in the publication, one without a usable key, a stream without messages, one iterated by transactions()", () => withRun(c().config, async (run) => {
      const { s, admin } = run;
      let stream: ReplicationStream | undefined;
      let plain: ReplicationStream | undefined;
      try {
        await setUp(admin, s);
        stream = await replicate({ connection: c().config, slot: { name: `slot_${s}`, create: true }, publications: `pub_${s}`, messages: true });
        await expect(stream.backfill({ tables: [`${s}.other`] })).rejects.toThrow(new RegExp(`backfill: ${s}\\.other is not a table of the publication pub_${s}`));
        await expect(stream.backfill({ tables: [`${s}.nokey`] })).rejects.toThrow(/no usable key: it has no primary key nor a unique index on NOT NULL columns/);
        await expect(stream.backfill({ tables: [`${s}.items`], chunkRows: 0 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
        stream.transactions();
        await expect(stream.backfill({ tables: [`${s}.items`] })).rejects.toThrow(/come with the stream's message iteration/);
        plain = await replicate({ connection: c().config, slot: { name: `slot2_${s}`, create: true }, publications: `pub_${s}` });
        await expect(plain.backfill({ tables: [`${s}.items`] })).rejects.toThrow(/without messages: true/);
      } finally {
        await stream?.stop();
        await plain?.stop();
        await admin.query(`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name IN ('slot_${s}', 'slot2_${s}')`).catch(() => {});
      }
    }), 30_000);
  });
}
