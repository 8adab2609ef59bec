/**
 * Smoke test of the pure-TS baseline decoder with hand-built messages. The
 * shared conformance suite (encoder-based, both backends) goes much further.
 * Also: the TS kernel holds no memory past a call.
 */
import { describe, expect, it } from "vitest";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";
import { PgoutputError } from "../bindings/errors.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import { unchangedToast } from "../bindings/tuple.ts";
import { POSTGRES_EPOCH_US } from "../bindings/time.ts";
import { createKernel } from "../bindings/baseline/kernel.ts";
import type { KernelExports } from "../bindings/kernel/exports.ts";
import { FRAMING_ONE, STATUS_OK } from "../bindings/tape.ts";
import { JSON_REFUSED } from "../bindings/jsonl-tape.ts";
import { gc } from "./support/memory.ts";

/** A tiny big-endian byte builder. */
class W {
  readonly #out: number[] = [];
  u8(...vs: number[]): this {
    for (const v of vs) this.#out.push(v & 0xff);
    return this;
  }
  ch(c: string): this {
    return this.u8(c.charCodeAt(0));
  }
  i16(v: number): this {
    return this.u8(v >> 8, v);
  }
  i32(v: number): this {
    return this.u8(v >>> 24, v >>> 16, v >>> 8, v);
  }
  i64(v: bigint): this {
    const u = BigInt.asUintN(64, v);
    return this.i32(Number(u >> 32n)).i32(Number(u & 0xffffffffn));
  }
  str(s: string): this {
    return this.raw(new TextEncoder().encode(s)).u8(0);
  }
  raw(bytes: Uint8Array): this {
    for (const b of bytes) this.#out.push(b);
    return this;
  }
  /** A text column. */
  t(s: string): this {
    const b = new TextEncoder().encode(s);
    return this.ch("t").i32(b.length).raw(b);
  }
  get bytes(): Uint8Array {
    return Uint8Array.from(this.#out);
  }
}

const w = () => new W();
const LSN = 0x1_0000_0001n;
const LSN2 = 0xffff_ffff_ffff_fff0n;
const T = 700_000_000_123_456n; // wire µs since 2000
const UNIX_T = T + POSTGRES_EPOCH_US;
const XID = 0xfffffff0; // above 2^31: must come out unsigned
const REL = 16384;

const relationMsg = (xid?: number) => {
  const m = w().ch("R");
  if (xid !== undefined) m.i32(xid);
  return m.i32(REL).str("public").str("items").ch("d").i16(3)
    .u8(1).str("id").i32(23).i32(-1)
    .u8(0).str("title").i32(25).i32(-1)
    .u8(0).str("body").i32(25).i32(-1).bytes;
};
const insertMsg = (xid?: number) => {
  const m = w().ch("I");
  if (xid !== undefined) m.i32(xid);
  return m.i32(REL).ch("N").i16(3).t("1").t("héllo").ch("n").bytes;
};
const updateMsg = w().ch("U").i32(REL).ch("O").i16(3).t("1").t("old").ch("n")
  .ch("N").i16(3).t("1").t("new").ch("u").bytes;
const updateNoOld = w().ch("U").i32(REL).ch("N").i16(3).t("2").ch("b").i32(2).u8(0xde, 0xad).ch("u").bytes;
const deleteMsg = w().ch("D").i32(REL).ch("K").i16(3).t("1").ch("n").ch("n").bytes;
const truncateMsg = w().ch("T").i32(2).u8(3).i32(REL).i32(0xfffffffe).bytes;
const beginMsg = w().ch("B").i64(LSN).i64(T).i32(XID).bytes;
const commitMsg = w().ch("C").u8(0).i64(LSN).i64(LSN2).i64(T).bytes;
const originMsg = w().ch("O").i64(LSN).str("node1").bytes;
const logicalMsg = w().ch("M").u8(1).i64(LSN).str("pfx").i32(3).u8(0x61, 0xff, 0x62).bytes;
const typeMsg = w().ch("Y").i32(90000).str("public").str("mood").bytes;
const streamStart = w().ch("S").i32(XID).u8(1).bytes;
const streamStop = w().ch("E").bytes;
const streamCommit = w().ch("c").i32(XID).u8(0).i64(LSN).i64(LSN2).i64(T).bytes;
const streamAbort2 = w().ch("A").i32(XID).i32(XID - 1).bytes;
const streamAbort4 = w().ch("A").i32(XID).i32(XID).i64(LSN).i64(T).bytes;
const beginPrepare = w().ch("b").i64(LSN).i64(LSN2).i64(T).i32(XID).str("gid-1").bytes;
const prepare = w().ch("P").u8(0).i64(LSN).i64(LSN2).i64(T).i32(XID).str("gid-1").bytes;
const commitPrepared = w().ch("K").u8(0).i64(LSN).i64(LSN2).i64(T).i32(XID).str("gid-1").bytes;
const rollbackPrepared = w().ch("r").u8(0).i64(LSN).i64(LSN2).i64(T).i64(T + 1n).i32(XID).str("gid-1").bytes;
const streamPrepare = w().ch("p").u8(0).i64(LSN).i64(LSN2).i64(T).i32(XID).str("gid-1").bytes;

/** Every message, with the in-stream state it is decoded in. */
const ALL: [string, Uint8Array, boolean][] = [
  ["Begin", beginMsg, false], ["Commit", commitMsg, false], ["Origin", originMsg, false],
  ["Message", logicalMsg, false], ["Relation", relationMsg(), false], ["Type", typeMsg, false],
  ["Insert", insertMsg(), false], ["Update", updateMsg, false], ["Update", updateNoOld, false],
  ["Delete", deleteMsg, false], ["Truncate", truncateMsg, false],
  ["StreamStart", streamStart, false], ["StreamStop", streamStop, true], ["StreamCommit", streamCommit, false],
  ["StreamAbort", streamAbort2, false], ["StreamAbort", streamAbort4, false],
  ["BeginPrepare", beginPrepare, false], ["Prepare", prepare, false], ["CommitPrepared", commitPrepared, false],
  ["RollbackPrepared", rollbackPrepared, false], ["StreamPrepare", streamPrepare, false],
  ["Relation", relationMsg(7), true], ["Insert", insertMsg(7), true],
];

function framed(...msgs: Uint8Array[]): Uint8Array {
  const out = w();
  for (const m of msgs) out.i32(m.length).raw(m);
  return out.bytes;
}

function caught(f: () => unknown): PgoutputError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(PgoutputError);
    return e as PgoutputError;
  }
  throw new Error("expected a PgoutputError");
}

