/**
 * Schema changes during a stream, against real PostgreSQL 15 and 18:
 * ALTER TABLE add, drop, rename, alter type (and type modifier), replica
 * identity FULL and USING INDEX, with rows before and after each. Every
 * consumer — the message iteration (both backends), transactions(), the
 * JSON Lines pipeline — gets a RelationChanged right after the Relation
 * message of the new shape, before the first change of it, with what
 * changed; a redelivery after a reconnect carries it again. DDL capture:
 * the event trigger's commands as Ddl items in commit order, nothing for a
 * rolled-back one. stopAt: the stream ends after the last transaction that
 * ends at or before it, acknowledged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { formatLsn, parseLsn } from "../bindings/lsn.ts";
import type { Relation } from "../bindings/relation.ts";
import type { Tuple } from "../bindings/tuple.ts";
import { relationChanges, RelationShapes } from "../bindings/relation-changes.ts";
import { installDdlCapture, removeDdlCapture, ddlCaptureInstalled, replicate, type ReplicateOptions, type ReplicationStream, type StreamItem } from "../bindings/pg/index.ts";
import { FORMATS, Pipeline, captureSource, changeId, compareChangePositions, parseChangeId, streamSource, type ChangePosition } from "../bindings/pipeline/index.ts";
import type { Records } from "../bindings/pipeline/records.ts";
import type { Sink } from "../bindings/pipeline/sink.ts";
import { changeValueOptions } from "../bindings/jsonl/json-text.ts";
import { createDecoder } from "../bindings/create-decoder.ts";
import { encode, frame } from "../devkit/encoder/encoder.ts";
import type { PgMajor } from "../devkit/cluster/cluster.ts";
import { startClusters, startedCluster, stopClusters, type StartedCluster } from "./support/clusters.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Relation cache entry from a Relation message the encoder made. */
async function relationOf(columns: { name: string; typeId?: number; typeModifier?: number; isKey?: boolean }[], extra: { replicaIdentity?: "d" | "f" | "i" | "n"; relationName?: string } = {}): Promise<Relation> {
  const d = await createDecoder({ backend: "baseline" });
  const msg = d.decode(encode.relation({
    relationId: 1, namespace: "public", relationName: extra.relationName ?? "t", replicaIdentity: extra.replicaIdentity ?? "d",
    columns: columns.map((c) => ({ name: c.name, typeId: c.typeId ?? 23, typeModifier: c.typeModifier ?? -1, isKey: c.isKey ?? false })),
  }).bytes);
  return (msg as { relation: Relation }).relation;
}

