/**
 * Hazards other replication clients hit, one test each:
 *
 * - PostgreSQL 18 sends an unsolicited Stream Abort to a protocol-1 client
 *   that never asked for streaming (estuary/connectors#5228: a subtransaction
 *   wrongly marked as streamed). A real server does it only under that bug,
 *   so a fake walsender sends it between two transactions; every consumer
 *   (the messages, the transactions, a pipeline without a replay decoder)
 *   must survive it with the right rows, or fail with a typed error: never
 *   a wrong row.
 * - Non-transactional heartbeats that did not let a fresh instance recycle
 *   WAL (PeerDB#3904): on a new cluster with no other traffic at all, the
 *   slot's restart_lsn must advance with heartbeats on.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type * as net from "node:net";
import { encode } from "../devkit/encoder/encoder.ts";
import { backend, backendStream, wal } from "../devkit/encoder/walsender-encoder.ts";
import { formatLsn, parseLsn } from "../bindings/lsn.ts";
import { replicate, type ReplicationStream } from "../bindings/pg/index.ts";
import { FORMATS, Pipeline, streamSource } from "../bindings/pipeline/index.ts";
import type { Records } from "../bindings/pipeline/records.ts";
import type { Sink } from "../bindings/pipeline/sink.ts";
import { send, startFakeWalsender, type FakeWalsender } from "./support/fake-walsender.ts";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const T = 1_700_000_000_000_000n;

/** Two plain transactions with a stray Stream Abort (protocol 1, no streaming asked for) between them, then a keepalive. */
function strayAbortStream(abortOfWhole: boolean): Uint8Array {
  const rel = encode.relation({
    relationId: 16384, namespace: "public", relationName: "t", replicaIdentity: "d",
    columns: [{ flags: 1, name: "id", typeId: 23, typeModifier: -1 }, { flags: 0, name: "v", typeId: 25, typeModifier: -1 }],
  });
  const at = (m: Parameters<typeof wal.xlogData>[0], lsn: bigint) => backend.copyData(wal.xlogData(m, { walStart: lsn, walEnd: lsn, sendTime: T }));
  const row = (id: string, v: string) => [id, v];
  return backendStream([
    at(encode.begin({ finalLsn: 0x1000n, commitTime: T, xid: 700 }), 0x900n),
    at(rel, 0x900n),
    at(encode.insert({ relationId: 16384, newTuple: row("1", "one") }), 0x900n),
    at(encode.commit({ commitLsn: 0x1000n, endLsn: 0x1030n, commitTime: T }), 0x1000n),
    // What PostgreSQL 18 sent estuary's protocol-1 client: a Stream Abort of a (sub)transaction it never streamed.
    at(encode.streamAbort(abortOfWhole ? { xid: 701, subXid: 701 } : { xid: 701, subXid: 702 }), 0x1100n),
    at(encode.begin({ finalLsn: 0x2000n, commitTime: T, xid: 701 }), 0x1900n),
    at(encode.insert({ relationId: 16384, newTuple: row("2", "two") }), 0x1900n),
    at(encode.commit({ commitLsn: 0x2000n, endLsn: 0x2030n, commitTime: T }), 0x2000n),
    backend.copyData(wal.keepalive({ walEnd: 0x2030n, sendTime: T, replyRequested: false })),
  ]);
}

const fakes: FakeWalsender[] = [];
const streams: ReplicationStream[] = [];
afterEach(async () => {
  await Promise.all(streams.splice(0).map((s) => s.stop().catch(() => {})));
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});

async function fakeStream(abortOfWhole: boolean, ack: "auto" | "manual"): Promise<ReplicationStream> {
  const fake = await startFakeWalsender(async (socket: net.Socket) => void (await send(socket, strayAbortStream(abortOfWhole))));
  fakes.push(fake);
  const s = await replicate({
    connection: { host: "127.0.0.1", port: fake.port, user: "u", database: "d" }, slot: "s", publications: "p",
    protoVersion: 1, ack, reconnect: false, statusIntervalMs: 60_000,
  });
  streams.push(s);
  return s;
}

