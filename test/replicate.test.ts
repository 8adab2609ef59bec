/**
 * The streaming client (`pgoutput-wasm/pg`) against real PostgreSQL 15 and
 * 18 through real walsender connections (replication=database): every
 * option on a server that has it, decoded rows checked against what the
 * test wrote; backpressure and memory under a slow consumer; acks checked on
 * the server (confirmed_flush_lsn); the walsender terminated mid-transaction
 * and a server restart, each followed by a resume from lastAckedLsn with the
 * delivered committed transactions compared to what the test committed.
 *
 * The first block needs no server: the command syntax, option checks, the
 * CopyData queue and the transaction assembler.
 */
import { describe, expect, it } from "vitest";
import pg from "pg";
import * as v8 from "node:v8";
import * as vm from "node:vm";
import type { ClientConfig } from "pg";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import type { WalMessage } from "../bindings/walsender.ts";
import { formatLsn, parseLsn } from "../bindings/lsn.ts";
import { isPgoutputError } from "../bindings/errors.ts";
import { createSlotCommand, startReplicationCommand } from "../bindings/pg/commands.ts";
import {
  ReplicationError, TransactionAssembler, replicate,
  type ReplicateOptions, type ReplicationStream, type StreamBlock, type StreamEnd, type StreamItem, type Transaction, type TransactionItem,
} from "../bindings/pg/index.ts";
import { normalizeOptions } from "../bindings/pg/options.ts";
import { ByteQueue } from "../bindings/pg/queue.ts";
import type { PgMajor } from "../devkit/cluster/cluster.ts";
import { restartCluster } from "../devkit/cluster/restart.ts";
import { encode } from "../devkit/encoder/encoder.ts";
import { pooledClusters, type PooledCluster } from "./support/clusters.ts";
import { delayProxy } from "./support/delay-proxy.ts";

// ------------------------------------------------------------------ sans-IO

describe("commands and options", () => {
  it("CREATE_REPLICATION_SLOT per server version", () => {
    expect(createSlotCommand("s1", {}, 180004)).toBe(`CREATE_REPLICATION_SLOT "s1" LOGICAL pgoutput (SNAPSHOT 'nothing')`);
    expect(createSlotCommand("s1", { temporary: true, twoPhase: true }, 150018)).toBe(
      `CREATE_REPLICATION_SLOT "s1" TEMPORARY LOGICAL pgoutput (SNAPSHOT 'nothing', TWO_PHASE)`,
    );
    expect(createSlotCommand("s1", { twoPhase: true }, 140010)).toBe(`CREATE_REPLICATION_SLOT "s1" LOGICAL pgoutput NOEXPORT_SNAPSHOT TWO_PHASE`);
    expect(createSlotCommand("s1", {}, 130000)).toBe(`CREATE_REPLICATION_SLOT "s1" LOGICAL pgoutput NOEXPORT_SNAPSHOT`);
    expect(() => createSlotCommand("s1", { twoPhase: true }, 130000)).toThrow(RangeError);
  });

  it("START_REPLICATION with every pgoutput option, names quoted", () => {
    const o = normalizeOptions({
      connection: "x", slot: "s", publications: ['a"b', "it's"], streaming: "parallel", binary: true, messages: true,
      twoPhase: true, origin: "none", startLsn: "16/B374D848",
    });
    expect(startReplicationCommand("s", o.startLsn, o)).toBe(
      `START_REPLICATION SLOT "s" LOGICAL 16/B374D848 (proto_version '4', publication_names '"a""b","it''s"', ` +
        `streaming 'parallel', binary 'true', messages 'true', two_phase 'true', origin 'none')`,
    );
    expect(startReplicationCommand("s", 0n, normalizeOptions({ connection: "x", slot: "s", publications: "p" }))).toBe(
      `START_REPLICATION SLOT "s" LOGICAL 0/0 (proto_version '1', publication_names '"p"')`,
    );
  });

  it("defaults the protocol version to what the options need, rejects bad combinations", () => {
    const base = { connection: "x", slot: "s", publications: "p" } as const;
    expect(normalizeOptions({ ...base, streaming: true }).protoVersion).toBe(2);
    expect(normalizeOptions({ ...base, twoPhase: true }).protoVersion).toBe(3);
    expect(normalizeOptions({ ...base, streaming: "parallel" }).protoVersion).toBe(4);
    expect(normalizeOptions(base)).toMatchObject({ ack: "auto", statusIntervalMs: 10_000, highWaterMark: 8 << 20, lowWaterMark: 2 << 20 });
    const bad: Partial<ReplicateOptions>[] = [
      { streaming: "parallel", protoVersion: 3 }, { streaming: "on", protoVersion: 1 }, { twoPhase: true, protoVersion: 2 },
      { protoVersion: 5 as never }, { slot: "Bad-Name" }, { publications: [] }, { startLsn: "nope" }, { origin: "some" as never },
      { ack: "sometimes" as never }, { highWaterMark: 0 }, { highWaterMark: 100, lowWaterMark: 200 }, { statusIntervalMs: -1 },
    ];
    for (const b of bad) {
      expect(() => normalizeOptions({ ...base, ...b } as ReplicateOptions), JSON.stringify(b)).toThrow(ReplicationError);
    }
  });

  it("retryable errors", () => {
    expect(new ReplicationError("x", { code: "CONNECTION_LOST" }).retryable).toBe(true);
    expect(new ReplicationError("x", { code: "SERVER_ERROR", sqlstate: "57P01" }).retryable).toBe(true);
    expect(new ReplicationError("x", { code: "SERVER_ERROR", sqlstate: "55006" }).retryable).toBe(true);
    expect(new ReplicationError("x", { code: "SERVER_ERROR", sqlstate: "42704" }).retryable).toBe(false);
    expect(new ReplicationError("x", { code: "DECODE_ERROR" }).retryable).toBe(false);
  });
});

describe("ByteQueue", () => {
  it("copies chunks (the source may be reused), hands all out at once, leaves what it handed out alone until the next take", () => {
    const q = new ByteQueue();
    const src = new Uint8Array(40_000);
    const expected: number[] = [];
    for (let i = 0; i < 10; i++) {
      const n = 1 + ((i * 7919) % 39_999);
      src.fill(i, 0, n);
      q.push(src.subarray(0, n)); // the same memory every time, as pg's parser buffer
      for (let k = 0; k < n; k++) expected.push(i);
    }
    src.fill(0xff);
    expect(q.bytes).toBe(expected.length);
    const first = q.take();
    expect(q.bytes).toBe(0);
    expect(q.highWater).toBe(expected.length);
    q.push(new Uint8Array(100_000).fill(7)); // fills the other buffer: `first` is untouched
    expect([...first]).toEqual(expected);
    expect([...q.take()]).toEqual(Array(100_000).fill(7));
    q.push(new Uint8Array([1, 2, 3]));
    expect([...q.take()]).toEqual([1, 2, 3]);
  });
});

