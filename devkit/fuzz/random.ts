/**
 * Seeded randomness for tests: a small PRNG and a generator of random but
 * valid pgoutput message streams (with their expected decoded values), as a
 * fresh decoder fed the messages in order must decode them.
 *
 * @example
 * ```ts
 * const stream = randomStream(42, { messages: 2000 });
 * for (const m of stream) expect(decoder.decode(m.bytes).materialize()).toEqual(m.expected);
 * ```
 */
import type { OldTupleType, ReplicaIdentity } from "../../bindings/messages.ts";
import {
  encode, MAX_LSN, MAX_U32, PG_EPOCH_UNIX_US, TIME_NEG_INFINITY, TIME_POS_INFINITY, UNCHANGED,
  type ColumnDesc, type Encoded, type RelationDesc,
} from "../encoder/encoder.ts";

/** A seeded 32-bit PRNG (the "mulberry32" construction: a Weyl sequence through an avalanching mix). */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A uniform unsigned 32-bit integer. */
  u32(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let z = this.#state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return (z ^ (z >>> 14)) >>> 0;
  }

  /** A float in [0, 1). */
  float(): number {
    return this.u32() / 2 ** 32;
  }

  /** An integer in [min, max] (inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }

  /** A uniform unsigned 64-bit bigint. */
  u64(): bigint {
    return (BigInt(this.u32()) << 32n) | BigInt(this.u32());
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.u32() & 0xff;
    return out;
  }
}

// ---------------------------------------------------------------------------
// Edge and random values

/** Probability of drawing an edge value instead of an ordinary one. */
const EDGE = 0.2;

const U32_EDGES = [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, MAX_U32 - 1, MAX_U32];
const LSN_EDGES = [0n, 1n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 63n + 1n, MAX_LSN - 1n, MAX_LSN];
const TIME_EDGES = [
  0n, // 1970-01-01
  -1n, // the µs before it
  -2_208_988_800_000_001n, // just before 1900
  PG_EPOCH_UNIX_US, // 2000-01-01: wire 0
  PG_EPOCH_UNIX_US - 1n, // wire -1
  PG_EPOCH_UNIX_US + 1n,
  -62_135_596_800_000_000n, // 0001-01-01
  253_402_300_799_999_999n, // 9999-12-31T23:59:59.999999
  TIME_NEG_INFINITY,
  TIME_POS_INFINITY,
];

export function randomU32(r: Random): number {
  if (r.chance(EDGE)) return r.pick(U32_EDGES);
  return r.chance(0.5) ? r.int(1, 100_000) : r.u32();
}

export function randomLsn(r: Random): bigint {
  if (r.chance(EDGE)) return r.pick(LSN_EDGES);
  return r.chance(0.5) ? BigInt(r.int(0, 2 ** 31)) * 256n + BigInt(r.int(0, 255)) : r.u64();
}

/** µs since the Unix epoch. */
export function randomTime(r: Random): bigint {
  if (r.chance(EDGE)) return r.pick(TIME_EDGES);
  // 1900 .. 2100, any microsecond
  const span = 6_311_390_400_000_000n;
  const base = -2_208_988_800_000_000n;
  return base + (r.u64() % span);
}

const PIECES = [
  "a", "b", "z", "Q", "0", "9", " ", "_", "-", "'", "\"", "\\", "\n", "\t", "%", "/",
  "é", "ß", "ø", "Ω", "ж", "ä", // 2-byte UTF-8
  "東", "京", "語", "€", "\u2028", "\ufffd", // 3-byte
  "😀", "🐘", "\u{10ffff}", "\u{1f1fa}\u{1f1f8}", // 4-byte
  "\u0301", // combining
];

/** A valid UTF-8-encodable string without NUL: often short ASCII, sometimes empty, non-ASCII, or long. */
export function randomString(r: Random, maxLength = 24): string {
  const roll = r.float();
  if (roll < 0.08) return "";
  if (roll < 0.5) {
    let s = "";
    const n = r.int(1, Math.min(maxLength, 12));
    for (let i = 0; i < n; i++) s += String.fromCharCode(r.int(0x61, 0x7a));
    return s;
  }
  const n = roll < 0.97 ? r.int(1, maxLength) : r.int(maxLength, maxLength * 4);
  let s = "";
  for (let i = 0; i < n; i++) s += r.pick(PIECES);
  return s;
}

/** A column value of a tuple (text mostly; also null, binary, and — when allowed — unchanged). */
export function randomColumn(r: Random, allowUnchanged: boolean): ColumnDesc {
  const roll = r.float();
  if (roll < 0.15) return null;
  if (allowUnchanged && roll < 0.22) return UNCHANGED;
  if (roll < 0.35) return r.bytes(r.chance(0.1) ? 0 : r.chance(0.03) ? r.int(200, 5000) : r.int(1, 16));
  if (r.chance(0.01)) return randomString(r, 1000); // long values (up to 16 KB)
  return r.chance(0.6) ? String(r.int(-1_000_000, 1_000_000)) : randomString(r);
}

