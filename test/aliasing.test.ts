/**
 * Aliasing, made visible on every input path: `decode`, `decodeBatch`,
 * `decodeFramed`, `push`, `decodeCopyData`, `pushBackend`, the stream's
 * in-place reads (ReceiveArea), and the
 * pg-logical-replication drop-in's `parse`. Every call is fed views of one
 * pooled Buffer (as pg hands over its parser buffer), and the whole pool is
 * overwritten with garbage after each call (support/pooled.ts). Then:
 *
 * - everything kept from a call — `materialize()`, `toJSON()`, `value()`,
 *   `values()`, `text()`, `bytes()`, a Message's `content`, a
 *   BackendMessage's body and fields, the compat plugin's objects and the
 *   Buffers in them — equals its expected value right after the overwrite
 *   and again after all later calls, and holds no view of the pool;
 * - the relation and type caches, first touched only after the pool was
 *   overwritten, describe the relations and types that were sent;
 * - the views of a call (message, tuple, batch) throw STALE_VIEW once the
 *   decoder made its next call.
 *
 * Expected values: the encoder's `materialize()` values, the hand-written
 * `value()`s of support/alias-stream.ts, and for `toJSON()` and the compat
 * objects, what a second decoder or plugin of the same backend gives for
 * private copies of the bytes (those copies are never overwritten).
 * A failure lists every kept thing that changed, by path and message.
 */
import { describe, expect, it } from "vitest";
import { PgoutputWasmPlugin } from "../bindings/compat/index.ts";
import type { Batch, PgoutputDecoder } from "../bindings/decoder.ts";
import type { Relation } from "../bindings/relation.ts";
import type { MaterializedColumn, Tuple } from "../bindings/tuple.ts";
import type { WalMessage } from "../bindings/walsender.ts";
import { aliasStream, backendBytes, walPayloads, MOOD, SHAPE, type StreamMessage, type WalItem } from "./support/alias-stream.ts";
import { backend } from "./support/backends.ts";
import { encode, frame } from "../devkit/encoder/encoder.ts";
import { Keeper, type Kept } from "./support/keeper.ts";
import { Pool } from "./support/pooled.ts";
import { decoderInternals, type TapeDecoder } from "../bindings/kernel/decoder.ts";
import { ReceiveArea } from "../bindings/kernel/receive.ts";

const STREAM = aliasStream();
const PAYLOADS = walPayloads(STREAM);
const BACKEND = backendBytes(PAYLOADS);
/** A message as large as the whole stream, of other bytes, to overwrite what a decoder holds of earlier input. */
const FILLER = encode.message({ transactional: false, lsn: 1n, prefix: "filler", content: new Uint8Array(BACKEND.bytes.length * 2).fill(0xee) });
/** Chunk sizes for push and pushBackend, cycled: frames and their headers straddle chunks. */
const CHUNKS = [1, 2, 3, 53, 7, 300, 4096, 5, 999];

/** What a decoded message must give. */
interface Expected {
  readonly materialized: Record<string, unknown>;
  readonly json: unknown;
  /** The stream message it carries, for the values of its tuples. */
  readonly message?: StreamMessage;
}

function groups<T>(list: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

function chunks(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let p = 0, i = 0; p < bytes.length; i++) {
    const n = CHUNKS[i % CHUNKS.length]!;
    out.push(bytes.subarray(p, p + n));
    p += n;
  }
  return out;
}

function isBatch(x: Batch<WalMessage> | WalMessage): x is Batch<WalMessage> {
  return typeof (x as Batch<WalMessage>).consumed === "number";
}

/** A view (goes stale) rather than a plain value (keepalives and backend messages are plain). */
function isView(m: WalMessage): boolean {
  return m.kind !== "PrimaryKeepalive" && m.kind !== "BackendMessage";
}

