/**
 * The `wal2json` format against wal2json itself (Debian's
 * postgresql-15-wal2json, 2.5): on one PostgreSQL 15, one workload goes
 * through two slots made before it — a `wal2json` slot, read with
 * pg_logical_slot_peek_changes() once per option set, and a `pgoutput`
 * slot streamed by replicate() through the Pipeline with the format —
 * and every document must be the same: byte for byte, or, where
 * docs/cli-output.md lists a difference that pgoutput's content forces,
 * equal once that documented difference is applied to wal2json's (each
 * asserted to occur, so none is skipped unseen).
 *
 * The workload: every type of the values suite (test/support/values-cases.ts)
 * and NULLs; unchanged TOAST; updates under REPLICA IDENTITY DEFAULT, FULL
 * and USING INDEX, key updates; deletes; truncates of one and of several
 * tables; logical messages, transactional and not, with special and
 * binary content; multi-change, message-only, DDL-only (empty) and rolled
 * back transactions, a rolled back savepoint; a transaction large enough to
 * be streamed (replayed by the pipeline); tables whose names need escaping
 * in add-tables; a generated column. The stream is recorded once (its
 * XLogData frames) and each option set of both format versions runs the
 * pipeline over the recording, with both backends for a few. And the CLI,
 * compiled as published: `tail --format wal2json -o format-version=1
 * -o include-xids=true` prints wal2json's documents, one per line.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { replicate } from "../bindings/pg/replicate.ts";
import { createDecoder } from "../bindings/create-decoder.ts";
import { wal2json } from "../bindings/formats/wal2json.ts";
import { formatNamed, formatOptions } from "../bindings/formats/index.ts";
import { Pipeline, type PipelineSource, type SourceItem } from "../bindings/pipeline/run.ts";
import { streamSource } from "../bindings/pipeline/sources.ts";
import type { Records } from "../bindings/pipeline/records.ts";
import type { FormatOptionValues } from "../bindings/pipeline/format.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import type { TypeKnowledge } from "../bindings/values/options.ts";
import { TYPES_QUERY, typesFromCatalog, type CatalogTypeRow } from "../bindings/values/catalog.ts";
import { toPostgresTimestamp } from "../bindings/time.ts";
import { toBase64 } from "../bindings/utf8.ts";
import { backends, type Backend } from "./support/backends.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";
import { parseRawJson, type RawJsonValue } from "./support/raw-json.ts";
import { CASES, SETUP_SQL } from "./support/values-cases.ts";

const CLI_FOLDER = "cli-test-wal2json";

const S = "w2j";
const PLUGIN_SLOT = "w2j_plugin";
const PGOUTPUT_SLOT = "w2j_pgoutput";

let cluster: Cluster;
/** The CLI, compiled as it is published. */
let cli: Promise<string>;
let admin: pg.Client;
let types: Record<number, TypeKnowledge>;
/** The pgoutput stream's XLogData frames, as received. */
let frames: Uint8Array[] = [];
/** What the real stream's pipeline run wrote (format-version 2 with every field). */
let streamed: string[] = [];
/** xids of the transactions pgoutput does not send: DDL only. */
const emptyXids = new Set<string>();
/** The bytes of the binary message contents. */
const BINARY_CONTENT = Uint8Array.from([0x00, 0xff, 0x41, 0xc3]);

/** A column per distinct type of the values suite, with every value of it. */
function typeColumns(): { name: string; type: string; values: string[] }[] {
  const byType = new Map<string, string[]>();
  for (const c of CASES) {
    if (c.since !== undefined && c.since > 15) continue;
    byType.set(c.type, [...(byType.get(c.type) ?? []), c.sql]);
  }
  return [...byType].map(([type, values], i) => ({ name: `c${i}`, type, values }));
}

