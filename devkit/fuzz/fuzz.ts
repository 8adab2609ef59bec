/**
 * Mutation fuzzing of real pgoutput captures, shared by `test/fuzz.test.ts`
 * (CI), `scripts/fuzz.ts` (long seeded runs) and `test/fuzz-regressions.test.ts`
 * (replay of saved failures).
 *
 * A case is fully determined by (seed, case number): it picks a source (a
 * golden capture or the bench corpus), a window of its messages, an input
 * form, and one to three mutations — bit flips, byte sets, corrupted lengths
 * and counts (frame lengths, column lengths, ncols, nrels), removed string
 * NULs, wrong tags, column kinds and submessage bytes, truncation, garbage,
 * huge declared lengths, frames duplicated, dropped, swapped or spliced in
 * from elsewhere. Both decoders are brought to the same state (the Relation
 * messages the window refers to, the stream state at its start), fed the
 * input, and must agree exactly: the same materialized messages, or the same
 * PgoutputError (code, offset, incomplete, message index, kind, field), the
 * same caches afterwards — and never anything but a PgoutputError, never a
 * wasm trap, never a hang, never memory beyond a bound; and each must still
 * decode a known-good probe afterwards.
 *
 * Two independent implementations agreeing is the oracle for mutated inputs
 * that still decode: a silently wrong row would have to be wrong the same way
 * in both.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PgoutputDecoder } from "../../bindings/decoder.ts";
import { isPgoutputError } from "../../bindings/errors.ts";
import { MessageTag } from "../../bindings/messages.ts";
import { concatBytes } from "../../bindings/copy-bytes.ts";
import { deepEqual, encode, frame, hex } from "../encoder/encoder.ts";
import { Random } from "./random.ts";
import { decodeCapture } from "../capture/slot.ts";
import { backendFrame, backendStream, wal } from "../encoder/walsender-encoder.ts";
import { LAYOUTS, layoutOf, sizeOf, type LayoutField } from "../../bindings/layout.ts";

// ---------------------------------------------------------------------------
// Sources

/** A capture: its messages in order, and whether each is decoded inside a Stream Start / Stop block. */
export interface Source {
  readonly name: string;
  readonly messages: readonly Uint8Array[];
  readonly inStream: Uint8Array;
  /** For each message, the indexes of the Relation messages (latest before it) of the relations it refers to. */
  readonly refs: readonly (readonly number[] | undefined)[];
  /** Indexes of the Relation messages. */
  readonly relationAt: readonly number[];
}

const { Relation: T_RELATION, Insert: T_INSERT, Update: T_UPDATE, Delete: T_DELETE, Truncate: T_TRUNCATE, StreamStart: T_STREAM_START, StreamStop: T_STREAM_STOP } = MessageTag;
/** The tags that carry an xid inside a streamed block (R Y I U D T M). */
const XID_TAGS = new Set(LAYOUTS.filter((l) => l.fields.some((f) => f.when === "streamed")).map((l) => l.tag));

/** Builds a source from a capture's messages (valid, in order, as a fresh decoder sees them). */
export function makeSource(name: string, messages: readonly Uint8Array[]): Source {
  const inStream = new Uint8Array(messages.length);
  const refs: (number[] | undefined)[] = new Array(messages.length);
  const latest = new Map<number, number>();
  const relationAt: number[] = [];
  let s = false;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    inStream[i] = s ? 1 : 0;
    const tag = m[0];
    const p = 1 + (s && XID_TAGS.has(tag!) ? 4 : 0);
    const dv = new DataView(m.buffer, m.byteOffset, m.byteLength);
    const ref = (oid: number, into: number[]) => {
      const at = latest.get(oid);
      if (at !== undefined && !into.includes(at)) into.push(at);
    };
    if (tag === T_RELATION && m.length >= p + 4) {
      latest.set(dv.getUint32(p), i);
      relationAt.push(i);
    }
    else if ((tag === T_INSERT || tag === T_UPDATE || tag === T_DELETE) && m.length >= p + 4) {
      const r: number[] = [];
      ref(dv.getUint32(p), r);
      refs[i] = r;
    } else if (tag === T_TRUNCATE && m.length >= p + 5) {
      const r: number[] = [];
      const n = dv.getUint32(p);
      for (let k = 0; k < n && p + 9 + 4 * k <= m.length; k++) ref(dv.getUint32(p + 5 + 4 * k), r);
      refs[i] = r;
    }
    if (tag === T_STREAM_START) s = true;
    else if (tag === T_STREAM_STOP) s = false;
  }
  return { name, messages, inStream, refs, relationAt };
}

/** The golden captures of test/fixtures, one source each. */
export function loadGoldenSources(dir: string): Source[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".bin.gz"))
    .sort()
    .map((f) => makeSource(f, decodeCapture(readFileSync(join(dir, f)))));
}

