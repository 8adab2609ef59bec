/**
 * The conformance suite every backend must pass: each message kind decodes to
 * the value the encoder expects, alike through decode(), decodeBatch(),
 * decodeFramed() and push() split anywhere; edge values; the streamed-xid
 * state; the relation cache; tuple access; LSN and time helpers; stale views;
 * JSON forms.
 */
import { describe, expect, it } from "vitest";
import { backend, onceAcrossBackends } from "./support/backends.ts";
import {
  deepEqual, encode, FIXTURE_PNG, fixtureOpening, fixtureRelations, fixtures, frame, framedOffset, hex, LSN_2_63, MAX_LSN, MAX_U32, UNCHANGED,
  type Encoded, type Fixture, type RelationDesc,
} from "../devkit/encoder/encoder.ts";
import { Random, randomSplits, randomStream } from "../devkit/fuzz/random.ts";
import type { Batch, PgoutputDecoder } from "../bindings/decoder.ts";
import type { Insert, PgoutputMessage, RelationMessage, Truncate, Update } from "../bindings/messages.ts";
import { isPgoutputError, type PgoutputErrorCode } from "../bindings/errors.ts";
import { unchangedToast } from "../bindings/tuple.ts";
import { compareLsn, formatLsn, INVALID_LSN, lsnFromHalves, parseLsn } from "../bindings/lsn.ts";
import {
  fromPostgresTimestamp, POSTGRES_EPOCH_US, timestampToDate, timestampToISO, toPostgresTimestamp,
} from "../bindings/time.ts";

/** toEqual, with a fast check first (big arrays of messages). */
function expectSame(got: unknown, want: unknown, label?: string): void {
  if (!deepEqual(got, want)) expect(got, label).toEqual(want);
}

const utf8 = new TextEncoder();

/** Runs fn and returns the PgoutputError it throws (fails when it returns or throws anything else). */
function errorOf(fn: () => unknown, what = String(fn)): import("../bindings/errors.ts").PgoutputError {
  let result: unknown;
  try {
    result = fn();
  } catch (e) {
    if (isPgoutputError(e)) return e;
    throw new Error(`${what}: expected a PgoutputError, got ${String(e)}`, { cause: e });
  }
  throw new Error(`${what}: expected a PgoutputError, but it returned ${describeValue(result)}`);
}

function expectCode(fn: () => unknown, code: PgoutputErrorCode): void {
  expect(errorOf(fn).code).toBe(code);
}

function describeValue(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? `${x}n` : x));
  } catch {
    return String(v);
  }
}

/** Decodes a fixture's setup on a reset decoder, then its message. */
function decodeFixture(d: PgoutputDecoder, f: Fixture): PgoutputMessage {
  d.reset();
  for (const s of f.setup) d.decode(s.bytes);
  return d.decode(f.message.bytes, f.options);
}

function materializeAll(b: Batch): Record<string, unknown>[] {
  return b.materialize();
}

/** Pushes chunks split at `cuts`, collecting every message materialized. */
function pushSplit(d: PgoutputDecoder, bytes: Uint8Array, cuts: readonly number[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let p = 0;
  for (const c of [...cuts, bytes.length]) {
    const b = d.push(bytes.subarray(p, c));
    for (let i = 0; i < b.length; i++) out.push(b.get(i).materialize());
    p = c;
  }
  d.end();
  return out;
}

// An independent JSON form of an expected value (messageToJSON's rules, re-derived).
function lsnText(v: bigint): string {
  return `${(v >> 32n).toString(16).toUpperCase()}/${(v & 0xffffffffn).toString(16).toUpperCase()}`;
}
function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64");
}
function expectedJSON(e: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (typeof v === "bigint") out[k] = k.endsWith("Lsn") || k === "lsn" ? lsnText(v) : v.toString();
    else if (v instanceof Uint8Array) out[k] = b64(v);
    else if ((k === "newTuple" || k === "oldTuple") && v !== null) {
      out[k] = (v as { kind: string; text?: string; bytes?: Uint8Array }[]).map((c) =>
        c.kind === "null" ? null : c.kind === "binary" ? { kind: "binary", base64: b64(c.bytes!) } : c,
      );
    } else out[k] = v;
  }
  return out;
}

/** A small valid stream with every message kind, in a realistic order. */
function smallStream(): Encoded[] {
  const { users, wide, empty } = fixtureRelations;
  const png = FIXTURE_PNG;
  const X = 2 ** 31 + 9;
  return [
    ...fixtureOpening(),
    encode.insert({ relation: empty, newTuple: [] }),
    encode.truncate({ options: 1, relationIds: [users.relationId, empty.relationId] }),
    encode.message({ transactional: true, lsn: 0x1001n, prefix: "app", content: "payload" }),
    encode.commit({ commitLsn: 0x1000n, endLsn: 0x1010n, commitTime: 1_700_000_000_000_002n }),
    encode.message({ transactional: false, lsn: MAX_LSN, prefix: "", content: png }),
    encode.streamStart({ xid: X, firstSegment: true }),
    encode.relation({ ...wide, xid: X }),
    encode.insert({ xid: X, relation: wide, newTuple: ["東京", null] }),
    encode.update({ xid: X, relation: wide, oldTupleType: "O", oldTuple: ["東京", null], newTuple: ["x", UNCHANGED] }),
    encode.delete({ xid: X, relation: wide, oldTupleType: "O", oldTuple: ["x", "y"] }),
    encode.truncate({ xid: X, options: 2, relationIds: [wide.relationId] }),
    encode.message({ xid: X, transactional: true, lsn: 1n, prefix: "p", content: "" }),
    encode.type({ xid: X, typeId: MAX_U32, namespace: "", typeName: "t😀" }),
    encode.streamStop(),
    encode.insert({ relation: users, newTuple: ["3", "outside", null, null] }),
    encode.streamStart({ xid: X, firstSegment: false }),
    encode.insert({ xid: X, relation: users, newTuple: ["4", "inside", null, null] }),
    encode.streamStop(),
    encode.streamCommit({ xid: X, commitLsn: LSN_2_63, endLsn: MAX_LSN, commitTime: -1n }),
    encode.streamStart({ xid: 5, firstSegment: true }),
    encode.streamStop(),
    encode.streamAbort({ xid: 5, subXid: 6 }),
    encode.streamAbort({ xid: 5, subXid: 5, abortLsn: 0x55n, abortTime: 1_000_000n }),
    encode.beginPrepare({ prepareLsn: 0x2000n, endLsn: 0x2010n, prepareTime: 1n, xid: 701, gid: "g1" }),
    encode.insert({ relation: users, newTuple: ["5", "prep", null, null] }),
    encode.prepare({ prepareLsn: 0x2000n, endLsn: 0x2010n, prepareTime: 1n, xid: 701, gid: "g1" }),
    encode.commitPrepared({ commitLsn: 0x3000n, endLsn: 0x3010n, commitTime: 2n, xid: 701, gid: "g1" }),
    encode.rollbackPrepared({ prepareEndLsn: 1n, rollbackEndLsn: 2n, prepareTime: 3n, rollbackTime: 4n, xid: 702, gid: "g2" }),
    encode.streamStart({ xid: 9, firstSegment: true }),
    encode.streamStop(),
    encode.streamPrepare({ prepareLsn: 7n, endLsn: 8n, prepareTime: 9n, xid: 9, gid: "g3" }),
  ];
}