async function setup(client: pg.Client): Promise<void> {
  await client.query(`CREATE SCHEMA ${S}`);
  await client.query(`SET search_path = ${S}, public`);
  for (const sql of SETUP_SQL) await client.query(sql);
  const cols = typeColumns();
  await client.query(`CREATE TABLE ${S}.typed (id int PRIMARY KEY, ${cols.map((c) => `${c.name} ${c.type}`).join(", ")})`);
  await client.query(`CREATE TABLE ${S}.docs (id int PRIMARY KEY, title text, body text)`);
  await client.query(`ALTER TABLE ${S}.docs ALTER COLUMN body SET STORAGE EXTERNAL`);
  await client.query(`CREATE TABLE ${S}.full_rows (k int, v text, n numeric)`);
  await client.query(`ALTER TABLE ${S}.full_rows REPLICA IDENTITY FULL`);
  await client.query(`CREATE TABLE ${S}.by_index (pk int PRIMARY KEY, k int NOT NULL, v text)`);
  await client.query(`CREATE UNIQUE INDEX by_index_k ON ${S}.by_index (k)`);
  await client.query(`ALTER TABLE ${S}.by_index REPLICA IDENTITY USING INDEX by_index_k`);
  await client.query(`CREATE TABLE ${S}.plain (id bigint PRIMARY KEY, v text)`);
  await client.query(`CREATE TABLE ${S}.no_key (a int, b text)`); // REPLICA IDENTITY DEFAULT without a primary key: inserts only
  await client.query(`CREATE TABLE ${S}."Odd Table.x" (id int PRIMARY KEY, "Mixed Col" text)`);
  await client.query(`CREATE TABLE ${S}.generated (id int PRIMARY KEY, a int, gen int GENERATED ALWAYS AS (a * 2) STORED)`);
  await client.query("CREATE TABLE public.elsewhere (id int PRIMARY KEY, v text)");
  // Type names format_type() quotes, qualifies or spells with a modifier.
  await client.query(`CREATE TYPE ${S}."order" AS ENUM ('x')`);
  await client.query(`CREATE TYPE ${S}.d$ AS ENUM ('y')`);
  await client.query(`CREATE TYPE public."Mixed Case" AS ENUM ('z')`);
  await client.query(`CREATE TABLE ${S}.names (id int PRIMARY KEY, a interval(3), b interval year to month, c interval day to second(2),
    d interval minute, e bpchar, f bpchar[], g ${S}."order", h ${S}.d$, i "Mixed Case", j "Mixed Case"[], k timestamptz(0), l bit varying(5))`);
  await client.query(`CREATE PUBLICATION ${S}_pub FOR ALL TABLES`);
}