describe("TransactionAssembler", () => {
  const wasm = new WasmDecoder();
  const relation = { relationId: 1, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }] };
  const rel = encode.relation(relation).bytes;
  const ins = (id: number, xid?: number): Uint8Array => encode.insert({ relation, xid, newTuple: [String(id)] }).bytes;
  const feed = (a: TransactionAssembler, msgs: Uint8Array[]): TransactionItem[] => {
    const out: TransactionItem[] = [];
    for (const m of msgs) {
      const item = a.push(wasm.decode(m));
      if (item) out.push(item);
    }
    return out;
  };
  const ids = (t: Transaction): string[] => t.messages.filter((m) => m.kind === "Insert").map((m) => (m.newTuple as { text: string }[])[0]!.text);
  const stream = (): Uint8Array[] => [
    encode.streamStart({ xid: 10, firstSegment: true }).bytes, rel, ins(1, 10), ins(2, 11), encode.streamStop().bytes,
    encode.begin({ finalLsn: 0x50n, commitTime: 1n, xid: 20 }).bytes, ins(100), encode.commit({ commitLsn: 0x50n, endLsn: 0x60n, commitTime: 1n }).bytes,
    encode.streamStart({ xid: 10, firstSegment: false }).bytes, ins(3, 12), encode.streamStop().bytes,
    encode.streamAbort({ xid: 10, subXid: 11 }).bytes,
    encode.streamStart({ xid: 30, firstSegment: true }).bytes, ins(300, 30), encode.streamStop().bytes,
    encode.streamAbort({ xid: 30, subXid: 30 }).bytes,
    encode.streamCommit({ xid: 10, commitLsn: 0x90n, endLsn: 0xa0n, commitTime: 2n }).bytes,
    encode.message({ lsn: 0xb0n, prefix: "p", content: new Uint8Array([1]) }).bytes,
  ];

  it("assembles streamed transactions, drops aborted subtransactions and aborted transactions", () => {
    const items = feed(new TransactionAssembler(), stream());
    expect(items.map((i) => i.kind)).toEqual(["commit", "commit", "message"]);
    const [plain, streamed] = items as Transaction[];
    expect(ids(plain!)).toEqual(["100"]);
    expect(plain).toMatchObject({ xid: 20, streamed: false, lsn: 0x50n, endLsn: 0x60n });
    expect(ids(streamed!)).toEqual(["1", "3"]);
    expect(streamed!.messages[0]!.kind).toBe("Relation"); // schema messages are kept
    expect(streamed).toMatchObject({ xid: 10, streamed: true, lsn: 0x90n, endLsn: 0xa0n, begin: undefined });
  });

  it("passes streamed blocks and ends through", () => {
    const items = feed(new TransactionAssembler({ streams: "passthrough" }), stream());
    expect(items.map((i) => i.kind)).toEqual([
      "streamBlock", "commit", "streamBlock", "streamAbort", "streamBlock", "streamAbort", "streamCommit", "message",
    ]);
    expect(items[3]).toMatchObject({ xid: 10, subXid: 11 });
    expect(items[6]).toMatchObject({ xid: 10, endLsn: 0xa0n });
  });
});

// ----------------------------------------------------------------- servers

type Ctx = PooledCluster;

const MAJORS: PgMajor[] = [15, 18];
const openStreams = new Set<ReplicationStream>();
const ctxs = pooledClusters(MAJORS, 4, openStreams);
let seq = 0;

const ctx = (major: PgMajor): Ctx => ctxs.get(major)!;
/** A full garbage collection (V8's gc(), exposed at run time), so memory figures start from live data. */
const gc: () => void = (() => {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
})();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sql<T = any>(c: Ctx, text: string, params?: unknown[]): Promise<T[]> {
  return (await c.pool.query(text, params as any[])).rows as T[];
}

/** A fresh table (id, tx, v) and a publication for it. */
async function table(c: Ctx, extra = ""): Promise<{ table: string; pub: string; slot: string }> {
  const n = ++seq;
  const t = `t${n}`;
  await sql(c, `CREATE TABLE ${t} (id int PRIMARY KEY, tx int, v text${extra})`);
  await sql(c, `CREATE PUBLICATION pub${n} FOR TABLE ${t}`);
  return { table: t, pub: `pub${n}`, slot: `slot${n}` };
}

async function open(c: Ctx, options: Omit<ReplicateOptions, "connection"> & Partial<Pick<ReplicateOptions, "connection">>): Promise<ReplicationStream> {
  // These tests assert how a stream ends on an error: no automatic reconnect (test/replicate-reconnect.test.ts has it).
  const s = await replicate({ connection: c.config, reconnect: false, ...options });
  openStreams.add(s);
  return s;
}

async function confirmedFlush(c: Ctx, slot: string): Promise<bigint> {
  const rows = await sql<{ lsn: string | null }>(c, `SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1`, [slot]);
  return rows[0]?.lsn ? parseLsn(rows[0].lsn) : 0n;
}

/** Waits until the slot's confirmed_flush_lsn satisfies `ok`. */
async function waitForConfirmed(c: Ctx, slot: string, ok: (lsn: bigint) => boolean, timeoutMs = 10_000): Promise<bigint> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lsn = await confirmedFlush(c, slot);
    if (ok(lsn)) return lsn;
    if (Date.now() > deadline) throw new Error(`slot ${slot}: confirmed_flush_lsn stayed at ${formatLsn(lsn)}`);
    await sleep(50);
  }
}

/**
 * Consumes an iterator in the background, keeping `map(item)` (views must be
 * copied out), so a test can wait for what it expects while writing.
 */
class Collector<T, U = T> {
  readonly items: U[] = [];
  error: unknown;
  done = false;
  #notify: (() => void) | undefined;
  readonly finished: Promise<void>;

  constructor(iterator: AsyncIterator<T>, map: (item: T) => U | Promise<U>) {
    this.finished = (async () => {
      try {
        for (;;) {
          const r = await iterator.next();
          if (r.done) break;
          this.items.push(await map(r.value));
          this.#wake();
        }
      } catch (e) {
        this.error = e;
      } finally {
        this.done = true;
        this.#wake();
      }
    })();
  }

