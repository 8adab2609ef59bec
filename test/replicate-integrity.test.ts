/**
 * Data integrity of the streaming client against real PostgreSQL 15 and 18,
 * for the defects a first version had:
 * - a large payload queued behind a late consumer was overwritten by pg's
 *   buffer reuse (the stream now reads the socket into its own memory);
 * - the baseline backend's views read a reused queue block while the
 *   consumer awaited between messages (wrong values, no error);
 * - a stalled walsender (SIGSTOP) kept the client waiting forever (now a
 *   retryable RECEIVE_TIMEOUT, and a resume delivers what was written).
 * Each run checks every value against what the test wrote, and memory.
 */
import { describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import type { ClientConfig } from "pg";
import { replicate, type ReplicateOptions, type ReplicationStream } from "../bindings/pg/index.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import type { PgMajor } from "../devkit/cluster/cluster.ts";
import { liveBytes } from "./support/memory.ts";
import { pooledClusters } from "./support/clusters.ts";
import { backend, onceAcrossBackends } from "./support/backends.ts";

const MAJORS: PgMajor[] = [15, 18];
/** The run's backend: the runner runs this file once per backend (vitest.config.ts). */
const decoder = backend.name;
const MIB = 1 << 20;
const clusters = pooledClusters(MAJORS, 2);
let seq = 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

async function setup(major: PgMajor): Promise<{ sql: (q: string) => Promise<unknown[]>; options: Omit<ReplicateOptions, "decoder">; table: string }> {
  const c = clusters.get(major)!;
  const n = ++seq;
  const sql = async (q: string) => (await c.pool.query(q)).rows;
  await sql(`CREATE TABLE big${n} (id int PRIMARY KEY, v text)`);
  await sql(`CREATE PUBLICATION ipub${n} FOR TABLE big${n}`);
  return { sql, table: `big${n}`, options: { connection: c.config, slot: { name: `islot${n}`, create: true }, publications: `ipub${n}` } };
}

/** The text of row `id`: rows differ, so a value read from the wrong bytes cannot pass. */
const small = (id: number) => `row ${id} ${"abcdefghij".repeat(1 + (id % 7))}`;
/** A ~400 KiB value that compresses badly (md5 chain), as SQL and as the expected string. */
const BIG_SQL = `(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 12800) g)`;
const bigValue = (): string => {
  let s = "";
  for (let g = 1; g <= 12800; g++) s += createHash("md5").update(String(g)).digest("hex");
  return s;
};

for (const major of MAJORS) {
  describe(`PostgreSQL ${major}`, () => {
    it(`a ~400 KiB row, then 3,000 small rows, the consumer 500 ms late; every value exact, three runs`, async () => {
      const expectedBig = sha(bigValue());
      for (let run = 0; run < 3; run++) {
        const { sql, options, table } = await setup(major);
        const before = liveBytes();
        const s: ReplicationStream = await replicate({ ...options, decoder });
        try {
          // One transaction: the large row, then 3,000 small ones in a continuous stream of CopyData.
          await sql(`INSERT INTO ${table} VALUES (0, ${BIG_SQL}); INSERT INTO ${table} SELECT g, 'row ' || g || ' ' || repeat('abcdefghij', 1 + g % 7) FROM generate_series(1, 3000) g`);
          await sleep(500); // pg and the socket deliver while nobody reads
          let seen = 0;
          for await (const m of s) {
            if (m.kind !== "Insert") continue;
            const id = Number(m.newTuple.text("id"));
            const v = m.newTuple.text("v") as string;
            if (id === 0) expect({ length: v.length, sha: sha(v) }).toEqual({ length: 409_600, sha: expectedBig });
            else expect(v).toBe(small(id));
            if (++seen === 3001) break;
          }
          expect(seen).toBe(3001);
          expect(liveBytes() - before).toBeLessThan(48 * MIB);
        } finally {
          await s.stop();
        }
      }
    });

    it("a consumer that awaits between messages while more arrives reads every value exactly (the old baseline read protocol bytes)", async () => {
      const { sql, options, table } = await setup(major);
      const before = liveBytes();
      const s = await replicate({ ...options, decoder, highWaterMark: 256 << 10 });
      try {
        const writer = (async () => {
          for (let b = 0; b < 10; b++) {
            await sql(`INSERT INTO ${table} SELECT g, 'row ' || g || ' ' || repeat('abcdefghij', 1 + g % 7) FROM generate_series(${b * 500 + 1}, ${b * 500 + 500}) g`);
          }
        })();
        let seen = 0;
        const held: PgoutputMessage[] = [];
        for await (const m of s) {
          if (m.kind !== "Insert") continue;
          held.push(m);
          await new Promise((r) => setImmediate(r)); // more socket data is queued meanwhile
          const id = Number(m.newTuple.text("id"));
          expect(m.newTuple.text("v")).toBe(small(id));
          if (++seen === 5000) break;
        }
        await writer;
        expect(seen).toBe(5000);
        held.length = 0;
        expect(liveBytes() - before).toBeLessThan(48 * MIB);
      } finally {
        await s.stop();
      }
    });

    // The stream's own behaviour, the same on either backend: one run only.
    if (onceAcrossBackends) it("a stalled walsender (SIGSTOP) is a retryable RECEIVE_TIMEOUT; resuming delivers what was written meanwhile", async () => {
      const { sql, options, table } = await setup(major);
      const opts = { ...options, receiveTimeoutMs: 1200, reconnect: false }; // the error itself is asserted here
      const before = liveBytes();
      let s = await replicate(opts);
      const [{ pid }] = (await sql(`SELECT active_pid AS pid FROM pg_replication_slots WHERE slot_name = '${(options.slot as { name: string }).name}'`)) as { pid: number }[];
      expect(pid).toBeGreaterThan(0);
      const ids: number[] = [];
      let error: unknown;
      const t0 = Date.now();
      try {
        await sql(`INSERT INTO ${table} VALUES (1, 'before')`);
        for await (const m of s) {
          if (m.kind === "Insert") {
            ids.push(Number(m.newTuple.text("id")));
            process.kill(pid, "SIGSTOP");
            await sql(`INSERT INTO ${table} VALUES (2, 'while stopped')`);
          }
        }
      } catch (e) {
        error = e;
      } finally {
        process.kill(pid, "SIGCONT");
      }
      expect(error).toMatchObject({ name: "ReplicationError", code: "RECEIVE_TIMEOUT", retryable: true });
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(ids).toEqual([1]);
      expect(liveBytes() - before).toBeLessThan(48 * MIB);
      // The stopped walsender still holds the slot until it notices the closed socket.
      const deadline = Date.now() + 20_000;
      for (;;) {
        try {
          s = await replicate({ ...opts, slot: (options.slot as { name: string }).name, startLsn: s.lastAckedLsn });
          break;
        } catch (e) {
          if (!(e as { retryable?: boolean }).retryable || Date.now() > deadline) throw e;
          await sleep(200);
        }
      }
      try {
        for await (const m of s) {
          if (m.kind !== "Insert") continue;
          ids.push(Number(m.newTuple.text("id")));
          if (ids.includes(2)) break;
        }
      } finally {
        await s.stop();
      }
      expect(ids.filter((i) => i === 2)).toEqual([2]);
    });
  });
}