// ---------------------------------------------------------------------------
// Streams

export interface StreamOptions {
  /** About how many messages to generate (the stream ends when a transaction closes past it). Default 1000. */
  messages?: number;
}

const TYPE_IDS = [16, 17, 20, 21, 23, 25, 700, 701, 1043, 1082, 1114, 1184, 1700, 2950, 3802];

interface StreamedTxn {
  xid: number;
  segments: number;
}

/**
 * A random valid pgoutput stream: relations before their changes, plain
 * transactions (B … C, with Origin now and then), streamed transactions in
 * interleaved S … E blocks whose messages carry the xid, ended by c, A (v2 or
 * v4) or p, two-phase sequences (b … P, later K or r), non-transactional
 * Messages, relation redefinitions, and edge values throughout.
 */
export function randomStream(seed: number, options: StreamOptions = {}): Encoded[] {
  const target = options.messages ?? 1000;
  const r = new Random(seed);
  const out: Encoded[] = [];
  const relations = new Map<number, RelationDesc>();
  const open: StreamedTxn[] = [];
  const prepared: { xid: number; gid: string; prepareTime: bigint }[] = [];

  const newRelation = (xid: number | undefined, relationId?: number): RelationDesc => {
    const ncols = r.chance(0.05) ? 0 : r.chance(0.02) ? r.int(40, 120) : r.int(1, 8);
    const columns = Array.from({ length: ncols }, (_, i) => ({
      name: r.chance(0.8) ? `c${i}` : `${randomString(r, 12)}#${i}`,
      typeId: r.chance(0.8) ? r.pick(TYPE_IDS) : randomU32(r),
      typeModifier: r.chance(0.7) ? -1 : r.chance(0.5) ? r.int(0, 1000) : r.u32() | 0,
      isKey: i === 0 || r.chance(0.1),
    }));
    const rel: RelationDesc = {
      relationId: relationId ?? randomU32(r),
      namespace: r.chance(0.1) ? "" : r.chance(0.7) ? "public" : randomString(r, 16),
      relationName: r.chance(0.7) ? `t${r.int(0, 999)}` : randomString(r, 30),
      replicaIdentity: r.pick<ReplicaIdentity>(["d", "d", "d", "f", "i", "n"]),
      columns,
    };
    relations.set(rel.relationId, rel);
    out.push(encode.relation(xid === undefined ? rel : { ...rel, xid }));
    return rel;
  };

  const someRelation = (xid: number | undefined): RelationDesc => {
    if (relations.size === 0 || r.chance(0.04)) return newRelation(xid);
    const ids = [...relations.keys()];
    const id = r.pick(ids);
    if (r.chance(0.03)) return newRelation(xid, id); // redefinition: replaces the cached entry
    return relations.get(id)!;
  };

  const tuple = (rel: RelationDesc, allowUnchanged: boolean): ColumnDesc[] =>
    rel.columns.map(() => randomColumn(r, allowUnchanged));

  const keyTuple = (rel: RelationDesc): ColumnDesc[] =>
    rel.columns.map((c) => (c.isKey ? randomColumn(r, false) : null));

  /** One change (or schema/message) inside a transaction; `xid` set inside a streamed block. */
  const op = (xid: number | undefined): void => {
    const roll = r.float();
    if (roll < 0.04) {
      out.push(encode.type({ xid, typeId: randomU32(r), namespace: r.chance(0.5) ? "public" : randomString(r), typeName: randomString(r) }));
    } else if (roll < 0.09) {
      out.push(encode.message({ xid, transactional: true, lsn: randomLsn(r), prefix: randomString(r), content: r.bytes(r.int(0, 40)) }));
    } else if (roll < 0.12) {
      const ids = relations.size > 0 && r.chance(0.8) ? [...relations.keys()].filter(() => r.chance(0.5)) : [];
      if (r.chance(0.2)) ids.push(randomU32(r)); // possibly a relation the decoder never saw
      out.push(encode.truncate({ xid, options: r.int(0, 3), relationIds: ids }));
    } else {
      const rel = someRelation(xid);
      const which = r.float();
      if (which < 0.5) {
        out.push(encode.insert({ xid, relation: rel, newTuple: tuple(rel, false) }));
      } else if (which < 0.8) {
        const t = r.pick<OldTupleType | null>([null, null, "K", "O"]);
        const oldTuple = t === null ? null : t === "K" ? keyTuple(rel) : tuple(rel, false);
        out.push(encode.update({ xid, relation: rel, oldTupleType: t, oldTuple, newTuple: tuple(rel, true) }));
      } else {
        const t = r.pick<OldTupleType>(["K", "O"]);
        out.push(encode.delete({ xid, relation: rel, oldTupleType: t, oldTuple: t === "K" ? keyTuple(rel) : tuple(rel, false) }));
      }
    }
  };

  const ops = (xid: number | undefined): void => {
    const n = r.chance(0.1) ? 0 : r.int(1, 8);
    for (let i = 0; i < n; i++) op(xid);
  };

  const plainTransaction = (): void => {
    out.push(encode.begin({ finalLsn: randomLsn(r), commitTime: randomTime(r), xid: randomU32(r) }));
    if (r.chance(0.1)) out.push(encode.origin({ originLsn: randomLsn(r), name: randomString(r) }));
    ops(undefined);
    out.push(encode.commit({ commitLsn: randomLsn(r), endLsn: randomLsn(r), commitTime: randomTime(r) }));
  };

  const streamBlock = (): void => {
    let txn: StreamedTxn;
    if (open.length > 0 && r.chance(0.6)) txn = r.pick(open);
    else {
      txn = { xid: randomU32(r), segments: 0 };
      open.push(txn);
    }
    out.push(encode.streamStart({ xid: txn.xid, firstSegment: txn.segments === 0 }));
    txn.segments++;
    ops(txn.xid);
    out.push(encode.streamStop());
  };

  const finishStreamed = (): void => {
    const txn = open.splice(r.int(0, open.length - 1), 1)[0]!;
    const roll = r.float();
    if (roll < 0.55) {
      out.push(encode.streamCommit({ xid: txn.xid, commitLsn: randomLsn(r), endLsn: randomLsn(r), commitTime: randomTime(r) }));
    } else if (roll < 0.85) {
      const subXid = r.chance(0.5) ? txn.xid : randomU32(r);
      const v4 = r.chance(0.5);
      out.push(encode.streamAbort(v4 ? { xid: txn.xid, subXid, abortLsn: randomLsn(r), abortTime: randomTime(r) } : { xid: txn.xid, subXid }));
    } else {
      const gid = randomString(r, 40);
      const prepareTime = randomTime(r);
      out.push(encode.streamPrepare({ prepareLsn: randomLsn(r), endLsn: randomLsn(r), prepareTime, xid: txn.xid, gid }));
      prepared.push({ xid: txn.xid, gid, prepareTime });
    }
  };

  const twoPhase = (): void => {
    const xid = randomU32(r);
    const gid = randomString(r, 40);
    const prepareTime = randomTime(r);
    out.push(encode.beginPrepare({ prepareLsn: randomLsn(r), endLsn: randomLsn(r), prepareTime, xid, gid }));
    ops(undefined);
    out.push(encode.prepare({ prepareLsn: randomLsn(r), endLsn: randomLsn(r), prepareTime, xid, gid }));
    prepared.push({ xid, gid, prepareTime });
  };

  const finishPrepared = (): void => {
    const p = prepared.splice(r.int(0, prepared.length - 1), 1)[0]!;
    if (r.chance(0.6)) {
      out.push(encode.commitPrepared({ commitLsn: randomLsn(r), endLsn: randomLsn(r), commitTime: randomTime(r), xid: p.xid, gid: p.gid }));
    } else {
      out.push(encode.rollbackPrepared({
        prepareEndLsn: randomLsn(r), rollbackEndLsn: randomLsn(r), prepareTime: p.prepareTime, rollbackTime: randomTime(r), xid: p.xid, gid: p.gid,
      }));
    }
  };

  while (out.length < target) {
    const roll = r.float();
    if (roll < 0.4) plainTransaction();
    else if (roll < 0.6) streamBlock();
    else if (roll < 0.7 && open.length > 0) finishStreamed();
    else if (roll < 0.78) twoPhase();
    else if (roll < 0.85 && prepared.length > 0) finishPrepared();
    else if (roll < 0.92) {
      out.push(encode.message({ transactional: false, lsn: randomLsn(r), prefix: randomString(r), content: randomString(r, 60) }));
    } else someRelation(undefined); // schema outside a transaction (no-op when it picks a known one)
  }
  while (open.length > 0) finishStreamed();
  while (prepared.length > 0) finishPrepared();
  return out;
}

/** Random chunk boundaries for a byte length: many tiny chunks, some large ones. */
export function randomSplits(r: Random, length: number): number[] {
  const cuts: number[] = [];
  let p = 0;
  while (p < length) {
    const roll = r.float();
    p += roll < 0.3 ? r.int(1, 3) : roll < 0.8 ? r.int(1, 64) : r.int(64, 4096);
    if (p < length) cuts.push(p);
  }
  return cuts;
}
