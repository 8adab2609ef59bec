/**
 * The table behind the kernel's Grisu3 (bindings/kernel/shortest.ts): each
 * cached power of ten recomputed exactly with BigInt from its source text.
 * The digits the kernel prints with it are checked against V8's in
 * test/jsonl-kernel.test.ts ("floats: …").
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const source = readFileSync(new URL("../bindings/kernel/shortest.ts", import.meta.url), "utf8");

/** The literals of `memory.data<T>([...])` in the function named `fn`. */
function table(fn: string): string[] {
  const body = source.slice(source.indexOf(`function ${fn}()`));
  const list = body.slice(body.indexOf("(["), body.indexOf("])"));
  return list.match(/-?(0x[0-9a-f]+|\d+)/g) ?? [];
}

/** 10^k as f × 2^e, 2^63 <= f < 2^64, f rounded to nearest. */
function power(k: number): { f: bigint; e: number } {
  const one = 1n << 63n;
  // Scale 10^k by 2^-e so the quotient lands in [2^63, 2^64), rounding the division to nearest.
  const num = k >= 0 ? 10n ** BigInt(k) : 1n;
  const den = k >= 0 ? 1n : 10n ** BigInt(-k);
  let e = num.toString(2).length - den.toString(2).length - 63;
  const scaled = (x: number): bigint => {
    const n = x >= 0 ? num : num << BigInt(-x);
    const d = x >= 0 ? den << BigInt(x) : den;
    return (2n * n + d) / (2n * d);
  };
  let f = scaled(e);
  while (f >= one << 1n) f = scaled(++e);
  while (f < one) f = scaled(--e);
  return { f, e };
}

describe("Grisu3's cached powers of ten", () => {
  it("are 10^-348, 10^-340, …, 10^340, normalized and rounded to nearest", () => {
    const significands = table("powerSignificands");
    const exponents = table("powerExponents");
    expect(significands).toHaveLength(87);
    expect(exponents).toHaveLength(87);
    for (let i = 0; i < 87; i++) {
      const { f, e } = power(-348 + 8 * i);
      expect([BigInt(significands[i]!), Number(exponents[i])], `10^${-348 + 8 * i}`).toEqual([f, e]);
    }
  });
});
