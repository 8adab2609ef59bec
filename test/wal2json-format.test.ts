/**
 * The `wal2json` format on streams built by the encoder, for what the
 * comparison with the real plugin (wal2json.test.ts) cannot show: the
 * records' kinds and relations for sinks, what the format refuses (binary
 * values, prepared transactions, options pgoutput cannot honour) and its
 * documented fallbacks (no XLogData positions, snapshot rows, commit times).
 */
import { describe, expect, it } from "vitest";
import { encode } from "../devkit/encoder/encoder.ts";
import { wal2json } from "../bindings/formats/wal2json.ts";
import { formatNamed, formatOptions } from "../bindings/formats/index.ts";
import { WAL2JSON_REFUSED } from "../bindings/formats/wal2json-options.ts";
import { commitTimeText } from "../bindings/formats/wal2json-values.ts";
import { Records, RecordTransaction } from "../bindings/pipeline/records.ts";
import type { FormatOptionValues } from "../bindings/pipeline/format.ts";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { WalMessage } from "../bindings/walsender.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import { backends } from "./support/backends.ts";

const rel = {
  relationId: 16400, namespace: "app", relationName: "t",
  columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }, { name: "n", typeId: 1700, typeModifier: ((10 << 16) | 2) + 4 }],
};
const TIME = 1_700_000_000_123_000n;

/** Messages as XLogData frames at increasing positions (walStart), as a walsender sends them. */
function frames(messages: Uint8Array[], from = 0x1000n): Uint8Array[] {
  return messages.map((m, i) => {
    const out = new Uint8Array(25 + m.length);
    out[0] = 0x77;
    new DataView(out.buffer).setBigUint64(1, from + BigInt(i) * 0x10n);
    out.set(m, 25);
    return out;
  });
}

const transaction = [
  encode.relation(rel).bytes,
  encode.begin({ finalLsn: 0x2000n, commitTime: TIME, xid: 900 }).bytes,
  encode.insert({ relation: rel, newTuple: ["1", "a \"q\"", "1.50"] }).bytes,
  encode.update({ relation: rel, newTuple: ["1", "b", "NaN"] }).bytes,
  encode.delete({ relation: rel, oldTupleType: "K", oldTuple: ["1", null, null] }).bytes,
  encode.truncate({ relationIds: [rel.relationId] }).bytes,
  encode.message({ transactional: true, lsn: 0x1055n, prefix: "p", content: "hi" }).bytes,
  encode.commit({ commitLsn: 0x2000n, endLsn: 0x2030n, commitTime: TIME }).bytes,
];

function run(d: PgoutputDecoder, messages: Iterable<PgoutputMessage | WalMessage>, options: FormatOptionValues): { records: Records; texts: string[] } {
  const format = wal2json.create({ decoder: d }, formatOptions(formatNamed("wal2json"), options));
  const records = new Records();
  for (const m of messages as Iterable<PgoutputMessage>) {
    if (m.kind === "Begin") records.txn = new RecordTransaction(m.xid, m.finalLsn, m.commitTime);
    format.push(m, records);
  }
  const text = new TextDecoder();
  return { records, texts: Array.from({ length: records.length }, (_, i) => text.decode(records.bytesOf(i))) };
}