/** A decoder that knows relation REL. */
function withRelation(): BaselineDecoder {
  const d = new BaselineDecoder();
  d.decode(relationMsg());
  return d;
}

describe("baseline decoder: every message kind", () => {
  it("decodes transaction framing", () => {
    const d = new BaselineDecoder();
    expect(d.backend).toBe("baseline");
    expect(d.decode(beginMsg).materialize()).toEqual({ kind: "Begin", finalLsn: LSN, commitTime: UNIX_T, xid: XID });
    expect(d.decode(commitMsg).materialize()).toEqual({
      kind: "Commit", flags: 0, commitLsn: LSN, endLsn: LSN2, commitTime: UNIX_T,
    });
    expect(d.decode(originMsg).materialize()).toEqual({ kind: "Origin", originLsn: LSN, name: "node1" });
    const m = d.decode(logicalMsg);
    if (m.kind !== "Message") throw new Error(m.kind);
    expect([m.xid, m.flags, m.transactional, m.lsn, m.prefix]).toEqual([undefined, 1, true, LSN, "pfx"]);
    expect(m.content).toEqual(Uint8Array.from([0x61, 0xff, 0x62]));
    expect(m.content).not.toBe(m.content); // a copy each time
    expect(m.contentText).toBe("a\ufffdb");
    expect(m.toJSON()).toEqual({ kind: "Message", flags: 1, transactional: true, lsn: "1/1", prefix: "pfx", content: "Yf9i" });
  });

  it("decodes Relation and Type into the caches", () => {
    const d = new BaselineDecoder();
    const r = d.decode(relationMsg());
    if (r.kind !== "Relation") throw new Error(r.kind);
    expect([r.xid, r.relationId, r.namespace, r.relationName, r.replicaIdentity]).toEqual([undefined, REL, "public", "items", "d"]);
    expect(r.columns).toEqual([
      { flags: 1, isKey: true, name: "id", typeId: 23, typeModifier: -1 },
      { flags: 0, isKey: false, name: "title", typeId: 25, typeModifier: -1 },
      { flags: 0, isKey: false, name: "body", typeId: 25, typeModifier: -1 },
    ]);
    expect(d.relations.get(REL)).toBe(r.relation);
    const ty = d.decode(typeMsg);
    expect(ty.materialize()).toEqual({ kind: "Type", typeId: 90000, namespace: "public", typeName: "mood" });
    expect(d.types.get(90000)).toEqual({ typeId: 90000, namespace: "public", typeName: "mood" });
  });

  it("decodes Insert, Update, Delete and Truncate", () => {
    const d = withRelation();
    const ins = d.decode(insertMsg());
    if (ins.kind !== "Insert") throw new Error(ins.kind);
    expect(ins.relation?.name).toBe("items");
    expect(ins.newTuple.text("title")).toBe("héllo");
    expect(ins.newTuple.isNull(2)).toBe(true);
    expect(ins.newTuple.byteLength("title")).toBe(6);
    expect(ins.materialize()).toEqual({
      kind: "Insert", relationId: REL, namespace: "public", relationName: "items",
      newTuple: [{ kind: "text", text: "1" }, { kind: "text", text: "héllo" }, { kind: "null" }],
    });

    const up = d.decode(updateMsg);
    if (up.kind !== "Update") throw new Error(up.kind);
    expect(up.oldTupleType).toBe("O");
    expect(up.oldTuple?.text("title")).toBe("old");
    expect(up.newTuple.text("body")).toBe(unchangedToast);
    expect(up.newTuple.isNull("body")).toBe(false);
    expect(up.newTuple.unchangedColumns()).toEqual([2]);

    const up2 = d.decode(updateNoOld);
    if (up2.kind !== "Update") throw new Error(up2.kind);
    expect([up2.oldTupleType, up2.oldTuple]).toEqual([null, null]);
    expect(up2.newTuple.kind(1)).toBe("binary");
    expect(up2.newTuple.bytes(1)).toEqual(Uint8Array.from([0xde, 0xad]));
    expect(caught(() => up2.newTuple.text(1)).code).toBe("WRONG_COLUMN_KIND");
    expect(up2.toJSON().newTuple).toEqual([{ kind: "text", text: "2" }, { kind: "binary", base64: "3q0=" }, { kind: "unchanged" }]);

    const del = d.decode(deleteMsg);
    if (del.kind !== "Delete") throw new Error(del.kind);
    expect(del.oldTupleType).toBe("K");
    expect(del.oldTuple.materialize()).toEqual([{ kind: "text", text: "1" }, { kind: "null" }, { kind: "null" }]);

    const tr = d.decode(truncateMsg);
    if (tr.kind !== "Truncate") throw new Error(tr.kind);
    expect([tr.options, tr.cascade, tr.restartIdentity, tr.relationIds]).toEqual([3, true, true, [REL, 0xfffffffe]]);
    expect(tr.relations).toEqual([d.relations.get(REL), undefined]);
  });

  it("decodes streaming and two-phase messages", () => {
    const d = new BaselineDecoder();
    expect(d.decode(streamStart).materialize()).toEqual({ kind: "StreamStart", xid: XID, firstSegment: true });
    expect(d.decode(streamStop).materialize()).toEqual({ kind: "StreamStop" });
    expect(d.decode(streamCommit).materialize()).toEqual({
      kind: "StreamCommit", xid: XID, flags: 0, commitLsn: LSN, endLsn: LSN2, commitTime: UNIX_T,
    });
    expect(d.decode(streamAbort2).materialize()).toEqual({ kind: "StreamAbort", xid: XID, subXid: XID - 1, abortLsn: null, abortTime: null });
    expect(d.decode(streamAbort4).materialize()).toEqual({ kind: "StreamAbort", xid: XID, subXid: XID, abortLsn: LSN, abortTime: UNIX_T });
    const common = { prepareLsn: LSN, endLsn: LSN2, prepareTime: UNIX_T, xid: XID, gid: "gid-1" };
    expect(d.decode(beginPrepare).materialize()).toEqual({ kind: "BeginPrepare", ...common });
    expect(d.decode(prepare).materialize()).toEqual({ kind: "Prepare", flags: 0, ...common });
    expect(d.decode(streamPrepare).materialize()).toEqual({ kind: "StreamPrepare", flags: 0, ...common });
    expect(d.decode(commitPrepared).materialize()).toEqual({
      kind: "CommitPrepared", flags: 0, commitLsn: LSN, endLsn: LSN2, commitTime: UNIX_T, xid: XID, gid: "gid-1",
    });
    expect(d.decode(rollbackPrepared).toJSON()).toEqual({
      kind: "RollbackPrepared", flags: 0, prepareEndLsn: "1/1", rollbackEndLsn: "FFFFFFFF/FFFFFFF0",
      prepareTime: UNIX_T.toString(), rollbackTime: (UNIX_T + 1n).toString(), xid: XID, gid: "gid-1",
    });
  });

  it("copies out of Node Buffers too (whose slice() is a view)", () => {
    const d = new BaselineDecoder();
    const input = Buffer.from(relationMsg());
    const rel = d.decode(input);
    input.fill(0);
    expect(d.relations.get(REL)?.name).toBe("items"); // the cache owns a copy
    const msg = Buffer.from(logicalMsg);
    const m = d.decode(msg);
    const content = m.kind === "Message" ? m.content : undefined;
    expect(content).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(content)).toBe(false);
    msg.fill(0);
    expect(content).toEqual(Uint8Array.from([0x61, 0xff, 0x62]));
    // `kind` is a plain data property of the shared views (one object shape, see views.ts): what reads memory shows staleness.
    expect(caught(() => rel.materialize()).code).toBe("STALE_VIEW");
    expect(rel.kind).toBe("Relation");
  });

  it("returns a copy of the message from bytes()", () => {
    const m = new BaselineDecoder().decode(originMsg);
    expect(m.bytes()).toEqual(originMsg);
    expect(m.bytes()).not.toBe(originMsg);
  });
});

