/**
 * Malformed input gives a PgoutputError with a stable code, the byte offset
 * of the fault, and the message kind/field/index; what came before the fault
 * is applied, and the decoder goes on working.
 *
 * Offsets: for decode() within the message; for decodeFramed()/push() within
 * the framed bytes of that call; for decodeBatch(list) as if the list were in
 * capture format (each message preceded by its 4-byte length).
 */
import { describe, expect, it } from "vitest";
import { backend } from "./support/backends.ts";
import { encode, fixtureRelations, fixtures, frame, framedOffset, hex, type Encoded } from "../devkit/encoder/encoder.ts";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import { isPgoutputError, PgoutputError, type PgoutputErrorCode } from "../bindings/errors.ts";

function errorOf(fn: () => unknown): PgoutputError {
  let result: unknown;
  try {
    result = fn();
  } catch (e) {
    if (isPgoutputError(e)) return e;
    throw new Error(`expected a PgoutputError, got ${String(e)}`, { cause: e });
  }
  throw new Error(`expected a PgoutputError, but it returned ${String((result as { kind?: string })?.kind ?? result)}`);
}

interface Want {
  code: PgoutputErrorCode;
  offset?: number;
  messageIndex?: number;
  messageKind?: string;
  field?: RegExp;
}

function expectError(e: PgoutputError, want: Want, what = ""): void {
  const got = {
    code: e.code,
    incomplete: e.incomplete,
    ...(want.offset !== undefined ? { offset: e.offset } : {}),
    ...(want.messageIndex !== undefined ? { messageIndex: e.messageIndex } : {}),
    ...(want.messageKind !== undefined ? { messageKind: e.messageKind } : {}),
  };
  const { field, ...rest } = want;
  expect(got, `${what}: ${e.message}`).toEqual({ incomplete: want.code === "INCOMPLETE", ...rest });
  if (field !== undefined) expect(e.field ?? "", `${what}: field of ${e.message}`).toMatch(field);
}

/** A copy of `bytes` with `at` overwritten by `patch`. */
function patched(bytes: Uint8Array, at: number, patch: ArrayLike<number>): Uint8Array {
  const out = bytes.slice();
  out.set(patch, at);
  return out;
}

function withByte(bytes: Uint8Array, at: number, value: number): Uint8Array {
  return patched(bytes, at, [value]);
}

/** A malformed message with the offset (within it) and details of its fault. */
interface Bad {
  name: string;
  bytes: Uint8Array;
  want: Want;
  /** Messages that must be decoded first (e.g. the Relation). */
  setup: Encoded[];
}

const { users } = fixtureRelations;
const R = encode.relation(users);
const goodInsert = encode.insert({ relation: users, newTuple: ["1", "a", new Uint8Array([1]), null] });

