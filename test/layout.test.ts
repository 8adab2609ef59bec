/**
 * The kernels agree with the layout (bindings/layout.ts) for every message
 * kind: each kind is built with the encoder, in every presence form the
 * layout allows (streamed xid, v4 Stream Abort, Update with and without an
 * old tuple); the encoder's offset marks are where the layout puts each
 * field; every fixed field a view reads equals the bytes at the layout's
 * offset; and a message cut at any field boundary is reported by both
 * kernels as INCOMPLETE at that offset, naming the layout's field.
 */
import { describe, expect, it } from "vitest";
import { backend, onceAcrossBackends } from "./support/backends.ts";
import { encode, PG_EPOCH_UNIX_US, type Encoded } from "../devkit/encoder/encoder.ts";
import {
  LAYOUTS, layoutOf, maxProtocolVersion, protocolNeeded, sizeOf, type LayoutField, type MessageLayout,
} from "../bindings/layout.ts";
import { KIND_BINARY, KIND_NULL, KIND_TEXT, KIND_UNCHANGED } from "../bindings/tape.ts";
import { POSTGRES_EPOCH_US } from "../bindings/time.ts";
import { PG_EPOCH_DAYS, PG_EPOCH_US } from "../bindings/values/calendar.ts";
import { isPgoutputError } from "../bindings/errors.ts";

const REL = { relationId: 16384, namespace: "public", relationName: "t" };
const T0 = 1_700_000_000_000_000n;

/** Messages of every kind and presence form; `streamed` ones are decoded inside a streamed block. */
const CASES: { m: Encoded; streamed: boolean }[] = [];
const add = (m: Encoded, streamed = false) => CASES.push({ m, streamed });
add(encode.begin({ finalLsn: 0x1_0000_0010n, commitTime: T0, xid: 701 }));
add(encode.commit({ flags: 0, commitLsn: 0x20n, endLsn: 0x28n, commitTime: T0 + 1n }));
add(encode.origin({ originLsn: 0x30n, name: "origin" }));
for (const xid of [undefined, 702]) {
  add(encode.message({ xid, transactional: true, lsn: 0x40n, prefix: "pfx", content: "hello" }), xid !== undefined);
  add(encode.relation({ ...REL, xid, replicaIdentity: "f", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }] }), xid !== undefined);
  add(encode.type({ xid, typeId: 70000, namespace: "public", typeName: "mood" }), xid !== undefined);
  add(encode.insert({ xid, relation: REL, newTuple: ["1", null] }), xid !== undefined);
  add(encode.update({ xid, relation: REL, newTuple: ["1", "x"] }), xid !== undefined);
  add(encode.update({ xid, relation: REL, oldTupleType: "O", oldTuple: ["0", "w"], newTuple: ["1", "x"] }), xid !== undefined);
  add(encode.delete({ xid, relation: REL, oldTupleType: "K", oldTuple: ["1", null] }), xid !== undefined);
  add(encode.truncate({ xid, cascade: true, relationIds: [16384, 16390] }), xid !== undefined);
}
add(encode.streamStart({ xid: 703, firstSegment: true }));
add(encode.streamStop());
add(encode.streamCommit({ xid: 703, flags: 0, commitLsn: 0x50n, endLsn: 0x58n, commitTime: T0 + 2n }));
add(encode.streamAbort({ xid: 703, subXid: 704 }));
add(encode.streamAbort({ xid: 703, subXid: 704, abortLsn: 0x60n, abortTime: T0 + 3n }));
add(encode.beginPrepare({ prepareLsn: 0x70n, endLsn: 0x78n, prepareTime: T0 + 4n, xid: 705, gid: "g1" }));
add(encode.prepare({ flags: 0, prepareLsn: 0x80n, endLsn: 0x88n, prepareTime: T0 + 5n, xid: 706, gid: "g2" }));
add(encode.commitPrepared({ flags: 0, commitLsn: 0x90n, endLsn: 0x98n, commitTime: T0 + 6n, xid: 707, gid: "g3" }));
add(encode.rollbackPrepared({
  flags: 0, prepareEndLsn: 0xa0n, rollbackEndLsn: 0xa8n, prepareTime: T0 + 7n, rollbackTime: T0 + 8n, xid: 708, gid: "g4",
}));
add(encode.streamPrepare({ flags: 0, prepareLsn: 0xb0n, endLsn: 0xb8n, prepareTime: T0 + 9n, xid: 709, gid: "g5" }));

