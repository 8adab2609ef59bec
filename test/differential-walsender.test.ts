/**
 * Differential test of the walsender framings: the wasm decoder and the
 * pure-TS baseline must agree exactly on `decodeCopyData` and `pushBackend` —
 * the same materialized values (and `consumed`) for seeded random valid
 * streams (random pgoutput streams wrapped in XLogData with random headers,
 * random keepalives, and for raw bytes other backend messages), and the same
 * errors (code, offset, incomplete, message index, kind, field) for randomly
 * corrupted copies, with the same decoder state afterwards. Every failure
 * names its seed so it can be replayed. *
 * Every call also runs on a third decoder over the twin kernel
 * (support/twin-kernel.ts): the wasm kernel and the baseline's TS build on
 * one memory image, whose status, result words, tape and width table must
 * be equal word for word; its outcome must be the wasm decoder's.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { bothOutcomes, corruptedInStream, differentialDecoders, Differences, garbageRun, type Outcome } from "./support/differences.ts";
import { concat, deepEqual, hex } from "../devkit/encoder/encoder.ts";
import { Random, randomLsn, randomSplits, randomStream, randomString, randomTime } from "../devkit/fuzz/random.ts";
import { backend, backendStream, wal, type BackendEncoded, type WalEncoded } from "../devkit/encoder/walsender-encoder.ts";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import { corrupt, type Corruption } from "../devkit/fuzz/corrupt.ts";

const SEEDS = [11, 12, 0xfeedface, 31337, 20250101];
const MESSAGES = 1500;
/** Payload tags, pgoutput tags and backend types: what a corrupted tag byte becomes. */
const TAGS = "wkwkdBCOMRYIUDTSEcAbPKrpENcCZW";


/** A random pgoutput stream as walsender payloads: XLogData with random headers, keepalives in between. */
function walPayloads(seed: number): WalEncoded[] {
  const stream = randomStream(seed, { messages: MESSAGES });
  const r = new Random(seed ^ 0x3c3c3c3c);
  const out: WalEncoded[] = [];
  for (const m of stream) {
    while (r.chance(0.12)) out.push(wal.keepalive({ walEnd: randomLsn(r), sendTime: randomTime(r), replyRequested: r.chance(0.3) }));
    out.push(wal.xlogData(m, { walStart: randomLsn(r), walEnd: randomLsn(r), sendTime: randomTime(r) }));
  }
  return out;
}

/** The raw backend bytes of a replication session carrying `payloads`, with notices and other messages in between. */
function rawSession(seed: number, payloads: readonly WalEncoded[]): BackendEncoded[] {
  const r = new Random(seed ^ 0x0f0f0f0f);
  const frames: BackendEncoded[] = [backend.copyBothResponse()];
  for (const p of payloads) {
    const roll = r.float();
    if (roll < 0.02) frames.push(backend.noticeResponse({ S: "WARNING", C: "01000", M: randomString(r, 40) }));
    else if (roll < 0.03) frames.push(backend.other("S", r.bytes(r.int(0, 12)))); // ParameterStatus-like
    else if (roll < 0.035) frames.push(backend.errorResponse({ S: "ERROR", C: "XX000", M: randomString(r, 30), D: randomString(r) }));
    frames.push(backend.copyData(p));
  }
  frames.push(backend.copyDone(), backend.commandComplete("START_REPLICATION"), backend.readyForQuery("I"));
  return frames;
}

/** How this suite corrupts a payload (devkit/fuzz/corrupt.ts): a tag byte is the payload's, or the pgoutput message's after a 25-byte XLogData header. */
const CORRUPTION: Corruption = {
  odds: [0.25, 0.45, 0.55, 0.7, 0.85],
  forged: [0xffffffff, 0x80000000, 0x7fffffff, 0x00010000, 0x0000ffff, 0, 3, 4, 5],
  tags: TAGS,
  tagAt: (r, b) => (b.length > 25 && r.chance(0.5) ? 25 : 0),
};

