/**
 * The drop-in for pg-logical-replication (bindings/compat), message by
 * message through `plugin.parse`, next to pg-logical-replication's own
 * PgoutputPlugin:
 *
 * 1. every captured fixture (real PostgreSQL 15 and 18 streams): deep-equal
 *    where PgoutputPlugin can decode the stream; where it cannot (protocol 2+
 *    streaming, two-phase) it throws, and ours decodes every message — and
 *    the streamed changes, once their xid is cut out, equal PgoutputPlugin's
 *    decoding of the same bytes;
 * 2. crafted bytes pinning each difference (both outputs shown), and the
 *    documented shapes of the messages only ours decodes;
 * 3. the plugin's own surface: START_REPLICATION command, options, plain
 *    results that outlive the decoder's next call.
 *
 * Live streams through LogicalReplicationService: compat.test.ts.
 * The differences are listed in docs/compat-differences.md.
 */
import { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";
import { PgoutputPlugin } from "pg-logical-replication";
import pg from "pg";
import { parse as parseBackendStream } from "pg-protocol";
import { describe, expect, it } from "vitest";
import { backend, onceAcrossBackends } from "./support/backends.ts";
import { PgoutputWasmPlugin, type Pgoutput } from "../bindings/compat/index.ts";
import { startReplicationCommand } from "../bindings/compat/plugin.ts";

type AnyMessage = Pgoutput.AnyMessage;
import { encode, PG_EPOCH_UNIX_US } from "../devkit/encoder/encoder.ts";
import { decodeCapture } from "../devkit/capture/slot.ts";

const FIXTURES = new URL("./fixtures/", import.meta.url);
const index = JSON.parse(readFileSync(new URL("index.json", FIXTURES), "utf8")) as {
  fixtures: { file: string; tags: string; options: Record<string, string> }[];
};

const OPTIONS = { protoVersion: 1 as const, publicationNames: ["p"] };

const theirsPlugin = () => new PgoutputPlugin(OPTIONS);
/** Our plugin on the run's backend (the runner runs this file once per backend: vitest.config.ts). */
const oursPlugin = () => new PgoutputWasmPlugin({ ...OPTIONS, backend: backend.name });

/** What pg hands the plugin: a Buffer. */
const buf = (bytes: Uint8Array) => Buffer.from(bytes);

function outcome(fn: () => unknown): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

const expandTags = (tags: string) => tags.replace(/(.)\*(\d+)/g, (_, x: string, n: string) => x.repeat(Number(n)));

/** Tags of the messages that carry the streamed xid right after the tag byte inside a stream block. */
const XID_CARRIERS = new Set("RYIUDTM");

describe("captured fixtures through plugin.parse", () => {
  for (const fixture of index.fixtures) {
    const messages = decodeCapture(readFileSync(new URL(fixture.file, FIXTURES)));
    const tags = expandTags(fixture.tags);
    const theirsCanDecode = /^[BCORYIUDTM]*$/.test(tags);

    it(`${fixture.file}: ${theirsCanDecode ? "deep-equal to PgoutputPlugin" : "PgoutputPlugin throws, ours decodes everything"}`, () => {
      const ours = oursPlugin();
      const theirs = theirsPlugin();
      const got = messages.map((m) => ours.parse(m));
      expect(got.map(tagLetter).join("")).toBe(tags);
      if (theirsCanDecode) {
        expect(got).toStrictEqual(messages.map((m) => theirs.parse(buf(m))));
        return;
      }
      // PgoutputPlugin stops at the first protocol 2+ message.
      const first = tags.search(/[^BCORYIUDTM]/);
      expect(outcome(() => messages.slice(0, first + 1).map((m) => theirs.parse(buf(m))))).toEqual({
        ok: false, error: "unknown pgoutput message",
      });
      // Streamed changes without their xid are what PgoutputPlugin makes of the same message.
      const reference = theirsPlugin();
      let inBlock = false;
      let compared = 0;
      messages.forEach((m, i) => {
        const tag = String.fromCharCode(m[0]!);
        if (tag === "S") inBlock = true;
        if (tag === "E") inBlock = false;
        if (!XID_CARRIERS.has(tag)) return;
        const bytes = inBlock ? Uint8Array.of(m[0]!, ...m.subarray(5)) : m;
        const want = reference.parse(buf(bytes)) as unknown as Record<string, unknown>;
        const { xid, ...rest } = got[i] as unknown as Record<string, unknown>;
        expect(xid === undefined).toBe(!inBlock || tag === "R" || tag === "Y");
        expect(rest).toStrictEqual(want);
        compared++;
      });
      expect(compared).toBeGreaterThan(50);
    });
  }
});

const TAG_LETTER: Record<string, string> = {
  begin: "B", commit: "C", origin: "O", relation: "R", type: "Y", insert: "I", update: "U", delete: "D", truncate: "T",
  message: "M", stream_start: "S", stream_stop: "E", stream_commit: "c", stream_abort: "A", begin_prepare: "b",
  prepare: "P", commit_prepared: "K", rollback_prepared: "r", stream_prepare: "p",
};
const tagLetter = (m: AnyMessage) => TAG_LETTER[m.tag]!;

// ---------------------------------------------------------------------------

/** Feeds the same bytes to both plugins; returns both outcomes. */
function both(...messages: Uint8Array[]) {
  const ours = oursPlugin();
  const theirs = theirsPlugin();
  return messages.map((m) => ({ ours: outcome(() => ours.parse(m)), theirs: outcome(() => theirs.parse(buf(m))) }));
}

const ok = (value: unknown) => ({ ok: true, value });

const TIME = 1_700_000_000_123_456n; // 2023-11-14T22:13:20.123456Z

describe("differences, pinned with crafted bytes", () => {
  it("xid ≥ 2^31: unsigned (PgoutputPlugin: negative)", () => {
    const [r] = both(encode.begin({ finalLsn: 0x1_0000_0010n, commitTime: TIME, xid: 0x8000_0005 }).bytes);
    expect(r!.ours).toEqual(ok({ tag: "begin", commitLsn: "00000001/00000010", commitTime: TIME, xid: 2147483653 }));
    expect(r!.theirs).toEqual(ok({ tag: "begin", commitLsn: "00000001/00000010", commitTime: TIME, xid: -2147483643 }));
  });

  it("OIDs ≥ 2^31 (relation, column type, Type message): unsigned (PgoutputPlugin: negative)", () => {
    const typeId = 0x8000_0002;
    const relationId = 0xffff_fff0;
    const rel = { relationId, namespace: "public", relationName: "big_oids", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "e", typeId }] };
    const results = both(
      encode.type({ typeId, namespace: "public", typeName: "my_enum" }).bytes,
      encode.relation(rel).bytes,
      encode.insert({ relation: rel, newTuple: ["1", "x"] }).bytes,
      encode.truncate({ relationIds: [relationId] }).bytes,
    );
    const relation = (oid: number, typeOid: number) => ({
      tag: "relation", relationOid: oid, schema: "public", name: "big_oids", replicaIdentity: "default",
      columns: [
        { flags: 1, name: "id", typeOid: 23, typeMod: -1, typeSchema: null, typeName: null, parser: pg.types.getTypeParser(23) },
        { flags: 0, name: "e", typeOid, typeMod: -1, typeSchema: "public", typeName: "my_enum", parser: expect.any(Function) },
      ],
      keyColumns: ["id"],
    });
    const [type, relMsg, insert, truncate] = results;
    expect(type!.ours).toEqual(ok({ tag: "type", typeOid: 2147483650, typeSchema: "public", typeName: "my_enum" }));
    expect(type!.theirs).toEqual(ok({ tag: "type", typeOid: -2147483646, typeSchema: "public", typeName: "my_enum" }));
    expect(relMsg!.ours).toEqual(ok(relation(4294967280, 2147483650)));
    expect(relMsg!.theirs).toEqual(ok(relation(-16, -2147483646)));
    expect(insert!.ours).toEqual(ok({ tag: "insert", relation: relation(4294967280, 2147483650), new: { id: 1, e: "x" } }));
    expect(insert!.theirs).toEqual(ok({ tag: "insert", relation: relation(-16, -2147483646), new: { id: 1, e: "x" } }));
    expect(truncate!.ours).toEqual(ok({ tag: "truncate", cascade: false, restartIdentity: false, relations: [relation(4294967280, 2147483650)] }));
    expect(truncate!.theirs).toEqual(ok({ tag: "truncate", cascade: false, restartIdentity: false, relations: [relation(-16, -2147483646)] }));
  });

  it("a type parser registered for an OID ≥ 2^31 applies (PgoutputPlugin looks up the negative OID)", () => {
    const typeId = 0x8000_0009;
    const rel = { relationId: 16384, namespace: "public", relationName: "t", columns: [{ name: "v", typeId }] };
    const setTypeParser = pg.types.setTypeParser as (oid: number, parser: (text: string) => unknown) => void;
    setTypeParser(typeId, (s: string) => `parsed:${s}`);
    try {
      const [, r] = both(encode.relation(rel).bytes, encode.insert({ relation: rel, newTuple: ["x"] }).bytes);
      expect((r!.ours as { value: { new: object } }).value.new).toEqual({ v: "parsed:x" });
      expect((r!.theirs as { value: { new: object } }).value.new).toEqual({ v: "x" });
    } finally {
      setTypeParser(typeId, (s: string) => s);
    }
  });

  it("commit time before 2000-01-01: signed (PgoutputPlugin: read unsigned, ~2^64 µs off)", () => {
    const before2000 = PG_EPOCH_UNIX_US - 500_000n; // 1999-12-31T23:59:59.5Z
    const results = both(
      encode.begin({ finalLsn: 0x20n, commitTime: before2000, xid: 7 }).bytes,
      encode.commit({ commitLsn: 0x20n, endLsn: 0x30n, commitTime: before2000 }).bytes,
    );
    const wrong = 2n ** 64n - 500_000n + PG_EPOCH_UNIX_US;
    expect(results[0]!.ours).toEqual(ok({ tag: "begin", commitLsn: "00000000/00000020", commitTime: before2000, xid: 7 }));
    expect(results[0]!.theirs).toEqual(ok({ tag: "begin", commitLsn: "00000000/00000020", commitTime: wrong, xid: 7 }));
    expect(results[1]!.ours).toEqual(ok({ tag: "commit", flags: 0, commitLsn: "00000000/00000020", commitEndLsn: "00000000/00000030", commitTime: before2000 }));
    expect(results[1]!.theirs).toEqual(ok({ tag: "commit", flags: 0, commitLsn: "00000000/00000020", commitEndLsn: "00000000/00000030", commitTime: wrong }));
  });

  it("a text value starting with U+FEFF keeps it (PgoutputPlugin: dropped)", () => {
    const rel = { relationId: 16384, namespace: "public", relationName: "t", columns: [{ name: "a", typeId: 25 }, { name: "b", typeId: 25 }] };
    const [, r] = both(encode.relation(rel).bytes, encode.insert({ relation: rel, newTuple: ["\uFEFFhello", "\uFEFF"] }).bytes);
    expect((r!.ours as { value: { new: object } }).value.new).toEqual({ a: "\uFEFFhello", b: "\uFEFF" });
    expect((r!.theirs as { value: { new: object } }).value.new).toEqual({ a: "hello", b: "" });
  });

  it("a change inside a stream block carries the xid (PgoutputPlugin: reads the xid as the relation OID)", () => {
    const rel = { relationId: 16384, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }] };
    const results = both(
      encode.relation(rel).bytes,
      encode.streamStart({ xid: 900, firstSegment: true }).bytes,
      encode.insert({ relation: rel, newTuple: ["1"], xid: 900 }).bytes,
    );
    expect(results[2]!.ours).toEqual(ok({ tag: "insert", relation: expect.objectContaining({ relationOid: 16384 }), new: { id: 1 }, xid: 900 }));
    expect(results[2]!.theirs).toEqual({ ok: false, error: "missing relation" });
  });
});