for (const backend of backends) {
  describe(`format wal2json (${backend.name})`, () => {
    it("version 2: a record per change with its kind and relation, B held for its nextlsn, one newline each", async () => {
      const d = await backend.create({ values: wal2json.values() });
      const { records, texts } = run(d, d.decodeCopyData(frames(transaction)), { "format-version": "2", "include-lsn": true, "include-xids": true });
      expect(records.kinds).toEqual(["begin", "insert", "update", "delete", "truncate", "message", "commit"]);
      expect(records.relations.map((r) => r?.name)).toEqual([undefined, "t", "t", "t", "t", undefined, undefined]);
      expect(texts.every((t) => t.endsWith("}\n") && t.indexOf("\n") === t.length - 1)).toBe(true);
      expect(texts[0]).toBe('{"action":"B","xid":900,"lsn":"0/2000","nextlsn":"0/2030"}\n');
      expect(texts[1]).toBe('{"action":"I","xid":900,"lsn":"0/1020","schema":"app","table":"t","columns":[{"name":"id","type":"integer","value":1},{"name":"v","type":"text","value":"a \\"q\\""},{"name":"n","type":"numeric(10,2)","value":1.50}]}\n');
      expect(texts[2]).toContain('{"name":"n","type":"numeric(10,2)","value":null}],"identity":[{"name":"id","type":"integer","value":1}]}');
      expect(texts[6]).toBe('{"action":"C","xid":900,"lsn":"0/2000","nextlsn":"0/2030"}\n');
    });

    it("version 1: the transaction's document is one record at its commit; a capture without positions still has nextlsn", async () => {
      const d = await backend.create({ values: wal2json.values() });
      const { records, texts } = run(d, d.decodeBatch(transaction), { "include-lsn": true, "include-timestamp": true });
      expect(records.kinds).toEqual(["commit"]);
      expect(records.positions).toEqual([0]);
      expect(JSON.parse(texts[0]!)).toEqual({
        nextlsn: "0/2030", timestamp: "2023-11-14 22:13:20.123+00",
        change: [
          { kind: "insert", schema: "app", table: "t", columnnames: ["id", "v", "n"], columntypes: ["integer", "text", "numeric(10,2)"], columnvalues: [1, 'a "q"', 1.5] },
          { kind: "update", schema: "app", table: "t", columnnames: ["id", "v", "n"], columntypes: ["integer", "text", "numeric(10,2)"], columnvalues: [1, "b", null], oldkeys: { keynames: ["id"], keytypes: ["integer"], keyvalues: [1] } },
          { kind: "delete", schema: "app", table: "t", oldkeys: { keynames: ["id"], keytypes: ["integer"], keyvalues: [1] } },
          { kind: "message", transactional: true, prefix: "p", content: "hi" },
        ],
      });
    });

    it("a change's lsn is null where the stream has no XLogData positions (a capture file)", async () => {
      const d = await backend.create({ values: wal2json.values() });
      const { texts } = run(d, d.decodeBatch(transaction), { "format-version": "2", "include-lsn": true, "include-transaction": false });
      expect(texts[0]).toMatch(/^\{"action":"I","lsn":null,"schema":"app"/);
      expect(texts[4]).toMatch(/^\{"action":"M","lsn":"0\/1055",/);
    });

    it("numbers as strings (numeric-data-types-as-string)", async () => {
      const d = await backend.create({ values: wal2json.values() });
      const { texts } = run(d, d.decodeBatch(transaction), { "format-version": "2", "numeric-data-types-as-string": true });
      expect(texts[1]).toContain('"value":"1"},');
      expect(texts[1]).toContain('"value":"1.50"}');
      expect(texts[2]).toContain('"value":"NaN"}');
    });

    it("message content that is not UTF-8 without NUL: base64, with encoding", async () => {
      const d = await backend.create({ values: wal2json.values() });
      const msg = encode.message({ transactional: false, lsn: 0x10n, prefix: "b", content: Uint8Array.from([0x61, 0x00, 0x62]) }).bytes;
      for (const version of ["1", "2"]) {
        const { records, texts } = run(d, d.decodeBatch([msg]), { "format-version": version });
        expect(records.kinds).toEqual(["message"]);
        const doc = JSON.parse(texts[0]!);
        expect(version === "1" ? doc.change[0] : doc).toMatchObject({ transactional: false, prefix: "b", content: "YQBi", encoding: "base64" });
      }
    });

    it("refuses binary values, prepared transactions and streamed blocks with what to do instead", async () => {
      const binary = [encode.relation(rel).bytes, encode.begin({ finalLsn: 1n, commitTime: TIME, xid: 1 }).bytes, encode.insert({ relation: rel, newTuple: [Uint8Array.of(0, 0, 0, 1), "x", null] }).bytes];
      for (const version of ["1", "2"]) {
        // A decoder per stream: a Stream Start leaves one inside a block.
        const d = await backend.create({ values: wal2json.values() });
        expect(() => run(d, d.decodeBatch(binary), { "format-version": version })).toThrow(/stream without binary/);
        const prepared = [encode.beginPrepare({ prepareLsn: 1n, endLsn: 2n, prepareTime: TIME, xid: 5, gid: "g" }).bytes];
        expect(() => run(d, d.decodeBatch(prepared), { "format-version": version })).toThrow(/stream without two-phase/);
        expect(() => run(d, d.decodeBatch([encode.streamStart({ xid: 5, firstSegment: true }).bytes]), { "format-version": version })).toThrow(/replay streamed transactions/);
      }
    });

    it("an array of a user type is elem[] with the catalog's knowledge, even when a truncate of its table came first", async () => {
      const MOOD = 70001;
      const MOODS = 70002;
      const d = await backend.create({ values: wal2json.values({ [MOODS]: { elementType: MOOD }, [MOOD]: { baseType: 25 } }) });
      const table = { relationId: 16401, namespace: "app", relationName: "m", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "a", typeId: MOODS }] };
      const stream = [
        encode.type({ typeId: MOODS, namespace: "app", typeName: "_mood" }).bytes,
        encode.relation(table).bytes,
        encode.begin({ finalLsn: 0x3000n, commitTime: TIME, xid: 901 }).bytes,
        encode.truncate({ relationIds: [table.relationId] }).bytes,
        encode.insert({ relation: table, newTuple: ["1", "{ok}"] }).bytes,
        encode.commit({ commitLsn: 0x3000n, endLsn: 0x3030n, commitTime: TIME }).bytes,
      ];
      const { texts } = run(d, d.decodeCopyData(frames(stream)), { "format-version": "2", "include-transaction": false });
      expect(texts[1]).toContain('{"name":"a","type":"app.mood[]","value":"{ok}"}');
    });

    it("snapshot rows: inserts outside any transaction", async () => {
      const d = await backend.create({ values: wal2json.values() });
      const insert = [...d.decodeBatch([encode.relation(rel).bytes, encode.insert({ relation: rel, newTuple: ["7", "s", "2.00"] }).bytes])][1]!;
      if (insert.kind !== "Insert") throw new Error("not an insert");
      const row = { kind: "SnapshotRow" as const, relation: insert.relation!, tuple: insert.newTuple };
      for (const [version, want] of [
        ["2", '{"action":"I","xid":null,"timestamp":null,"lsn":null,"schema":"app","table":"t","columns":[{"name":"id","type":"integer","value":7},{"name":"v","type":"text","value":"s"},{"name":"n","type":"numeric(10,2)","value":2.00}]}\n'],
        ["1", '{"change":[{"kind":"insert","schema":"app","table":"t","columnnames":["id","v","n"],"columntypes":["integer","text","numeric(10,2)"],"columnvalues":[7,"s",2.00]}]}\n'],
      ] as const) {
        const format = wal2json.create({ decoder: d }, { "format-version": version, "include-xids": true, "include-timestamp": true, "include-lsn": true });
        const records = new Records();
        format.push(row, records);
        expect(records.kinds).toEqual(["snapshot"]);
        expect(new TextDecoder().decode(records.bytesOf(0))).toBe(want);
      }
    });
  });
}