function badCases(): Bad[] {
  const list: Bad[] = [];
  const add = (name: string, bytes: Uint8Array, want: Want, setup: Encoded[] = [R]) => list.push({ name, bytes, want, setup });

  for (const tag of [0x00, 0x58 /* X */, 0x61 /* a */, 0xff]) {
    add(`unknown tag 0x${tag.toString(16)}`, new Uint8Array([tag, 0, 0, 0, 1]), { code: "UNKNOWN_MESSAGE", offset: 0 }, []);
    add(`unknown tag 0x${tag.toString(16)} alone`, new Uint8Array([tag]), { code: "UNKNOWN_MESSAGE", offset: 0 }, []);
  }

  for (const kind of [0x78 /* x */, 0x00, 0x4e /* N */, 0x54 /* T */]) {
    const m = encode.insert({ relation: users, newTuple: ["1", "a", { raw: [kind, 0, 0, 0, 0] }, null] });
    add(`bad column kind 0x${kind.toString(16)} in newTuple`, m.bytes, {
      code: "INVALID_COLUMN_KIND", offset: m.offsets["newTuple.column[2]"], messageKind: "Insert", field: /newTuple\.column\[2\]/,
    });
  }
  {
    const m = encode.update({ relation: users, oldTupleType: "O", oldTuple: [{ raw: [0x7a] }, null, null, null], newTuple: ["1", null, null, null] });
    add("bad column kind in oldTuple", m.bytes, {
      code: "INVALID_COLUMN_KIND", offset: m.offsets["oldTuple.column[0]"], messageKind: "Update", field: /oldTuple\.column\[0\]/,
    });
    const s = encode.delete({ xid: 5, relation: users, oldTupleType: "K", oldTuple: ["1", null, null, { raw: [0x6b] }] });
    add("bad column kind in a streamed Delete", s.bytes, {
      code: "INVALID_COLUMN_KIND", offset: s.offsets["oldTuple.column[3]"], messageKind: "Delete", field: /oldTuple\.column\[3\]/,
    }, [R, encode.streamStart({ xid: 5, firstSegment: true })]);
  }

  for (const [kind, len] of [[0x74, [0xff, 0xff, 0xff, 0xff]], [0x62, [0x80, 0, 0, 0]], [0x74, [0xff, 0xff, 0xff, 0xfe]]] as const) {
    const m = encode.insert({ relation: users, newTuple: ["1", { raw: [kind, ...len, 0x41] }, null, null] });
    add(`negative column length ${hex(new Uint8Array(len))} (${String.fromCharCode(kind)})`, m.bytes, {
      code: "INVALID_LENGTH", offset: m.offsets["newTuple.column[1]"]! + 1, messageKind: "Insert", field: /newTuple\.column\[1\]/,
    });
  }
  {
    const m = encode.message({ transactional: true, lsn: 1n, prefix: "p", content: "abc" });
    add("negative Message content length", patched(m.bytes, m.offsets.contentLength!, [0xff, 0xff, 0xff, 0xfd]), {
      code: "INVALID_LENGTH", offset: m.offsets.contentLength, messageKind: "Message",
    }, []);
    const t = encode.truncate({ options: 0, relationIds: [1] });
    add("negative Truncate relation count", patched(t.bytes, t.offsets["relationIds.count"]!, [0xff, 0xff, 0xff, 0xff]), {
      code: "INVALID_LENGTH", offset: t.offsets["relationIds.count"], messageKind: "Truncate",
    }, []);
    const r = encode.relation({ ...users, relationId: 77, columns: [] });
    add("negative Relation column count", patched(r.bytes, r.offsets["columns.count"]!, [0x80, 0x00]), {
      code: "INVALID_LENGTH", offset: r.offsets["columns.count"], messageKind: "Relation",
    }, []);
    const i = encode.insert({ relationId: 78, newTuple: [] });
    add("negative tuple column count (unknown relation)", patched(i.bytes, i.offsets["newTuple.count"]!, [0xff, 0xff]), {
      code: "INVALID_LENGTH", offset: i.offsets["newTuple.count"], messageKind: "Insert",
    }, []);
  }

  for (const f of fixtures()) {
    if (f.message.kind === "StreamAbort" && f.message.expected.abortLsn === null) continue; // 1..15 more bytes: cut-short v4 fields
    if (f.options !== undefined) continue;
    const b = f.message.bytes;
    const extra = new Uint8Array(b.length + 1);
    extra.set(b);
    add(`trailing byte after ${f.name}`, extra, { code: "TRAILING_BYTES", offset: b.length, messageKind: f.message.kind }, [...f.setup]);
  }
  {
    const a = encode.streamAbort({ xid: 1, subXid: 2 });
    const more = new Uint8Array(a.bytes.length + 17);
    more.set(a.bytes);
    add("17 bytes after a v2 Stream Abort", more, { code: "TRAILING_BYTES", offset: 25, messageKind: "StreamAbort" }, []);
  }

  for (const n of [3, 5, 0]) {
    const m = encode.insert({ relation: users, newTuple: Array.from({ length: n }, (_, i) => String(i)) });
    add(`Insert of ${n} columns into a relation of 4`, m.bytes, {
      code: "COLUMN_COUNT_MISMATCH", offset: m.offsets["newTuple.count"], messageKind: "Insert",
    });
  }
  {
    const u = encode.update({ relation: users, oldTupleType: "K", oldTuple: ["1", null, null], newTuple: ["1", null, null, null] });
    add("Update with an old key of 3 columns", u.bytes, { code: "COLUMN_COUNT_MISMATCH", offset: u.offsets["oldTuple.count"], messageKind: "Update" });
    const u2 = encode.update({ relation: users, oldTupleType: "O", oldTuple: ["1", null, null, null], newTuple: ["1", null, null, null, null] });
    add("Update with a new row of 5 columns", u2.bytes, { code: "COLUMN_COUNT_MISMATCH", offset: u2.offsets["newTuple.count"], messageKind: "Update" });
    const d = encode.delete({ relation: users, oldTupleType: "O", oldTuple: ["1"] });
    add("Delete with an old row of 1 column", d.bytes, { code: "COLUMN_COUNT_MISMATCH", offset: d.offsets["oldTuple.count"], messageKind: "Delete" });
  }

  {
    const u = encode.update({ relation: users, newTuple: ["1", null, null, null] });
    for (const c of [0x58, 0x6e, 0x00, 0x6b]) {
      add(`Update submessage 0x${c.toString(16)}`, withByte(u.bytes, u.offsets.newTuple!, c), {
        code: "INVALID_VALUE", offset: u.offsets.newTuple, messageKind: "Update",
      });
    }
    const uk = encode.update({ relation: users, oldTupleType: "K", oldTuple: ["1", null, null, null], newTuple: ["1", null, null, null] });
    add("Update K followed by K instead of N", withByte(uk.bytes, uk.offsets.newTuple!, 0x4b), {
      code: "INVALID_VALUE", offset: uk.offsets.newTuple, messageKind: "Update",
    });
    add("Insert with K instead of N", withByte(goodInsert.bytes, goodInsert.offsets.newTuple!, 0x4b), {
      code: "INVALID_VALUE", offset: goodInsert.offsets.newTuple, messageKind: "Insert",
    });
    const d = encode.delete({ relation: users, oldTupleType: "K", oldTuple: ["1", null, null, null] });
    add("Delete with N instead of K/O", withByte(d.bytes, d.offsets.oldTuple!, 0x4e), {
      code: "INVALID_VALUE", offset: d.offsets.oldTuple, messageKind: "Delete",
    });
    const r = encode.relation({ ...users, relationId: 99 });
    add("Relation with replica identity x", withByte(r.bytes, r.offsets.replicaIdentity!, 0x78), {
      code: "INVALID_VALUE", offset: r.offsets.replicaIdentity, messageKind: "Relation",
    }, []);
  }
  return list;
}