describe("baseline decoder: streaming state", () => {
  it("reads the xid only inside a Stream Start / Stream Stop block", () => {
    const d = withRelation();
    expect(d.decode(insertMsg()).materialize().xid).toBeUndefined();
    d.decode(streamStart);
    expect(d.inStream).toBe(true);
    const ins = d.decode(insertMsg(XID));
    expect(ins.kind === "Insert" && ins.xid).toBe(XID);
    expect((d.decode(relationMsg(XID)) as { xid?: number }).xid).toBe(XID);
    d.decode(streamStop);
    expect(d.inStream).toBe(false);
    d.decode(streamCommit); // does not change the state
    expect(d.inStream).toBe(false);
    // The non-stream form inside a stream is cut short (its OID is read as the xid).
    d.inStream = true;
    expect(caught(() => d.decode(insertMsg())).incomplete).toBe(false);
  });

  it("lets decode({ inStream }) override the state for one message", () => {
    const d = withRelation();
    const ins = d.decode(insertMsg(5), { inStream: true });
    expect(ins.kind === "Insert" && ins.xid).toBe(5);
    expect(d.inStream).toBe(false);
    d.decode(streamStart, { inStream: false });
    expect(d.inStream).toBe(true);
    expect((d.decode(insertMsg(), { inStream: false }) as { xid?: number }).xid).toBeUndefined();
    expect(d.inStream).toBe(true);
  });
});