interface Placed {
  field: LayoutField;
  at: number;
  /** The error name a cut at `at` gives. */
  error: string;
}

/** Walks a message by its layout alone: where each present field starts. */
function place(l: MessageLayout, m: Uint8Array, streamed: boolean): Placed[] {
  const dv = new DataView(m.buffer, m.byteOffset, m.byteLength);
  const out: Placed[] = [];
  let p = 1;
  let count = 0;
  for (let i = 0; i < l.fields.length; i++) {
    const f = l.fields[i]!;
    if (f.when === "streamed" && !streamed) continue;
    if (f.when === "v4" && p >= m.length) continue;
    if (f.when === "old" && m[p] === 0x4e) continue; // 'N': no old tuple
    let error = f.name;
    const start = p;
    const n = sizeOf(f.type);
    if (n > 0) {
      if (f.type === "u32") count = dv.getUint32(p);
      if (f.type === "i16") count = dv.getInt16(p);
      p += n;
    } else if (f.type === "cstring") p = m.indexOf(0, p) + 1;
    else if (f.type === "bytes") p += count;
    else if (f.type === "oids") p += 4 * count;
    else if (f.type === "columns") {
      error = `${f.name}[0].flags`;
      for (let k = 0; k < count; k++) p = m.indexOf(0, p + 1) + 9;
    } else if (f.type === "tuple") {
      error = `${f.name}.columnCount`;
      const ncols = dv.getInt16(p);
      p += 2;
      for (let k = 0; k < ncols; k++) p += m[p] === 0x74 || m[p] === 0x62 ? 5 + dv.getUint32(p + 1) : 1;
    }
    out.push({ field: f, at: start, error });
  }
  expect(p, `${l.kind}: the layout covers the message`).toBe(m.length);
  return out;
}

/** The view's value of a fixed field, as the layout says to read it at `at`. */
function wireValue(f: LayoutField, m: Uint8Array, at: number): unknown {
  const dv = new DataView(m.buffer, m.byteOffset, m.byteLength);
  switch (f.type) {
    case "u8": return f.name === "firstSegment" ? m[at] === 1 : m[at];
    case "u32": return dv.getUint32(at);
    case "lsn": return dv.getBigUint64(at);
    case "time": return dv.getBigInt64(at) + PG_EPOCH_UNIX_US;
    default: return undefined;
  }
}

/** Fixed fields views do not expose under their layout name (read through other getters). */
const NOT_VIEWED = new Set(["tupleType", "columnCount", "relationCount", "contentLength", "replicaIdentity"]);