const SMALL = smallStream();
const SMALL_FRAMED = frame(SMALL);
const SMALL_EXPECTED = SMALL.map((m) => m.expected);
const RANDOM_SEED = 20240607;
const RANDOM = randomStream(RANDOM_SEED, { messages: 1500 });
const RANDOM_FRAMED = frame(RANDOM);
const RANDOM_EXPECTED = RANDOM.map((m) => m.expected);

if (onceAcrossBackends) describe("test support", () => {
  it("the small stream covers every message kind", () => {
    const kinds = new Set(SMALL.map((m) => m.kind));
    expect(kinds.size).toBe(19);
  });
  it("the random stream covers every message kind", () => {
    expect(new Set(RANDOM.map((m) => m.kind)).size).toBe(19);
  });
  it("the fixtures cover every message kind", () => {
    expect(new Set(fixtures().map((f) => f.message.kind)).size).toBe(19);
  });
  it("frame() writes [uint32 BE length][message]", () => {
    const e = encode.streamStop();
    expect([...frame([e, e.bytes])]).toEqual([0, 0, 0, 1, 0x45, 0, 0, 0, 1, 0x45]);
    expect(framedOffset([e, e], 1)).toBe(9);
  });
  it("encodes a Begin as the protocol says", () => {
    const e = encode.begin({ finalLsn: 0x0102030405060708n, commitTime: 946_684_800_000_001n, xid: 0xfffffffe });
    expect(hex(e.bytes)).toBe("42 01 02 03 04 05 06 07 08 00 00 00 00 00 00 00 01 ff ff ff fe");
    expect(e.expected).toEqual({ kind: "Begin", finalLsn: 0x0102030405060708n, commitTime: 946_684_800_000_001n, xid: 0xfffffffe });
  });
});

if (onceAcrossBackends) describe("LSN helpers", () => {
  it("round-trips through formatLsn/parseLsn, including the extremes", () => {
    const values = [0n, 1n, 0x17864c0n, 0xffffffffn, 0x1_0000_0000n, 0x16_b374d848n, LSN_2_63 - 1n, LSN_2_63, MAX_LSN - 1n, MAX_LSN];
    for (const v of values) {
      expect(parseLsn(formatLsn(v))).toBe(v);
      expect(formatLsn(v)).toBe(lsnText(v));
    }
    expect(formatLsn(MAX_LSN)).toBe("FFFFFFFF/FFFFFFFF");
    expect(parseLsn("FFFFFFFF/FFFFFFFF")).toBe(MAX_LSN);
    expect(formatLsn(0x17864c0n)).toBe("0/17864C0");
    expect(formatLsn(LSN_2_63)).toBe("80000000/0");
    expect(formatLsn(INVALID_LSN)).toBe("0/0");
    expect(parseLsn("16/b374d848")).toBe(0x16_b374d848n);
    expect(parseLsn("00000016/0B374D848".slice(0, 17))).toBe(0x16_0b374d84n);
  });
  it("lsnFromHalves: the LSN of two 32-bit halves, on both sides of 2^53", () => {
    const values = [0n, 1n, 0xffffffffn, 0x1_0000_0000n, (1n << 53n) - 1n, 1n << 53n, (1n << 53n) + 1n, LSN_2_63 - 1n, LSN_2_63, MAX_LSN - 1n, MAX_LSN];
    for (const v of values) expect(lsnFromHalves(Number(v >> 32n), Number(v & 0xffff_ffffn)), formatLsn(v)).toBe(v);
  });
  it("rejects what is no LSN", () => {
    for (const s of ["", "0", "/0", "0/", "1/2/3", "G/0", "123456789/0", "0/123456789", " 0/0", "0/0 ", "-1/0"]) {
      expect(() => parseLsn(s), s).toThrow(SyntaxError);
    }
    expect(() => formatLsn(-1n)).toThrow(RangeError);
    expect(() => formatLsn(MAX_LSN + 1n)).toThrow(RangeError);
  });
  it("orders LSNs as unsigned 64-bit values, bigint or text", () => {
    expect(compareLsn(0n, MAX_LSN)).toBe(-1);
    expect(compareLsn(MAX_LSN, LSN_2_63)).toBe(1);
    expect(compareLsn("FFFFFFFF/FFFFFFFF", MAX_LSN)).toBe(0);
    expect(compareLsn("0/10", "0/F")).toBe(1);
    expect(compareLsn("1/0", "0/FFFFFFFF")).toBe(1);
    expect(compareLsn(LSN_2_63, "7FFFFFFF/FFFFFFFF")).toBe(1);
  });
});

