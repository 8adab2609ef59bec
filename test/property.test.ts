/**
 * Property tests (fast-check) over the test encoder: random valid pgoutput
 * streams of every message kind, for each protocol version — 1 (plain
 * transactions), 2 (streamed blocks whose messages carry the xid, Stream
 * Commit/Abort), 3 (two-phase: Begin Prepare … Prepare, Commit/Rollback
 * Prepared, Stream Prepare), 4 (Stream Abort with abort LSN and time) —
 * decode in both backends to exactly the encoder's expected values, through
 * decodeBatch, through push() of the framed stream cut at random places, and
 * through decodeCopyData() of each message wrapped in an XLogData with a
 * random header; and on the twin kernel, whose two kernels must write the
 * same tape word for word on every call. Shrinking gives a small failing stream; fast-check prints
 * its seed (FC_SEED, FC_RUNS override).
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { MessageKind, OldTupleType, ReplicaIdentity } from "../bindings/messages.ts";
import { backends } from "./support/backends.ts";
import { TwinDecoder } from "./support/twin-kernel.ts";
import { pushSplit } from "./support/push-split.ts";
import {
  deepEqual, encode, frame, MAX_LSN, MAX_U32, TIME_NEG_INFINITY, TIME_POS_INFINITY, UNCHANGED,
  type ColumnDesc, type Encoded, type RelationDesc,
} from "../devkit/encoder/encoder.ts";
import { wal } from "../devkit/encoder/walsender-encoder.ts";

const RUNS = Number(process.env.FC_RUNS ?? 80);
const SEED = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
type Version = 1 | 2 | 3 | 4;

// ---------------------------------------------------------------------------
// Values

const u32 = fc.oneof(fc.constantFrom(0, 1, 2 ** 31 - 1, 2 ** 31, MAX_U32), fc.integer({ min: 0, max: MAX_U32 }));
const i32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const lsn = fc.bigInt({ min: 0n, max: MAX_LSN });
/** µs since the Unix epoch that fit the wire (which counts from 2000-01-01), and the two infinities. */
const time = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom(TIME_NEG_INFINITY, TIME_POS_INFINITY, 0n, 946_684_800_000_000n) },
  { weight: 6, arbitrary: fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }) },
);
/** A String: any code points but NUL. */
const str = (maxLength = 12) =>
  fc.string({ unit: fc.oneof(fc.constantFrom("a", "b", "_", "é", "東", "😀"), fc.string({ unit: "binary", minLength: 1, maxLength: 1 })), maxLength })
    .map((s) => s.replace(/\0/g, ""));
const bytes = (maxLength = 24) => fc.uint8Array({ maxLength });
const text = fc.oneof(fc.integer().map(String), str(30));
/** A column value; `unchanged` only where PostgreSQL sends it (new tuples of updates). */
const column = (unchanged: boolean): fc.Arbitrary<ColumnDesc> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant(null) },
    { weight: 5, arbitrary: text },
    { weight: 2, arbitrary: bytes() },
    { weight: unchanged ? 1 : 0, arbitrary: fc.constant(UNCHANGED) },
  );
/** A tuple of some width: values cycled or cut to the relation's width by the builder. */
const tuple = (unchanged: boolean) => fc.array(column(unchanged), { maxLength: 8 });

const relationDesc: fc.Arbitrary<Omit<RelationDesc, "relationId">> = fc.record({
  namespace: str(16),
  relationName: str(20),
  replicaIdentity: fc.constantFrom<ReplicaIdentity>("d", "f", "i", "n"),
  columns: fc.array(
    fc.record({ name: str(16), typeId: u32, typeModifier: i32, flags: fc.constantFrom(0, 1, 0, 2, 255) }),
    { maxLength: 6 },
  ),
});

// ---------------------------------------------------------------------------
// What a stream is made of: events, interpreted by a builder that keeps the stream valid

type Op =
  | { t: "insert"; rel: number; row: ColumnDesc[] }
  | { t: "update"; rel: number; old: OldTupleType | null; oldRow: ColumnDesc[]; row: ColumnDesc[] }
  | { t: "delete"; rel: number; old: OldTupleType; oldRow: ColumnDesc[] }
  | { t: "truncate"; rels: number[]; unknown: number[]; options: number }
  | { t: "message"; lsn: bigint; prefix: string; content: Uint8Array }
  | { t: "type"; typeId: number; namespace: string; typeName: string }
  | { t: "relation"; rel: number; redefine: Omit<RelationDesc, "relationId"> | null };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant("insert" as const), rel: fc.nat(), row: tuple(false) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant("update" as const), rel: fc.nat(), old: fc.constantFrom<OldTupleType | null>(null, "K", "O"),
      oldRow: tuple(false), row: tuple(true),
    }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("delete" as const), rel: fc.nat(), old: fc.constantFrom<OldTupleType>("K", "O"), oldRow: tuple(false) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("truncate" as const), rels: fc.array(fc.nat(), { maxLength: 3 }), unknown: fc.array(u32, { maxLength: 2 }), options: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("message" as const), lsn, prefix: str(), content: bytes(40) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("type" as const), typeId: u32, namespace: str(), typeName: str() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("relation" as const), rel: fc.nat(), redefine: fc.option(relationDesc, { freq: 2, nil: null }) }) },
);
const ops = fc.array(op, { maxLength: 6 });