describe("baseline decoder: malformed input", () => {
  it("reports every proper prefix of every message as incomplete", () => {
    for (const [name, msg, inStream] of ALL) {
      for (let n = 0; n < msg.length; n++) {
        if (msg === streamAbort4 && n === streamAbort2.length) continue; // a whole protocol-2 abort
        const d = withRelation();
        const e = caught(() => d.decode(msg.subarray(0, n), { inStream }));
        expect(e.code, `${name} cut at ${n}`).toBe("INCOMPLETE");
        expect(e.incomplete).toBe(true);
        expect(e.offset).toBeLessThanOrEqual(n);
        if (n > 0) expect(e.messageKind).toBe(name);
      }
    }
  });

  it("reports bytes after the last field", () => {
    for (const [name, msg, inStream] of ALL) {
      if (msg === streamAbort2) continue; // more bytes there are the protocol 4 fields
      const e = caught(() => withRelation().decode(w().raw(msg).u8(0).bytes, { inStream }));
      expect([e.code, e.offset, e.field, e.messageKind], name).toEqual(["TRAILING_BYTES", msg.length, "end", name]);
    }
    const d = new BaselineDecoder();
    const partialV4 = caught(() => d.decode(w().raw(streamAbort2).i64(LSN).bytes));
    expect([partialV4.code, partialV4.field, partialV4.offset]).toEqual(["INCOMPLETE", "abortTime", 17]);
    expect(caught(() => d.decode(w().raw(streamAbort4).u8(0).bytes)).code).toBe("TRAILING_BYTES");
  });

  it("names the bad field and its offset", () => {
    const d = withRelation();
    const cases: [Uint8Array, string, string, number][] = [
      [w().ch("Z").bytes, "UNKNOWN_MESSAGE", "tag", 0],
      [w().ch("R").i32(1).str("").str("x").ch("q").i16(0).bytes, "INVALID_VALUE", "replicaIdentity", 8],
      [w().ch("R").i32(1).str("").str("x").ch("f").i16(-1).bytes, "INVALID_LENGTH", "columnCount", 9],
      [w().ch("I").i32(REL).ch("X").bytes, "INVALID_VALUE", "tupleType", 5],
      [w().ch("I").i32(REL).ch("N").i16(3).t("1").ch("x").bytes, "INVALID_COLUMN_KIND", "newTuple.column[1].kind", 14],
      [w().ch("I").i32(REL).ch("N").i16(3).t("1").ch("t").i32(-5).bytes, "INVALID_LENGTH", "newTuple.column[1].length", 15],
      [w().ch("I").i32(REL).ch("N").i16(3).t("1").ch("t").i32(9).bytes, "INCOMPLETE", "newTuple.column[1].value", 19],
      [w().ch("I").i32(REL).ch("N").i16(2).t("1").t("2").bytes, "COLUMN_COUNT_MISMATCH", "newTuple.columnCount", 6],
      [w().ch("D").i32(REL).ch("N").bytes, "INVALID_VALUE", "tupleType", 5],
      [w().ch("T").i32(-1).u8(0).bytes, "INVALID_LENGTH", "relationCount", 1],
      [w().ch("T").i32(3).u8(0).i32(1).bytes, "INCOMPLETE", "relationIds", 10],
      [w().ch("M").u8(0).i64(LSN).str("p").i32(-1).bytes, "INVALID_LENGTH", "contentLength", 12],
      [w().ch("b").i64(LSN).i64(LSN).i64(T).i32(1).raw(new TextEncoder().encode("gid")).bytes, "INCOMPLETE", "gid", 29],
    ];
    for (const [bytes, code, field, offset] of cases) {
      const e = caught(() => d.decode(bytes));
      expect([e.code, e.field, e.offset], `${code} ${field}`).toEqual([code, field, offset]);
    }
  });

  it("allows tuples of unknown relations but not their names", () => {
    const d = new BaselineDecoder();
    const ins = d.decode(w().ch("I").i32(99).ch("N").i16(1).t("x").bytes);
    if (ins.kind !== "Insert") throw new Error(ins.kind);
    expect(ins.relation).toBeUndefined();
    expect(ins.newTuple.text(0)).toBe("x");
    expect(caught(() => ins.newTuple.text("id")).code).toBe("UNKNOWN_COLUMN");
    expect(caught(() => ins.newTuple.text(1)).code).toBe("UNKNOWN_COLUMN");
  });

  it("refuses messages above maxMessageSize", () => {
    const d = new BaselineDecoder({ maxMessageSize: 20 });
    expect(caught(() => d.decode(beginMsg)).code).toBe("MESSAGE_TOO_LARGE");
    const e = caught(() => d.decodeFramed(framed(streamStop, beginMsg)));
    expect([e.code, e.offset, e.field, e.messageIndex]).toEqual(["MESSAGE_TOO_LARGE", 5, "frameLength", 1]);
  });
});

