/**
 * Every fixture cut at every byte: through decode() each strict prefix is a
 * PgoutputError flagged `incomplete` (never another exception, never a
 * value); through push() and decodeFramed() each prefix of a framed stream
 * yields exactly the messages completed so far and waits for the rest. After
 * each error the decoder still decodes the next valid message.
 */
import { describe, expect, it } from "vitest";
import { backend } from "./support/backends.ts";
import { deepEqual, encode, fixtureRelations, fixtures, frame, framedOffset, hex, type Encoded, type Fixture } from "../devkit/encoder/encoder.ts";
import { randomStream } from "../devkit/fuzz/random.ts";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import { isPgoutputError } from "../bindings/errors.ts";

/** toEqual, with a fast check first (big arrays of messages). */
function expectSame(got: unknown, want: unknown, label?: string): void {
  if (!deepEqual(got, want)) expect(got, label).toEqual(want);
}

/** What decoding a prefix gave, in a form that reads well in a failure. */
function attempt(fn: () => unknown): string {
  try {
    const v = fn() as { materialize?: () => unknown; kind?: string };
    return `returned ${v?.kind ?? typeof v}`;
  } catch (e) {
    if (!isPgoutputError(e)) return `threw a non-PgoutputError: ${String(e)}`;
    return e.incomplete ? "incomplete" : `threw ${e.code} (incomplete=${e.incomplete}) at ${e.offset}: ${e.message}`;
  }
}

/** A prefix of this length is itself a valid message (a v4 Stream Abort cut after the sub-xid is a v2 one). */
function prefixIsValid(m: Encoded, length: number): boolean {
  return m.kind === "StreamAbort" && m.expected.abortLsn !== null && length === 9;
}

function setUp(d: PgoutputDecoder, f: Fixture): void {
  d.reset();
  for (const s of f.setup) d.decode(s.bytes);
}

/** A framed stream for a fixture (setup and message), and how to prepare a decoder for it. */
function framedFixture(d: PgoutputDecoder, f: Fixture): { list: Encoded[]; prepare: () => void } {
  if (f.options?.inStream === undefined) return { list: [...f.setup, f.message], prepare: () => d.reset() };
  return {
    list: [f.message],
    prepare: () => {
      setUp(d, f);
      d.inStream = f.options!.inStream!;
    },
  };
}

/** Number of whole frames in the first `length` bytes of frame(list). */
function wholeFrames(list: readonly Encoded[], length: number): number {
  let n = 0;
  while (n < list.length && framedOffset(list, n + 1) - 4 <= length) n++;
  return n;
}

const STREAM = (() => {
  const { users } = fixtureRelations;
  return [
    encode.relation(users),
    encode.begin({ finalLsn: 0x10n, commitTime: 1n, xid: 5 }),
    encode.insert({ relation: users, newTuple: ["1", "é😀", new Uint8Array([0, 1]), null] }),
    encode.streamStart({ xid: 6, firstSegment: true }),
    encode.update({ xid: 6, relation: users, oldTupleType: "O", oldTuple: ["1", null, null, null], newTuple: ["2", "x", null, { kind: "unchanged" }] }),
    encode.streamStop(),
    encode.delete({ relation: users, oldTupleType: "K", oldTuple: ["2", null, null, null] }),
    encode.commit({ commitLsn: 0x10n, endLsn: 0x20n, commitTime: 2n }),
    encode.streamAbort({ xid: 6, subXid: 6, abortLsn: 0x30n, abortTime: 3n }),
    encode.streamAbort({ xid: 6, subXid: 7 }),
    encode.rollbackPrepared({ prepareEndLsn: 1n, rollbackEndLsn: 2n, prepareTime: 3n, rollbackTime: 4n, xid: 8, gid: "g" }),
  ];
})();