/** A CopyData frame ('d') holding an XLogData ('w') with one pgoutput message, as the walsender sends it. */
function xlogDataFrame(message: Uint8Array, walStart: bigint): Buffer {
  const frame = Buffer.alloc(5 + 25 + message.length);
  frame[0] = 0x64; // 'd'
  frame.writeUInt32BE(4 + 25 + message.length, 1);
  frame[5] = 0x77; // 'w'
  frame.writeBigUInt64BE(walStart, 6);
  frame.writeBigUInt64BE(walStart, 14);
  frame.writeBigUInt64BE(0n, 22);
  Buffer.from(message).copy(frame, 30);
  return frame;
}

describe("difference: logical message content outlives later socket data", () => {
  it("PgoutputPlugin hands out a view into pg's read buffer, which pg reuses; ours a copy", async () => {
    // Three messages; the socket delivers the first two and half of the third,
    // then the rest. pg-protocol (pg's parser) then moves the unfinished third
    // frame to the start of the same buffer — over the first two.
    const contents = ["first", "second", "third"].map((w) => Buffer.from(w.padEnd(200, ".")));
    const frames = contents.map((c, i) => xlogDataFrame(encode.message({ lsn: BigInt(i + 1), prefix: "p", content: c }).bytes, BigInt(i + 1)));
    const all = Buffer.concat(frames);
    const cut = frames[0]!.length + frames[1]!.length + 40;
    const chunks = [Buffer.from(all.subarray(0, cut)), Buffer.from(all.subarray(cut))];

    const run = async (plugin: { parse(b: Buffer): unknown }) => {
      const socket = new EventEmitter();
      const kept: { content: Uint8Array }[] = [];
      const done = parseBackendStream(socket as unknown as NodeJS.ReadableStream, (msg) => {
        // What LogicalReplicationService does with each CopyData.
        const chunk = (msg as unknown as { chunk: Buffer }).chunk;
        if (chunk[0] === 0x77) kept.push(plugin.parse(chunk.subarray(25)) as { content: Uint8Array });
      });
      for (const c of chunks) socket.emit("data", c);
      socket.emit("end");
      await done;
      return kept.map((m) => Buffer.from(m.content).toString());
    };
    const want = contents.map(String);
    expect(await run(oursPlugin())).toEqual(want);
    const theirs = await run(theirsPlugin());
    expect(theirs[2]).toBe(want[2]);
    expect(theirs[0]).toBe(want[2]); // the first message's content now reads the third frame's bytes
  });
});

