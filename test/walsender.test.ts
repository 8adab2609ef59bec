/**
 * The walsender framings, on every backend: `decodeCopyData` (CopyData
 * payloads: `w` XLogData around one pgoutput message, `k` primary keepalive)
 * and `pushBackend` (raw backend-protocol bytes after START_REPLICATION,
 * split anywhere). Values, stream state carried across payloads and calls,
 * backend messages (ErrorResponse fields), and every error with its code,
 * offset, field, kind, index and incomplete flag — the same on both backends.
 *
 * Offsets: decodeCopyData counts as if each payload were preceded by its
 * 4-byte length (like decodeBatch); pushBackend counts within (bytes kept
 * from the previous call + this chunk), like push.
 */
import { describe, expect, it } from "vitest";
// `b`: the backend of this run (`backend` is the walsender encoder here).
import { backend as b } from "./support/backends.ts";
import { pushSplit as pushChunks } from "./support/push-split.ts";
import {
  concat, deepEqual, encode, fixtureRelations, fixtures, hex, LSN_2_63, MAX_LSN, PG_EPOCH_UNIX_US, TIME_NEG_INFINITY,
  TIME_POS_INFINITY, type Encoded,
} from "../devkit/encoder/encoder.ts";
import { Random, randomLsn, randomStream, randomTime } from "../devkit/fuzz/random.ts";
import {
  backend, backendFrame, backendOffset, backendStream, KEEPALIVE_LENGTH, wal, XLOGDATA_PREFIX,
  type BackendEncoded, type WalEncoded, type XLogHeader,
} from "../devkit/encoder/walsender-encoder.ts";
import type { Batch, PgoutputDecoder } from "../bindings/decoder.ts";
import type { Insert, PgoutputMessage } from "../bindings/messages.ts";
import { BackendMessage, PrimaryKeepalive, type WalMessage } from "../bindings/walsender.ts";
import { isPgoutputError, type PgoutputErrorCode } from "../bindings/errors.ts";
import { formatLsn } from "../bindings/lsn.ts";

/** toEqual, with a fast check first (big arrays of messages). */
function expectSame(got: unknown, want: unknown, label?: string): void {
  if (!deepEqual(got, want)) expect(got, label).toEqual(want);
}

/** The six things an error must agree on. */
interface ErrorShape {
  code: PgoutputErrorCode | string;
  offset: number | undefined;
  field: string | undefined;
  messageKind: string | undefined;
  messageIndex: number | undefined;
  incomplete: boolean;
}

/** Runs fn; returns the PgoutputError's shape, or fails. */
function errorOf(fn: () => unknown, what: string): ErrorShape {
  let result: unknown;
  try {
    result = fn();
  } catch (e) {
    if (!isPgoutputError(e)) throw new Error(`${what}: expected a PgoutputError, got ${String(e)}`, { cause: e });
    return { code: e.code, offset: e.offset, field: e.field, messageKind: e.messageKind, messageIndex: e.messageIndex, incomplete: e.incomplete };
  }
  throw new Error(`${what}: expected a PgoutputError, but it returned ${show(result)}`);
}

function show_(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? `${x}n` : x instanceof Uint8Array ? hex(x) : x));
  } catch {
    return String(v);
  }
}
function show(v: unknown): string {
  if (v !== null && typeof v === "object" && "materialize" in v) return show_((v as Batch<WalMessage>).materialize());
  return show_(v);
}

/** The pgoutput message a walsender item must be. */
function pgoutput(m: WalMessage): PgoutputMessage {
  if (m instanceof PrimaryKeepalive || m instanceof BackendMessage) throw new Error(`expected a pgoutput message, got ${m.kind}`);
  return m;
}

/** An expected error: the shape, with `incomplete` following the code unless given. */
function want(e: Partial<ErrorShape> & { code: PgoutputErrorCode }): ErrorShape {
  return {
    code: e.code,
    offset: e.offset,
    field: e.field,
    messageKind: e.messageKind,
    messageIndex: e.messageIndex,
    incomplete: e.incomplete ?? e.code === "INCOMPLETE",
  };
}

function expectError(fn: () => unknown, expected: ErrorShape, what: string): void {
  expect(errorOf(fn, what), what).toEqual(expected);
}

/** XLogData headers with edge values: LSN 2^64-1, 0, 2^63; times before 1970 and 2000, ±infinity. */
const HEADERS: XLogHeader[] = [
  { walStart: 0x1_7864c0n, walEnd: 0x1_7865c0n, sendTime: 1_700_000_000_123_456n },
  { walStart: MAX_LSN, walEnd: MAX_LSN, sendTime: -1n },
  { walStart: 0n, walEnd: LSN_2_63, sendTime: PG_EPOCH_UNIX_US - 1n },
  { walStart: LSN_2_63, walEnd: 0n, sendTime: TIME_NEG_INFINITY },
  { walStart: 1n, walEnd: MAX_LSN - 1n, sendTime: TIME_POS_INFINITY },
  { walStart: 2n ** 32n, walEnd: 2n ** 32n - 1n, sendTime: -62_135_596_800_000_000n },
  { walStart: 0x16_b374d848n, walEnd: 0x16_b374d848n, sendTime: PG_EPOCH_UNIX_US },
];

const KEEPALIVES = [
  { walEnd: 0x1_7864c0n, sendTime: 1_700_000_000_123_456n, replyRequested: false },
  { walEnd: MAX_LSN, sendTime: -1n, replyRequested: true },
  { walEnd: 0n, sendTime: TIME_NEG_INFINITY, replyRequested: false },
  { walEnd: LSN_2_63, sendTime: TIME_POS_INFINITY, replyRequested: true },
  { walEnd: 1n, sendTime: PG_EPOCH_UNIX_US - 1n, replyRequested: false },
];