async function workload(client: pg.Client): Promise<void> {
  // Flushed at each commit: the slots are read up to the flushed WAL.
  await client.query("SET synchronous_commit = on");
  const cols = typeColumns();
  const rows = Math.max(...cols.map((c) => c.values.length));
  const row = (id: number, k: number) => `(${id}, ${cols.map((c) => `(${c.values[k % c.values.length]})::${c.type}`).join(", ")})`;
  const tx = (...statements: string[]) => client.query(`BEGIN; ${statements.join("; ")}; COMMIT`);
  const big = (n: number) => `repeat(md5('${n}') || md5('${n * 7}'), 80)`; // 5 KB, stored out of line

  // Every value of every type, and a row of NULLs: one transaction of many changes, then one of one.
  await tx(...Array.from({ length: rows }, (_, k) => `INSERT INTO ${S}.typed VALUES ${row(k + 1, k)}`));
  await client.query(`SELECT pg_logical_emit_message(false, 'a', 'after a transaction of many changes')`);
  await tx(`INSERT INTO ${S}.typed (id) VALUES (0)`);
  const text = cols.find((c) => c.type === "text")!.name;
  const numeric = cols.find((c) => c.type === "numeric")!.name;
  await tx(`UPDATE ${S}.typed SET ${text} = 'updated', ${numeric} = 'NaN' WHERE id = 1`); // key unchanged: identity from the new row
  await tx(`UPDATE ${S}.typed SET id = 1002 WHERE id = 2`); // key update: the old key
  await tx(`DELETE FROM ${S}.typed WHERE id = 3`, `DELETE FROM ${S}.typed WHERE id = 0`);
  // Unchanged TOAST.
  await tx(`INSERT INTO ${S}.docs VALUES (1, 'title', ${big(1)})`, `INSERT INTO ${S}.docs VALUES (2, 'two', ${big(2)})`);
  await tx(`UPDATE ${S}.docs SET title = 'retitled' WHERE id = 1`);
  await tx(`UPDATE ${S}.docs SET body = ${big(3)} WHERE id = 2`, `UPDATE ${S}.docs SET id = 3 WHERE id = 2`);
  await tx(`DELETE FROM ${S}.docs WHERE id = 1`);
  // REPLICA IDENTITY FULL, with NULLs in the old row.
  await tx(`INSERT INTO ${S}.full_rows VALUES (1, 'a', 1.50), (2, NULL, NULL)`);
  await tx(`UPDATE ${S}.full_rows SET v = 'b' WHERE k = 1`, `UPDATE ${S}.full_rows SET v = 'c' WHERE k = 2`);
  await tx(`DELETE FROM ${S}.full_rows WHERE k = 2`);
  // REPLICA IDENTITY USING INDEX (k); the primary key is pk.
  await tx(`INSERT INTO ${S}.by_index VALUES (1, 10, 'x')`);
  await tx(`UPDATE ${S}.by_index SET v = 'y' WHERE pk = 1`, `UPDATE ${S}.by_index SET k = 11 WHERE pk = 1`);
  await tx(`DELETE FROM ${S}.by_index WHERE pk = 1`);
  // Names that add-tables must escape, another schema, a generated column.
  await tx(`INSERT INTO ${S}."Odd Table.x" VALUES (1, 'odd')`, "INSERT INTO public.elsewhere VALUES (1, 'elsewhere')", `INSERT INTO ${S}.no_key VALUES (1, NULL)`);
  await tx(`INSERT INTO ${S}.generated (id, a) VALUES (1, 21)`, `UPDATE ${S}.generated SET a = 22`);
  await tx(`INSERT INTO ${S}.names VALUES (1, '1.23456 s', '1 year 2 mons', '1 day 0.123 s', '3 min', 'b ', '{a,b}', 'x', 'y', 'z', '{z}', now(), B'101')`);
  // Truncates: one table, then two in one statement.
  await tx(`INSERT INTO ${S}.plain VALUES (1, E'controls \\x01 \\x1f \\x7f \\b \\f, quote " and backslash \\\\'), (2, 'two')`);
  await tx(`TRUNCATE ${S}.plain`);
  await tx(`INSERT INTO ${S}.plain VALUES (3, 'three')`, `TRUNCATE ${S}.plain, ${S}."Odd Table.x"`);
  // Logical messages: in a transaction with changes, alone, outside any, with content JSON must escape, and bytes.
  await tx(
    `INSERT INTO ${S}.plain VALUES (4, 'four')`,
    "SELECT pg_logical_emit_message(true, 'a', 'transactional a')",
    "SELECT pg_logical_emit_message(true, 'b', 'transactional b')",
    "SELECT pg_logical_emit_message(false, 'c', 'not transactional, emitted inside one')",
    `SELECT pg_logical_emit_message(true, 'text', E'quote \\" back \\\\ tab \\t nl \\n cr \\r bell \\007 é 😀')`,
    `SELECT pg_logical_emit_message(true, 'bytes', '\\x${Buffer.from(BINARY_CONTENT).toString("hex")}'::bytea)`,
  );
  await tx("SELECT pg_logical_emit_message(true, 'b', 'a message alone')");
  await client.query(`SELECT pg_logical_emit_message(false, 'bytes', '\\x${Buffer.from(BINARY_CONTENT).toString("hex")}'::bytea)`);
  // A DDL-only transaction: wal2json prints it empty, pgoutput sends nothing.
  await client.query("BEGIN");
  await client.query(`CREATE TABLE ${S}.later (a int)`);
  emptyXids.add((await client.query("SELECT pg_current_xact_id()::text AS xid")).rows[0].xid as string);
  await client.query("COMMIT");
  // Rolled back: nothing; a rolled back savepoint: its change left out.
  await client.query(`BEGIN; INSERT INTO ${S}.plain VALUES (5, 'five'); ROLLBACK`);
  await tx(`INSERT INTO ${S}.plain VALUES (6, 'six')`, "SAVEPOINT s", `INSERT INTO ${S}.plain VALUES (7, 'seven')`, "ROLLBACK TO s", `INSERT INTO ${S}.plain VALUES (8, 'eight')`);
  // Larger than logical_decoding_work_mem (64kB): streamed in blocks, replayed by the pipeline.
  await tx(`INSERT INTO ${S}.plain SELECT g, repeat('x', 40) FROM generate_series(1000, 2200) g`);
  await tx(`INSERT INTO ${S}.plain VALUES (9, 'the end')`);
}