describe("difference: malformed input is an error", () => {
  const rel = { relationId: 16384, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23 }, { name: "v", typeId: 25 }] };

  it("bytes after the last field: a PgoutputError TRAILING_BYTES (PgoutputPlugin ignores them)", () => {
    const begin = encode.begin({ finalLsn: 0x10n, commitTime: TIME, xid: 5 }).bytes;
    const [r] = both(Uint8Array.of(...begin, 0xde, 0xad));
    expect(r!.theirs).toEqual(ok({ tag: "begin", commitLsn: "00000000/00000010", commitTime: TIME, xid: 5 }));
    expect(r!.ours).toMatchObject({ ok: false, error: expect.stringContaining("byte 21") });
    const ours = oursPlugin();
    expect(() => ours.parse(Uint8Array.of(...begin, 0xde, 0xad))).toThrow(expect.objectContaining({ name: "PgoutputError", code: "TRAILING_BYTES" }));
  });

  it("a row with fewer columns than its relation: COLUMN_COUNT_MISMATCH (PgoutputPlugin returns a partial row)", () => {
    const [, r] = both(encode.relation(rel).bytes, encode.insert({ relation: rel, newTuple: ["1"] }).bytes);
    expect(r!.theirs).toEqual(ok({ tag: "insert", relation: expect.anything(), new: { id: 1 } }));
    expect(r!.ours).toMatchObject({ ok: false, error: expect.stringMatching(/column/i) });
  });

  it("a row with more columns than its relation: COLUMN_COUNT_MISMATCH (PgoutputPlugin: a TypeError)", () => {
    const [, r] = both(encode.relation(rel).bytes, encode.insert({ relation: rel, newTuple: ["1", "a", "b"] }).bytes);
    expect(r!.theirs).toMatchObject({ ok: false, error: expect.stringMatching(/Cannot destructure/) });
    const ours = oursPlugin();
    ours.parse(encode.relation(rel).bytes);
    expect(() => ours.parse(encode.insert({ relation: rel, newTuple: ["1", "a", "b"] }).bytes)).toThrow(
      expect.objectContaining({ name: "PgoutputError", code: "COLUMN_COUNT_MISMATCH" }),
    );
  });

  it("a truncated message: a PgoutputError INCOMPLETE with its offset (PgoutputPlugin: a plain Error)", () => {
    const bytes = encode.begin({ finalLsn: 0x10n, commitTime: TIME, xid: 5 }).bytes.subarray(0, 12);
    const [r] = both(bytes);
    expect(r!.theirs).toEqual({ ok: false, error: "unexpected end of message" });
    expect(() => oursPlugin().parse(bytes)).toThrow(expect.objectContaining({ name: "PgoutputError", code: "INCOMPLETE", offset: 9 }));
  });
});