/** The tuples of a change message, with the expected values of each. */
function tuplesOf(m: WalMessage, s: StreamMessage): [string, Tuple, readonly unknown[], MaterializedColumn[]][] {
  const out: [string, Tuple, readonly unknown[], MaterializedColumn[]][] = [];
  const e = s.encoded.expected as { newTuple?: MaterializedColumn[]; oldTuple?: MaterializedColumn[] | null };
  if ((m.kind === "Insert" || m.kind === "Update") && s.newValues) out.push(["newTuple", m.newTuple, s.newValues, e.newTuple!]);
  if ((m.kind === "Update" || m.kind === "Delete") && s.oldValues && m.oldTuple) out.push(["oldTuple", m.oldTuple, s.oldValues, e.oldTuple!]);
  return out;
}

/** Everything the harness keeps from one decoded message. */
function keep(what: string, m: WalMessage, e: Expected): Kept[] {
  const now = (label: string, value: unknown, want: unknown): Kept => ({ what: `${what} ${label}`, got: () => value, want });
  const kept = [now("materialize()", m.materialize(), e.materialized), now("toJSON()", m.toJSON(), e.json)];
  if (e.message !== undefined) {
    for (const [name, t, values, columns] of tuplesOf(m, e.message)) {
      kept.push(now(`${name}.values()`, t.values(), values));
      values.forEach((v, i) => kept.push(now(`${name}.value(${i})`, t.value(i), v)));
      columns.forEach((c, i) => {
        if (c.kind === "text") kept.push(now(`${name}.text(${i})`, t.text(i), c.text));
        if (c.kind === "binary") kept.push(now(`${name}.bytes(${i})`, t.bytes(i), c.bytes));
      });
    }
  }
  if (m.kind === "Message") {
    const content = e.materialized.content as Uint8Array;
    kept.push(now("content", m.content, content), now("contentText", m.contentText, new TextDecoder().decode(content)));
  }
  if (m.kind === "Relation") {
    // The cache entry the message defined; its strings are decoded on first touch, after the overwrite.
    const relation = m.relation;
    kept.push({ what: `${what} relation`, got: () => relation.toJSON(), want: relationJson(e.materialized) });
  }
  if (m.kind === "BackendMessage") {
    kept.push(now("body", m.body, e.materialized.body), now("fields", m.fields, e.materialized.fields));
  }
  return kept;
}

function relationJson(materialized: Record<string, unknown>): Record<string, unknown> {
  const { relationId, namespace, relationName, replicaIdentity, columns } = materialized;
  return { relationId, namespace, relationName, replicaIdentity, columns };
}

/**
 * Runs a path's calls: after each, checks that the previous call's views are
 * stale, keeps what the call gave, overwrites the pool and compares. With
 * `touch` false it keeps and touches nothing (so the caches are first read at the end).
 */
class Harness {
  readonly keeper: Keeper;
  readonly #pool: Pool;
  readonly #expected: readonly Expected[];
  readonly #touch: boolean;
  #cursor = 0;
  #calls = 0;
  #views: [string, () => unknown][] = [];
  /** How many views were touched after their decoder's next call. */
  staleChecks = 0;

  constructor(pool: Pool, expected: readonly Expected[], touch: boolean) {
    this.keeper = new Keeper(pool.buffer.buffer);
    this.#pool = pool;
    this.#expected = expected;
    this.#touch = touch;
  }

