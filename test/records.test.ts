/**
 * Records' keys and headers (bindings/pipeline/records.ts): a key belongs
 * to the record ended after it was written, and only to that one; records
 * ended before any key have none; a record taken back for `skip` takes its
 * key and headers with it; truncate() and clear() keep keys and headers in
 * step with the records; headers combine the format's function for every
 * record with a record's own; rewrite() replaces bytes and keeps the rest.
 * Its arrays, which clear() and truncate() cut only when next read, hold
 * exactly the records since.
 */
import { describe, expect, it } from "vitest";
import { Records, RecordTransaction } from "../bindings/pipeline/records.ts";

const text = new TextDecoder();
const str = (b: Uint8Array | undefined) => (b === undefined ? undefined : text.decode(b));

function record(r: Records, body: string, key?: string, headers?: Record<string, string>): void {
  if (key !== undefined) r.keys.str(key);
  for (const [k, v] of Object.entries(headers ?? {})) r.header(k, v);
  r.bytes.str(body);
  r.end("insert");
}

describe("Records keys and headers", () => {
  it("a key and headers go with the next record only; records before any key have none", () => {
    const r = new Records();
    r.txn = new RecordTransaction(1, 0x100n, 0n);
    record(r, "a\n");
    record(r, "b\n");
    record(r, "c\n", '{"id":1}', { h: "1" });
    record(r, "d\n");
    record(r, "e\n", '{"id":2}');
    expect([0, 1, 2, 3, 4].map((i) => str(r.keyOf(i)))).toEqual([undefined, undefined, '{"id":1}', undefined, '{"id":2}']);
    expect([0, 1, 2, 3, 4].map((i) => r.headersOf(i))).toEqual([undefined, undefined, { h: "1" }, undefined, undefined]);
    expect([0, 1, 2, 3, 4].map((i) => str(r.bytesOf(i)))).toEqual(["a\n", "b\n", "c\n", "d\n", "e\n"]);
  });

  it("a record taken back for skip takes its key and headers with it", () => {
    const r = new Records();
    r.txn = new RecordTransaction(1, 0x100n, 0n);
    r.skip = { lsn: 0x100n, index: 0 };
    record(r, "skipped\n", '{"id":0}', { h: "0" });
    record(r, "kept\n");
    expect(r.length).toBe(1);
    expect(r.skipped).toBe(1);
    expect([str(r.bytesOf(0)), r.keyOf(0), r.headersOf(0)]).toEqual(["kept\n", undefined, undefined]);
  });

  it("truncate and clear keep keys and headers in step; clear keeps the headers function", () => {
    const r = new Records();
    r.txn = new RecordTransaction(1, 0x100n, 0n);
    r.headers = (records, i) => ({ "ce-id": records.id(i), own: "no" });
    record(r, "a\n", "k0", { own: "yes" });
    record(r, "b\n", "k1", { own: "b" });
    record(r, "c\n", "k2");
    expect(r.headersOf(0)).toEqual({ "ce-id": "0/100:0", own: "yes" });
    expect(r.headersOf(2)).toEqual({ "ce-id": "0/100:2", own: "no" });
    r.truncate(1);
    record(r, "d\n");
    expect([str(r.keyOf(0)), r.keyOf(1), r.headersOf(1)]).toEqual(["k0", undefined, { "ce-id": "0/100:3", own: "no" }]);
    r.header("pending", "dropped by clear");
    r.clear();
    record(r, "e\n", "k4");
    record(r, "f\n");
    expect([str(r.keyOf(0)), r.keyOf(1)]).toEqual(["k4", undefined]);
    expect(r.headersOf(0)).toEqual({ "ce-id": "0/100:4", own: "no" });
  });

  it("rewrite replaces the bytes of records from an index, and keeps their keys and facts", () => {
    const r = new Records();
    r.txn = new RecordTransaction(1, 0x100n, 0n);
    record(r, "a\n", "k0");
    record(r, "bb\n", "k1");
    record(r, "ccc\n");
    r.rewrite(1, (i, body) => r.bytes.str(`[${i}:${text.decode(body).trim()}]\n`));
    expect([0, 1, 2].map((i) => str(r.bytesOf(i)))).toEqual(["a\n", "[1:bb]\n", "[2:ccc]\n"]);
    expect([0, 1, 2].map((i) => [r.id(i), str(r.keyOf(i))])).toEqual([["0/100:0", "k0"], ["0/100:1", "k1"], ["0/100:2", undefined]]);
  });
});

describe("Records' arrays", () => {
  it("after clear() and truncate() each array holds exactly the records since, whenever it is read", () => {
    const r = new Records();
    const a = new RecordTransaction(1, 0x100n, 0n);
    const b = new RecordTransaction(2, 0x200n, 0n);
    r.txn = a;
    for (let i = 0; i < 50; i++) record(r, `a${i}\n`);
    expect(r.kinds.length).toBe(50);
    r.clear();
    // Read before anything is written again: empty, not the last batch's.
    expect([r.length, r.ends.length, r.kinds.length, r.relations.length, r.txns.length, r.positions.length, r.subs.length]).toEqual([0, 0, 0, 0, 0, 0, 0]);
    r.txn = b;
    for (let i = 0; i < 3; i++) r.bytes.str(`b${i}\n`), r.endAt(r.bytes.len, "update");
    r.end("delete");
    expect(r.length).toBe(4);
    expect(r.kinds).toEqual(["update", "update", "update", "delete"]);
    expect(r.txns.every((t) => t === b)).toBe(true);
    expect(r.positions).toEqual([0, 1, 2, 3]);
    expect(r.ends).toEqual([3, 6, 9, 9]);
    // A batch read only at its end (a stdout sink never reads them): the same.
    r.clear();
    r.txn = a;
    for (let i = 0; i < 7; i++) record(r, `c${i}\n`);
    expect(r.kinds.length).toBe(7);
    r.truncate(5);
    record(r, "d\n");
    expect([r.length, r.ends.length, r.kinds.length, r.relations.length, r.txns.length, r.positions.length, r.subs.length]).toEqual([6, 6, 6, 6, 6, 6, 6]);
    expect(r.ends).toEqual([3, 6, 9, 12, 15, 17]);
    expect(str(r.bytesOf(5))).toBe("d\n");
    expect(r.lastPosition).toEqual({ lsn: 0x100n, index: 57 });
  });
});