/** A capture file (the bench corpus format, plain or gzipped) as a source. */
export function loadCaptureSource(path: string, name = path.replace(/^.*\//, "")): Source {
  return makeSource(name, decodeCapture(readFileSync(path)));
}

// ---------------------------------------------------------------------------
// Where the fields are

export type FieldKind =
  | "tag" | "xid" | "oid" | "relid" | "len" | "count16" | "count32" | "nul" | "colKind" | "submsg" | "enum"
  | "frameLen" | "ptag" | "btype";

export interface Field {
  readonly at: number;
  readonly kind: FieldKind;
}

/** The fuzz kind of a layout field (its mutations: boundary values, flipped enums, lengths off by one...). */
function fuzzKind(field: LayoutField): FieldKind | undefined {
  switch (field.name) {
    case "xid": case "subXid": return "xid";
    case "relationId": return "relid";
    case "typeId": return "oid";
    case "contentLength": return "len";
    case "columnCount": return "count16";
    case "relationCount": return "count32";
    case "tupleType": return "submsg";
  }
  // Other bytes are flags and codes; LSNs and times take any value, so they are not fields to aim at.
  return field.type === "u8" ? "enum" : undefined;
}

/**
 * Collects the fields of a pgoutput message at `base`, walking its layout
 * (bindings/layout.ts); tolerant: stops where the message stops making sense.
 */
export function locate(m: Uint8Array, inStream: boolean, base: number, out: Field[]): void {
  const n = m.length;
  if (n === 0) return;
  const dv = new DataView(m.buffer, m.byteOffset, m.byteLength);
  out.push({ at: base, kind: "tag" });
  const layout = layoutOf(m[0]!);
  if (layout === undefined) return;
  let p = 1;
  let count = 0; // the last count field's value, for the variable part after it
  let tupleType = 0;
  const mark = (kind: FieldKind | undefined, size: number): boolean => {
    if (p + size > n) return false;
    if (kind !== undefined) out.push({ at: base + p, kind });
    p += size;
    return true;
  };
  const cstring = (): boolean => {
    let q = p;
    while (q < n && m[q] !== 0) q++;
    if (q >= n) return false;
    out.push({ at: base + q, kind: "nul" });
    p = q + 1;
    return true;
  };
  const tuple = (): boolean => {
    if (p + 2 > n) return false;
    const columns = dv.getUint16(p);
    mark("count16", 2);
    for (let i = 0; i < columns; i++) {
      if (p >= n) return false;
      const kind = m[p]!;
      mark("colKind", 1);
      if (kind === 0x74 || kind === 0x62) {
        if (p + 4 > n) return false;
        const length = dv.getUint32(p);
        mark("len", 4);
        if ((p += length) > n) return false;
      }
    }
    return true;
  };
  for (const field of layout.fields) {
    if (field.when === "streamed" && !inStream) continue;
    if (field.when === "v4" && p >= n) return;
    // Update: a 'K' or 'O' byte starts the old tuple; otherwise the byte read is the new tuple's 'N'.
    if (field.when === "old" && field.type === "tuple" && tupleType !== 0x4b && tupleType !== 0x4f) continue;
    if (field.when === "old" && field.type === "u8" && p < n && m[p] !== 0x4b && m[p] !== 0x4f) continue;
    const size = sizeOf(field.type);
    let ok: boolean;
    if (size > 0) {
      const at = p;
      ok = mark(fuzzKind(field), size);
      if (ok && field.name === "tupleType") tupleType = m[at]!;
      if (ok && (field.type === "i16" || field.type === "u32")) count = size === 2 ? dv.getUint16(at) : dv.getUint32(at);
    } else if (field.type === "cstring") ok = cstring();
    else if (field.type === "tuple") ok = tuple();
    else if (field.type === "bytes") ok = (p += count) <= n;
    else if (field.type === "oids") {
      for (let i = 0; i < count && p + 4 <= n; i++) mark("relid", 4);
      ok = true;
    } else {
      // columns: per column its flags, name, type OID and type modifier.
      ok = true;
      for (let i = 0; i < count && ok; i++) ok = mark("enum", 1) && cstring() && mark("oid", 4) && mark(undefined, 4);
    }
    if (!ok) return;
  }
}

// ---------------------------------------------------------------------------
// Cases

export const FORMS = ["decode", "batch", "framed", "push", "copydata", "backend"] as const;
export type Form = (typeof FORMS)[number];

/** One fuzz case: everything needed to run it again, without the sources. */
export interface FuzzCase {
  seed: number;
  index: number;
  form: Form;
  source: string;
  /** The window of the source the input was made from. */
  start: number;
  count: number;
  /** What was done to the input, in order. */
  mutations: string[];
  /** Messages decoded (each with its own stream state) on a reset decoder before the input. */
  setup: { bytes: Uint8Array; inStream: boolean }[];
  /** The stream state set before the input. */
  inStream: boolean;
  /** decode/batch: messages; copydata: payloads; framed/push/backend: one byte string. */
  input: Uint8Array[];
  /** push/backend: chunk boundaries. */
  splits: number[];
  /** decode: per message, an `inStream` option (or null for none). */
  overrides?: (boolean | null)[];
  /** The decoders' `maxMessageSize` when not the default. */
  maxMessageSize?: number;
}

/** The 32-bit seed of case `index` of a run seeded with `seed`. */
export function caseSeed(seed: number, index: number): number {
  let z = (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(index >>> 0, 0x85ebca77) ^ Math.floor(index / 2 ** 32)) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x7feb352d);
  z = Math.imul(z ^ (z >>> 15), 0x846ca68b);
  return (z ^ (z >>> 16)) >>> 0;
}

/** An element of the input before serialization: a message, a walsender payload or a backend frame. */
interface Item {
  bytes: Uint8Array;
  /** Bytes before the pgoutput message (0 message, 25 XLogData payload, 30 CopyData frame of an XLogData), or -1 for none. */
  header: number;
  inStream: boolean;
}

/** The fields of an item at `base`. */
function itemFields(item: Item, base: number, out: Field[]): void {
  if (item.header < 0) {
    // A keepalive payload, or a backend frame (CopyData of a keepalive, NoticeResponse, CopyDone)
    if (item.bytes[0] === 0x6b) out.push({ at: base, kind: "ptag" });
    else if (item.bytes.length >= 5) {
      out.push({ at: base, kind: "btype" }, { at: base + 1, kind: "frameLen" });
      if (item.bytes[0] === 0x64 && item.bytes.length > 5) out.push({ at: base + 5, kind: "ptag" });
    }
    return;
  }
  if (item.header >= 30) out.push({ at: base, kind: "btype" }, { at: base + 1, kind: "frameLen" });
  if (item.header >= 25) out.push({ at: base + item.header - 25, kind: "ptag" });
  locate(item.bytes.subarray(item.header), item.inStream, base + item.header, out);
}

const TAGS = "BCOMRYIUDTSEcAbPKrpwkdX\0\xff";
const U32_VALUES = [
  0, 1, 2, 3, 4, 5, 8, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe,
  0x3fffffff, 0x40000000, 0x40000001, 0x40000019, 0x4000001a, 0x40000020,
];
const HUGE_VALUES = [
  0x3fffffff, 0x40000000, 0x40000001, 0x40000019, 0x4000001a, 0x4000001d, 0x7ffffffe, 0x7fffffff, 0x80000000,
  0xfffffff0, 0xffffffff, 0x10000000, 0x20000000, 0x0fffffff, 0x01000000, 0x00ffffff,
];
const U16_VALUES = [0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0xfffe, 1600, 1601, 1664, 1665];
const BYTE_VALUES = [0, 1, 0x7f, 0x80, 0xff, 0x6e, 0x75, 0x74, 0x62, 0x4e, 0x4b, 0x4f, 0x52, 0x49, 0x53, 0x45];

