/**
 * Raw socket bytes from a real walsender, split anywhere.
 *
 * A replication=database connection is tapped at its socket ('data' events)
 * from START_REPLICATION to the end of the stream (our CopyDone, the
 * server's CopyDone, CommandComplete, ReadyForQuery), while pg's own parser
 * hands over the CopyData payloads of the same bytes. Fed to `pushBackend`
 * — split at every byte position (a small stream), in random chunks (a
 * larger one with streamed transactions), one byte at a time — the decoder
 * must give exactly what `decodeCopyData` gives for the payloads.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "pg";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { WalMessage } from "../bindings/walsender.ts";
import { backend } from "./support/backends.ts";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { Random } from "../devkit/fuzz/random.ts";
import { concatBytes as concat } from "../bindings/copy-bytes.ts";

interface Recording {
  /** The socket bytes, as the reads came. */
  chunks: Uint8Array[];
  /** The CopyData payloads pg parsed out of them. */
  payloads: Uint8Array[];
}

let pg15: Cluster;
let pg18: Cluster;
let small: Recording;
let large: Recording;

beforeAll(async () => {
  [pg15, pg18] = await Promise.all([startCluster(15), startCluster(18)]);
  [small, large] = await Promise.all([
    record(pg15, "small", "proto_version '3', two_phase 'true', messages 'true'", true, async (sql) => {
      await sql("INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, NULL)");
      await sql("UPDATE t SET v = 'ünïcödé' WHERE id = 2");
      await sql("DELETE FROM t WHERE id = 3");
      await sql("SELECT pg_logical_emit_message(false, 'app', 'hello')");
      await sql("BEGIN; INSERT INTO t VALUES (4, 'prepared'); PREPARE TRANSACTION 'g'");
      await sql("COMMIT PREPARED 'g'");
      await sql("TRUNCATE t");
    }),
    record(pg18, "large", "proto_version '4', streaming 'parallel', messages 'true'", false, async (sql) => {
      await sql("INSERT INTO t SELECT g, repeat('x', 50 + g % 200) FROM generate_series(1, 500) g");
      // Streamed: beyond logical_decoding_work_mem (64 kB).
      await sql("INSERT INTO t SELECT g, repeat(md5(g::text), 4) FROM generate_series(1000, 3000) g");
      await sql("UPDATE t SET v = NULL WHERE id % 7 = 0");
      await sql("SELECT pg_logical_emit_message(true, 'tx', repeat('m', 70000))");
    }),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([pg15?.stop(), pg18?.stop()]);
});

/**
 * Streams from a new slot while `workload` runs, taps the socket, ends with
 * CopyDone once a final non-transactional message arrived.
 */
async function record(
  cluster: Cluster, name: string, options: string, twoPhase: boolean,
  workload: (sql: (text: string) => Promise<unknown>) => Promise<void>,
): Promise<Recording> {
  await cluster.query(`CREATE TABLE t (id int PRIMARY KEY, v text)`);
  await cluster.query(`CREATE PUBLICATION p FOR TABLE t`);
  await cluster.query(`SELECT pg_create_logical_replication_slot($1, 'pgoutput', false, $2)`, [name, twoPhase]);
  const client: Client = await cluster.connect({ replication: "database" });
  const conn = (client as unknown as {
    connection: {
      stream: NodeJS.EventEmitter;
      on(e: "copyData", f: (m: { chunk: Buffer }) => void): void;
      once(e: "replicationStart", f: () => void): void;
      endCopyFrom(): void;
    };
  }).connection;
  const chunks: Uint8Array[] = [];
  const payloads: Uint8Array[] = [];
  let done = false;
  const marker = new TextEncoder().encode("end-of-recording");
  const hasMarker = (p: Uint8Array): boolean => {
    outer: for (let i = 0; i + marker.length <= p.length; i++) {
      for (let j = 0; j < marker.length; j++) if (p[i + j] !== marker[j]) continue outer;
      return true;
    }
    return false;
  };
  // Copies: both pg's parser buffer and the socket's chunks may be reused.
  conn.stream.on("data", (b: Buffer) => chunks.push(new Uint8Array(b)));
  conn.on("copyData", (m) => {
    payloads.push(new Uint8Array(m.chunk));
    if (hasMarker(m.chunk)) done = true;
  });
  const started = new Promise<void>((resolve) => conn.once("replicationStart", resolve));
  const query = client.query(`START_REPLICATION SLOT "${name}" LOGICAL 0/0 (${options}, publication_names '"p"')`);
  query.catch(() => {});
  await started;
  await workload((text) => cluster.query(text));
  await cluster.query(`SELECT pg_logical_emit_message(false, 'marker', 'end-of-recording')`);
  const deadline = Date.now() + 20_000;
  while (!done) {
    if (Date.now() > deadline) throw new Error(`${name}: the marker did not arrive`);
    await new Promise((r) => setTimeout(r, 20));
  }
  conn.endCopyFrom();
  await query; // the server's CopyDone, CommandComplete and ReadyForQuery are in the tap now
  await client.end();
  return { chunks, payloads };
}

/** Materializes a batch at once (its views go stale with the next call). */
function materialized(batch: Iterable<WalMessage>): Record<string, unknown>[] {
  return [...batch].map((m) => m.materialize());
}

/** Feeds the pieces to pushBackend; returns what came out, pgoutput messages and keepalives apart from backend messages. */
function feed(decoder: PgoutputDecoder, pieces: Iterable<Uint8Array>): { wal: Record<string, unknown>[]; backend: string[] } {
  const wal: Record<string, unknown>[] = [];
  const backend: string[] = [];
  for (const piece of pieces) {
    for (const m of materialized(decoder.pushBackend(piece))) {
      if (m.kind === "BackendMessage") backend.push(m.type as string);
      else wal.push(m);
    }
  }
  decoder.end(); // nothing left over
  return { wal, backend };
}

function* cuts(bytes: Uint8Array, at: readonly number[]): Generator<Uint8Array> {
  let from = 0;
  for (const to of at) {
    yield bytes.subarray(from, to);
    from = to;
  }
  yield bytes.subarray(from);
}

describe(backend.name, () => {
  const expectedOf = async (r: Recording) => materialized((await backend.create()).decodeCopyData(r.payloads));

  it("the recordings hold what the tests need", async () => {
    const kindsSmall = new Set((await expectedOf(small)).map((m) => m.kind));
    for (const k of ["Begin", "Relation", "Insert", "Update", "Delete", "Truncate", "Commit", "Message", "BeginPrepare", "Prepare", "CommitPrepared", "PrimaryKeepalive"]) {
      expect(kindsSmall.has(k), k).toBe(true);
    }
    const kindsLarge = new Set((await expectedOf(large)).map((m) => m.kind));
    for (const k of ["StreamStart", "StreamStop", "StreamCommit", "Insert", "Update", "Message"]) expect(kindsLarge.has(k), k).toBe(true);
    const small_ = concat(small.chunks).length;
    const large_ = concat(large.chunks).length;
    console.info(`recorded: small ${small_} bytes in ${small.chunks.length} reads (${small.payloads.length} CopyData), large ${large_} bytes in ${large.chunks.length} reads (${large.payloads.length} CopyData)`);
    expect(small_).toBeLessThan(16 << 10);
    expect(large_).toBeGreaterThan(256 << 10);
  });

  it("raw bytes as read from the socket decode like pg's CopyData payloads", async () => {
    for (const r of [small, large]) {
      const expected = await expectedOf(r);
      const got = feed(await backend.create(), r.chunks);
      expect(got.wal).toEqual(expected);
      // CopyBothResponse first; after our CopyDone, the server's CopyDone, CommandCompletes (the COPY, then
      // START_REPLICATION itself), ReadyForQuery.
      expect(got.backend.join("")).toMatch(/^WcC+Z$/);
    }
  });

  it("a small stream split at every byte position", async () => {
    const bytes = concat(small.chunks);
    const expected = await expectedOf(small);
    const decoder = await backend.create();
    for (let i = 0; i <= bytes.length; i++) {
      decoder.reset();
      const got = feed(decoder, cuts(bytes, [i]));
      expect(got.wal, `split at ${i}`).toEqual(expected);
    }
  });

  it("a small stream one byte at a time", async () => {
    const bytes = concat(small.chunks);
    const at = Array.from({ length: bytes.length - 1 }, (_, i) => i + 1);
    expect(feed(await backend.create(), cuts(bytes, at)).wal).toEqual(await expectedOf(small));
  });

  it("a larger stream in random chunks", async () => {
    const bytes = concat(large.chunks);
    const expected = await expectedOf(large);
    const decoder = await backend.create();
    for (let seed = 1; seed <= 12; seed++) {
      const r = new Random(seed);
      const at: number[] = [];
      // Mostly small pieces (headers and length fields straddle them), some large.
      for (let p = 0; ; ) {
        p += r.chance(0.7) ? r.int(1, 64) : r.int(65, 96 << 10);
        if (p >= bytes.length) break;
        at.push(p);
      }
      decoder.reset();
      expect(feed(decoder, cuts(bytes, at)).wal, `seed ${seed}`).toEqual(expected);
    }
  });
});