describe("baseline decoder: batches and framing", () => {
  const stream = [relationMsg(), beginMsg, insertMsg(), updateMsg, deleteMsg, commitMsg, streamStart, insertMsg(9), streamStop];

  it("decodes lists and the capture format alike", () => {
    const d = new BaselineDecoder();
    const a = d.decodeBatch(stream).materialize();
    d.reset();
    const bytes = framed(...stream);
    const b = d.decodeFramed(w().raw(bytes).u8(0, 0).bytes);
    expect(b.consumed).toBe(bytes.length);
    expect(b.length).toBe(stream.length);
    expect([...b].map((m) => m.kind)).toEqual(stream.map((_, i) => b.kind(i)));
    expect(b.materialize()).toEqual(a);
  });

  it("push() gives the same messages however the input is split", () => {
    const bytes = framed(...stream);
    const expected = new BaselineDecoder().decodeFramed(bytes).materialize();
    for (let cut = 0; cut <= bytes.length; cut++) {
      const d = new BaselineDecoder();
      const got = [...d.push(bytes.slice(0, cut)).materialize(), ...d.push(bytes.slice(cut)).materialize()];
      expect(got, `cut at ${cut}`).toEqual(expected);
      d.end();
    }
    const d = new BaselineDecoder(); // one byte at a time
    const got: Record<string, unknown>[] = [];
    for (let i = 0; i < bytes.length; i++) got.push(...d.push(bytes.subarray(i, i + 1)).materialize());
    expect(got).toEqual(expected);
    d.push(bytes.subarray(0, 3));
    expect(caught(() => d.end()).code).toBe("INCOMPLETE");
    d.end(); // cleared
  });

  it("reports a zero-length frame as an incomplete message", () => {
    const e = caught(() => new BaselineDecoder().decodeFramed(framed(streamStop, new Uint8Array(0))));
    expect([e.code, e.offset, e.messageIndex, e.field]).toEqual(["INCOMPLETE", 9, 1, "tag"]);
  });

  it("offsets in a decodeBatch error are in the capture-format form of the list", () => {
    const d = new BaselineDecoder();
    const e = caught(() => d.decodeBatch([beginMsg, w().raw(commitMsg).u8(7).bytes]));
    expect([e.code, e.messageIndex, e.offset]).toEqual(["TRAILING_BYTES", 1, 4 + beginMsg.length + 4 + commitMsg.length]);
  });

  it("keeps working after an error, with the state of the messages before it", () => {
    const d = new BaselineDecoder();
    const bad = w().ch("I").i32(REL).ch("N").i16(1).t("x").bytes; // column count mismatch
    const badInStream = w().ch("I").i32(7).i32(REL).ch("N").i16(1).t("x").bytes;
    const e = caught(() => d.decodeBatch([relationMsg(), streamStart, badInStream, streamStop]));
    expect([e.code, e.messageIndex]).toEqual(["COLUMN_COUNT_MISMATCH", 2]);
    expect(d.relations.has(REL)).toBe(true);
    expect(d.inStream).toBe(true);
    d.inStream = false;
    expect(d.decode(insertMsg()).kind).toBe("Insert");

    // push: the bad frame and what follows it are dropped; the next push starts a new stream.
    const p = new BaselineDecoder();
    const bytes = framed(relationMsg(), bad, beginMsg, commitMsg);
    const pe = caught(() => p.push(bytes.subarray(0, bytes.length - 3)));
    expect([pe.code, pe.messageIndex, pe.offset]).toEqual(["COLUMN_COUNT_MISMATCH", 1, 4 + relationMsg().length + 4 + 6]);
    expect(p.relations.has(REL)).toBe(true);
    expect(() => p.end()).not.toThrow();
    expect(p.push(framed(beginMsg, commitMsg)).materialize().map((m) => m.kind)).toEqual(["Begin", "Commit"]);

    // push: a too-large frame is refused from its length alone, even split across pushes.
    const q = new BaselineDecoder({ maxMessageSize: 22 });
    const qb = framed(beginMsg, w().raw(commitMsg).u8(1, 2, 3, 4, 5, 6, 7, 8).bytes);
    const cut = 4 + beginMsg.length + 2;
    expect(q.push(qb.subarray(0, cut)).materialize().map((m) => m.kind)).toEqual(["Begin"]);
    const qe = caught(() => q.push(qb.subarray(cut, cut + 2)));
    expect([qe.code, qe.offset, qe.field, qe.messageIndex]).toEqual(["MESSAGE_TOO_LARGE", 0, "frameLength", 0]);
    expect(q.push(framed(beginMsg)).length).toBe(1);
  });
});

