/**
 * Input from a pooled Node Buffer, rewritten with garbage after every call as
 * `pg` rewrites its parser buffer on the next socket read: through both
 * backends and every input form, what a caller keeps (bytea values, strings,
 * json, bytes(), materialize(), the relation cache) never changes, views read
 * what was decoded (the decoder copied its input) until the decoder's next
 * call, and then throw STALE_VIEW instead of reading anything.
 * (Buffer#slice is a view; a copy made with it would follow the garbage.)
 */
import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import { isPgoutputError } from "../bindings/errors.ts";
import type { Insert, PgoutputMessage } from "../bindings/messages.ts";
import { Oid } from "../bindings/values/index.ts";
import { backend } from "./support/backends.ts";
import { encode, frame, type RelationDesc } from "../devkit/encoder/encoder.ts";
import { backend as backendFrames, backendStream, wal } from "../devkit/encoder/walsender-encoder.ts";

const REL = 16600;
const relation: RelationDesc = {
  relationId: REL, namespace: "public", relationName: "pooled_rows",
  columns: [
    { name: "id", typeId: Oid.int4, isKey: true },
    { name: "bin", typeId: Oid.bytea },
    { name: "hex", typeId: Oid.bytea },
    { name: "s", typeId: Oid.text },
    { name: "j", typeId: Oid.jsonb },
  ],
};
const BIN = Uint8Array.from([0, 1, 2, 0xfe, 0xff, 0x80, 0x7f, 0x10, 0x20]);
const TEXT = "héllo wörld, a string longer than the short-string path";
const JSON_TEXT = '{"k":[1,2,"x"],"n":null}';
const row = (id: number) => [String(id), BIN, "\\x00ff10", TEXT, JSON_TEXT];
const expectedObject = (id: number) => ({ id, bin: BIN, hex: Uint8Array.from([0, 0xff, 0x10]), s: TEXT, j: { k: [1, 2, "x"], n: null } });

const relationMessage = encode.relation(relation);
const inserts = [1, 2].map((id) => encode.insert({ relation, newTuple: row(id) }));
const begin = encode.begin({ finalLsn: 0x10n, commitTime: 1_700_000_000_000_000n, xid: 9 });

/** One reused Buffer, as pg's parser keeps one; the input of each call is written into it. */
class Pool {
  readonly buf = Buffer.allocUnsafe(1 << 14);
  #round = 0;

  hold(bytes: Uint8Array): Buffer {
    this.buf.set(bytes, 0);
    return this.buf.subarray(0, bytes.length);
  }

  holdAll(list: readonly Uint8Array[]): Buffer[] {
    let at = 0;
    return list.map((b) => {
      this.buf.set(b, at);
      at += b.length;
      return this.buf.subarray(at - b.length, at);
    });
  }

  /** Garbage over the whole buffer, different each time. */
  scribble(): void {
    const r = ++this.#round;
    for (let i = 0; i < this.buf.length; i++) this.buf[i] = (i * 131 + r * 71) & 0xff;
  }
}

const header = { walStart: 0x100n, walEnd: 0x200n, sendTime: 1_700_000_000_000_000n };
const xlog = (m: Uint8Array) => wal.xlogData(m, header).bytes;

/** Feeds pgoutput messages through the pool in one input form; the pool is scribbled after each call. Returns the last call's messages. */
interface Form {
  name: string;
  feed(d: PgoutputDecoder, pool: Pool, messages: readonly Uint8Array[]): PgoutputMessage[];
}

/** `push`-like forms: the stream in two calls, cut inside its first message (so it is kept unfinished between them). */
function twoPushes(push: (chunk: Uint8Array) => Iterable<unknown>, pool: Pool, stream: Uint8Array, firstLength: number): PgoutputMessage[] {
  const cut = Math.min(firstLength - 3, stream.length);
  const first = [...push(pool.hold(stream.subarray(0, cut)))];
  pool.scribble();
  const second = [...push(pool.hold(stream.subarray(cut)))];
  pool.scribble();
  return [...first, ...second].filter((m): m is PgoutputMessage => (m as { kind: string }).kind !== "PrimaryKeepalive");
}