describe("a stray Stream Abort to a protocol-1 client (PostgreSQL 18, estuary/connectors#5228)", () => {
  for (const whole of [false, true]) {
    const what = whole ? "of a whole transaction" : "of a subtransaction";
    it(`${what}: the message iteration goes on, the rows are right`, async () => {
      const s = await fakeStream(whole, "auto");
      const seen: string[] = [];
      for await (const m of s) {
        if (m.kind === "Insert") seen.push(JSON.stringify(m.newTuple.toObject()));
        else seen.push(m.kind);
        if (m.kind === "Commit" && m.endLsn === 0x2030n) break;
      }
      expect(seen).toEqual(["Begin", "Relation", '{"id":1,"v":"one"}', "Commit", "StreamAbort", "Begin", '{"id":2,"v":"two"}', "Commit"]);
    });

    it(`${what}: transactions() gives both transactions whole, nothing of the abort`, async () => {
      const s = await fakeStream(whole, "auto");
      const rows: unknown[][] = [];
      for await (const tx of s.transactions()) {
        if (tx.kind !== "commit") continue;
        rows.push(tx.messages.filter((m) => m.kind === "Insert").map((m) => (m.newTuple as { text?: string }[]).map((c) => c.text)));
        if (tx.endLsn === 0x2030n) break;
      }
      expect(rows).toEqual([[["1", "one"]], [["2", "two"]]]);
    });

    it(`${what}: a JSON Lines pipeline without a replay decoder writes both rows and acknowledges both`, async () => {
      const s = await fakeStream(whole, "manual");
      const decoder = s.decoder;
      const lines: string[] = [];
      const sink: Sink = {
        name: "memory",
        write: async (records: Records) => {
          for (let i = 0; i < records.length; i++) lines.push(new TextDecoder().decode(records.payloadOf(i)));
        },
        close: async () => {},
      };
      const acks: bigint[] = [];
      const run = new Pipeline({
        source: streamSource(s), format: FORMATS.jsonl!.create({ decoder }, {}), sink,
        onAck: (lsn) => {
          acks.push(lsn);
          if (lsn >= 0x2030n) run.stop();
        },
      });
      await run.run();
      expect(lines.map((l) => JSON.parse(l).columns.map((c: { value: unknown }) => c.value))).toEqual([[1, "one"], [2, "two"]]);
      expect(acks.at(-1)).toBe(0x2030n);
    });
  }
});

describe("heartbeats on a new cluster with no other traffic (PeerDB#3904)", () => {
  const clusters: Cluster[] = [];
  afterAll(async () => {
    await Promise.all(clusters.map((c) => c.stop()));
  });

  /**
   * restart_lsn moves to a running-xacts record the walsender decoded and the client confirmed past. The
   * background writer logs one every 15 s, and only after WAL that counts as activity: on a cluster where
   * nothing else writes, the slot's creation makes one, and only heartbeats make the next ones. So the
   * slot must move twice: without heartbeats it moves once and stays (measured: see the report).
   */
  async function advancesTwice(major: PgMajor): Promise<string> {
    const cluster = await startCluster(major);
    clusters.push(cluster);
    await cluster.query(`CREATE TABLE quiet (id int PRIMARY KEY)`);
    await cluster.query(`CREATE PUBLICATION quietpub FOR TABLE quiet`);
    const config = { host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database };
    const s = await replicate({
      connection: config, slot: { name: "quiet", create: true }, publications: "quietpub", statusIntervalMs: 200,
      heartbeat: { intervalMs: 200 },
    });
    streams.push(s);
    const consumer = (async () => {
      for await (const _ of s) void _;
    })();
    const restart = async () => parseLsn((await cluster.query<{ r: string }>(`SELECT restart_lsn::text AS r FROM pg_replication_slots WHERE slot_name = 'quiet'`))[0]!.r);
    const moved = async (from: bigint): Promise<bigint> => {
      const deadline = Date.now() + 40_000; // two of the background writer's 15 s intervals, and some
      for (;;) {
        const now = await restart();
        if (now > from || Date.now() > deadline) return now;
        await sleep(500);
      }
    };
    const r0 = await restart();
    const r1 = await moved(r0);
    const r2 = await moved(r1);
    const sent = (await s.health()).heartbeats?.sent ?? 0;
    await s.stop();
    await consumer;
    expect(r1 > r0, `PostgreSQL ${major}: first move`).toBe(true);
    expect(r2 > r1, `PostgreSQL ${major}: second move`).toBe(true);
    return `PG ${major}: restart_lsn ${formatLsn(r0)} -> ${formatLsn(r1)} -> ${formatLsn(r2)} after ${sent} heartbeats`;
  }

  it("PostgreSQL 15 and 18: the slot's restart_lsn keeps advancing with heartbeats on", { timeout: 120_000 }, async () => {
    // Both at once: each waits for its background writer, not for the CPU.
    for (const line of await Promise.all([advancesTwice(15), advancesTwice(18)])) console.log(line);
  });
});
