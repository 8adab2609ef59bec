/**
 * Under Deno, against a real PostgreSQL: the `pg` npm package (node_modules,
 * through Deno's Node compatibility) reads pgoutput messages with
 * pg_logical_slot_get_binary_changes, and both backends decode them.
 *
 * The cluster comes from devkit/cluster/cluster.ts, which runs under Deno too;
 * set PGOUTPUT_PG_URL (postgres://…, a superuser on a server with
 * wal_level = logical) to use a running server instead.
 *
 *   deno test -A test/portable/pg.deno.ts
 *
 * This is the SQL-slot path; a walsender (START_REPLICATION) client is not
 * exercised here.
 */
import pg from "pg";
import { startCluster, type Cluster } from "../../devkit/cluster/cluster.ts";
import { getChanges, type SlotRow } from "../../devkit/capture/slot.ts";
import {
  BaselineDecoder, WasmDecoder, createDecoder, formatLsn, parseLsn, type PgoutputDecoder,
} from "../../bindings/index.ts";
import { counted, eq, ok } from "./harness.ts";

type Db = Pick<Cluster, "query">;

let cluster: Cluster | undefined;
let client: pg.Client | undefined;
let db: Db;

async function connect(): Promise<string> {
  const url = Deno.env.get("PGOUTPUT_PG_URL");
  if (url) {
    client = new pg.Client({ connectionString: url });
    await client.connect();
    const c = client;
    db = { query: async (sql: string, params?: unknown[]) => (await c.query(sql, params)).rows };
  } else {
    cluster = await startCluster(15);
    db = cluster;
  }
  const [{ server_version }] = await db.query<{ server_version: string }>("SHOW server_version");
  return server_version!;
}

async function disconnect(): Promise<void> {
  await client?.end();
  await cluster?.stop();
}

/** Decodes the slot rows one by one with a backend; every message materialized. */
function decodeRows(d: PgoutputDecoder, rows: SlotRow[]): Record<string, unknown>[] {
  return rows.map((r) => d.decode(r.data).materialize());
}

/** Both backends, three ways (one at a time, one batch, pushed as a capture): all must agree. */
async function decodeEverywhere(rows: SlotRow[]): Promise<Record<string, unknown>[]> {
  const wasm = await WasmDecoder.create();
  const base = new BaselineDecoder();
  const one = decodeRows(wasm, rows);
  eq(decodeRows(base, rows), one, "baseline vs wasm, decode()");
  wasm.reset();
  eq(wasm.decodeBatch(rows.map((r) => r.data)).materialize(), one, "wasm decodeBatch()");
  base.reset();
  eq(base.decodeBatch(rows.map((r) => r.data)).materialize(), one, "baseline decodeBatch()");
  return one;
}

const kinds = (ms: Record<string, unknown>[]) => ms.map((m) => m.kind as string);
const count = { passed: 0, failed: 0 };
const suffix = `${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`;

function check(name: string, fn: () => Promise<void>): void {
  Deno.test({
    name,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: counted(fn, count),
  });
}

Deno.test({
  name: "start or reach PostgreSQL",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => console.log(`PostgreSQL ${await connect()}${cluster ? " (throwaway cluster)" : ""}`),
});