type Event =
  | { t: "txn"; xid: number; finalLsn: bigint; commitTime: bigint; origin: { originLsn: bigint; name: string } | null; ops: Op[]; commitLsn: bigint; endLsn: bigint; flags: number }
  | { t: "nontx"; lsn: bigint; prefix: string; content: Uint8Array }
  | { t: "schema"; op: Op }
  // streaming (v2+): a block of an open streamed transaction, or the end of one
  | { t: "block"; which: number; xid: number; ops: Op[] }
  | { t: "streamEnd"; which: number; how: "commit" | "abort" | "prepare"; subXid: number | null; lsn1: bigint; lsn2: bigint; time: bigint; gid: string }
  // two-phase (v3+)
  | { t: "prepared"; xid: number; gid: string; ops: Op[]; lsn1: bigint; lsn2: bigint; time: bigint }
  | { t: "finishPrepared"; which: number; commit: boolean; lsn1: bigint; lsn2: bigint; time: bigint };

const eventsFor = (v: Version): fc.Arbitrary<Event[]> => {
  const list: fc.WeightedArbitrary<Event>[] = [
    {
      weight: 5,
      arbitrary: fc.record({
        t: fc.constant("txn" as const), xid: u32, finalLsn: lsn, commitTime: time,
        origin: fc.option(fc.record({ originLsn: lsn, name: str() }), { freq: 4, nil: null }), ops, commitLsn: lsn, endLsn: lsn, flags: fc.constantFrom(0, 0, 1, 255),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant("nontx" as const), lsn, prefix: str(), content: bytes(40) }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant("schema" as const), op: op.filter((o) => o.t === "relation" || o.t === "type") }) },
  ];
  if (v >= 2) {
    list.push(
      { weight: 4, arbitrary: fc.record({ t: fc.constant("block" as const), which: fc.nat(), xid: u32, ops }) },
      {
        weight: 2,
        arbitrary: fc.record({
          t: fc.constant("streamEnd" as const), which: fc.nat(),
          how: v >= 3 ? fc.constantFrom("commit" as const, "abort" as const, "prepare" as const) : fc.constantFrom("commit" as const, "abort" as const),
          subXid: fc.option(u32, { nil: null }), lsn1: lsn, lsn2: lsn, time, gid: str(30),
        }),
      },
    );
  }
  if (v >= 3) {
    list.push(
      { weight: 2, arbitrary: fc.record({ t: fc.constant("prepared" as const), xid: u32, gid: str(30), ops, lsn1: lsn, lsn2: lsn, time }) },
      { weight: 2, arbitrary: fc.record({ t: fc.constant("finishPrepared" as const), which: fc.nat(), commit: fc.boolean(), lsn1: lsn, lsn2: lsn, time }) },
    );
  }
  return fc.array(fc.oneof(...list), { minLength: 1, maxLength: 14 });
};

/** A protocol version's valid stream: relations (each given an OID) and events, built into messages. */
const streamFor = (v: Version): fc.Arbitrary<Encoded[]> =>
  fc
    .record({
      relations: fc.uniqueArray(fc.record({ relationId: u32, desc: relationDesc }), { minLength: 1, maxLength: 4, selector: (r) => r.relationId }),
      events: eventsFor(v),
    })
    .map(({ relations, events }) => build(v, relations.map((r) => ({ ...r.desc, relationId: r.relationId })), events));

