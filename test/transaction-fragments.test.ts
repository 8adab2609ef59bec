/**
 * TransactionAssembler's memory bound (maxTransactionBytes), without a
 * server: a transaction over it comes in fragments in order, `final` on
 * the last, which alone has the end and an endLsn; a streamed one is held
 * (in a temporary file beyond the bound) and comes in fragments after its
 * StreamCommit, through pull(), without its aborted subtransactions; a
 * passthrough block over the bound comes in parts.
 */
import { describe, expect, it } from "vitest";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import { TransactionAssembler, type StreamBlock, type Transaction, type TransactionItem } from "../bindings/pg/index.ts";
import { encode } from "../devkit/encoder/encoder.ts";

const wasm = new WasmDecoder();
const relation = { relationId: 1, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }] };
const rel = encode.relation(relation).bytes;
const PAD = "x".repeat(1000);
const ins = (id: number, xid?: number): Uint8Array => encode.insert({ relation, xid, newTuple: [String(id), PAD] }).bytes;
/** Every item the messages complete, the further fragments pulled too. */
const feed = (a: TransactionAssembler, msgs: Uint8Array[]): TransactionItem[] => {
  const out: TransactionItem[] = [];
  for (const m of msgs) for (let item = a.push(wasm.decode(m)); item; item = a.pull()) out.push(item);
  return out;
};
const ids = (t: { messages: Record<string, unknown>[] }): number[] =>
  t.messages.filter((m) => m.kind === "Insert").map((m) => Number((m.newTuple as { text: string }[])[0]!.text));
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("TransactionAssembler: maxTransactionBytes", () => {
  it("a plain transaction over the bound comes in fragments, in order; only the final one has the end and an endLsn", () => {
    const a = new TransactionAssembler({ maxTransactionBytes: 16 << 10 });
    const items = feed(a, [
      encode.begin({ finalLsn: 0x500n, commitTime: 7n, xid: 20 }).bytes, rel, ...range(1, 100).map((i) => ins(i)),
      encode.commit({ commitLsn: 0x500n, endLsn: 0x560n, commitTime: 7n }).bytes,
      encode.begin({ finalLsn: 0x600n, commitTime: 8n, xid: 21 }).bytes, ins(1000), encode.commit({ commitLsn: 0x600n, endLsn: 0x660n, commitTime: 8n }).bytes,
    ]) as Transaction[];
    const big = items.slice(0, -1);
    expect(big.length).toBeGreaterThan(5);
    expect(big.map((t) => t.fragment)).toEqual(range(0, big.length - 1));
    expect(big.map((t) => t.final)).toEqual([...Array(big.length - 1).fill(false), true]);
    expect(big.flatMap(ids)).toEqual(range(1, 100));
    for (const t of big.slice(0, -1)) {
      expect(t).toMatchObject({ kind: "commit", xid: 20, lsn: 0x500n, endLsn: 0n, time: 7n, end: undefined, streamed: false });
      expect(t.begin).toMatchObject({ kind: "Begin", xid: 20 });
      // Within the bound, give or take the message that reached it.
      expect(t.messages.length).toBeLessThanOrEqual(17);
    }
    expect(big[0]!.messages[0]!.kind).toBe("Relation");
    expect(big.at(-1)).toMatchObject({ endLsn: 0x560n, end: { kind: "Commit", endLsn: 0x560n } });
    // A transaction within the bound: one item, fragment 0, final.
    expect(items.at(-1)).toMatchObject({ xid: 21, fragment: 0, final: true, endLsn: 0x660n });
    expect(ids(items.at(-1)!)).toEqual([1000]);
  });

  for (const bound of [1 << 20, 16 << 10]) {
    it(`a streamed transaction ${bound > 100_000 ? "within" : "over"} the bound: after its StreamCommit, without its aborted subtransaction${bound > 100_000 ? "" : ", in fragments pulled one by one, held in a file meanwhile"}`, () => {
      const a = new TransactionAssembler({ maxTransactionBytes: bound });
      const msgs = [
        encode.streamStart({ xid: 10, firstSegment: true }).bytes, rel, ...range(1, 60).map((i) => ins(i, 10)), ...range(61, 70).map((i) => ins(i, 11)), encode.streamStop().bytes,
        encode.begin({ finalLsn: 0x50n, commitTime: 1n, xid: 20 }).bytes, ins(500), encode.commit({ commitLsn: 0x50n, endLsn: 0x60n, commitTime: 1n }).bytes,
        encode.streamStart({ xid: 10, firstSegment: false }).bytes, ...range(71, 100).map((i) => ins(i, 12)), encode.streamStop().bytes,
        encode.streamAbort({ xid: 10, subXid: 11 }).bytes,
      ];
      const before = feed(a, msgs);
      expect(before.map((t) => ids(t as Transaction))).toEqual([[500]]); // nothing of the streamed one yet: it may still roll back
      expect(a.pendingStreams).toBe(1);
      expect(a.heldStats.spills).toBe(bound > 100_000 ? 0 : 1);
      const first = a.push(wasm.decode(encode.streamCommit({ xid: 10, commitLsn: 0x90n, endLsn: 0xa0n, commitTime: 2n }).bytes)) as Transaction;
      const rest: Transaction[] = [];
      if (bound < 100_000) expect(() => a.push(wasm.decode(ins(1)))).toThrow(/pull\(\) the rest/);
      for (let t = a.pull(); t; t = a.pull()) rest.push(t);
      const all = [first, ...rest];
      expect(all.flatMap(ids)).toEqual([...range(1, 60), ...range(71, 100)]);
      expect(all.map((t) => t.fragment)).toEqual(range(0, all.length - 1));
      expect(all.map((t) => t.final)).toEqual([...Array(all.length - 1).fill(false), true]);
      expect(all.length > 1).toBe(bound < 100_000);
      expect(all.at(-1)).toMatchObject({ kind: "commit", xid: 10, streamed: true, lsn: 0x90n, endLsn: 0xa0n, end: { kind: "StreamCommit" } });
      for (const t of all.slice(0, -1)) expect(t).toMatchObject({ endLsn: 0n, end: undefined, lsn: 0x90n });
      expect(a.heldStats.bytes).toBe(0);
      expect(a.pull()).toBeUndefined();
    });
  }

  it("reset() mid-delivery drops the rest (a reconnect: the server sends it again whole)", () => {
    const a = new TransactionAssembler({ maxTransactionBytes: 8 << 10 });
    feed(a, [encode.streamStart({ xid: 10, firstSegment: true }).bytes, rel, ...range(1, 50).map((i) => ins(i, 10)), encode.streamStop().bytes]);
    const first = a.push(wasm.decode(encode.streamCommit({ xid: 10, commitLsn: 0x90n, endLsn: 0xa0n, commitTime: 2n }).bytes)) as Transaction;
    expect(first.final).toBe(false);
    a.reset();
    expect(a.pull()).toBeUndefined();
    const again = feed(a, [
      encode.streamStart({ xid: 10, firstSegment: true }).bytes, rel, ...range(1, 50).map((i) => ins(i, 10)), encode.streamStop().bytes,
      encode.streamCommit({ xid: 10, commitLsn: 0x90n, endLsn: 0xa0n, commitTime: 2n }).bytes,
    ]) as Transaction[];
    expect(again.flatMap(ids)).toEqual(range(1, 50));
    expect(again[0]!.fragment).toBe(0);
  });

  it("passthrough: a block over the bound comes in parts, final on the last; firstSegment on the first part only", () => {
    const a = new TransactionAssembler({ streams: "passthrough", maxTransactionBytes: 16 << 10 });
    const items = feed(a, [
      encode.streamStart({ xid: 10, firstSegment: true }).bytes, rel, ...range(1, 50).map((i) => ins(i, 10)), encode.streamStop().bytes,
      encode.streamStart({ xid: 10, firstSegment: false }).bytes, ins(51, 10), encode.streamStop().bytes,
    ]) as StreamBlock[];
    expect(items.flatMap(ids)).toEqual(range(1, 51));
    const parts = items.slice(0, -1);
    expect(parts.length).toBeGreaterThan(2);
    expect(parts.map((b) => b.final)).toEqual([...Array(parts.length - 1).fill(false), true]);
    expect(parts.map((b) => b.firstSegment)).toEqual([true, ...Array(parts.length - 1).fill(false)]);
    expect(items.at(-1)).toMatchObject({ final: true, firstSegment: false });
  });

  it("rejects a bound that is not a positive integer", () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new TransactionAssembler({ maxTransactionBytes: bad })).toThrow(RangeError);
  });
});
