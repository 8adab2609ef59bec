/**
 * The debezium format (bindings/formats/debezium.ts) against real
 * PostgreSQL 15 and 18 through a walsender and the library's Pipeline: a
 * workload of the documentation's `customers` table (insert, update with
 * and without a key change, delete, a snapshot row), REPLICA IDENTITY FULL
 * and USING INDEX, unchanged TOAST, truncate, logical messages, and a row
 * with every value of test/support/values-cases.ts must give events of
 * exactly the documented shapes (support/debezium-docs.ts) and Debezium's
 * value for each type; keys, tombstones, the key-change headers and the
 * transaction metadata as Debezium has them. Option values and
 * combinations the format refuses, before anything starts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { debezium } from "../bindings/formats/debezium.ts";
import { formatOptions } from "../bindings/formats/index.ts";
import type { FormatOptionValues } from "../bindings/pipeline/format.ts";
import { CASES, SETUP_SQL } from "./support/values-cases.ts";
import { parseRawJson } from "./support/raw-json.ts";
import { b64, expectedOf, intervalMicros, valueDiff } from "./support/debezium-expected.ts";
import { streamFormat, type StreamedRecord } from "./support/format-stream.ts";
import * as docs from "./support/debezium-docs.ts";

// ------------------------------------------------------------------ the workload

const BIG = "md5(i::text)";
const big = (n: number) => `(SELECT string_agg(${BIG}, '') FROM generate_series(1, ${n}) i)`;

async function workload(c: import("pg").Client): Promise<void> {
  await c.query("INSERT INTO inventory.customers VALUES (1, 'Anne', 'Kretchmar', 'annek@noanswer.org')");
  await c.query("UPDATE inventory.customers SET first_name = 'Anne Marie' WHERE id = 1");
  await c.query("UPDATE inventory.customers SET id = 2 WHERE id = 1");
  await c.query("DELETE FROM inventory.customers WHERE id = 2");
  await c.query("INSERT INTO dbz.all_types (id) VALUES (3)");
  await c.query(`INSERT INTO dbz.toasty VALUES (1, ${big(400)}, 'n1')`);
  await c.query("UPDATE dbz.toasty SET note = 'n2' WHERE id = 1");
  await c.query(`INSERT INTO dbz.full_t VALUES (1, 'a', ${big(400)})`);
  await c.query("UPDATE dbz.full_t SET v = 'b' WHERE id = 1");
  await c.query("UPDATE dbz.full_t SET id = 5 WHERE id = 1");
  await c.query("DELETE FROM dbz.full_t WHERE id = 5");
  await c.query("INSERT INTO dbz.by_index VALUES (1, 1, 'x')");
  await c.query("UPDATE dbz.by_index SET v = 'y'");
  await c.query("UPDATE dbz.by_index SET a = 2");
  // One transaction over two tables, for the transaction metadata.
  await c.query(`BEGIN; INSERT INTO inventory.customers VALUES (3, 'Edward', 'Walker', 'ed@walker.com');
    INSERT INTO dbz.full_t VALUES (2, 'c', 'small'); UPDATE inventory.customers SET email = 'e@w.com' WHERE id = 3; COMMIT`);
  await c.query("SELECT pg_logical_emit_message(true, 'foo', 'bar')");
  await c.query("SELECT pg_logical_emit_message(false, 'foo', 'bar')");
  await c.query("TRUNCATE dbz.nokey");
}

const parse = (r: StreamedRecord) => JSON.parse(r.text) as Record<string, any>;

for (const major of [15, 18] as const) {
  describe(`debezium events, PostgreSQL ${major}`, () => {
    let cluster: Cluster;
    const cases = CASES.filter((c) => (c.since ?? 0) <= major);
    const days = new Map<string, bigint>();
    let slot = 0;

    beforeAll(async () => {
      cluster = await startCluster(major);
      for (const sql of SETUP_SQL) await cluster.query(sql);
      await cluster.query(`CREATE SCHEMA inventory; CREATE SCHEMA dbz;
        CREATE TABLE inventory.customers (id SERIAL, first_name VARCHAR(255) NOT NULL, last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL, PRIMARY KEY(id));
        CREATE TABLE dbz.all_types (id int PRIMARY KEY, ${cases.map((c, i) => `c${i} ${c.type}`).join(", ")});
        CREATE TABLE dbz.full_t (id int PRIMARY KEY, v text, big text); ALTER TABLE dbz.full_t REPLICA IDENTITY FULL;
        CREATE TABLE dbz.toasty (id int PRIMARY KEY, big text, note text);
        CREATE TABLE dbz.by_index (a int NOT NULL, b int NOT NULL, v text); CREATE UNIQUE INDEX by_index_ab ON dbz.by_index (a, b);
        ALTER TABLE dbz.by_index REPLICA IDENTITY USING INDEX by_index_ab;
        CREATE TABLE dbz.nokey (v text);
        CREATE PUBLICATION dbz_pub FOR TABLE inventory.customers, dbz.all_types, dbz.full_t, dbz.toasty, dbz.by_index, dbz.nokey`);
      for (const c of cases) {
        if (!c.type.startsWith("date")) continue;
        for (const d of (Array.isArray(c.expected) ? c.expected : [c.expected]) as string[]) {
          if (d === "infinity" || d === "-infinity") continue;
          const rows = await cluster.query<{ days: number }>(`SELECT ($1::date - date '1970-01-01') AS days`, [d]);
          days.set(d, BigInt(rows[0]!.days));
        }
      }
    }, 120_000);

    afterAll(async () => {
      await cluster?.stop();
    });

    /** The workload's events with these options, after a snapshot of the rows there before (Sally, and every value). */
    async function events(options: FormatOptionValues, binary = false): Promise<StreamedRecord[]> {
      await cluster.query(`TRUNCATE inventory.customers, dbz.all_types, dbz.full_t, dbz.toasty, dbz.by_index, dbz.nokey;
        INSERT INTO inventory.customers VALUES (1001, 'Sally', 'Thomas', 'sally.thomas@acme.com');
        INSERT INTO dbz.all_types VALUES (1, ${cases.map((c) => `(${c.sql})::${c.type}`).join(", ")})`);
      return streamFormat(cluster, {
        slot: `dbz_${++slot}`, publication: "dbz_pub", format: debezium, options, snapshot: true, messages: true, binary, database: "postgres",
        workload: async (c) => {
          await c.query(`INSERT INTO dbz.all_types VALUES (2, ${cases.map((v) => `(${v.sql})::${v.type}`).join(", ")})`);
          await workload(c);
        },
      });
    }

    const of = (records: StreamedRecord[], table: string, op?: string) =>
      records.filter((r) => r.table === table && r.kind !== "tombstone").map(parse).filter((e) => op === undefined || e.op === op);

    it("defaults: the documented events of customers, every type's value, TOAST, FULL, USING INDEX, messages; no truncate, no tombstone", async () => {
      const records = await events({});
      const customers = records.filter((r) => r.table === "customers");
      const shapes = [docs.READ, docs.CREATE, docs.UPDATE, docs.KEY_CHANGE_DELETE, docs.KEY_CHANGE_CREATE, docs.DELETE];
      expect(customers.slice(0, 6).map((r) => docs.shapeDiff(parse(r), shapes.shift()!))).toEqual([[], [], [], [], [], []]);
      // Keys: the primary key struct; the key change's headers name the other key.
      expect(customers.slice(0, 6).map((r) => [r.kind, r.key, r.headers])).toEqual([
        ["snapshot", '{"id":1001}', undefined], ["insert", '{"id":1}', undefined], ["update", '{"id":1}', undefined],
        ["delete", '{"id":1}', { "__debezium.newkey": '{"id":2}' }], ["insert", '{"id":2}', { "__debezium.oldkey": '{"id":1}' }],
        ["delete", '{"id":2}', undefined],
      ]);
      expect(records.some((r) => r.kind === "tombstone" || r.kind === "truncate" || r.kind === "begin")).toBe(false);

      // Every value of the suite, in the snapshot row (op r) and the streamed one (op c); the row of NULLs.
      const rows = records.filter((r) => r.table === "all_types").map((r) => parseRawJson(r.text) as Record<string, any>);
      expect(rows.map((e) => [e.op, e.after.id.$number])).toEqual([["r", "1"], ["c", "2"], ["c", "3"]]);
      for (const e of rows.slice(0, 2)) {
        const diffs = cases.flatMap((c, i) => valueDiff(e.after[`c${i}`], expectedOf(c, days), `${e.op} c${i} ${c.type} ${c.sql.slice(0, 40)}`));
        expect(diffs).toEqual([]);
      }
      expect(Object.values(rows[2]!.after).slice(1).every((v) => v === null)).toBe(true);

      // Unchanged TOAST: the placeholder; REPLICA IDENTITY FULL: the whole old row (its TOAST filled from it), no key known.
      const toasty = of(records, "toasty");
      expect(toasty.map((e) => [e.op, e.before, e.after.big === "__debezium_unavailable_value", e.after.note])).toEqual([["c", null, false, "n1"], ["u", null, true, "n2"]]);
      expect(toasty[0]!.after.big).toHaveLength(400 * 32);
      const full = records.filter((r) => r.table === "full_t");
      expect(full.map((r) => { const e = parse(r); return [e.op, e.before?.id, e.before?.v, e.before?.big?.length, e.after?.id, e.after?.v, e.after?.big?.length, r.key]; })).toEqual([
        ["c", undefined, undefined, undefined, 1, "a", 12800, undefined],
        ["u", 1, "a", 12800, 1, "b", 12800, undefined],
        ["u", 1, "b", 12800, 5, "b", 12800, undefined],
        ["d", 5, "b", 12800, undefined, undefined, undefined, undefined],
        ["c", undefined, undefined, undefined, 2, "c", 5, undefined],
      ]);
      // USING INDEX: the index's columns are the key and the old row's `before`.
      const byIndex = records.filter((r) => r.table === "by_index");
      expect(byIndex.map((r) => { const e = parse(r); return [e.op, r.key, e.before]; })).toEqual([
        ["c", '{"a":1,"b":1}', null], ["u", '{"a":1,"b":1}', null], ["d", '{"a":1,"b":1}', { a: 1, b: 1 }], ["c", '{"a":2,"b":1}', null],
      ]);

      // Messages: keyed by prefix; the transactional one has the transaction's id, the other none.
      const messages = records.filter((r) => r.kind === "message");
      expect(messages.map((r) => docs.shapeDiff(parse(r), [docs.MESSAGE, docs.MESSAGE_OUTSIDE][messages.indexOf(r)]!))).toEqual([[], []]);
      expect(messages.map((r) => r.key)).toEqual(['{"prefix":"foo"}', '{"prefix":"foo"}']);

      // source: the change's own LSN and the transaction's, the previous commit in `sequence`, commit time in ts_*.
      const update = parse(customers[2]!);
      expect(BigInt(update.source.ts_us)).toBe(customers[2]!.time);
      expect(update.source.ts_ms).toBe(Math.floor(update.source.ts_us / 1000));
      const [lastCommit, lsn] = JSON.parse(update.source.sequence) as [string, string];
      expect(lsn).toBe(String(update.source.lsn));
      expect(BigInt(lastCommit)).toBeLessThanOrEqual(BigInt(update.source.lsn));
      expect(update.source.lsn).toBeGreaterThan(0);
    }, 120_000);

    it("transaction metadata, tombstones, truncate, precise decimals, key-columns", async () => {
      const records = await events({
        "transaction-metadata": true, tombstones: true, "skipped-operations": ["none"], "decimal-handling": "precise", "key-columns": "dbz\\.full_t:id", "interval-handling": "numeric",
      });
      // Every event of a transaction between its BEGIN and END, which count them (per table too); the ids are xid:LSN.
      let open: { id: string; count: number; tables: Map<string, number> } | undefined;
      let transactions = 0;
      for (const r of records) {
        const e = parse(r);
        if (r.kind === "begin") {
          expect(docs.shapeDiff(e, docs.BEGIN)).toEqual([]);
          expect(open).toBeUndefined();
          expect(r.key).toBe(JSON.stringify({ id: e.id }));
          open = { id: e.id, count: 0, tables: new Map() };
        } else if (r.kind === "commit") {
          expect(docs.shapeDiff(e, docs.END)).toEqual([]);
          expect(e.id.split(":")[0]).toBe(open!.id.split(":")[0]);
          expect(e.event_count).toBe(open!.count);
          expect(e.data_collections).toEqual([...open!.tables].map(([data_collection, event_count]) => ({ data_collection, event_count })));
          open = undefined;
          transactions++;
        } else if (r.kind === "tombstone") {
          expect(r.text).toBe("null\n");
        } else if (e.op !== "r" && e.op !== "m") {
          const table = `${e.source.schema}.${e.source.table}`;
          open!.count++;
          open!.tables.set(table, (open!.tables.get(table) ?? 0) + 1);
          expect(docs.shapeDiff(e.transaction, docs.TRANSACTION)).toEqual([]);
          expect(e.transaction).toEqual({ id: `${e.source.txId}:${e.source.lsn}`, total_order: open!.count, data_collection_order: open!.tables.get(table) });
        }
      }
      expect(open).toBeUndefined();
      expect(transactions).toBe(17);
      const two = records.find((r) => r.kind === "commit" && parse(r).event_count === 3)!;
      expect(parse(two).data_collections).toEqual([{ data_collection: "inventory.customers", event_count: 2 }, { data_collection: "dbz.full_t", event_count: 1 }]);

      // A tombstone after each delete, with its key: the key change's delete too.
      const customers = records.filter((r) => r.table === "customers").map((r) => [r.kind, r.key]);
      expect(customers.slice(0, 7)).toEqual([
        ["snapshot", '{"id":1001}'], ["insert", '{"id":1}'], ["update", '{"id":1}'], ["delete", '{"id":1}'], ["tombstone", '{"id":1}'], ["insert", '{"id":2}'], ["delete", '{"id":2}'],
      ]);
      // key-columns gives the FULL table a key, and its change is a delete and a create, as for a primary key.
      expect(records.filter((r) => r.table === "full_t").map((r) => [r.kind, r.key])).toEqual([
        ["insert", '{"id":1}'], ["update", '{"id":1}'], ["delete", '{"id":1}'], ["tombstone", '{"id":1}'], ["insert", '{"id":5}'],
        ["delete", '{"id":5}'], ["tombstone", '{"id":5}'], ["insert", '{"id":2}'],
      ]);
      // The truncate, keyless.
      const truncate = records.filter((r) => r.kind === "truncate");
      expect(truncate.map((r) => [r.table, r.key, docs.shapeDiff(parse(r), { ...docs.TRUNCATE, source: { ...docs.CHANGE_SOURCE, schema: "dbz", table: "nokey" } })])).toEqual([["nokey", undefined, []]]);

      // decimal-handling precise: Kafka Connect Decimal bytes at the column's scale, VariableScaleDecimal without one.
      const row = parse(records.find((r) => r.table === "all_types" && parse(r).op === "c")!).after;
      const at = (type: string, sql: string) => row[`c${cases.findIndex((c) => c.type === type && c.sql === sql)}`];
      expect(at("numeric(20,10)", "'1.5'")).toBe(b64([0x03, 0x7e, 0x11, 0xd6, 0x00])); // 15000000000
      expect(at("numeric", "'-1.50'")).toEqual({ scale: 1, value: b64([0xf1]) }); // -15
      expect(at("numeric", "'0.000001000'")).toEqual({ scale: 6, value: b64([0x01]) });
      expect(at("numeric", "'0'")).toEqual({ scale: 0, value: b64([0x00]) });
      expect(at("numeric", "'NaN'")).toBe("NAN");
      // interval-handling numeric: Debezium's MicroDuration (approximate: a month of 30.4375 days).
      for (const sql of ["'1 year 2 mons 3 days 04:05:06.789'", "'-1 year -2 mons 3 days -4:05:06.000001'"]) {
        const c = cases.find((x) => x.type === "interval" && x.sql === sql)!;
        expect(at("interval", sql)).toBe(Number(intervalMicros(c.expected as { months: number; days: number; microseconds: bigint })));
      }
      expect(at("money", "'1234.56'")).toBe(b64([0x01, 0xe2, 0x40])); // 123456
      expect(at("money", "'-92233720368547758.08'")).toBe(b64([0x80, 0, 0, 0, 0, 0, 0, 0]));
    }, 120_000);

    it("binary values: the same events as text, but for the types without a binary reader (their bytes, base64)", async () => {
      if (major !== 18) return;
      const [text, binary] = [await events({}), await events({}, true)];
      const rowOf = (records: StreamedRecord[]) => parse(records.find((r) => r.table === "all_types" && parse(r).op === "c")!).after;
      const [t, b] = [rowOf(text), rowOf(binary)];
      for (const [i, c] of cases.entries()) {
        if (c.textOnly && c.type !== "point") expect(typeof b[`c${i}`], c.type).toBe("string");
        else expect(b[`c${i}`], `${c.type} ${c.sql}`).toStrictEqual(t[`c${i}`]);
      }
    }, 120_000);
  });
}

describe("debezium options", () => {
  const check = (o: FormatOptionValues) => () => formatOptions(debezium, o);

  it("refuses values outside their choices, and combinations that do not go together, naming them", () => {
    expect(check({ "decimal-handling": "exact" })).toThrow(/option decimal-handling takes string, double, precise, not "exact"/);
    expect(check({ "skipped-operations": ["c", "x"] })).toThrow(/skipped-operations takes c, u, d, t, none, not "x"/);
    expect(check({ "skipped-operations": ["none", "t"] })).toThrow(/none leaves nothing out: give it alone/);
    expect(check({ "key-columns": "public.t" })).toThrow(/key-columns: "public.t" is not schema.table:column/);
    expect(check({ "key-columns": "(:id" })).toThrow(/is not a regular expression/);
    expect(check({ transactions: true })).toThrow(/format debezium has no option "transactions" \(it takes server-name, /);
    expect(check({ "time-precision": "microseconds", "key-columns": "public\\.t:a,b;.*\\.u:c" })()).toBeDefined();
  });
});
