// The kernel's in-place text timestamp parser (bindings/kernel/text-timestamp.ts,
// built by asc and by tsc) against the JS parser it accelerates:
// equal on every input it accepts, and it declines (NOT_PARSED) what it does
// not handle, so the JS parser decides. Both kernels answer the same.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { textTimestamp, textTimestamptz } from "../bindings/values/text/datetime.ts";
import { Oid } from "../bindings/values/oids.ts";
import { instantiate, kernelModule } from "../bindings/wasm/module.ts";
import { createKernel } from "../bindings/baseline/kernel.ts";
import type { KernelExports } from "../bindings/kernel/exports.ts";
import { TapeDecoder } from "../bindings/kernel/decoder.ts";
import { printTimestamp } from "../devkit/encoder/values-print.ts";
import { backends } from "./support/backends.ts";
import { encode } from "../devkit/encoder/encoder.ts";
import { civilDay, civilMonth, civilOfDays, civilOfDaysInt, civilYear } from "../bindings/kernel/civil.ts";

const NOT_PARSED = -(2n ** 63n) + 1n;
const kernels: [string, () => KernelExports][] = [["wasm", () => instantiate(kernelModule())], ["ts", createKernel]];
for (const [name, make] of kernels) {
  const k = make();
  const at = k.heapBase() + 64;

  /** The kernel's answer and the JS parser's for one text. */
  function both(text: string, withZone: boolean): { kernel: bigint; js: bigint | string } {
    const bytes = new TextEncoder().encode(text);
    new Uint8Array(k.memory.buffer).set(bytes, at);
    const kernel = k.textTimestamp(at, bytes.length, withZone ? 1 : 0);
    let js: bigint | string;
    try {
      js = (withZone ? textTimestamptz : textTimestamp)(bytes, 0, bytes.length);
    } catch (e) {
      js = `error: ${(e as Error).message}`;
    }
    return { kernel, js };
  }

  /** BC dates, and years past 200000 (µs since 1970 near 2^63), are the JS parser's. */
  function declined(text: string): boolean {
    return text.endsWith(" BC") || Number.parseInt(text, 10) > 200000;
  }

  const timestamps = fc.oneof(
    fc.bigInt({ min: -62135596800000000n /* 0001-01-01 */, max: 99_999_999n * 86_400_000_000n }),
    fc.bigInt({ min: 0n, max: 4_000_000_000_000_000n }),
    fc.bigInt({ min: -2_000_000_000n, max: 4_000_000_000n }).map((s) => s * 1_000_000n),
  );
  const offsets = fc.oneof(fc.integer({ min: -57599, max: 57599 }), fc.constantFrom(0, 19800, -1521, 21208, -18000));

  describe(`${name} kernel text timestamps`, () => {
    it("equal the JS parser for PostgreSQL's output of random timestamps and zones", () => {
      fc.assert(
        fc.property(timestamps, offsets, (us, east) => {
          const text = printTimestamp(us, east);
          const tz = both(text, true);
          expect(tz.kernel).toBe(declined(text) ? NOT_PARSED : us);
          expect(tz.js).toBe(us);
          const plainText = printTimestamp(us);
          const plain = both(plainText, false);
          expect(plain.kernel).toBe(declined(plainText) ? NOT_PARSED : us);
          expect(plain.js).toBe(us);
        }),
        { numRuns: 3000, seed: 42 },
      );
    });

    it("leave every other form to the JS parser", () => {
      for (const text of [
        "infinity", "-infinity", "0044-03-15 12:00:00+00 BC", "2024-01-01 00:00:00.1234567+00", "2024-01-01 00:00:00.+00",
        "2024-13-01 00:00:00+00", "2024-01-01T00:00:00+00", "2024-01-01 00:00:00", "2024-01-01 00:00:00+0", "2024-01-01",
        "1234567890-01-01 00:00:00+00", "294276-12-31 23:59:59.999999+00", "", "x", "2024-01-01 00:00:00+00 ",
      ]) {
        expect(both(text, true).kernel, text).toBe(NOT_PARSED);
      }
      // A timestamp without zone declines a zone, a timestamptz needs one.
      expect(both("2024-01-01 00:00:00+00", false).kernel).toBe(NOT_PARSED);
    });

    it("are exact either side of 2^53 µs, where the TS build's bigint takes two conversions instead of one", () => {
      for (const edge of [2n ** 53n, -(2n ** 53n)]) {
        for (const delta of [-1_000_001n, -2n, -1n, 0n, 1n, 2n, 999_999n]) {
          const us = edge + delta;
          for (const east of [0, 3600, -19800]) expect(both(printTimestamp(us, east), true).kernel).toBe(us);
          expect(both(printTimestamp(us), false).kernel).toBe(us);
        }
      }
    });

    it("never reads outside memory", () => {
      const size = k.memory.buffer.byteLength;
      expect(k.textTimestamp(size - 5, 30, 1)).toBe(NOT_PARSED);
      expect(k.textTimestamp(-1, 30, 1)).toBe(NOT_PARSED);
      expect(k.textTimestamp(0x7fff_fff0, 0x7fff_fff0, 1)).toBe(NOT_PARSED);
    });

    it("give the same tuple values through both backends", async () => {
      const relation = {
        relationId: 16400, namespace: "public", relationName: "ts", replicaIdentity: "d" as const,
        columns: [
          { flags: 1, name: "a", typeId: Oid.timestamptz, typeModifier: -1 },
          { flags: 0, name: "b", typeId: Oid.timestamp, typeModifier: -1 },
          { flags: 0, name: "c", typeId: Oid.timestamptz, typeModifier: -1 },
        ],
      };
      const rel = encode.relation(relation);
      const rows = [
        ["2024-02-29 04:05:06.789+05:30", "2024-02-29 04:05:06.789", "infinity"],
        ["1999-12-31 23:59:59.999999-00:25:21", "0044-03-15 12:00:00 BC", "294276-12-31 23:59:59.999999+00"],
      ].map((texts) => encode.insert({ relation, newTuple: texts }));
      const seen: unknown[][] = [];
      for (const backend of backends) {
        const d = await backend.create();
        const batch = d.decodeBatch([rel.bytes, ...rows.map((r) => r.bytes)]);
        const values: unknown[] = [];
        for (let i = 1; i < batch.length; i++) {
          const msg = batch.get(i);
          if (msg.kind === "Insert") values.push(msg.newTuple.values());
        }
        seen.push(values);
      }
      expect(seen[0], JSON.stringify(seen, (_, v) => (typeof v === "bigint" ? `${v}n` : v))).toEqual(seen[1]);
      expect(seen[0]![0]).toEqual([1709159706789000n, 1709179506789000n, 0x7fff_ffff_ffff_ffffn]);
    });
  });
}

