/**
 * The `publication` option's row filters, column lists,
 * publish_via_partition_root and (18) publish_generated_columns, against
 * real PostgreSQL 15 and 18: a publication created with them, and rows
 * streamed through it showing each applied (rows outside the filter absent,
 * columns outside the list absent, partition changes under the root's
 * name, generated values present); an existing publication compared on all
 * of them, with a filter written differently from the server's deparsed
 * text counted the same and a different one reported; what a server lacks
 * refused before anything is created. Every wait is bounded.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClientConfig } from "pg";
import { replicate, type PublicationReport, type ReplicateOptions, type ReplicationStream } from "../bindings/pg/index.ts";
import { normalizeOptions } from "../bindings/pg/options.ts";
import { createPublicationCommand, publicationSpec } from "../bindings/pg/publication.ts";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { take } from "./support/take.ts";

const MAJORS: PgMajor[] = [15, 18];
const clusters = new Map<PgMajor, Cluster>();
const streams = new Set<ReplicationStream>();
let seq = 0;

beforeAll(async () => {
  await Promise.all(MAJORS.map(async (m) => clusters.set(m, await startCluster(m))));
});

afterAll(async () => {
  await Promise.all([...streams].map((s) => s.stop().catch(() => {})));
  await Promise.all([...clusters.values()].map((c) => c.stop()));
});

const config = (c: Cluster): ClientConfig => ({ host: c.host, port: c.port, user: c.user, database: c.database });

async function open(c: Cluster, options: Omit<ReplicateOptions, "connection" | "slot">): Promise<ReplicationStream> {
  const s = await replicate({ connection: config(c), slot: { name: `pubslot${++seq}`, temporary: true }, ...options });
  streams.add(s);
  return s;
}

interface Row {
  table: string;
  values: Record<string, unknown>;
}

/** The next `n` inserted rows, by relation name (a bounded wait). */
function inserts(s: ReplicationStream, n: number): Promise<Row[]> {
  return take(s[Symbol.asyncIterator](), n, (m) => (m.kind === "Insert" ? { table: m.relation!.name, values: m.newTuple.toObject() } : undefined), 15_000, "rows");
}

async function report(c: Cluster, publication: ReplicateOptions["publication"], pub: string): Promise<PublicationReport> {
  const reports: PublicationReport[] = [];
  const s = await open(c, { publications: pub, publication, onPublication: (r) => reports.push(r) });
  await s.stop();
  return reports[0]!;
}

describe("the publication option, without a server", () => {
  it("CREATE PUBLICATION with column lists, row filters and the publication parameters (defaults left out)", () => {
    const spec = publicationSpec({
      tables: [{ name: "app.Orders", where: " total > 0 ", columns: ["id", "Total"] }, "items"],
      operations: ["insert", "update"], publishViaPartitionRoot: true, publishGeneratedColumns: "stored",
    }, ["p"]);
    expect(createPublicationCommand(spec)).toBe(
      `CREATE PUBLICATION "p" FOR TABLE "app"."Orders" ("id", "Total") WHERE (total > 0), "items" WITH (publish = 'insert, update', publish_via_partition_root = true, publish_generated_columns = stored)`,
    );
    expect(createPublicationCommand(publicationSpec({ tables: ["t"] }, ["p"]))).toBe(`CREATE PUBLICATION "p" FOR TABLE "t" WITH (publish = 'insert, update, delete, truncate')`);
  });

  it("rejects bad tables, filters, column lists and parameters", () => {
    const base = { connection: "x", slot: "s", publications: "p" } as const;
    const bad: ReplicateOptions["publication"][] = [
      { tables: [{ name: "t", where: " " }] }, { tables: [{ name: "t", columns: [] }] }, { tables: [{ name: "t", columns: [""] }] },
      { tables: [{ name: "a b" }] }, { tables: [{} as never] }, { publishGeneratedColumns: "virtual" as never }, { publishViaPartitionRoot: "yes" as never },
    ];
    for (const publication of bad) expect(() => normalizeOptions({ ...base, publication }), JSON.stringify(publication)).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
  });
});

