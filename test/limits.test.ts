/**
 * Limits, in both backends:
 * - `maxMessageSize`: default 1 GiB (PostgreSQL's MaxAllocSize ceiling), a
 *   RangeError above it; a message over the limit is MESSAGE_TOO_LARGE
 *   through every input form (a frame from its length header alone, without
 *   the wasm memory growing for the declared size), one of exactly the
 *   limit decodes, and the decoder goes on.
 * - A 256 MB text value decodes (checked by its length, a few bytes and the
 *   column after it); afterwards the wasm decoder gives the memory back: its
 *   next small call runs on a fresh, small instance and the process RSS drops
 *   (when a gc can be forced).
 * - 1,600 columns through decode, decodeCopyData and pushBackend, by name.
 * - 10,000 relations in the cache, each used by an insert.
 *
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { PgoutputError } from "../bindings/errors.ts";
import { MAX_MESSAGE_SIZE } from "../bindings/limits.ts";
import type { Insert, Update } from "../bindings/messages.ts";
import { backend, backends, onceAcrossBackends } from "./support/backends.ts";
import { deepEqual, encode, frame, type Encoded, type RelationDesc } from "../devkit/encoder/encoder.ts";
import { trackWasmMemory } from "../devkit/fuzz/fuzz.ts";
import { backend as be, backendFrame, backendStream, wal } from "../devkit/encoder/walsender-encoder.ts";
import { errorOf } from "./support/error-of.ts";

const MiB = 2 ** 20;
const H = { walStart: 1n, walEnd: 2n, sendTime: 3n };

let memory: ReturnType<typeof trackWasmMemory>;
beforeAll(() => {
  memory = trackWasmMemory();
});
afterAll(() => memory.restore());

/** A forced full gc, where V8 lets us have one. */
const gc: (() => void) | undefined = (() => {
  try {
    setFlagsFromString("--expose-gc");
    return runInNewContext("gc") as () => void;
  } catch {
    return undefined;
  }
})();


function shape(e: PgoutputError) {
  return { code: e.code, offset: e.offset, field: e.field, messageIndex: e.messageIndex, incomplete: e.incomplete };
}

/** A Message (`M`) of exactly `size` bytes. */
function messageOfSize(size: number): Encoded {
  return encode.message({ transactional: false, lsn: 1n, prefix: "", content: new Uint8Array(size - 15) });
}

/** A frame header declaring `length` bytes, and the first byte of the message. */
function frameHeader(length: number): Uint8Array {
  const b = new Uint8Array(5);
  new DataView(b.buffer).setUint32(0, length);
  b[4] = 0x4d;
  return b;
}

const GOOD = encode.begin({ finalLsn: 1n, commitTime: 2n, xid: 3 });

function stillWorks(d: PgoutputDecoder): void {
  d.reset();
  expect(d.decode(GOOD.bytes).materialize()).toEqual(GOOD.expected);
  expect(d.push(frame([GOOD])).materialize()).toEqual([GOOD.expected]);
  d.end();
}

