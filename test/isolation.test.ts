/**
 * Decoders in one process do not share state or memory: two decoders of the
 * same backend (two wasm instances, or two baselines) and a mixed pair,
 * interleaved — views of one stay valid while the other decodes, grows its
 * memory, fails or is reset, and go stale only at their own decoder's next
 * call; relation caches, stream state and unfinished pushed frames are each
 * decoder's own. Also: after an error in each input form the decoder keeps
 * the state of the messages before the fault and decodes the next input.
 * (Single-decoder stale views and reset() are in conformance.test.ts.)
 */
import { describe, expect, it } from "vitest";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { Insert } from "../bindings/messages.ts";
import { backend, backendNamed, onceAcrossBackends, type Backend } from "./support/backends.ts";
import { encode, frame } from "../devkit/encoder/encoder.ts";
import { backendFrame, backendStream, wal } from "../devkit/encoder/walsender-encoder.ts";
import { errorOf } from "./support/error-of.ts";

const relA = { relationId: 100, namespace: "a", relationName: "ta", columns: [{ name: "id", typeId: 23 }, { name: "v", typeId: 25 }] };
const relB = { relationId: 100, namespace: "b", relationName: "tb", columns: [{ name: "k", typeId: 25 }] };
const RA = encode.relation(relA);
const RB = encode.relation(relB);
const insA = (i: number) => encode.insert({ relation: relA, newTuple: [String(i), `a${i}`] });
const insB = (i: number) => encode.insert({ relation: relB, newTuple: [`b${i}`] });
const XID = 4242;
const H = { walStart: 10n, walEnd: 20n, sendTime: 30n };


// Two decoders of this run's backend; the mixed pair (wasm beside baseline) once.
const pairs: [Backend, Backend][] = [[backend, backend]];
if (onceAcrossBackends) pairs.push([backendNamed("wasm"), backendNamed("baseline")]);

for (const [ba, bb] of pairs) {
  describe(`two decoders: ${ba.name} and ${bb.name}`, () => {
    it("interleaved decodes: own caches, own views, stale only on their own decoder's next call", async () => {
      const a = await ba.create();
      const b = await bb.create();
      a.decode(RA.bytes);
      b.decode(RB.bytes); // same OID, another relation
      for (let i = 0; i < 200; i++) {
        const va = a.decode(insA(i).bytes) as Insert;
        const vb = b.decode(insB(i).bytes) as Insert;
        // b decoded after va was made: va is still good, and still names a's relation
        expect(va.newTuple.text("v")).toBe(`a${i}`);
        expect(va.relation!.name).toBe("ta");
        expect(vb.newTuple.text("k")).toBe(`b${i}`);
        const batchA = a.decodeBatch([insA(i + 1).bytes, insA(i + 2).bytes]);
        expect(errorOf(() => va.newTuple.text(0)).code).toBe("STALE_VIEW");
        expect(vb.newTuple.text(0)).toBe(`b${i}`); // a's call leaves b's view alone
        b.decodeFramed(frame([insB(i + 1)]));
        expect(errorOf(() => vb.materialize()).code).toBe("STALE_VIEW");
        expect(batchA.materialize()).toEqual([insA(i + 1).expected, insA(i + 2).expected]);
      }
      expect(a.relations.get(100)!.name).toBe("ta");
      expect(b.relations.get(100)!.name).toBe("tb");
    });

    it("one decoder growing its memory (a 16 MB value) leaves the other's views valid", async () => {
      const a = await ba.create();
      const b = await bb.create();
      a.decode(RA.bytes);
      b.decode(RA.bytes);
      const va = a.decode(insA(1).bytes) as Insert;
      const big = encode.insert({ relation: relA, newTuple: ["2", "x".repeat(16 << 20)] });
      const vb = b.decode(big.bytes) as Insert;
      expect(vb.newTuple.byteLength(1)).toBe(16 << 20);
      expect(va.materialize()).toEqual(insA(1).expected);
      // and the other way round: a small call on b (which may start a fresh instance) does not touch a
      b.decode(insA(3).bytes);
      expect(va.newTuple.text("v")).toBe("a1");
    });

    it("an error, a reset and stream state in one decoder leave the other alone", async () => {
      const a = await ba.create();
      const b = await bb.create();
      a.decode(RA.bytes);
      b.decode(RA.bytes);
      b.decode(encode.streamStart({ xid: XID, firstSegment: true }).bytes);
      const va = a.decode(insA(1).bytes) as Insert;
      // b fails
      expect(errorOf(() => b.decode(new Uint8Array([0x49, 0, 0]))).code).toBe("INCOMPLETE");
      expect(va.newTuple.text(1)).toBe("a1");
      expect(a.inStream).toBe(false);
      expect(b.inStream).toBe(true);
      // b's changes carry the xid, a's don't
      const inStream = encode.insert({ xid: XID, relation: relA, newTuple: ["5", "s"] });
      expect(b.decode(inStream.bytes).materialize()).toEqual(inStream.expected);
      expect(va.newTuple.text(1)).toBe("a1");
      // b is reset: a keeps its relations and its view
      b.reset();
      expect(b.inStream).toBe(false);
      expect(b.relations.size).toBe(0);
      expect(a.relations.size).toBe(1);
      expect(va.materialize()).toEqual(insA(1).expected);
      expect(a.decode(insA(2).bytes).materialize()).toEqual(insA(2).expected);
    });

    it("unfinished pushed frames are each decoder's own", async () => {
      const a = await ba.create();
      const b = await bb.create();
      const fa = frame([RA, insA(1), insA(2)]);
      const rawB = backendStream([RB, insB(1)].map((m) => backendFrame("d", wal.xlogData(m, H).bytes)));
      const gotA: Record<string, unknown>[] = [];
      const gotB: Record<string, unknown>[] = [];
      const steps = Math.max(fa.length, rawB.length);
      for (let p = 0; p < steps; p += 3) {
        gotA.push(...a.push(fa.subarray(p, p + 3)).materialize());
        gotB.push(...b.pushBackend(rawB.subarray(p, p + 3)).materialize());
        if (p === 30) {
          // an error in a third decoder and a reset of a fresh one change nothing here
          const c = await ba.create();
          expect(() => c.push(new Uint8Array([0, 0, 0, 1, 0x58]))).toThrow();
          c.reset();
        }
      }
      a.end();
      b.end();
      expect(gotA).toEqual([RA.expected, insA(1).expected, insA(2).expected]);
      expect(gotB).toEqual([RB, insB(1)].map((m) => wal.xlogData(m, H).expected));
    });
  });
}