if (onceAcrossBackends) describe("time helpers", () => {
  it("keeps six fractional digits", () => {
    expect(timestampToISO(1_700_000_000_123_456n)).toBe("2023-11-14T22:13:20.123456Z");
    expect(timestampToISO(0n)).toBe("1970-01-01T00:00:00.000000Z");
    expect(timestampToISO(1n)).toBe("1970-01-01T00:00:00.000001Z");
    expect(timestampToISO(POSTGRES_EPOCH_US)).toBe("2000-01-01T00:00:00.000000Z");
  });
  it("handles negative (pre-1970) and pre-2000 timestamps", () => {
    expect(timestampToISO(-1n)).toBe("1969-12-31T23:59:59.999999Z");
    expect(timestampToISO(-1_000_000n)).toBe("1969-12-31T23:59:59.000000Z");
    expect(timestampToISO(-1_000_001n)).toBe("1969-12-31T23:59:58.999999Z");
    expect(timestampToISO(POSTGRES_EPOCH_US - 1n)).toBe("1999-12-31T23:59:59.999999Z");
    expect(timestampToISO(-2_208_988_800_000_000n + 500_000n)).toBe("1900-01-01T00:00:00.500000Z");
  });
  it("converts to and from the wire's 2000-based form, keeping ±infinity", () => {
    expect(toPostgresTimestamp(POSTGRES_EPOCH_US)).toBe(0n);
    expect(fromPostgresTimestamp(-1n)).toBe(POSTGRES_EPOCH_US - 1n);
    for (const v of [0n, -1n, 1_700_000_000_123_456n, -62_135_596_800_000_000n]) {
      expect(fromPostgresTimestamp(toPostgresTimestamp(v))).toBe(v);
    }
    expect(fromPostgresTimestamp(-(2n ** 63n))).toBe(-(2n ** 63n));
    expect(fromPostgresTimestamp(2n ** 63n - 1n)).toBe(2n ** 63n - 1n);
  });
  it("gives a Date truncated toward -infinity", () => {
    expect(timestampToDate(1_700_000_000_123_456n).getTime()).toBe(1_700_000_000_123);
    expect(timestampToDate(-1n).getTime()).toBe(-1);
    expect(timestampToDate(-1000n).getTime()).toBe(-1);
    expect(timestampToDate(-1001n).getTime()).toBe(-2);
  });
});