type Op =
  | "bitflip" | "byteset" | "length" | "huge" | "count" | "nul" | "tag" | "colKind" | "submsg" | "relink"
  | "frameLength" | "truncate" | "append" | "insert" | "erase" | "crossover"
  | "dup" | "drop" | "swap" | "spliceIn";

const OPS: readonly [Op, number][] = [
  ["bitflip", 14], ["byteset", 8], ["length", 10], ["huge", 6], ["count", 8], ["nul", 5], ["tag", 6],
  ["colKind", 5], ["submsg", 3], ["relink", 8], ["frameLength", 8], ["truncate", 8], ["append", 5], ["insert", 3],
  ["erase", 3], ["crossover", 3], ["dup", 3], ["drop", 2], ["swap", 2], ["spliceIn", 3],
];
const OP_TOTAL = OPS.reduce((s, [, w]) => s + w, 0);
const LIST_OPS = new Set<Op>(["dup", "drop", "swap", "spliceIn"]);
const RESIZE_OPS = new Set<Op>(["truncate", "append", "insert", "erase", "crossover"]);

function pickOp(r: Random): Op {
  let x = r.int(0, OP_TOTAL - 1);
  for (const [op, w] of OPS) if ((x -= w) < 0) return op;
  return "bitflip";
}

/** A random value for a 32-bit length/count field holding `v` in a buffer with `rest` bytes after it. */
function lengthValue(r: Random, v: number, rest: number, huge: boolean): number {
  if (huge) return r.chance(0.85) ? r.pick(HUGE_VALUES) : (0x10000000 + r.int(0, 0xefffffff)) >>> 0;
  const roll = r.float();
  if (roll < 0.35) return (v + r.pick([-4, -2, -1, 1, 2, 4])) >>> 0;
  if (roll < 0.55) return r.pick(U32_VALUES);
  if (roll < 0.7) return (rest + r.int(-2, 2)) >>> 0;
  if (roll < 0.8) return (v ^ (1 << r.int(0, 31))) >>> 0;
  if (roll < 0.9) return r.chance(0.5) ? (v * 2) >>> 0 : v >>> 1;
  return r.u32();
}

function count16Value(r: Random, v: number): number {
  const roll = r.float();
  if (roll < 0.4) return (v + r.pick([-2, -1, 1, 2])) & 0xffff;
  if (roll < 0.8) return r.pick(U16_VALUES);
  if (roll < 0.9) return (v ^ (1 << r.int(0, 15))) & 0xffff;
  return r.int(0, 0xffff);
}

function pickSource(r: Random, sources: readonly Source[]): Source {
  // Half the cases from the largest source (the bench corpus when present), half spread over the rest.
  const big = sources.reduce((a, b) => (b.messages.length > a.messages.length ? b : a));
  if (sources.length === 1 || r.chance(0.4)) return big;
  return r.pick(sources);
}

function xlogPayload(r: Random, message: Uint8Array): Uint8Array {
  const out = new Uint8Array(25 + message.length);
  const dv = new DataView(out.buffer);
  out[0] = 0x77;
  dv.setBigUint64(1, r.u64());
  dv.setBigUint64(9, r.u64());
  dv.setBigUint64(17, r.u64());
  out.set(message, 25);
  return out;
}

function keepalivePayload(r: Random): Uint8Array {
  const out = new Uint8Array(18);
  const dv = new DataView(out.buffer);
  out[0] = 0x6b;
  dv.setBigUint64(1, r.u64());
  dv.setBigUint64(9, r.u64());
  out[17] = r.chance(0.5) ? 0 : r.int(0, 255);
  return out;
}

