/**
 * bindings/values against real PostgreSQL 15 and 18, the gold standard.
 *
 * 1. Every edge case of support/values-cases.ts: the server prints the value
 *    (its output function: what pgoutput sends as `t`) and sends it (its
 *    send function, `typsend`: what pgoutput sends as `b` with `binary`); both
 *    must parse to the expected value.
 * 2. Random values of support/values-arbitraries.ts: the server's text and
 *    bytes must equal our printer's and encoder's, and parse back to the value.
 * 3. A pgoutput capture of a table with a column per case, in text and in
 *    binary mode, decoded by both backends: each column's value as expected,
 *    text == binary; unchanged TOAST as the marker, filled from an old tuple.
 */
import fc from "fast-check";
import type { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinTypes, columnReader, Oid, TYPES_QUERY, tupleValues, typesFromCatalog, unchangedColumnNames, unchangedToast, ValueDecoder } from "../bindings/values/index.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import { backends } from "./support/backends.ts";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { createSlot, dropSlot, getChanges, peekChanges } from "../devkit/capture/slot.ts";
import { GENERATORS } from "./support/values-arbitraries.ts";
import { CASES, SETUP_SQL, type ValueCase } from "./support/values-cases.ts";
import { utf8 } from "../devkit/encoder/values-print.ts";

const RANDOM_PER_TYPE = Number(process.env.VALUES_PG_RANDOM ?? 150);

/** Rows with every value as the server's raw text (no pg-types parsing). */
async function raw(client: Client, text: string, values?: unknown[]): Promise<(string | null)[][]> {
  const identity = { getTypeParser: () => (x: string) => x };
  const r = (await client.query({ text, values, rowMode: "array", types: identity } as never)) as unknown as { rows: (string | null)[][] };
  return r.rows;
}

function unhex(s: string): Uint8Array {
  if (!s.startsWith("\\x")) throw new Error(`not hex bytea: ${s.slice(0, 20)}`);
  return Uint8Array.from(Buffer.from(s.slice(2), "hex"));
}

const show = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : x instanceof Uint8Array ? `bytes(${x.length})` : x)) ?? String(v);