const H0 = HEADERS[0]!;
const { users } = fixtureRelations;
const R_USERS = encode.relation(users);
const BEGIN = encode.begin({ finalLsn: 0x300n, commitTime: 1_700_000_000_000_000n, xid: 900 });
const BEGIN_W = wal.xlogData(BEGIN, H0);
const XID = 2 ** 31 + 9;

/** The payload forms of a list, with expected values. */
function payloads(list: readonly WalEncoded[]): Uint8Array[] {
  return list.map((p) => p.bytes);
}

/** Offset of payload `index`'s first byte in the virtual capture form of a list (each payload preceded by 4 bytes). */
function payloadOffset(list: readonly (WalEncoded | Uint8Array)[], index: number): number {
  let p = 0;
  for (let i = 0; i < index; i++) {
    const x = list[i]!;
    p += 4 + (x instanceof Uint8Array ? x.length : x.bytes.length);
  }
  return p + 4;
}

/**
 * A realistic raw stream after START_REPLICATION: CopyBothResponse, CopyData
 * frames (keepalives, plain and streamed transactions, a big value), a
 * NoticeResponse in the middle, then CopyDone, CommandComplete, ReadyForQuery.
 */
function realisticStream(): { frames: BackendEncoded[]; expected: Record<string, unknown>[] } {
  let lsn = 0x1_0000_0000n;
  let t = 1_700_000_000_000_000n;
  const x = (m: Encoded): BackendEncoded => {
    const h = { walStart: lsn, walEnd: lsn + 0x1000n, sendTime: t };
    lsn += BigInt(m.bytes.length) + 24n;
    t += 1234n;
    return backend.copyData(wal.xlogData(m, h));
  };
  const k = (replyRequested: boolean): BackendEncoded => backend.copyData(wal.keepalive({ walEnd: lsn, sendTime: t++, replyRequested }));
  const big = "x".repeat(5000);
  const frames: BackendEncoded[] = [
    backend.copyBothResponse(),
    k(false),
    x(encode.begin({ finalLsn: 0x1_0000_0400n, commitTime: t, xid: 731 })),
    x(R_USERS),
    x(encode.insert({ relation: users, newTuple: ["1", "Ann", new Uint8Array([0, 1, 2]), null] })),
    x(encode.update({ relation: users, oldTupleType: "K", oldTuple: ["1", null, null, null], newTuple: ["2", big, null, { kind: "unchanged" }] })),
    x(encode.commit({ commitLsn: 0x1_0000_0400n, endLsn: 0x1_0000_0430n, commitTime: t })),
    k(true),
    backend.noticeResponse({ S: "WARNING", V: "WARNING", C: "01000", M: "über-long slot lag ⚠" }),
    x(encode.streamStart({ xid: XID, firstSegment: true })),
    x(encode.insert({ xid: XID, relation: users, newTuple: ["3", "in stream", null, "😀"] })),
    x(encode.type({ xid: XID, typeId: 16500, namespace: "public", typeName: "mood" })),
    x(encode.streamStop()),
    x(encode.message({ transactional: false, lsn: lsn, prefix: "app", content: "héllo" })),
    x(encode.streamStart({ xid: XID, firstSegment: false })),
    x(encode.delete({ xid: XID, relation: users, oldTupleType: "K", oldTuple: ["3", null, null, null] })),
    x(encode.streamStop()),
    x(encode.streamCommit({ xid: XID, commitLsn: 0x1_0000_0900n, endLsn: 0x1_0000_0930n, commitTime: t })),
    k(false),
    backend.copyDone(),
    backend.commandComplete("START_REPLICATION"),
    backend.readyForQuery("I"),
  ];
  return { frames, expected: frames.map((f) => f.expected) };
}

/** Pushes chunks split at `cuts` (one decoder), materializing each batch at once. */
const pushSplit = (d: PgoutputDecoder, bytes: Uint8Array, cuts: readonly number[]) => pushChunks(d, bytes, cuts, "pushBackend");

/** A Message whose whole pgoutput message is exactly `size` bytes (size >= 16: tag, flags, LSN, "p", length). */
function messageOfSize(size: number): Encoded {
  const m = encode.message({ transactional: false, lsn: 1n, prefix: "p", content: new Uint8Array(size - 16) });
  if (m.bytes.length !== size) throw new Error(`messageOfSize: got ${m.bytes.length}`);
  return m;
}