describe("baseline decoder: stale views", () => {
  it("throws STALE_VIEW after the next call, but relations live on", () => {
    const d = new BaselineDecoder();
    const batch = d.decodeBatch([relationMsg(), insertMsg()]);
    const rel = batch.get(0) as PgoutputMessage & { kind: "Relation" };
    const relation = rel.relation;
    const ins = batch.get(1);
    if (ins.kind !== "Insert") throw new Error(ins.kind);
    const tuple = ins.newTuple;
    const title = tuple.text("title");
    d.decode(beginMsg);
    // The shared views (bindings/views) keep `kind`, `batch.length` and `tuple.length` as plain data
    // properties set when the view was made (one object shape, no check in loops): they stay readable
    // and true; everything that reads memory checks.
    for (const f of [() => batch.get(0), () => ins.newTuple, () => ins.relation, () => tuple.text(0),
      () => tuple.value(0), () => rel.columns, () => ins.materialize(), () => ins.bytes()]) {
      expect(caught(f).code, String(f)).toBe("STALE_VIEW");
    }
    expect([ins.kind, batch.length, tuple.length]).toEqual(["Insert", 2, 3]);
    expect(title).toBe("héllo");
    expect(relation.name).toBe("items");
    expect(relation.columnIndex("body")).toBe(2);
    expect(d.decode(insertMsg()).kind).toBe("Insert"); // the cache still serves new changes
  });
});