describe("relationChanges()", () => {
  it("names each difference: added, dropped, renamed, type and typmod, key, replica identity, relation name", async () => {
    const base = await relationOf([{ name: "id", isKey: true }, { name: "a", typeId: 25 }, { name: "b" }]);
    expect(relationChanges(base, await relationOf([{ name: "id", isKey: true }, { name: "a", typeId: 25 }, { name: "b" }]))).toEqual([]);
    expect(relationChanges(base, await relationOf([{ name: "id", isKey: true }, { name: "a", typeId: 25 }, { name: "b" }, { name: "c", typeId: 20 }])))
      .toEqual([{ kind: "columnAdded", column: "c", typeId: 20, typeModifier: -1, isKey: false }]);
    expect(relationChanges(base, await relationOf([{ name: "id", isKey: true }, { name: "b" }]))).toEqual([{ kind: "columnDropped", column: "a" }]);
    expect(relationChanges(base, await relationOf([{ name: "id", isKey: true }, { name: "x", typeId: 25 }, { name: "b" }])))
      .toEqual([{ kind: "columnRenamed", column: "x", oldName: "a" }]);
    expect(relationChanges(base, await relationOf([{ name: "id", isKey: true }, { name: "a", typeId: 1043, typeModifier: 14 }, { name: "b" }])))
      .toEqual([{ kind: "typeChanged", column: "a", oldTypeId: 25, oldTypeModifier: -1, typeId: 1043, typeModifier: 14 }]);
    expect(relationChanges(base, await relationOf([{ name: "id", isKey: true }, { name: "a", typeId: 25, isKey: true }, { name: "b", isKey: true }], { replicaIdentity: "f" })))
      .toEqual([
        { kind: "replicaIdentityChanged", oldReplicaIdentity: "d", replicaIdentity: "f" },
        { kind: "keyChanged", column: "a", isKey: true },
        { kind: "keyChanged", column: "b", isKey: true },
      ]);
    expect(relationChanges(base, await relationOf([{ name: "id", isKey: true }, { name: "a", typeId: 25 }, { name: "b" }], { relationName: "u" })))
      .toEqual([{ kind: "relationRenamed", oldNamespace: "public", oldName: "t", namespace: "public", name: "u" }]);
    // A drop in the middle and an add at the end: no rename (the positions differ).
    expect(relationChanges(base, await relationOf([{ name: "id", isKey: true }, { name: "b" }, { name: "c" }])))
      .toEqual([{ kind: "columnDropped", column: "a" }, { kind: "columnAdded", column: "c", typeId: 23, typeModifier: -1, isKey: false }]);
  });

  it("RelationShapes: a first sight is the baseline; changes are undone back to the confirmed position", async () => {
    const v1 = await relationOf([{ name: "id" }]);
    const v2 = await relationOf([{ name: "id" }, { name: "b" }]);
    const shapes = new RelationShapes();
    expect(shapes.observe({ relation: v1 })).toBeUndefined();
    shapes.ended(100n);
    shapes.confirmed(100n);
    expect(shapes.observe({ relation: v1 })).toBeUndefined(); // the same shape again
    expect(shapes.observe({ relation: v2 })?.changes).toEqual([{ kind: "columnAdded", column: "b", typeId: 23, typeModifier: -1, isKey: false }]);
    shapes.ended(200n);
    shapes.confirmed(150n); // the transaction that carried v2 is not confirmed
    shapes.rollback();
    expect(shapes.observe({ relation: v2 })?.previous).toBe(v1); // redelivered: the same item again
    expect(shapes.observe({ relation: v2 }, true)).toBeUndefined();
    expect(new RelationShapes().observe({ relation: v2 }, true)?.previous).toBeUndefined(); // baseline: a first sight makes one
  });
});

/** A capture: a row, then an ADD COLUMN and a row of the new shape; as `[length][message]` frames. */
function alterCapture(): Uint8Array {
  const T = 1_700_000_000_000_000n;
  const rel = (cols: string[]) => encode.relation({
    relationId: 16400, namespace: "public", relationName: "t",
    columns: cols.map((name, i) => ({ name, typeId: 23, isKey: i === 0 })),
  });
  return frame([
    encode.begin({ finalLsn: 0x100n, commitTime: T, xid: 1 }), rel(["id"]), encode.insert({ relationId: 16400, newTuple: ["1"] }),
    encode.commit({ commitLsn: 0x100n, endLsn: 0x130n, commitTime: T }),
    encode.begin({ finalLsn: 0x200n, commitTime: T, xid: 2 }), rel(["id", "b"]), encode.insert({ relationId: 16400, newTuple: ["2", "20"] }),
    encode.commit({ commitLsn: 0x200n, endLsn: 0x230n, commitTime: T }),
  ]);
}

/** A format's output of a capture through a Pipeline: its records' bytes, and their kinds. */
async function formatted(name: string, capture: Uint8Array): Promise<{ text: string; bytes: Uint8Array; kinds: string[] }> {
  const def = FORMATS[name]!;
  const decoder = await createDecoder({ values: def.values() });
  const chunks: Uint8Array[] = [];
  const kinds: string[] = [];
  const sink: Sink = {
    name: "memory",
    write: async (records: Records) => {
      chunks.push(records.bytes.buf.slice(0, records.bytes.len));
      kinds.push(...records.kinds);
    },
    close: async () => {},
  };
  const format = def.create({ decoder }, name === "wal2json" ? { "format-version": "2" } : {});
  await new Pipeline({ source: captureSource((async function* () { yield capture; })(), decoder), format, sink, raw: def.raw }).run();
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) bytes.set(c, (at += c.length) - c.length);
  return { text: new TextDecoder().decode(bytes), bytes, kinds };
}