describe("layout", () => {
  // Backend-free: registered in one project only.
  if (onceAcrossBackends) it("covers every message kind once", () => {
    expect(new Set(LAYOUTS.map((l) => l.kind)).size).toBe(LAYOUTS.length);
    expect(new Set(CASES.map((c) => c.m.kind))).toEqual(new Set(LAYOUTS.map((l) => l.kind)));
  });

  if (onceAcrossBackends) it("derives the protocol versions' facts and the epoch from one definition each", () => {
    expect([90600, 100000, 130012, 140000, 150004, 160000, 180001].map(maxProtocolVersion)).toEqual([1, 1, 1, 2, 3, 4, 4]);
    expect([protocolNeeded("off", false), protocolNeeded("on", false), protocolNeeded("on", true), protocolNeeded("parallel", false)]).toEqual([1, 2, 3, 4]);
    // The encoder keeps its own epoch on purpose (an independent oracle); the decoder's derived forms agree with it.
    expect([POSTGRES_EPOCH_US, BigInt(PG_EPOCH_US), BigInt(PG_EPOCH_DAYS) * 86_400_000_000n]).toEqual([PG_EPOCH_UNIX_US, PG_EPOCH_UNIX_US, PG_EPOCH_UNIX_US]);
  });

  if (onceAcrossBackends) it("puts each field where the encoder marks it", () => {
    for (const { m, streamed } of CASES) {
      const l = layoutOf(m.bytes[0]!)!;
      expect(l.kind).toBe(m.kind);
      for (const { field, at } of place(l, m.bytes, streamed)) {
        // A tuple is marked at its count, a list at its first element (when it has one).
        const mark = field.mark ?? (field.type === "tuple" ? `${field.name}.count` : field.type === "columns" || field.type === "oids" ? `${field.name}[0]` : field.name);
        if (mark.endsWith("[0]") && m.offsets[mark] === undefined) continue;
        expect(m.offsets[mark], `${m.kind}.${field.name}`).toBe(at);
      }
    }
  });

  describe(backend.name, () => {
    it("views read every fixed field at the layout's offset", async () => {
      const d = await backend.create();
      for (const { m, streamed } of CASES) {
        d.reset();
        if (streamed) d.inStream = true;
        const v = d.decode(m.bytes) as unknown as Record<string, unknown>;
        const l = layoutOf(m.bytes[0]!)!;
        for (const { field, at } of place(l, m.bytes, streamed)) {
          if (sizeOf(field.type) < 0 || NOT_VIEWED.has(field.name)) continue;
          expect(v[field.name], `${m.kind}.${field.name}${streamed ? " (streamed)" : ""}`).toEqual(wireValue(field, m.bytes, at));
        }
        if (l.tag === 0x41) {
          const v4 = m.bytes.length > 9;
          expect([v.abortLsn === null, v.abortTime === null]).toEqual([!v4, !v4]);
        }
      }
    });

    it("a cut at each field boundary names the layout's field", async () => {
      const d = await backend.create();
      for (const { m, streamed } of CASES) {
        const l = layoutOf(m.bytes[0]!)!;
        for (const { field, at, error } of place(l, m.bytes, streamed)) {
          d.reset();
          if (streamed) d.inStream = true;
          const label = `${m.kind}${streamed ? " (streamed)" : ""} cut at ${field.name} (${at})`;
          let got: unknown = "no error";
          try {
            d.decode(m.bytes.subarray(0, at));
          } catch (e) {
            got = isPgoutputError(e) ? { code: e.code, offset: e.offset, field: e.field, kind: e.messageKind } : String(e);
          }
          // A Stream Abort cut before its v4 fields is a valid earlier-protocol one.
          if (field.when === "v4" && field.name === "abortLsn") expect(got, label).toBe("no error");
          else expect(got, label).toEqual({ code: "INCOMPLETE", offset: at, field: error, kind: l.kind });
        }
      }
    });

    // The kernels spell the TupleData kind bytes as literals (tape.ts defines them, and both kernels compile
    // tape.ts, but they do not take them from it yet): they must take exactly tape.ts's four, read by the views
    // as named.
    it("a column's kind byte is one of tape.ts's four, read as its name", async () => {
      const d = await backend.create();
      d.decode(encode.relation({ ...REL, columns: [{ name: "c", typeId: 25 }] }).bytes);
      const named = new Map([[KIND_NULL, "null"], [KIND_UNCHANGED, "unchanged"], [KIND_TEXT, "text"], [KIND_BINARY, "binary"]]);
      for (let k = 0; k < 256; k++) {
        const valued = k === KIND_TEXT || k === KIND_BINARY;
        const column = { raw: valued ? [k, 0, 0, 0, 1, 0x41] : [k] };
        const m = encode.insert({ relation: REL, newTuple: [column] }).bytes;
        const label = `kind byte 0x${k.toString(16)}`;
        if (named.has(k)) {
          const msg = d.decode(m);
          expect(msg.kind === "Insert" && msg.newTuple.kind(0), label).toBe(named.get(k));
        } else {
          expect(() => d.decode(m), label).toThrow(expect.objectContaining({ code: "INVALID_COLUMN_KIND" }));
        }
      }
    });

    it("bytes after the last field are named `end`", async () => {
      const d = await backend.create();
      for (const { m, streamed } of CASES) {
        if (m.kind === "StreamAbort" && m.bytes.length === 9) continue; // more bytes are its v4 fields
        d.reset();
        if (streamed) d.inStream = true;
        const longer = new Uint8Array(m.bytes.length + 1);
        longer.set(m.bytes);
        expect(() => d.decode(longer), m.kind).toThrow(expect.objectContaining({ code: "TRAILING_BYTES", field: "end", offset: m.bytes.length }));
      }
    });
  });
});