// ---------------------------------------------------------------------------

describe("what PgoutputPlugin cannot decode: documented shapes", () => {
  const unknown = { ok: false, error: "unknown pgoutput message" };
  const cases: [string, Uint8Array, object][] = [
    ["Stream Start", encode.streamStart({ xid: 0x8000_0001, firstSegment: true }).bytes, { tag: "stream_start", xid: 2147483649, firstSegment: true }],
    ["Stream Stop", encode.streamStop().bytes, { tag: "stream_stop" }],
    [
      "Stream Commit",
      encode.streamCommit({ xid: 901, commitLsn: 0x16_b374_d848n, endLsn: 0x16_b374_d900n, commitTime: TIME }).bytes,
      { tag: "stream_commit", xid: 901, flags: 0, commitLsn: "00000016/B374D848", commitEndLsn: "00000016/B374D900", commitTime: TIME },
    ],
    [
      "Stream Abort (protocol 2-3)",
      encode.streamAbort({ xid: 901, subXid: 902 }).bytes,
      { tag: "stream_abort", xid: 901, subXid: 902, abortLsn: null, abortTime: null },
    ],
    [
      "Stream Abort (protocol 4, parallel)",
      encode.streamAbort({ xid: 901, subXid: 901, abortLsn: 0xabcn, abortTime: TIME }).bytes,
      { tag: "stream_abort", xid: 901, subXid: 901, abortLsn: "00000000/00000ABC", abortTime: TIME },
    ],
    [
      "Begin Prepare",
      encode.beginPrepare({ prepareLsn: 0x100n, endLsn: 0x180n, prepareTime: TIME, xid: 903, gid: "g1" }).bytes,
      { tag: "begin_prepare", prepareLsn: "00000000/00000100", prepareEndLsn: "00000000/00000180", prepareTime: TIME, xid: 903, gid: "g1" },
    ],
    [
      "Prepare",
      encode.prepare({ prepareLsn: 0x100n, endLsn: 0x180n, prepareTime: TIME, xid: 903, gid: "g1" }).bytes,
      { tag: "prepare", flags: 0, prepareLsn: "00000000/00000100", prepareEndLsn: "00000000/00000180", prepareTime: TIME, xid: 903, gid: "g1" },
    ],
    [
      "Commit Prepared",
      encode.commitPrepared({ commitLsn: 0x200n, endLsn: 0x280n, commitTime: TIME + 1n, xid: 903, gid: "g1" }).bytes,
      { tag: "commit_prepared", flags: 0, commitLsn: "00000000/00000200", commitEndLsn: "00000000/00000280", commitTime: TIME + 1n, xid: 903, gid: "g1" },
    ],
    [
      "Rollback Prepared",
      encode.rollbackPrepared({ prepareEndLsn: 0x180n, rollbackEndLsn: 0x300n, prepareTime: TIME, rollbackTime: TIME + 2n, xid: 904, gid: "g2" }).bytes,
      {
        tag: "rollback_prepared", flags: 0, prepareEndLsn: "00000000/00000180", rollbackEndLsn: "00000000/00000300",
        prepareTime: TIME, rollbackTime: TIME + 2n, xid: 904, gid: "g2",
      },
    ],
    [
      "Stream Prepare",
      encode.streamPrepare({ prepareLsn: 0x400n, endLsn: 0x480n, prepareTime: TIME, xid: 905, gid: "g3" }).bytes,
      { tag: "stream_prepare", flags: 0, prepareLsn: "00000000/00000400", prepareEndLsn: "00000000/00000480", prepareTime: TIME, xid: 905, gid: "g3" },
    ],
  ];
  for (const [name, bytes, shape] of cases) {
    it(name, () => {
      const [r] = both(bytes);
      expect(r!.ours).toStrictEqual(ok(shape));
      expect(r!.theirs).toEqual(unknown);
    });
  }

  it("streamed logical message and truncate carry the xid; Relation and Type inside a block do not", () => {
    const rel = { relationId: 16384, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }], xid: 906 };
    const ours = oursPlugin();
    ours.parse(encode.streamStart({ xid: 906, firstSegment: false }).bytes);
    expect(ours.parse(encode.type({ typeId: 70000, namespace: "public", typeName: "e", xid: 906 }).bytes)).toStrictEqual({
      tag: "type", typeOid: 70000, typeSchema: "public", typeName: "e",
    });
    expect(ours.parse(encode.relation(rel).bytes)).not.toHaveProperty("xid");
    expect(ours.parse(encode.message({ xid: 906, transactional: true, lsn: 0x10n, prefix: "p", content: "hi" }).bytes)).toStrictEqual({
      tag: "message", flags: 1, transactional: true, messageLsn: "00000000/00000010", prefix: "p", content: Buffer.from("hi"), xid: 906,
    });
    expect(ours.parse(encode.truncate({ xid: 906, cascade: true, relationIds: [16384] }).bytes)).toMatchObject({
      tag: "truncate", cascade: true, restartIdentity: false, xid: 906,
    });
    ours.parse(encode.streamStop().bytes);
    expect(ours.parse(encode.message({ transactional: false, lsn: 0x20n, prefix: "p", content: "" }).bytes)).not.toHaveProperty("xid");
  });
});