/** Generates case `index` of the run seeded with `seed` (optionally forcing the form). */
export function generateCase(sources: readonly Source[], seed: number, index: number, forceForm?: Form): FuzzCase {
  const r = new Random(caseSeed(seed, index));
  const picked = r.pick(FORMS); // drawn even when forced, so a forced case differs from the free one only in its form
  const form: Form = forceForm ?? picked;
  const src = pickSource(r, sources);
  const total = src.messages.length;
  const start = r.int(0, total - 1);
  const want = r.chance(0.6) ? r.int(1, 4) : r.chance(0.8) ? r.int(5, 16) : r.int(17, 64);
  const count = Math.min(total - start, want);

  // State: the relations the window refers to, and the stream state at its start.
  const setupIdx = new Set<number>();
  for (let i = start; i < start + count; i++) for (const k of src.refs[i] ?? []) if (k < start) setupIdx.add(k);
  // sometimes more relations in the cache (other widths for relinked changes)
  if (r.chance(0.5) && src.relationAt.length > 0) {
    for (let n = r.int(1, 3); n > 0; n--) {
      const k = r.pick(src.relationAt);
      if (k < start) setupIdx.add(k);
    }
  }
  const setup = [...setupIdx].sort((a, b) => a - b).map((k) => ({ bytes: src.messages[k]!, inStream: src.inStream[k] === 1 }));

  const items: Item[] = [];
  const wrap = (m: Uint8Array, inStream: boolean): Item => {
    if (form === "copydata") return { bytes: xlogPayload(r, m), header: 25, inStream };
    if (form === "backend") return { bytes: backendFrame("d", xlogPayload(r, m)), header: 30, inStream };
    return { bytes: m, header: 0, inStream };
  };
  for (let i = start; i < start + count; i++) {
    items.push(wrap(src.messages[i]!, src.inStream[i] === 1));
    if ((form === "copydata" || form === "backend") && r.chance(0.08)) {
      const k = keepalivePayload(r);
      items.push({ bytes: form === "backend" ? backendFrame("d", k) : k, header: -1, inStream: false });
    }
    if (form === "backend" && r.chance(0.02)) {
      items.push({ bytes: r.chance(0.5) ? backendFrame("N", new Uint8Array([0x53, 0x4e, 0, 0])) : backendFrame("c", new Uint8Array(0)), header: -1, inStream: false });
    }
  }

  const knownOids: number[] = [];
  for (const m of [...setup.map((x) => x), ...items.map((it) => ({ bytes: it.header > 0 ? it.bytes.subarray(it.header) : it.bytes, inStream: it.inStream }))]) {
    const p = 1 + (m.inStream ? 4 : 0);
    if (m.bytes[0] === T_RELATION && m.bytes.length >= p + 4) knownOids.push(new DataView(m.bytes.buffer, m.bytes.byteOffset).getUint32(p));
  }

  const nmut = r.chance(0.75) ? 1 : r.chance(0.7) ? 2 : 3;
  const ops: Op[] = [];
  for (let i = 0; i < nmut; i++) ops.push(pickOp(r));
  const phase = (op: Op) => (LIST_OPS.has(op) ? 0 : RESIZE_OPS.has(op) ? 2 : 1);
  ops.sort((a, b) => phase(a) - phase(b));
  const mutations: string[] = [];

  const otherMessage = (): { bytes: Uint8Array; inStream: boolean; where: string } => {
    const s = r.pick(sources);
    const k = r.int(0, s.messages.length - 1);
    return { bytes: s.messages[k]!, inStream: s.inStream[k] === 1, where: `${s.name}#${k}` };
  };

  // Phase 0: whole items.
  for (const op of ops) {
    if (phase(op) !== 0) continue;
    const k = r.int(0, items.length - 1);
    if (op === "dup") {
      items.splice(k, 0, { ...items[k]! });
      mutations.push(`duplicate item ${k}`);
    } else if (op === "drop" && items.length > 1) {
      items.splice(k, 1);
      mutations.push(`drop item ${k}`);
    } else if (op === "swap" && items.length > 1) {
      const j = r.int(0, items.length - 1);
      [items[k], items[j]] = [items[j]!, items[k]!];
      mutations.push(`swap items ${k} and ${j}`);
    } else {
      const o = otherMessage();
      items.splice(k, 0, wrap(o.bytes, o.inStream));
      mutations.push(`splice in ${o.where} at item ${k}`);
    }
  }

  // Serialize: list forms keep items; stream forms become one byte string.
  const listForm = form === "decode" || form === "batch" || form === "copydata";
  let input: Uint8Array[];
  let fieldsOf: (target: number) => Field[];
  if (listForm) {
    input = items.map((it) => it.bytes);
    fieldsOf = (t) => {
      const out: Field[] = [];
      itemFields({ ...items[t]!, bytes: input[t]! }, 0, out);
      return out;
    };
  } else {
    const fields: Field[] = [];
    let bytes: Uint8Array;
    if (form === "backend") {
      bytes = backendStream(items.map((it) => it.bytes));
      let base = 0;
      for (const it of items) {
        itemFields(it, base, fields);
        base += it.bytes.length;
      }
    } else {
      bytes = frame(items.map((it) => it.bytes));
      let base = 0;
      for (const it of items) {
        fields.push({ at: base, kind: "frameLen" });
        itemFields(it, base + 4, fields);
        base += 4 + it.bytes.length;
      }
    }
    input = [bytes];
    fieldsOf = () => fields;
  }

  // Phases 1 and 2: bytes of one element (list forms) or of the stream.
  for (const op of ops) {
    if (phase(op) === 0) continue;
    const t = r.int(0, input.length - 1);
    const label = listForm ? `item ${t}: ` : "";
    let b = input[t]!;
    if (phase(op) === 1) b = b.slice();
    const fields = phase(op) === 1 ? fieldsOf(t) : [];
    const ofKind = (...kinds: FieldKind[]) => fields.filter((f) => kinds.includes(f.kind));
    let op2: Op = op;
    const want: Record<string, FieldKind[]> = {
      length: ["len"], huge: ["len", "frameLen", "count32", "count16"], count: ["count16", "count32"], nul: ["nul"],
      tag: ["tag", "ptag", "btype"], colKind: ["colKind"], submsg: ["submsg"], frameLength: ["frameLen"], relink: ["relid"],
    };
    let candidates: Field[] = [];
    if (want[op] !== undefined) {
      candidates = ofKind(...want[op]);
      if (candidates.length === 0) op2 = r.chance(0.5) ? "bitflip" : "byteset";
    }
    const f = candidates.length > 0 ? r.pick(candidates) : undefined;
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    switch (op2) {
      case "bitflip": {
        if (b.length === 0) break;
        const n = r.int(1, 4);
        const bits: number[] = [];
        for (let i = 0; i < n; i++) {
          const bit = r.int(0, b.length * 8 - 1);
          b[bit >> 3]! ^= 1 << (bit & 7);
          bits.push(bit);
        }
        mutations.push(`${label}bit flips ${bits.join(",")}`);
        break;
      }
      case "byteset": {
        if (b.length === 0) break;
        const n = r.int(1, 4);
        const sets: string[] = [];
        for (let i = 0; i < n; i++) {
          const at = r.int(0, b.length - 1);
          b[at] = r.chance(0.6) ? r.pick(BYTE_VALUES) : r.int(0, 255);
          sets.push(`${at}=${b[at]}`);
        }
        mutations.push(`${label}bytes set ${sets.join(",")}`);
        break;
      }
      case "length": case "huge": case "frameLength": case "count": {
        const field = f!;
        if (field.kind === "count16") {
          if (field.at + 2 > b.length) break;
          const v = dv.getUint16(field.at);
          const nv = op2 === "huge" ? r.pick([0x7fff, 0x8000, 0xffff, 0xfffe]) : count16Value(r, v);
          dv.setUint16(field.at, nv);
          mutations.push(`${label}count16 at ${field.at}: ${v} -> ${nv}`);
        } else {
          if (field.at + 4 > b.length) break;
          const v = dv.getUint32(field.at);
          const nv = lengthValue(r, v, b.length - field.at - 4, op2 === "huge");
          dv.setUint32(field.at, nv);
          mutations.push(`${label}${field.kind} at ${field.at}: ${v} -> ${nv}`);
        }
        break;
      }
      case "relink": {
        // another relation's OID (a known one, mostly): a change now names a relation of another width
        const at = f!.at;
        if (at + 4 > b.length) break;
        const v = dv.getUint32(at);
        const nv = knownOids.length > 0 && r.chance(0.85) ? r.pick(knownOids) : r.u32();
        dv.setUint32(at, nv);
        mutations.push(`${label}oid at ${at}: ${v} -> ${nv}`);
        break;
      }
      case "nul": {
        const at = f!.at;
        if (r.chance(0.6)) {
          const v = r.chance(0.5) ? 0x78 : r.int(1, 255);
          b[at] = v;
          mutations.push(`${label}NUL at ${at} set to ${v}`);
        } else {
          b = concatBytes([b.subarray(0, at), b.subarray(at + 1)]);
          mutations.push(`${label}NUL at ${at} removed`);
        }
        break;
      }
      case "tag": case "colKind": case "submsg": {
        const at = f!.at;
        const pool = op2 === "tag" ? TAGS : op2 === "colKind" ? "nutbNx\0" : "NKOnX\0";
        const v = r.chance(0.85) ? pool.charCodeAt(r.int(0, pool.length - 1)) : r.int(0, 255);
        mutations.push(`${label}${f!.kind} at ${at}: ${b[at]} -> ${v}`);
        b[at] = v;
        break;
      }
      case "truncate": {
        const n = b.length === 0 ? 0 : r.chance(0.3) ? Math.max(0, b.length - r.int(1, 4)) : r.int(0, b.length - 1);
        b = b.subarray(0, n);
        mutations.push(`${label}truncated to ${n}`);
        break;
      }
      case "append": {
        const g = r.chance(0.7) ? r.bytes(r.int(1, 32)) : otherMessage().bytes.subarray(0, r.int(1, 64));
        b = concatBytes([b, g]);
        mutations.push(`${label}${g.length} bytes appended`);
        break;
      }
      case "insert": {
        const at = r.int(0, b.length);
        const g = r.bytes(r.int(1, 16));
        b = concatBytes([b.subarray(0, at), g, b.subarray(at)]);
        mutations.push(`${label}${g.length} bytes inserted at ${at}`);
        break;
      }
      case "erase": {
        if (b.length === 0) break;
        const at = r.int(0, b.length - 1);
        const n = Math.min(b.length - at, r.int(1, 16));
        b = concatBytes([b.subarray(0, at), b.subarray(at + n)]);
        mutations.push(`${label}${n} bytes erased at ${at}`);
        break;
      }
      case "crossover": {
        const o = otherMessage();
        const at = r.int(0, b.length);
        const from = r.int(0, o.bytes.length);
        b = concatBytes([b.subarray(0, at), o.bytes.subarray(from)]);
        mutations.push(`${label}tail from ${at} replaced by ${o.where} from ${from}`);
        break;
      }
      default:
        break;
    }
    input[t] = b;
  }

  const c: FuzzCase = { seed, index, form, source: src.name, start, count, mutations, setup, inStream: src.inStream[start] === 1, input, splits: [] };
  if (form === "push" || form === "backend") c.splits = splits(r, input[0]!.length);
  if (form === "decode" && r.chance(0.15)) c.overrides = input.map(() => (r.chance(0.2) ? r.chance(0.5) : null));
  if (r.chance(0.1)) c.maxMessageSize = Math.max(limitFor(r, input), ...setup.map((x) => x.bytes.length));
  return c;
}