describe(backend.name, () => {
  describe("decode(): offsets within the message", () => {
    for (const c of badCases()) {
      it(c.name, async () => {
        const d = await backend.create();
        for (const s of c.setup) d.decode(s.bytes);
        const e = errorOf(() => d.decode(c.bytes));
        expectError(e, c.want, c.name);
        expect(e.messageIndex, "decode() is no batch: no messageIndex").toBeUndefined();
        // the decoder works on the next input
        if (c.setup.includes(R) && !c.setup.some((s) => s.kind === "StreamStart")) {
          expect(d.decode(goodInsert.bytes).materialize()).toEqual(goodInsert.expected);
        } else {
          expect(d.decode(encode.streamStop().bytes).materialize()).toEqual({ kind: "StreamStop" });
        }
      });
    }
  });

  describe("decodeBatch/decodeFramed/push: index, absolute offset, earlier messages applied", () => {
    for (const c of badCases()) {
      it(c.name, async () => {
        const d = await backend.create();
        // a Begin, the setup messages, then the bad message, then a good one that must not be reached
        const before = [encode.begin({ finalLsn: 1n, commitTime: 2n, xid: 3 }), ...c.setup];
        const list = [...before.map((m) => m.bytes), c.bytes, encode.commit({ commitLsn: 1n, endLsn: 2n, commitTime: 3n }).bytes];
        const index = before.length;
        const absolute = { ...c.want, messageIndex: index, offset: c.want.offset! + framedOffset(list, index) };
        const check = (what: string, run: () => unknown) => {
          d.reset();
          expectError(errorOf(run), absolute, `${what}: ${c.name}`);
          if (c.setup.includes(R)) expect(d.relations.has(users.relationId), `${what}: the Relation before the fault was applied`).toBe(true);
          if (c.setup.some((s) => s.kind === "StreamStart")) expect(d.inStream, `${what}: the Stream Start before the fault was applied`).toBe(true);
          d.inStream = false;
          if (c.setup.includes(R)) expect(d.decode(goodInsert.bytes).materialize()).toEqual(goodInsert.expected);
        };
        check("decodeBatch", () => d.decodeBatch(list));
        check("decodeFramed", () => d.decodeFramed(frame(list)));
        check("push", () => d.push(frame(list)));
      });
    }
  });

  it("after a failed push, the next push starts a new stream (nothing after the fault is kept)", async () => {
    const d = await backend.create();
    const bad = withByte(goodInsert.bytes, goodInsert.offsets.newTuple!, 0x4b);
    const after = encode.commit({ commitLsn: 1n, endLsn: 2n, commitTime: 3n });
    const framed = frame([R, bad, after, goodInsert]);
    expectError(errorOf(() => d.push(framed)), { code: "INVALID_VALUE", messageIndex: 1 });
    expect(d.push(frame([goodInsert])).materialize()).toEqual([goodInsert.expected]);
    // the fault in the second of two chunks, with a partial frame after it
    d.reset();
    const cut = framedOffset([R, bad, after], 2) + 3;
    expect(d.push(framed.subarray(0, 10)).length).toBe(0);
    expect(errorOf(() => d.push(framed.subarray(10, cut))).code).toBe("INVALID_VALUE");
    expect(() => d.end()).not.toThrow();
    expect(d.push(frame([R, goodInsert])).materialize()).toEqual([R.expected, goodInsert.expected]);
  });

  it("the failing message itself is not applied", async () => {
    const d = await backend.create();
    const other = encode.relation({ ...users, relationName: "other", columns: users.columns.slice(0, 2) });
    const bad = withByte(other.bytes, other.offsets.replicaIdentity!, 0x3f);
    const e = errorOf(() => d.decodeBatch([R.bytes, bad]));
    expectError(e, { code: "INVALID_VALUE", messageIndex: 1, offset: framedOffset([R.bytes, bad], 1) + other.offsets.replicaIdentity! });
    expect(d.relations.get(users.relationId)?.name).toBe("users");
    expect(d.relations.get(users.relationId)?.columnCount).toBe(4);
    expect(d.decode(goodInsert.bytes).materialize()).toEqual(goodInsert.expected);
  });

  it("a relation defined earlier in the same batch is the one tuples are checked against", async () => {
    const d = await backend.create();
    const v2 = { ...users, relationName: "users2", columns: users.columns.slice(0, 2) };
    const r2 = encode.relation(v2);
    const ok4 = goodInsert;
    const ok2 = encode.insert({ relation: v2, newTuple: ["1", "b"] });
    const list = [R, ok4, r2, ok2, r2, ok2];
    expect(d.decodeBatch(list.map((m) => m.bytes)).materialize()).toEqual(list.map((m) => m.expected));
    d.reset();
    expect(d.decodeFramed(frame(list)).materialize()).toEqual(list.map((m) => m.expected));
    d.reset();
    const wrong = [R, r2, ok4];
    const e = errorOf(() => d.decodeFramed(frame(wrong)));
    expectError(e, { code: "COLUMN_COUNT_MISMATCH", messageIndex: 2, offset: framedOffset(wrong, 2) + ok4.offsets["newTuple.count"]! });
    expect(d.relations.get(users.relationId)?.name).toBe("users2");
    d.reset();
    const e2 = errorOf(() => d.decodeBatch([r2.bytes, ok2.bytes, R.bytes, ok2.bytes]));
    expectError(e2, { code: "COLUMN_COUNT_MISMATCH", messageIndex: 3, offset: framedOffset([r2, ok2, R], 3) + ok2.offsets["newTuple.count"]! });
  });

  it("the first fault of a batch wins", async () => {
    const d = await backend.create();
    const bad1 = new Uint8Array([0x58]);
    const bad2 = withByte(goodInsert.bytes, goodInsert.offsets.newTuple!, 0x4b);
    expectError(errorOf(() => d.decodeBatch([R.bytes, bad1, bad2])), { code: "UNKNOWN_MESSAGE", messageIndex: 1, offset: framedOffset([R, bad1], 1) });
  });

  describe("maxMessageSize", () => {
    // Insert of one text column into an unknown relation: 13 bytes + the value.
    const sized = (n: number) => encode.insert({ relationId: 1, newTuple: ["v".repeat(n - 13)] });
    const fits = sized(64);
    const big = sized(65);

    it("accepts a message of exactly the limit", async () => {
      const d = await backend.create({ maxMessageSize: 64 });
      expect(fits.bytes.length).toBe(64);
      expect(d.decode(fits.bytes).materialize()).toEqual(fits.expected);
      expect(d.decodeBatch([fits.bytes]).materialize()).toEqual([fits.expected]);
      expect(d.decodeFramed(frame([fits])).materialize()).toEqual([fits.expected]);
      expect(d.push(frame([fits])).materialize()).toEqual([fits.expected]);
    });

    it("rejects a larger one with MESSAGE_TOO_LARGE", async () => {
      const d = await backend.create({ maxMessageSize: 64 });
      expect(big.bytes.length).toBe(65);
      expectError(errorOf(() => d.decode(big.bytes)), { code: "MESSAGE_TOO_LARGE" });
      const list = [fits, big];
      const header = framedOffset(list, 1) - 4;
      expectError(errorOf(() => d.decodeBatch(list.map((m) => m.bytes))), { code: "MESSAGE_TOO_LARGE", messageIndex: 1, offset: header });
      expectError(errorOf(() => d.decodeFramed(frame(list))), { code: "MESSAGE_TOO_LARGE", messageIndex: 1, offset: header });
      d.reset();
      expectError(errorOf(() => d.push(frame(list))), { code: "MESSAGE_TOO_LARGE", messageIndex: 1, offset: header });
      expect(d.decode(fits.bytes).materialize()).toEqual(fits.expected);
    });

    it("rejects an oversized frame from its length header alone", async () => {
      const d = await backend.create({ maxMessageSize: 1024 });
      const header = new Uint8Array([0x7f, 0xff, 0xff, 0xff, 0x42]);
      expectError(errorOf(() => d.push(header)), { code: "MESSAGE_TOO_LARGE", offset: 0 });
      d.reset();
      expectError(errorOf(() => d.decodeFramed(header)), { code: "MESSAGE_TOO_LARGE", offset: 0 });
      const two = new Uint8Array([...frame([fits]), 0xff, 0xff, 0xff, 0xff]);
      d.reset();
      expectError(errorOf(() => d.decodeFramed(two)), { code: "MESSAGE_TOO_LARGE", offset: 68, messageIndex: 1 });
      d.reset();
      expect(d.push(frame([fits])).materialize()).toEqual([fits.expected]);
    });
  });

  it("a frame of length 0 is an incomplete message at the offset of its tag", async () => {
    const d = await backend.create();
    const stop = encode.streamStop();
    const bytes = new Uint8Array([...frame([stop]), 0, 0, 0, 0]);
    expectError(errorOf(() => d.decodeFramed(bytes)), { code: "INCOMPLETE", offset: 4 + stop.bytes.length + 4, messageIndex: 1, field: /^tag$/ });
  });

  it("isPgoutputError tells the decoder's errors from others", async () => {
    const d = await backend.create();
    let caught: unknown;
    try {
      d.decode(new Uint8Array([0x58]));
    } catch (e) {
      caught = e;
    }
    expect(isPgoutputError(caught)).toBe(true);
    expect(caught).toBeInstanceOf(PgoutputError);
    expect(caught).toBeInstanceOf(Error);
    expect((caught as Error).name).toBe("PgoutputError");
    for (const other of [new Error("x"), new RangeError("y"), null, undefined, "UNKNOWN_MESSAGE", { code: "UNKNOWN_MESSAGE" }]) {
      expect(isPgoutputError(other)).toBe(false);
    }
  });

  it("errors name their message kind and field", async () => {
    const d = await backend.create();
    d.decode(R.bytes);
    const m = encode.insert({ relation: users, newTuple: ["1", "a", null, { raw: [0x21] }] });
    const e = errorOf(() => d.decode(m.bytes));
    expect(e.messageKind).toBe("Insert");
    expect(e.field).toMatch(/^newTuple\.column\[3\]/);
    expect(e.message).toContain("Insert");
    const u = errorOf(() => d.decode(new Uint8Array([0x21, 1, 2])));
    expect(u.messageKind).toBeUndefined();
  });

  it("incomplete errors are flagged, others are not", async () => {
    const d: PgoutputDecoder = await backend.create();
    const cut = errorOf(() => d.decode(goodInsert.bytes.subarray(0, 10)));
    expect(cut.incomplete).toBe(true);
    expect(cut.code).toBe("INCOMPLETE");
    const wrong = errorOf(() => d.decode(new Uint8Array([0x58])));
    expect(wrong.incomplete).toBe(false);
  });
});

