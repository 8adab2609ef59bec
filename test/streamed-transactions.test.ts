// StreamedTransactions and HeldLog: the streamed-transaction bookkeeping that
// TransactionAssembler and the pipeline's StreamResequencer share, in memory
// within the budget and in a temporary file beyond it.
import { describe, expect, it } from "vitest";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { HeldBudget, HeldLog } from "../bindings/held-log.ts";
import { StreamedTransactions } from "../bindings/streamed-transactions.ts";

const NONE = new Uint8Array(0);
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (log: HeldLog, chunkBytes = 1 << 20): string[] => {
  const out: string[] = [];
  for (const chunk of log.chunks(chunkBytes)) for (const b of chunk) out.push(new TextDecoder().decode(b));
  return out;
};

for (const where of ["memory", "a file"] as const) {
  describe(`StreamedTransactions, held in ${where}`, () => {
    const budget = () => new HeldBudget(where === "memory" ? 1 << 20 : 0);

    it("holds messages per top-level xid across interleaved blocks", () => {
      const s = new StreamedTransactions(budget());
      s.start(10, true);
      s.add(NONE, bytes("a"), 10);
      s.stop();
      s.start(20, true);
      s.add(NONE, bytes("x"), 20);
      s.stop();
      s.start(10, false);
      expect(s.blockXid).toBe(10);
      s.add(NONE, bytes("b"), 11);
      s.stop();
      expect(s.blockXid).toBeUndefined();
      expect(s.size).toBe(2);
      const t10 = s.take(10)!;
      expect(t10.log.spilled).toBe(where === "a file");
      expect(text(t10.log)).toEqual(["a", "b"]);
      expect(text(s.take(20)!.log)).toEqual(["x"]);
      expect(s.size).toBe(0);
    });

    it("a subtransaction's abort drops its messages only; the transaction's abort drops it", () => {
      const s = new StreamedTransactions(budget());
      s.start(10, true);
      s.add(NONE, bytes("rel"), 0);
      s.add(NONE, bytes("a"), 10);
      s.add(NONE, bytes("b"), 11);
      s.add(NONE, bytes("c"), 12);
      s.stop();
      s.abort(10, 11);
      expect(text(s.take(10)!.log)).toEqual(["rel", "a", "c"]);
      s.start(30, true);
      s.add(NONE, bytes("z"), 30);
      s.stop();
      s.abort(30, 30);
      expect(s.take(30)).toBeUndefined();
    });

    it("a first segment starts its transaction over; nothing is added outside a block", () => {
      const s = new StreamedTransactions(budget());
      s.start(10, true);
      s.add(NONE, bytes("stale"), 10);
      s.start(10, true);
      s.add(NONE, bytes("fresh"), 10);
      s.stop();
      s.add(NONE, bytes("outside"), 10);
      const held = s.take(10)!;
      expect(text(held.log)).toEqual(["fresh"]);
      expect(held.firstSegment).toBe(true);
    });
  });
}

describe("HeldLog", () => {
  it("goes to a file once the budget is passed, reads every entry back in order in chunks, whatever their sizes", () => {
    const budget = new HeldBudget(64 << 10);
    const log = new HeldLog(budget);
    const sizes: number[] = [];
    // Small entries, then ones larger than the write and read buffers: every buffer boundary is crossed.
    for (let i = 0; i < 3000; i++) sizes.push(1 + ((i * 7919) % 700));
    sizes.push(3 << 20, 5 << 20, 17, 9 << 20, 1);
    for (let i = 0; i < sizes.length; i++) log.add(new Uint8Array([i & 0xff]), new Uint8Array(sizes[i]! - 1).fill(i & 0xff), i % 5 === 4 ? 99 : 0);
    expect(log.spilled).toBe(true);
    expect(budget.used).toBe(0);
    expect(budget.highWater).toBeLessThanOrEqual(64 << 10);
    log.abort(99);
    const seen: number[] = [];
    for (const chunk of log.chunks(256 << 10)) {
      let total = 0;
      for (const b of chunk) {
        const i = b[0]!; // entries are filled with their index's low byte
        seen.push(b.length);
        expect(b[b.length - 1] ?? i).toBe(i);
        total += b.length;
      }
      expect(chunk.length === 1 || total <= 256 << 10).toBe(true);
    }
    expect(seen).toEqual(sizes.filter((_, i) => i % 5 !== 4));
    log.close();
    log.close();
  });

  it("keeps no file in the temp directory, even while open", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pgoutputwasm-heldtest-"));
    try {
      const log = new HeldLog(new HeldBudget(0, dir));
      log.add(NONE, new Uint8Array(1000), 0);
      expect(log.spilled).toBe(true);
      expect(fs.readdirSync(dir)).toEqual([]);
      expect(text(log).length).toBe(1);
      log.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("within the budget, counts what it holds and gives it back on close; the log that would pass it goes to a file", () => {
    const budget = new HeldBudget(64 << 10);
    const a = new HeldLog(budget);
    const b = new HeldLog(budget);
    a.add(NONE, new Uint8Array(600), 0);
    const held = budget.used;
    expect(held).toBeGreaterThanOrEqual(600);
    for (let i = 0; i < 200; i++) b.add(NONE, new Uint8Array(300).fill(i), 0);
    expect([a.spilled, b.spilled, budget.used]).toEqual([false, true, held]);
    expect(budget.highWater).toBeLessThanOrEqual(64 << 10);
    expect(text(a).map((t) => t.length)).toEqual([600]);
    let n = 0;
    for (const chunk of b.chunks(1 << 20)) for (const e of chunk) expect(e[0]).toBe(n++ & 0xff);
    expect(n).toBe(200);
    a.close();
    b.close();
    expect(budget.used).toBe(0);
    expect(budget.spills).toBe(1);
  });
});