/** A small maxMessageSize, near the size of some message of the input (the probe still fits; the caller makes the setup fit). */
function limitFor(r: Random, input: Uint8Array[]): number {
  const sizes = input.map((m) => m.length).filter((n) => n >= 128);
  if (sizes.length === 0 || r.chance(0.3)) return r.pick([128, 256, 1000, 4096, 65536]);
  return Math.max(128, r.pick(sizes) + r.int(-32, 8));
}

/**
 * Chunk boundaries, at most a few dozen: none (one chunk), random cuts, and
 * runs of 1- to 3-byte chunks somewhere (a frame header or a field arriving
 * in pieces).
 */
function splits(r: Random, length: number): number[] {
  if (length < 2 || r.chance(0.15)) return [];
  const cuts = new Set<number>();
  const n = r.int(1, Math.min(24, length - 1));
  for (let i = 0; i < n; i++) cuts.add(r.int(1, length - 1));
  for (let runs = r.int(0, 2); runs > 0; runs--) {
    let p = r.int(1, length - 1);
    for (let i = r.int(2, 12); i > 0 && p < length; i--, p += r.int(1, 3)) cuts.add(p);
  }
  return [...cuts].sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------
// Running a case

/** What one decoder call gave. */
export type Outcome =
  | { ok: true; value: unknown }
  | {
    ok: false; code: string; offset: number | undefined; incomplete: boolean;
    messageIndex: number | undefined; messageKind: string | undefined; field: string | undefined;
    /** Set when the error was not a PgoutputError. */
    foreign?: string;
  };

function outcome(fn: () => unknown): Outcome {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    if (isPgoutputError(e)) {
      return { ok: false, code: e.code, offset: e.offset, incomplete: e.incomplete, messageIndex: e.messageIndex, messageKind: e.messageKind, field: e.field };
    }
    const name = e instanceof Error ? e.constructor.name : typeof e;
    const message = e instanceof Error ? e.message : String(e);
    return { ok: false, code: `${name}`, offset: undefined, incomplete: false, messageIndex: undefined, messageKind: undefined, field: undefined, foreign: `${name}: ${message}` };
  }
}

function batchValue(b: { consumed: number; materialize(): unknown }): unknown {
  return { consumed: b.consumed, messages: b.materialize() };
}

/** Runs the case's input through a decoder in the case's form; one outcome per call. */
export function runForm(d: PgoutputDecoder, c: FuzzCase): Outcome[] {
  d.reset();
  for (const s of c.setup) d.decode(s.bytes, { inStream: s.inStream });
  d.inStream = c.inStream;
  const out: Outcome[] = [];
  switch (c.form) {
    case "decode":
      c.input.forEach((m, i) => {
        const o = c.overrides?.[i];
        out.push(outcome(() => (o == null ? d.decode(m) : d.decode(m, { inStream: o })).materialize()));
      });
      break;
    case "batch":
      out.push(outcome(() => batchValue(d.decodeBatch(c.input))));
      break;
    case "framed":
      out.push(outcome(() => batchValue(d.decodeFramed(c.input[0]!))));
      break;
    case "copydata":
      out.push(outcome(() => batchValue(d.decodeCopyData(c.input))));
      break;
    case "push": case "backend": {
      const bytes = c.input[0]!;
      let p = 0;
      for (const cut of [...c.splits, bytes.length]) {
        const chunk = bytes.subarray(p, cut);
        out.push(outcome(() => batchValue(c.form === "push" ? d.push(chunk) : d.pushBackend(chunk))));
        p = cut;
      }
      out.push(outcome(() => d.end()));
      break;
    }
  }
  return out;
}

