// SQL workloads that produce pgoutput streams, with what a decoder must find
// in them. Each scenario makes its own uniquely named schema, tables,
// publication(s) and slot, runs its workload, captures the messages with
// pg_logical_slot_get_binary_changes and cleans up after itself.
//
// Scenarios may be started concurrently on one cluster, but they run one at a
// time (a per-cluster queue): logical decoding sees every transaction in the
// database, and a concurrent scenario's large or prepared transactions would
// show up as empty Stream Start/Stop or Begin Prepare/Prepare framing in
// another scenario's slot. One at a time, each capture holds only its own
// transactions.
//
// `expected` is JSON-friendly (it is also stored in test/fixtures/index.json):
//   - OIDs and xids are numbers (xid = low 32 bits of pg_current_xact_id()),
//   - LSNs are strings as PostgreSQL prints them ("0/17864C0"),
//   - timestamps are ISO strings with 6 fractional digits, UTC ("...T...123456Z"),
//   - tuple cells are `Cell`s: the value as text (what `col::text` gives, the
//     same output function pgoutput uses), null for NULL, { unchanged: true }
//     for an unchanged TOASTed value (sent as 'u'), or { md5, length } for a
//     value too large to keep (md5 hex of its UTF-8 bytes, length in bytes).

import { createHash } from "node:crypto";
import type { Client } from "pg";
import type { Cluster, PgMajor } from "../cluster/cluster.ts";
import { createSlot, dropSlot, getChanges, type SlotRow } from "./slot.ts";

// ------------------------------------------------------------------ types

export type Cell = string | null | { unchanged: true } | { md5: string; length: number };

export interface ExpectedColumn {
  name: string;
  typeOid: number;
  typmod: number;
  /** Flag bit 1 in the Relation message: part of the replica identity. */
  key: boolean;
}

export interface ExpectedRelation {
  oid: number;
  /** As in the Relation message ("" would stand for pg_catalog). */
  namespace: string;
  name: string;
  replicaIdentity: "d" | "f" | "i" | "n";
  columns: ExpectedColumn[];
}

/** One message inside Begin ... Commit, in order (Relation and Type messages left out). */
export type ExpectedChange =
  | {
      op: "I" | "U" | "D";
      /** Key into expected.relations. */
      relation: string;
      /** Old key tuple ('K'): replica identity columns, null for the others. */
      key?: Cell[];
      /** Whole old row ('O', REPLICA IDENTITY FULL). */
      old?: Cell[];
      /** New row ('N'). */
      new?: Cell[];
    }
  | {
      op: "T";
      /** Keys into expected.relations, in message order: the statement's tables, then the ones CASCADE added. */
      relations: string[];
      /** Bit 0: CASCADE, bit 1: RESTART IDENTITY. */
      options: number;
    }
  | {
      op: "M";
      transactional: boolean;
      prefix: string;
      contentHex: string;
      /** The message's LSN field (= what pg_logical_emit_message returned). */
      lsn: string;
    };

/** Rows id in [from, to] inserted by (sub)transaction xid: streamed changes carry this xid, not the top-level one. */
export interface IdRange {
  from: number;
  to: number;
  xid: number;
}

/** A two-phase transaction of the twophase scenario, as its workload made it (the expectation's `prepared`). */
export interface PreparedTxn {
  gid: string;
  xid: number;
  outcome: "commit" | "rollback";
  streamed: boolean;
  prepareTime: string;
  commitTime: string | null;
  rollbackTimeRange: [string, string] | null;
  rows: IdRange;
  lsnRange: [string, string];
}

export interface ExpectedTxn {
  xid: number;
  /** Commit time (pg_xact_commit_timestamp; track_commit_timestamp is on). */
  commitTime: string | null;
  /** The commit record lies in [lsnRange[0], lsnRange[1]]: bounds for Begin's final LSN and Commit's LSNs. */
  lsnRange: [string, string];
  changes: ExpectedChange[];
}

export interface ScenarioResult<E = any> {
  name: string;
  major: PgMajor;
  /** server_version */
  version: string;
  slot: string;
  /** Whether the slot was created with two_phase = true. */
  twoPhase: boolean;
  publications: string[];
  /** Options given to pg_logical_slot_get_binary_changes. */
  options: Record<string, string>;
  rows: SlotRow[];
  expected: E;
}

export type Scenario<E = any> = (c: Cluster) => Promise<ScenarioResult<E>>;

export interface ScenarioDef {
  name: string;
  description: string;
  /** Major versions the scenario runs on. */
  majors: PgMajor[];
  run: Scenario;
}

// ---------------------------------------------------------------- helpers

/** Quotes an SQL identifier. */
export const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;
/** Quotes an SQL string literal. */
export const literal = (s: string): string => `'${s.replace(/'/g, "''")}'`;

let counter = 0;
function uniqueId(): string {
  counter++;
  return `${Date.now().toString(36)}${process.pid.toString(36)}${counter.toString(36)}${Math.floor(Math.random() * 36 ** 3).toString(36)}`;
}

const queues = new WeakMap<Cluster, Promise<unknown>>();

/** Runs fn after every scenario queued before it on the same cluster. */
function exclusive<T>(c: Cluster, fn: () => Promise<T>): Promise<T> {
  const prev = queues.get(c) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  queues.set(
    c,
    next.catch(() => {}),
  );
  return next;
}

interface Ctx {
  c: Cluster;
  major: PgMajor;
  id: string;
  /** Schema name (unquoted). */
  schema: string;
  /** Quoted schema name. */
  s: string;
  slot: string;
  /** Workload session; scenarios run their transactions on it. */
  db: Client;
  relations: Record<string, ExpectedRelation>;
  /** Creates a publication (cleaned up afterwards); returns its name. */
  publication(suffix: string, tables: string[], withClause?: string): Promise<string>;
  /** Reads a relation's catalog facts into ctx.relations[key]. */
  relation(key: string, table: string): Promise<ExpectedRelation>;
  /** Registers a cleanup step, run after the capture even on failure. */
  defer(fn: () => Promise<unknown>): void;
}

interface Spec<E> {
  name: string;
  twoPhase?: boolean;
  schemaName?: (id: string) => string;
  options: (major: PgMajor) => Record<string, string>;
  /** DDL; the slot is created after it and before the workload. */
  setup(ctx: Ctx): Promise<void>;
  workload(ctx: Ctx): Promise<E>;
}