for (const major of MAJORS) {
  describe(`PostgreSQL ${major}`, () => {
    const c = () => clusters.get(major)!;

    it("a row filter and a column list: only matching rows, only the listed columns", async () => {
      const n = ++seq;
      await c().query(`CREATE TABLE f${n} (id int PRIMARY KEY, a text, secret text)`);
      await c().query(`CREATE TABLE g${n} (id int PRIMARY KEY, b text)`);
      const reports: PublicationReport[] = [];
      const s = await open(c(), {
        publications: `fpub${n}`, onPublication: (r) => reports.push(r),
        publication: { create: true, tables: [{ name: `f${n}`, where: "id > 10", columns: ["id", "a"] }, `g${n}`] },
      });
      expect(reports).toEqual([{ name: `fpub${n}`, created: true, differences: [] }]);
      await c().query(`INSERT INTO f${n} VALUES (5, 'low', 's1'), (15, 'high', 's2')`);
      await c().query(`INSERT INTO g${n} VALUES (1, 'all of it')`);
      await c().query(`UPDATE f${n} SET id = 20 WHERE id = 5`); // moves into the filter: published as an INSERT
      expect(await inserts(s, 3)).toEqual([
        { table: `f${n}`, values: { id: 15, a: "high" } },
        { table: `g${n}`, values: { id: 1, b: "all of it" } },
        { table: `f${n}`, values: { id: 20, a: "low" } },
      ]);
    });

    it("publishViaPartitionRoot: partition changes under the root's name; without it, the partition's", async () => {
      const n = ++seq;
      await c().query(`CREATE TABLE r${n} (id int PRIMARY KEY, v text) PARTITION BY RANGE (id)`);
      await c().query(`CREATE TABLE r${n}_low PARTITION OF r${n} FOR VALUES FROM (0) TO (100)`);
      const viaRoot = await open(c(), { publications: `rootpub${n}`, publication: { create: true, tables: [`r${n}`], publishViaPartitionRoot: true } });
      const leaves = await open(c(), { publications: `leafpub${n}`, publication: { create: true, tables: [`r${n}`] } });
      await c().query(`INSERT INTO r${n} VALUES (1, 'x')`);
      expect(await inserts(viaRoot, 1)).toEqual([{ table: `r${n}`, values: { id: 1, v: "x" } }]);
      expect(await inserts(leaves, 1)).toEqual([{ table: `r${n}_low`, values: { id: 1, v: "x" } }]);
      // Membership is the partitioned table as named, not its partitions.
      expect((await report(c(), { tables: [`r${n}`] }, `leafpub${n}`)).differences).toEqual([]);
    });

    it("an existing publication compared on filters, column lists and parameters; the same filter written differently is no difference", async () => {
      const n = ++seq;
      await c().query(`CREATE TABLE e${n} (id int PRIMARY KEY, a text, b text)`);
      await c().query(`CREATE PUBLICATION epub${n} FOR TABLE e${n} (id, a) WHERE (id > 10 AND a <> 'x')`);
      const pub = `epub${n}`;
      const table = `public.e${n}`;
      // Deparsed by the server as ((id > 10) AND (a <> 'x'::text)): compared as the server deparses the asked text.
      expect(await report(c(), { tables: [{ name: `e${n}`, where: "id>10 and a<>'x'", columns: ["a", "id"] }] }, pub)).toEqual({ name: pub, created: false, differences: [] });
      const deparsed = "((id > 10) AND (a <> 'x'::text))";
      expect((await report(c(), {
        tables: [{ name: `e${n}`, where: "id > 20", columns: ["id", "b"] }], publishViaPartitionRoot: true,
      }, pub)).differences).toEqual([
        "publish_via_partition_root is false; asked for true",
        `column list of ${table} is id, a; asked for id, b`,
        `row filter of ${table} is ${deparsed}; asked for (id > 20)`,
      ]);
      expect((await report(c(), { tables: [`e${n}`] }, pub)).differences).toEqual([
        `${table} publishes only id, a; asked for all columns`,
        `${table} has row filter ${deparsed}; asked for none`,
      ]);
      await c().query(`CREATE PUBLICATION plain${n} FOR TABLE e${n}`);
      expect((await report(c(), { tables: [{ name: `e${n}`, where: "id > 1", columns: ["id"] }] }, `plain${n}`)).differences).toEqual([
        `${table} publishes all its columns; asked for id`,
        `${table} has no row filter; asked for (id > 1)`,
      ]);
      // A filter the server cannot parse is reported, not thrown (the probe is rolled back: nothing is left).
      const broken = await report(c(), { tables: [{ name: `e${n}`, where: "id >>> 1", columns: ["id", "a"] }] }, pub);
      expect(broken.differences).toHaveLength(1);
      expect(broken.differences[0]).toMatch(/^row filter of .* asked for \(id >>> 1\) \(not compared exactly: .*operator does not exist/);
      expect((await c().query(`SELECT count(*)::int AS n FROM pg_publication WHERE pubname LIKE 'pgoutput_wasm_probe%'`))[0].n).toBe(0);
    });

    if (major >= 18) {
      it("publishGeneratedColumns: stored generated values published with stored, absent with none; compared", async () => {
        const n = ++seq;
        await c().query(`CREATE TABLE gen${n} (id int PRIMARY KEY, a int, twice int GENERATED ALWAYS AS (a * 2) STORED)`);
        const stored = await open(c(), { publications: `genpub${n}`, publication: { create: true, tables: [`gen${n}`], publishGeneratedColumns: "stored" } });
        const none = await open(c(), { publications: `nogen${n}`, publication: { create: true, tables: [`gen${n}`] } });
        await c().query(`INSERT INTO gen${n} (id, a) VALUES (1, 21)`);
        expect(await inserts(stored, 1)).toEqual([{ table: `gen${n}`, values: { id: 1, a: 21, twice: 42 } }]);
        expect(await inserts(none, 1)).toEqual([{ table: `gen${n}`, values: { id: 1, a: 21 } }]);
        expect((await report(c(), { tables: [`gen${n}`] }, `genpub${n}`)).differences).toEqual(["publish_generated_columns is stored; asked for none"]);
      });
    } else {
      it("what the server lacks is UNSUPPORTED_BY_SERVER before anything is created", async () => {
        const n = ++seq;
        await c().query(`CREATE TABLE old${n} (id int PRIMARY KEY)`);
        const e = await open(c(), { publications: `oldpub${n}`, publication: { create: true, tables: [`old${n}`], publishGeneratedColumns: "stored" } }).catch((x: unknown) => x);
        expect(e).toMatchObject({ code: "UNSUPPORTED_BY_SERVER" });
        expect((e as Error).message).toMatch(/publishGeneratedColumns needs PostgreSQL 18/);
        expect(await c().query(`SELECT 1 FROM pg_publication WHERE pubname = 'oldpub${n}'`)).toEqual([]);
      });
    }
  });
}
