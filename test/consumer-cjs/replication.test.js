// A pg-logical-replication user's Jest test, in a CommonJS project, with one change: the
// PgoutputPlugin comes from pgoutput-wasm/pg-logical-replication. Modelled on
// pg-logical-replication's own src/test/decoder-pgoutput.spec.ts ("Insert, Delete(w/FK)", "Message").
// scripts/pack-check.mjs runs it against a real PostgreSQL: DATABASE_URL names the server, SLOT a fresh
// slot name (its slot and publication are made and dropped here).
const { Client, types } = require("pg");
const { LogicalReplicationService } = require("pg-logical-replication");
const { PgoutputPlugin } = require("pgoutput-wasm/pg-logical-replication"); // was: require("pg-logical-replication")

jest.setTimeout(60_000);
const connectionString = process.env.DATABASE_URL;
const slotName = process.env.SLOT ?? "slot_pgoutput";
const publicationName = "pgoutput_test_pub";
const lsnRe = /^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/;

// numeric as a JS number: a parser the application registers on its own pg, which the plugin must use.
types.setTypeParser(1700, (text) => Number.parseFloat(text));

/** Resolves once `predicate(messages)` holds; rejects after `ms` with what arrived. */
function until(messages, predicate, ms = 20_000) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = setInterval(() => {
      if (predicate(messages)) {
        clearInterval(tick);
        resolve();
      } else if (Date.now() - started > ms) {
        clearInterval(tick);
        reject(new Error(`timed out; got ${messages.map((m) => m.tag).join(",")}`));
      }
    }, 20);
  });
}

describe("pgoutput", () => {
  let client;
  let service;

  beforeAll(async () => {
    client = new Client({ connectionString });
    await client.connect();
    await client.query(`CREATE TABLE users (id serial PRIMARY KEY, firstname text, created timestamptz DEFAULT now(), score numeric, deleted bool DEFAULT false)`);
    await client.query(`CREATE TABLE user_contents (id serial PRIMARY KEY, user_id int REFERENCES users ON DELETE CASCADE, title text)`);
    await client.query(`CREATE PUBLICATION "${publicationName}" FOR ALL TABLES`);
    await client.query(`SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, [slotName]);
  });

  afterEach(async () => {
    if (service) await service.destroy();
    service = undefined;
  });

  afterAll(async () => {
    await client.query(`SELECT pg_drop_replication_slot($1)`, [slotName]).catch(() => {});
    await client.query(`DROP PUBLICATION IF EXISTS "${publicationName}"`);
    await client.end();
  });

  it("Insert, Delete(w/FK), Message", async () => {
    service = new LogicalReplicationService({ connectionString }, { acknowledge: { auto: true, timeoutSeconds: 0 } });
    const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: [publicationName], messages: true });
    const messages = [];
    const errors = [];
    service.on("data", (lsn, log) => messages.push(log));
    service.on("error", (e) => errors.push(e));
    const started = new Promise((resolve) => service.on("start", resolve));
    service.subscribe(plugin, slotName).catch((e) => errors.push(e));
    await started;

    const result = await client.query(
      `INSERT INTO users (firstname, score) SELECT 'user' || i, i + 0.5 FROM generate_series(1, 5) AS i RETURNING id`,
    );
    expect(result.rowCount).toBe(5);
    await client.query(`INSERT INTO user_contents (user_id, title) SELECT id, 'title' FROM users WHERE id >= $1`, [result.rows[0].id]);
    await client.query(`DELETE FROM users WHERE id >= $1`, [result.rows[0].id]);
    await client.query(`SELECT pg_logical_emit_message(true, 'test_prefix', 'test_content')`);
    await until(messages, (m) => m.some((x) => x.tag === "message"));
    expect(errors).toEqual([]);

    expect(messages.find((msg) => msg.tag === "begin")).toStrictEqual({
      tag: "begin",
      commitLsn: expect.stringMatching(lsnRe),
      commitTime: expect.any(BigInt),
      xid: expect.any(Number),
    });
    expect(messages.find((msg) => msg.tag === "commit")).toStrictEqual({
      tag: "commit",
      flags: 0,
      commitLsn: expect.stringMatching(lsnRe),
      commitEndLsn: expect.stringMatching(lsnRe),
      commitTime: expect.any(BigInt),
    });

    const inserts = messages.filter((msg) => msg.tag === "insert");
    expect(inserts.length).toBe(10);
    expect(inserts[0]).toEqual({
      tag: "insert",
      relation: {
        tag: "relation",
        schema: "public",
        name: "users",
        relationOid: expect.any(Number),
        replicaIdentity: "default",
        columns: expect.any(Array),
        keyColumns: ["id"],
      },
      new: { id: result.rows[0].id, firstname: "user1", created: expect.any(Date), score: 1.5, deleted: false },
    });

    // because of the cascade delete, users 5 rows + user_contents 5 rows
    const deletes = messages.filter((msg) => msg.tag === "delete");
    expect(deletes.length).toBe(10);
    expect(deletes[0]).toEqual({
      tag: "delete",
      relation: expect.objectContaining({ tag: "relation", name: "users", keyColumns: ["id"] }),
      key: { id: result.rows[0].id },
      old: null, // only provided when REPLICA IDENTITY set to FULL
    });
    expect(deletes.map((d) => d.relation.name).sort()).toEqual([...Array(5).fill("user_contents"), ...Array(5).fill("users")]);

    expect(messages.filter((msg) => msg.tag === "message")).toStrictEqual([
      {
        content: Buffer.from("test_content"),
        flags: 1,
        messageLsn: expect.stringMatching(lsnRe),
        prefix: "test_prefix",
        tag: "message",
        transactional: true,
      },
    ]);
  });
});
