/**
 * A realistic replication stream for the aliasing harness
 * (test/aliasing.test.ts), built with the test encoders: Type and Relation
 * messages, a transaction of inserts, updates (key and old row, unchanged
 * TOAST) and deletes with text and binary columns of the types whose values
 * are objects or bytes (bytea, json, jsonb, int8, numeric, a type only a Type
 * message names), logical decoding messages with content, a truncate, and a
 * streamed block. Each message comes with the `tuple.value()` results its
 * tuples must give, written out by hand.
 */
import { unchangedToast } from "../../bindings/tuple.ts";
import { encode, UNCHANGED, type ColumnDesc, type Encoded, type RelationDesc } from "../../devkit/encoder/encoder.ts";
import { backend as be, backendStream, wal } from "../../devkit/encoder/walsender-encoder.ts";

const utf8 = new TextEncoder();

/** One message of the stream and the values its tuples must give. */
export interface StreamMessage {
  readonly encoded: Encoded;
  readonly newValues?: readonly unknown[];
  readonly oldValues?: readonly unknown[];
}

/** The custom types, named only by Type messages (so their values are strings, or byte copies when binary). */
export const MOOD = 90_001;
export const SHAPE = 90_002;

export const ITEMS: RelationDesc = {
  relationId: 16_401, namespace: "public", relationName: "items",
  columns: [
    { name: "id", typeId: 20, isKey: true }, // int8
    { name: "doc", typeId: 114 }, // json
    { name: "data", typeId: 17 }, // bytea
    { name: "price", typeId: 1700 }, // numeric
    { name: "note", typeId: 25 }, // text, TOASTed
    { name: "mood", typeId: MOOD },
  ],
};

export const BLOBS: RelationDesc = {
  relationId: 16_402, namespace: "store", relationName: "blobs", replicaIdentity: "f",
  columns: [
    { name: "id", typeId: 20, isKey: true }, // int8
    { name: "raw", typeId: 17 }, // bytea
    { name: "js", typeId: 3802 }, // jsonb
    { name: "amount", typeId: 1700 }, // numeric
    { name: "shape", typeId: SHAPE },
  ],
};

function int8(n: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, n);
  return b;
}

/** jsonb's binary form: version 1, then the text. */
function jsonb(text: string): Uint8Array {
  return new Uint8Array([1, ...utf8.encode(text)]);
}

/** numeric 12.50 in binary: ndigits 2, weight 0, sign +, dscale 2, digits 12 and 5000 (base 10000). */
const NUMERIC_12_50 = new Uint8Array([0, 2, 0, 0, 0, 0, 0, 2, 0, 12, 0x13, 0x88]);

const LONG_NOTE = "a note long enough to be TOASTed, ☃ included; ".repeat(40);
const RAW = Uint8Array.from({ length: 300 }, (_, i) => (i * 37 + 11) & 0xff);
const RAW2 = Uint8Array.from({ length: 64 }, (_, i) => 255 - i);
const SHAPE_BYTES = new Uint8Array([0, 0, 0, 3, 0x7f, 0x80, 0x01]);

function insert(relation: RelationDesc, newTuple: ColumnDesc[], newValues: unknown[], xid?: number): StreamMessage {
  return { encoded: encode.insert({ relation, newTuple, xid }), newValues };
}

