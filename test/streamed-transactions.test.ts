// StreamedTransactions: the streamed-transaction bookkeeping that
// TransactionAssembler and the CLI's ChangeFormatter share.
import { describe, expect, it } from "vitest";
import { StreamedTransactions } from "../bindings/streamed-transactions.ts";

describe("StreamedTransactions", () => {
  it("holds items per top-level xid across interleaved blocks", () => {
    const s = new StreamedTransactions<string>();
    s.start(10, true);
    s.add("a", 10);
    s.stop();
    s.start(20, true);
    s.add("x", 20);
    s.stop();
    s.start(10, false);
    expect(s.blockXid).toBe(10);
    s.add("b", 11);
    s.stop();
    expect(s.blockXid).toBeUndefined();
    expect(s.size).toBe(2);
    expect(s.take(10)?.items).toEqual(["a", "b"]);
    expect(s.take(20)?.items).toEqual(["x"]);
    expect(s.size).toBe(0);
  });

  it("a subtransaction's abort drops its items only; the transaction's abort drops it", () => {
    const s = new StreamedTransactions<string>();
    s.start(10, true);
    s.add("rel", undefined);
    s.add("a", 10);
    s.add("b", 11);
    s.add("c", 12);
    s.stop();
    s.abort(10, 11);
    expect(s.take(10)?.items).toEqual(["rel", "a", "c"]);
    s.start(30, true);
    s.add("z", 30);
    s.stop();
    s.abort(30, 30);
    expect(s.take(30)).toBeUndefined();
  });

  it("a first segment starts its transaction over; nothing is added outside a block", () => {
    const s = new StreamedTransactions<string>();
    s.start(10, true);
    s.add("stale", 10);
    s.start(10, true);
    s.add("fresh", 10);
    s.stop();
    s.add("outside", 10);
    const held = s.take(10)!;
    expect(held.items).toEqual(["fresh"]);
    expect(held.firstSegment).toBe(true);
  });
});
