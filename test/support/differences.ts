/**
 * What the differential tests compare: the outcome of one call in each
 * backend (a value, or a PgoutputError's code, offset, incomplete flag,
 * message index, kind and field), and a collector that groups the
 * disagreements of a whole seeded run by what differs.
 */
import { expect } from "vitest";
import { isPgoutputError } from "../../bindings/errors.ts";
import { deepEqual, hex } from "../../devkit/encoder/encoder.ts";
import { corrupt, type Corruption } from "../../devkit/fuzz/corrupt.ts";
import { Random } from "../../devkit/fuzz/random.ts";
import type { PgoutputDecoder } from "../../bindings/decoder.ts";
import { backends } from "./backends.ts";
import { TwinDecoder } from "./twin-kernel.ts";

export type Outcome =
  | { ok: true; value: unknown; consumed?: number }
  | { ok: false; code: string; offset: number | undefined; incomplete: boolean; messageIndex: number | undefined; messageKind?: string; field?: string };

export function outcome(fn: () => unknown): Outcome {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    if (!isPgoutputError(e)) return { ok: false, code: `not a PgoutputError: ${String(e)}`, offset: undefined, incomplete: false, messageIndex: undefined };
    return { ok: false, code: e.code, offset: e.offset, incomplete: e.incomplete, messageIndex: e.messageIndex, messageKind: e.messageKind, field: e.field };
  }
}

/**
 * Collects the places where the backends disagree, so one run shows every
 * kind of disagreement (grouped by what differs), not just the first.
 */
export class Differences {
  readonly #seed: string;
  readonly #groups = new Map<string, { count: number; first: string }>();

  constructor(seed: string) {
    this.#seed = seed;
  }

  /** Records a difference between the two outcomes; returns whether they agree. */
  check(where: string, w: Outcome, b: Outcome): boolean {
    if (deepEqual(w, b)) {
      if (!w.ok && w.code.startsWith("not a")) this.add(`${where}: both threw ${w.code}`, "non-PgoutputError");
      return true;
    }
    let signature: string;
    if (w.ok && b.ok) signature = "both decode, values differ";
    else if (w.ok || b.ok) signature = `wasm ${w.ok ? "ok" : w.code} / baseline ${b.ok ? "ok" : b.code}`;
    else {
      const fields = (["code", "offset", "incomplete", "messageIndex", "messageKind", "field"] as const).filter((f) => w[f] !== b[f]);
      signature = `${w.code}/${b.code}: ${fields.join(", ")} differ`;
    }
    this.add(`${where} — wasm ${show(w)}, baseline ${show(b)}`, signature);
    return false;
  }

  add(detail: string, signature: string): void {
    const g = this.#groups.get(signature);
    if (g === undefined) this.#groups.set(signature, { count: 1, first: detail });
    else g.count++;
  }

  report(): void {
    const lines = [...this.#groups].map(([sig, g]) => `${sig} (${g.count}×), e.g. ${g.first}`);
    if (lines.length > 0) expect.fail(`${this.#seed}: the backends disagree —\n${lines.join("\n")}`);
  }
}

/** The decoders a differential suite compares: wasm, baseline, and the twin kernel (the wasm kernel and its TS build on one memory image, compared word for word on every call). */
export async function differentialDecoders(): Promise<{ wasm: PgoutputDecoder; twin: PgoutputDecoder; baseline: PgoutputDecoder }> {
  const backend = (name: string) => backends.find((b) => b.name === name)!.create();
  return { wasm: await backend("wasm"), baseline: await backend("baseline"), twin: new TwinDecoder() };
}

/** The wasm and the baseline outcome of `fn`; the twin kernel's must be the wasm one (and its kernels agreed on every call). */
export function bothOutcomes(fn: (d: PgoutputDecoder) => unknown, wasm: PgoutputDecoder, twin: PgoutputDecoder, baseline: PgoutputDecoder): [Outcome, Outcome] {
  const w = outcome(() => fn(wasm));
  const t = outcome(() => fn(twin));
  if (!deepEqual(t, w)) expect(t, "the twin kernel's outcome (word-for-word kernel comparison)").toEqual(w);
  return [w, outcome(() => fn(baseline))];
}

/**
 * A seeded garbage run: the decoders reset, then `count` random byte strings
 * of 0 to `maxLength` bytes, each given to `each` with the run's Random (to
 * forge bytes in it) and its Differences; the disagreements reported at the end.
 */
export function garbageRun(seed: number, count: number, maxLength: number, decoders: readonly PgoutputDecoder[], each: (bytes: Uint8Array, i: number, r: Random, diffs: Differences) => void): void {
  const r = new Random(seed);
  const diffs = new Differences(`seed ${seed}`);
  for (const d of decoders) d.reset();
  for (let i = 0; i < count; i++) each(r.bytes(r.int(0, maxLength)), i, r, diffs);
  diffs.report();
}

/**
 * Corrupted copies inside a valid stream: before about 3 items in 10, a
 * corrupted copy of it (decoded by what `decodeCorrupted` gives, which may
 * draw on the run's Random and adds a note to the place), then the item
 * itself; both outcomes compared each time, and the stream state kept in line
 * (its differences counted) after a corrupted copy. More than 100 corrupted.
 */
export function corruptedInStream<T extends { bytes: Uint8Array; kind: string }>(o: {
  seed: number;
  items: readonly T[];
  /** What an item is called in the differences ("message", "payload"). */
  noun: string;
  corruption: Corruption;
  decoders: readonly [wasm: PgoutputDecoder, twin: PgoutputDecoder, baseline: PgoutputDecoder];
  decodeCorrupted: (bytes: Uint8Array, r: Random) => { fn: (d: PgoutputDecoder) => unknown; note: string };
  decode: (bytes: Uint8Array) => (d: PgoutputDecoder) => unknown;
}): void {
  const [wasm, twin, baseline] = o.decoders;
  const r = new Random(o.seed ^ 0x1234567);
  const diffs = new Differences(`seed ${o.seed}`);
  for (const d of o.decoders) d.reset();
  let corrupted = 0;
  for (let i = 0; i < o.items.length; i++) {
    const m = o.items[i]!;
    const at = `${o.noun} ${i} (${m.kind})`;
    if (r.chance(0.3)) {
      const c = corrupt(r, m.bytes, o.corruption);
      corrupted++;
      const { fn, note } = o.decodeCorrupted(c.bytes, r);
      const [w, b] = bothOutcomes(fn, wasm, twin, baseline);
      diffs.check(`${at} ${c.how}${note}: ${hex(c.bytes)}`, w, b);
      if (wasm.inStream !== baseline.inStream) {
        diffs.add(`${at} ${c.how}: stream state wasm ${wasm.inStream}, baseline ${baseline.inStream}`, "inStream");
        baseline.inStream = wasm.inStream;
        twin.inStream = wasm.inStream;
      }
    }
    const [w, b] = bothOutcomes(o.decode(m.bytes), wasm, twin, baseline);
    diffs.check(`${at} after a corrupted copy: ${hex(m.bytes)}`, w, b);
  }
  expect(corrupted).toBeGreaterThan(100);
  diffs.report();
}

/** An outcome in one line, for failure messages. */
function show(o: Outcome): string {
  if (o.ok) return "ok";
  return `${o.code} offset=${o.offset} incomplete=${o.incomplete} messageIndex=${o.messageIndex} kind=${o.messageKind} field=${o.field}`;
}