describe("the messages decoded before a batch's error", () => {
  it(`come with the error (${backend.name})`, async () => {
    const d = await backend.create();
    const begin = encode.begin({ finalLsn: 1n, commitTime: 2n, xid: 3 });
    const commit = encode.commit({ flags: 0, commitLsn: 1n, endLsn: 2n, commitTime: 3n });
    const bad = new Uint8Array([0x5a, 1, 2]);
    for (const call of [
      () => d.decodeBatch([begin.bytes, commit.bytes, bad]),
      () => d.decodeFramed(frame([begin.bytes, commit.bytes, bad])),
      () => d.push(frame([begin.bytes, commit.bytes, bad])),
    ]) {
      let caught: unknown;
      try {
        call();
      } catch (e) {
        caught = e;
      }
      expect(isPgoutputError(caught)).toBe(true);
      const e = caught as PgoutputError;
      expect(e.code).toBe("UNKNOWN_MESSAGE");
      expect(e.decoded.map((m) => m.materialize())).toEqual([begin.expected, commit.expected]);
    }
    // decode() of one message has nothing before it.
    let single: PgoutputError | undefined;
    try {
      d.decode(bad);
    } catch (e) {
      single = e as PgoutputError;
    }
    expect(single?.decoded).toEqual([]);
  });
});