/** The decoder's caches and stream state, comparable across backends. */
export function stateOf(d: PgoutputDecoder): unknown {
  const relations = [...d.relations.values()].map((r) => r.toJSON()).sort((a, b) => (a.relationId as number) - (b.relationId as number));
  const types = [...d.types.values()].map((t) => ({ ...t })).sort((a, b) => a.typeId - b.typeId);
  return { inStream: d.inStream, relations, types };
}

// The known-good probe: a Relation and an Insert into it, in each form.
const PROBE_REL = { relationId: 0xfffffff0, namespace: "fuzz", relationName: "probe", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }] };
const PROBE = [encode.relation(PROBE_REL), encode.insert({ relation: PROBE_REL, newTuple: ["42", "héllo"] }), encode.streamStop()];
const PROBE_HEADER = { walStart: 1n, walEnd: 2n, sendTime: 3n };
const PROBE_WAL = PROBE.map((m) => wal.xlogData(m, PROBE_HEADER));
const PROBE_BYTES = PROBE.map((m) => m.bytes);
const PROBE_FRAMED = frame(PROBE);
const PROBE_BACKEND = backendStream(PROBE_WAL.map((w) => backendFrame("d", w.bytes)));
const PROBE_EXPECTED = PROBE.map((m) => m.expected);
const PROBE_WAL_EXPECTED = PROBE_WAL.map((w) => w.expected);

/** Decodes the probe in the form's way; returns what went wrong, or undefined. */
export function probe(d: PgoutputDecoder, form: Form): string | undefined {
  const o = outcome(() => {
    d.inStream = false;
    switch (form) {
      case "decode": return PROBE_BYTES.map((m) => d.decode(m).materialize());
      case "batch": return d.decodeBatch(PROBE_BYTES).materialize();
      case "framed": return d.decodeFramed(PROBE_FRAMED).materialize();
      case "push": {
        const got = d.push(PROBE_FRAMED).materialize();
        d.end();
        return got;
      }
      case "copydata": return d.decodeCopyData(PROBE_WAL.map((w) => w.bytes)).materialize();
      case "backend": {
        const got = d.pushBackend(PROBE_BACKEND).materialize();
        d.end();
        return got;
      }
    }
  });
  if (!o.ok) return `probe threw ${o.foreign ?? `${o.code} at ${o.offset}`}`;
  const want = form === "copydata" || form === "backend" ? PROBE_WAL_EXPECTED : PROBE_EXPECTED;
  return deepEqual(o.value, want) ? undefined : "probe decoded to wrong values";
}

export interface Failure {
  /** What went wrong, without case-specific numbers: failures with the same signature are one bug, most likely. */
  signature: string;
  detail: string;
}

export interface RunnerOptions {
  /** Makes a wasm and a baseline decoder with a given maxMessageSize (for cases that set one). */
  limited?: (maxMessageSize: number) => [PgoutputDecoder, PgoutputDecoder];
  /**
   * Makes a decoder over the twin kernel (support/twin-kernel.ts) with a
   * given maxMessageSize (undefined: the default). With it, every case also
   * runs through both kernels on one memory image, compared word for word
   * (status, result words, tape, width table) on every kernel call.
   */
  twin?: (maxMessageSize: number | undefined) => PgoutputDecoder;
  /** The largest wasm memory, in bytes, since the last call (see `trackWasmMemory().takePeak`). */
  wasmMemory?: () => number;
  /** Per-case time limit per backend, in ms, before a case counts as a hang: base + per input byte. */
  slowMs?: number;
  /** Wasm memory bound: base bytes + a multiple of the input size. */
  memoryBase?: number;
  memoryPerInputByte?: number;
}

function showOutcome(o: Outcome): string {
  if (o.ok) return "ok";
  if (o.foreign !== undefined) return `threw ${o.foreign}`;
  return `${o.code} offset=${o.offset} incomplete=${o.incomplete} messageIndex=${o.messageIndex} kind=${o.messageKind} field=${o.field}`;
}

function compareOutcomes(w: Outcome, b: Outcome): string | undefined {
  if (deepEqual(w, b)) return undefined;
  if (w.ok && b.ok) return "both decode, values differ";
  if (w.ok !== b.ok) return `wasm ${w.ok ? "ok" : w.code} / baseline ${b.ok ? "ok" : b.code}`;
  const wf = w as Exclude<Outcome, { ok: true }>;
  const bf = b as Exclude<Outcome, { ok: true }>;
  const fields = (["code", "offset", "incomplete", "messageIndex", "messageKind", "field"] as const).filter((f) => wf[f] !== bf[f]);
  return `${wf.code}/${bf.code}: ${fields.join(", ")} differ`;
}

/** Runs cases through a wasm and a baseline decoder and checks everything the fuzzer promises. */
export class FuzzRunner {
  #wasm: PgoutputDecoder;
  #baseline: PgoutputDecoder;
  readonly #opts: Required<Omit<RunnerOptions, "limited" | "twin">>;
  readonly #limited: RunnerOptions["limited"];
  readonly #twin: RunnerOptions["twin"];
  readonly #twins = new Map<number, PgoutputDecoder>();
  readonly #pairs = new Map<number, [PgoutputDecoder, PgoutputDecoder]>();
  /** How the cases ended (the wasm decoder's first error code per case, or "ok"), for reports. */
  readonly outcomes = new Map<string, number>();