for (const major of [15, 18] as const) {
  describe(`PostgreSQL ${major}`, () => {
    let cluster: Cluster;
    let client: Client;
    let values: ValueDecoder;
    const cases = CASES.filter((c) => (c.since ?? 0) <= major);

    beforeAll(async () => {
      cluster = await startCluster(major);
      client = await cluster.connect();
      for (const sql of SETUP_SQL) await client.query(sql);
      const types = typesFromCatalog((await client.query(TYPES_QUERY)).rows);
      values = new ValueDecoder({ types });
    });

    afterAll(async () => {
      await client?.end().catch(() => {});
      await cluster?.stop();
    });

    it("a walsender starts with DateStyle ISO, IntervalStyle postgres, extra_float_digits 1, bytea_output hex", async () => {
      const repl = await cluster.connect({ replication: "database" });
      try {
        const settings: Record<string, string> = {};
        for (const name of ["DateStyle", "IntervalStyle", "TimeZone", "extra_float_digits", "bytea_output", "lc_monetary"]) {
          const r = await repl.query(`SHOW ${name}`);
          settings[name] = String(Object.values(r.rows[0] as object)[0]);
        }
        expect(settings).toMatchObject({ DateStyle: "ISO, YMD", IntervalStyle: "postgres", extra_float_digits: "1", bytea_output: "hex", lc_monetary: "C" });
      } finally {
        await repl.end();
      }
    });

    it("built-in OIDs and array OIDs match pg_type", async () => {
      const rows = await raw(client, "SELECT oid::int, typname, typarray::int FROM pg_type WHERE oid < 16384 AND typtype <> 'c'");
      const server = new Map(rows.map(([oid, name, array]) => [name!, { oid: Number(oid), array: Number(array) }]));
      for (const t of builtinTypes()) {
        expect(server.get(t.name), t.name).toStrictEqual({ oid: t.oid, array: t.arrayOid });
      }
    });

    /** The server's text and send bytes of each case, with the type OID. */
    async function serverForms(c: ValueCase): Promise<{ oid: number; text: string; binary: Uint8Array }> {
      const [[send]] = (await raw(client, `SELECT typsend::regproc::text FROM pg_type WHERE oid = '${c.type}'::regtype`)) as string[][];
      const [[oid, text, binary]] = (await raw(client, `SELECT pg_typeof(v)::oid, v, ${send}(v) FROM (SELECT (${c.sql})::${c.type} AS v) s`)) as string[][];
      return { oid: Number(oid), text: text!, binary: unhex(binary!) };
    }

    it("edge values: server text and binary forms parse to the expected value", async () => {
      for (const c of cases) {
        const { oid, text, binary } = await serverForms(c);
        const what = `${c.type} ${c.sql.slice(0, 60)} (text ${JSON.stringify(text.slice(0, 60))})`;
        const bytes = utf8(text);
        expect(values.text(oid, bytes, 0, bytes.length), what).toStrictEqual(c.expected);
        const b = values.binary(oid, binary, 0, binary.length);
        if (c.textOnly) expect(b, what).toStrictEqual(binary);
        else expect(b, `${what} binary`).toStrictEqual(c.expected);
      }
    });

    it("timestamptz printed in other time zones (LMT offsets with seconds) is the same instant", async () => {
      const tz = cases.filter((c) => c.type === "timestamptz" || c.type === "timestamptz[]");
      for (const zone of ["America/New_York", "Asia/Kolkata", "Europe/Amsterdam", "Pacific/Chatham"]) {
        await client.query(`SET TIME ZONE '${zone}'`);
        try {
          for (const c of tz) {
            const { oid, text } = await serverForms(c);
            expect(values.fromText(oid, text), `${zone}: ${text}`).toStrictEqual(c.expected);
          }
        } finally {
          await client.query("RESET TIME ZONE");
        }
      }
    });

    for (const g of GENERATORS) {
      if ((g.since ?? 0) > major) continue;
      it(`random ${g.type}: server text and bytes equal the printer's and encoder's, and parse back`, async () => {
        const samples = fc.sample(g.arb, { numRuns: RANDOM_PER_TYPE, seed: 4242 + major });
        const [[send]] = (await raw(client, `SELECT typsend::regproc::text FROM pg_type WHERE oid = '${g.type}'::regtype`)) as string[][];
        const rows = await raw(
          client,
          `SELECT v, ${send}(v) FROM unnest($1::text[]) WITH ORDINALITY AS u(s, i), LATERAL (SELECT s::${g.type} AS v) x ORDER BY i`,
          [samples.map((s) => s.text)],
        );
        expect(rows.length).toBe(samples.length);
        rows.forEach(([text, hex], i) => {
          const s = samples[i]!;
          const binary = unhex(hex!);
          if (g.type === "jsonb") {
            expect(JSON.parse(text!)).toStrictEqual(s.value);
          } else {
            expect(text, `server prints ${show(s.value)}`).toBe(s.text);
            expect(binary, `server sends ${s.text}`).toStrictEqual(s.binary);
          }
          const bytes = utf8(text!);
          expect(values.text(g.oid, bytes, 0, bytes.length), text!).toStrictEqual(s.value);
          expect(values.binary(g.oid, binary, 0, binary.length), `binary of ${text}`).toStrictEqual(s.value);
        });
      });
    }

    it("random inet and cidr: binary prints as the server prints", async () => {
      const word = fc.oneof(fc.constant(0), fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff }));
      const v6 = fc.tuple(fc.array(word, { minLength: 8, maxLength: 8 }), fc.integer({ min: 0, max: 128 }));
      const v4 = fc.tuple(fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }), fc.integer({ min: 0, max: 32 }));
      const inputs = [
        ...fc.sample(v6, { numRuns: 300, seed: 7 }).map(([w, bits]) => `${w.map((x) => x.toString(16)).join(":")}/${bits}`),
        ...fc.sample(v4, { numRuns: 100, seed: 8 }).map(([b, bits]) => `${b.join(".")}/${bits}`),
        ...fc.sample(fc.array(word, { minLength: 8, maxLength: 8 }), { numRuns: 100, seed: 9 }).map((w) => w.map((x) => x.toString(16)).join(":")),
      ];
      for (const type of ["inet", "cidr"] as const) {
        const rows = await raw(
          client,
          `SELECT v, ${type}_send(v) FROM unnest($1::text[]) WITH ORDINALITY AS u(s, i), LATERAL (SELECT ${type === "cidr" ? "network(s::inet)::cidr" : "s::inet"} AS v) x ORDER BY i`,
          [inputs],
        );
        for (const [text, hex] of rows) {
          const b = unhex(hex!);
          const oid = type === "inet" ? Oid.inet : Oid.cidr;
          expect(values.binary(oid, b, 0, b.length), text!).toBe(text);
          expect(values.fromText(oid, text!)).toBe(text);
        }
      }
    });

    it("pgoutput capture, text and binary mode, both backends: every column as expected, text == binary", async () => {
      const table = "values_all";
      const cols = cases.map((c, i) => `c${i} ${c.type}`);
      await client.query(`CREATE TABLE ${table} (id int PRIMARY KEY, ${cols.join(", ")})`);
      await client.query(`CREATE PUBLICATION values_pub FOR TABLE ${table}`);
      await createSlot(cluster, "values_slot");
      try {
        await client.query(`INSERT INTO ${table} VALUES (1, ${cases.map((c) => `(${c.sql})::${c.type}`).join(", ")})`);
        await client.query(`INSERT INTO ${table} (id) VALUES (2)`);
        const options = { proto_version: "1", publication_names: "values_pub" };
        const captures = {
          text: await peekChanges(cluster, "values_slot", options),
          binary: await peekChanges(cluster, "values_slot", { ...options, binary: "true" }),
        };
        await client.query("SET TIME ZONE 'America/New_York'");
        const textNY = await getChanges(cluster, "values_slot", options);
        await client.query("RESET TIME ZONE");

        for (const backend of backends) {
          const rowsOf = async (messages: { data: Uint8Array }[]) => {
            const decoder = await backend.create();
            const read = columnReader(values);
            const rows: { kinds: string[]; values: unknown[] }[] = [];
            for (const m of messages) {
              const msg = decoder.decode(m.data) as PgoutputMessage;
              if (msg.kind === "Insert") {
                const t = msg.newTuple;
                rows.push({ kinds: Array.from({ length: t.length }, (_, i) => t.kind(i)), values: tupleValues(t, read) });
              }
            }
            return rows;
          };
          const text = await rowsOf(captures.text);
          const binary = await rowsOf(captures.binary);
          const ny = await rowsOf(textNY);
          expect(text.length).toBe(2);
          expect(binary.length).toBe(2);
          expect(text[0]!.kinds.slice(1).every((k) => k === "text")).toBe(true);
          const binaryKinds = new Set(binary[0]!.kinds);
          expect(binaryKinds.has("binary"), `${backend.name}: binary mode sends b columns`).toBe(true);
          cases.forEach((c, i) => {
            const what = `${backend.name} c${i} ${c.type} ${c.sql.slice(0, 50)}`;
            expect(text[0]!.values[i + 1], `${what} (text)`).toStrictEqual(c.expected);
            expect(ny[0]!.values[i + 1], `${what} (text, America/New_York)`).toStrictEqual(c.expected);
            if (binary[0]!.kinds[i + 1] === "binary" && c.textOnly) expect(binary[0]!.values[i + 1]).toBeInstanceOf(Uint8Array);
            else expect(binary[0]!.values[i + 1], `${what} (binary mode, kind ${binary[0]!.kinds[i + 1]})`).toStrictEqual(c.expected);
          });
          expect(text[1]!.values.slice(1).every((v) => v === null)).toBe(true);
          expect(binary[1]!.values.slice(1).every((v) => v === null)).toBe(true);
        }
      } finally {
        await dropSlot(cluster, "values_slot");
        await client.query("DROP PUBLICATION values_pub");
        await client.query(`DROP TABLE ${table}`);
      }
    });

    it("unchanged TOAST: the marker, the per-row list, and the merge from an old tuple", async () => {
      await client.query("CREATE TABLE values_toast (id int PRIMARY KEY, big text, small int, arr int8[])");
      await client.query("ALTER TABLE values_toast ALTER COLUMN big SET STORAGE EXTERNAL, ALTER COLUMN arr SET STORAGE EXTERNAL");
      await client.query("CREATE PUBLICATION values_toast_pub FOR TABLE values_toast");
      await createSlot(cluster, "values_toast_slot");
      const big = "é".repeat(5000);
      try {
        await client.query("INSERT INTO values_toast VALUES (1, $1, 1, (SELECT array_agg(i) FROM generate_series(1, 2000) i))", [big]);
        await client.query("UPDATE values_toast SET small = 2 WHERE id = 1"); // default identity: no old tuple
        await client.query("ALTER TABLE values_toast REPLICA IDENTITY FULL");
        await client.query("UPDATE values_toast SET small = 3 WHERE id = 1"); // FULL: old tuple 'O' with every value
        const arr = Array.from({ length: 2000 }, (_, i) => BigInt(i + 1));
        for (const binary of [false, true]) {
          const options: Record<string, string> = { proto_version: "1", publication_names: "values_toast_pub" };
          if (binary) options.binary = "true";
          const messages = await peekChanges(cluster, "values_toast_slot", options);
          for (const backend of backends) {
            const decoder = await backend.create();
            const read = columnReader(values);
            const updates = [];
            for (const m of messages) {
              const msg = decoder.decode(m.data) as PgoutputMessage;
              if (msg.kind === "Update") {
                updates.push({
                  names: unchangedColumnNames(msg.newTuple),
                  plain: tupleValues(msg.newTuple, read),
                  merged: tupleValues(msg.newTuple, read, { old: msg.oldTuple ?? undefined }),
                  hasOld: msg.oldTuple !== null,
                });
              }
            }
            const what = `${backend.name}, ${binary ? "binary" : "text"}`;
            expect(updates.length, what).toBe(2);
            expect(updates[0]!.names, what).toStrictEqual(["big", "arr"]);
            expect(updates[0]!.plain, what).toStrictEqual([1, unchangedToast, 2, unchangedToast]);
            expect(updates[0]!.merged, what).toStrictEqual([1, unchangedToast, 2, unchangedToast]);
            expect(updates[1]!.hasOld, what).toBe(true);
            expect(updates[1]!.merged, what).toStrictEqual([1, big, 3, arr]);
          }
        }
      } finally {
        await dropSlot(cluster, "values_toast_slot");
        await client.query("DROP PUBLICATION values_toast_pub");
        await client.query("DROP TABLE values_toast");
      }
    });
  });
}