describe("maxMessageSize", () => {
  if (onceAcrossBackends) it("defaults to 1 GiB, accepts up to it, and refuses more or nonsense with a RangeError", async () => {
    expect(MAX_MESSAGE_SIZE).toBe(2 ** 30);
    for (const b of backends) {
      await expect(b.create({ maxMessageSize: 2 ** 30 })).resolves.toBeDefined();
      await expect(b.create({ maxMessageSize: 0 })).resolves.toBeDefined();
      for (const bad of [2 ** 30 + 1, 2 ** 31, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        await expect(b.create({ maxMessageSize: bad }), `${b.name} ${bad}`).rejects.toThrow(RangeError);
      }
    }
  });

  describe(backend.name, () => {
    it("at the default limit, a frame declaring 1 GiB waits for its bytes, one declaring 1 GiB + 1 is MESSAGE_TOO_LARGE — memory does not grow for either", async () => {
      const d = await backend.create();
      memory.takePeak();
      // framed / push
      const fits = frameHeader(2 ** 30);
      const over = frameHeader(2 ** 30 + 1);
      const fb = d.decodeFramed(fits);
      expect([fb.length, fb.consumed]).toEqual([0, 0]);
      expect(d.push(fits).length).toBe(0);
      expect(d.push(new Uint8Array(1000)).length).toBe(0);
      expect(errorOf(() => d.end()).code).toBe("INCOMPLETE");
      expect(shape(errorOf(() => d.decodeFramed(over)))).toEqual({ code: "MESSAGE_TOO_LARGE", offset: 0, field: "frameLength", messageIndex: 0, incomplete: false });
      d.reset();
      expect(shape(errorOf(() => d.push(over)))).toEqual({ code: "MESSAGE_TOO_LARGE", offset: 0, field: "frameLength", messageIndex: 0, incomplete: false });
      // backend frames: the body may be the message + the 25 bytes before it in an XLogData
      d.reset();
      expect(d.pushBackend(backendHeader(4 + 25 + 2 ** 30)).length).toBe(0);
      expect(errorOf(() => d.end()).code).toBe("INCOMPLETE");
      d.reset();
      expect(shape(errorOf(() => d.pushBackend(backendHeader(4 + 25 + 2 ** 30 + 1))))).toEqual({
        code: "MESSAGE_TOO_LARGE", offset: 1, field: "frameLength", messageIndex: 0, incomplete: false,
      });
      expect(memory.takePeak(), "the largest wasm memory grown to").toBeLessThan(4 * MiB);
      stillWorks(d);
    });

    it("a configured limit: exactly it decodes, one byte more is MESSAGE_TOO_LARGE, in every input form", async () => {
      const L = 1000;
      const d = await backend.create({ maxMessageSize: L });
      const ok = messageOfSize(L);
      const big = messageOfSize(L + 1);
      const tooLarge = (fn: () => unknown, offset: number, messageIndex: number | undefined, form: string) => {
        d.reset();
        const e = errorOf(fn);
        expect({ ...shape(e), form }).toMatchObject({ code: "MESSAGE_TOO_LARGE", offset, messageIndex, incomplete: false, form });
        expect(e.message).toMatch(/maxMessageSize|too large|larger/i);
        d.reset();
      };
      const works = (fn: () => unknown, form: string) => {
        d.reset();
        expect(fn(), form).toEqual(form.startsWith("copy") || form.startsWith("backend") ? [wal.xlogData(ok, H).expected] : [ok.expected]);
      };

      works(() => [d.decode(ok.bytes).materialize()], "decode");
      tooLarge(() => d.decode(big.bytes), 0, undefined, "decode");

      works(() => d.decodeBatch([ok.bytes]).materialize(), "decodeBatch");
      tooLarge(() => d.decodeBatch([GOOD.bytes, big.bytes]), 4 + GOOD.bytes.length, 1, "decodeBatch");

      works(() => d.decodeFramed(frame([ok])).materialize(), "decodeFramed");
      tooLarge(() => d.decodeFramed(frame([GOOD, big])), 4 + GOOD.bytes.length, 1, "decodeFramed");

      works(() => d.push(frame([ok])).materialize(), "push");
      tooLarge(() => d.push(frame([GOOD, big])), 4 + GOOD.bytes.length, 1, "push");
      // the header alone is enough
      tooLarge(() => d.push(frame([big]).subarray(0, 4)), 0, 0, "push of the header");

      works(() => d.decodeCopyData([wal.xlogData(ok, H).bytes]).materialize(), "copyData");
      tooLarge(() => d.decodeCopyData([wal.xlogData(GOOD, H).bytes, wal.xlogData(big, H).bytes]), 4 + 25 + GOOD.bytes.length, 1, "copyData");

      const okFrame = be.copyData(wal.xlogData(ok, H));
      works(() => d.pushBackend(okFrame.bytes).materialize(), "backend");
      const bigFrame = be.copyData(wal.xlogData(big, H));
      tooLarge(() => d.pushBackend(bigFrame.bytes.subarray(0, 5)), 1, 0, "backend, header only");

      stillWorks(d);
    });

    it("decode() of a message of 1 GiB + 1 bytes at the default limit is MESSAGE_TOO_LARGE (its body is never copied)", async () => {
      const d = await backend.create();
      const e = tooBig(d);
      expect(e.code).toBe("MESSAGE_TOO_LARGE");
      stillWorks(d);
    }, 120_000);
  });
});

function tooBig(d: PgoutputDecoder): PgoutputError {
  const m = new Uint8Array(2 ** 30 + 1);
  m[0] = 0x4d;
  return errorOf(() => d.decode(m));
}

function backendHeader(length: number): Uint8Array {
  const b = new Uint8Array(6);
  b[0] = 0x64;
  new DataView(b.buffer).setInt32(1, length);
  b[5] = 0x77;
  return b;
}

// ---------------------------------------------------------------------------

describe("a 256 MB text value", () => {
  const N = 256 * MiB;
  const BIG_REL = { relationId: 7, namespace: "public", relationName: "big", columns: [{ name: "doc", typeId: 25 }, { name: "tail", typeId: 25 }] };
  const R = encode.relation(BIG_REL);
  const SMALL = encode.insert({ relation: BIG_REL, newTuple: ["x", "y"] });

  /** Insert(doc = 'S','T', 'a' × (N - 6), U+1F600; tail = 'end'), written directly (no 256 MB string). */
  function bigInsert(): Uint8Array {
    const tail = new TextEncoder().encode("end");
    const b = new Uint8Array(1 + 4 + 1 + 2 + 1 + 4 + N + 1 + 4 + tail.length);
    const dv = new DataView(b.buffer);
    b[0] = 0x49;
    dv.setUint32(1, 7);
    b[5] = 0x4e;
    dv.setUint16(6, 2);
    b[8] = 0x74;
    dv.setUint32(9, N);
    b.fill(0x61, 13, 13 + N);
    b.set([0x53, 0x54], 13);
    b.set([0xf0, 0x9f, 0x98, 0x80], 13 + N - 4);
    b[13 + N] = 0x74;
    dv.setUint32(14 + N, tail.length);
    b.set(tail, 18 + N);
    return b;
  }

  /** Decodes the big row and checks it; returns nothing that holds on to memory. */
  function decodeBig(d: PgoutputDecoder, input: Uint8Array): void {
    d.decode(R.bytes);
    const m = d.decode(input) as Insert;
    expect(m.kind).toBe("Insert");
    expect(m.newTuple.kind(0)).toBe("text");
    expect(m.newTuple.byteLength("doc")).toBe(N);
    expect(m.newTuple.text("tail")).toBe("end");
    const value = m.newTuple.bytes(0) as Uint8Array;
    expect(value.length).toBe(N);
    expect([...value.subarray(0, 3)]).toEqual([0x53, 0x54, 0x61]);
    expect([...value.subarray(N - 5)]).toEqual([0x61, 0xf0, 0x9f, 0x98, 0x80]);
    expect(value[N >> 1]).toBe(0x61);
  }

  function rssAfterGc(): number {
    gc!();
    gc!();
    return process.memoryUsage.rss();
  }

  it(`${backend.name}: decodes, then a small message decodes${backend.name === "wasm" ? " on a fresh instance and the memory is given back" : ""}`, async () => {
    const d = await backend.create();
    const instances = memory.instances();
    let rssPeak = 0;
    (() => {
      const input = bigInsert();
      decodeBig(d, input);
      if (backend.name === "wasm") {
        expect(memory.latest()).toBeGreaterThan(N);
        expect(memory.instances()).toBe(instances);
      }
      rssPeak = process.memoryUsage.rss();
    })();
    // the next (small) call
    expect(d.decode(SMALL.bytes).materialize()).toEqual(SMALL.expected);
    expect(d.decodeBatch([SMALL.bytes]).materialize()).toEqual([SMALL.expected]);
    if (backend.name === "wasm") {
      expect(memory.instances(), "a fresh kernel instance").toBe(instances + 1);
      expect(memory.latest(), "its memory").toBeLessThan(4 * MiB);
      if (gc !== undefined) {
        const after = rssAfterGc();
        // the wasm memory held the value (input region); once the old instance is collected, that is returned
        expect(rssPeak - after, `RSS ${(rssPeak / MiB).toFixed(0)} MiB at the peak, ${(after / MiB).toFixed(0)} MiB after gc`).toBeGreaterThan(N / 2);
      }
    }
  }, 60_000);
});

// ---------------------------------------------------------------------------

describe("1,600 columns", () => {
  const rel: RelationDesc = {
    relationId: 1600, namespace: "public", relationName: "widest",
    columns: Array.from({ length: 1600 }, (_, i) => ({ name: `c${String(i).padStart(4, "0")}_${"x".repeat(57)}`, typeId: i % 2 ? 25 : 17, isKey: i < 2 })),
  };
  const name = (i: number) => rel.columns[i]!.name;
  const row = (tag: string) => rel.columns.map((_, i) => (i % 5 === 0 ? null : i % 2 ? `${tag}${i}` : new Uint8Array([i & 255, i >> 8])));
  const R = encode.relation(rel);
  const U = encode.update({ relation: rel, oldTupleType: "O", oldTuple: row("old"), newTuple: row("new") });
  const wide1601 = encode.insert({ relationId: 1600, newTuple: [...row("x"), "extra"] });

  function check(u: Update): void {
    expect(u.newTuple.length).toBe(1600);
    expect(u.oldTuple!.length).toBe(1600);
    expect(u.newTuple.text(name(1599))).toBe("new1599");
    expect(u.oldTuple!.text(name(801))).toBe("old801");
    expect(u.newTuple.isNull(name(0))).toBe(true);
    expect(u.newTuple.bytes(name(2))).toEqual(new Uint8Array([2, 0]));
  }

  it(`${backend.name}: a row update of 1,600 columns (old and new) through decode, decodeCopyData and pushBackend; a 1,601st is a mismatch`, async () => {
    const d = await backend.create();
    expect(R.bytes.length).toBeGreaterThan(100_000);
    d.decode(R.bytes);
    expect(d.relations.get(1600)!.columnCount).toBe(1600);
    const u = d.decode(U.bytes) as Update;
    check(u);
    expect(u.materialize()).toEqual(U.expected);

    d.reset();
    const payloads = [wal.xlogData(R, H), wal.xlogData(U, H)];
    const cb = d.decodeCopyData(payloads.map((p) => p.bytes));
    check(cb.get(1) as Update);
    expect(cb.materialize()).toEqual(payloads.map((p) => p.expected));

    d.reset();
    const raw = backendStream(payloads.map((p) => backendFrame("d", p.bytes)));
    const got: Record<string, unknown>[] = [];
    for (let p = 0; p < raw.length; p += 1000) {
      const batch = d.pushBackend(raw.subarray(p, p + 1000));
      for (const m of batch) if (m.kind === "Update") check(m as Update);
      got.push(...batch.materialize());
    }
    d.end();
    expect(got).toEqual(payloads.map((p) => p.expected));

    const e = errorOf(() => d.decode(wide1601.bytes));
    expect([e.code, e.field]).toEqual(["COLUMN_COUNT_MISMATCH", "newTuple.columnCount"]);
    expect(d.decode(U.bytes).kind).toBe("Update");
  });
});

// ---------------------------------------------------------------------------

describe("10,000 relations in the cache", () => {
  const COUNT = 10_000;
  const rels: RelationDesc[] = Array.from({ length: COUNT }, (_, i) => ({
    relationId: 100_000 + i * 7, namespace: `s${i % 10}`, relationName: `t${i}`,
    columns: [{ name: "id", typeId: 23, isKey: true }, { name: `v${i}`, typeId: 25 }, { name: "w", typeId: 17 }],
  }));
  const relMsgs = rels.map((r) => encode.relation(r));
  const inserts = rels.map((r, i) => encode.insert({ relation: r, newTuple: [String(i), `value ${i}`, i % 3 ? null : new Uint8Array([i & 255])] }));

  it(`${backend.name}: 10,000 Relation messages, then an insert into each, by name`, async () => {
    const d = await backend.create();
    expect(d.decodeBatch(relMsgs.map((m) => m.bytes)).length).toBe(COUNT);
    expect(d.relations.size).toBe(COUNT);
    const batch = d.decodeBatch(inserts.map((m) => m.bytes));
    expect(batch.length).toBe(COUNT);
    for (let i = 0; i < COUNT; i++) {
      const ins = batch.get(i) as Insert;
      if (ins.relation?.name !== `t${i}`) expect(ins.relation?.name, `insert ${i}`).toBe(`t${i}`);
    }
    for (const i of [0, 1, 4999, 9998, 9999]) {
      const ins = batch.get(i) as Insert;
      expect(ins.newTuple.text(`v${i}`)).toBe(`value ${i}`);
      expect(ins.newTuple.text("id")).toBe(String(i));
      expect(ins.relation!.namespace).toBe(`s${i % 10}`);
      expect(d.relations.get(100_000 + i * 7)!.columns[1]!.name).toBe(`v${i}`);
    }
    const got = batch.materialize();
    const want = inserts.map((m) => m.expected);
    if (!deepEqual(got, want)) expect(got).toEqual(want);

    // the same through push, in 64 KB chunks, after a reset
    d.reset();
    const framed = frame([...relMsgs, ...inserts]);
    let n = 0;
    for (let p = 0; p < framed.length; p += 65536) n += d.push(framed.subarray(p, p + 65536)).length;
    d.end();
    expect(n).toBe(2 * COUNT);
    expect(d.relations.size).toBe(COUNT);
    // a redefinition replaces its entry
    const r2 = encode.relation({ ...rels[1234]!, relationName: "renamed" });
    d.decode(r2.bytes);
    expect(d.relations.size).toBe(COUNT);
    expect((d.decode(inserts[1234]!.bytes) as Insert).relation!.name).toBe("renamed");
  });
});

// The wasm decoder's own behaviour: its project only.
if (backend.name === "wasm") describe("oversized input is refused before it is copied into wasm memory", () => {
  it("decode, decodeBatch and decodeCopyData of a 64 MiB message with maxMessageSize 1 MiB", async () => {
    const d = await backend.create({ maxMessageSize: 1 << 20 });
    const grown: number[] = [];
    const grow = WebAssembly.Memory.prototype.grow;
    WebAssembly.Memory.prototype.grow = function (this: WebAssembly.Memory, pages: number) {
      grown.push(pages);
      return grow.call(this, pages);
    };
    try {
      const big = new Uint8Array(64 << 20);
      big[0] = 0x4d; // 'M'
      for (const call of [() => d.decode(big), () => d.decodeBatch([new Uint8Array([0x45]), big]), () => d.decodeCopyData([big])]) {
        let code: string | undefined;
        try {
          call();
        } catch (e) {
          code = (e as { code?: string }).code;
        }
        expect(code).toBe("MESSAGE_TOO_LARGE");
      }
    } finally {
      WebAssembly.Memory.prototype.grow = grow;
    }
    // No growth anywhere near the message's 1,024 pages.
    expect(grown.reduce((a, b) => a + b, 0)).toBeLessThan(64);
  });
});

describe("relation widths survive the wasm decoder giving memory back", () => {
  it(`a wrong-width row after a 70 MB message is still COLUMN_COUNT_MISMATCH (${backend.name})`, async () => {
    const d = await backend.create();
    const relation = {
      relationId: 4242, namespace: "public", relationName: "t", replicaIdentity: "d" as const,
      columns: [0, 1, 2].map((i) => ({ flags: 0, name: `c${i}`, typeId: 25, typeModifier: -1 })),
    };
    d.decode(encode.relation(relation).bytes);
    const big = encode.message({ flags: 0, lsn: 1n, prefix: "big", content: new Uint8Array(70 << 20) });
    expect(d.decode(big.bytes).kind).toBe("Message");
    // The next, small call runs on a fresh wasm instance: it must still know the relation's width.
    const narrow = encode.insert({ relation, newTuple: ["a", "b"] });
    let code: string | undefined;
    try {
      d.decode(narrow.bytes);
    } catch (e) {
      code = (e as { code?: string }).code;
    }
    expect(code).toBe("COLUMN_COUNT_MISMATCH");
    expect(d.decode(encode.insert({ relation, newTuple: ["a", "b", "c"] }).bytes).kind).toBe("Insert");
  });
});
