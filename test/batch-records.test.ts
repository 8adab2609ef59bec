/**
 * A batch's records in any order of access (views/batch.ts recordAt): read
 * in order, walked ahead from either of its two cursors, or through the
 * index it builds for the rest, each message's record is the one a
 * front-to-back read finds. The pipeline reads a batch with two readers
 * in turns (its run scan ahead, then its lines from where the run began);
 * a wrong walk there would hand a message another's record.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backends } from "./support/backends.ts";
import { encode, frame } from "../devkit/encoder/encoder.ts";
import { TapeBatch } from "../bindings/views/batch.ts";
import type { PgoutputDecoder } from "../bindings/decoder.ts";

const REL = { relationId: 16384, namespace: "public", relationName: "t", columns: [{ name: "id", typeId: 23, isKey: true }, { name: "v", typeId: 25 }] };

/** A stream of `n` messages of varied sizes (records of different word counts). */
function stream(n: number): Uint8Array {
  const msgs = [encode.relation(REL)];
  for (let i = 1; i < n; i++) {
    if (i % 7 === 1) msgs.push(encode.begin({ finalLsn: BigInt(i), commitTime: 0n, xid: i }));
    else if (i % 7 === 0) msgs.push(encode.commit({ flags: 0, commitLsn: BigInt(i), endLsn: BigInt(i + 1), commitTime: 0n }));
    else msgs.push(encode.insert({ relation: REL, newTuple: [String(i), "x".repeat(i % 13)] }));
  }
  return frame(msgs);
}

for (const b of backends) {
  describe(b.name, () => {
    it("every access order gives each message the record a front-to-back read gives it", async () => {
      const bytes = stream(3000);
      const d: PgoutputDecoder = await b.create();
      const first = d.push(bytes);
      expect(first).toBeInstanceOf(TapeBatch);
      const n = first.length;
      expect(n).toBe(3000);
      const inOrder = Array.from({ length: n }, (_, i) => (first as TapeBatch).recordAt(i));
      const kinds = Array.from({ length: n }, (_, i) => first.kind(i));
      const d2: PgoutputDecoder = await b.create();
      fc.assert(fc.property(
        // Short hops both ways (the walks), long jumps (the index), repeats.
        fc.array(fc.oneof(fc.integer({ min: -40, max: 40 }), fc.integer({ min: -n, max: n })), { minLength: 1, maxLength: 200 }),
        (steps) => {
          const batch = d2.push(bytes) as TapeBatch;
          let i = 0;
          for (const step of steps) {
            i = Math.min(n - 1, Math.max(0, i + step));
            if (batch.recordAt(i) !== inOrder[i] || batch.kind(i) !== kinds[i]) return false;
          }
          return true;
        },
      ), { numRuns: 300 });
    });
  });
}