const forms: Form[] = [
  {
    name: "decode",
    feed(d, pool, messages) {
      let last: PgoutputMessage[] = [];
      for (const m of messages) {
        last = [d.decode(pool.hold(m))];
        pool.scribble();
      }
      return last;
    },
  },
  {
    name: "decodeBatch",
    feed(d, pool, messages) {
      const out = [...d.decodeBatch(pool.holdAll(messages))];
      pool.scribble();
      return out;
    },
  },
  {
    name: "decodeFramed",
    feed(d, pool, messages) {
      const out = [...d.decodeFramed(pool.hold(frame(messages)))];
      pool.scribble();
      return out;
    },
  },
  { name: "push", feed: (d, pool, messages) => twoPushes((c) => d.push(c), pool, frame(messages), 4 + messages[0]!.length) },
  {
    name: "decodeCopyData",
    feed(d, pool, messages) {
      const out = [...d.decodeCopyData(pool.holdAll(messages.map(xlog)))] as PgoutputMessage[];
      pool.scribble();
      return out;
    },
  },
  {
    name: "pushBackend",
    feed: (d, pool, messages) =>
      twoPushes((c) => d.pushBackend(c), pool, backendStream(messages.map((m) => backendFrames.copyData(xlog(m)))), 5 + 25 + messages[0]!.length),
  },
];

function expectStale(f: () => unknown): void {
  try {
    f();
  } catch (e) {
    expect(isPgoutputError(e) && e.code, String(e)).toBe("STALE_VIEW");
    return;
  }
  expect.unreachable("a stale view answered");
}

/** Bytes a caller keeps: a plain Uint8Array of its own, never a Buffer (whose slice is a view) nor a window on the pool. */
function expectOwnBytes(v: unknown, pool: Pool): void {
  expect(v).toBeInstanceOf(Uint8Array);
  expect(Buffer.isBuffer(v)).toBe(false);
  expect((v as Uint8Array).buffer).not.toBe(pool.buf.buffer);
}

describe(`${backend.name}: a pooled Buffer rewritten after each call`, () => {
  for (const form of forms) {
    it(`${form.name}: kept values stay, views read the decoded bytes, then go stale`, async () => {
      const d = await backend.create();
      const pool = new Pool();
      form.feed(d, pool, [relationMessage.bytes]);
      const views = form.feed(d, pool, inserts.map((i) => i.bytes)).filter((m): m is Insert => m.kind === "Insert");
      expect(views.length).toBeGreaterThan(0);

      // Taken after the pool was scribbled over: the decoder must have copied its input.
      const kept = views.map((m) => {
        const t = m.newTuple;
        return {
          id: t.value("id") as number,
          bin: t.value("bin"),
          hex: t.value("hex"),
          s: t.value("s"),
          j: t.value("j"),
          raw: t.bytes("bin"),
          object: t.toObject(),
          values: t.values(),
          materialized: m.materialize(),
          message: m.bytes(),
        };
      });
      pool.scribble();
      for (const [i, k] of kept.entries()) {
        expect(k.object, `row ${i}`).toEqual(expectedObject(k.id));
        for (const b of [k.bin, k.hex, k.raw, k.message, k.object.bin, k.values[1]]) expectOwnBytes(b, pool);
        expect(k.bin).toEqual(BIN);
        expect(k.s).toBe(TEXT);
        // Views still read what was decoded, not the pool.
        expect(views[i]!.newTuple.value("s")).toBe(TEXT);
        expect(views[i]!.newTuple.text("hex")).toBe("\\x00ff10");
      }
      const relationEntry = d.relations.get(REL)!;

      // The decoder's next call: old views throw; what was kept, and the relation cache, do not change.
      form.feed(d, pool, [begin.bytes]);
      pool.scribble();
      for (const m of views) {
        expectStale(() => m.newTuple.value("s"));
        expectStale(() => m.newTuple.bytes("bin"));
        expectStale(() => m.materialize());
      }
      for (const k of kept) {
        const encoded = inserts[k.id - 1]!;
        expect(k.object).toEqual(expectedObject(k.id));
        expect([k.bin, k.hex, k.s, k.j, k.raw]).toEqual([BIN, Uint8Array.from([0, 0xff, 0x10]), TEXT, { k: [1, 2, "x"], n: null }, BIN]);
        expect(k.values).toEqual(Object.values(expectedObject(k.id)));
        expect(k.materialized.newTuple).toEqual(encoded.expected.newTuple);
        expect(k.message).toEqual(encoded.bytes);
      }
      expect(d.relations.get(REL)).toBe(relationEntry);
      expect(relationEntry.name).toBe("pooled_rows");
      expect(relationEntry.columns.map((c) => c.name)).toEqual(["id", "bin", "hex", "s", "j"]);
      expect(relationEntry.bytes()).toEqual(relationMessage.bytes);
      // And the decoder still decodes from the pool.
      const again = form.feed(d, pool, [inserts[0]!.bytes]).find((m): m is Insert => m.kind === "Insert");
      expect(again?.newTuple.toObject()).toEqual(expectedObject(1));
    });
  }
});