  constructor(wasm: PgoutputDecoder, baseline: PgoutputDecoder, options: RunnerOptions = {}) {
    this.#wasm = wasm;
    this.#baseline = baseline;
    this.#limited = options.limited;
    this.#twin = options.twin;
    this.#pairs.set(-1, [wasm, baseline]);
    this.#opts = {
      wasmMemory: options.wasmMemory ?? (() => 0),
      slowMs: options.slowMs ?? 1000,
      memoryBase: options.memoryBase ?? 32 << 20,
      memoryPerInputByte: options.memoryPerInputByte ?? 8,
    };
  }

  /** Runs one case; returns its failures (none when all is well). */
  run(c: FuzzCase): Failure[] {
    const key = c.maxMessageSize ?? -1;
    let pair = this.#pairs.get(key);
    if (pair === undefined) {
      if (this.#limited === undefined) throw new Error("a case with maxMessageSize needs the runner's `limited` option");
      pair = this.#limited(key);
      // keep the default pair and the few latest limited ones
      if (this.#pairs.size > 4) this.#pairs.delete([...this.#pairs.keys()].find((k) => k !== -1)!);
      this.#pairs.set(key, pair);
    }
    [this.#wasm, this.#baseline] = pair;
    const failures: Failure[] = [];
    const fail = (signature: string, detail: string) => failures.push({ signature, detail });
    this.#opts.wasmMemory(); // the peak counts from here
    let inputBytes = 0;
    for (const m of c.input) inputBytes += m.length;
    const limit = this.#opts.slowMs + inputBytes / 1000;

    const timed = (d: PgoutputDecoder): { outs: Outcome[]; ms: number; setupError?: string } => {
      const t0 = performance.now();
      let outs: Outcome[];
      try {
        outs = runForm(d, c);
      } catch (e) {
        return { outs: [], ms: 0, setupError: String(e) };
      }
      return { outs, ms: performance.now() - t0 };
    };
    let w = timed(this.#wasm);
    let b = timed(this.#baseline);
    if (w.setupError !== undefined || b.setupError !== undefined) {
      fail("setup failed", `wasm: ${w.setupError}, baseline: ${b.setupError}`);
      return failures;
    }
    // Confirm a slow case by running it again (a GC pause is no hang).
    if (w.ms > limit) w = timed(this.#wasm);
    if (w.ms > limit) fail("wasm slow", `wasm took ${w.ms.toFixed(0)} ms (limit ${limit.toFixed(0)} ms)`);
    if (b.ms > limit) b = timed(this.#baseline);
    if (b.ms > limit) fail("baseline slow", `baseline took ${b.ms.toFixed(0)} ms (limit ${limit.toFixed(0)} ms)`);

    if (this.#twin !== undefined) {
      let twin = this.#twins.get(key);
      if (twin === undefined) {
        if (this.#twins.size > 4) this.#twins.clear();
        this.#twins.set(key, (twin = this.#twin(c.maxMessageSize)));
      }
      // The twin decodes as the wasm decoder does; a kernel mismatch shows as a foreign error.
      const t = timed(twin);
      const bad = t.setupError ?? t.outs.map((o) => (o.ok ? undefined : o.foreign)).find((f) => f !== undefined);
      if (bad !== undefined) fail(`kernels differ: ${bad.replace(/\(.*?\)/, "").replace(/-?\d+/g, "N")}`, bad);
      else if (!deepEqual(t.outs, w.outs)) fail("twin differs from wasm", "the twin-kernel decoder's outcomes differ from the wasm decoder's");
    }

    const first = w.outs.find((o) => !o.ok);
    const ending = first === undefined || first.ok ? "ok" : first.code;
    this.outcomes.set(ending, (this.outcomes.get(ending) ?? 0) + 1);

    for (const [name, outs] of [["wasm", w.outs], ["baseline", b.outs]] as const) {
      for (const o of outs) {
        if (!o.ok && o.foreign !== undefined) {
          fail(`${name} threw ${o.code}`, `${name} threw ${o.foreign}`);
          break;
        }
      }
    }
    const n = Math.max(w.outs.length, b.outs.length);
    for (let i = 0; i < n; i++) {
      const wo = w.outs[i]!;
      const bo = b.outs[i]!;
      const sig = compareOutcomes(wo, bo);
      if (sig !== undefined) {
        fail(sig, `call ${i}: wasm ${showOutcome(wo)}; baseline ${showOutcome(bo)}`);
        break;
      }
    }
    const ws = stateOf(this.#wasm);
    const bs = stateOf(this.#baseline);
    if (!deepEqual(ws, bs)) {
      const s = ws as { inStream: boolean; relations: unknown[]; types: unknown[] };
      const t = bs as typeof s;
      const what = s.inStream !== t.inStream ? "inStream" : !deepEqual(s.relations, t.relations) ? "relations" : "types";
      fail(`state differs: ${what}`, `wasm ${JSON.stringify(ws, replacer).slice(0, 300)}; baseline ${JSON.stringify(bs, replacer).slice(0, 300)}`);
    }

    const memory = this.#opts.wasmMemory();
    const bound = this.#opts.memoryBase + this.#opts.memoryPerInputByte * inputBytes;
    if (memory > bound) fail("wasm memory above bound", `wasm memory ${(memory / 2 ** 20).toFixed(1)} MiB > ${(bound / 2 ** 20).toFixed(1)} MiB for ${inputBytes} input bytes`);

    for (const [name, d] of [["wasm", this.#wasm], ["baseline", this.#baseline]] as const) {
      const p = probe(d, c.form);
      if (p !== undefined) fail(`${name} unusable afterwards`, `${name}: ${p}`);
    }
    return failures;
  }
}

function replacer(_k: string, v: unknown): unknown {
  return typeof v === "bigint" ? v.toString() : v;
}

/**
 * Shrinks a failing case while it still fails with `signature` (and at most
 * `budget` runs): drops setup messages, items, chunk boundaries and
 * decode options, then cuts byte ranges out of each item. The result is
 * easier to read and to save; its seed and case number still name the
 * original.
 */
export function minimize(runner: FuzzRunner, c: FuzzCase, signature: string, budget = 400): FuzzCase {
  let best = c;
  let runs = 0;
  const fails = (x: FuzzCase): boolean => {
    runs++;
    return runner.run(x).some((f) => f.signature === signature);
  };
  const tryCase = (x: FuzzCase): boolean => {
    if (runs >= budget || !fails(x)) return false;
    best = x;
    return true;
  };
  for (let i = best.setup.length - 1; i >= 0; i--) tryCase({ ...best, setup: best.setup.filter((_, k) => k !== i) });
  if (best.splits.length > 0) tryCase({ ...best, splits: [] });
  if (best.overrides !== undefined) {
    for (let i = 0; i < best.overrides.length; i++) {
      if (best.overrides[i] !== null) tryCase({ ...best, overrides: best.overrides.map((o, k) => (k === i ? null : o)) });
    }
  }
  if (best.input.length > 1) {
    for (let i = best.input.length - 1; i >= 0 && best.input.length > 1; i--) {
      const input = best.input.filter((_, k) => k !== i);
      const overrides = best.overrides?.filter((_, k) => k !== i);
      tryCase({ ...best, input, ...(overrides ? { overrides } : {}) });
    }
  }
  // byte ranges, large to small, in each item
  for (let t = 0; t < best.input.length; t++) {
    for (let size = best.input[t]!.length >> 1; size >= 1; size >>= 1) {
      for (let at = 0; at + size <= best.input[t]!.length && runs < budget;) {
        const b = best.input[t]!;
        const cut = new Uint8Array(b.length - size);
        cut.set(b.subarray(0, at));
        cut.set(b.subarray(at + size), at);
        const input = best.input.map((m, k) => (k === t ? cut : m));
        const splits = best.splits.filter((p) => p < cut.length);
        if (!tryCase({ ...best, input, splits })) at += size;
      }
    }
  }
  return best;
}

// ---------------------------------------------------------------------------
// Wasm memory, observed from outside

/**
 * Watches the wasm decoders' memory from outside, without reaching into a
 * decoder: `WebAssembly.Instance` construction (the wasm decoder makes one
 * per kernel instance) and `WebAssembly.Memory.prototype.grow` (the decoder
 * grows its memory only from JS, before a kernel call). Gives the memory size
 * of the latest instance (the current one of the last wasm decoder created),
 * the largest size any memory grew to since the last `takePeak()`, and how
 * many instances were made. (Only the latest instance is held, weakly: a
 * WeakRef's target stays alive for the rest of the synchronous job once
 * dereferenced, so a list of them would keep every instance of a long loop.)
 */
export function trackWasmMemory(): { latest(): number; takePeak(): number; instances(): number; restore(): void } {
  const Original = WebAssembly.Instance;
  const originalGrow = WebAssembly.Memory.prototype.grow;
  let last: WeakRef<WebAssembly.Instance> | undefined;
  let made = 0;
  let peak = 0;
  const Tracked = new Proxy(Original, {
    construct(target, args, newTarget) {
      const inst = Reflect.construct(target, args, newTarget) as WebAssembly.Instance;
      last = new WeakRef(inst);
      made++;
      return inst;
    },
  });
  (WebAssembly as { Instance: typeof WebAssembly.Instance }).Instance = Tracked;
  WebAssembly.Memory.prototype.grow = function grow(this: WebAssembly.Memory, delta: number): number {
    const before = originalGrow.call(this, delta);
    peak = Math.max(peak, this.buffer.byteLength);
    return before;
  };
  return {
    latest: () => ((last?.deref()?.exports.memory as WebAssembly.Memory | undefined)?.buffer.byteLength ?? 0),
    takePeak: () => {
      const p = peak;
      peak = 0;
      return p;
    },
    instances: () => made,
    restore: () => {
      (WebAssembly as { Instance: typeof WebAssembly.Instance }).Instance = Original;
      WebAssembly.Memory.prototype.grow = originalGrow;
    },
  };
}

// ---------------------------------------------------------------------------
// Saving and loading cases

function toHex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
}

function fromHex(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, "hex"));
}

/** The saved form of a failing case (test/fuzz-regressions/*.json). */
export interface SavedCase {
  format: "pgoutput-wasm fuzz case 1";
  seed: number;
  case: number;
  form: Form;
  source: string;
  window: [number, number];
  mutations: string[];
  failures: Failure[];
  inStream: boolean;
  setup: { inStream: boolean; hex: string }[];
  /** decode/batch: messages; copydata: payloads; framed/push/backend: one byte string. */
  input: string[];
  splits: number[];
  overrides?: (boolean | null)[];
  maxMessageSize?: number;
  /** Set when the input was shrunk from the generated case (see `minimize`). */
  minimized?: boolean;
}

export function saveCase(c: FuzzCase, failures: Failure[]): SavedCase {
  return {
    format: "pgoutput-wasm fuzz case 1",
    seed: c.seed,
    case: c.index,
    form: c.form,
    source: c.source,
    window: [c.start, c.count],
    mutations: c.mutations,
    failures,
    inStream: c.inStream,
    setup: c.setup.map((s) => ({ inStream: s.inStream, hex: toHex(s.bytes) })),
    input: c.input.map(toHex),
    splits: c.splits,
    ...(c.overrides ? { overrides: c.overrides } : {}),
    ...(c.maxMessageSize !== undefined ? { maxMessageSize: c.maxMessageSize } : {}),
  };
}

export function loadCase(s: SavedCase): FuzzCase {
  if (s.format !== "pgoutput-wasm fuzz case 1") throw new Error(`unknown fuzz case format ${String(s.format)}`);
  if (!(FORMS as readonly string[]).includes(s.form)) throw new Error(`unknown form ${s.form}`);
  return {
    seed: s.seed,
    index: s.case,
    form: s.form,
    source: s.source,
    start: s.window[0],
    count: s.window[1],
    mutations: s.mutations,
    setup: s.setup.map((x) => ({ inStream: x.inStream, bytes: fromHex(x.hex) })),
    inStream: s.inStream,
    input: s.input.map(fromHex),
    splits: s.splits,
    ...(s.overrides ? { overrides: s.overrides } : {}),
    ...(s.maxMessageSize !== undefined ? { maxMessageSize: s.maxMessageSize } : {}),
  };
}

/** A one-line description of a case, for reports. */
export function describeCase(c: FuzzCase): string {
  const size = c.input.reduce((s, m) => s + m.length, 0);
  const limit = c.maxMessageSize !== undefined ? ` (maxMessageSize ${c.maxMessageSize})` : "";
  const first = c.input[0] ?? new Uint8Array(0);
  return `seed ${c.seed} case ${c.index}: ${c.form}${limit}, ${c.source} messages ${c.start}..${c.start + c.count - 1}, ` +
    `${c.mutations.join("; ") || "no mutation"}; ${c.input.length} item(s), ${size} bytes, item 0: ${hex(first, 32)}`;
}