describe("RelationChanged through every format (a capture, no server)", () => {
  it("jsonl: an A line; messages: a RelationChanged line after the Relation; capture: the messages' bytes only, which decode derives again; wal2json: nothing", async () => {
    const capture = alterCapture();
    const jsonl = await formatted("jsonl", capture);
    expect(jsonl.text.trim().split("\n").map((l) => JSON.parse(l).action)).toEqual(["I", "A", "I"]);
    expect(jsonl.kinds).toEqual(["insert", "relationChanged", "insert"]);
    const messages = await formatted("messages", capture);
    expect(messages.text.trim().split("\n").map((l) => JSON.parse(l).kind)).toEqual(
      ["Begin", "Relation", "Insert", "Commit", "Begin", "Relation", "RelationChanged", "Insert", "Commit"]);
    expect(JSON.parse(messages.text.trim().split("\n")[6]!)).toMatchObject({
      kind: "RelationChanged", relationId: 16400, changes: [{ kind: "columnAdded", column: "b", typeId: 23 }],
      previous: { columns: [{ name: "id" }] }, relation: { columns: [{ name: "id" }, { name: "b" }] },
    });
    const recorded = await formatted("capture", capture);
    expect(recorded.bytes).toEqual(capture);
    expect((await formatted("jsonl", recorded.bytes)).text).toBe(jsonl.text);
    const wal2json = await formatted("wal2json", capture);
    expect(wal2json.text.trim().split("\n").map((l) => JSON.parse(l).action)).toEqual(["B", "I", "C", "B", "I", "C"]);
  });
});

describe("a restart in the middle of a transaction with a RelationChanged (Pipeline, a sink that knows its position)", () => {
  // Run 2 starts inside this transaction with no shape known: its first sight of t makes a RelationChanged
  // (with no previous shape), a derived record at sub-position 0.1, so the inserts keep ids :0 and :1
  // whether run 1 had that record (t changed before) or not (t as before).
  const T = 1_700_000_000_000_000n;
  const capture = frame([
    encode.begin({ finalLsn: 0x200n, commitTime: T, xid: 2 }),
    encode.relation({ relationId: 16400, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "b", typeId: 23 }] }),
    encode.insert({ relationId: 16400, newTuple: ["2", "20"] }), encode.insert({ relationId: 16400, newTuple: ["3", "30"] }),
    encode.commit({ commitLsn: 0x200n, endLsn: 0x230n, commitTime: T }),
  ]);

  async function resume(held: ChangePosition): Promise<{ written: [string, string, unknown][]; skipped: number }> {
    const decoder = await createDecoder({ values: changeValueOptions() });
    const written: [string, string, unknown][] = [];
    const sink: Sink = {
      name: "memory",
      delivered: async () => held,
      write: async (records: Records) => {
        for (let i = 0; i < records.length; i++) {
          const l = JSON.parse(new TextDecoder().decode(records.payloadOf(i))) as { action: string; columns?: { value: unknown }[] };
          written.push([records.id(i), l.action, l.columns?.[0]?.value]);
        }
      },
      close: async () => {},
    };
    const format = FORMATS.jsonl!.create({ decoder }, {});
    const { stats } = await new Pipeline({ source: captureSource((async function* () { yield capture; })(), decoder), format, sink }).run();
    return { written, skipped: stats.skipped };
  }

  it("the destination holds insert 2 (:0): only insert 3 is written, as :1, whatever run 1 derived before", async () => {
    expect(await resume({ lsn: 0x200n, index: 0 })).toEqual({ written: [["0/200:1", "I", 3]], skipped: 2 }); // the A line (0.1) and insert 2
  });

  it("the destination holds only run 1's RelationChanged (:0.1): both inserts are written, with their ids", async () => {
    expect(await resume({ lsn: 0x200n, index: 0, sub: 1 })).toEqual({ written: [["0/200:0", "I", 2], ["0/200:1", "I", 3]], skipped: 1 });
  });

  it("ids: a derived record's X/Y:N.k reads back, and sorts after record N − 1 and before record N", () => {
    expect(changeId(0x200n, 3, 2)).toBe("0/200:3.2");
    expect(parseChangeId("0/200:3.2")).toEqual({ lsn: 0x200n, index: 3, sub: 2 });
    expect(parseChangeId("0/200:3")).toEqual({ lsn: 0x200n, index: 3 });
    for (const bad of ["0/200:3.0", "0/200:3.", "0/200:.1", "0/200:3.1.1"]) expect(parseChangeId(bad), bad).toBeUndefined();
    const order = [{ index: 2 }, { index: 3, sub: 1 }, { index: 3, sub: 2 }, { index: 3 }, { index: 3, sub: 0 }, { index: 4, sub: 1 }].map((p) => ({ lsn: 0x200n, ...p }));
    for (let i = 0; i + 1 < order.length; i++) expect(Math.sign(compareChangePositions(order[i]!, order[i + 1]!)), `${order[i + 1]!.index}.${order[i + 1]!.sub ?? 0}`).toBe(i === 3 ? 0 : -1);
    expect(compareChangePositions({ lsn: 0x100n, index: 9 }, { lsn: 0x200n, index: 0, sub: 1 })).toBeLessThan(0);
  });
});