// ---------------------------------------------------------------------------

describe(`${backend.name}: after an error, in each input form`, () => {
  const S = encode.streamStart({ xid: XID, firstSegment: true });
  const bad = new Uint8Array([0x58, 1, 2, 3]); // unknown tag
  const inStreamInsert = encode.insert({ xid: XID, relation: relA, newTuple: ["9", "z"] });

  /** The state the messages before the fault left: relation known, inside the stream. */
  function expectStateBefore(d: PgoutputDecoder): void {
    expect(d.relations.get(100)?.name).toBe("ta");
    expect(d.inStream).toBe(true);
    expect(d.decode(inStreamInsert.bytes).materialize()).toEqual(inStreamInsert.expected);
  }

  it("decode: a view made before the failing call is stale; the state is untouched", async () => {
    const d = await backend.create();
    d.decode(RA.bytes);
    d.decode(S.bytes);
    const v = d.decode(inStreamInsert.bytes) as Insert;
    expect(errorOf(() => d.decode(bad)).code).toBe("UNKNOWN_MESSAGE");
    expect(errorOf(() => v.newTuple.text(0)).code).toBe("STALE_VIEW");
    expectStateBefore(d);
  });

  it("decodeBatch and decodeFramed: the messages before the fault are applied", async () => {
    const d = await backend.create();
    expect(errorOf(() => d.decodeBatch([RA.bytes, S.bytes, bad, RB.bytes])).messageIndex).toBe(2);
    expectStateBefore(d);
    d.reset();
    expect(errorOf(() => d.decodeFramed(frame([RA, S, bad, RB]))).messageIndex).toBe(2);
    expectStateBefore(d);
  });

  it("decodeCopyData: the payloads before the fault are applied", async () => {
    const d = await backend.create();
    const list = [wal.xlogData(RA, H).bytes, wal.xlogData(S, H).bytes, wal.xlogData(bad, H).bytes, wal.xlogData(RB, H).bytes];
    expect(errorOf(() => d.decodeCopyData(list)).messageIndex).toBe(2);
    expectStateBefore(d);
  });

  it("push and pushBackend: state before the fault kept, the rest dropped, the next push starts a new stream", async () => {
    const d = await backend.create();
    const framed = frame([RA, S, bad, RB]);
    expect(errorOf(() => d.push(framed.subarray(0, framed.length - 2))).messageIndex).toBe(2);
    expect(() => d.end()).not.toThrow(); // nothing kept after the fault
    expectStateBefore(d);
    expect(d.push(frame([inStreamInsert])).materialize()).toEqual([inStreamInsert.expected]);

    d.reset();
    const raw = backendStream([RA, S, bad, RB].map((m) => backendFrame("d", wal.xlogData(m instanceof Uint8Array ? m : m.bytes, H).bytes)));
    expect(errorOf(() => d.pushBackend(raw.subarray(0, raw.length - 2))).messageIndex).toBe(2);
    expect(() => d.end()).not.toThrow();
    expectStateBefore(d);
    const next = wal.xlogData(inStreamInsert, H);
    expect(d.pushBackend(backendFrame("d", next.bytes)).materialize()).toEqual([next.expected]);
  });

  it("reset() after an error mid-frame in a stream clears the state and the unfinished frame", async () => {
    const d = await backend.create();
    const raw = backendStream([RA, S].map((m) => backendFrame("d", wal.xlogData(m, H).bytes)));
    expect(d.pushBackend(raw).length).toBe(2);
    expect(d.pushBackend(backendFrame("d", wal.xlogData(inStreamInsert, H).bytes).subarray(0, 9)).length).toBe(0);
    expect(d.inStream).toBe(true);
    d.reset();
    expect(() => d.end()).not.toThrow();
    expect([d.inStream, d.relations.size]).toEqual([false, 0]);
    const plain = encode.insert({ relationId: 100, newTuple: ["1", "p"] });
    expect(d.pushBackend(backendFrame("d", wal.xlogData(plain, H).bytes)).materialize()).toEqual([wal.xlogData(plain, H).expected]);
  });
});