/** A message as the XLogData frame it came in (`w`, positions, send time, bytes). */
function frameOf(msg: PgoutputMessage): Uint8Array {
  const body = msg.bytes();
  const out = new Uint8Array(25 + body.length);
  const dv = new DataView(out.buffer);
  out[0] = 0x77;
  dv.setBigUint64(1, msg.walStart ?? 0n);
  dv.setBigUint64(9, msg.walEnd ?? 0n);
  dv.setBigInt64(17, msg.sendTime === undefined ? 0n : toPostgresTimestamp(msg.sendTime));
  out.set(body, 25);
  return out;
}

/** A sink keeping each record's text (without its newline). */
function textSink(into: string[]) {
  const text = new TextDecoder();
  return {
    name: "texts",
    write: async (r: Records) => {
      for (let i = 0; i < r.length; i++) into.push(text.decode(r.bytesOf(i)).replace(/\n$/, ""));
    },
    close: async () => {},
  };
}

/** The real stream through the pipeline with `options`, recording its frames. */
async function streamOnce(options: FormatOptionValues): Promise<string[]> {
  const until = BigInt(`0x${(await admin.query("SELECT lpad(replace(pg_current_wal_lsn()::text, '/', ''), 16, '0') AS l")).rows[0].l}`);
  const values = wal2json.values(types);
  const decoder = await createDecoder({ values });
  const stream = await replicate({
    connection: { host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database },
    slot: PGOUTPUT_SLOT, publications: [`${S}_pub`], ack: "manual", decoder, messages: true, streaming: "on", reconnect: false,
  });
  const source = streamSource(stream, { acknowledge: false });
  const tee: PipelineSource = {
    async *[Symbol.asyncIterator]() {
      for await (const item of source as AsyncIterable<SourceItem>) {
        if (item.kind !== "PrimaryKeepalive" && item.kind !== "SnapshotRow" && item.kind !== "SnapshotComplete" && item.kind !== "BackfillRow" && item.kind !== "BackfillComplete") frames.push(frameOf(item));
        yield item;
      }
    },
    ack: (lsn) => source.ack(lsn),
    stop: () => source.stop(),
    get ready() {
      return source.ready;
    },
  };
  const out: string[] = [];
  const pipeline = new Pipeline({ source: tee, format: wal2json.create({ decoder }, options), replayDecoder: await createDecoder({ values }), sink: textSink(out) });
  // Everything up to `until` was received and nothing more is waiting.
  const idle = setInterval(() => {
    if (stream.lastReceivedLsn >= until && !stream.ready) pipeline.stop();
  }, 300);
  try {
    await pipeline.run();
  } finally {
    clearInterval(idle);
    await stream.stop();
  }
  return out;
}