check("SQL slot, proto 1: Begin, Relation, Insert, Update, Delete, Truncate, Message, Commit decode alike in both backends", async () => {
  const t = `deno_t_${suffix}`;
  const slot = `deno_s_${suffix}`;
  const pub = `deno_p_${suffix}`;
  await db.query(`CREATE TABLE ${t} (id int PRIMARY KEY, name text, payload bytea)`);
  await db.query(`ALTER TABLE ${t} REPLICA IDENTITY FULL`);
  await db.query(`CREATE PUBLICATION ${pub} FOR TABLE ${t}`);
  await db.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [slot]);
  try {
    await db.query(`INSERT INTO ${t} VALUES (1, 'ünïcödé 😀', '\\x00ff'), (2, NULL, NULL)`);
    await db.query(`UPDATE ${t} SET name = 'renamed' WHERE id = 1`);
    await db.query(`DELETE FROM ${t} WHERE id = 2`);
    await db.query(`TRUNCATE ${t}`);
    const [{ lsn }] = await db.query<{ lsn: string }>("SELECT pg_logical_emit_message(true, 'deno', 'hello from deno')::text AS lsn");
    const rows = await getChanges(db as Cluster, slot, { proto_version: "1", publication_names: pub, messages: "true" });
    const ms = await decodeEverywhere(rows);
    const seen = new Set(kinds(ms));
    for (const k of ["Begin", "Relation", "Insert", "Update", "Delete", "Truncate", "Message", "Commit"]) ok(seen.has(k), `no ${k} in ${kinds(ms).join(",")}`);

    const d = await createDecoder();
    eq(d.backend, "wasm", "createDecoder() backend under Deno");
    // views are valid until the next call: read each right after decoding
    const inserts: unknown[] = [];
    let update: unknown;
    let message: unknown;
    for (const r of rows) {
      const m = d.decode(r.data);
      if (m.kind === "Insert") inserts.push([m.relation?.name, m.newTuple.text("id"), m.newTuple.text("name"), m.newTuple.text("payload")]);
      if (m.kind === "Update") update = [m.oldTupleType, m.oldTuple?.text("name"), m.newTuple.text("name")];
      if (m.kind === "Message") message = [m.prefix, m.contentText, formatLsn(m.lsn)];
    }
    eq(inserts, [[t, "1", "ünïcödé 😀", "\\x00ff"], [t, "2", null, null]], "inserted rows");
    eq(update, ["O", "ünïcödé 😀", "renamed"], "update (replica identity full)");
    eq(message, ["deno", "hello from deno", formatLsn(parseLsn(lsn!))], "logical message");
    eq(ms.filter((m) => m.kind === "Commit").length, 5, "five transactions");
  } finally {
    await db.query("SELECT pg_drop_replication_slot($1)", [slot]);
    await db.query(`DROP PUBLICATION ${pub}`);
    await db.query(`DROP TABLE ${t}`);
  }
});

check("SQL slot, proto 2 streaming: a large transaction arrives as Stream Start/Stop/Commit, decoded alike", async () => {
  const t = `deno_st_${suffix}`;
  const slot = `deno_ss_${suffix}`;
  const pub = `deno_ps_${suffix}`;
  await db.query(`CREATE TABLE ${t} (id int PRIMARY KEY, pad text)`);
  await db.query(`CREATE PUBLICATION ${pub} FOR TABLE ${t}`);
  await db.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [slot]);
  try {
    await db.query("SET logical_decoding_work_mem = '64kB'");
    // 2000 rows of ~110 bytes: over logical_decoding_work_mem, so the transaction is streamed
    await db.query(`INSERT INTO ${t} SELECT i, repeat('x', 100) || i FROM generate_series(1, 2000) i`);
    const rows = await getChanges(db as Cluster, slot, { proto_version: "2", publication_names: pub, streaming: "on" });
    const ms = await decodeEverywhere(rows);
    const seen = new Set(kinds(ms));
    for (const k of ["StreamStart", "StreamStop", "StreamCommit", "Insert"]) ok(seen.has(k), `no ${k} in ${[...seen].join(",")}`);
    const inserts = ms.filter((m) => m.kind === "Insert");
    eq(inserts.length, 2000, "inserts");
    ok(inserts.every((m) => typeof m.xid === "number"), "streamed inserts carry the xid");
  } finally {
    await db.query("SELECT pg_drop_replication_slot($1)", [slot]);
    await db.query(`DROP PUBLICATION ${pub}`);
    await db.query(`DROP TABLE ${t}`);
  }
});

Deno.test({
  name: "stop PostgreSQL; summary",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await disconnect();
    console.log(`deno ${Deno.version.deno}, real PostgreSQL:\n${count.passed} passed, ${count.failed} failed`);
  },
});