type Ctx = StartedCluster;
const clusters = new Map<PgMajor, Ctx>();
const streams = new Set<ReplicationStream>();
let seq = 0;

beforeAll(() => startClusters([15, 18], clusters, startedCluster));
afterAll(() => stopClusters(clusters.values(), streams));

/** A new table `${prefix}N` and its publication `${prefix}pubN`. */
async function published(c: Ctx, prefix: string, columns: string): Promise<{ n: number; t: string }> {
  const n = ++seq;
  const t = `${prefix}${n}`;
  await c.cluster.query(`CREATE TABLE ${t} (${columns})`);
  await c.cluster.query(`CREATE PUBLICATION ${prefix}pub${n} FOR TABLE ${t}`);
  return { n, t };
}

async function open(c: Ctx, options: Omit<ReplicateOptions, "connection">): Promise<ReplicationStream> {
  const s = await replicate({ connection: c.config, statusIntervalMs: 200, ...options });
  streams.add(s);
  return s;
}

/** The ALTERs, each followed by a row of the new shape. */
const STEPS = (t: string): string[] => [
  `INSERT INTO ${t} VALUES (1, 'one')`,
  `ALTER TABLE ${t} ADD COLUMN b int; INSERT INTO ${t} VALUES (2, 'two', 20)`,
  `ALTER TABLE ${t} DROP COLUMN a; INSERT INTO ${t} VALUES (3, 30)`,
  `ALTER TABLE ${t} RENAME COLUMN b TO c; INSERT INTO ${t} VALUES (4, 40)`,
  `ALTER TABLE ${t} ALTER COLUMN c TYPE bigint; INSERT INTO ${t} VALUES (5, 50000000)`,
  `ALTER TABLE ${t} ALTER COLUMN c TYPE numeric(10,2); INSERT INTO ${t} VALUES (6, 6.5)`,
  `ALTER TABLE ${t} REPLICA IDENTITY FULL; UPDATE ${t} SET c = 7 WHERE id = 6`,
  `DELETE FROM ${t} WHERE c IS NULL; ALTER TABLE ${t} ALTER COLUMN c SET NOT NULL; CREATE UNIQUE INDEX ${t}_c ON ${t} (c);
   ALTER TABLE ${t} REPLICA IDENTITY USING INDEX ${t}_c; UPDATE ${t} SET c = 8 WHERE id = 6`,
];