/** Interprets events into a valid stream (relations sent before use and again after a redefinition; xids inside blocks). */
function build(v: Version, rels: RelationDesc[], events: Event[]): Encoded[] {
  const out: Encoded[] = [];
  const current = rels.map((r) => ({ ...r }));
  const sent = new Set<number>(); // indexes of relations whose current definition was sent
  const open: number[] = []; // xids of open streamed transactions
  const prepared: { xid: number; gid: string; prepareTime: bigint }[] = [];

  const relOf = (i: number, xid: number | undefined): RelationDesc => {
    const k = i % current.length;
    if (!sent.has(k)) {
      out.push(encode.relation(xid === undefined ? current[k]! : { ...current[k]!, xid }));
      sent.add(k);
    }
    return current[k]!;
  };
  const fit = (rel: RelationDesc, row: ColumnDesc[]): ColumnDesc[] =>
    rel.columns.map((_, i) => (row.length === 0 ? null : row[i % row.length]!));

  const emit = (o: Op, xid: number | undefined): void => {
    switch (o.t) {
      case "insert": {
        const rel = relOf(o.rel, xid);
        out.push(encode.insert({ xid, relation: rel, newTuple: fit(rel, o.row) }));
        return;
      }
      case "update": {
        const rel = relOf(o.rel, xid);
        const oldTuple = o.old === null ? null : fit(rel, o.oldRow);
        out.push(encode.update({ xid, relation: rel, oldTupleType: o.old, oldTuple, newTuple: fit(rel, o.row) }));
        return;
      }
      case "delete": {
        const rel = relOf(o.rel, xid);
        out.push(encode.delete({ xid, relation: rel, oldTupleType: o.old, oldTuple: fit(rel, o.oldRow) }));
        return;
      }
      case "truncate": {
        const ids = [...o.rels.map((i) => relOf(i, xid).relationId), ...o.unknown];
        out.push(encode.truncate({ xid, options: o.options, relationIds: ids }));
        return;
      }
      case "message":
        out.push(encode.message({ xid, transactional: true, lsn: o.lsn, prefix: o.prefix, content: o.content }));
        return;
      case "type":
        out.push(encode.type({ xid, typeId: o.typeId, namespace: o.namespace, typeName: o.typeName }));
        return;
      case "relation": {
        const k = o.rel % current.length;
        if (o.redefine !== null) current[k] = { ...o.redefine, relationId: current[k]!.relationId };
        sent.delete(k);
        relOf(k, xid);
        return;
      }
    }
  };

  for (const e of events) {
    switch (e.t) {
      case "txn":
        out.push(encode.begin({ finalLsn: e.finalLsn, commitTime: e.commitTime, xid: e.xid }));
        if (e.origin !== null) out.push(encode.origin(e.origin));
        for (const o of e.ops) emit(o, undefined);
        out.push(encode.commit({ flags: e.flags, commitLsn: e.commitLsn, endLsn: e.endLsn, commitTime: e.commitTime }));
        break;
      case "nontx":
        out.push(encode.message({ transactional: false, lsn: e.lsn, prefix: e.prefix, content: e.content }));
        break;
      case "schema":
        emit(e.op, undefined);
        break;
      case "block": {
        const existing = open.length > 0 && e.which % 3 !== 0 ? open[e.which % open.length]! : undefined;
        const xid = existing ?? e.xid;
        if (existing === undefined) open.push(xid);
        out.push(encode.streamStart({ xid, firstSegment: existing === undefined }));
        for (const o of e.ops) emit(o, xid);
        out.push(encode.streamStop());
        break;
      }
      case "streamEnd": {
        if (open.length === 0) break;
        const xid = open.splice(e.which % open.length, 1)[0]!;
        if (e.how === "commit") out.push(encode.streamCommit({ xid, commitLsn: e.lsn1, endLsn: e.lsn2, commitTime: e.time }));
        else if (e.how === "abort") {
          const subXid = e.subXid ?? xid;
          out.push(encode.streamAbort(v >= 4 ? { xid, subXid, abortLsn: e.lsn1, abortTime: e.time } : { xid, subXid }));
        } else {
          out.push(encode.streamPrepare({ prepareLsn: e.lsn1, endLsn: e.lsn2, prepareTime: e.time, xid, gid: e.gid }));
          prepared.push({ xid, gid: e.gid, prepareTime: e.time });
        }
        break;
      }
      case "prepared":
        out.push(encode.beginPrepare({ prepareLsn: e.lsn1, endLsn: e.lsn2, prepareTime: e.time, xid: e.xid, gid: e.gid }));
        for (const o of e.ops) emit(o, undefined);
        out.push(encode.prepare({ prepareLsn: e.lsn1, endLsn: e.lsn2, prepareTime: e.time, xid: e.xid, gid: e.gid }));
        prepared.push({ xid: e.xid, gid: e.gid, prepareTime: e.time });
        break;
      case "finishPrepared": {
        if (prepared.length === 0) break;
        const p = prepared.splice(e.which % prepared.length, 1)[0]!;
        if (e.commit) out.push(encode.commitPrepared({ commitLsn: e.lsn1, endLsn: e.lsn2, commitTime: e.time, xid: p.xid, gid: p.gid }));
        else {
          out.push(encode.rollbackPrepared({
            prepareEndLsn: e.lsn1, rollbackEndLsn: e.lsn2, prepareTime: p.prepareTime, rollbackTime: e.time, xid: p.xid, gid: p.gid,
          }));
        }
        break;
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Properties

/** Cut points of a byte length from fractions in [0, 1). */
const cutsArb = fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { maxLength: 12 });
function cutsOf(fractions: number[], length: number): number[] {
  return [...new Set(fractions.map((f) => Math.floor(f * length)))].filter((c) => c > 0).sort((a, b) => a - b);
}

const header = fc.record({ walStart: lsn, walEnd: lsn, sendTime: time });

function same(got: unknown, want: unknown, label: string): void {
  if (!deepEqual(got, want)) expect(got, label).toEqual(want);
}

const wasmBackend = backends.find((b) => b.name === "wasm")!;
const baselineBackend = backends.find((b) => b.name === "baseline")!;

describe("random valid streams decode to the encoder's values in both backends", () => {
  let decoders: PgoutputDecoder[];
  beforeAll(async () => {
    // The third runs both kernels on one memory image and checks their tapes word for word on every call
    // (support/twin-kernel.ts; it reports itself as "baseline", whose memory it uses).
    decoders = [await wasmBackend.create(), await baselineBackend.create(), new TwinDecoder()];
  });

  for (const v of [1, 2, 3, 4] as Version[]) {
    describe(`protocol ${v}`, () => {
      it("decodeBatch", () => {
        fc.assert(
          fc.property(streamFor(v), (stream) => {
            const want = stream.map((m) => m.expected);
            for (const d of decoders) {
              d.reset();
              same(d.decodeBatch(stream.map((m) => m.bytes)).materialize(), want, `${d.backend} decodeBatch`);
              expect(d.inStream, `${d.backend}: stream state after the stream`).toBe(false);
            }
          }),
          { numRuns: RUNS, seed: SEED },
        );
      });

      it("push() of the framed stream cut anywhere", () => {
        fc.assert(
          fc.property(streamFor(v), cutsArb, (stream, fractions) => {
            const framed = frame(stream);
            const cuts = cutsOf(fractions, framed.length);
            const want = stream.map((m) => m.expected);
            for (const d of decoders) {
              d.reset();
              const got = pushSplit(d, framed, cuts);
              same(got, want, `${d.backend} push at ${cuts.join(",")}`);
            }
          }),
          { numRuns: RUNS, seed: SEED },
        );
      });

      it("decodeCopyData() of XLogData payloads with random headers", () => {
        fc.assert(
          fc.property(streamFor(v).chain((s) => fc.tuple(fc.constant(s), fc.array(header, { minLength: s.length, maxLength: s.length }))), ([stream, headers]) => {
            const payloads = stream.map((m, i) => wal.xlogData(m, headers[i]!));
            const want = payloads.map((p) => p.expected);
            for (const d of decoders) {
              d.reset();
              same(d.decodeCopyData(payloads.map((p) => p.bytes)).materialize(), want, `${d.backend} decodeCopyData`);
            }
          }),
          { numRuns: RUNS, seed: SEED },
        );
      });
    });
  }

  it("the arbitraries reach every message kind of each version", () => {
    const byVersion: Record<Version, MessageKind[]> = {
      1: ["Begin", "Commit", "Origin", "Message", "Relation", "Type", "Insert", "Update", "Delete", "Truncate"],
      2: ["StreamStart", "StreamStop", "StreamCommit", "StreamAbort"],
      3: ["BeginPrepare", "Prepare", "CommitPrepared", "RollbackPrepared", "StreamPrepare"],
      4: [],
    };
    for (const v of [1, 2, 3, 4] as Version[]) {
      const seen = new Set<string>();
      let v4Abort = false;
      let xidChange = false;
      for (const s of fc.sample(streamFor(v), { numRuns: 300, seed: 7 })) {
        for (const m of s) {
          seen.add(m.kind);
          if (m.kind === "StreamAbort" && m.expected.abortLsn !== null) v4Abort = true;
          if (m.expected.xid !== undefined && ["Insert", "Update", "Delete", "Relation", "Message", "Type", "Truncate"].includes(m.kind)) xidChange = true;
        }
      }
      const want = ([1, 2, 3, 4] as Version[]).filter((x) => x <= v).flatMap((x) => byVersion[x]);
      expect([...seen].sort(), `protocol ${v}`).toEqual([...want].sort());
      expect(v4Abort, `protocol ${v}: Stream Abort with abort fields`).toBe(v >= 4);
      expect(xidChange, `protocol ${v}: changes carrying the streamed xid`).toBe(v >= 2);
    }
  });
});