describe(backend.name, () => {
  let decoder: PgoutputDecoder;
  const fresh = async (): Promise<PgoutputDecoder> => (decoder = await backend.create());

  it("reports its backend name", async () => {
    expect((await fresh()).backend).toBe(backend.name);
  });

  describe("each message kind via decode()", () => {
    for (const f of fixtures()) {
      it(f.name, async () => {
        const d = await fresh();
        const msg = decodeFixture(d, f);
        expect(msg.kind).toBe(f.message.kind);
        expect(msg.materialize()).toEqual(f.message.expected);
        expect(msg.bytes()).toEqual(f.message.bytes);
        const json = msg.toJSON();
        const text = JSON.stringify(json); // must not throw on bigint
        expect(JSON.parse(text)).toEqual(expectedJSON(f.message.expected));
      });
    }
  });

  describe("each message kind via decodeBatch, decodeFramed and push", () => {
    for (const f of fixtures()) {
      it(f.name, async () => {
        const d = await fresh();
        const list = f.options?.inStream === undefined ? [...f.setup, f.message] : [f.message];
        const prepare = (): void => {
          d.reset();
          if (f.options?.inStream !== undefined) {
            for (const s of f.setup) d.decode(s.bytes);
            d.inStream = f.options.inStream;
          }
        };
        const expected = list.map((m) => m.expected);
        prepare();
        const batch = d.decodeBatch(list.map((m) => m.bytes));
        expect(batch.length).toBe(list.length);
        expect(materializeAll(batch)).toEqual(expected);
        prepare();
        const framed = frame(list);
        const fb = d.decodeFramed(framed);
        expect(fb.consumed).toBe(framed.length);
        expect(materializeAll(fb)).toEqual(expected);
        for (let cut = 0; cut <= framed.length; cut++) {
          prepare();
          expectSame(pushSplit(d, framed, [cut]), expected, `push split at ${cut}`);
        }
      });
    }
  });

  describe("a stream of every kind", () => {
    it("decode() one at a time", async () => {
      const d = await fresh();
      expect(SMALL.map((m) => d.decode(m.bytes).materialize())).toEqual(SMALL_EXPECTED);
    });
    it("decodeBatch", async () => {
      const d = await fresh();
      const b = d.decodeBatch(SMALL.map((m) => m.bytes));
      expect(b.length).toBe(SMALL.length);
      expect(b.materialize()).toEqual(SMALL_EXPECTED);
      expect(Array.from({ length: b.length }, (_, i) => b.kind(i))).toEqual(SMALL.map((m) => m.kind));
      expect(Array.from({ length: b.length }, (_, i) => b.get(i).materialize())).toEqual(SMALL_EXPECTED);
      expect([...b].map((m) => m.materialize())).toEqual(SMALL_EXPECTED);
      expect([...b].map((m) => m.bytes())).toEqual(SMALL.map((m) => m.bytes));
    });
    it("decodeFramed, whole and with an incomplete last frame", async () => {
      const d = await fresh();
      const b = d.decodeFramed(SMALL_FRAMED);
      expect(b.consumed).toBe(SMALL_FRAMED.length);
      expect(b.materialize()).toEqual(SMALL_EXPECTED);
      expect([...b].map((m) => m.materialize())).toEqual(SMALL_EXPECTED);
      d.reset();
      const frame10 = framedOffset(SMALL, 10) - 4; // where frame 10's length header starts
      for (const cut of [frame10 + 3, frame10 + 4, frame10 + 5]) {
        d.reset();
        const part = d.decodeFramed(SMALL_FRAMED.subarray(0, cut));
        expect(part.length).toBe(10);
        expect(part.consumed).toBe(frame10);
        expect(part.materialize()).toEqual(SMALL_EXPECTED.slice(0, 10));
      }
    });
    it("push() split at every position", async () => {
      const d = await fresh();
      for (let cut = 0; cut <= SMALL_FRAMED.length; cut++) {
        d.reset();
        expectSame(pushSplit(d, SMALL_FRAMED, [cut]), SMALL_EXPECTED, `split at ${cut}`);
      }
    });
    it("push() one byte at a time", async () => {
      const d = await fresh();
      const cuts = Array.from({ length: SMALL_FRAMED.length - 1 }, (_, i) => i + 1);
      expect(pushSplit(d, SMALL_FRAMED, cuts)).toEqual(SMALL_EXPECTED);
    });
    it("push() batches report consumed and leave no partial frame at the end", async () => {
      const d = await fresh();
      const b = d.push(SMALL_FRAMED);
      expect(b.length).toBe(SMALL.length);
      expect(() => d.end()).not.toThrow();
    });
  });

  describe(`a random stream (seed ${RANDOM_SEED}, ${RANDOM.length} messages)`, () => {
    it("decode() one at a time", async () => {
      const d = await fresh();
      for (let i = 0; i < RANDOM.length; i++) {
        const got = d.decode(RANDOM[i]!.bytes).materialize();
        if (!deepEqual(got, RANDOM_EXPECTED[i])) {
          expect(got, `message ${i}: ${hex(RANDOM[i]!.bytes)}`).toEqual(RANDOM_EXPECTED[i]);
        }
      }
    });
    it("decodeBatch", async () => {
      const d = await fresh();
      expectSame(d.decodeBatch(RANDOM.map((m) => m.bytes)).materialize(), RANDOM_EXPECTED);
    });
    it("decodeFramed", async () => {
      const d = await fresh();
      const b = d.decodeFramed(RANDOM_FRAMED);
      expect(b.consumed).toBe(RANDOM_FRAMED.length);
      expectSame(b.materialize(), RANDOM_EXPECTED);
    });
    it("push() with random splits", async () => {
      const d = await fresh();
      const r = new Random(RANDOM_SEED);
      for (let round = 0; round < 3; round++) {
        d.reset();
        const cuts = randomSplits(r, RANDOM_FRAMED.length);
        expectSame(pushSplit(d, RANDOM_FRAMED, cuts), RANDOM_EXPECTED, `round ${round}`);
      }
    });
  });

  describe("edge values", () => {
    it("a relation and a row of 1,600 columns", async () => {
      const d = await fresh();
      const rel: RelationDesc = {
        relationId: 2 ** 32 - 2, namespace: "public", relationName: "wide",
        columns: Array.from({ length: 1600 }, (_, i) => ({ name: `column_${i}`, typeId: i % 2 ? 25 : 17, isKey: i === 0 })),
      };
      const r = encode.relation(rel);
      const values = rel.columns.map((_, i) => (i % 7 === 0 ? null : i % 2 ? `v${i}` : new Uint8Array([i & 255, i >> 8])));
      const ins = encode.insert({ relation: rel, newTuple: values });
      expect(d.decode(r.bytes).materialize()).toEqual(r.expected);
      const m = d.decode(ins.bytes) as Insert;
      expect(m.materialize()).toEqual(ins.expected);
      expect(m.newTuple.length).toBe(1600);
      expect(m.newTuple.text("column_1599")).toBe("v1599");
      expect(m.newTuple.kind(1598)).toBe("binary");
      d.reset();
      expect(d.decodeFramed(frame([r, ins])).materialize()).toEqual([r.expected, ins.expected]);
      d.reset();
      expect(pushSplit(d, frame([r, ins]), [7, 1000, 9000])).toEqual([r.expected, ins.expected]);
    });

    it("a 16 MB text value", async () => {
      const d = await fresh();
      const rel = { relationId: 5, namespace: "public", relationName: "big", columns: [{ name: "doc", typeId: 25 }, { name: "n", typeId: 23 }] };
      const value = "😀" + "x".repeat(16 * 1024 * 1024 - 8) + "é東";
      const ins = encode.insert({ relation: rel, newTuple: [value, "1"] });
      d.decode(encode.relation(rel).bytes);
      const m = d.decode(ins.bytes) as Insert;
      expect(m.newTuple.byteLength(0)).toBe(utf8.encode(value).length);
      expect(m.newTuple.text(0) === value).toBe(true);
      expect(m.newTuple.text("n")).toBe("1");
      const mat = m.materialize();
      expect((mat.newTuple as { text: string }[])[0]!.text === value).toBe(true);
      const framed = frame([ins]);
      const fb = d.decodeFramed(framed);
      expect(fb.length).toBe(1);
      expect((fb.get(0) as Insert).newTuple.text(0) === value).toBe(true);
      const mib = 1 << 20;
      const cuts = Array.from({ length: Math.floor(framed.length / mib) }, (_, i) => (i + 1) * mib - 3);
      let got: string | undefined;
      let p = 0;
      for (const c of [...cuts, framed.length]) {
        const b = d.push(framed.subarray(p, c));
        if (b.length > 0) got = (b.get(0) as Insert).newTuple.text(0) as string;
        p = c;
      }
      expect(got === value).toBe(true);
    });

    it("LSNs, xids, OIDs and times survive exactly", async () => {
      const d = await fresh();
      const b = d.decode(encode.begin({ finalLsn: MAX_LSN, commitTime: -2_208_988_800_000_001n, xid: MAX_U32 }).bytes);
      expect(b.kind === "Begin" && b.finalLsn).toBe(MAX_LSN);
      expect(b.kind === "Begin" && b.xid).toBe(MAX_U32);
      expect(b.kind === "Begin" && b.commitTime).toBe(-2_208_988_800_000_001n);
      expect(b.toJSON()).toEqual({ kind: "Begin", finalLsn: "FFFFFFFF/FFFFFFFF", commitTime: "-2208988800000001", xid: MAX_U32 });
      const c = d.decode(encode.commit({ commitLsn: LSN_2_63, endLsn: LSN_2_63 + 1n, commitTime: 946_684_799_999_999n }).bytes);
      expect(c.toJSON()).toEqual({
        kind: "Commit", flags: 0, commitLsn: "80000000/0", endLsn: "80000000/1", commitTime: "946684799999999",
      });
    });
  });

  describe("inputs", () => {
    it("reads only its view of a larger buffer (byteOffset, byteLength)", async () => {
      const d = await fresh();
      const junk = (n: number) => new Uint8Array(n).fill(0xee);
      for (const m of SMALL) {
        const buf = new Uint8Array([...junk(3), ...m.bytes, ...junk(29)]);
        expect(d.decode(buf.subarray(3, 3 + m.bytes.length)).materialize(), m.kind).toEqual(m.expected);
      }
      d.reset();
      const framed = new Uint8Array([...junk(5), ...SMALL_FRAMED, 0, 0]);
      const fb = d.decodeFramed(framed.subarray(5, 5 + SMALL_FRAMED.length));
      expect(fb.consumed).toBe(SMALL_FRAMED.length);
      expect(fb.materialize()).toEqual(SMALL_EXPECTED);
      d.reset();
      const big = new Uint8Array(SMALL_FRAMED.length + 100);
      big.set(SMALL_FRAMED, 7);
      const pushed = [
        ...d.push(big.subarray(7, 20)).materialize(),
        ...d.push(big.subarray(20, 7 + SMALL_FRAMED.length)).materialize(),
      ];
      expect(pushed).toEqual(SMALL_EXPECTED);
      d.reset();
      const parts = SMALL.map((m) => new Uint8Array([...junk(1), ...m.bytes, ...junk(1)]).subarray(1, 1 + m.bytes.length));
      expect(d.decodeBatch(parts).materialize()).toEqual(SMALL_EXPECTED);
    });

    it("accepts Node Buffers", async () => {
      const d = await fresh();
      for (const m of SMALL) expect(d.decode(Buffer.from(m.bytes)).materialize(), m.kind).toEqual(m.expected);
      // A Message's content is a copy, and a plain Uint8Array: not a view of the caller's Buffer.
      const bytes = new Uint8Array([0x61, 0xff, 0x62]);
      const input = Buffer.from(encode.message({ transactional: true, lsn: 1n, prefix: "p", content: bytes }).bytes);
      const mm = d.decode(input);
      const content = mm.kind === "Message" ? mm.content : undefined;
      input.fill(0);
      expect([content instanceof Uint8Array, Buffer.isBuffer(content)]).toEqual([true, false]);
      expect(content).toEqual(bytes);
      d.reset();
      expect(d.decodeFramed(Buffer.from(SMALL_FRAMED)).materialize()).toEqual(SMALL_EXPECTED);
      d.reset();
      expect(d.push(Buffer.from(SMALL_FRAMED)).materialize()).toEqual(SMALL_EXPECTED);
      d.reset();
      expect(d.decodeBatch(SMALL.map((m) => Buffer.from(m.bytes))).materialize()).toEqual(SMALL_EXPECTED);
    });

    it("batches of very many small messages", async () => {
      const d = await fresh();
      const { users } = fixtureRelations;
      const R = encode.relation(users);
      const ins = encode.insert({ relation: users, newTuple: ["1", null, UNCHANGED, "x"] });
      const list: Encoded[] = [R];
      for (let i = 0; i < 30_000; i++) list.push(i % 3 === 2 ? encode.streamStop() : ins);
      const framed = frame(list);
      const b = d.decodeFramed(framed);
      expect(b.length).toBe(list.length);
      expect(b.consumed).toBe(framed.length);
      expect(b.get(list.length - 2).materialize()).toEqual(ins.expected);
      expect(b.kind(list.length - 1)).toBe("StreamStop");
      let n = 0;
      for (const m of b) if (m.kind === "Insert") n++;
      expect(n).toBe(20_000);
      d.reset();
      const bb = d.decodeBatch(list.map((m) => m.bytes));
      expect(bb.length).toBe(list.length);
      expect((bb.get(list.length - 3) as Insert).newTuple.text(3)).toBe("x");
      d.reset();
      const pb = d.push(framed);
      expect(pb.length).toBe(list.length);
    });

    it("empty inputs give empty batches", async () => {
      const d = await fresh();
      const calls = [() => d.decodeBatch([]), () => d.decodeFramed(new Uint8Array(0)), () => d.push(new Uint8Array(0))];
      for (const call of calls) {
        const b = call(); // a batch is valid until the next call
        expect(b.length).toBe(0);
        expect(b.consumed).toBe(0);
        expect(b.materialize()).toEqual([]);
        expect([...b]).toEqual([]);
      }
      expect(() => d.end()).not.toThrow();
    });

    it("messages without an xid field decode the same inside a stream", async () => {
      const d = await fresh();
      const carriesXid = new Set(["Message", "Relation", "Type", "Insert", "Update", "Delete", "Truncate"]);
      for (const f of fixtures()) {
        if (carriesXid.has(f.message.kind)) continue;
        d.reset();
        for (const s of f.setup) d.decode(s.bytes);
        expect(d.decode(f.message.bytes, { inStream: true }).materialize(), f.name).toEqual(f.message.expected);
        d.reset();
        for (const s of f.setup) d.decode(s.bytes);
        d.inStream = true;
        expect(d.decodeBatch([f.message.bytes]).materialize(), f.name).toEqual([f.message.expected]);
      }
    });
  });

  describe("streamed transactions: the xid state", () => {
    const { users } = fixtureRelations;
    const R = encode.relation(users);
    const row = ["1", null, null, null];
    const plain = encode.insert({ relation: users, newTuple: row });
    const withXid = encode.insert({ xid: 77, relation: users, newTuple: row });

    it("changes inside S/E carry the xid, outside they don't", async () => {
      const d = await fresh();
      d.decode(R.bytes);
      expect(d.inStream).toBe(false);
      expect((d.decode(plain.bytes) as Insert).xid).toBeUndefined();
      expect(d.decode(plain.bytes).materialize()).not.toHaveProperty("xid");
      d.decode(encode.streamStart({ xid: 77, firstSegment: true }).bytes);
      expect(d.inStream).toBe(true);
      const m = d.decode(withXid.bytes) as Insert;
      expect(m.xid).toBe(77);
      expect(m.materialize()).toEqual(withXid.expected);
      d.decode(encode.streamStop().bytes);
      expect(d.inStream).toBe(false);
      expect(d.decode(plain.bytes).materialize()).toEqual(plain.expected);
      // Only Stream Start and Stop set the state: a Stream Commit after the block leaves it.
      d.decode(encode.streamCommit({ xid: 77, flags: 0, commitLsn: 1n, endLsn: 2n, commitTime: 3n }).bytes);
      expect(d.inStream).toBe(false);
      // A change without its xid inside a block: its relation OID is read as the xid, and what follows does not fit.
      d.inStream = true;
      const e = errorOf(() => d.decode(plain.bytes));
      expect([e.messageKind, e.incomplete]).toEqual(["Insert", false]);
    });

    it("decode(msg, { inStream }) overrides without changing the tracked state", async () => {
      const d = await fresh();
      d.decode(R.bytes);
      expect(d.decode(withXid.bytes, { inStream: true }).materialize()).toEqual(withXid.expected);
      expect(d.inStream).toBe(false);
      expect(d.decode(plain.bytes).materialize()).toEqual(plain.expected);
      d.decode(encode.streamStart({ xid: 77, firstSegment: false }).bytes);
      expect(d.decode(plain.bytes, { inStream: false }).materialize()).toEqual(plain.expected);
      expect(d.inStream).toBe(true);
      expect(d.decode(withXid.bytes).materialize()).toEqual(withXid.expected);
      // Stream Stop decoded with an override still ends the block (the message sets the state)
      d.decode(encode.streamStop().bytes, { inStream: true });
      expect(d.inStream).toBe(false);
    });

    it("the inStream setter", async () => {
      const d = await fresh();
      d.decode(R.bytes);
      d.inStream = true;
      expect(d.inStream).toBe(true);
      expect(d.decode(withXid.bytes).materialize()).toEqual(withXid.expected);
      expect(d.decodeBatch([withXid.bytes, withXid.bytes]).materialize()).toEqual([withXid.expected, withXid.expected]);
      expect(d.decodeFramed(frame([withXid])).materialize()).toEqual([withXid.expected]);
      expect(d.push(frame([withXid])).materialize()).toEqual([withXid.expected]);
      d.inStream = false;
      expect(d.decode(plain.bytes).materialize()).toEqual(plain.expected);
    });

    it("the state carries across batches and pushes", async () => {
      const d = await fresh();
      d.decodeBatch([R.bytes, encode.streamStart({ xid: 77, firstSegment: true }).bytes]);
      expect(d.inStream).toBe(true);
      expect(d.decodeFramed(frame([withXid, encode.streamStop()])).materialize()).toEqual([withXid.expected, { kind: "StreamStop" }]);
      expect(d.inStream).toBe(false);
      const framed = frame([encode.streamStart({ xid: 77, firstSegment: false }), withXid]);
      const first = d.push(framed.subarray(0, 10));
      expect(first.length).toBe(1);
      expect(d.inStream).toBe(true);
      expect(d.push(framed.subarray(10)).materialize()).toEqual([withXid.expected]);
    });

    it("reset() forgets the stream state, relations and types", async () => {
      const d = await fresh();
      d.decode(R.bytes);
      d.decode(encode.type({ typeId: 9999, namespace: "s", typeName: "t" }).bytes);
      d.decode(encode.streamStart({ xid: 77, firstSegment: true }).bytes);
      d.push(frame([plain]).subarray(0, 5)); // a partial frame
      d.reset();
      expect(d.inStream).toBe(false);
      expect(d.relations.size).toBe(0);
      expect(d.types.size).toBe(0);
      expect(() => d.end()).not.toThrow();
      const m = d.decode(plain.bytes) as Insert;
      expect(m.relation).toBeUndefined();
      expect(m.materialize()).toEqual({ kind: "Insert", relationId: users.relationId, newTuple: plain.expected.newTuple });
      expect(d.push(frame([R, plain])).materialize()).toEqual([R.expected, plain.expected]);
    });
  });

  describe("the relation and type caches", () => {
    it("a new Relation for the same OID replaces the entry", async () => {
      const d = await fresh();
      const v1 = { relationId: 600, namespace: "public", relationName: "t", columns: [{ name: "a", typeId: 23 }, { name: "b", typeId: 25 }] };
      const v2 = {
        relationId: 600, namespace: "app", relationName: "t2", replicaIdentity: "f" as const,
        columns: [{ name: "a", typeId: 23 }, { name: "b", typeId: 25 }, { name: "c", typeId: 16, isKey: true }],
      };
      const r1 = d.decode(encode.relation(v1).bytes) as RelationMessage;
      const old = r1.relation;
      const i1 = encode.insert({ relation: v1, newTuple: ["1", "x"] });
      expect(d.decode(i1.bytes).materialize()).toEqual(i1.expected);
      d.decode(encode.relation(v2).bytes);
      expect(d.relations.size).toBe(1);
      const cached = d.relations.get(600)!;
      expect(cached.name).toBe("t2");
      expect(cached.namespace).toBe("app");
      expect(cached.replicaIdentity).toBe("f");
      expect(cached.columnCount).toBe(3);
      expect(cached.columns.map((c) => ({ ...c }))).toEqual([
        { flags: 0, isKey: false, name: "a", typeId: 23, typeModifier: -1 },
        { flags: 0, isKey: false, name: "b", typeId: 25, typeModifier: -1 },
        { flags: 1, isKey: true, name: "c", typeId: 16, typeModifier: -1 },
      ]);
      const i2 = encode.insert({ relation: v2, newTuple: ["1", "x", "t"] });
      const m = d.decode(i2.bytes) as Insert;
      expect(m.materialize()).toEqual(i2.expected);
      expect(m.relation).toBe(cached);
      expect(m.newTuple.text("c")).toBe("t");
      expectCode(() => d.decode(i1.bytes), "COLUMN_COUNT_MISMATCH");
      // the replaced entry keeps describing the old definition
      expect(old.columnCount).toBe(2);
      expect(old.name).toBe("t");
    });

    it("the Relation message's relation outlives the batch", async () => {
      const d = await fresh();
      const rel = fixtureRelations.wide;
      const r = d.decode(encode.relation(rel).bytes) as RelationMessage;
      const relation = r.relation;
      d.decode(encode.streamStop().bytes);
      d.decodeFramed(frame([encode.begin({ finalLsn: 1n, commitTime: 1n, xid: 1 })]));
      expect(relation.relationId).toBe(rel.relationId);
      expect(relation.namespace).toBe(rel.namespace);
      expect(relation.name).toBe(rel.relationName);
      expect(relation.columns.map((c) => c.name)).toEqual(rel.columns.map((c) => c.name));
      expect(relation.columnIndex("")).toBe(1);
      expect(relation.toJSON()).toEqual({
        relationId: rel.relationId, namespace: rel.namespace, relationName: rel.relationName, replicaIdentity: "f",
        columns: encode.relation(rel).expected.columns,
      });
      expect(d.relations.get(rel.relationId)).toBe(relation);
    });

    it("Type messages fill the type cache", async () => {
      const d = await fresh();
      d.decode(encode.type({ typeId: MAX_U32, namespace: "", typeName: "t😀" }).bytes);
      d.decode(encode.type({ typeId: 16500, namespace: "public", typeName: "mood" }).bytes);
      d.decode(encode.type({ typeId: 16500, namespace: "public", typeName: "mood2" }).bytes);
      expect(d.types.size).toBe(2);
      expect({ ...d.types.get(MAX_U32) }).toEqual({ typeId: MAX_U32, namespace: "", typeName: "t😀" });
      expect({ ...d.types.get(16500) }).toEqual({ typeId: 16500, namespace: "public", typeName: "mood2" });
    });

    it("Truncate lists the cached relations, undefined for unknown ones", async () => {
      const d = await fresh();
      d.decode(encode.relation(fixtureRelations.users).bytes);
      const t = d.decode(encode.truncate({ options: 3, relationIds: [16384, 42] }).bytes) as Truncate;
      expect(t.cascade).toBe(true);
      expect(t.restartIdentity).toBe(true);
      expect(t.relationIds).toEqual([16384, 42]);
      expect(t.relations.length).toBe(2);
      expect(t.relations[0]).toBe(d.relations.get(16384));
      expect(t.relations[1]).toBeUndefined();
    });
  });

  describe("tuples", () => {
    const { users } = fixtureRelations;
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0xff]);

    it("access by index and by name, with every column kind", async () => {
      const d = await fresh();
      d.decode(encode.relation(users).bytes);
      const u = d.decode(encode.update({ relation: users, oldTupleType: "K", oldTuple: ["1", null, null, null], newTuple: ["1", "Ann 😀", png, UNCHANGED] }).bytes) as Update;
      const t = u.newTuple;
      expect(t.length).toBe(4);
      expect(t.relation).toBe(d.relations.get(users.relationId));
      expect(t.index("bio")).toBe(3);
      expect(t.index(2)).toBe(2);
      expect([t.kind("id"), t.kind("name"), t.kind(2), t.kind("bio")]).toEqual(["text", "text", "binary", "unchanged"]);
      expect(t.text("name")).toBe("Ann 😀");
      expect(t.text(0)).toBe("1");
      expect(t.text("bio")).toBe(unchangedToast);
      expect(t.isNull("bio")).toBe(false);
      expect(t.bytes("bio")).toBe(unchangedToast);
      expect(t.byteLength("bio")).toBe(0);
      expect(t.bytes("name")).toEqual(utf8.encode("Ann 😀"));
      expect(t.byteLength("name")).toBe(utf8.encode("Ann 😀").length);
      expect(t.bytes("photo")).toEqual(png);
      expect(t.byteLength("photo")).toBe(png.length);
      expect(t.unchangedColumns()).toEqual([3]);
      const old = u.oldTuple!;
      expect(u.oldTupleType).toBe("K");
      expect(old.isNull("name")).toBe(true);
      expect(old.text("name")).toBeNull();
      expect(old.bytes("name")).toBeNull();
      expect(old.byteLength("name")).toBe(0);
      expect(old.kind("name")).toBe("null");
      expect(old.unchangedColumns()).toEqual([]);
      expect(t.toJSON()).toEqual([{ kind: "text", text: "1" }, { kind: "text", text: "Ann 😀" }, { kind: "binary", base64: b64(png) }, { kind: "unchanged" }]);
      expect(old.toJSON()).toEqual([{ kind: "text", text: "1" }, null, null, null]);
    });

    it("unchangedColumns lists every u column", async () => {
      const d = await fresh();
      d.decode(encode.relation(users).bytes);
      const u = d.decode(encode.update({ relation: users, newTuple: [UNCHANGED, "x", UNCHANGED, UNCHANGED] }).bytes) as Update;
      expect(u.oldTuple).toBeNull();
      expect(u.oldTupleType).toBeNull();
      expect(u.newTuple.unchangedColumns()).toEqual([0, 2, 3]);
    });

    it("text() of a binary column throws WRONG_COLUMN_KIND", async () => {
      const d = await fresh();
      d.decode(encode.relation(users).bytes);
      const m = d.decode(encode.insert({ relation: users, newTuple: ["1", "a", png, null] }).bytes) as Insert;
      const e = errorOf(() => m.newTuple.text("photo"));
      expect(e.code).toBe("WRONG_COLUMN_KIND");
      expect(errorOf(() => m.newTuple.text(2)).code).toBe("WRONG_COLUMN_KIND");
    });

    it("unknown columns throw UNKNOWN_COLUMN", async () => {
      const d = await fresh();
      d.decode(encode.relation(users).bytes);
      const m = d.decode(encode.insert({ relation: users, newTuple: ["1", "a", png, null] }).bytes) as Insert;
      for (const ref of ["nope", 4, -1, 1.5]) {
        expect(errorOf(() => m.newTuple.text(ref), `text(${ref})`).code, String(ref)).toBe("UNKNOWN_COLUMN");
        expect(errorOf(() => m.newTuple.index(ref), `index(${ref})`).code, String(ref)).toBe("UNKNOWN_COLUMN");
      }
      const unknown = d.decode(encode.insert({ relationId: 4242, newTuple: ["a"] }).bytes) as Insert;
      expect(unknown.relation).toBeUndefined();
      expect(unknown.newTuple.relation).toBeUndefined();
      expect(unknown.newTuple.text(0)).toBe("a");
      expect(errorOf(() => unknown.newTuple.text("id")).code).toBe("UNKNOWN_COLUMN");
    });

    it("bytes() and content return copies", async () => {
      const d = await fresh();
      d.decode(encode.relation(users).bytes);
      const m = d.decode(encode.insert({ relation: users, newTuple: ["1", "a", png, null] }).bytes) as Insert;
      const b1 = m.newTuple.bytes("photo") as Uint8Array;
      b1.fill(0);
      expect(m.newTuple.bytes("photo")).toEqual(png);
      const t1 = m.newTuple.bytes("name") as Uint8Array;
      t1[0] = 0x7a;
      expect(m.newTuple.text("name")).toBe("a");
      const whole = m.bytes();
      whole.fill(0);
      expect(m.newTuple.text("id")).toBe("1");
      const mm = d.decode(encode.message({ transactional: true, lsn: 1n, prefix: "p", content: png }).bytes);
      if (mm.kind !== "Message") throw new Error("not a Message");
      mm.content.fill(1);
      expect(mm.content).toEqual(png);
      expect(mm.contentText).toBe(new TextDecoder().decode(png));
      const mat = mm.materialize();
      (mat.content as Uint8Array).fill(2);
      expect(mm.content).toEqual(png);
    });
  });

  describe("views and copies", () => {
    const { users } = fixtureRelations;
    const R = encode.relation(users);
    const insA = encode.insert({ relation: users, newTuple: ["1", "aaaa", new Uint8Array([1, 2]), null] });
    const insB = encode.insert({ relation: users, newTuple: ["2", "bbbb", new Uint8Array([3, 4]), null] });

    for (const f of fixtures()) {
      it(`a stale ${f.name} throws STALE_VIEW; its materialized copy stays`, async () => {
        const d = await fresh();
        const msg = decodeFixture(d, f);
        const copy = msg.materialize();
        d.decode(encode.streamStop().bytes);
        expect(errorOf(() => msg.materialize()).code).toBe("STALE_VIEW");
        expect(errorOf(() => msg.toJSON()).code).toBe("STALE_VIEW");
        expect(errorOf(() => msg.bytes()).code).toBe("STALE_VIEW");
        for (const field of Object.keys(f.message.expected)) {
          if (field === "kind") continue;
          // Insert/Update/Delete expectations name their relation, which is no field of the view
          if (f.message.kind !== "Relation" && (field === "namespace" || field === "relationName")) continue;
          expect(errorOf(() => (msg as unknown as Record<string, unknown>)[field], `stale .${field}`).code, field).toBe("STALE_VIEW");
        }
        expect(copy).toEqual(f.message.expected);
      });
    }

    it("stale tuples throw; materialized values survive reuse of the decoder's memory and of the input", async () => {
      const d = await fresh();
      d.decode(R.bytes);
      const input = insA.bytes.slice();
      const a = d.decode(input) as Insert;
      const tuple = a.newTuple;
      const copy = a.materialize();
      const json = a.toJSON();
      input.fill(0x55); // the caller reuses its buffer
      const b = d.decode(insB.bytes) as Insert; // same size: the decoder's memory now holds B
      expect(b.newTuple.text(1)).toBe("bbbb");
      for (const fn of [() => tuple.text(1), () => tuple.bytes(2), () => tuple.kind(0), () => tuple.materialize(), () => tuple.toJSON(), () => a.newTuple]) {
        expect(errorOf(fn).code).toBe("STALE_VIEW");
      }
      expect(copy).toEqual(insA.expected);
      expect(json).toEqual(expectedJSON(insA.expected));
    });

    it("batch views go stale on the next call of any kind", async () => {
      const d = await fresh();
      d.decode(R.bytes);
      const calls: ((d: PgoutputDecoder) => unknown)[] = [
        (x) => x.decode(insB.bytes),
        (x) => x.decodeBatch([insB.bytes]),
        (x) => x.decodeFramed(frame([insB])),
        (x) => x.push(frame([insB])),
      ];
      for (const next of calls) {
        const batch = d.decodeBatch([insA.bytes, insB.bytes]);
        const first = batch.get(0) as Insert;
        const mats = batch.materialize();
        next(d);
        expect(errorOf(() => first.newTuple).code).toBe("STALE_VIEW");
        expect(errorOf(() => batch.get(1).materialize()).code).toBe("STALE_VIEW");
        expect(mats).toEqual([insA.expected, insB.expected]);
      }
    });

    it("toJSON() is JSON-safe: no bigint, LSNs as X/Y, bytes as base64", async () => {
      const d = await fresh();
      for (const m of SMALL) {
        const json = d.decode(m.bytes).toJSON();
        const text = JSON.stringify(json);
        expect(JSON.parse(text)).toEqual(expectedJSON(m.expected));
      }
      const abort = d.decode(encode.streamAbort({ xid: 1, subXid: 2, abortLsn: MAX_LSN, abortTime: -1n }).bytes).toJSON();
      expect(abort).toEqual({ kind: "StreamAbort", xid: 1, subXid: 2, abortLsn: "FFFFFFFF/FFFFFFFF", abortTime: "-1" });
      const msg = d.decode(encode.message({ transactional: false, lsn: 0x17864c0n, prefix: "x", content: new Uint8Array([0xff, 0, 1]) }).bytes).toJSON();
      expect(msg).toEqual({ kind: "Message", flags: 0, transactional: false, lsn: "0/17864C0", prefix: "x", content: "/wAB" });
    });
  });
});