/** The pgoutput messages, in order. */
export function aliasStream(): StreamMessage[] {
  const itemsText: ColumnDesc[] = ["9007199254740993", '{"a":[1,2,{"b":"ç"}]}', "\\xdeadbeef00", "12.50", LONG_NOTE, "happy"];
  const itemsValues = [9007199254740993n, { a: [1, 2, { b: "ç" }] }, new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0]), "12.50", LONG_NOTE, "happy"];
  const blobsRow: ColumnDesc[] = [int8(-2n), RAW, jsonb('{"k":true,"n":null}'), NUMERIC_12_50, SHAPE_BYTES];
  const blobsValues = [-2n, RAW, { k: true, n: null }, "12.50", SHAPE_BYTES];
  const keyOnly = (id: string): ColumnDesc[] => [id, null, null, null, null, null];
  return [
    { encoded: encode.type({ typeId: MOOD, namespace: "public", typeName: "mood" }) },
    { encoded: encode.type({ typeId: SHAPE, namespace: "geo", typeName: "shape" }) },
    { encoded: encode.relation(ITEMS) },
    { encoded: encode.relation(BLOBS) },
    { encoded: encode.begin({ finalLsn: 0x1_0000_0100n, commitTime: 1_700_000_000_000_000n, xid: 700 }) },
    insert(ITEMS, itemsText, itemsValues),
    insert(BLOBS, blobsRow, blobsValues),
    {
      encoded: encode.update({
        relation: ITEMS, oldTupleType: "K", oldTuple: keyOnly("9007199254740993"),
        newTuple: ["9007199254740993", "[]", "\\x", "-0.001", UNCHANGED, "sad"],
      }),
      oldValues: [9007199254740993n, null, null, null, null, null],
      newValues: [9007199254740993n, [], new Uint8Array(0), "-0.001", unchangedToast, "sad"],
    },
    {
      encoded: encode.update({
        relation: BLOBS, oldTupleType: "O", oldTuple: blobsRow,
        newTuple: [int8(-2n), RAW2, jsonb("[1.5]"), NUMERIC_12_50, null],
      }),
      oldValues: blobsValues,
      newValues: [-2n, RAW2, [1.5], "12.50", null],
    },
    { encoded: encode.message({ transactional: true, lsn: 0x1_0000_0180n, prefix: "app/bytes", content: RAW }) },
    { encoded: encode.message({ transactional: false, lsn: 0x1_0000_0190n, prefix: "app/text", content: "hello ☃ world" }) },
    {
      encoded: encode.delete({ relation: ITEMS, oldTupleType: "K", oldTuple: keyOnly("9007199254740993") }),
      oldValues: [9007199254740993n, null, null, null, null, null],
    },
    { encoded: encode.delete({ relation: BLOBS, oldTupleType: "O", oldTuple: blobsRow }), oldValues: blobsValues },
    { encoded: encode.truncate({ relationIds: [ITEMS.relationId, BLOBS.relationId], cascade: true }) },
    { encoded: encode.commit({ commitLsn: 0x1_0000_0100n, endLsn: 0x1_0000_0200n, commitTime: 1_700_000_000_000_001n }) },
    { encoded: encode.origin({ originLsn: 0x1_0000_0300n, name: "origin-ç" }) },
    // A streamed block: changes carry the transaction's xid.
    { encoded: encode.streamStart({ xid: 901, firstSegment: true }) },
    { encoded: encode.relation({ ...ITEMS, xid: 901 }) },
    insert(ITEMS, ["1", '"s"', "\\x0102", "NaN", "streamed", "calm"], [1n, "s", new Uint8Array([1, 2]), "NaN", "streamed", "calm"], 901),
    { encoded: encode.message({ xid: 901, transactional: true, lsn: 0x1_0000_0400n, prefix: "in-stream", content: RAW2 }) },
    { encoded: encode.streamStop() },
    { encoded: encode.streamCommit({ xid: 901, commitLsn: 0x1_0000_0500n, endLsn: 0x1_0000_0600n, commitTime: 1_700_000_000_000_002n }) },
  ];
}

const H = { walStart: 0x1_0000_0000n, walEnd: 0x1_0000_0700n, sendTime: 1_700_000_000_000_100n };

/** A walsender payload or backend frame of the stream, with the stream message it carries (none for a keepalive). */
export interface WalItem {
  readonly bytes: Uint8Array;
  readonly expected: Record<string, unknown>;
  readonly message?: StreamMessage;
}

/** The stream as walsender CopyData payloads: an XLogData per message and a keepalive after every 5th. */
export function walPayloads(stream: readonly StreamMessage[]): WalItem[] {
  const out: WalItem[] = [];
  stream.forEach((message, i) => {
    const x = wal.xlogData(message.encoded, { ...H, walStart: H.walStart + BigInt(i) });
    out.push({ bytes: x.bytes, expected: x.expected, message });
    if (i % 5 === 4) out.push(wal.keepalive({ walEnd: H.walEnd + BigInt(i), sendTime: H.sendTime, replyRequested: i % 2 === 0 }));
  });
  return out;
}

/** The payloads as raw backend bytes: CopyBothResponse, CopyData frames with a NoticeResponse among them, CopyDone. */
export function backendBytes(payloads: readonly WalItem[]): { bytes: Uint8Array; items: WalItem[] } {
  const copyData = (p: WalItem): WalItem => ({ ...p, bytes: be.copyData(p.bytes).bytes });
  const items: WalItem[] = [
    be.copyBothResponse(),
    ...payloads.slice(0, 4).map(copyData),
    be.noticeResponse({ S: "NOTICE", C: "00000", M: "notice ☃ in the middle" }),
    ...payloads.slice(4).map(copyData),
    be.copyDone(),
  ];
  return { bytes: backendStream(items.map((f) => f.bytes)), items };
}