/** What each consumer must see, in order: the RelationChanged items (their changes) and the rows. */
const EXPECTED = [
  "I 1,one",
  "RC columnAdded:b",
  "I 2,two,20",
  "RC columnDropped:a",
  "I 3,30",
  "RC columnRenamed:c",
  "I 4,40",
  "RC typeChanged:c",
  "I 5,50000000",
  "RC typeChanged:c",
  "I 6,6.50",
  "RC replicaIdentityChanged: keyChanged:c",
  "U 6,7.00",
  "D 1", // the row whose c was NULL (REPLICA IDENTITY FULL: the whole old row, NULL c)
  "RC replicaIdentityChanged: keyChanged:id",
  "U 6,8.00",
];

function describeChange(c: { kind: string; column?: string }): string {
  return `${c.kind}:${c.column ?? ""}`;
}

/** The events of the message iteration, as EXPECTED writes them, until the last update. */
async function messageEvents(s: ReplicationStream, until: number): Promise<string[]> {
  const out: string[] = [];
  for await (const m of s) {
    const e = event(m);
    if (e !== undefined) out.push(e);
    if (out.length >= until) break;
  }
  return out;
}

function texts(t: Tuple): string[] {
  return Array.from({ length: t.length }, (_, i) => String(t.text(i)));
}

function event(m: StreamItem): string | undefined {
  switch (m.kind) {
    case "RelationChanged":
      return `RC ${m.changes.map(describeChange).join(" ")}`;
    case "Insert":
    case "Update":
      return `${m.kind[0]} ${texts(m.newTuple).join(",")}`;
    case "Delete":
      return `D ${texts(m.oldTuple)[0]}`;
    default:
      return undefined;
  }
}