/** The recorded stream through the pipeline again, with `options`, on `backend`. */
async function replay(options: FormatOptionValues, backend: Backend = backends[0]!): Promise<string[]> {
  const values = wal2json.values(types);
  const decoder = await backend.create({ values });
  const source: PipelineSource = {
    async *[Symbol.asyncIterator]() {
      for (let i = 0; i < frames.length; i += 100) {
        const batch = decoder.decodeCopyData(frames.slice(i, i + 100));
        for (let k = 0; k < batch.length; k++) yield batch.get(k) as SourceItem;
      }
    },
    ack: () => {},
    stop: async () => {},
  };
  const out: string[] = [];
  const format = wal2json.create({ decoder }, formatOptions(formatNamed("wal2json"), options));
  const result = await new Pipeline({ source, format, replayDecoder: await backend.create({ values }), sink: textSink(out) }).run();
  expect(result.reason).toBe("ended");
  return out;
}

/** wal2json's documents for the same range, with `options`: xid and text of each row. */
async function plugin(options: FormatOptionValues, slot = PLUGIN_SLOT): Promise<{ xid: string; data: string }[]> {
  const args = Object.entries(options).flatMap(([k, v]) => [k, String(v)]);
  const { rows } = await admin.query(`SELECT xid::text AS xid, data FROM pg_logical_slot_peek_changes($1, NULL, NULL, VARIADIC $2::text[])`, [slot, args]);
  return rows as { xid: string; data: string }[];
}

/**
 * The documented differences (docs/cli-output.md, "wal2json"), applied to
 * one of wal2json's documents; `seen` counts each applied.
 */
