/**
 * AckTracker: what a standby status update may report. Hand-written cases
 * for each message kind and mode, then a seeded random walk over well-formed
 * streams (plain, prepared and interleaved streamed transactions, keepalives)
 * that checks the safety invariants after every step.
 */
import { describe, expect, it } from "vitest";
import { AckTracker, type AckMessage } from "../bindings/ack.ts";
import { Random } from "../devkit/fuzz/random.ts";

const begin = (): AckMessage => ({ kind: "Begin" });
const insert = (xid?: number): AckMessage => ({ kind: "Insert", xid });
const commit = (endLsn: bigint): AckMessage => ({ kind: "Commit", endLsn });
const streamStart = (xid: number): AckMessage => ({ kind: "StreamStart", xid });
const streamStop = (): AckMessage => ({ kind: "StreamStop" });
const streamCommit = (xid: number, endLsn: bigint): AckMessage => ({ kind: "StreamCommit", xid, endLsn });
const streamAbort = (xid: number, subXid: number, abortLsn: bigint | null = null, walStart?: bigint): AckMessage => ({
  kind: "StreamAbort", xid, subXid, abortLsn, walStart,
});

/** Hands the consumer `messages` in order (each observed as handed over), with no next() between them. */
function observeAll(t: AckTracker, ...messages: AckMessage[]): void {
  for (const m of messages) t.observe(m, true);
}