describe("the TS kernel's memory", () => {
  // The TS build of the kernel reads memory through module state (bindings/kernel/portable.ts)
  // that every TS kernel shares; each call hands it its memory and takes it back after.
  async function collected(call: (k: KernelExports) => void): Promise<boolean> {
    const ref = ((): WeakRef<ArrayBufferLike> => {
      const k = createKernel();
      call(k);
      return new WeakRef(k.memory.buffer);
    })();
    await new Promise((resolve) => setTimeout(resolve, 0)); // a WeakRef holds its target until the job ends
    gc();
    return ref.deref() === undefined;
  }

  it("is not held past a decode() call: a dropped kernel's memory is freed", async () => {
    // One Begin message (FRAMING_ONE), tape and result above heapBase.
    const begin = w().ch("B").i64(1n).i64(2n).i32(3).bytes;
    expect(await collected((k) => {
      new Uint8Array(k.memory.buffer).set(begin, 64);
      expect(k.decode(64, 0, begin.length, FRAMING_ONE, 1024, 0, 64, 0, 1 << 30, 16, 0)).toBe(STATUS_OK);
    })).toBe(true);
  });

  it("is not held past a jsonColumns() call", async () => {
    expect(await collected((k) => {
      expect(k.jsonColumns(0, 0, 0, 0, 0, 0, -1, 16)).toBe(JSON_REFUSED); // outCapacity < 0
    })).toBe(true);
  });
});
