/**
 * The streaming client over TLS, against real PostgreSQL 15 and 18 with
 * `ssl = on` (a throwaway self-signed certificate). Under TLS pg reads a
 * tls.TLSSocket that replaces its net.Socket after the SSLRequest: the
 * connection guard (guard.ts) goes on at 'sslconnect', and the stream takes
 * the TLS socket over at START_REPLICATION (socket.ts). Both must see
 * plaintext frames: rows stream exactly, the walsender's and the copy
 * connections' pg_stat_ssl say TLS, and a snapshot row over maxMessageSize
 * is refused at its CopyData header on the TLS socket.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg, { type ClientConfig } from "pg";
import { replicate } from "../bindings/pg/index.ts";
import { getRunAs, giveToServer } from "../bindings/cli/run-as.ts";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { withClient } from "./support/clusters.ts";

const MAJORS: PgMajor[] = [15, 18];
const ROLE = "tls_only";
const clusters = new Map<PgMajor, Cluster>();
let certDir: string;

beforeAll(async () => {
  const runAs = await getRunAs();
  certDir = fs.mkdtempSync(path.join(os.tmpdir(), "pgoutputwasm-tls-"));
  fs.chmodSync(certDir, 0o755);
  const key = path.join(certDir, "server.key");
  const crt = path.join(certDir, "server.crt");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt, "-days", "1", "-subj", "/CN=127.0.0.1"], { stdio: "ignore" });
  fs.chmodSync(key, 0o600); // the server refuses a key others can read
  giveToServer(runAs, key);
  giveToServer(runAs, crt);
  const started = await Promise.all(MAJORS.map((m) => startCluster(m, {
    settings: { ssl: "on", ssl_cert_file: `'${crt}'`, ssl_key_file: `'${key}'` },
    // The test's role must use TLS: plaintext is refused, so a passing test cannot have fallen back to it.
    hba: [`hostnossl all ${ROLE} 127.0.0.1/32 reject`],
  })));
  for (const c of started) {
    await c.query(`CREATE ROLE ${ROLE} LOGIN SUPERUSER REPLICATION`);
    clusters.set(c.major, c);
  }
}, 120_000);

afterAll(async () => {
  for (const c of clusters.values()) await c.stop();
  if (certDir !== undefined) fs.rmSync(certDir, { recursive: true, force: true });
});

for (const major of MAJORS) {
  describe(`PostgreSQL ${major} with ssl = on`, () => {
    const config = (): ClientConfig => {
      const c = clusters.get(major)!;
      return { host: c.host, port: c.port, user: ROLE, database: c.database, ssl: { rejectUnauthorized: false } };
    };

    it("a plaintext connection is refused (the server really requires TLS)", async () => {
      const plain = new pg.Client({ ...config(), ssl: false });
      await expect(plain.connect()).rejects.toThrow(/no encryption|SSL off|pg_hba/);
      await plain.end().catch(() => {});
    });

    it("streams over TLS: guard at sslconnect, stream takeover of the TLS socket, every row exact", async () => {
      await withClient(config(), async (admin) => {
        const t = `tls_rows_${major}`;
        await admin.query(`CREATE TABLE ${t} (id int PRIMARY KEY, v text)`);
        await admin.query(`CREATE PUBLICATION pub_${t} FOR TABLE ${t}`);
        // A connection string this time: its sslmode=require is what asks for TLS (conninfo.ts).
        const c = clusters.get(major)!;
        const url = `postgres://${ROLE}@${c.host}:${c.port}/${c.database}?sslmode=require`;
        const stream = await replicate({ connection: url, slot: { name: `slot_${t}`, temporary: true }, publications: `pub_${t}`, reconnect: false });
        try {
          await admin.query(`INSERT INTO ${t} SELECT g, repeat(md5(g::text), 1 + g % 40) FROM generate_series(1, 3000) g`);
          const walsender = (await admin.query(`SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_replication r ON r.pid = s.pid`)).rows;
          expect(walsender).toEqual([{ ssl: true }]);
          const seen = new Map<number, string>();
          for await (const msg of stream) {
            if (msg.kind !== "Insert") continue;
            seen.set(msg.newTuple.value(0) as number, msg.newTuple.value(1) as string);
            if (seen.size === 3000) break;
          }
          const expected = (await admin.query<{ id: number; v: string }>(`SELECT id, v FROM ${t} ORDER BY id`)).rows;
          expect(expected.every((r) => seen.get(r.id) === r.v)).toBe(true);
        } finally {
          await stream.stop();
        }
      });
    }, 60_000);

    it("a snapshot over TLS: copy connections are TLS and guarded (a row over maxMessageSize refused at its header), a good one completes", async () => {
      await withClient(config(), async (admin) => {
        const t = `tls_snap_${major}`;
        await admin.query(`CREATE TABLE ${t} (id int PRIMARY KEY, v text)`);
        await admin.query(`ALTER TABLE ${t} ALTER COLUMN v SET STORAGE EXTERNAL`);
        await admin.query(`INSERT INTO ${t} SELECT g, repeat('q', CASE WHEN g = 700 THEN 200000 ELSE 50 END) FROM generate_series(1, 2000) g`);
        await admin.query(`CREATE PUBLICATION pub_${t} FOR TABLE ${t}`);

        const good = await replicate({ connection: config(), slot: { name: `slot_${t}`, temporary: true }, publications: `pub_${t}`, snapshot: { parallel: 2 }, reconnect: false });
        let rows = 0;
        let copiesOverTls: unknown[] = [];
        for await (const item of good) {
          if (rows === 0) copiesOverTls = (await admin.query(`SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid WHERE a.application_name = 'pgoutput-wasm snapshot'`)).rows;
          if (item.kind === "SnapshotComplete") break;
          rows++;
        }
        await good.stop();
        expect(rows).toBe(2000);
        expect(copiesOverTls).toEqual([{ ssl: true }, { ssl: true }]);

        const big = await replicate({
          connection: config(), slot: { name: `slot2_${t}`, temporary: true }, publications: `pub_${t}`, snapshot: { parallel: 1 }, maxMessageSize: 64 << 10, reconnect: false,
        });
        let error: unknown;
        try {
          for await (const _ of big) { /* until the error */ }
        } catch (e) {
          error = e;
        }
        expect(error).toMatchObject({ code: "SNAPSHOT_INCOMPLETE", cause: { code: "DECODE_ERROR", cause: { code: "MESSAGE_TOO_LARGE" } } });
      });
    }, 60_000);
  });
}