for (const major of [15, 18] as const) {
  describe(`PostgreSQL ${major}: ALTER TABLE during a stream`, () => {
    it("every consumer gets a RelationChanged before the first change of each new shape", { timeout: 60_000 }, async () => {
      const c = clusters.get(major)!;
      const { n, t } = await published(c, "sc", "id int PRIMARY KEY, a text");
      const slots = ["wasm", "baseline", "tx", "jsonl"].map((k) => `sc${n}_${k}`);
      for (const slot of slots) await (await open(c, { slot: { name: slot, create: true }, publications: `scpub${n}` })).stop();
      for (const step of STEPS(t)) await c.cluster.query(step);

      for (const backend of ["wasm", "baseline"] as const) {
        const s = await open(c, { slot: `sc${n}_${backend}`, publications: `scpub${n}`, decoder: backend });
        expect(await messageEvents(s, EXPECTED.length), backend).toEqual(EXPECTED);
        await s.stop();
      }

      // transactions(): the RelationChanged, materialized, right after the Relation message in the transaction's messages.
      const tx = await open(c, { slot: `sc${n}_tx`, publications: `scpub${n}` });
      const kinds: string[] = [];
      let changed: Record<string, unknown> | undefined;
      for await (const item of tx.transactions()) {
        if (item.kind !== "commit") continue;
        kinds.push(item.messages.map((m) => m.kind as string).join(","));
        changed ??= item.messages.find((m) => m.kind === "RelationChanged");
        if (kinds.length === STEPS(t).length) break;
      }
      await tx.stop();
      expect(kinds[0]).toBe("Relation,Insert");
      expect(kinds[1]).toBe("Relation,RelationChanged,Insert");
      expect((changed!.previous as { columns: { name: string }[] }).columns.map((col) => col.name)).toEqual(["id", "a"]);
      expect((changed!.relation as { columns: { name: string }[] }).columns.map((col) => col.name)).toEqual(["id", "a", "b"]);

      // The JSON Lines pipeline: an A line with the old and new columns before the first row of the new shape.
      const decoder = await createDecoder({ values: changeValueOptions() });
      const js = await open(c, { slot: `sc${n}_jsonl`, publications: `scpub${n}`, decoder, ack: "manual" });
      const lines: Record<string, unknown>[] = [];
      const sink: Sink = {
        name: "memory",
        write: async (records: Records) => {
          for (let i = 0; i < records.length; i++) lines.push(JSON.parse(new TextDecoder().decode(records.payloadOf(i))));
          if (lines.filter((l) => l.action === "U").length >= 2) run.stop();
        },
        close: async () => {},
      };
      const run = new Pipeline({ source: streamSource(js), format: FORMATS.jsonl!.create({ decoder }, {}), sink });
      await run.run();
      expect(lines.map((l) => l.action).join("")).toBe("IAIAIAIAIAIAUDAU");
      const added = lines[1]!;
      expect(added).toMatchObject({
        action: "A", schema: "public", table: t, replicaidentity: "d",
        columns: [{ name: "id", type: "integer", key: true }, { name: "a", type: "text", key: false }, { name: "b", type: "integer", key: false }],
        old: { columns: [{ name: "id", type: "integer", key: true }, { name: "a", type: "text", key: false }] },
        changes: [{ change: "columnAdded", column: "b", type: "integer", key: false }],
      });
      expect(typeof added.xid).toBe("number");
      expect(lines[9]).toMatchObject({ action: "A", changes: [{ change: "typeChanged", column: "c", oldtype: "bigint", type: "numeric(10,2)" }] });
      expect(lines[11]).toMatchObject({ action: "A", replicaidentity: "f", changes: [{ change: "replicaIdentityChanged", oldreplicaidentity: "d", replicaidentity: "f" }, { change: "keyChanged", column: "c", key: true }] });
    });

    it("a redelivery after a reconnect carries the RelationChanged again", { timeout: 60_000 }, async () => {
      const c = clusters.get(major)!;
      const { n, t } = await published(c, "sr", "id int PRIMARY KEY");
      const s = await open(c, { slot: { name: `sr${n}`, create: true }, publications: `srpub${n}`, ack: "manual", reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
      await c.cluster.query(`INSERT INTO ${t} VALUES (1)`);
      await c.cluster.query(`ALTER TABLE ${t} ADD COLUMN b text; INSERT INTO ${t} VALUES (2, 'b')`);
      const seen: string[] = [];
      let terminated = false;
      for await (const m of s) {
        if (m.kind === "Commit" && seen.length === 1) s.ack(m); // the first transaction is done; the second never is
        const e = event(m);
        if (e === undefined) continue;
        seen.push(`${s.redelivering ? "again " : ""}${e}`);
        if (e === "I 2,b" && !terminated) {
          terminated = true;
          await c.cluster.query(`SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1`, [`sr${n}`]);
        } else if (e === "I 2,b") break;
      }
      await s.stop();
      expect(seen).toEqual(["I 1", "RC columnAdded:b", "I 2,b", "again RC columnAdded:b", "again I 2,b"]);
    });

    it("DDL capture: the trigger's commands as Ddl items in commit order, none for a rolled-back one", { timeout: 60_000 }, async () => {
      const c = clusters.get(major)!;
      const { n, t } = await published(c, "dd", "id int PRIMARY KEY");
      try {
        await installDdlCapture({ connection: c.config });
        await installDdlCapture({ connection: c.config }); // idempotent
        expect(await ddlCaptureInstalled({ connection: c.config })).toBe(true);
        const s = await open(c, { slot: { name: `dd${n}`, create: true }, publications: `ddpub${n}`, ddl: { capture: true } });
        const client = new pg.Client(c.config);
        await client.connect();
        await client.query(`BEGIN; ALTER TABLE ${t} ADD COLUMN never int; ROLLBACK`);
        await client.query(`SELECT pg_logical_emit_message(true, 'other', 'not asked for')`);
        await client.query(`BEGIN; INSERT INTO ${t} VALUES (1); ALTER TABLE ${t} ADD COLUMN b int; INSERT INTO ${t} VALUES (2, 20); COMMIT`);
        await client.end();
        const seen: string[] = [];
        let ddl: Record<string, unknown> | undefined;
        for await (const m of s) {
          if (m.kind === "Ddl") {
            ddl = m.toJSON();
            seen.push(`Ddl ${m.tag} ${m.objects.map((o) => `${o.type}:${o.identity}`).join(",")}`);
          } else if (m.kind === "Message") seen.push(`Message ${m.prefix}`);
          else {
            const e = event(m);
            if (e !== undefined) seen.push(e);
          }
          if (seen.at(-1) === "I 2,20") break;
        }
        await s.stop();
        expect(seen).toEqual(["I 1", `Ddl ALTER TABLE table:public.${t}`, "RC columnAdded:b", "I 2,20"]);
        expect(ddl).toMatchObject({ kind: "Ddl", command: expect.stringContaining(`ADD COLUMN b int`), user: c.cluster.user });
        expect(typeof ddl!.lsn).toBe("string");
      } finally {
        await removeDdlCapture({ connection: c.config });
      }
      expect(await ddlCaptureInstalled({ connection: c.config })).toBe(false);
      await removeDdlCapture({ connection: c.config }); // idempotent
    });

    it("stopAt: ends after the last transaction that ends at or before it, acknowledged", { timeout: 60_000 }, async () => {
      const c = clusters.get(major)!;
      const { n, t } = await published(c, "st", "id int PRIMARY KEY");
      await (await open(c, { slot: { name: `st${n}`, create: true }, publications: `stpub${n}` })).stop();
      await (await open(c, { slot: { name: `st${n}b`, create: true }, publications: `stpub${n}` })).stop();
      const lsns: bigint[] = [];
      for (let i = 1; i <= 3; i++) {
        await c.cluster.query(`INSERT INTO ${t} VALUES (${i})`);
        lsns.push(parseLsn((await c.cluster.query<{ l: string }>(`SELECT pg_current_wal_insert_lsn()::text AS l`))[0]!.l));
      }
      // After the second transaction: the third is not handed over; the stream stops by itself (auto acks).
      const s = await open(c, { slot: `st${n}`, publications: `stpub${n}`, stopAt: formatLsn(lsns[1]!) });
      const ends: bigint[] = [];
      for await (const tx of s.transactions()) if (tx.kind === "commit") ends.push(tx.endLsn);
      expect(ends.length).toBe(2);
      expect(ends[1]! <= lsns[1]!).toBe(true);
      await s.closed;
      expect(s.lastAckedLsn).toBe(ends[1]);
      const confirmed = async (slot: string) => parseLsn((await c.cluster.query<{ c: string }>(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = $1`, [slot]))[0]!.c);
      expect(await confirmed(`st${n}`)).toBe(ends[1]);

      // Past everything there is: the server's WAL reaches it with nothing more to send (a keepalive says so).
      const all = await open(c, { slot: `st${n}b`, publications: `stpub${n}`, stopAt: lsns[2]!, receiveTimeoutMs: 4000 });
      const rows: string[] = [];
      for await (const m of all) if (m.kind === "Insert") rows.push(texts(m.newTuple)[0]!);
      expect(rows).toEqual(["1", "2", "3"]);
      await all.closed;
      const at = await confirmed(`st${n}b`);
      expect(at <= lsns[2]! && at > lsns[1]!).toBe(true);

      // The rest from the first slot: the third transaction, which ends after the first stopAt.
      const rest = await open(c, { slot: `st${n}`, publications: `stpub${n}`, stopAt: lsns[2]!, receiveTimeoutMs: 4000 });
      const more: string[] = [];
      for await (const m of rest) if (m.kind === "Insert") more.push(texts(m.newTuple)[0]!);
      expect(more).toEqual(["3"]);
      await sleep(0);
    });
  });
}