describe("wasm and baseline agree on walsender streams", () => {
  let wasm: PgoutputDecoder;
  let baseline: PgoutputDecoder;
  /** The wasm kernel and its TS build on one memory image, compared word for word on every call (support/twin-kernel.ts). */
  let twin: PgoutputDecoder;
  const sessions = new Map<number, { payloads: WalEncoded[]; frames: BackendEncoded[]; raw: Uint8Array }>();

  beforeAll(async () => {
    ({ wasm, baseline, twin } = await differentialDecoders());
    for (const seed of SEEDS) {
      const payloads = walPayloads(seed);
      const frames = rawSession(seed, payloads);
      sessions.set(seed, { payloads, frames, raw: backendStream(frames) });
    }
  });

  /** The wasm and the baseline outcome; the twin kernel's must be the wasm one (and its kernels agreed on every call). */
  const both = (fn: (d: PgoutputDecoder) => unknown): [Outcome, Outcome] => bothOutcomes(fn, wasm, twin, baseline);

  /** Whole-batch results with consumed. */
  const copyData = (list: readonly Uint8Array[]) => (d: PgoutputDecoder) => {
    const b = d.decodeCopyData(list);
    return { consumed: b.consumed, messages: b.materialize() };
  };
  const pushBackend = (chunk: Uint8Array) => (d: PgoutputDecoder) => {
    const b = d.pushBackend(chunk);
    return { consumed: b.consumed, messages: b.materialize() };
  };

  /** Both decoders in the same state: reset, then the payloads before `start` decoded. */
  const prime = (payloads: readonly WalEncoded[], start: number) => {
    const prefix = payloads.slice(0, start).map((p) => p.bytes);
    for (const d of [wasm, twin, baseline]) {
      d.reset();
      d.decodeCopyData(prefix);
    }
  };

  for (const seed of SEEDS) {
    describe(`seed ${seed}`, () => {
      it("valid payloads: one call, one payload per call", () => {
        const { payloads } = sessions.get(seed)!;
        const expected = payloads.map((p) => p.expected);
        wasm.reset();
        twin.reset();
        baseline.reset();
        const [w, b] = both((d) => d.decodeCopyData(payloads.map((p) => p.bytes)).materialize());
        if (!w.ok || !b.ok || !deepEqual(w.value, expected) || !deepEqual(b.value, expected)) {
          expect({ wasm: w, baseline: b }, `seed ${seed}: decodeCopyData of all`).toEqual({
            wasm: { ok: true, value: expected },
            baseline: { ok: true, value: expected },
          });
        }
        wasm.reset();
        twin.reset();
        baseline.reset();
        const diffs = new Differences(`seed ${seed}`);
        for (let i = 0; i < payloads.length; i++) {
          const p = payloads[i]!;
          const [pw, pb] = both(copyData([p.bytes]));
          diffs.check(`payload ${i} (${p.kind}): ${hex(p.bytes)}`, pw, pb);
          if (pb.ok && !deepEqual((pb.value as { messages: unknown }).messages, [p.expected])) {
            diffs.add(`payload ${i} (${p.kind}): baseline value differs from the encoder's`, "baseline value");
          }
        }
        diffs.report();
      });

      it("valid raw session, pushed in random chunks", () => {
        const { frames, raw } = sessions.get(seed)!;
        const expected = frames.map((f) => f.expected);
        const r = new Random(seed ^ 0x5a5a5a5a);
        const cuts = randomSplits(r, raw.length);
        const diffs = new Differences(`seed ${seed}`);
        wasm.reset();
        twin.reset();
        baseline.reset();
        const got: unknown[] = [];
        let p = 0;
        for (const c of [...cuts, raw.length]) {
          const [pw, pb] = both(pushBackend(raw.subarray(p, c)));
          diffs.check(`push of bytes ${p}..${c}`, pw, pb);
          if (pb.ok) got.push(...(pb.value as { messages: unknown[] }).messages);
          p = c;
        }
        const [ew, eb] = both((d) => d.end());
        diffs.check("end()", ew, eb);
        diffs.report();
        if (!deepEqual(got, expected)) expect(got, `seed ${seed}: pushed messages (baseline)`).toEqual(expected);
      });

      it("corrupted payloads inside a valid stream: same values or same errors, same state", () => {
        corruptedInStream({
          seed, items: sessions.get(seed)!.payloads, noun: "payload", corruption: CORRUPTION, decoders: [wasm, twin, baseline],
          decodeCorrupted: (bytes, r) => {
            // alone, or after a good keepalive (offsets and index shift)
            const list = r.chance(0.5) ? [bytes] : [wal.keepalive({ walEnd: 1n, sendTime: 2n, replyRequested: false }).bytes, bytes];
            return { fn: copyData(list), note: `, list of ${list.length}` };
          },
          decode: (bytes) => copyData([bytes]),
        });
      });

      it("corrupted windows: decodeCopyData lists and raw bytes pushed in chunks", () => {
        const { payloads } = sessions.get(seed)!;
        const r = new Random(seed ^ 0x7654321);
        const diffs = new Differences(`seed ${seed}`);
        for (let round = 0; round < 60; round++) {
          const start = r.int(0, Math.min(payloads.length, 500) - 1); // the prefix is replayed each round
          const window = payloads.slice(start, start + r.int(1, 40));
          const where = `round ${round}, payloads ${start}..${start + window.length - 1}`;
          // one payload of a list corrupted
          const list = window.map((p) => p.bytes);
          const k = r.int(0, list.length - 1);
          const ck = corrupt(r, list[k]!, CORRUPTION);
          list[k] = ck.bytes;
          prime(payloads, start);
          const [bw, bb] = both(copyData(list));
          diffs.check(`${where}, decodeCopyData, payload ${k} ${ck.how}: ${hex(ck.bytes)}`, bw, bb);
          // the window's raw backend bytes corrupted, pushed in random chunks to the end (errors included)
          const raw = backendStream(rawSession(seed + round, window));
          const c = corrupt(r, raw, CORRUPTION);
          const cuts = randomSplits(r, c.bytes.length);
          prime(payloads, start);
          let p = 0;
          for (const cut of [...cuts, c.bytes.length]) {
            const chunk = c.bytes.subarray(p, cut);
            const [pw, pb] = both(pushBackend(chunk));
            diffs.check(`${where}, pushBackend of bytes ${p}..${cut}, ${c.how}: ${hex(chunk)}`, pw, pb);
            if (wasm.inStream !== baseline.inStream) {
              diffs.add(`${where}, pushBackend of bytes ${p}..${cut}, ${c.how}: stream state differs`, "inStream");
              baseline.inStream = wasm.inStream;
              twin.inStream = wasm.inStream;
            }
            p = cut;
          }
          const [ew, eb] = both((d) => d.end());
          diffs.check(`${where}, end() after ${c.how}`, ew, eb);
        }
        diffs.report();
      });
    });
  }

  it("random garbage payloads", () => {
    garbageRun(4243, 3000, 60, [wasm, twin, baseline], (bytes, i, r, diffs) => {
      const n = bytes.length;
      if (n > 0 && r.chance(0.8)) bytes[0] = r.pick([0x77, 0x77, 0x6b, 0x64]);
      if (n > 25 && r.chance(0.6)) bytes[25] = TAGS.charCodeAt(r.int(0, TAGS.length - 1));
      const inStream = r.chance(0.5);
      wasm.inStream = inStream;
      twin.inStream = inStream;
      baseline.inStream = inStream;
      const [w, b] = both(copyData([bytes]));
      diffs.check(`garbage #${i} (inStream ${inStream}): ${hex(bytes)}`, w, b);
    });
  });

  it("random garbage backend frames", () => {
    const r = new Random(4244);
    const diffs = new Differences("seed 4244");
    for (let i = 0; i < 2000; i++) {
      wasm.reset();
      twin.reset();
      baseline.reset();
      const parts: Uint8Array[] = [];
      for (let f = r.int(1, 6); f > 0; f--) {
        const body = r.bytes(r.int(0, 50));
        if (body.length > 0 && r.chance(0.7)) body[0] = r.pick([0x77, 0x6b]);
        const frame = new Uint8Array(5 + body.length);
        frame[0] = r.chance(0.7) ? 0x64 : r.int(0, 255);
        const length = r.chance(0.8) ? 4 + body.length : r.pick([0, 3, 4 + body.length + r.int(1, 10), 0xffffffff, 0x7fffffff, r.u32()]);
        new DataView(frame.buffer).setUint32(1, length >>> 0);
        frame.set(body, 5);
        parts.push(frame);
      }
      const raw = concat(parts);
      const cut = r.int(0, raw.length);
      const [w1, b1] = both(pushBackend(raw.subarray(0, cut)));
      diffs.check(`garbage #${i}, first ${cut} bytes: ${hex(raw)}`, w1, b1);
      const [w2, b2] = both(pushBackend(raw.subarray(cut)));
      diffs.check(`garbage #${i}, rest after ${cut}: ${hex(raw)}`, w2, b2);
      const [ew, eb] = both((d) => d.end());
      diffs.check(`garbage #${i}, end(): ${hex(raw)}`, ew, eb);
    }
    diffs.report();
  });
});