async function runSpec<E>(c: Cluster, spec: Spec<E>): Promise<ScenarioResult<E & { schema: string; relations: Record<string, ExpectedRelation> }>> {
  return exclusive(c, async () => {
    const id = uniqueId();
    const schema = spec.schemaName ? spec.schemaName(id) : `pgw_${spec.name.replace(/-/g, "_")}_${id}`;
    const slot = `pgw_${spec.name.replace(/-/g, "_")}_${id}`.slice(0, 63);
    const publications: string[] = [];
    const deferred: (() => Promise<unknown>)[] = [];
    const db = await c.connect();
    let slotCreated = false;
    const ctx: Ctx = {
      c,
      major: c.major,
      id,
      schema,
      s: ident(schema),
      slot,
      db,
      relations: {},
      async publication(suffix, tables, withClause) {
        const name = `pgw_${spec.name.replace(/-/g, "_")}_${suffix}_${id}`.slice(0, 63);
        await db.query(`CREATE PUBLICATION ${ident(name)} FOR TABLE ${tables.join(", ")}${withClause ? ` WITH (${withClause})` : ""}`);
        publications.push(name);
        return name;
      },
      async relation(key, table) {
        const r = await relationInfo(db, schema, table);
        ctx.relations[key] = r;
        return r;
      },
      defer(fn) {
        deferred.push(fn);
      },
    };
    try {
      await db.query(`CREATE SCHEMA ${ctx.s}`);
      await spec.setup(ctx);
      await createSlot(c, slot, { twoPhase: spec.twoPhase ?? false });
      slotCreated = true;
      const expected = await spec.workload(ctx);
      const options = { ...spec.options(c.major), publication_names: publications.join(",") };
      const rows = await getChanges(c, slot, options);
      return {
        name: spec.name,
        major: c.major,
        version: c.version,
        slot,
        twoPhase: spec.twoPhase ?? false,
        publications,
        options,
        rows,
        expected: { schema, relations: ctx.relations, ...expected },
      };
    } finally {
      // Never leave a prepared transaction behind: it would block the next
      // slot creation forever.
      try {
        const prepared = await c.query<{ gid: string }>("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE $1", [`%${id}%`]);
        for (const p of prepared) await c.query(`ROLLBACK PREPARED ${literal(p.gid)}`);
      } catch {
        /* ignore */
      }
      try {
        await db.query("ROLLBACK");
      } catch {
        /* ignore */
      }
      for (const fn of deferred.reverse()) await fn().catch(() => {});
      if (slotCreated) await dropSlot(c, slot).catch(() => {});
      for (const p of publications) await c.query(`DROP PUBLICATION IF EXISTS ${ident(p)}`).catch(() => {});
      await c.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`).catch(() => {});
      await db.end().catch(() => {});
    }
  });
}

async function relationInfo(db: Client, schema: string, table: string): Promise<ExpectedRelation> {
  const rel = await db.query<{ oid: string; nspname: string; relname: string; ri: string }>(
    `SELECT c.oid::int8 AS oid, n.nspname, c.relname, c.relreplident::text AS ri
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    [schema, table],
  );
  const r = rel.rows[0];
  if (!r) throw new Error(`no relation ${schema}.${table}`);
  const cols = await db.query<{ attname: string; typoid: string; typmod: number; key: boolean }>(
    `SELECT a.attname, a.atttypid::int8 AS typoid, a.atttypmod AS typmod,
            (c.relreplident = 'f' OR EXISTS (
               SELECT 1 FROM pg_index i
                WHERE i.indrelid = a.attrelid AND a.attnum = ANY (i.indkey::int2[])
                  AND ((c.relreplident = 'd' AND i.indisprimary) OR (c.relreplident = 'i' AND i.indisreplident)))) AS key
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [r.oid],
  );
  return {
    oid: Number(r.oid),
    namespace: r.nspname === "pg_catalog" ? "" : r.nspname,
    name: r.relname,
    replicaIdentity: r.ri as ExpectedRelation["replicaIdentity"],
    columns: cols.rows.map((x) => ({ name: x.attname, typeOid: Number(x.typoid), typmod: x.typmod, key: x.key })),
  };
}

function qualified(rel: ExpectedRelation): string {
  return `${ident(rel.namespace)}.${ident(rel.name)}`;
}

/** The rows matching `where`, each column as text (null for NULL). */
async function rowsText(ctx: Ctx, rel: ExpectedRelation, where: string, orderBy?: string): Promise<(string | null)[][]> {
  const list = rel.columns.length ? rel.columns.map((c) => `${ident(c.name)}::text`).join(", ") : "1";
  const res = await ctx.db.query<(string | null)[]>({
    text: `SELECT ${list} FROM ${qualified(rel)} WHERE ${where}${orderBy ? ` ORDER BY ${orderBy}` : ""}`,
    rowMode: "array",
  });
  return rel.columns.length ? res.rows : res.rows.map(() => []);
}

async function rowText(ctx: Ctx, rel: ExpectedRelation, where: string): Promise<(string | null)[]> {
  const rows = await rowsText(ctx, rel, where);
  if (rows.length !== 1) throw new Error(`expected one row in ${rel.name} where ${where}, got ${rows.length}`);
  return rows[0]!;
}

/** Keeps the replica identity columns, nulls the others (a 'K' tuple). */
function keyOnly(rel: ExpectedRelation, row: Cell[]): Cell[] {
  return row.map((v, i) => (rel.columns[i]!.key ? v : null));
}

async function currentXid(db: Client): Promise<number> {
  const r = await db.query<{ x: string }>("SELECT (pg_current_xact_id()::text::int8 % 4294967296) AS x");
  return Number(r.rows[0]!.x);
}

async function insertLsn(db: Client): Promise<string> {
  const r = await db.query<{ l: string }>("SELECT pg_current_wal_insert_lsn()::text AS l");
  return r.rows[0]!.l;
}

const ISO_US = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

async function commitTime(db: Client, xid: number): Promise<string | null> {
  const r = await db.query<{ t: string | null }>(
    `SELECT to_char(pg_xact_commit_timestamp($1::text::xid) AT TIME ZONE 'UTC', ${ISO_US}) AS t`,
    [String(xid)],
  );
  return r.rows[0]!.t;
}

async function clockIso(db: Client): Promise<string> {
  const r = await db.query<{ t: string }>(`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', ${ISO_US}) AS t`);
  return r.rows[0]!.t;
}

/** Runs body in BEGIN ... COMMIT on the workload session and records the transaction. */
async function committed(ctx: Ctx, body: (changes: ExpectedChange[]) => Promise<void>): Promise<ExpectedTxn> {
  const { db } = ctx;
  await db.query("BEGIN");
  const xid = await currentXid(db);
  const changes: ExpectedChange[] = [];
  await body(changes);
  const before = await insertLsn(db);
  await db.query("COMMIT");
  const after = await insertLsn(db);
  return { xid, commitTime: await commitTime(db, xid), lsnRange: [before, after], changes };
}

const md5 = (s: string) => createHash("md5").update(s, "utf8").digest("hex");

/**
 * The setup of the scenarios that need one table: creates it in the
 * scenario's schema with `columns`, publishes it in publication "pub" and
 * records it in expected.relations under its own name.
 */
async function publishedTable(ctx: Ctx, table: string, columns: string): Promise<void> {
  await ctx.db.query(`CREATE TABLE ${ctx.s}.${table} (${columns})`);
  await ctx.publication("pub", [`${ctx.s}.${table}`]);
  await ctx.relation(table, table);
}

// --------------------------------------------------------------- scenarios

/**
 * INSERT/UPDATE/DELETE under each replica identity, protocol 1.
 * expected: relations ri_default (PK), ri_full, ri_index (unique index on
 * `code`), ri_nothing (only in an insert-only publication); transactions:
 * [inserts, updates, deletes] with the exact tuples, 'K'/'O' as applicable.
 */
export const replicaIdentity: Scenario = (c) =>
  runSpec(c, {
    name: "replica-identity",
    options: () => ({ proto_version: "1" }),
    async setup(ctx) {
      const { db, s } = ctx;
      await db.query(`
        CREATE TABLE ${s}.ri_default (id int PRIMARY KEY, name text, qty numeric(10,2));
        CREATE TABLE ${s}.ri_full (id int, name text, qty numeric(10,2));
        ALTER TABLE ${s}.ri_full REPLICA IDENTITY FULL;
        CREATE TABLE ${s}.ri_index (id int NOT NULL, code varchar(8) NOT NULL, name text);
        CREATE UNIQUE INDEX ri_index_code ON ${s}.ri_index (code);
        ALTER TABLE ${s}.ri_index REPLICA IDENTITY USING INDEX ri_index_code;
        CREATE TABLE ${s}.ri_nothing (id int, name text);
        ALTER TABLE ${s}.ri_nothing REPLICA IDENTITY NOTHING;`);
      await ctx.publication("all", [`${s}.ri_default`, `${s}.ri_full`, `${s}.ri_index`]);
      // NOTHING cannot publish UPDATE/DELETE (they would fail), so an insert-only publication.
      await ctx.publication("ins", [`${s}.ri_nothing`], "publish = 'insert'");
      for (const t of ["ri_default", "ri_full", "ri_index", "ri_nothing"]) await ctx.relation(t, t);
    },
    async workload(ctx) {
      const { db, s, relations: R } = ctx;
      const ins = await committed(ctx, async (ch) => {
        for (const [t, values] of [
          ["ri_default", `(1, 'alpha', 1.5), (2, 'beta', NULL)`],
          ["ri_full", `(1, 'alpha', 1.5), (2, 'beta', NULL)`],
          ["ri_index", `(1, 'a1', 'alpha'), (2, 'b2', NULL)`],
          ["ri_nothing", `(1, 'alpha'), (2, NULL)`],
        ] as const) {
          await db.query(`INSERT INTO ${s}.${t} VALUES ${values}`);
          for (const row of await rowsText(ctx, R[t]!, "true", "id")) ch.push({ op: "I", relation: t, new: row });
        }
      });
      const upd = await committed(ctx, async (ch) => {
        // DEFAULT, key unchanged: no old tuple.
        await db.query(`UPDATE ${s}.ri_default SET name = 'alpha2' WHERE id = 1`);
        ch.push({ op: "U", relation: "ri_default", new: await rowText(ctx, R.ri_default!, "id = 1") });
        // DEFAULT, key changed: 'K' with the old key.
        let old = await rowText(ctx, R.ri_default!, "id = 2");
        await db.query(`UPDATE ${s}.ri_default SET id = 3 WHERE id = 2`);
        ch.push({ op: "U", relation: "ri_default", key: keyOnly(R.ri_default!, old), new: await rowText(ctx, R.ri_default!, "id = 3") });
        // FULL: 'O' with the whole old row.
        old = await rowText(ctx, R.ri_full!, "id = 1");
        await db.query(`UPDATE ${s}.ri_full SET qty = 2.25 WHERE id = 1`);
        ch.push({ op: "U", relation: "ri_full", old, new: await rowText(ctx, R.ri_full!, "id = 1") });
        // USING INDEX, indexed column unchanged: no old tuple.
        await db.query(`UPDATE ${s}.ri_index SET name = 'gamma' WHERE id = 1`);
        ch.push({ op: "U", relation: "ri_index", new: await rowText(ctx, R.ri_index!, "id = 1") });
        // USING INDEX, indexed column changed: 'K' with only `code`.
        old = await rowText(ctx, R.ri_index!, "id = 2");
        await db.query(`UPDATE ${s}.ri_index SET code = 'c3' WHERE id = 2`);
        ch.push({ op: "U", relation: "ri_index", key: keyOnly(R.ri_index!, old), new: await rowText(ctx, R.ri_index!, "id = 2") });
        // NOTHING: not published for updates.
        await db.query(`UPDATE ${s}.ri_nothing SET name = 'zzz'`);
      });
      const del = await committed(ctx, async (ch) => {
        let old = await rowText(ctx, R.ri_default!, "id = 1");
        await db.query(`DELETE FROM ${s}.ri_default WHERE id = 1`);
        ch.push({ op: "D", relation: "ri_default", key: keyOnly(R.ri_default!, old) });
        old = await rowText(ctx, R.ri_full!, "id = 2");
        await db.query(`DELETE FROM ${s}.ri_full WHERE id = 2`);
        ch.push({ op: "D", relation: "ri_full", old });
        old = await rowText(ctx, R.ri_index!, "id = 1");
        await db.query(`DELETE FROM ${s}.ri_index WHERE id = 1`);
        ch.push({ op: "D", relation: "ri_index", key: keyOnly(R.ri_index!, old) });
        await db.query(`DELETE FROM ${s}.ri_nothing`);
      });
      return { transactions: [ins, upd, del] };
    },
  });

/**
 * UPDATEs that leave a ~100 KB TOASTed column (STORAGE EXTERNAL, not
 * compressible) unchanged. expected.big = { md5, length } of the value;
 * transactions: [insert into toast_default and toast_full, update `note` in
 * both (new tuple has big = { unchanged: true }; toast_full's 'O' carries the
 * whole old value), delete from both].
 */
export const toastUnchanged: Scenario = (c) =>
  runSpec(c, {
    name: "toast-unchanged",
    options: () => ({ proto_version: "1" }),
    async setup(ctx) {
      const { db, s } = ctx;
      for (const t of ["toast_default", "toast_full"]) {
        await db.query(`CREATE TABLE ${s}.${t} (id int PRIMARY KEY, note text, big text);
          ALTER TABLE ${s}.${t} ALTER COLUMN big SET STORAGE EXTERNAL;`);
      }
      await db.query(`ALTER TABLE ${s}.toast_full REPLICA IDENTITY FULL`);
      await ctx.publication("pub", [`${s}.toast_default`, `${s}.toast_full`]);
      await ctx.relation("toast_default", "toast_default");
      await ctx.relation("toast_full", "toast_full");
    },
    async workload(ctx) {
      const { db, s } = ctx;
      // md5 chain: 3200 x 32 hex digits = 102400 bytes, incompressible by pglz.
      const seed = ctx.id;
      const bigSql = `(SELECT string_agg(md5(g::text || ${literal(seed)}), '' ORDER BY g) FROM generate_series(1, 3200) g)`;
      const bigValue = (await db.query<{ v: string }>(`SELECT ${bigSql} AS v`)).rows[0]!.v;
      const big = { md5: md5(bigValue), length: Buffer.byteLength(bigValue) };
      const ins = await committed(ctx, async (ch) => {
        for (const t of ["toast_default", "toast_full"]) {
          await db.query(`INSERT INTO ${s}.${t} VALUES (1, 'n1', ${bigSql})`);
          ch.push({ op: "I", relation: t, new: ["1", "n1", big] });
        }
      });
      const stored = await db.query<{ n: number }>(`SELECT pg_column_size(big) AS n FROM ${s}.toast_default`);
      const upd = await committed(ctx, async (ch) => {
        await db.query(`UPDATE ${s}.toast_default SET note = 'n2' WHERE id = 1`);
        ch.push({ op: "U", relation: "toast_default", new: ["1", "n2", { unchanged: true }] });
        await db.query(`UPDATE ${s}.toast_full SET note = 'n2' WHERE id = 1`);
        ch.push({ op: "U", relation: "toast_full", old: ["1", "n1", big], new: ["1", "n2", { unchanged: true }] });
      });
      const del = await committed(ctx, async (ch) => {
        await db.query(`DELETE FROM ${s}.toast_default WHERE id = 1`);
        ch.push({ op: "D", relation: "toast_default", key: ["1", null, null] });
        await db.query(`DELETE FROM ${s}.toast_full WHERE id = 1`);
        ch.push({ op: "D", relation: "toast_full", old: ["1", "n2", big] });
      });
      return { big, storedSize: stored.rows[0]!.n, transactions: [ins, upd, del] };
    },
  });

/**
 * TRUNCATE variants over tr_parent, tr_child (FK to tr_parent), tr_other,
 * tr_solo. expected.transactions: [inserts, then one transaction per TRUNCATE
 * with a single { op: "T", relations (in message order), options }]:
 * parent CASCADE (1; adds child), other RESTART IDENTITY (2), solo + other
 * RESTART IDENTITY CASCADE (3), solo (0). Relation messages are sent again
 * before each Truncate (the truncation invalidated pgoutput's cache).
 */
export const truncate: Scenario = (c) =>
  runSpec(c, {
    name: "truncate",
    options: () => ({ proto_version: "1" }),
    async setup(ctx) {
      const { db, s } = ctx;
      await db.query(`
        CREATE TABLE ${s}.tr_parent (id serial PRIMARY KEY, v text);
        CREATE TABLE ${s}.tr_child (id serial PRIMARY KEY, parent_id int REFERENCES ${s}.tr_parent(id));
        CREATE TABLE ${s}.tr_other (id serial PRIMARY KEY);
        CREATE TABLE ${s}.tr_solo (id int PRIMARY KEY);`);
      const tables = ["tr_parent", "tr_child", "tr_other", "tr_solo"];
      await ctx.publication("pub", tables.map((t) => `${s}.${t}`));
      for (const t of tables) await ctx.relation(t, t);
    },
    async workload(ctx) {
      const { db, s, relations: R } = ctx;
      const ins = await committed(ctx, async (ch) => {
        await db.query(`INSERT INTO ${s}.tr_parent (v) VALUES ('p1'), ('p2');
          INSERT INTO ${s}.tr_child (parent_id) VALUES (1), (2);
          INSERT INTO ${s}.tr_other DEFAULT VALUES;
          INSERT INTO ${s}.tr_solo VALUES (1);`);
        for (const t of ["tr_parent", "tr_child", "tr_other", "tr_solo"]) {
          for (const row of await rowsText(ctx, R[t]!, "true", "id")) ch.push({ op: "I", relation: t, new: row });
        }
      });
      const run = (statement: string, options: number, relations: string[]) =>
        committed(ctx, async (ch) => {
          await db.query(statement);
          ch.push({ op: "T", relations, options });
        });
      const t1 = await run(`TRUNCATE ${s}.tr_parent CASCADE`, 1, ["tr_parent", "tr_child"]);
      const t2 = await run(`TRUNCATE ${s}.tr_other RESTART IDENTITY`, 2, ["tr_other"]);
      const t3 = await run(`TRUNCATE ${s}.tr_solo, ${s}.tr_other RESTART IDENTITY CASCADE`, 3, ["tr_solo", "tr_other"]);
      const t4 = await run(`TRUNCATE ${s}.tr_solo`, 0, ["tr_solo"]);
      return { transactions: [ins, t1, t2, t3, t4] };
    },
  });

/**
 * pg_logical_emit_message, option messages 'true'. expected.messages, all
 * Message messages in stream order: { transactional, prefix, contentHex, xid
 * (of the emitting transaction, null if none), lsn (what
 * pg_logical_emit_message returned, the end of its WAL record: the Message's
 * LSN field is exactly this on 15 and 18) }. Includes non-UTF-8 bytea content
 * with a NUL, an empty content, and a non-transactional message from a
 * transaction that then rolls back (still sent, outside any Begin/Commit,
 * while a transactional one of that transaction is not). The transactional
 * ones also appear as { op: "M" } in expected.transactions[].changes.
 */
export const messages: Scenario = (c) =>
  runSpec(c, {
    name: "messages",
    options: () => ({ proto_version: "1", messages: "true" }),
    setup: (ctx) => publishedTable(ctx, "msg_t", "id int PRIMARY KEY"),
    async workload(ctx) {
      const { db, s } = ctx;
      const prefix = `pgw-${ctx.id}`;
      const msgs: { transactional: boolean; prefix: string; contentHex: string; xid: number | null; lsn: string }[] = [];
      const emit = async (transactional: boolean, p: string, content: Buffer, xid: number | null, ch?: ExpectedChange[]) => {
        const r = await db.query<{ l: string }>("SELECT pg_logical_emit_message($1, $2, $3::bytea)::text AS l", [
          transactional,
          p,
          `\\x${content.toString("hex")}`,
        ]);
        const lsn = r.rows[0]!.l;
        msgs.push({ transactional, prefix: p, contentHex: content.toString("hex"), xid, lsn });
        ch?.push({ op: "M", transactional, prefix: p, contentHex: content.toString("hex"), lsn });
      };
      const t1 = await committed(ctx, async (ch) => {
        await db.query(`INSERT INTO ${s}.msg_t VALUES (1)`);
        ch.push({ op: "I", relation: "msg_t", new: ["1"] });
        await emit(true, prefix, Buffer.from("hello, transactional ✓", "utf8"), null, ch);
      });
      msgs[0]!.xid = t1.xid;
      // Non-transactional, outside any transaction: not UTF-8, with a NUL.
      await emit(false, prefix, Buffer.from([0xff, 0x00, 0xfe, 0x80, 0xc3, 0x28]), null);
      // Non-transactional inside a transaction that rolls back: still sent.
      await db.query("BEGIN");
      const rbXid = await currentXid(db);
      await db.query(`INSERT INTO ${s}.msg_t VALUES (2)`);
      await emit(false, `${prefix}-rolledback`, Buffer.from("sent although rolled back", "utf8"), rbXid);
      const lostLsn = (await db.query<{ l: string }>("SELECT pg_logical_emit_message(true, $1, 'never sent')::text AS l", [`${prefix}-lost`])).rows[0]!.l;
      await db.query("ROLLBACK");
      // Transactional only (no row change), binary and empty contents.
      const t2start = msgs.length;
      const t2 = await committed(ctx, async (ch) => {
        await emit(true, prefix, Buffer.from([0xc3, 0x28, 0x00, 0x4e, 0x55, 0xff]), null, ch);
        await emit(true, `${prefix}-empty`, Buffer.alloc(0), null, ch);
      });
      for (let i = t2start; i < msgs.length; i++) msgs[i]!.xid = t2.xid;
      return { prefix, messages: msgs, rolledBackXid: rbXid, lostMessageLsn: lostLsn, transactions: [t1, t2] };
    },
  });

/**
 * A transaction replayed from a replication origin. expected: originName,
 * originLsn ("FEDCBA98/76543210": above 2^63, read it unsigned),
 * originTimestamp (also the commit time PostgreSQL reports for it),
 * transactions: [from the origin (Origin message after Begin), local (none)].
 */
export const origin: Scenario = (c) =>
  runSpec(c, {
    name: "origin",
    // PostgreSQL 16+ filters on `origin` ('any' is its default: say it anyway); 15 has no such option.
    options: (major): Record<string, string> => (major >= 16 ? { proto_version: "1", origin: "any" } : { proto_version: "1" }),
    setup: (ctx) => publishedTable(ctx, "orig_t", "id int PRIMARY KEY, v text"),
    async workload(ctx) {
      const { db, s, c } = ctx;
      const originName = `pgw_origin_${ctx.id}`;
      const originLsn = "FEDCBA98/76543210";
      const originTimestamp = "2021-02-03T04:05:06.789012Z";
      await db.query("SELECT pg_replication_origin_create($1)", [originName]);
      ctx.defer(() => c.query("SELECT pg_replication_origin_drop($1)", [originName]));
      await db.query("SELECT pg_replication_origin_session_setup($1)", [originName]);
      let fromOrigin: ExpectedTxn;
      try {
        fromOrigin = await committed(ctx, async (ch) => {
          await db.query("SELECT pg_replication_origin_xact_setup($1::pg_lsn, $2::timestamptz)", [originLsn, originTimestamp]);
          await db.query(`INSERT INTO ${s}.orig_t VALUES (1, 'from origin')`);
          ch.push({ op: "I", relation: "orig_t", new: ["1", "from origin"] });
        });
      } finally {
        await db.query("SELECT pg_replication_origin_session_reset()");
      }
      const local = await committed(ctx, async (ch) => {
        await db.query(`INSERT INTO ${s}.orig_t VALUES (2, 'local')`);
        ch.push({ op: "I", relation: "orig_t", new: ["2", "local"] });
      });
      const roident = (await db.query<{ r: string }>("SELECT roident::int8 AS r FROM pg_replication_origin WHERE roname = $1", [originName])).rows[0]!.r;
      return {
        originName,
        originId: Number(roident),
        originLsn,
        originTimestamp,
        transactions: [{ ...fromOrigin, origin: { name: originName, lsn: originLsn } }, { ...local, origin: null }],
      };
    },
  });

/**
 * An enum, an array of it and a domain. expected.types: the Type messages
 * pgoutput sends before the first Relation of typ_t, in column order, one per
 * column whose type OID is >= 10000 (FirstGenbkiObjectId): { column, oid (the
 * column's type OID, as in the Relation message), namespace and name (of the
 * base type), baseTypeOid }. For a domain pgoutput sends the domain's OID
 * with its base type's name: the domain over int4 gives (domain OID, "",
 * "int4"): namespace "" stands for pg_catalog.
 */
export const enumDomain: Scenario = (c) =>
  runSpec(c, {
    name: "enum-domain",
    options: () => ({ proto_version: "1" }),
    async setup(ctx) {
      const { db, s } = ctx;
      await db.query(`
        CREATE TYPE ${s}.mood AS ENUM ('sad', 'ok', 'happy');
        CREATE DOMAIN ${s}.posint AS int4 CHECK (VALUE > 0);
        CREATE TABLE ${s}.typ_t (id int PRIMARY KEY, m ${s}.mood, ms ${s}.mood[], p ${s}.posint, n int);`);
      await ctx.publication("pub", [`${s}.typ_t`]);
      await ctx.relation("typ_t", "typ_t");
    },
    async workload(ctx) {
      const { db, s, relations: R } = ctx;
      const types = await db.query<{ column: string; coltype: string; oid: string; nspname: string; typname: string }>(
        `WITH RECURSIVE cols AS (
           SELECT a.attnum, a.attname, a.atttypid AS coltype, a.atttypid AS t
             FROM pg_attribute a WHERE a.attrelid = '${s}.typ_t'::regclass AND a.attnum > 0 AND NOT a.attisdropped
         ), base AS (
           SELECT attnum, attname, coltype, t FROM cols
           UNION ALL
           SELECT b.attnum, b.attname, b.coltype, ty.typbasetype FROM base b JOIN pg_type ty ON ty.oid = b.t WHERE ty.typtype = 'd'
         )
         SELECT b.attname AS column, b.coltype::int8 AS coltype, ty.oid::int8 AS oid, n.nspname, ty.typname
           FROM base b JOIN pg_type ty ON ty.oid = b.t JOIN pg_namespace n ON n.oid = ty.typnamespace
          WHERE ty.typtype <> 'd' AND b.coltype::int8 >= 10000
          ORDER BY b.attnum`,
      );
      const t1 = await committed(ctx, async (ch) => {
        await db.query(`INSERT INTO ${s}.typ_t VALUES (1, 'happy', '{sad,happy}', 42, 7), (2, NULL, '{}', 1, NULL)`);
        for (const row of await rowsText(ctx, R.typ_t!, "true", "id")) ch.push({ op: "I", relation: "typ_t", new: row });
      });
      const t2 = await committed(ctx, async (ch) => {
        await db.query(`UPDATE ${s}.typ_t SET m = 'ok', ms = ms || 'ok'::${s}.mood WHERE id = 1`);
        ch.push({ op: "U", relation: "typ_t", new: await rowText(ctx, R.typ_t!, "id = 1") });
      });
      return {
        types: types.rows.map((t) => ({
          column: t.column,
          oid: Number(t.coltype),
          baseTypeOid: Number(t.oid),
          namespace: t.nspname === "pg_catalog" ? "" : t.nspname,
          name: t.typname,
        })),
        transactions: [t1, t2],
      };
    },
  });

// The streaming scenarios (streaming, two-phase, parallel-abort) insert runs
// of ids into one table of PAD_COLUMNS, each row padded (~100 bytes) so that a
// few hundred rows exceed logical_decoding_work_mem (64kB) and get streamed.
const STREAM_PAD = `repeat('x', 100)`;
const PAD_COLUMNS = "id int PRIMARY KEY, pad text";
/** expected.pad: how insertRange fills the pad column. */
const PAD_EXPRESSION = `${STREAM_PAD} || id`;

async function insertRange(ctx: Ctx, table: string, from: number, to: number): Promise<void> {
  await ctx.db.query(`INSERT INTO ${ctx.s}.${table} SELECT g, ${STREAM_PAD} || g FROM generate_series(${from}, ${to}) g`);
}

async function xminOf(ctx: Ctx, table: string, id: number): Promise<number> {
  const r = await ctx.db.query<{ x: string }>(`SELECT xmin::text AS x FROM ${ctx.s}.${table} WHERE id = ${id}`);
  return Number(r.rows[0]!.x);
}

/** Inserts ids [from, to] and returns them as an IdRange of the (sub)transaction that wrote them (the rows' xmin). */
async function insertedRange(ctx: Ctx, table: string, from: number, to: number): Promise<IdRange> {
  await insertRange(ctx, table, from, to);
  return { from, to, xid: await xminOf(ctx, table, from) };
}

/**
 * The committed streamed transaction of streaming and parallel-abort: ids
 * 1-400 by the top-level transaction, 401-1000 in SAVEPOINT sp (enough to be
 * streamed before the Stream Abort), `rollBack` running ROLLBACK TO SAVEPOINT
 * sp, then 1001-`lastId` by the subtransaction the ROLLBACK TO re-opened.
 * parallel-abort passes a `rollBack` that also brackets the rollback with LSN
 * and clock readings. `rows` are the ranges that stay, `rolledBack` the one
 * of the savepoint (its xid is the Stream Abort's subxid).
 */
async function withRolledBackSavepoint(
  ctx: Ctx,
  table: string,
  lastId: number,
  rollBack: () => Promise<unknown> = () => ctx.db.query("ROLLBACK TO SAVEPOINT sp"),
): Promise<{ tx: ExpectedTxn; rows: IdRange[]; rolledBack: IdRange }> {
  const rows: IdRange[] = [];
  let rolledBack: IdRange | undefined;
  const tx = await committed(ctx, async () => {
    rows.push(await insertedRange(ctx, table, 1, 400));
    await ctx.db.query("SAVEPOINT sp");
    rolledBack = await insertedRange(ctx, table, 401, 1000);
    await rollBack();
    rows.push(await insertedRange(ctx, table, 1001, lastId));
  });
  return { tx, rows, rolledBack: rolledBack! };
}

/**
 * Large transactions with streaming 'on' (proto 2; logical_decoding_work_mem
 * is 64kB). expected.committed: { xid, subxid (the savepoint rolled back:
 * Stream Abort (xid, subxid)), rows: IdRange[] that stay (ids 1-400 by xid,
 * 1001-1400 by the subtransaction ROLLBACK TO re-opened), rolledBack: IdRange
 * (401-1000: part of them is streamed before the Stream Abort), commitTime,
 * lsnRange }; expected.aborted: { xid, rows: IdRange }, a large transaction
 * that rolls back; expected.abortedIsStreamed: whether the capture holds it
 * (Stream Start ... Stream Abort with sub-xid = xid): true on 15, false on 18
 * (which skips a transaction it already knows aborted). Rows are (id int,
 * pad text = repeat('x', 100) || id). Relation messages inside a stream carry
 * the xid of the (sub)transaction too, and one is sent again after a Stream
 * Abort.
 */
export const streaming: Scenario = (c) =>
  runSpec(c, {
    name: "streaming",
    options: () => ({ proto_version: "2", streaming: "on" }),
    setup: (ctx) => publishedTable(ctx, "st_t", PAD_COLUMNS),
    async workload(ctx) {
      const { db } = ctx;
      const { tx, rows, rolledBack } = await withRolledBackSavepoint(ctx, "st_t", 1400);
      await db.query("BEGIN");
      const abortedXid = await currentXid(db);
      await insertRange(ctx, "st_t", 2001, 2600);
      await db.query("ROLLBACK");
      return {
        committed: { xid: tx.xid, subxid: rolledBack.xid, rows, rolledBack, commitTime: tx.commitTime, lsnRange: tx.lsnRange },
        aborted: { xid: abortedXid, rows: { from: 2001, to: 2600, xid: abortedXid } },
        abortedIsStreamed: ctx.major < 18,
        pad: PAD_EXPRESSION,
      };
    },
  });

/**
 * Two-phase commit: slot made with two_phase, proto 3, two_phase 'true',
 * streaming 'on'. expected.prepared, in order: { gid, xid, outcome
 * ('commit' | 'rollback'), streamed (a large transaction: Stream Start ...
 * Stream Prepare instead of Begin Prepare ... Prepare), prepareTime (from
 * pg_prepared_xacts: Begin Prepare's and Prepare's time), commitTime (Commit
 * Prepared's time; null for rollback), rollbackTimeRange (bounds for
 * Rollback Prepared's rollback time; null for commit), rows: IdRange,
 * lsnRange (bounds for all the LSNs of its messages) }.
 */
export const twoPhase: Scenario = (c) =>
  runSpec(c, {
    name: "two-phase",
    twoPhase: true,
    options: () => ({ proto_version: "3", two_phase: "true", streaming: "on" }),
    setup: (ctx) => publishedTable(ctx, "tp_t", PAD_COLUMNS),
    async workload(ctx) {
      const { db } = ctx;
      const out: PreparedTxn[] = [];
      const one = async (gid: string, rows: [number, number], outcome: "commit" | "rollback", streamed: boolean) => {
        await db.query("BEGIN");
        const xid = await currentXid(db);
        await insertRange(ctx, "tp_t", rows[0], rows[1]);
        const before = await insertLsn(db);
        await db.query(`PREPARE TRANSACTION ${literal(gid)}`);
        const prepareTime = (
          await db.query<{ t: string }>(`SELECT to_char(prepared AT TIME ZONE 'UTC', ${ISO_US}) AS t FROM pg_prepared_xacts WHERE gid = $1`, [gid])
        ).rows[0]!.t;
        const t0 = await clockIso(db);
        await db.query(`${outcome === "commit" ? "COMMIT" : "ROLLBACK"} PREPARED ${literal(gid)}`);
        const t1 = await clockIso(db);
        const after = await insertLsn(db);
        const commitTimeV = outcome === "commit" ? await commitTime(db, xid) : null;
        out.push({
          gid,
          xid,
          outcome,
          streamed,
          prepareTime,
          commitTime: commitTimeV,
          rollbackTimeRange: outcome === "rollback" ? [t0, t1] : null,
          rows: { from: rows[0], to: rows[1], xid },
          lsnRange: [before, after],
        });
      };
      await one(`pgw_${ctx.id}_commit`, [1, 2], "commit", false);
      await one(`pgw_${ctx.id}_rollback`, [3, 3], "rollback", false);
      await one(`pgw_${ctx.id}_streamed`, [101, 1000], "commit", true);
      return { prepared: out, pad: PAD_EXPRESSION };
    },
  });

/**
 * PostgreSQL 16+ only (here: 18): proto 4, streaming 'parallel'. A streamed
 * transaction whose subtransaction is rolled back gives a Stream Abort with
 * the abort LSN and time (25 bytes instead of 9). expected: { xid, subxid,
 * abortLsnRange, abortTimeRange (bounds for the v4 fields), rows: IdRange[]
 * that stay, rolledBack: IdRange, commitTime, lsnRange }.
 */
export const parallelAbort: Scenario = (c) =>
  runSpec(c, {
    name: "parallel-abort",
    options: () => ({ proto_version: "4", streaming: "parallel" }),
    setup: (ctx) => publishedTable(ctx, "pa_t", PAD_COLUMNS),
    async workload(ctx) {
      const { db } = ctx;
      let abortLsnRange: [string, string] = ["", ""];
      let abortTimeRange: [string, string] = ["", ""];
      // The Stream Abort's v4 fields: the abort record lies between these readings.
      const rollBack = async () => {
        const l0 = await insertLsn(db);
        const t0 = await clockIso(db);
        await db.query("ROLLBACK TO SAVEPOINT sp");
        const l1 = await insertLsn(db);
        const t1 = await clockIso(db);
        abortLsnRange = [l0, l1];
        abortTimeRange = [t0, t1];
      };
      const { tx, rows, rolledBack } = await withRolledBackSavepoint(ctx, "pa_t", 1010, rollBack);
      return {
        xid: tx.xid,
        subxid: rolledBack.xid,
        abortLsnRange,
        abortTimeRange,
        rows,
        rolledBack,
        commitTime: tx.commitTime,
        lsnRange: tx.lsnRange,
        pad: PAD_EXPRESSION,
      };
    },
  });

/**
 * binary 'true' (values in send/recv format, 'b'). expected.transactions as
 * usual (text cells), plus expected.binary: for each change the same tuple as
 * hex of the binary send format (null for NULL), e.g. int8 -2^63 =
 * "8000000000000000", timestamptz as µs since 2000-01-01.
 */
export const binary: Scenario = (c) =>
  runSpec(c, {
    name: "binary",
    options: () => ({ proto_version: "1", binary: "true" }),
    setup: (ctx) => publishedTable(ctx, "bin_t", "id int4 PRIMARY KEY, big int8, label text, flag bool, at timestamptz"),
    async workload(ctx) {
      const { db, s, relations: R } = ctx;
      const binRow = async (where: string): Promise<(string | null)[]> => {
        const r = await db.query<(string | null)[]>({
          text: `SELECT encode(int4send(id), 'hex'), encode(int8send(big), 'hex'), encode(textsend(label), 'hex'),
                        encode(boolsend(flag), 'hex'), encode(timestamptz_send(at), 'hex')
                   FROM ${s}.bin_t WHERE ${where}`,
          rowMode: "array",
        });
        return r.rows[0]!;
      };
      const binary: { op: string; key?: (string | null)[]; new?: (string | null)[] }[] = [];
      const t1 = await committed(ctx, async (ch) => {
        await db.query(`INSERT INTO ${s}.bin_t VALUES
          (1, -9223372036854775808, 'héllo', true, '2024-02-29 12:34:56.789012+00'),
          (2, 9007199254740993, '', false, '1999-12-31 23:59:59.999999+00'),
          (-3, NULL, NULL, NULL, NULL)`);
        for (const id of [1, 2, -3]) {
          ch.push({ op: "I", relation: "bin_t", new: await rowText(ctx, R.bin_t!, `id = ${id}`) });
          binary.push({ op: "I", new: await binRow(`id = ${id}`) });
        }
      });
      const t2 = await committed(ctx, async (ch) => {
        await db.query(`UPDATE ${s}.bin_t SET label = 'wörld', big = 2147483648 WHERE id = 1`);
        ch.push({ op: "U", relation: "bin_t", new: await rowText(ctx, R.bin_t!, "id = 1") });
        binary.push({ op: "U", new: await binRow("id = 1") });
        const oldText = await rowText(ctx, R.bin_t!, "id = 2");
        const oldBin = await binRow("id = 2");
        await db.query(`DELETE FROM ${s}.bin_t WHERE id = 2`);
        ch.push({ op: "D", relation: "bin_t", key: keyOnly(R.bin_t!, oldText) });
        binary.push({ op: "D", key: oldBin.map((v, i) => (i === 0 ? v : null)) });
      });
      return { transactions: [t1, t2], binary };
    },
  });

/**
 * Non-ASCII identifiers and values, an empty string, a zero-column table.
 * expected.relations: "unicode" (schema and table names in UTF-8) and "zero"
 * (no columns); transactions: [inserts incl. two zero-column rows, updates to
 * '' and a non-ASCII value].
 */
export const unicode: Scenario = (c) =>
  runSpec(c, {
    name: "unicode",
    schemaName: (id) => `pgw_ünïcødé_${id}`,
    options: () => ({ proto_version: "1" }),
    async setup(ctx) {
      const { db, s } = ctx;
      await db.query(`
        CREATE TABLE ${s}."таблица_😀" ("ключ" int PRIMARY KEY, "名前" text, "ñ" text);
        CREATE TABLE ${s}."空" ();`);
      await ctx.publication("pub", [`${s}."таблица_😀"`, `${s}."空"`]);
      await ctx.relation("unicode", "таблица_😀");
      await ctx.relation("zero", "空");
    },
    async workload(ctx) {
      const { db, s, relations: R } = ctx;
      const t1 = await committed(ctx, async (ch) => {
        await db.query(`INSERT INTO ${s}."таблица_😀" VALUES (1, '日本語 😀 ü', ''), (2, '', NULL)`);
        for (const row of await rowsText(ctx, R.unicode!, "true", `"ключ"`)) ch.push({ op: "I", relation: "unicode", new: row });
        await db.query(`INSERT INTO ${s}."空" DEFAULT VALUES; INSERT INTO ${s}."空" DEFAULT VALUES;`);
        ch.push({ op: "I", relation: "zero", new: [] }, { op: "I", relation: "zero", new: [] });
      });
      const t2 = await committed(ctx, async (ch) => {
        await db.query(`UPDATE ${s}."таблица_😀" SET "ñ" = 'ñandú' WHERE "ключ" = 1`);
        ch.push({ op: "U", relation: "unicode", new: await rowText(ctx, R.unicode!, `"ключ" = 1`) });
        await db.query(`UPDATE ${s}."таблица_😀" SET "名前" = '' WHERE "ключ" = 2`);
        ch.push({ op: "U", relation: "unicode", new: await rowText(ctx, R.unicode!, `"ключ" = 2`) });
      });
      return { transactions: [t1, t2] };
    },
  });

/**
 * A 1,600-column table (MaxHeapAttributeNumber): columns c1..c1600 int4, c1
 * the primary key. transactions: [insert of a full row (c_i = i) and of a
 * row where every third column is NULL, delete of the first (a 'K' tuple of
 * 1,600 columns with 1,599 nulls)].
 */
export const wide: Scenario = (c) =>
  runSpec(c, {
    name: "wide",
    options: () => ({ proto_version: "1" }),
    setup(ctx) {
      const cols = Array.from({ length: 1600 }, (_, i) => `c${i + 1} int4${i === 0 ? " PRIMARY KEY" : ""}`);
      return publishedTable(ctx, "wide_t", cols.join(", "));
    },
    async workload(ctx) {
      const { db, s, relations: R } = ctx;
      const full = Array.from({ length: 1600 }, (_, i) => String(i + 1));
      const holes = Array.from({ length: 1600 }, (_, i) => (i % 3 === 2 ? "NULL" : String(-(i + 1))));
      const t1 = await committed(ctx, async (ch) => {
        await db.query(`INSERT INTO ${s}.wide_t VALUES (${full.join(",")}), (${holes.join(",")})`);
        for (const row of await rowsText(ctx, R.wide_t!, "true", "c1 DESC")) ch.push({ op: "I", relation: "wide_t", new: row });
      });
      const t2 = await committed(ctx, async (ch) => {
        const old = await rowText(ctx, R.wide_t!, "c1 = 1");
        await db.query(`DELETE FROM ${s}.wide_t WHERE c1 = 1`);
        ch.push({ op: "D", relation: "wide_t", key: keyOnly(R.wide_t!, old) });
      });
      return { transactions: [t1, t2] };
    },
  });

export const scenarios: ScenarioDef[] = [
  { name: "replica-identity", description: "insert/update/delete under REPLICA IDENTITY DEFAULT, FULL, USING INDEX, NOTHING (proto 1)", majors: [15, 18], run: replicaIdentity },
  { name: "toast-unchanged", description: "updates leaving a 100 KB external TOASTed column unchanged ('u')", majors: [15, 18], run: toastUnchanged },
  { name: "truncate", description: "TRUNCATE with CASCADE and/or RESTART IDENTITY", majors: [15, 18], run: truncate },
  { name: "messages", description: "pg_logical_emit_message, transactional and not, binary contents", majors: [15, 18], run: messages },
  { name: "origin", description: "a transaction with a replication origin (Origin message)", majors: [15, 18], run: origin },
  { name: "enum-domain", description: "enum, enum[] and domain columns (Type messages)", majors: [15, 18], run: enumDomain },
  { name: "streaming", description: "proto 2 streaming: committed with a rolled-back subtransaction, and an aborted transaction", majors: [15, 18], run: streaming },
  { name: "two-phase", description: "proto 3 two-phase: commit prepared, rollback prepared, streamed prepare", majors: [15, 18], run: twoPhase },
  { name: "parallel-abort", description: "proto 4 streaming 'parallel': Stream Abort with abort LSN and time", majors: [18], run: parallelAbort },
  { name: "binary", description: "binary 'true': int4, int8, text, bool, timestamptz in send format", majors: [15, 18], run: binary },
  { name: "unicode", description: "UTF-8 identifiers and values, empty strings, a zero-column table", majors: [15, 18], run: unicode },
  { name: "wide", description: "a 1,600-column table", majors: [15, 18], run: wide },
];

export function scenarioByName(name: string): ScenarioDef {
  const s = scenarios.find((x) => x.name === name);
  if (!s) throw new Error(`no scenario ${name}`);
  return s;
}