describe(b.name, () => {
  describe("decodeCopyData: XLogData", () => {
    it("every encoder fixture wrapped in XLogData decodes with walStart, walEnd, sendTime", async () => {
      const d = await b.create();
      let n = 0;
      for (const f of fixtures()) {
        for (const h of HEADERS) {
          d.reset();
          for (const s of f.setup) d.decode(s.bytes);
          if (f.options?.inStream !== undefined) d.inStream = f.options.inStream;
          const w = wal.xlogData(f.message, h);
          const batch = d.decodeCopyData([w.bytes]);
          const what = `${f.name}, header ${show_(h)}: ${hex(w.bytes)}`;
          expect(batch.length, what).toBe(1);
          expect(batch.consumed, what).toBe(4 + w.bytes.length);
          expect(batch.kind(0), what).toBe(f.message.kind);
          const msg = pgoutput(batch.get(0));
          expect(msg.kind, what).toBe(f.message.kind);
          expect(msg.walStart, what).toBe(h.walStart);
          expect(msg.walEnd, what).toBe(h.walEnd);
          expect(msg.sendTime, what).toBe(h.sendTime);
          expectSame(msg.materialize(), w.expected, what);
          expectSame(batch.materialize(), [w.expected], what);
          // bytes() is the pgoutput message only
          expect(hex((msg as { bytes(): Uint8Array }).bytes(), 1e6), what).toBe(hex(f.message.bytes, 1e6));
          const json = (msg as { toJSON(): Record<string, unknown> }).toJSON();
          expect(json.walStart, what).toBe(formatLsn(h.walStart));
          expect(json.walEnd, what).toBe(formatLsn(h.walEnd));
          expect(json.sendTime, what).toBe(h.sendTime.toString());
          n++;
        }
      }
      expect(n).toBeGreaterThan(300);
    });

    it("setup and message all wrapped, in one call: the stream state and caches carry across payloads", async () => {
      const d = await b.create();
      for (const f of fixtures()) {
        if (f.options !== undefined) continue;
        d.reset();
        const list = [...f.setup, f.message].map((m, i) => wal.xlogData(m, HEADERS[i % HEADERS.length]!));
        expectSame(d.decodeCopyData(payloads(list)).materialize(), list.map((w) => w.expected), f.name);
      }
    });

    it("the same message without XLogData has no walStart, walEnd, sendTime", async () => {
      const d = await b.create();
      const m = d.decode(BEGIN.bytes);
      expect(m.walStart).toBeUndefined();
      expect(m.walEnd).toBeUndefined();
      expect(m.sendTime).toBeUndefined();
      expect(m.materialize()).toEqual(BEGIN.expected);
      expect("walStart" in m.materialize()).toBe(false);
      const batch = d.decodeBatch([BEGIN.bytes]);
      expect(batch.get(0).walStart).toBeUndefined();
      const w = d.decodeCopyData([wal.xlogData(BEGIN, H0).bytes]).get(0);
      expect(w.kind === "Begin" && w.walStart).toBe(H0.walStart);
    });

    it("views go stale at the next call; keepalives and backend messages are plain objects", async () => {
      const d = await b.create();
      const batch = d.decodeCopyData([wal.xlogData(BEGIN, H0).bytes, wal.keepalive(KEEPALIVES[1]!).bytes]);
      const view = pgoutput(batch.get(0));
      const k = batch.get(1);
      d.decodeCopyData([]);
      expect(errorOf(() => view.walStart, "stale walStart").code).toBe("STALE_VIEW");
      expect(errorOf(() => batch.get(0), "stale batch").code).toBe("STALE_VIEW");
      expect(k).toBeInstanceOf(PrimaryKeepalive);
      expect(k.materialize()).toEqual(wal.keepalive(KEEPALIVES[1]!).expected);
    });

    it("an empty list decodes to nothing", async () => {
      const d = await b.create();
      const batch = d.decodeCopyData([]);
      expect(batch.length).toBe(0);
      expect(batch.consumed).toBe(0);
    });
  });

  describe("decodeCopyData: keepalives", () => {
    it("decode to PrimaryKeepalive objects with exact values", async () => {
      const d = await b.create();
      for (const ka of KEEPALIVES) {
        const k = wal.keepalive(ka);
        expect(k.bytes.length).toBe(KEEPALIVE_LENGTH);
        const batch = d.decodeCopyData([k.bytes]);
        expect(batch.length).toBe(1);
        expect(batch.consumed).toBe(4 + KEEPALIVE_LENGTH);
        expect(batch.kind(0)).toBe("PrimaryKeepalive");
        const msg = batch.get(0);
        expect(msg).toBeInstanceOf(PrimaryKeepalive);
        if (!(msg instanceof PrimaryKeepalive)) continue;
        expect(msg.walEnd).toBe(ka.walEnd);
        expect(msg.sendTime).toBe(ka.sendTime);
        expect(msg.replyRequested).toBe(ka.replyRequested);
        expect(msg.materialize()).toEqual(k.expected);
        expect(batch.materialize()).toEqual([k.expected]);
        expect(msg.toJSON()).toEqual({
          kind: "PrimaryKeepalive", walEnd: formatLsn(ka.walEnd), sendTime: ka.sendTime.toString(), replyRequested: ka.replyRequested,
        });
      }
    });

    it("any non-zero reply byte means reply requested", async () => {
      const d = await b.create();
      for (const byte of [0, 1, 2, 0x80, 0xff]) {
        const k = wal.keepalive({ walEnd: 5n, sendTime: 6n, replyRequested: byte !== 0 }, byte);
        expect(d.decodeCopyData([k.bytes]).materialize(), `reply byte ${byte}`).toEqual([k.expected]);
      }
    });

    it("keepalives do not touch the stream state", async () => {
      const d = await b.create();
      const s = wal.xlogData(encode.streamStart({ xid: XID, firstSegment: true }), H0);
      d.decodeCopyData([s.bytes, wal.keepalive(KEEPALIVES[0]!).bytes]);
      expect(d.inStream).toBe(true);
      d.decodeCopyData([wal.keepalive(KEEPALIVES[1]!).bytes]);
      expect(d.inStream).toBe(true);
    });
  });

  describe("decodeCopyData: streams mixing w and k", () => {
    const stream = randomStream(7, { messages: 600 });
    const r = new Random(77);
    const list: WalEncoded[] = [];
    for (const m of stream) {
      if (r.chance(0.15)) list.push(wal.keepalive({ walEnd: randomLsn(r), sendTime: randomTime(r), replyRequested: r.chance(0.3) }));
      list.push(wal.xlogData(m, { walStart: randomLsn(r), walEnd: randomLsn(r), sendTime: randomTime(r) }));
    }
    const expected = list.map((w) => w.expected);

    it("in one call", async () => {
      const d = await b.create();
      const batch = d.decodeCopyData(payloads(list));
      expect(batch.length).toBe(list.length);
      expect(batch.consumed).toBe(payloadOffset(list, list.length) - 4);
      expectSame(batch.materialize(), expected);
      expect(d.inStream).toBe(false);
    });

    it("one payload per call: stream state (S/E), relations and types carried across calls", async () => {
      const d = await b.create();
      const got: Record<string, unknown>[] = [];
      for (let i = 0; i < list.length; i++) {
        got.push(...d.decodeCopyData([list[i]!.bytes]).materialize());
        if (list[i]!.kind === "StreamStart") expect(d.inStream, `after payload ${i}`).toBe(true);
        if (list[i]!.kind === "StreamStop") expect(d.inStream, `after payload ${i}`).toBe(false);
      }
      expectSame(got, expected);
    });

    it("in random slices", async () => {
      const d = await b.create();
      const got: Record<string, unknown>[] = [];
      const rr = new Random(99);
      for (let p = 0; p < list.length; ) {
        const n = Math.min(list.length - p, rr.int(0, 30));
        got.push(...d.decodeCopyData(payloads(list.slice(p, p + n))).materialize());
        p += n;
      }
      expectSame(got, expected);
    });

    it("S in one call, its changes in the next, E in a third", async () => {
      const d = await b.create();
      d.decodeCopyData([wal.xlogData(R_USERS, H0).bytes]);
      d.decodeCopyData([wal.keepalive(KEEPALIVES[0]!).bytes, wal.xlogData(encode.streamStart({ xid: XID, firstSegment: true }), H0).bytes]);
      expect(d.inStream).toBe(true);
      const ins = encode.insert({ xid: XID, relation: users, newTuple: ["1", null, null, null] });
      const got = d.decodeCopyData([wal.xlogData(ins, H0).bytes]).get(0) as Insert;
      expect(got.xid).toBe(XID);
      expect(got.relation?.name).toBe("users");
      d.decodeCopyData([wal.xlogData(encode.streamStop(), H0).bytes]);
      expect(d.inStream).toBe(false);
      const plain = encode.insert({ relation: users, newTuple: ["2", null, null, null] });
      expect(d.decodeCopyData([wal.xlogData(plain, H0).bytes]).materialize()).toEqual([wal.xlogData(plain, H0).expected]);
    });

    it("decodeCopyData, decode and decodeBatch share one decoder state", async () => {
      const d = await b.create();
      d.decode(R_USERS.bytes);
      d.decodeCopyData([wal.xlogData(encode.streamStart({ xid: XID, firstSegment: true }), H0).bytes]);
      const ins = encode.insert({ xid: XID, relation: users, newTuple: ["1", null, null, null] });
      expect(d.decode(ins.bytes).materialize()).toEqual(ins.expected);
      d.decodeBatch([encode.streamStop().bytes]);
      const plain = encode.insert({ relation: users, newTuple: ["2", null, null, null] });
      expect(d.decodeCopyData([wal.xlogData(plain, H0).bytes]).materialize()).toEqual([wal.xlogData(plain, H0).expected]);
    });
  });

  describe("pushBackend", () => {
    const { frames, expected } = realisticStream();
    const raw = backendStream(frames);

    it("a realistic raw stream in one push", async () => {
      const d = await b.create();
      const batch = d.pushBackend(raw);
      expect(batch.length).toBe(frames.length);
      expect(batch.consumed).toBe(raw.length);
      expectSame(batch.materialize(), expected);
      expect(batch.kind(0)).toBe("BackendMessage");
      expect(batch.kind(1)).toBe("PrimaryKeepalive");
      expect(batch.kind(2)).toBe("Begin");
      const first = batch.get(0);
      expect(first).toBeInstanceOf(BackendMessage);
      expect(first instanceof BackendMessage && first.type).toBe("W");
      expect(() => d.end()).not.toThrow();
      expect(d.inStream).toBe(false);
    });

    it("split at every byte position: the same messages as one push", async () => {
      const d = await b.create();
      for (let n = 0; n <= raw.length; n++) {
        d.reset();
        const a = d.pushBackend(raw.subarray(0, n));
        const whole = frames.findIndex((_, i) => backendOffset(frames, i + 1) > n);
        const k = whole < 0 ? frames.length : whole;
        expect(a.consumed, `split at ${n}`).toBe(backendOffset(frames, k));
        const got = a.materialize();
        const rest = d.pushBackend(raw.subarray(n));
        expect(rest.consumed, `split at ${n}`).toBe(raw.length - backendOffset(frames, k));
        got.push(...rest.materialize());
        expectSame(got, expected, `split at ${n}`);
        expect(() => d.end(), `split at ${n}`).not.toThrow();
      }
    });

    it("split into three at many position pairs, and byte by byte", async () => {
      const d = await b.create();
      for (let i = 0; i < raw.length; i += 7) {
        for (let j = i; j <= raw.length; j += 53) {
          d.reset();
          expectSame(pushSplit(d, raw, [i, j]), expected, `split at ${i}, ${j}`);
        }
      }
      d.reset();
      const cuts = Array.from({ length: raw.length - 1 }, (_, i) => i + 1);
      expectSame(pushSplit(d, raw, cuts), expected, "byte by byte");
      d.reset();
      const batch = d.pushBackend(new Uint8Array(0));
      expect(batch.length).toBe(0);
      expect(batch.consumed).toBe(0);
    });

    it("keeps the unfinished frame as a copy (the caller may reuse its chunk)", async () => {
      const d = await b.create();
      const cut = backendOffset(frames, 5) + 3;
      const chunk = raw.slice(0, cut);
      const got = d.pushBackend(chunk).materialize();
      chunk.fill(0xee);
      got.push(...d.pushBackend(raw.slice(cut)).materialize());
      expectSame(got, expected);
    });

    it("backend message bodies are copies", async () => {
      const d = await b.create();
      const notice = backend.noticeResponse({ S: "NOTICE", M: "hi" });
      const input = notice.bytes.slice();
      const msg = d.pushBackend(input).get(0);
      input.fill(0);
      expect(msg).toBeInstanceOf(BackendMessage);
      expect(msg.materialize()).toEqual(notice.expected);
    });

    it("ErrorResponse and NoticeResponse fields (S, V, C, M, D, H ...)", async () => {
      const d = await b.create();
      const fields = {
        S: "ERROR", V: "ERROR", C: "55000", M: "replication slot \"s\" is active for PID 4242",
        D: "détail 😀", H: "hint", F: "slot.c", L: "590", R: "ReplicationSlotAcquire",
      };
      const e = backend.errorResponse(fields);
      const n = backend.noticeResponse({ S: "NOTICE", C: "00000", M: "" });
      const z = backend.readyForQuery("E");
      const batch = d.pushBackend(backendStream([e, n, z]));
      expect(batch.length).toBe(3);
      const em = batch.get(0);
      expect(em).toBeInstanceOf(BackendMessage);
      if (!(em instanceof BackendMessage)) return;
      expect(em.type).toBe("E");
      expect(em.fields).toEqual(fields);
      expect(em.fields?.S).toBe("ERROR");
      expect(em.fields?.C).toBe("55000");
      expect(em.fields?.M).toBe(fields.M);
      expect(em.materialize()).toEqual(e.expected);
      const nm = batch.get(1) as BackendMessage;
      expect(nm.fields).toEqual({ S: "NOTICE", C: "00000", M: "" });
      const zm = batch.get(2) as BackendMessage;
      expect(zm.type).toBe("Z");
      expect(zm.fields).toBeUndefined();
      expect(Array.from(zm.body)).toEqual([0x45]);
      expect(zm.toJSON()).toEqual({ kind: "BackendMessage", type: "Z", body: "RQ==" });
    });

    it("any other message type is passed through, including empty and unknown ones", async () => {
      const d = await b.create();
      const list = [
        backend.other("S", new Uint8Array([0x61, 0, 0x62, 0])), // ParameterStatus
        backend.other("A", new Uint8Array([0, 0, 0, 1, 0x63, 0, 0])), // NotificationResponse
        backend.other("\x00", new Uint8Array(0)),
        backend.other("\xff", new Uint8Array([1, 2, 3])),
        backend.copyDone(),
      ];
      expect(d.pushBackend(backendStream(list)).materialize()).toEqual(list.map((f) => f.expected));
    });

    it("stream state carried across chunks", async () => {
      const d = await b.create();
      const s = backend.copyData(wal.xlogData(encode.streamStart({ xid: XID, firstSegment: true }), H0));
      d.pushBackend(backendStream([backend.copyData(wal.xlogData(R_USERS, H0)), s]));
      expect(d.inStream).toBe(true);
      const ins = wal.xlogData(encode.insert({ xid: XID, relation: users, newTuple: ["1", "a", null, null] }), H0);
      const raw2 = backendStream([backend.copyData(ins), backend.copyData(wal.xlogData(encode.streamStop(), H0))]);
      expect(d.pushBackend(raw2.subarray(0, 10)).length).toBe(0);
      const got = d.pushBackend(raw2.subarray(10)).materialize();
      expect(got).toEqual([ins.expected, wal.xlogData(encode.streamStop(), H0).expected]);
      expect(d.inStream).toBe(false);
    });
  });

  describe("errors: decodeCopyData", () => {
    it("an empty payload is INCOMPLETE at its start, field tag", async () => {
      const d = await b.create();
      expectError(() => d.decodeCopyData([new Uint8Array(0)]), want({ code: "INCOMPLETE", offset: 4, field: "tag", messageIndex: 0 }), "empty");
      const k = wal.keepalive(KEEPALIVES[0]!);
      expectError(() => d.decodeCopyData([k.bytes, new Uint8Array(0)]),
        want({ code: "INCOMPLETE", offset: 4 + k.bytes.length + 4, field: "tag", messageIndex: 1 }), "empty second");
    });

    it("an unknown first byte is UNKNOWN_MESSAGE at the payload start, field tag, no message kind", async () => {
      const d = await b.create();
      const w = wal.xlogData(BEGIN, H0);
      // 'B', 'C', 'r' are pgoutput tags but not payload tags: still no message kind.
      for (const byte of [0x00, 0x42, 0x43, 0x72, 0x64, 0x57, 0x78, 0xff]) {
        const bad = w.bytes.slice();
        bad[0] = byte;
        expectError(() => d.decodeCopyData([bad]),
          want({ code: "UNKNOWN_MESSAGE", offset: 4, field: "tag", messageIndex: 0 }), `first byte 0x${byte.toString(16)}: ${hex(bad)}`);
        expectError(() => d.decodeCopyData([w.bytes, bad.subarray(0, 1)]),
          want({ code: "UNKNOWN_MESSAGE", offset: 4 + w.bytes.length + 4, field: "tag", messageIndex: 1 }), `lone byte 0x${byte.toString(16)}`);
      }
    });

    it("a cut-short XLogData header is INCOMPLETE at the field it cuts", async () => {
      const d = await b.create();
      const w = wal.xlogData(BEGIN, H0);
      for (let n = 1; n < XLOGDATA_PREFIX; n++) {
        const field = n < 9 ? "walStart" : n < 17 ? "walEnd" : "sendTime";
        const at = n < 9 ? 1 : n < 17 ? 9 : 17;
        expectError(() => d.decodeCopyData([w.bytes.subarray(0, n)]),
          want({ code: "INCOMPLETE", offset: 4 + at, field, messageIndex: 0 }), `XLogData cut to ${n}`);
        const k = wal.keepalive(KEEPALIVES[0]!);
        expectError(() => d.decodeCopyData([k.bytes, k.bytes, w.bytes.subarray(0, n)]),
          want({ code: "INCOMPLETE", offset: 2 * (4 + KEEPALIVE_LENGTH) + 4 + at, field, messageIndex: 2 }), `third payload cut to ${n}`);
      }
    });

    it("an XLogData with no message is INCOMPLETE at offset 25 of the payload, field tag", async () => {
      const d = await b.create();
      const w = wal.xlogData(new Uint8Array(0), H0);
      expect(w.bytes.length).toBe(XLOGDATA_PREFIX);
      expectError(() => d.decodeCopyData([w.bytes]), want({ code: "INCOMPLETE", offset: 4 + 25, field: "tag", messageIndex: 0 }), "header only");
    });

    it("a cut-short keepalive is INCOMPLETE at the field it cuts; a longer one is TRAILING_BYTES", async () => {
      const d = await b.create();
      const k = wal.keepalive(KEEPALIVES[1]!);
      for (let n = 1; n < KEEPALIVE_LENGTH; n++) {
        const field = n < 9 ? "walEnd" : n < 17 ? "sendTime" : "replyRequested";
        const at = n < 9 ? 1 : n < 17 ? 9 : 17;
        expectError(() => d.decodeCopyData([k.bytes.subarray(0, n)]),
          want({ code: "INCOMPLETE", offset: 4 + at, field, messageIndex: 0 }), `keepalive cut to ${n}`);
      }
      for (const extra of [1, 2, 25]) {
        const long = new Uint8Array(KEEPALIVE_LENGTH + extra);
        long.set(k.bytes);
        expectError(() => d.decodeCopyData([BEGIN_W.bytes, long]),
          want({ code: "TRAILING_BYTES", offset: 4 + BEGIN_W.bytes.length + 4 + KEEPALIVE_LENGTH, field: "end", messageIndex: 1 }),
          `keepalive + ${extra} bytes`);
      }
    });

    it("errors inside the pgoutput message are decode's, shifted by the header and prefix", async () => {
      const d = await b.create();
      const ref = await b.create();
      let checked = 0;
      for (const f of fixtures()) {
        if (f.options !== undefined) continue;
        const w = wal.xlogData(f.message, H0);
        // every truncation inside the message, and every single-byte corruption of it
        const variants: Uint8Array[] = [];
        for (let n = XLOGDATA_PREFIX + 1; n < w.bytes.length; n++) variants.push(w.bytes.slice(0, n));
        for (let i = XLOGDATA_PREFIX; i < w.bytes.length; i++) {
          for (const v of [0x00, 0xff, 0x80]) {
            const c = w.bytes.slice();
            c[i] = v;
            variants.push(c);
          }
        }
        const extra = new Uint8Array(w.bytes.length + 3);
        extra.set(w.bytes);
        variants.push(extra);
        for (const v of variants) {
          const inner = v.subarray(XLOGDATA_PREFIX);
          ref.reset();
          for (const s of f.setup) ref.decode(s.bytes);
          let plain: ErrorShape | undefined;
          try {
            ref.decode(inner);
          } catch (e) {
            if (!isPgoutputError(e)) throw e;
            plain = { code: e.code, offset: e.offset, field: e.field, messageKind: e.messageKind, messageIndex: e.messageIndex, incomplete: e.incomplete };
          }
          d.reset();
          for (const s of f.setup) d.decode(s.bytes);
          const what = `${f.name}: ${hex(v)}`;
          if (plain === undefined) {
            expect(d.decodeCopyData([v]).length, what).toBe(1);
            continue;
          }
          const k = wal.keepalive(KEEPALIVES[0]!);
          expectError(() => d.decodeCopyData([k.bytes, v]), {
            ...plain,
            offset: plain.offset === undefined ? undefined : plain.offset + 4 + KEEPALIVE_LENGTH + 4 + XLOGDATA_PREFIX,
            messageIndex: 1,
          }, what);
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(1000);
    });

    it("an unknown pgoutput tag inside XLogData: UNKNOWN_MESSAGE at the message, no kind", async () => {
      const d = await b.create();
      for (const tag of [0x00, 0x77, 0x6b, 0x64, 0xff]) {
        const w = wal.xlogData(new Uint8Array([tag, 1, 2, 3]), H0);
        expectError(() => d.decodeCopyData([w.bytes]),
          want({ code: "UNKNOWN_MESSAGE", offset: 4 + 25, field: "tag", messageIndex: 0 }), `inner tag 0x${tag.toString(16)}`);
      }
    });

    it("a tuple wider than its relation: COLUMN_COUNT_MISMATCH at its column count", async () => {
      const d = await b.create();
      const ins = encode.insert({ relationId: users.relationId, newTuple: ["1", "2"] });
      const list = [wal.xlogData(R_USERS, H0), wal.keepalive(KEEPALIVES[0]!), wal.xlogData(ins, H0)];
      const e = errorOf(() => d.decodeCopyData(payloads(list)), "narrow insert");
      expect(e).toEqual(want({
        code: "COLUMN_COUNT_MISMATCH", offset: payloadOffset(list, 2) + XLOGDATA_PREFIX + ins.offsets["newTuple"]! + 1,
        field: "newTuple.columnCount", messageKind: "Insert", messageIndex: 2,
      }));
      // the relation before it was applied
      expect(d.relations.get(users.relationId)?.name).toBe("users");
    });

    it("payloads above maxMessageSize + 25 ('w' and header) are MESSAGE_TOO_LARGE at their virtual length prefix", async () => {
      const max = 100;
      const d = await b.create({ maxMessageSize: max });
      // A pgoutput message of exactly maxMessageSize fits in an XLogData, as it does in decode().
      const fits = wal.xlogData(messageOfSize(max), H0); // payload max + 25
      expect(fits.bytes.length).toBe(max + 25);
      expect(d.decodeCopyData([fits.bytes]).materialize()).toEqual([fits.expected]);
      const over = wal.xlogData(messageOfSize(max + 1), H0); // payload max + 26
      const k = wal.keepalive(KEEPALIVES[0]!);
      expectError(() => d.decodeCopyData([k.bytes, over.bytes]),
        want({ code: "MESSAGE_TOO_LARGE", offset: 4 + KEEPALIVE_LENGTH, field: "frameLength", messageIndex: 1 }), "payload max + 26");
      // the size check comes first, whatever the payload holds
      expectError(() => d.decodeCopyData([new Uint8Array(max + 26)]),
        want({ code: "MESSAGE_TOO_LARGE", offset: 0, field: "frameLength", messageIndex: 0 }), "zeros max + 26");
      // decode() takes a message of max bytes
      expect(d.decode(messageOfSize(max).bytes).kind).toBe("Message");
    });

    it("payloads before the failing one are applied; the decoder keeps working", async () => {
      const d = await b.create();
      const s = wal.xlogData(encode.streamStart({ xid: XID, firstSegment: true }), H0);
      const list = [wal.xlogData(R_USERS, H0), s, wal.keepalive(KEEPALIVES[0]!)];
      const bad = wal.xlogData(BEGIN, H0).bytes.subarray(0, 30);
      const e = errorOf(() => d.decodeCopyData([...payloads(list), bad]), "cut Begin");
      expect(e).toEqual(want({ code: "INCOMPLETE", offset: payloadOffset(list, 3) + 25 + 1, field: "finalLsn", messageKind: "Begin", messageIndex: 3 }));
      expect(d.inStream).toBe(true);
      expect(d.relations.has(users.relationId)).toBe(true);
      const ins = wal.xlogData(encode.insert({ xid: XID, relation: users, newTuple: ["1", null, null, null] }), H0);
      expect(d.decodeCopyData([ins.bytes]).materialize()).toEqual([ins.expected]);
    });
  });

  describe("errors: pushBackend", () => {
    const k = backend.copyData(wal.keepalive(KEEPALIVES[0]!));
    const w = backend.copyData(wal.xlogData(BEGIN, H0));

    /** A frame header with a given Int32 length. */
    const header = (type: string, length: number): Uint8Array => {
      const h = new Uint8Array(5);
      h[0] = type.charCodeAt(0);
      new DataView(h.buffer).setUint32(1, length >>> 0);
      return h;
    };

    it("a length below 4 is INVALID_LENGTH at the length field, field frameLength", async () => {
      const d = await b.create();
      for (const length of [0, 1, 3, -1, -4, 0x80000000 | 0, 0xfffffffc | 0]) {
        for (const type of ["d", "E", "c"]) {
          d.reset();
          const raw = backendStream([k, w, header(type, length), w]);
          expectError(() => d.pushBackend(raw),
            want({ code: "INVALID_LENGTH", offset: backendOffset([k, w], 2) + 1, field: "frameLength", messageIndex: 2 }),
            `${type} length ${length}`);
          expect(() => d.end(), "nothing kept after the error").not.toThrow();
        }
      }
    });

    it("a body above maxMessageSize + 25 is MESSAGE_TOO_LARGE at the length field, as soon as the header is seen", async () => {
      const max = 100;
      const d = await b.create({ maxMessageSize: max });
      const fits = backend.copyData(wal.xlogData(messageOfSize(max), H0));
      expect(d.pushBackend(fits.bytes).materialize()).toEqual([fits.expected]);
      for (const type of ["d", "E", "N", "c"]) {
        for (const length of [max + 25 + 5 + 1, 0x7fffffff]) {
          d.reset();
          // only the header of the big frame arrived
          const raw = backendStream([k, header(type, length)]);
          expectError(() => d.pushBackend(raw),
            want({ code: "MESSAGE_TOO_LARGE", offset: k.bytes.length + 1, field: "frameLength", messageIndex: 1 }),
            `${type} length ${length}`);
          // header arriving in pieces: the error comes with its fifth byte, offset within (kept + chunk)
          d.reset();
          expect(d.pushBackend(raw.subarray(0, k.bytes.length + 2)).length).toBe(1);
          expect(d.pushBackend(raw.subarray(k.bytes.length + 2, k.bytes.length + 4)).length).toBe(0);
          expectError(() => d.pushBackend(raw.subarray(k.bytes.length + 4)),
            want({ code: "MESSAGE_TOO_LARGE", offset: 1, field: "frameLength", messageIndex: 0 }), `${type} length ${length}, split header`);
        }
      }
      // a non-CopyData body of max + 25 fits
      d.reset();
      const big = backend.other("N", new Uint8Array(max + 25));
      expect(d.pushBackend(big.bytes).length).toBe(1);
    });

    it("errors inside a CopyData payload: offsets within the call's input", async () => {
      const d = await b.create();
      const cases: { frame: Uint8Array; at: number; shape: Partial<ErrorShape> & { code: PgoutputErrorCode } }[] = [
        { frame: backendFrame("d", new Uint8Array(0)), at: 5, shape: { code: "INCOMPLETE", field: "tag" } },
        { frame: backendFrame("d", new Uint8Array([0x42, 0, 0])), at: 5, shape: { code: "UNKNOWN_MESSAGE", field: "tag" } },
        { frame: backendFrame("d", wal.xlogData(BEGIN, H0).bytes.subarray(0, 12)), at: 5 + 9, shape: { code: "INCOMPLETE", field: "walEnd" } },
        { frame: backendFrame("d", wal.keepalive(KEEPALIVES[0]!).bytes.subarray(0, 17)), at: 5 + 17, shape: { code: "INCOMPLETE", field: "replyRequested" } },
        {
          frame: backendFrame("d", new Uint8Array([...wal.keepalive(KEEPALIVES[0]!).bytes, 0])), at: 5 + 18,
          shape: { code: "TRAILING_BYTES", field: "end" },
        },
        {
          frame: backendFrame("d", wal.xlogData(BEGIN, H0).bytes.subarray(0, 25 + 5)), at: 5 + 25 + 1,
          shape: { code: "INCOMPLETE", field: "finalLsn", messageKind: "Begin" },
        },
        {
          frame: backendFrame("d", new Uint8Array([...wal.xlogData(BEGIN, H0).bytes, 7])), at: 5 + 25 + BEGIN.bytes.length,
          shape: { code: "TRAILING_BYTES", field: "end", messageKind: "Begin" },
        },
      ];
      for (const [i, c] of cases.entries()) {
        const raw = backendStream([backend.copyBothResponse(), k, c.frame, w]);
        const base = backendOffset([backend.copyBothResponse(), k], 2);
        d.reset();
        expectError(() => d.pushBackend(raw), want({ ...c.shape, offset: base + c.at, messageIndex: 2 }), `case ${i}: ${hex(c.frame)}`);
        // the same frame completed by a later push: offsets count the kept bytes first
        d.reset();
        const cut = base + 3;
        expect(d.pushBackend(raw.subarray(0, cut)).length, `case ${i}`).toBe(2);
        expectError(() => d.pushBackend(raw.subarray(cut)), want({ ...c.shape, offset: c.at, messageIndex: 0 }), `case ${i}, split`);
        // a second frame after a kept one: index and offset after it
        d.reset();
        const cut2 = backendOffset([backend.copyBothResponse()], 1) + 2;
        expect(d.pushBackend(raw.subarray(0, cut2)).length, `case ${i}`).toBe(1);
        expectError(() => d.pushBackend(raw.subarray(cut2)),
          want({ ...c.shape, offset: k.bytes.length + c.at, messageIndex: 1 }), `case ${i}, split before`);
      }
    });

    it("after an error nothing after the fault is kept; the decoder keeps working", async () => {
      const d = await b.create();
      const { frames, expected } = realisticStream();
      const raw = backendStream(frames);
      // a bad frame followed by the start of a good one
      const bad = concat([header("d", 2), w.bytes.subarray(0, 7)]);
      expect(errorOf(() => d.pushBackend(bad), "bad").code).toBe("INVALID_LENGTH");
      expect(() => d.end()).not.toThrow();
      // the next push starts a new stream
      expectSame(d.pushBackend(raw).materialize(), expected, "after INVALID_LENGTH");
      // an error inside a payload, with relations and stream state kept
      d.reset();
      d.pushBackend(backendStream([backend.copyData(wal.xlogData(R_USERS, H0)), backend.copyData(wal.xlogData(encode.streamStart({ xid: XID, firstSegment: true }), H0))]));
      expect(errorOf(() => d.pushBackend(backendFrame("d", new Uint8Array([0x77, 1]))), "cut").code).toBe("INCOMPLETE");
      expect(d.inStream).toBe(true);
      const ins = wal.xlogData(encode.insert({ xid: XID, relation: users, newTuple: ["9", null, null, null] }), H0);
      expect(d.pushBackend(backend.copyData(ins).bytes).materialize()).toEqual([ins.expected]);
    });

    it("end() throws INCOMPLETE while a frame is unfinished, then clears it", async () => {
      const d = await b.create();
      const { frames, expected } = realisticStream();
      const raw = backendStream(frames);
      const third = backendOffset(frames, 3);
      for (const n of [1, 4, 5, 6, third + 2, third + 4, third + 5, third + 30]) {
        d.reset();
        d.pushBackend(raw.subarray(0, n));
        // offset 0: where the kept frame starts; field frameLength while the 5-byte header is unfinished
        const pending = n >= third ? n - third : n;
        expectError(() => d.end(), want({ code: "INCOMPLETE", offset: 0, field: pending < 5 ? "frameLength" : "tag" }),
          `end() with ${pending} bytes of a frame pending`);
        expect(() => d.end()).not.toThrow();
        d.reset();
        expectSame(d.pushBackend(raw).materialize(), expected);
      }
    });
  });
});