  /** One call of the path; `counted` false for a call after it (its messages are not the path's). */
  call(fn: () => Batch<WalMessage> | WalMessage, counted = true): void {
    const out = fn();
    const call = ++this.#calls;
    for (const [what, touch] of this.#views) this.keeper.expectStale(`call ${call - 1}: ${what} after the next call`, touch);
    this.staleChecks += this.#views.length;
    this.#views = [];
    const messages = !counted ? [] : isBatch(out) ? [...out] : [out];
    const fresh: Kept[] = [];
    for (const m of messages) {
      const index = this.#cursor++;
      const e = this.#expected[index];
      if (e === undefined) {
        this.keeper.problems.push(`call ${call}: message #${index} (${m.kind}) beyond the ${this.#expected.length} expected`);
        continue;
      }
      if (!this.#touch) continue;
      fresh.push(...keep(`#${index} ${m.kind} (call ${call})`, m, e));
      if (isView(m)) this.#staleLater(index, m, e);
    }
    if (this.#touch && isBatch(out) && out.length > 0) this.#views.push(["batch.get(0)", () => out.get(0)]);
    this.#pool.scribble();
    this.keeper.add(fresh, "after the pool was overwritten");
  }

  /** Notes a message's view (and a tuple of it) to touch after the next call. */
  #staleLater(index: number, m: WalMessage, e: Expected): void {
    this.#views.push([`#${index} ${m.kind}.materialize()`, () => m.materialize()]);
    const tuple = e.message === undefined ? undefined : tuplesOf(m, e.message)[0];
    if (tuple !== undefined) this.#views.push([`#${index} ${m.kind}.${tuple[0]}.value(0)`, () => tuple[1].value(0)]);
  }

  /** After the last call: every message arrived, everything kept is unchanged, the caches are right. */
  finish(d: PgoutputDecoder): void {
    if (this.#cursor !== this.#expected.length) this.keeper.problems.push(`${this.#cursor} messages, expected ${this.#expected.length}`);
    this.keeper.finish("after every later call");
    this.keeper.compare(cacheChecks(d), "(cache, first touched after the pool was overwritten)");
  }
}

/** The last Relation message of each relation, and the Type messages: what the decoder's caches must hold. */
function cacheChecks(d: PgoutputDecoder): Kept[] {
  const relations = new Map<number, StreamMessage>();
  for (const m of STREAM) if (m.encoded.kind === "Relation") relations.set(m.encoded.expected.relationId as number, m);
  const out: Kept[] = [];
  for (const [id, m] of relations) {
    const relation = (): Relation => d.relations.get(id)!;
    out.push({ what: `relations.get(${id}).toJSON()`, got: () => relation().toJSON(), want: relationJson(m.encoded.expected) });
    out.push({ what: `relations.get(${id}).bytes()`, got: () => relation().bytes(), want: m.encoded.bytes });
    out.push({ what: `relations.get(${id}).columnIndex("id")`, got: () => relation().columnIndex("id"), want: 0 });
  }
  for (const [typeId, namespace, typeName] of [[MOOD, "public", "mood"], [SHAPE, "geo", "shape"]] as const) {
    out.push({ what: `types.get(${typeId})`, got: () => d.types.get(typeId), want: { typeId, namespace, typeName } });
  }
  return out;
}

/** An input path of the native API: its calls, and which expected list its messages follow. */
interface Path {
  readonly name: string;
  readonly expects: "stream" | "payloads" | "backend";
  run(d: PgoutputDecoder, pool: Pool, h: Harness): void;
}

const PATHS: Path[] = [
  {
    name: "decode", expects: "stream",
    run: (d, pool, h) => STREAM.forEach((m) => h.call(() => d.decode(pool.put(m.encoded.bytes)))),
  },
  {
    name: "decodeBatch", expects: "stream",
    run: (d, pool, h) => groups(STREAM, 4).forEach((g) => h.call(() => d.decodeBatch(pool.putAll(g.map((m) => m.encoded.bytes))))),
  },
  {
    name: "decodeFramed", expects: "stream",
    run: (d, pool, h) => groups(STREAM, 5).forEach((g) => h.call(() => d.decodeFramed(pool.put(frame(g.map((m) => m.encoded)))))),
  },
  {
    name: "push", expects: "stream",
    run: (d, pool, h) => {
      chunks(frame(STREAM.map((m) => m.encoded))).forEach((c) => h.call(() => d.push(pool.put(c))));
      d.end();
    },
  },
  {
    name: "decodeCopyData", expects: "payloads",
    run: (d, pool, h) => groups(PAYLOADS, 3).forEach((g) => h.call(() => d.decodeCopyData(pool.putAll(g.map((p) => p.bytes))))),
  },
  {
    name: "pushBackend", expects: "backend",
    run: (d, pool, h) => {
      chunks(BACKEND.bytes).forEach((c) => h.call(() => d.pushBackend(pool.put(c))));
      d.end();
    },
  },
  {
    // The stream's in-place socket reads (kernel/receive.ts): bytes land in the decoder's memory, where the
    // offer() was (as a read into it), or are copied in from elsewhere (a read that landed in another buffer);
    // some arrive while the area is full and come with the decode. More land after each decode, while its
    // batch is live and before the harness keeps what it gave.
    name: "ReceiveArea", expects: "backend",
    run: (d, pool, h) => {
      const area = new ReceiveArea(decoderInternals(d as TapeDecoder));
      const list = chunks(BACKEND.bytes);
      let next = 0;
      const land = (count: number): void => {
        for (const c of list.slice(next, next + count)) {
          const offer = area.full ? undefined : area.offer();
          if (next % 2 === 0 && offer !== undefined && offer.length >= c.length) {
            offer.set(c);
            area.landed(offer, c.length);
          } else area.landed(pool.put(c), c.length);
          next++;
        }
      };
      land(3);
      while (next < list.length) {
        h.call(() => {
          const held = next % 5 === 0 ? pool.put(list[next++]!) : undefined;
          const batch = area.decode(held);
          land(3);
          return batch;
        });
      }
      h.call(() => area.decode());
    },
  },
];

/** The expected lists for a backend: toJSON() from a second decoder fed private copies (each read before its next call). */
async function expectations(create: () => Promise<PgoutputDecoder>): Promise<Record<Path["expects"], Expected[]>> {
  const ref = await create();
  const json = (m: { toJSON(): unknown }): unknown => structuredClone(m.toJSON());
  const stream = STREAM.map((m) => ({ materialized: m.encoded.expected, json: json(ref.decode(m.encoded.bytes.slice())), message: m }));
  ref.reset();
  const payloadJson = PAYLOADS.map((p) => json(ref.decodeCopyData([p.bytes.slice()]).get(0)));
  ref.reset();
  const backendJson = [...ref.pushBackend(BACKEND.bytes.slice())].map(json);
  const wal = (items: readonly WalItem[], jsons: readonly unknown[]): Expected[] =>
    items.map((p, i) => ({ materialized: p.expected, json: jsons[i], message: p.message }));
  return { stream, payloads: wal(PAYLOADS, payloadJson), backend: wal(BACKEND.items, backendJson) };
}

describe(`${backend.name}: inputs are pooled Buffer views, overwritten after every call`, () => {
  for (const path of PATHS) {
    it(`${path.name}: what was kept stays right, the caches are right, old views are STALE_VIEW`, async () => {
      const expected = (await expectations(() => backend.create()))[path.expects];
      const d = await backend.create();
      const pool = new Pool();
      const h = new Harness(pool, expected, true);
      path.run(d, pool, h);
      // More calls after the path, each filling the decoder's own input memory (the wasm input region)
      // with other bytes: kept values must survive them too, and must not view the decoder's memory either.
      for (let i = 0; i < 3; i++) h.call(() => d.decode(pool.put(FILLER.bytes)), false);
      expect(h.staleChecks, "views touched after their next call").toBeGreaterThan(20);
      h.finish(d);
      expect(h.keeper.problems).toEqual([]);
    });

    it(`${path.name}: the relation and type caches, untouched until the pool was overwritten`, async () => {
      const expected = (await expectations(() => backend.create()))[path.expects];
      const d = await backend.create();
      const pool = new Pool();
      const h = new Harness(pool, expected, false);
      path.run(d, pool, h);
      h.finish(d);
      expect(h.keeper.problems).toEqual([]);
    });
  }

  it("compat plugin parse(): its objects, Buffers included, stay right after the pool is overwritten", () => {
    const options = { protoVersion: 1 as const, publicationNames: ["p"], backend: backend.name };
    const reference = new PgoutputWasmPlugin(options);
    const want = STREAM.map((m) => reference.parse(Buffer.from(m.encoded.bytes)));
    const plugin = new PgoutputWasmPlugin(options);
    const pool = new Pool();
    const keeper = new Keeper(pool.buffer.buffer);
    STREAM.forEach((m, i) => {
      const out = plugin.parse(pool.put(m.encoded.bytes));
      pool.scribble();
      keeper.add([{ what: `#${i} ${m.encoded.kind} parse()`, got: () => out, want: want[i] }], "after the pool was overwritten");
    });
    for (let i = 0; i < 2; i++) plugin.parse(pool.put(FILLER.bytes));
    keeper.finish("after every later call");
    expect(keeper.problems).toEqual([]);
  });
});
