/**
 * The relation map of the kernel's line area (kernel/json-area.ts; spec:
 * bindings/line-templates.ts): templates added and taken out one relation
 * at a time (a relation defined again) keep every other relation's template
 * where the kernel's lookup finds it. The lookup here is the spec's: linear
 * probing from the OID's home slot up to an empty entry.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import { decoderInternals } from "../bindings/kernel/decoder.ts";
import { jsonArea, type JsonArea } from "../bindings/kernel/json-area.ts";
import { linesFor } from "../bindings/pipeline/kernel-lines.ts";
import { LP_KINDS, LP_PROGRAM_WORDS, LS_STATE_BYTES, RT_INDEX } from "../bindings/line-templates.ts";
import { TABLE_HASH } from "../bindings/tape.ts";
import { encode } from "../devkit/encoder/encoder.ts";

/** A laid-out line area of a fresh decoder. */
function area(): JsonArea {
  const d = new WasmDecoder();
  linesFor(d);
  d.decode(encode.begin({ finalLsn: 1n, commitTime: 0n, xid: 1 }).bytes);
  return jsonArea(decoderInternals(d).memory)!;
}

/** The relation map's first word (its capacity). */
const mapOf = (a: JsonArea): number => (a.line + LS_STATE_BYTES >> 2) + LP_KINDS * LP_PROGRAM_WORDS;

/** The template address the kernel finds for `oid` (0: none), as line-templates.ts specifies the lookup. */
function find(a: JsonArea, oid: number): number {
  const map = mapOf(a);
  const capacity = a.i32[map]!;
  for (let slot = (Math.imul(oid, TABLE_HASH) >>> 16) & (capacity - 1), probes = 0; probes < capacity; probes++, slot = (slot + 1) & (capacity - 1)) {
    const at = a.i32[map + 2 + slot * 2]!;
    if (at === 0) return 0;
    if (a.i32[map + 1 + slot * 2] === oid) return at;
  }
  return 0;
}

/**
 * Relation OIDs of one home slot of a map of `capacity` entries, then of the next (so their probe runs
 * meet), as a table's OIDs can fall; and 0, which no entry taken out may
 * leave behind as its OID.
 */
function colliding(capacity: number): number[] {
  const home = (oid: number) => (Math.imul(oid, TABLE_HASH) >>> 16) & (capacity - 1);
  const h = home(16384);
  const oids: number[] = [0];
  for (let oid = 16384; oids.length < 11; oid++) if (home(oid) === h || (home(oid) === ((h + 1) & (capacity - 1)) && oids.length >= 7)) oids.push(oid);
  return oids;
}

describe("the line area's relation map", () => {
  it("templates taken out one relation at a time: every other one is still found, each with its own index", () => {
    const first = area();
    const COLLIDING = colliding(first.i32[mapOf(first)]!);
    fc.assert(fc.property(fc.array(fc.tuple(fc.boolean(), fc.constantFrom(...COLLIDING)), { minLength: 1, maxLength: 200 }), (steps) => {
      const a = area();
      const model = new Map<number, number>();
      let index = 0;
      for (const [add, oid] of steps) {
        if (add) {
          expect(a.template(oid, { columns: 0, wanted: true, flags: 0, head: new Uint8Array([index & 0xff]) }, index)).toBe(true);
          model.set(oid, index++);
        } else {
          a.forgetTemplate(oid);
          model.delete(oid);
        }
        for (const o of COLLIDING) {
          const at = find(a, o);
          const want = model.get(o);
          if (want === undefined) expect(at, `${o} after ${JSON.stringify(steps)}`).toBe(0);
          else expect(at === 0 ? undefined : a.i32[(at >> 2) + RT_INDEX], `${o} after ${JSON.stringify(steps)}`).toBe(want);
        }
      }
    }), { numRuns: 200 });
  });
});