describe("the decoder hands text timestamps to its kernel", () => {
  it("before and after its memory grew, and only for bytes in its memory", () => {
    let calls = 0;
    let k!: KernelExports;
    const counting = (): KernelExports => {
      k = createKernel();
      return { ...k, textTimestamp: (o, n, z) => (calls++, k.textTimestamp(o, n, z)) };
    };
    const d = new (class extends TapeDecoder {
      readonly backend = "baseline" as const;
      fork(): TapeDecoder {
        throw new Error("not forked here");
      }
    })({}, counting);
    const relation = {
      relationId: 16401, namespace: "public", relationName: "g", replicaIdentity: "d" as const,
      columns: [{ flags: 0, name: "t", typeId: Oid.timestamptz, typeModifier: -1 }, { flags: 0, name: "pad", typeId: Oid.text, typeModifier: -1 }],
    };
    d.decode(encode.relation(relation).bytes);
    const at = (pad: number) => {
      const m = d.decode(encode.insert({ relation, newTuple: ["2024-02-29 04:05:06.789+00", "x".repeat(pad)] }).bytes);
      if (m.kind !== "Insert") throw new Error(m.kind);
      return m.newTuple.value(0);
    };
    expect(at(1)).toBe(1709179506789000n);
    expect(calls).toBe(1);
    const before = k.memory.buffer.byteLength;
    expect(at(4 << 20)).toBe(1709179506789000n); // a 4 MiB row: memory grows
    expect(k.memory.buffer.byteLength).toBeGreaterThan(before);
    expect(calls).toBe(2);
    // Bytes elsewhere go to the JS parser, with the same value.
    const bytes = new TextEncoder().encode("2024-02-29 04:05:06.789+00");
    expect(d.values.text(Oid.timestamptz, bytes, 0, bytes.length)).toBe(1709179506789000n);
    expect(calls).toBe(2);
  });
});

describe("kernel/civil.ts: the i32 civil date the kernel takes for dates and timestamps", () => {
  it("is civil_from_days' date for every day from 0000-03-01 to past the year 9999", () => {
    let checked = 0;
    for (let days = -719468; days < 2_932_897 + 1000; days++) {
      civilOfDays(days);
      const [y, m, d] = [civilYear, civilMonth, civilDay];
      civilOfDaysInt(days);
      if (civilYear !== y || civilMonth !== m || civilDay !== d) expect.fail(`day ${days}: ${civilYear}-${civilMonth}-${civilDay}, not ${y}-${m}-${d}`);
      checked++;
    }
    expect(checked).toBeGreaterThan(3_600_000);
  });
});