// ---------------------------------------------------------------------------

describe("the same as PgoutputPlugin", () => {
  it("LSN 0/0 is null, LSNs are zero-padded upper-case", () => {
    const [r] = both(encode.origin({ originLsn: 0n, name: "o" }).bytes);
    expect(r!.ours).toEqual(r!.theirs);
    expect(r!.ours).toEqual(ok({ tag: "origin", originLsn: null, originName: "o" }));
    const [m] = both(encode.message({ lsn: 0xffff_ffff_ffff_ffffn, prefix: "", content: new Uint8Array([0, 255]) }).bytes);
    expect(m!.ours).toStrictEqual(m!.theirs);
    expect((m!.ours as { value: { messageLsn: string } }).value.messageLsn).toBe("FFFFFFFF/FFFFFFFF");
  });

  it("a change for a relation never described throws", () => {
    const [r] = both(encode.insert({ relationId: 5, newTuple: ["1"] }).bytes);
    expect(r!.theirs).toEqual({ ok: false, error: "missing relation" });
    expect(r!.ours).toMatchObject({ ok: false, error: expect.stringMatching(/^missing relation/) });
  });

  it("binary columns are Buffers; unchanged TOAST is undefined, or the old row's value after a whole old row", () => {
    const rel = { relationId: 16384, namespace: "public", relationName: "t", replicaIdentity: "f" as const,
      columns: [{ name: "id", typeId: 23, isKey: true }, { name: "big", typeId: 25, isKey: true }, { name: "raw", typeId: 17 }] };
    const results = both(
      encode.relation(rel).bytes,
      encode.update({ relation: rel, oldTupleType: "O", oldTuple: ["1", "old big", null], newTuple: ["1", { kind: "unchanged" }, new Uint8Array([1, 2])] }).bytes,
      encode.update({ relation: rel, newTuple: ["2", { kind: "unchanged" }, null] }).bytes,
      encode.delete({ relation: rel, oldTupleType: "K", oldTuple: ["2", null, null] }).bytes,
    );
    for (const r of results) expect(r.ours).toStrictEqual(r.theirs);
    const [, full, plain, del] = results.map((r) => (r.ours as { value: Record<string, Record<string, unknown>> }).value);
    expect(full!.new).toEqual({ id: 1, big: "old big", raw: Buffer.from([1, 2]) });
    expect(Buffer.isBuffer(full!.new!.raw)).toBe(true);
    expect(Object.getPrototypeOf(full!.new)).toBe(null);
    expect("big" in plain!.new! && plain!.new!.big === undefined).toBe(true);
    expect(del!.key).toStrictEqual(Object.assign(Object.create(null), { id: 2, big: undefined }));
  });

  it("results are plain objects that outlive the decoder's next call", () => {
    const rel = { relationId: 16384, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }] };
    const ours = oursPlugin();
    const theirs = theirsPlugin();
    const inputs = [
      encode.relation(rel).bytes,
      encode.insert({ relation: rel, newTuple: ["1", "first"] }).bytes,
      encode.message({ lsn: 1n, prefix: "p", content: "content" }).bytes,
      ...Array.from({ length: 50 }, (_, i) => encode.insert({ relation: rel, newTuple: [String(i + 2), "x".repeat(i * 100)] }).bytes),
    ];
    const kept = inputs.map((b) => ours.parse(b));
    expect(kept).toStrictEqual(inputs.map((b) => theirs.parse(buf(b))));
    expect(kept[1]).toMatchObject({ new: { id: 1, v: "first" } });
    expect(Buffer.from((kept[2] as { content: Uint8Array }).content).toString()).toBe("content");
  });
});