describe("AckTracker", () => {
  it("starts at the given position, written never below flushed", () => {
    const t = new AckTracker({ start: 1000n });
    expect(t.status()).toEqual({ written: 1000n, flushed: 1000n, applied: 1000n });
    t.received(900n);
    expect(t.written).toBe(1000n);
    t.received(1500n);
    expect(t.status()).toEqual({ written: 1500n, flushed: 1000n, applied: 1000n });
    expect(new AckTracker().status()).toEqual({ written: 0n, flushed: 0n, applied: 0n });
  });

  it("rejects a bad mode or a negative start", () => {
    expect(() => new AckTracker({ mode: "sometimes" as never })).toThrow(RangeError);
    expect(() => new AckTracker({ start: -1n })).toThrow(RangeError);
  });

  describe("auto", () => {
    it("confirms a commit only when the consumer comes back for the next item", () => {
      const t = new AckTracker();
      t.received(0x200n);
      t.observe(begin(), true);
      t.next();
      t.observe(insert(), true);
      t.next();
      t.observe(commit(0x200n), true);
      expect(t.confirmed).toBe(0n);
      expect(t.idle).toBe(false);
      t.next();
      expect(t.confirmed).toBe(0x200n);
      expect(t.idle).toBe(true);
      t.next(); // nothing new: no change
      expect(t.confirmed).toBe(0x200n);
    });

    it("does not confirm keepalives inside a transaction or before the consumer came back", () => {
      const t = new AckTracker();
      t.observe(begin(), true);
      expect(t.keepalive(0x100n)).toBe(false);
      expect(t.confirmed).toBe(0n);
      expect(t.written).toBe(0x100n);
      t.observe(commit(0x180n), true);
      expect(t.keepalive(0x190n)).toBe(false); // the commit is not finished yet
      t.next();
      expect(t.confirmed).toBe(0x180n);
      expect(t.keepalive(0x300n)).toBe(true);
      expect(t.confirmed).toBe(0x300n);
      expect(t.keepalive(0x250n)).toBe(false); // never backwards
      expect(t.confirmed).toBe(0x300n);
    });

    it("confirms keepalives when idle from the start", () => {
      const t = new AckTracker({ start: 0x50n });
      expect(t.keepalive(0x40n)).toBe(false);
      expect(t.confirmed).toBe(0x50n);
      expect(t.keepalive(0x60n)).toBe(true);
      expect(t.status()).toEqual({ written: 0x60n, flushed: 0x60n, applied: 0x60n });
    });

    it("never moves backwards for an end before the start position", () => {
      const t = new AckTracker({ start: 0x1000n });
      observeAll(t, begin(), commit(0x800n));
      t.next();
      expect(t.confirmed).toBe(0x1000n);
      expect(t.idle).toBe(true);
    });

    it("ack() works in auto mode too", () => {
      const t = new AckTracker();
      t.received(0x500n);
      expect(t.ack(0x400n)).toBe(0x400n);
    });
  });

  describe("manual", () => {
    it("confirms only what ack() confirmed; next() does nothing", () => {
      const t = new AckTracker({ mode: "manual" });
      observeAll(t, begin(), commit(0x200n));
      t.next();
      expect(t.confirmed).toBe(0n);
      expect(t.keepalive(0x300n)).toBe(false); // the commit is not acknowledged
      expect(t.ack(0x200n)).toBe(0x200n);
      expect(t.idle).toBe(true);
      expect(t.keepalive(0x300n)).toBe(true);
      expect(t.confirmed).toBe(0x300n);
    });

    it("a partial ack leaves later transactions pending", () => {
      const t = new AckTracker({ mode: "manual" });
      observeAll(t, begin(), commit(0x200n), begin(), commit(0x300n));
      t.ack(0x200n);
      expect(t.confirmed).toBe(0x200n);
      expect(t.idle).toBe(false);
      expect(t.keepalive(0x400n)).toBe(false);
      t.ack(0x300n);
      expect(t.keepalive(0x400n)).toBe(true);
    });

    it("clamps ack() to what was received and never moves backwards", () => {
      const t = new AckTracker({ mode: "manual", start: 0x100n });
      expect(t.ack(0x900n)).toBe(0x100n); // nothing beyond the start was received
      t.received(0x400n);
      expect(t.ack(0x900n)).toBe(0x400n);
      expect(t.ack(0x200n)).toBe(0x400n);
      expect(t.status()).toEqual({ written: 0x400n, flushed: 0x400n, applied: 0x400n });
    });
  });

  describe("streamed transactions", () => {
    it("stays open across blocks, confirms at StreamCommit; interleaved plain commits are confirmed", () => {
      const t = new AckTracker();
      observeAll(t, streamStart(7), insert(7), streamStop());
      t.next();
      expect(t.inTransaction).toBe(true);
      expect(t.keepalive(0x100n)).toBe(false);
      // A plain transaction commits while 7 is in progress: its end is safe to confirm.
      observeAll(t, begin(), commit(0x180n));
      t.next();
      expect(t.confirmed).toBe(0x180n);
      expect(t.keepalive(0x190n)).toBe(false); // 7 still open
      observeAll(t, streamStart(7), insert(7), streamStop(), streamCommit(7, 0x300n));
      t.next();
      expect(t.confirmed).toBe(0x300n);
      expect(t.idle).toBe(true);
    });

    it("tracks several open streamed transactions", () => {
      const t = new AckTracker();
      observeAll(t, streamStart(1), streamStop(), streamStart(2), streamStop(), streamCommit(1, 0x100n));
      t.next();
      expect(t.confirmed).toBe(0x100n);
      expect(t.inTransaction).toBe(true);
      t.observe({ kind: "StreamPrepare", xid: 2, endLsn: 0x200n }, true);
      t.next();
      expect(t.confirmed).toBe(0x200n);
      expect(t.idle).toBe(true);
    });

    it("a subtransaction's abort leaves the transaction open; a top-level abort closes it at abortLsn or walStart", () => {
      const t = new AckTracker();
      observeAll(t, streamStart(5), streamStop(), streamAbort(5, 6, 0x150n));
      t.next();
      expect(t.inTransaction).toBe(true);
      expect(t.confirmed).toBe(0n);
      t.observe(streamAbort(5, 5, 0x200n), true);
      t.next();
      expect(t.confirmed).toBe(0x200n);
      observeAll(t, streamStart(8), streamStop(), streamAbort(8, 8, null, 0x300n)); // protocol < 4: no abortLsn
      t.next();
      expect(t.confirmed).toBe(0x300n);
    });

    it("an end consumed internally (not handed over) closes without waiting for a confirmation", () => {
      const t = new AckTracker({ mode: "manual" });
      t.observe(streamStart(5), false);
      t.observe(streamStop(), false);
      t.observe(streamAbort(5, 5, 0x200n), false);
      expect(t.idle).toBe(true);
      expect(t.confirmed).toBe(0n);
      expect(t.keepalive(0x250n)).toBe(true);
    });
  });

  describe("two-phase", () => {
    it("confirms Prepare, CommitPrepared and RollbackPrepared at their ends", () => {
      const t = new AckTracker();
      t.observe({ kind: "BeginPrepare" }, true);
      expect(t.inTransaction).toBe(true);
      observeAll(t, insert(), { kind: "Prepare", endLsn: 0x100n });
      t.next();
      expect(t.confirmed).toBe(0x100n);
      expect(t.idle).toBe(true);
      t.observe({ kind: "CommitPrepared", endLsn: 0x200n }, true);
      expect(t.idle).toBe(false);
      t.next();
      expect(t.confirmed).toBe(0x200n);
      t.observe({ kind: "RollbackPrepared", rollbackEndLsn: 0x300n }, true);
      t.next();
      expect(t.confirmed).toBe(0x300n);
    });
  });

  it("restart (a new connection): the open transaction is forgotten, confirmed and handed-over positions stay", () => {
    const t = new AckTracker({ mode: "manual" });
    observeAll(t, begin(), commit(0x200n));
    t.ack(0x200n);
    t.observe(begin(), true); // cut off by the failure
    t.observe(streamStart(7), true); // and a streamed one in progress
    expect(t.inTransaction).toBe(true);
    expect(t.keepalive(0x300n)).toBe(false);
    t.restart();
    expect(t.inTransaction).toBe(false);
    expect(t.confirmed).toBe(0x200n);
    expect(t.handedOver).toBe(0x200n);
    expect(t.idle).toBe(true);
    expect(t.keepalive(0x300n)).toBe(true); // idle again: nothing open holds it back
    // A transaction handed over and not acknowledged still holds keepalives back after a restart.
    const m = new AckTracker({ mode: "manual" });
    observeAll(m, begin(), commit(0x400n));
    m.restart();
    expect(m.idle).toBe(false);
    expect(m.keepalive(0x500n)).toBe(false);
  });

  it("ignores messages that neither open nor end a transaction", () => {
    const t = new AckTracker();
    for (const kind of ["Relation", "Type", "Origin", "Message", "Truncate", "Update", "Delete"]) t.observe({ kind }, true);
    t.next();
    expect(t.idle).toBe(true);
    expect(t.confirmed).toBe(0n);
  });

  describe("random streams", () => {
    for (const mode of ["auto", "manual"] as const) {
      it(`${mode}: monotonic, bounded by what was received, never past an unfinished transaction`, () => {
        for (let seed = 1; seed <= 200; seed++) walk(seed, mode);
      });
    }
  });
});