describe(backend.name, () => {
  describe("decode(): every strict prefix is incomplete, then the whole message decodes", () => {
    for (const f of fixtures()) {
      it(f.name, async () => {
        const d = await backend.create();
        setUp(d, f);
        const bytes = f.message.bytes;
        for (let n = 0; n < bytes.length; n++) {
          const prefix = bytes.subarray(0, n); // the bytes after the cut are there, but not the decoder's
          if (prefixIsValid(f.message, n)) {
            expect(d.decode(prefix, f.options).materialize()).toEqual({ ...f.message.expected, abortLsn: null, abortTime: null });
          } else {
            expect(attempt(() => d.decode(prefix, f.options)), `prefix of ${n} bytes: ${hex(prefix)}`).toBe("incomplete");
          }
          expect(d.decode(bytes, f.options).materialize(), `after the ${n}-byte prefix`).toEqual(f.message.expected);
        }
        expect(d.decode(bytes, f.options).materialize()).toEqual(f.message.expected);
      });
    }
  });

  it("an empty message is incomplete, with the code INCOMPLETE", async () => {
    const d = await backend.create();
    try {
      d.decode(new Uint8Array(0));
      expect.unreachable("decode of nothing returned");
    } catch (e) {
      expect(isPgoutputError(e)).toBe(true);
      if (!isPgoutputError(e)) return;
      expect(e.code).toBe("INCOMPLETE");
      expect(e.incomplete).toBe(true);
    }
  });

  it("decodeBatch(): a cut last message is incomplete and names its index", async () => {
    const d = await backend.create();
    const list = STREAM.slice(0, 3);
    const last = list[2]!.bytes;
    for (let n = 0; n < last.length; n++) {
      d.reset();
      try {
        d.decodeBatch([list[0]!.bytes, list[1]!.bytes, last.slice(0, n)]);
        expect.unreachable(`cut at ${n} returned`);
      } catch (e) {
        if (!isPgoutputError(e)) throw e;
        expect(e.incomplete, `cut at ${n}`).toBe(true);
        expect(e.messageIndex, `cut at ${n}`).toBe(2);
      }
      expect(d.decode(last).materialize()).toEqual(list[2]!.expected);
    }
  });

  describe("push() and decodeFramed(): every prefix of a framed fixture", () => {
    for (const f of fixtures()) {
      it(f.name, async () => {
        const d = await backend.create();
        const { list, prepare } = framedFixture(d, f);
        const framed = frame(list);
        const expected = list.map((m) => m.expected);
        for (let n = 0; n <= framed.length; n++) {
          const k = wholeFrames(list, n);
          prepare();
          const fb = d.decodeFramed(framed.subarray(0, n));
          expect(fb.consumed, `decodeFramed of ${n} bytes`).toBe(k === 0 ? 0 : framedOffset(list, k) - 4);
          expect(fb.materialize(), `decodeFramed of ${n} bytes`).toEqual(expected.slice(0, k));
          prepare();
          const first = d.push(framed.subarray(0, n)).materialize();
          expect(first, `push of the first ${n} bytes`).toEqual(expected.slice(0, k));
          const rest = d.push(framed.subarray(n)).materialize();
          expect(rest, `push of the rest after ${n} bytes`).toEqual(expected.slice(k));
          d.end();
        }
      });
    }
  });

  it("push(): every prefix of a longer framed stream yields the complete messages so far", async () => {
    const d = await backend.create();
    const framed = frame(STREAM);
    const expected = STREAM.map((m) => m.expected);
    for (let n = 0; n <= framed.length; n++) {
      d.reset();
      const k = wholeFrames(STREAM, n);
      expect(d.push(framed.subarray(0, n)).materialize(), `first ${n} bytes`).toEqual(expected.slice(0, k));
      expect(d.push(new Uint8Array(0)).length).toBe(0);
      expect(d.push(framed.subarray(n)).materialize(), `rest after ${n} bytes`).toEqual(expected.slice(k));
      expect(() => d.end()).not.toThrow();
    }
  });

  it("end() throws INCOMPLETE on an unfinished frame, then clears it", async () => {
    const d = await backend.create();
    const framed = frame(STREAM);
    const expected = STREAM.map((m) => m.expected);
    for (const n of [1, 3, 4, 5, framedOffset(STREAM, 3) + 2]) {
      d.reset();
      const k = wholeFrames(STREAM, n);
      expect(d.push(framed.subarray(0, n)).length).toBe(k);
      let error: unknown;
      try {
        d.end();
      } catch (e) {
        error = e;
      }
      expect(isPgoutputError(error), `end() after ${n} bytes`).toBe(true);
      if (!isPgoutputError(error)) continue;
      expect(error.code).toBe("INCOMPLETE");
      expect(error.incomplete).toBe(true);
      expect(() => d.end()).not.toThrow();
      d.reset();
      expect(d.push(framed).materialize()).toEqual(expected);
    }
  });

  it("push(): prefixes of a large random stream, sampled", async () => {
    const d = await backend.create();
    const stream = randomStream(77, { messages: 300 });
    const framed = frame(stream);
    const expected = stream.map((m) => m.expected);
    const step = Math.ceil(framed.length / 150);
    for (let n = 0; n <= framed.length; n += step) {
      d.reset();
      const k = wholeFrames(stream, n);
      expectSame(d.push(framed.subarray(0, n)).materialize(), expected.slice(0, k), `first ${n} bytes`);
      expectSame(d.push(framed.subarray(n)).materialize(), expected.slice(k), `rest after ${n} bytes`);
    }
  });

  it("decode(): sampled prefixes of a 1,600-column row are incomplete", async () => {
    const d = await backend.create();
    const rel = {
      relationId: 31, namespace: "public", relationName: "wide",
      columns: Array.from({ length: 1600 }, (_, i) => ({ name: `c${i}`, typeId: 25 })),
    };
    const r = encode.relation(rel);
    const ins = encode.insert({ relation: rel, newTuple: rel.columns.map((_, i) => (i % 3 ? `${i}` : null)) });
    for (const m of [r, ins]) {
      for (let n = 0; n < m.bytes.length; n += 13) {
        expect(attempt(() => d.decode(m.bytes.subarray(0, n))), `${m.kind} cut at ${n}`).toBe("incomplete");
      }
      expect(d.decode(m.bytes).materialize()).toEqual(m.expected);
    }
  });
});