// Uses no backend of the run (or names its own): registered in one run only.
if (onceAcrossBackends) describe("the plugin's surface", () => {
  it("has pg-logical-replication's plugin members: options, name, start, parse", async () => {
    const options = { protoVersion: 2 as const, publicationNames: ["a", "b"], messages: true };
    const plugin = new PgoutputWasmPlugin(options);
    const theirs = new PgoutputPlugin(options);
    expect(plugin.name).toBe(theirs.name);
    expect(plugin.options).toBe(options);
    const sent: string[] = [];
    const client = { query: async (sql: string) => (sent.push(sql), "done") };
    await expect(plugin.start(client, "slot", "0/00000000")).resolves.toBe("done");
    await theirs.start(client as never, "slot", "0/00000000");
    expect(sent).toEqual([
      `START_REPLICATION SLOT "slot" LOGICAL 0/00000000 (proto_version '2', publication_names 'a,b', messages 'true')`,
      `START_REPLICATION SLOT "slot" LOGICAL 0/00000000 (proto_version '2', publication_names 'a,b', messages 'true')`,
    ]);
  });

  it("START_REPLICATION: every option, quoting, LSN check", () => {
    expect(
      startReplicationCommand('my"slot', "16/B374D848", {
        protoVersion: 4, publicationNames: ["pub", "it's"], messages: false, binary: true, streaming: "parallel", twoPhase: true, origin: "none",
      }),
    ).toBe(
      `START_REPLICATION SLOT "my""slot" LOGICAL 16/B374D848 (proto_version '4', publication_names 'pub,it''s', messages 'false', ` +
        `binary 'true', streaming 'parallel', two_phase 'true', origin 'none')`,
    );
    expect(startReplicationCommand("s", "0/0", { protoVersion: 2, publicationNames: ["p"], streaming: true })).toContain("streaming 'on'");
    expect(startReplicationCommand("s", "0/0", { protoVersion: 1, publicationNames: ["p"] })).toBe(
      `START_REPLICATION SLOT "s" LOGICAL 0/0 (proto_version '1', publication_names 'p')`,
    );
    expect(() => startReplicationCommand("s", "0/0; DROP TABLE x", { protoVersion: 1, publicationNames: ["p"] })).toThrow(/not an LSN/);
  });

  it("start() leaves a stream block a lost connection left open", async () => {
    const plugin = new PgoutputWasmPlugin(OPTIONS);
    plugin.parse(encode.streamStart({ xid: 1, firstSegment: true }).bytes);
    expect(plugin.decoder.inStream).toBe(true);
    await plugin.start({ query: async () => undefined }, "s", "0/0");
    expect(plugin.decoder.inStream).toBe(false);
  });

  it("typeParsers and decoder options", () => {
    const rel = { relationId: 1, namespace: "public", relationName: "t", columns: [{ name: "n", typeId: 23 }] };
    const plugin = new PgoutputWasmPlugin({ ...OPTIONS, backend: "baseline", typeParsers: { getTypeParser: (oid) => (s: string) => `${oid}:${s}` } });
    expect(plugin.decoder.backend).toBe("baseline");
    plugin.parse(encode.relation(rel).bytes);
    expect(plugin.parse(encode.insert({ relation: rel, newTuple: ["5"] }).bytes)).toMatchObject({ new: { n: "23:5" } });
    expect(new PgoutputWasmPlugin({ ...OPTIONS, backend: "wasm" }).decoder.backend).toBe("wasm");
    expect(new PgoutputWasmPlugin(OPTIONS).decoder.backend).toBe("wasm"); // auto, where wasm runs
  });
});