/**
 * One random stream, handed to the tracker as the stream iterator does:
 * next() before each item, keepalives in stream order. The consumer in
 * manual mode acknowledges finished transactions late and out of step.
 */
function walk(seed: number, mode: "auto" | "manual"): void {
  const r = new Random(seed);
  const start = BigInt(r.int(0, 1000));
  const t = new AckTracker({ mode, start });
  let pos = start + BigInt(r.int(0, 50));
  const advance = (): bigint => (pos += BigInt(r.int(1, 200)));
  let xid = 1000;
  const streams: number[] = [];
  const prepared: number[] = [];
  /** Ends handed over, in order; `finished` counts how many the consumer is done with. */
  const handed: bigint[] = [];
  let finished = 0;
  let before = t.confirmed;
  let lastFinishedEnd = start;

  const check = (where: string): void => {
    const c = t.confirmed;
    const ctx = `seed ${seed} ${mode} ${where}`;
    assert(c >= before, `${ctx}: moved backwards`);
    assert(c <= t.written, `${ctx}: confirmed past written`);
    for (let i = finished; i < handed.length; i++) {
      if (handed[i]! > lastFinishedEnd) assert(c < handed[i]!, `${ctx}: confirmed ${c} passes unfinished end ${handed[i]}`);
    }
    before = c;
  };

  const deliver = (m: AckMessage): void => {
    t.next();
    if (mode === "auto") {
      // The consumer came back: everything handed so far is finished.
      finished = handed.length;
      if (handed.length > 0 && handed[handed.length - 1]! > lastFinishedEnd) lastFinishedEnd = handed[handed.length - 1]!;
      if (lastFinishedEnd > start) assert(t.confirmed >= lastFinishedEnd, `seed ${seed}: auto did not confirm ${lastFinishedEnd}`);
    }
    if (m.kind !== "Keepalive") {
      t.received(pos);
      t.observe(m, true);
      const end = m.endLsn ?? m.rollbackEndLsn ?? (m.kind === "StreamAbort" && m.subXid === m.xid ? m.abortLsn ?? undefined : undefined);
      if (end !== undefined) handed.push(end);
    }
    check(m.kind);
  };

  for (let step = 0; step < 300; step++) {
    const roll = r.int(0, 9);
    if (roll <= 2) {
      deliver(begin());
      for (let k = r.int(0, 3); k > 0; k--) deliver(insert());
      deliver(commit(advance()));
    } else if (roll === 3) {
      const x = streams.length > 0 && r.chance(0.6) ? r.pick(streams) : ++xid;
      if (!streams.includes(x)) streams.push(x);
      deliver(streamStart(x));
      for (let k = r.int(1, 3); k > 0; k--) deliver(insert(x));
      deliver(streamStop());
      advance();
    } else if (roll === 4 && streams.length > 0) {
      const x = streams.splice(r.int(0, streams.length - 1), 1)[0]!;
      const how = r.int(0, 3);
      if (how === 0) deliver(streamCommit(x, advance()));
      else if (how === 1) deliver({ kind: "StreamPrepare", xid: x, endLsn: advance() });
      else if (how === 2) deliver(streamAbort(x, x, advance()));
      else {
        deliver(streamAbort(x, x + 100000)); // a subtransaction: stays open
        streams.push(x);
      }
    } else if (roll === 5) {
      deliver({ kind: "BeginPrepare" });
      deliver(insert());
      deliver({ kind: "Prepare", endLsn: advance() });
      prepared.push(++xid);
    } else if (roll === 6 && prepared.length > 0) {
      prepared.pop();
      deliver(r.chance(0.5) ? { kind: "CommitPrepared", endLsn: advance() } : { kind: "RollbackPrepared", rollbackEndLsn: advance() });
    } else if (roll === 7) {
      const walEnd = advance();
      t.next();
      if (mode === "auto") {
        finished = handed.length;
        if (handed.length > 0 && handed[handed.length - 1]! > lastFinishedEnd) lastFinishedEnd = handed[handed.length - 1]!;
      }
      const wasIdle = t.idle;
      t.keepalive(walEnd);
      if (wasIdle) assert(t.confirmed >= walEnd, `seed ${seed}: idle keepalive not confirmed`);
      check("keepalive");
    } else if (mode === "manual" && finished < handed.length) {
      // Acknowledge some finished transactions (an end, in order).
      finished = r.int(finished + 1, handed.length);
      const end = handed[finished - 1]!;
      if (end > lastFinishedEnd) lastFinishedEnd = end;
      t.ack(end);
      assert(t.confirmed >= (end < t.written ? end : t.written), `seed ${seed}: ack(${end}) not applied`);
      check("ack");
    }
  }
}

/** A cheap check for the hot loop (expect() per step would dominate the run time). */
function assert(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}
