/**
 * Differential test: the wasm decoder and the pure-TS baseline must agree
 * exactly — the same materialized values for seeded random valid streams, and
 * the same errors (code, offset, incomplete, message index, kind, field) for randomly
 * corrupted copies (bit flips, truncation, garbage, forged lengths). Every
 * failure names its seed so it can be replayed. *
 * Every call also runs on a third decoder over the twin kernel
 * (support/twin-kernel.ts): the wasm kernel and the baseline's TS build on
 * one memory image, whose status, result words, tape and width table must
 * be equal word for word; its outcome must be the wasm decoder's.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { bothOutcomes, corruptedInStream, differentialDecoders, Differences, garbageRun, type Outcome } from "./support/differences.ts";
import { deepEqual, frame, hex, type Encoded } from "../devkit/encoder/encoder.ts";
import { Random, randomSplits, randomStream } from "../devkit/fuzz/random.ts";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import { corrupt, type Corruption } from "../devkit/fuzz/corrupt.ts";

/** toEqual, with a fast check first (big arrays of messages). */
function expectSame(got: unknown, want: unknown, label?: string): void {
  if (!deepEqual(got, want)) expect(got, label).toEqual(want);
}

const SEEDS = [1, 2, 3, 0xdeadbeef, 20240607, 987654321];
const MESSAGES = 3000;
const TAGS = "BCOMRYIUDTSEcAbPKrp";


/** How this suite corrupts a pgoutput message (devkit/fuzz/corrupt.ts). */
const CORRUPTION: Corruption = { odds: [0.3, 0.5, 0.62, 0.77, 0.92], forged: [0xffffffff, 0x80000000, 0x7fffffff, 0x00010000, 0x0000ffff, 0x00008000], tags: TAGS };

describe("wasm and baseline agree", () => {
  let wasm: PgoutputDecoder;
  let baseline: PgoutputDecoder;
  /** The wasm kernel and its TS build on one memory image, compared word for word on every call (support/twin-kernel.ts). */
  let twin: PgoutputDecoder;
  const streams = new Map<number, Encoded[]>();

  beforeAll(async () => {
    ({ wasm, baseline, twin } = await differentialDecoders());
    for (const seed of SEEDS) streams.set(seed, randomStream(seed, { messages: MESSAGES }));
  });

  /** The wasm and the baseline outcome; the twin kernel's must be the wasm one (and its kernels agreed on every call). */
  const both = (fn: (d: PgoutputDecoder) => unknown): [Outcome, Outcome] => bothOutcomes(fn, wasm, twin, baseline);

  for (const seed of SEEDS) {
    describe(`seed ${seed}`, () => {
      it("valid stream, one message at a time", () => {
        const stream = streams.get(seed)!;
        wasm.reset();
        twin.reset();
        baseline.reset();
        for (let i = 0; i < stream.length; i++) {
          const m = stream[i]!;
          const [w, b] = both((d) => d.decode(m.bytes).materialize());
          if (!w.ok || !b.ok || !deepEqual(w.value, b.value) || !deepEqual(w.value, m.expected)) {
            expect({ wasm: w, baseline: b }, `seed ${seed}, message ${i} (${m.kind}): ${hex(m.bytes)}`).toEqual({
              wasm: { ok: true, value: m.expected },
              baseline: { ok: true, value: m.expected },
            });
          }
        }
      });

      it("valid stream, framed and pushed in random chunks", () => {
        const stream = streams.get(seed)!;
        const framed = frame(stream);
        wasm.reset();
        twin.reset();
        baseline.reset();
        const [w, b] = both((d) => d.decodeFramed(framed).materialize());
        expect(w.ok && b.ok && deepEqual(w.value, b.value), `seed ${seed}: decodeFramed differs`).toBe(true);
        const r = new Random(seed ^ 0x5a5a5a5a);
        const cuts = randomSplits(r, framed.length);
        wasm.reset();
        twin.reset();
        baseline.reset();
        let p = 0;
        for (const c of [...cuts, framed.length]) {
          const chunk = framed.subarray(p, c);
          const [pw, pb] = both((d) => d.push(chunk).materialize());
          if (!deepEqual(pw, pb)) expect(pw, `seed ${seed}: push of bytes ${p}..${c}`).toEqual(pb);
          p = c;
        }
      });

      it("corrupted messages inside a valid stream: same values or same errors", () => {
        const decode = (bytes: Uint8Array) => (d: PgoutputDecoder) => d.decode(bytes).materialize();
        corruptedInStream({
          seed, items: streams.get(seed)!, noun: "message", corruption: CORRUPTION, decoders: [wasm, twin, baseline],
          decodeCorrupted: (bytes) => ({ fn: decode(bytes), note: "" }),
          decode,
        });
      });

      it("corrupted framed windows and batches: same values or same errors", () => {
        const stream = streams.get(seed)!;
        const r = new Random(seed ^ 0x7654321);
        const diffs = new Differences(`seed ${seed}`);
        for (let round = 0; round < 60; round++) {
          const start = r.int(0, Math.min(stream.length, 600) - 1); // the prefix is replayed each round
          const window = stream.slice(start, start + r.int(1, 40));
          const framed = frame(window);
          const c = corrupt(r, framed, CORRUPTION);
          const prefix = stream.slice(0, start).map((m) => m.bytes);
          const prime = (d: PgoutputDecoder) => {
            d.reset();
            d.decodeBatch(prefix); // same relations and stream state in both
          };
          const where = `round ${round}, messages ${start}..${start + window.length - 1}`;
          const [w, b] = both((d) => {
            prime(d);
            const batch = d.decodeFramed(c.bytes);
            return { consumed: batch.consumed, messages: batch.materialize() };
          });
          diffs.check(`${where}, decodeFramed, ${c.how}: ${hex(c.bytes)}`, w, b);
          // one message of a decodeBatch list corrupted
          const list = window.map((m) => m.bytes);
          const k = r.int(0, list.length - 1);
          const ck = corrupt(r, list[k]!, CORRUPTION);
          list[k] = ck.bytes;
          const [bw, bb] = both((d) => {
            prime(d);
            return d.decodeBatch(list).materialize();
          });
          diffs.check(`${where}, decodeBatch, message ${k} ${ck.how}: ${hex(ck.bytes)}`, bw, bb);
          // the corrupted framed bytes pushed in random chunks, until the first error
          const cuts = randomSplits(r, c.bytes.length);
          prime(wasm);
          prime(twin);
          prime(baseline);
          let p = 0;
          for (const cut of [...cuts, c.bytes.length]) {
            const chunk = c.bytes.subarray(p, cut);
            const [pw, pb] = both((d) => d.push(chunk).materialize());
            if (!diffs.check(`${where}, push of bytes ${p}..${cut}, ${c.how}`, pw, pb) || !pw.ok) break;
            p = cut;
          }
        }
        diffs.report();
      });
    });
  }

  it("random garbage messages", () => {
    garbageRun(4242, 3000, 40, [wasm, twin, baseline], (bytes, i, r, diffs) => {
      if (bytes.length > 0 && r.chance(0.7)) bytes[0] = TAGS.charCodeAt(r.int(0, TAGS.length - 1));
      const inStream = r.chance(0.5);
      const [w, b] = both((d) => d.decode(bytes, { inStream }).materialize());
      diffs.check(`garbage #${i} (inStream ${inStream}): ${hex(bytes)}`, w, b);
      baseline.inStream = wasm.inStream;
      twin.inStream = wasm.inStream;
    });
  });
});