  #wake(): void {
    const n = this.#notify;
    this.#notify = undefined;
    n?.();
  }

  /** Resolves when `pred(items)` holds; rejects on the stream's error, its end, or a timeout. */
  async until(pred: (items: U[]) => boolean, timeoutMs = 20_000): Promise<U[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (pred(this.items)) return this.items;
      if (this.error !== undefined) throw this.error;
      if (this.done) throw new Error(`the stream ended before the condition held (${this.items.length} items)`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out with ${this.items.length} items`);
      await new Promise<void>((resolve) => {
        this.#notify = resolve;
        setTimeout(resolve, Math.min(left, 200));
      });
    }
  }
}

const transactionsOf = (s: ReplicationStream, streams?: "assemble" | "passthrough") =>
  new Collector<TransactionItem>(s.transactions({ streams })[Symbol.asyncIterator](), (x) => x);
const isTx = (i: TransactionItem): i is Transaction => i.kind === "commit" || i.kind === "prepare" || i.kind === "commitPrepared" || i.kind === "rollbackPrepared";
/** The text columns of a materialized tuple. */
const texts = (tuple: unknown): (string | null)[] => (tuple as { kind: string; text?: string }[]).map((c) => (c.kind === "text" ? c.text! : c.kind === "null" ? null : `<${c.kind}>`));
const insertedIds = (t: Transaction): number[] => t.messages.filter((m) => m.kind === "Insert").map((m) => Number(texts(m.newTuple)[0]));
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

for (const major of MAJORS) {
  describe(`PostgreSQL ${major}`, () => {
    it("creates the slot, decodes every change kind, acknowledges, stop() leaves confirmed_flush at lastAckedLsn", async () => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c);
      const s = await open(c, { slot: { name: slot, create: true }, publications: pub, statusIntervalMs: 100 });
      expect(s.serverVersion).toBeGreaterThanOrEqual(major * 10000);
      await sql(c, `INSERT INTO ${t} SELECT g, 1, 'v' || g FROM generate_series(1, 50) g`);
      await sql(c, `UPDATE ${t} SET v = 'changed' WHERE id <= 10`);
      await sql(c, `DELETE FROM ${t} WHERE id > 40`);
      await sql(c, `ALTER TABLE ${t} REPLICA IDENTITY FULL`);
      await sql(c, `UPDATE ${t} SET v = NULL WHERE id = 11`);
      await sql(c, `TRUNCATE ${t}`);
      const col = transactionsOf(s);
      const txs = (await col.until((items) => items.length >= 5)) as Transaction[];
      expect(txs.map((x) => x.kind)).toEqual(["commit", "commit", "commit", "commit", "commit"]);
      // PostgreSQL sends a Relation before the first change of a relation, and again after its cache entry was invalidated.
      expect(txs[0]!.messages[0]).toMatchObject({ kind: "Relation", relationName: t, columns: [{ name: "id", isKey: true }, { name: "tx" }, { name: "v" }] });
      const changes = txs.map((x) => x.messages.filter((m) => m.kind !== "Relation" && m.kind !== "RelationChanged"));
      expect(changes[0]!.map((m) => texts(m.newTuple))).toEqual(range(1, 50).map((i) => [String(i), "1", `v${i}`]));
      expect(changes[0]![0]).toMatchObject({ kind: "Insert", namespace: "public", relationName: t });
      expect(changes[1]!.map((m) => [m.kind, m.oldTupleType, texts(m.newTuple)])).toEqual(range(1, 10).map((i) => ["Update", null, [String(i), "1", "changed"]]));
      expect(changes[2]!.map((m) => [m.kind, m.oldTupleType, texts(m.oldTuple)[0]])).toEqual(range(41, 50).map((i) => ["Delete", "K", String(i)]));
      // REPLICA IDENTITY FULL: a new Relation message, then the whole old row.
      expect(txs[3]!.messages[0]).toMatchObject({ kind: "Relation", replicaIdentity: "f" });
      // … and what changed, right after it (bindings/relation-changes.ts): every column is a key column now.
      expect(txs[3]!.messages[1]).toMatchObject({
        kind: "RelationChanged",
        changes: [{ kind: "replicaIdentityChanged", oldReplicaIdentity: "d", replicaIdentity: "f" }, { kind: "keyChanged", column: "tx", isKey: true }, { kind: "keyChanged", column: "v", isKey: true }],
      });
      expect(changes[3]!.map((m) => [m.kind, m.oldTupleType, texts(m.oldTuple), texts(m.newTuple)])).toEqual([["Update", "O", ["11", "1", "v11"], ["11", "1", null]]]);
      expect(changes[4]!.map((m) => [m.kind, m.relationIds])).toEqual([["Truncate", [txs[0]!.messages[0]!.relationId]]]);
      for (const x of txs) {
        expect(x.endLsn).toBe((x.end as { endLsn: bigint }).endLsn);
        expect(x.begin).toMatchObject({ kind: "Begin", xid: x.xid });
      }
      // Once the consumer asks for more, everything it was handed is acknowledged, and the server hears of it.
      await sleep(50);
      expect(s.lastAckedLsn).toBeGreaterThanOrEqual(txs[4]!.endLsn);
      const onServer = await waitForConfirmed(c, slot, (l) => l >= txs[4]!.endLsn);
      expect(onServer).toBeLessThanOrEqual(s.lastAckedLsn);
      await s.stop();
      await col.finished;
      expect(col.error).toBeUndefined();
      expect(await confirmedFlush(c, slot)).toBe(s.lastAckedLsn);
      expect(await sql(c, `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, [slot])).toEqual([{ active: false }]);
    });

    it.each([true, false])("message views stay valid until the next pull; one decode per drained queue (inPlaceReads %s)", async (inPlaceReads) => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c);
      class Spy extends WasmDecoder {
        readonly calls: number[] = [];
        override pushBackend(chunk: Uint8Array) {
          const batch = super.pushBackend(chunk);
          this.calls.push(batch.length);
          return batch;
        }
      }
      const spy = new Spy();
      const s = await open(c, { slot: { name: slot, create: true }, publications: pub, decoder: spy, keepalives: true, inPlaceReads });
      for (let i = 0; i < 4; i++) await sql(c, `INSERT INTO ${t} SELECT g, ${i}, repeat('x', 200) FROM generate_series(${i * 1000 + 1}, ${i * 1000 + 1000}) g`);
      const it = s[Symbol.asyncIterator]();
      const held: WalMessage[] = [];
      let inserts = 0;
      let keepalives = 0;
      while (inserts < 4000) {
        const r = await it.next();
        if (r.done) throw new Error("ended early");
        const m = r.value;
        if (m.kind === "RelationChanged" || m.kind === "Ddl" || m.kind === "BackfillRow" || m.kind === "BackfillComplete") continue;
        held.push(m);
        if (m.kind === "PrimaryKeepalive") keepalives++;
        if (m.kind !== "Insert") continue;
        inserts++;
        // The consumer is slow now and then: more data arrives meanwhile, the view must survive it.
        if (inserts % 500 === 0) await sleep(5);
        expect(m.newTuple.text("id")).toBe(String(inserts));
        expect(m.walStart).toBeGreaterThan(0n);
      }
      // Whole queues went to the decoder in one call: far fewer calls than payloads. Reads that land in the
      // decoder's memory are decoded there, never through pushBackend's copy.
      expect(spy.calls.length).toBe(inPlaceReads ? 0 : s.stats.batches);
      expect(s.stats.payloads).toBeGreaterThan(4000);
      if (!inPlaceReads) expect(spy.calls.reduce((a, b) => a + b, 0)).toBe(s.stats.payloads);
      expect(s.stats.batches).toBeLessThan(4000 / 10);
      // Views of earlier batches went stale when the decoder moved on.
      let stale = 0;
      for (const m of held) {
        try {
          if (m.kind === "Insert") void m.newTuple.length;
        } catch (e) {
          if (isPgoutputError(e) && e.code === "STALE_VIEW") stale++;
          else throw e;
        }
      }
      expect(stale).toBeGreaterThan(0);
      await it.return!();
      expect(await sql(c, `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, [slot])).toEqual([{ active: false }]);
    });

    it("the baseline backend (decoder option) delivers the same transactions as the default wasm one", async () => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c);
      const wasm = await open(c, { slot: { name: slot, create: true }, publications: pub, streaming: "on", messages: true });
      // The baseline's reads land in its memory (inPlaceReads), the wasm one's are copied: the same transactions either way.
      const base = await open(c, { slot: { name: `${slot}_b`, create: true }, publications: pub, streaming: "on", messages: true, decoder: "baseline", inPlaceReads: true });
      expect(wasm.decoder.backend).toBe("wasm");
      expect(base.decoder.backend).toBe("baseline");
      await sql(c, `INSERT INTO ${t} SELECT g, 1, repeat('z', g % 300) FROM generate_series(1, 3000) g`);
      await sql(c, `BEGIN; UPDATE ${t} SET v = NULL WHERE id % 3 = 0; SELECT pg_logical_emit_message(true, 'p', 'x'); COMMIT`);
      await sql(c, `DELETE FROM ${t} WHERE id > 2900`);
      const [a, b] = await Promise.all([transactionsOf(wasm).until((x) => x.length >= 3), transactionsOf(base).until((x) => x.length >= 3)]);
      // sendTime of the XLogData differs between the two connections; everything else is the same.
      const strip = (items: TransactionItem[]) => JSON.parse(JSON.stringify(items, (k, v) => (k === "sendTime" ? undefined : typeof v === "bigint" ? v.toString() : v)));
      expect(strip(b)).toEqual(strip(a));
      expect((a[0] as Transaction).streamed).toBe(true);
      await Promise.all([wasm.stop(), base.stop()]);
    });

    it("streaming on: a big transaction assembled from its blocks, rolled-back subtransaction and aborted transaction dropped; or passed through", async () => {
      const c = ctx(major);
      await streamingScenario(c, { streaming: "on", protoVersion: 2 });
    });

    if (major === 18) {
      it("streaming parallel (protocol 4): StreamAbort carries abortLsn and abortTime", async () => {
        const c = ctx(major);
        const passed = await streamingScenario(c, { streaming: "parallel", protoVersion: 4 });
        const aborts = passed.filter((i): i is StreamEnd => i.kind === "streamAbort");
        expect(aborts.length).toBe(2);
        for (const a of aborts) {
          expect(typeof (a.end as { abortLsn: unknown }).abortLsn).toBe("bigint");
          expect(typeof (a.end as { abortTime: unknown }).abortTime).toBe("bigint");
          expect(a.endLsn).toBe((a.end as { abortLsn: bigint }).abortLsn);
        }
      });
    }

    it("two-phase: PREPARE, COMMIT PREPARED, ROLLBACK PREPARED, and a streamed prepare", async () => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c);
      const s = await open(c, { slot: { name: slot, create: true }, publications: pub, twoPhase: true, streaming: "on" });
      expect(await sql(c, `SELECT two_phase FROM pg_replication_slots WHERE slot_name = $1`, [slot])).toEqual([{ two_phase: true }]);
      const w = await c.cluster.connect();
      try {
        await w.query(`BEGIN; INSERT INTO ${t} VALUES (1, 1, 'a'), (2, 1, 'b'); PREPARE TRANSACTION 'g1'`);
        await w.query(`COMMIT PREPARED 'g1'`);
        await w.query(`BEGIN; INSERT INTO ${t} VALUES (3, 2, 'c'); PREPARE TRANSACTION 'g2'`);
        await w.query(`ROLLBACK PREPARED 'g2'`);
        await w.query(`BEGIN; INSERT INTO ${t} SELECT g, 3, repeat('x', 100) FROM generate_series(100, 2099) g; PREPARE TRANSACTION 'g3'`);
        await w.query(`COMMIT PREPARED 'g3'`);
      } finally {
        await w.end();
      }
      const col = transactionsOf(s);
      const items = (await col.until((x) => x.length >= 6)) as Transaction[];
      expect(items.map((x) => [x.kind, x.gid, x.streamed])).toEqual([
        ["prepare", "g1", false], ["commitPrepared", "g1", false],
        ["prepare", "g2", false], ["rollbackPrepared", "g2", false],
        ["prepare", "g3", true], ["commitPrepared", "g3", false],
      ]);
      expect(insertedIds(items[0]!)).toEqual([1, 2]);
      expect(items[0]!.begin).toMatchObject({ kind: "BeginPrepare", gid: "g1" });
      expect(items[1]!.messages).toEqual([]);
      expect(insertedIds(items[4]!)).toEqual(range(100, 2099));
      expect(items[4]!.end?.kind).toBe("StreamPrepare");
      for (let i = 1; i < items.length; i++) expect(items[i]!.endLsn).toBeGreaterThan(items[i - 1]!.endLsn);
      await s.stop();
      expect(s.lastAckedLsn).toBeGreaterThanOrEqual(items[4]!.endLsn);
      expect(await confirmedFlush(c, slot)).toBe(s.lastAckedLsn);
    });

    it("binary: values in binary format", async () => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c, ", big bigint, f float8");
      const s = await open(c, { slot: { name: slot, create: true }, publications: pub, binary: true });
      await sql(c, `INSERT INTO ${t} VALUES (1, -2, 'héllo', 9007199254740993, 1.5)`);
      const it = s[Symbol.asyncIterator]();
      let ins: PgoutputMessage | undefined;
      for (;;) {
        const r = await it.next();
        if (r.done || r.value.kind === "Insert") {
          ins = r.value as PgoutputMessage;
          break;
        }
      }
      if (ins?.kind !== "Insert") throw new Error("no insert");
      const row = ins.newTuple;
      expect([0, 1, 2, 3, 4].map((i) => row.kind(i))).toEqual(["binary", "binary", "binary", "binary", "binary"]);
      const dv = (i: number) => { const b = row.bytes(i) as Uint8Array; return new DataView(b.buffer, b.byteOffset, b.byteLength); };
      expect(dv(0).getInt32(0)).toBe(1);
      expect(dv(1).getInt32(0)).toBe(-2);
      expect(new TextDecoder().decode(row.bytes(2) as Uint8Array)).toBe("héllo");
      expect(dv(3).getBigInt64(0)).toBe(9007199254740993n);
      expect(dv(4).getFloat64(0)).toBe(1.5);
      await it.return!();
    });

    it("messages: transactional ones inside their transaction, non-transactional ones on their own", async () => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c);
      const s = await open(c, { slot: { name: slot, create: true }, publications: pub, messages: true });
      await sql(c, `BEGIN; INSERT INTO ${t} VALUES (1, 1, 'a'); SELECT pg_logical_emit_message(true, 'app', 'in tx'); COMMIT`);
      await sql(c, `SELECT pg_logical_emit_message(false, 'app', '\\x00ff'::bytea)`);
      await sql(c, `INSERT INTO ${t} VALUES (2, 2, 'b')`);
      const col = transactionsOf(s);
      const items = await col.until((x) => x.length >= 3);
      expect(items.map((i) => i.kind)).toEqual(["commit", "message", "commit"]);
      const first = items[0] as Transaction;
      expect(first.messages.map((m) => m.kind)).toEqual(["Relation", "Insert", "Message"]);
      expect(first.messages[2]).toMatchObject({ prefix: "app", transactional: true, content: new TextEncoder().encode("in tx") });
      expect(items[1]).toMatchObject({ kind: "message", prefix: "app", content: new Uint8Array([0, 255]) });
      await s.stop();
    });

    if (major === 18) {
      it("origin none skips changes that carry a replication origin; any keeps them, with the Origin", async () => {
        const c = ctx(major);
        const { table: t, pub, slot } = await table(c);
        const none = await open(c, { slot: { name: slot, create: true }, publications: pub, origin: "none" });
        const any = await open(c, { slot: { name: `${slot}_any`, create: true }, publications: pub, origin: "any" });
        await sql(c, `SELECT pg_replication_origin_create('origin_${slot}')`);
        await sql(c, `INSERT INTO ${t} VALUES (1, 1, 'local')`);
        const w = await c.cluster.connect();
        try {
          await w.query(`SELECT pg_replication_origin_session_setup('origin_${slot}')`);
          await w.query(`BEGIN; SELECT pg_replication_origin_xact_setup('0/ABCDEF', now()); INSERT INTO ${t} VALUES (2, 2, 'remote'); COMMIT`);
        } finally {
          await w.end();
        }
        await sql(c, `INSERT INTO ${t} VALUES (3, 3, 'local again')`);
        const a = (await transactionsOf(any).until((x) => x.length >= 3)) as Transaction[];
        expect(a.map(insertedIds)).toEqual([[1], [2], [3]]);
        expect(a[1]!.origin).toEqual({ name: `origin_${slot}`, lsn: 0xabcdefn });
        expect(a[0]!.origin).toBeUndefined();
        const n = (await transactionsOf(none).until((x) => x.length >= 2)) as Transaction[];
        expect(n.map(insertedIds)).toEqual([[1], [3]]);
        await Promise.all([none.stop(), any.stop()]);
      });
    }

    it("manual acks: confirmed_flush_lsn on the server never passes what was acknowledged", async () => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c);
      const sent: bigint[] = [];
      const s = await open(c, {
        slot: { name: slot, create: true }, publications: pub, ack: "manual", statusIntervalMs: 50,
        onStatus: (st) => sent.push(st.flushed),
      });
      for (let i = 1; i <= 3; i++) await sql(c, `INSERT INTO ${t} VALUES (${i}, ${i}, 'x')`);
      const col = transactionsOf(s);
      const [t1, t2, t3] = (await col.until((x) => x.length >= 3)) as Transaction[];
      // Keepalives before the first transaction may have been confirmed (idle); from now on nothing may move.
      const base = s.lastAckedLsn;
      expect(base).toBeLessThan(t1!.endLsn);
      // Handed over and asked past, but not acknowledged: the server must not move past them.
      await sleep(300);
      await sql(c, `CHECKPOINT`); // more WAL, more keepalives
      await sleep(300);
      expect(s.lastAckedLsn).toBe(base);
      expect(await confirmedFlush(c, slot)).toBeLessThanOrEqual(base);
      expect(s.ack(t1!)).toBe(t1!.endLsn);
      s.sendStatus();
      expect(await waitForConfirmed(c, slot, (l) => l >= t1!.endLsn)).toBe(t1!.endLsn);
      await sleep(300);
      expect(await confirmedFlush(c, slot)).toBeLessThan(t2!.endLsn);
      // Acks never go backwards.
      expect(s.ack(t1!.endLsn - 1n)).toBe(t1!.endLsn);
      s.ack(formatLsn(t3!.endLsn));
      // Idle now: later keepalives may move it past t3's end, never before the ack.
      await waitForConfirmed(c, slot, (l) => l >= t3!.endLsn);
      for (const f of sent) expect(f <= base || f === t1!.endLsn || f >= t3!.endLsn, formatLsn(f)).toBe(true);
      await s.stop();
      expect(await confirmedFlush(c, slot)).toBe(s.lastAckedLsn);
    });

    it("stop() inside the loop, break, and ack-then-stop: lastAckedLsn is what the server got", async () => {
      const c = ctx(major);
      const { table: t, pub } = await table(c);
      for (const [i, how] of (["stop", "break", "ack+stop"] as const).entries()) {
        const slot = `stopin${++seq}`;
        const s = await open(c, { slot: { name: slot, create: true }, publications: pub });
        for (let k = 1; k <= 4; k++) await sql(c, `INSERT INTO ${t} VALUES (${i * 10 + k}, ${k}, 'x')`);
        const ends: bigint[] = [];
        for await (const tx of s.transactions()) {
          if (!isTx(tx)) continue;
          ends.push(tx.endLsn);
          if (ends.length < 3) continue;
          if (how === "ack+stop") s.ack(tx);
          if (how === "break") break;
          await s.stop();
        }
        // The third transaction was being processed: only ack() confirms it.
        expect(s.lastAckedLsn, how).toBe(how === "ack+stop" ? ends[2] : ends[1]);
        expect(await confirmedFlush(c, slot), how).toBe(s.lastAckedLsn);
        expect(s.ack(ends[2]!), `${how}: ack after stop`).toBe(s.lastAckedLsn);
        await sql(c, `SELECT pg_drop_replication_slot($1)`, [slot]);
      }
    });

    it("a status update every statusIntervalMs, scheduled from the last one sent, over a delayed connection", async () => {
      const c = ctx(major);
      const { pub, slot } = await table(c);
      const interval = 400;
      const proxy = await delayProxy(c.cluster.port, 5);
      try {
        const at: number[] = [];
        const s = await open(c, {
          connection: { ...c.config, port: proxy.port }, slot: { name: slot, create: true }, publications: pub,
          statusIntervalMs: interval, receiveTimeoutMs: 0, onStatus: () => at.push(performance.now()),
        });
        const t0 = performance.now();
        await sleep(interval * 6 + interval / 2);
        await s.stop();
        const periodic = at.slice(0, -1); // the last one is stop()'s
        expect(periodic.length).toBeGreaterThanOrEqual(5);
        // Before the fix the first came at 1.5 intervals (an update scheduled from CopyBothResponse, checked each half interval).
        expect(periodic[0]! - t0).toBeLessThan(interval * 1.25);
        const gaps = periodic.slice(1).map((x, k) => x - periodic[k]!);
        for (const g of gaps) expect(g).toBeLessThan(interval * 1.25);
        for (const g of gaps) expect(g).toBeGreaterThan(interval * 0.9);
      } finally {
        await proxy.close();
      }
    });

    it("answers a keepalive that asks for a reply at once, even while the consumer is not reading", async () => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c);
      const statuses: { at: number; replyRequested: boolean }[] = [];
      const t0 = Date.now();
      // wal_sender_timeout 1 s: the server asks for a reply after 0.5 s of silence and gives up after 1 s.
      const s = await open(c, {
        connection: { ...c.config, options: "-c wal_sender_timeout=1000" },
        slot: { name: slot, create: true }, publications: pub, statusIntervalMs: 60_000,
        onStatus: (st) => statuses.push({ at: Date.now() - t0, replyRequested: st.replyRequested }),
      });
      await sleep(2500); // nobody iterates
      expect(s.error).toBeUndefined();
      expect(statuses.length).toBeGreaterThanOrEqual(2);
      await sql(c, `INSERT INTO ${t} VALUES (1, 1, 'still there')`);
      const items = (await transactionsOf(s).until((x) => x.length >= 1)) as Transaction[];
      expect(insertedIds(items[0]!)).toEqual([1]);
      await s.stop();
    });

    it("server errors and connection loss are typed: missing slot, slot in use, missing publication, bad option, lost socket", async () => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c);
      await expect(replicate({ connection: c.config, slot: "no_such_slot", publications: pub })).rejects.toMatchObject({
        name: "ReplicationError", code: "SLOT_MISSING", sqlstate: "42704",
      });
      const s = await open(c, { slot: { name: slot, create: true }, publications: pub });
      const inUse = await replicate({ connection: c.config, slot, publications: pub }).catch((e: unknown) => e);
      expect(inUse).toBeInstanceOf(ReplicationError);
      expect(inUse).toMatchObject({ code: "SERVER_ERROR", sqlstate: "55006", retryable: true });
      await s.stop();
      if (major === 15) {
        await expect(replicate({ connection: c.config, slot, publications: pub, protoVersion: 4 })).rejects.toMatchObject({
          code: "SERVER_ERROR", sqlstate: "0A000",
        });
      }
      await expect(replicate({ connection: c.config, slot, publications: pub, streaming: "parallel", protoVersion: 3 })).rejects.toMatchObject({
        code: "INVALID_OPTION",
      });
      await expect(replicate({ connection: { ...c.config, port: 1 }, slot, publications: pub })).rejects.toMatchObject({ code: "CONNECT_FAILED" });
      await sql(c, `SELECT pg_create_logical_replication_slot('${slot}_td', 'test_decoding')`);
      await expect(replicate({ connection: c.config, slot: `${slot}_td`, publications: pub })).rejects.toMatchObject({ code: "INVALID_OPTION" });

      // A publication that does not exist: PostgreSQL 15 fails the stream at the first change, 18 warns and goes on.
      const notices: string[] = [];
      const errors: ReplicationError[] = [];
      const missing = await open(c, { slot, publications: "no_such_pub", onNotice: (n) => notices.push(`${n.code} ${n.message}`), onError: (e) => errors.push(e) });
      const col = transactionsOf(missing);
      await sql(c, `INSERT INTO ${t} VALUES (1, 1, 'x')`);
      if (major === 15) {
        await expect(col.until(() => false, 10_000)).rejects.toMatchObject({ code: "SERVER_ERROR", sqlstate: "42704" });
        expect(errors.map((e) => e.sqlstate)).toEqual(["42704"]);
        expect(await missing.closed).toBe(errors[0]);
      } else {
        await waitUntil(() => notices.length > 0);
        expect(notices[0]).toMatch(/^55000 skipped loading publication "no_such_pub"/);
        await missing.stop();
        expect(col.error).toBeUndefined();
      }

      // The socket goes away under the stream: CONNECTION_LOST, after what arrived before was delivered.
      let client: pg.Client | undefined;
      const lost = await resume(c, {
        slot, publications: pub,
        connection: () => (client = new pg.Client({ ...c.config, replication: "database" } as ClientConfig)),
      }, 0n);
      await sql(c, `INSERT INTO ${t} VALUES (2, 2, 'y')`);
      const col2 = transactionsOf(lost);
      await col2.until((x) => x.some((i) => isTx(i) && insertedIds(i).includes(2)));
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      await expect(col2.until(() => false, 10_000)).rejects.toMatchObject({ code: "CONNECTION_LOST", retryable: true });
      expect(lost.error?.code).toBe("CONNECTION_LOST");
    });

    it("a temporary slot goes away with its connection", async () => {
      const c = ctx(major);
      const { table: t, pub, slot } = await table(c);
      const s = await open(c, { slot: { name: slot, temporary: true }, publications: pub });
      expect(await sql(c, `SELECT temporary, active FROM pg_replication_slots WHERE slot_name = $1`, [slot])).toEqual([{ temporary: true, active: true }]);
      await sql(c, `INSERT INTO ${t} VALUES (1, 1, 'x')`);
      const items = (await transactionsOf(s).until((x) => x.length >= 1)) as Transaction[];
      expect(insertedIds(items[0]!)).toEqual([1]);
      await s.stop();
      await waitUntil(async () => (await sql(c, `SELECT 1 FROM pg_replication_slots WHERE slot_name = $1`, [slot])).length === 0);
    });

    it("pg_terminate_backend on the walsender mid-transaction, then resume from lastAckedLsn: nothing committed is lost", async () => {
      await terminateAndResume(ctx(major));
    });
  });
}

describe("PostgreSQL 15: slow consumer", () => {
  /**
   * 50 MB of changes are written before streaming starts, so the walsender
   * sends as fast as it decodes; the consumer sleeps 10 ms every 1000 rows.
   * The same WAL goes through three slots: a 1 MiB high-water mark, the
   * default 8 MiB, and a control with a mark too high to matter, which shows
   * what the queue would hold without backpressure.
   */
  it("memory stays bounded while 50 MB of changes go to a consumer slower than the server", async () => {
    const c = ctx(15);
    const { table: t, pub, slot } = await table(c);
    // Marks 1 and 8 MiB with coalesceMs 0: reads go on while the consumer is busy, until highWaterMark pauses
    // them; 1 GiB with coalesceMs 0: no backpressure; 8 MiB with the default coalesceMs: a busy consumer
    // stops the reading at 64 KiB queued, so the queue never nears the mark.
    const marks = [1 << 20, 8 << 20, 1 << 30, 8 << 20];
    for (let i = 0; i < marks.length; i++) await sql(c, `SELECT pg_create_logical_replication_slot('${slot}_${i}', 'pgoutput')`);
    const rows = 50_000;
    for (let i = 0; i < 50; i++) {
      await sql(c, `INSERT INTO ${t} SELECT g, ${i}, repeat(md5(g::text), 32) FROM generate_series(${i * 1000 + 1}, ${i * 1000 + 1000}) g`);
    }
    const results: { mark: number; highWater: number; pauses: number; growth: number; live: number }[] = [];
    const js = (): number => { const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers; };
    for (let i = 0; i < marks.length; i++) {
      const highWaterMark = marks[i]!;
      gc();
      const rss0 = process.memoryUsage().rss;
      const js0 = js();
      let rssMax = rss0;
      let liveMax = js0;
      const t0 = performance.now();
      const s = await open(c, { slot: `${slot}_${i}`, publications: pub, highWaterMark, coalesceMs: i < 3 ? 0 : undefined });
      let inserts = 0;
      let bytes = 0;
      for await (const m of s) {
        if (m.kind !== "Insert") continue;
        inserts++;
        bytes += m.newTuple.byteLength(2);
        if (i === 2 && inserts === 1) {
          // The control stops consuming until 32 MiB have arrived: without backpressure nothing stops the reading,
          // whatever the speeds of this machine's server and consumer (a busy CI machine once let the queue peak at
          // 8 MiB only, when the race was left to the sleeps below).
          await waitUntil(() => s.stats.bytes > 32 << 20, 60_000);
          gc();
          liveMax = Math.max(liveMax, js());
        }
        if (inserts % 250 === 0) {
          await sleep(10); // 25 MB/s at most: slower than the server
          rssMax = Math.max(rssMax, process.memoryUsage().rss);
        }
        if (inserts % 5000 === 0) {
          // What is alive (queue, decoder memory, pg's buffers), not garbage waiting for a collection.
          gc();
          liveMax = Math.max(liveMax, js());
        }
        if (inserts === rows) break;
      }
      const ms = performance.now() - t0;
      const st = s.stats;
      const growth = (rssMax - rss0) / (1 << 20);
      const live = (liveMax - js0) / (1 << 20);
      results.push({ mark: highWaterMark, highWater: st.bufferedHighWater, pauses: st.pauses, growth, live });
      console.info(
        `slow consumer, mark ${highWaterMark >> 10} KiB: ${(st.bytes / (1 << 20)).toFixed(1)} MB in ${st.payloads} payloads over ${Math.round(ms)} ms, ` +
          `${st.batches} decode calls, ${st.pauses} pauses, buffered high water ${(st.bufferedHighWater / 1024).toFixed(0)} KiB, ` +
          `growth: RSS ${growth.toFixed(1)} MB, live JS heap + ArrayBuffers ${live.toFixed(1)} MB`,
      );
      expect(inserts).toBe(rows);
      expect(bytes).toBe(rows * 1024);
      expect(st.bytes).toBeGreaterThan(50 << 20);
    }
    for (const r of results.slice(0, 2)) {
      expect(r.pauses).toBeGreaterThan(0);
      // At most one socket read's worth of payloads beyond the mark.
      expect(r.highWater).toBeLessThan(r.mark + (512 << 10));
      expect(r.growth).toBeLessThan(64);
      expect(r.live).toBeLessThan((3 * r.mark) / (1 << 20) + 16);
    }
    // Without backpressure the queue takes in far more than either mark while the consumer waits, and memory
    // follows: the test can tell.
    expect(results[2]!.pauses).toBe(0);
    expect(results[2]!.highWater).toBeGreaterThan(16 << 20);
    expect(results[2]!.live).toBeGreaterThan(results[0]!.live + 4);
    // Reading stopped by a busy consumer: never paused, and the queue at one socket read past 64 KiB.
    expect(results[3]!.pauses).toBe(0);
    expect(results[3]!.highWater).toBeLessThan((64 << 10) + (512 << 10));
    expect(results[3]!.live).toBeLessThan(16);
  });
});

describe("PostgreSQL 18: server restart", () => {
  it("fast restart while caught up, immediate restart mid-transaction; each resumed from lastAckedLsn", async () => {
    const c = ctx(18);
    const { table: t, pub, slot } = await table(c);
    await sql(c, `SELECT pg_create_logical_replication_slot('${slot}', 'pgoutput')`);
    const log = new DeliveryLog();
    const committed = new Set<number>();
    // Transaction 12 is the one the crash cuts: about 30 MB, more than the socket buffers on both sides can hold
    // (Linux grows a loopback connection's to several MB while the consumer is slow), so its Commit cannot have
    // arrived before the crash.
    const commit = async (tx: number, rows: number): Promise<void> => {
      await sql(c, `INSERT INTO ${t} SELECT g, ${tx}, repeat('r', ${tx === 12 ? 1000 : 100}) FROM generate_series(${tx * 100_000}, ${tx * 100_000 + rows - 1}) g`);
      committed.add(tx);
    };
    const expected = (tx: number): number => (tx === 12 ? 30_000 : tx % 4 === 0 ? 3000 : 5);

    // 1. Caught up, then a fast restart: the walsender waits for our flush to reach its end, which the idle keepalive reply gives it.
    let s = await open(c, { slot, publications: pub, statusIntervalMs: 200 });
    let session = log.session(s);
    for (let tx = 1; tx <= 6; tx++) await commit(tx, expected(tx));
    await session.until(() => [...committed].every((x) => log.has(x)));
    const t0 = performance.now();
    const restarted = restartCluster(c.cluster, { mode: "fast" });
    const fastError = await session.until(() => false, 60_000).catch((e: unknown) => e);
    expect(fastError).toBeInstanceOf(ReplicationError);
    await restarted;
    const fastMs = performance.now() - t0;
    expect((s.error as ReplicationError).retryable).toBe(true);
    expect(await confirmedFlush(c, slot)).toBeLessThanOrEqual(s.lastAckedLsn);

    // 2. Resume; an immediate restart (a crash) while the consumer is inside a transaction bigger than the socket buffers.
    s = await resume(c, { slot, publications: pub, highWaterMark: 64 << 10 }, s.lastAckedLsn);
    let crashed = false;
    let crashedAt = 0;
    session = log.session(s, async (m) => {
      if (!crashed && m.kind === "Insert" && m.tx === 12 && log.rowsOfOpen() === 100) {
        crashed = true;
        await restartCluster(c.cluster, { mode: "immediate" });
        crashedAt = performance.now();
      }
    });
    for (let tx = 7; tx <= 12; tx++) await commit(tx, expected(tx));
    const crashError = await session.until(() => false, 60_000).catch((e: unknown) => e);
    expect(crashError).toBeInstanceOf(ReplicationError);
    expect(crashed).toBe(true);
    expect(log.partial(1)?.tx).toBe(12); // cut off inside it
    // The closed connection is read, not found by a status update failing two intervals later
    // (it was, when a gathering pause left the socket handle stopped).
    const noticedMs = performance.now() - crashedAt;
    expect(noticedMs).toBeLessThan(5000);

    // 3. Resume again, commit more, everything arrives.
    s = await resume(c, { slot, publications: pub }, s.lastAckedLsn);
    session = log.session(s);
    for (let tx = 13; tx <= 14; tx++) await commit(tx, expected(tx));
    await session.until(() => [...committed].every((x) => log.has(x)), 30_000);
    await s.stop();
    const summary = log.check(committed, expected);
    const describe = (e: unknown) => `${(e as ReplicationError).code} ${(e as ReplicationError).sqlstate ?? ""} ${(e as Error).message}`;
    console.info(`restart: fast (${Math.round(fastMs)} ms) ended with ${describe(fastError)}; immediate ended ${Math.round(noticedMs)} ms after it with ${describe(crashError)}; ${summary}`);
  });
});

// ------------------------------------------------------------------ helpers

async function waitUntil(ok: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await sleep(50);
  }
}

/**
 * Streaming scenario, on two slots over the same WAL: one assembles, one
 * passes through (and tells when a block of the open transaction was sent).
 * Transaction 1: rows 1..2000, a subtransaction (rows 10001..12000) streamed
 * and rolled back, row 5000, commit. Transaction 2: rows 20001..22000,
 * streamed, rolled back. Transaction 3: row 50000, plain.
 */
async function streamingScenario(c: Ctx, o: { streaming: "on" | "parallel"; protoVersion: 2 | 4 }): Promise<TransactionItem[]> {
  const { table: t, pub, slot } = await table(c);
  const assembled = await open(c, { slot: { name: slot, create: true }, publications: pub, ...o });
  const passed = await open(c, { slot: { name: `${slot}_p`, create: true }, publications: pub, ...o });
  const a = transactionsOf(assembled, "assemble");
  const p = transactionsOf(passed, "passthrough");
  const blockHas = (from: number) => (items: TransactionItem[]) =>
    items.some((i) => i.kind === "streamBlock" && i.messages.some((m) => m.kind === "Insert" && Number(texts(m.newTuple)[0]) >= from));
  const w1 = await c.cluster.connect();
  const w2 = await c.cluster.connect();
  try {
    await w1.query(`BEGIN`);
    await w1.query(`INSERT INTO ${t} SELECT g, 1, repeat('a', 100) FROM generate_series(1, 2000) g`);
    await w1.query(`SAVEPOINT sp`);
    await w1.query(`INSERT INTO ${t} SELECT g, 1, repeat('b', 100) FROM generate_series(10001, 12000) g`);
    await p.until(blockHas(10001));
    await w1.query(`ROLLBACK TO sp`);
    await w1.query(`INSERT INTO ${t} VALUES (5000, 1, 'after')`);
    await w2.query(`BEGIN`);
    await w2.query(`INSERT INTO ${t} SELECT g, 2, repeat('c', 100) FROM generate_series(20001, 22000) g`);
    await p.until(blockHas(20001));
    await w2.query(`ROLLBACK`);
    await w1.query(`COMMIT`);
  } finally {
    await w1.end();
    await w2.end();
  }
  await sql(c, `INSERT INTO ${t} VALUES (50000, 3, 'plain')`);

  const txs = (await a.until((x) => x.length >= 2)) as Transaction[];
  expect(txs.map((x) => [x.kind, x.streamed])).toEqual([["commit", true], ["commit", false]]);
  expect(insertedIds(txs[0]!)).toEqual([...range(1, 2000), 5000]);
  expect(insertedIds(txs[1]!)).toEqual([50000]);
  expect(txs[0]!.end?.kind).toBe("StreamCommit");

  const items = await p.until((x) => x.some((i) => i.kind === "commit"));
  const kinds = items.filter((i) => i.kind !== "streamBlock").map((i) => i.kind);
  expect(kinds).toEqual(["streamAbort", "streamAbort", "streamCommit", "commit"]);
  const [sub, top] = items.filter((i) => i.kind === "streamAbort") as StreamEnd[];
  expect(sub!.subXid).not.toBe(sub!.xid);
  expect(top!.subXid).toBe(top!.xid);
  expect(items.find((i) => i.kind === "streamCommit")).toMatchObject({ xid: sub!.xid, endLsn: txs[0]!.endLsn });
  // Every block of the committed transaction, minus the rolled back subtransaction, is the assembled transaction.
  const fromBlocks = items
    .filter((i): i is StreamBlock => i.kind === "streamBlock" && i.xid === sub!.xid)
    .flatMap((b) => b.messages)
    .filter((m) => m.kind === "Insert" && m.xid !== sub!.subXid)
    .map((m) => Number(texts(m.newTuple)[0]));
  expect(fromBlocks).toEqual(insertedIds(txs[0]!));
  await Promise.all([assembled.stop(), passed.stop()]);
  expect(assembled.lastAckedLsn).toBeGreaterThanOrEqual(txs[1]!.endLsn);
  expect(await confirmedFlush(c, slot)).toBe(assembled.lastAckedLsn);
  return items;
}

interface SessionState {
  stream: ReplicationStream;
  open: { tx: number; rows: number } | undefined;
}

/** What a consumer got across sessions, per committed transaction (by the `tx` column). */
class DeliveryLog {
  /** Per delivery (a Commit handed over): the tx, its end LSN, its rows, the session. */
  readonly deliveries: { tx: number; endLsn: bigint; rows: number; session: number }[] = [];
  /** Per session: its stream, and the transaction it was inside of when it ended (if any). */
  readonly #sessions: SessionState[] = [];

  has(tx: number): boolean {
    return this.deliveries.some((d) => d.tx === tx);
  }

  /** Rows of the transaction the latest session is inside of. */
  rowsOfOpen(): number {
    return this.#sessions[this.#sessions.length - 1]?.open?.rows ?? 0;
  }

  /** Per session: the transaction it was cut off inside of (Begin and some rows, no Commit). */
  partial(session: number): { tx: number; rows: number } | undefined {
    return this.#sessions[session]?.open;
  }

  /**
   * Consumes a stream message by message, recording commits; `onMessage`
   * runs for every message (it may stall the consumer, or ack).
   */
  session(s: ReplicationStream, onMessage?: (m: { kind: string; tx?: number; endLsn?: bigint }) => Promise<void>): Collector<StreamItem, null> {
    const session = this.#sessions.length;
    const state: SessionState = { stream: s, open: undefined };
    this.#sessions.push(state);
    return new Collector(s[Symbol.asyncIterator](), async (m) => {
      let tx: number | undefined;
      let endLsn: bigint | undefined;
      if (m.kind === "Begin") state.open = { tx: -1, rows: 0 };
      else if (m.kind === "Insert" && state.open) {
        tx = Number(m.newTuple.text(1));
        state.open.tx = tx;
        state.open.rows++;
      } else if (m.kind === "Commit" && state.open) {
        tx = state.open.tx;
        endLsn = m.endLsn;
        this.deliveries.push({ tx, endLsn, rows: state.open.rows, session });
        state.open = undefined;
      }
      await onMessage?.({ kind: m.kind, tx, endLsn });
      return null;
    });
  }

  /**
   * Every committed transaction was delivered whole. A transaction delivered
   * again was never acknowledged by the session that got it first, and every
   * one a session got but did not acknowledge is delivered again (the server
   * restarts from the acknowledged position). Returns a summary.
   */
  check(committed: Set<number>, rowsOf: (tx: number) => number): string {
    const delivered = new Set(this.deliveries.map((d) => d.tx));
    expect([...delivered].sort((a, b) => a - b)).toEqual([...committed].sort((a, b) => a - b));
    for (const d of this.deliveries) expect(d.rows, `tx ${d.tx}`).toBe(rowsOf(d.tx));
    const acked = this.#sessions.map((x) => x.stream.lastAckedLsn);
    for (const d of this.deliveries) {
      const again = this.deliveries.some((e) => e.tx === d.tx && e.session > d.session);
      const last = d.session === this.#sessions.length - 1;
      if (!last) expect(again, `tx ${d.tx} (${formatLsn(d.endLsn)}, session ${d.session} acked ${formatLsn(acked[d.session]!)})`).toBe(d.endLsn > acked[d.session]!);
      for (let prev = 0; prev < d.session; prev++) expect(d.endLsn > acked[prev]!, `tx ${d.tx} redelivered after ack`).toBe(true);
    }
    const twice = [...new Set(this.deliveries.filter((d, i) => this.deliveries.findIndex((e) => e.tx === d.tx) !== i).map((d) => d.tx))];
    const perSession = acked.map((a, i) => {
      const p = this.partial(i);
      return `session ${i}: ${this.deliveries.filter((d) => d.session === i).length} tx${p ? ` + ${p.rows} rows of tx ${p.tx}` : ""}, acked ${formatLsn(a)}`;
    });
    return `${committed.size} committed, delivered again: [${twice.join(", ")}]; ${perSession.join("; ")}`;
  }
}

/** Starts a stream from `startLsn`, retrying while the old walsender still holds the slot or the server is coming up. */
async function resume(c: Ctx, options: Omit<ReplicateOptions, "connection"> & Partial<Pick<ReplicateOptions, "connection">>, startLsn: bigint): Promise<ReplicationStream> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await open(c, { ...options, startLsn });
    } catch (e) {
      if (!(e instanceof ReplicationError && e.retryable) || Date.now() > deadline) throw e;
      await sleep(100);
    }
  }
}

/**
 * A writer commits 24 transactions (8 and 16 big: 30 000 rows, more than
 * the socket buffers hold) while a manual-ack consumer reads behind a small
 * high-water mark, acknowledging transactions 1-5 only. When it is 100 rows
 * into transaction 8, the walsender is terminated. A new stream resumes
 * from lastAckedLsn while the writer goes on: 6 and 7 (handed over, never
 * acknowledged) come again, 8 comes whole, nothing committed is missing.
 */
async function terminateAndResume(c: Ctx): Promise<void> {
  const { table: t, pub, slot } = await table(c);
  await sql(c, `SELECT pg_create_logical_replication_slot('${slot}', 'pgoutput')`);
  const log = new DeliveryLog();
  const committed = new Set<number>();
  const expected = (tx: number): number => (tx % 8 === 0 ? 30_000 : 3);
  const TOTAL = 24;
  let s = await open(c, { slot, publications: pub, ack: "manual", highWaterMark: 64 << 10, statusIntervalMs: 50 });
  let terminated = false;
  let samples = 0;
  const first = s;
  const session = log.session(s, async (m) => {
    if (m.kind === "Commit") {
      if (m.tx! <= 5) first.ack(m.endLsn!);
      if (samples++ % 2 === 0) {
        // Acks on the server never pass what the client acknowledged.
        const acked = first.lastAckedLsn;
        expect(await confirmedFlush(c, slot)).toBeLessThanOrEqual(acked);
      }
    }
    if (!terminated && m.kind === "Insert" && m.tx === 8 && log.rowsOfOpen() === 100) {
      terminated = true;
      const r = await sql(c, `SELECT pg_terminate_backend(active_pid) AS ok FROM pg_replication_slots WHERE slot_name = $1`, [slot]);
      expect(r).toEqual([{ ok: true }]);
    }
  });
  const writer = (async () => {
    for (let tx = 1; tx <= TOTAL; tx++) {
      await sql(c, `INSERT INTO ${t} SELECT g, ${tx}, repeat('w', 100) FROM generate_series(${tx * 100_000}, ${tx * 100_000 + expected(tx) - 1}) g`);
      committed.add(tx);
      if (tx % 3 === 0) await sleep(5);
    }
  })();
  const err = await session.until(() => false, 30_000).catch((e: unknown) => e);
  expect(terminated).toBe(true);
  expect(err).toBeInstanceOf(ReplicationError);
  // The FATAL 57P01 ErrorResponse, or — when the walsender died with our status updates unread and
  // its socket reset — just the lost connection.
  expect(err).toMatchObject({ retryable: true });
  const e = err as ReplicationError;
  expect(e.code === "CONNECTION_LOST" || (e.code === "SERVER_ERROR" && e.sqlstate === "57P01"), e.message).toBe(true);
  const acked = s.lastAckedLsn;
  expect(await confirmedFlush(c, slot)).toBeLessThanOrEqual(acked);
  // Cut off inside transaction 8: the server had not sent all of it.
  expect(log.partial(0)?.tx).toBe(8);
  expect(log.partial(0)!.rows).toBeLessThan(expected(8));

  s = await resume(c, { slot, publications: pub, statusIntervalMs: 100 }, acked);
  const second = log.session(s);
  await writer;
  await second.until(() => [...committed].every((x) => log.has(x)), 30_000);
  await s.stop();
  expect(await confirmedFlush(c, slot)).toBe(s.lastAckedLsn);
  const summary = log.check(committed, expected);
  expect(log.deliveries.filter((d) => d.session === 1).slice(0, 3).map((d) => d.tx)).toEqual([6, 7, 8]);
  console.info(`PostgreSQL ${c.major} terminate (${e.code} ${e.sqlstate ?? ""}): ${summary}`);
}
