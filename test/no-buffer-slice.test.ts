/**
 * Lint: no `.slice` on bytes in the library. On a Node Buffer (what `pg`
 * and most callers hand us) `slice` is a VIEW, so a "copy" made with it
 * changes when the caller reuses its buffer. Byte copies go through
 * `copyBytes()` (bindings/copy-bytes.ts); every other `.slice` in bindings/
 * must be on something that is obviously a string or an array, listed below
 * with why. A new `.slice` fails this test until it is either a copyBytes()
 * call or listed here; a listed one that is gone fails too, so the list
 * stays exact. A file that never names a byte type (Uint8Array, Buffer,
 * ArrayBuffer, DataView) has no bytes to slice, and is not scanned.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { sliceUses } from "./support/slice-scan.ts";

const ROOT = join(import.meta.dirname, "..");

/** `.slice` uses that are not on bytes: file, receiver (arguments as `(…)`), how many, and why. */
const ALLOWED: { file: string; receiver: string; count: number; why: string }[] = [
  { file: "bindings/values/arrays.ts", receiver: "array.lowerBounds", count: 1, why: "a number[]" },
  { file: "bindings/values/bytes.ts", receiver: "text", count: 1, why: "a string (invalidText's preview)" },
  { file: "bindings/values/binary/numbers.ts", receiver: "frac", count: 1, why: "a string of fraction digits" },
  { file: "bindings/values/binary/numbers.ts", receiver: "digits", count: 2, why: "String(bigint)" },
  { file: "bindings/values/binary/numbers.ts", receiver: "int", count: 2, why: "a string (digits.slice)" },
  { file: "bindings/sinks/file.ts", receiver: "target", count: 1, why: "a string (a file: target)" },
  { file: "bindings/formats/debezium-rows.ts", receiver: "entry", count: 3, why: "a string (a key-columns entry)" },
  { file: "bindings/formats/debezium-values.ts", receiver: "abs", count: 4, why: "a string of digits" },
  { file: "bindings/formats/debezium-values.ts", receiver: "bits", count: 1, why: "a string of bits" },
  { file: "bindings/formats/debezium-values.ts", receiver: "micros.toString(…).padStart(…)", count: 1, why: "a string of digits" },
  { file: "bindings/pipeline/records.ts", receiver: "this.#ends", count: 1, why: "a number[] of record ends" },
  { file: "bindings/sinks/nats-publisher.ts", receiver: "s", count: 2, why: "a string (a reply subject)" },
  { file: "bindings/sinks/nats-publisher.ts", receiver: "q", count: 1, why: "an array (the queue)" },
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith(".ts") && !p.endsWith(".d.ts") ? [p] : [];
  });
}

type Key = string;
const key = (file: string, receiver: string): Key => `${file} :: ${receiver}`;

/** Every `.slice` in bindings/, counted by file and receiver, with one line of each for messages. */
function scan(): Map<Key, { count: number; where: string[] }> {
  const found = new Map<Key, { count: number; where: string[] }>();
  for (const path of sources(join(ROOT, "bindings"))) {
    const file = relative(ROOT, path).split("\\").join("/");
    const source = readFileSync(path, "utf8");
    if (!/\b(Uint8Array|Buffer|ArrayBuffer|DataView)\b/.test(source)) continue;
    for (const use of sliceUses(source)) {
      const k = key(file, use.receiver);
      const entry = found.get(k) ?? { count: 0, where: [] };
      entry.count++;
      entry.where.push(`${file}:${use.line}: ${use.text}`);
      found.set(k, entry);
    }
  }
  return found;
}

describe("no .slice on bytes in bindings/", () => {
  const found = scan();

  it("every .slice is copyBytes() territory or a listed string/array slice", () => {
    const listed = new Map<Key, number>();
    for (const a of ALLOWED) listed.set(key(a.file, a.receiver), a.count);
    const unexpected: string[] = [];
    for (const [k, { count, where }] of found) {
      if (listed.get(k) !== count) unexpected.push(`${k} ×${count} (listed ×${listed.get(k) ?? 0}):\n    ${where.join("\n    ")}`);
    }
    expect(unexpected, "use copyBytes() for bytes (Buffer#slice is a view); list a string/array slice in ALLOWED with why").toEqual([]);
  });

  it("every listed .slice still exists (the lists stay exact)", () => {
    const gone = ALLOWED.filter((a) => found.get(key(a.file, a.receiver))?.count !== a.count);
    expect(gone.map((a) => key(a.file, a.receiver))).toEqual([]);
  });

  it("the scanner flags the byte slices this rule was made for", () => {
    // The lines as they were: binaryBytes in values/binary/strings.ts and the queue's copy.
    const uses = (src: string) => sliceUses(src).map((u) => u.receiver);
    expect(uses("export function binaryBytes(b: Uint8Array, off: number, len: number): Uint8Array {\n  return b.slice(off, off + len);\n}")).toEqual(["b"]);
    expect(uses("      copy = payload.slice(); // a large payload gets its own allocation")).toEqual(["payload"]);
    expect(uses("return this.b.u8.slice(o, o + this.body(3)); this.#bytes.slice();")).toEqual(["this.b.u8", "this.#bytes"]);
    expect(uses("const f = Uint8Array.prototype.slice.call(x, 0, 1);")).toEqual(["Uint8Array.prototype"]);
    expect(uses("x = (a ?? b).slice(1); y = `${s.slice(0, 2)}`; z = xs[i]!.slice(1);")).toEqual(["(…)", "s", "xs[i]!"]);
    // Comments do not count; strings are receivers of their own kind.
    expect(uses("// b.slice(0)\n/* c.slice(1) */ 'abc'.slice(1)")).toEqual(['"…"']);
  });
});