describe("format wal2json options", () => {
  it("refuses each option pgoutput cannot honour, with its reason, in formatOptions() and create()", () => {
    const definition = formatNamed("wal2json");
    for (const [name, reason] of Object.entries(WAL2JSON_REFUSED)) {
      const message = `format wal2json does not take ${name}: ${reason} (docs/cli-output.md)`;
      expect(() => formatOptions(definition, { [name]: true })).toThrow(message);
      expect(() => wal2json.create({ decoder: { types: new Map() } }, { [name]: true })).toThrow(message);
    }
    expect(() => formatOptions(definition, { "include-nonsense": true })).toThrow(/has no option "include-nonsense" \(it takes format-version, /);
    expect(() => formatOptions(definition, { "include-xids": "yes" })).toThrow("option include-xids takes a boolean");
  });
});

describe("commit times as wal2json prints them (UTC)", () => {
  it("drops the fraction's trailing zeros, and a zero fraction", () => {
    const at = (iso: string, us = 0) => BigInt(Date.parse(iso)) * 1000n + BigInt(us);
    expect(commitTimeText(at("2024-02-29T12:34:56Z", 789012))).toBe("2024-02-29 12:34:56.789012+00");
    expect(commitTimeText(at("2024-02-29T12:34:56Z", 500000))).toBe("2024-02-29 12:34:56.5+00");
    expect(commitTimeText(at("2024-02-29T12:34:56Z"))).toBe("2024-02-29 12:34:56+00");
    expect(commitTimeText(at("1999-12-31T23:59:59Z", 1))).toBe("1999-12-31 23:59:59.000001+00");
    expect(commitTimeText(at("1969-12-31T23:59:59Z", 999999))).toBe("1969-12-31 23:59:59.999999+00");
  });
});