function documented(version: 1 | 2, raw: string, seen: Map<string, number>): { text: string; json: RawJsonValue | undefined } {
  const count = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);
  let text = raw;
  // wal2json 2.5's stray comma in a non-transactional message after a transaction of several changes (fixed in 2.6).
  if (version === 1) {
    const fixed = text.replace(/^(\{\n?\t?"change":\s?\[\n?\t*),\{/, "$1{");
    if (fixed !== text) count("2.5 stray comma");
    text = fixed;
  }
  // Domains: pgoutput's Type message names the base type.
  for (const [theirs, ours] of [['"w2j.values_posint[]"', '"bigint[]"'], ['"w2j.values_posint"', '"bigint"'], ['"w2j.values_label"', '"text"'], ['"values_posint"', '"int8"'], ['"values_label"', '"text"']]) {
    if (text.includes(theirs!)) count("domain type");
    text = text.split(theirs!).join(ours!);
  }
  let json: RawJsonValue | undefined;
  const changes = (doc: RawJsonValue): Record<string, RawJsonValue>[] =>
    version === 1 ? ((doc as Record<string, RawJsonValue[]>).change as Record<string, RawJsonValue>[]) : [doc as Record<string, RawJsonValue>];
  const doc = parseRawJson(text);
  for (const c of changes(doc)) {
    // Binary message content: base64 with "encoding", where wal2json cuts at the NUL.
    if ((c.kind === "message" || c.action === "M") && c.prefix === "bytes") {
      c.content = toBase64(BINARY_CONTENT);
      c.encoding = "base64";
      count("binary content");
      json = doc;
    }
    // The primary key of a FULL or USING INDEX table: pgoutput does not say which columns it is.
    if (version === 2 && c.pk !== undefined && (c.table === "full_rows" || c.table === "by_index")) {
      delete c.pk;
      count("pk unknown");
      json = doc;
    }
    // Generated columns: pgoutput 15 does not send them.
    if (c.table === "generated") {
      if (version === 2) c.columns = (c.columns as Record<string, RawJsonValue>[]).filter((col) => col.name !== "gen");
      else {
        const at = (c.columnnames as string[]).indexOf("gen");
        for (const key of ["columnnames", "columntypes", "columntypeoids", "columnvalues"]) (c[key] as RawJsonValue[] | undefined)?.splice(at, 1);
      }
      count("generated column");
      json = doc;
    }
  }
  return { text, json };
}

/** Asserts our documents are wal2json's (with the documented differences); returns the differences seen. */
function compare(version: 1 | 2, ours: string[], theirs: { xid: string; data: string }[]): Map<string, number> {
  const seen = new Map<string, number>();
  const kept = theirs.filter((r) => {
    if (!emptyXids.has(r.xid)) return true;
    // An empty transaction: nothing in it.
    const doc = parseRawJson(r.data) as Record<string, RawJsonValue>;
    expect(version === 1 ? doc.change : ["B", "C"].includes(doc.action as string) ? [] : doc).toEqual([]);
    seen.set("empty transaction", (seen.get("empty transaction") ?? 0) + 1);
    return false;
  });
  const expected = kept.map((r) => documented(version, r.data, seen));
  const width = Math.max(ours.length, expected.length);
  for (let i = 0; i < width; i++) {
    const e = expected[i];
    const o = ours[i];
    if (e === undefined || o === undefined || e.json === undefined) {
      // Byte for byte.
      expect({ i, doc: o }).toEqual({ i, doc: e?.text });
    } else {
      expect({ i, doc: parseRawJson(o) }).toEqual({ i, doc: e.json });
    }
  }
  return seen;
}

const SETS: Record<string, FormatOptionValues> = {
  defaults: {},
  xids: { "include-xids": true },
  timestamp: { "include-timestamp": true },
  lsn: { "include-lsn": true },
  "every field": { "include-xids": true, "include-timestamp": true, "include-lsn": true, "include-type-oids": true, "include-pk": true },
  "no schemas": { "include-schemas": false },
  "no types": { "include-types": false },
  "no typmod": { "include-typmod": false },
  "type oids": { "include-type-oids": true },
  pk: { "include-pk": true },
  "pk without types": { "include-pk": true, "include-types": false, "include-typmod": false },
  "no transaction": { "include-transaction": false },
  "no transaction, lsn": { "include-transaction": false, "include-lsn": true, "include-xids": true },
  "explicit defaults": { "include-transaction": true, "include-schemas": true, "include-types": true, "include-typmod": true, "include-xids": false, "pretty-print": false },
  pretty: { "pretty-print": true },
  "pretty, every field": { "pretty-print": true, "include-xids": true, "include-timestamp": true, "include-lsn": true, "include-pk": true, "include-type-oids": true },
  "insert and delete": { actions: "insert,delete" },
  "truncate and update": { actions: " truncate , update " },
  "no actions": { actions: "" },
  "add tables": { "add-tables": "w2j.plain, *.docs,w2j.Odd\\ Table\\.x" },
  "add a schema": { "add-tables": "w2j.*" },
  "filter tables": { "filter-tables": "w2j.typed,*.elsewhere" },
  "add and filter": { "add-tables": "w2j.*", "filter-tables": "w2j.full_rows" },
  "add no table": { "add-tables": "" },
  "add prefixes": { "add-msg-prefixes": "a,text,bytes" },
  "filter prefixes": { "filter-msg-prefixes": "a, b" },
  "filter then add": { "add-msg-prefixes": "a,b", "filter-msg-prefixes": "b" },
};

beforeAll(async () => {
  cli = buildCli(CLI_FOLDER);
  cli.catch(() => {}); // awaited by its test
  cluster = await startCluster(15);
  admin = new pg.Client({ host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database });
  await admin.connect();
  await setup(admin);
  await admin.query("RESET search_path"); // wal2json qualifies types by the reading session's search_path
  types = typesFromCatalog((await admin.query<CatalogTypeRow>(TYPES_QUERY)).rows);
  await admin.query(`SELECT pg_create_logical_replication_slot('${PLUGIN_SLOT}', 'wal2json')`);
  await admin.query(`SELECT pg_create_logical_replication_slot('${PGOUTPUT_SLOT}', 'pgoutput')`);
  const client = new pg.Client({ host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database });
  await client.connect();
  try {
    await client.query(`SET search_path = ${S}, public`);
    await workload(client);
  } finally {
    await client.end();
  }
  streamed = await streamOnce({ ...SETS["every field"]!, "format-version": "2" });
}, 120_000);

afterAll(async () => {
  await admin?.end();
  await cluster?.stop();
  await removeCli(CLI_FOLDER);
});

describe("wal2json documents from pgoutput equal wal2json 2.5's", () => {
  it("the real stream through the pipeline (streaming on) equals the plugin, and so does its recording", async () => {
    const options = { ...SETS["every field"]!, "format-version": "2" };
    const seen = compare(2, streamed, await plugin(options));
    expect(seen.get("empty transaction")).toBe(2);
    expect(await replay(options)).toEqual(streamed);
  });

  for (const version of [1, 2] as const) {
    for (const [name, set] of Object.entries(SETS)) {
      it(`format-version ${version}, ${name}`, async () => {
        const options = { ...set, "format-version": String(version) };
        const seen = compare(version, await replay(options), await plugin(options));
        const actions = set.actions as string | undefined;
        const shown = (kind: string) => actions === undefined || actions.includes(kind);
        // The documented differences this workload has, each seen where the options show what it is about.
        if (version === 1 || set["include-transaction"] !== false) expect(seen.get("empty transaction")).toBeGreaterThan(0);
        if (set["add-tables"] === undefined && set["filter-tables"] === undefined && shown("insert")) {
          if (set["include-types"] === false) expect(seen.get("domain type")).toBeUndefined();
          else expect(seen.get("domain type")).toBeGreaterThan(0);
          expect(seen.get("generated column")).toBeGreaterThan(0);
        }
        const prefixes = set["add-msg-prefixes"] as string | undefined;
        if (prefixes === undefined || prefixes.includes("bytes")) expect(seen.get("binary content")).toBe(2);
        if (version === 2 && set["include-pk"] === true && set["add-tables"] === undefined) expect(seen.get("pk unknown")).toBe(9);
        if (version === 1 && name === "defaults") expect(seen.get("2.5 stray comma")).toBe(1);
      });
    }
  }

  it("numeric-data-types-as-string (wal2json 2.6; 2.5 has no such option): every number of the verified documents as its text in a string", async () => {
    await expect(plugin({ "numeric-data-types-as-string": true })).rejects.toThrow(/option "numeric-data-types-as-string" = "true" is unknown/);
    for (const version of ["1", "2"]) {
      const plain = (await replay({ "format-version": version, "include-type-oids": true })).map(parseRawJson);
      const strings = (await replay({ "format-version": version, "include-type-oids": true, "numeric-data-types-as-string": true })).map(parseRawJson);
      const counts = { numbers: 0, special: 0 };
      // Walks both: a number becomes its text; a null may be NaN or ±Infinity (null without the option); all else equal.
      const walk = (a: RawJsonValue, b: RawJsonValue, path: string): void => {
        if (a !== null && typeof a === "object" && "$number" in a && path.includes("value")) {
          expect({ path, b }).toEqual({ path, b: a.$number });
          counts.numbers++;
        } else if (a === null && typeof b === "string") {
          expect(["NaN", "Infinity", "-Infinity"]).toContain(b);
          counts.special++;
        } else if (Array.isArray(a) && Array.isArray(b)) {
          expect(b.length).toBe(a.length);
          a.forEach((x, i) => walk(x, b[i]!, path));
        } else if (a !== null && typeof a === "object" && !("$number" in a)) {
          expect(Object.keys(b as object)).toEqual(Object.keys(a));
          for (const [k, v] of Object.entries(a)) walk(v, (b as Record<string, RawJsonValue>)[k]!, `${path}.${k}`);
        } else expect({ path, b }).toEqual({ path, b: a });
      };
      expect(strings.length).toBe(plain.length);
      plain.forEach((doc, i) => walk(doc, strings[i]!, ""));
      expect(counts.numbers).toBeGreaterThan(100);
      expect(counts.special).toBeGreaterThan(5);
    }
  });

  it("option values wal2json refuses are refused here too", async () => {
    const bads: FormatOptionValues[] = [
      { "add-tables": "nodot" }, { "add-tables": "w2j.plain," }, { "filter-tables": "a.b c.d" }, { actions: "insert,upsert" },
      { actions: "insert update" }, { "add-msg-prefixes": "a b" }, { "filter-msg-prefixes": "," }, { "format-version": "3" }, { "format-version": "x" },
    ];
    for (const bad of bads) {
      await expect(plugin(bad), JSON.stringify(bad)).rejects.toThrow(/could not parse value|only support format|invalid/);
      expect(() => wal2json.create({ decoder: { types: new Map() } }, formatOptions(formatNamed("wal2json"), bad)), JSON.stringify(bad)).toThrow(TypeError);
    }
  });

  it("the same documents from the baseline backend", async () => {
    for (const set of [SETS["every field"]!, SETS["pretty, every field"]!]) {
      for (const version of ["1", "2"]) {
        const options = { ...set, "format-version": version };
        expect(await replay(options, backends[1])).toEqual(await replay(options, backends[0]));
      }
    }
  });

  it("tail --format wal2json -o format-version=1 -o include-xids=true prints wal2json's documents", async () => {
    const main = await cli;
    await admin.query("SELECT pg_create_logical_replication_slot('w2j_cli_plugin', 'wal2json')");
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
    const child = spawn(process.execPath, [main, "tail", "-c", cluster.connectionString, "--publication", `${S}_pub`, "--slot", "w2j_cli", "--create-slot",
      "--messages", "--format", "wal2json", "-o", "format-version=1", "-o", "include-xids=true"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    try {
      // Streaming from its slot: START_REPLICATION runs.
      for (let deadline = Date.now() + 20_000; ; ) {
        const { rows } = await admin.query(`SELECT 1 FROM pg_replication_slots s JOIN pg_stat_activity a ON a.pid = s.active_pid
          WHERE s.slot_name = 'w2j_cli' AND a.query LIKE 'START_REPLICATION%'`);
        if (rows.length > 0) break;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`tail did not start streaming: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const w = new pg.Client({ host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database });
      await w.connect();
      try {
        await w.query("SET synchronous_commit = on");
        await w.query(`BEGIN; INSERT INTO ${S}.plain VALUES (20, 'cli'), (21, E'tab\\there'); UPDATE ${S}.plain SET v = 'again' WHERE id = 20; COMMIT`);
        await w.query("SELECT pg_logical_emit_message(false, 'cli', 'outside')");
        await w.query(`BEGIN; DELETE FROM ${S}.plain WHERE id = 21; SELECT pg_logical_emit_message(true, 'cli', 'inside'); COMMIT`);
      } finally {
        await w.end();
      }
      const theirs = await plugin({ "format-version": "1", "include-xids": true }, "w2j_cli_plugin");
      expect(theirs).toHaveLength(3);
      for (let deadline = Date.now() + 20_000; stdout.split("\n").length <= theirs.length && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
      // One line per document; the non-transactional message after a transaction of three changes: 2.5's stray comma.
      expect(compare(1, stdout.split("\n").slice(0, -1), theirs).get("2.5 stray comma")).toBe(1);
    } finally {
      child.kill("SIGINT");
      expect(await exited, stderr).toBe(0);
      await admin.query("SELECT pg_drop_replication_slot('w2j_cli_plugin')");
      await admin.query("SELECT pg_drop_replication_slot('w2j_cli')");
    }
  });
});
