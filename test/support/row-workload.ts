/**
 * A fixed stream for the row readers (test/row-readers.test.ts): a relation
 * with a column of every generated type (support/values-arbitraries.ts), and
 * Inserts and Updates (with the old row, unchanged TOAST, NULLs, text and
 * binary values) drawn from a fixed seed; and its digest, every row's values
 * as a decoder's `values()`/`toObject()` and the drop-in plugin give them, in
 * a text that keeps what JSON loses (bigint, Date, bytes, undefined, the
 * unchanged-TOAST marker). The digest is compared between this process and
 * a child where code generation is refused, so between the compiled and the
 * interpreted readers.
 */
import fc from "fast-check";
import { encode, UNCHANGED, type ColumnDesc, type RelationDesc } from "../../devkit/encoder/encoder.ts";
import { utf8 } from "../../devkit/encoder/values-print.ts";
import type { Insert, PgoutputDecoder, Update } from "../../bindings/index.ts";
import type { AnyMessage } from "../../bindings/compat/types.ts";
import { GENERATORS } from "./values-arbitraries.ts";

export const RELATION: RelationDesc = {
  relationId: 16600,
  namespace: "public",
  relationName: "every_type",
  replicaIdentity: "f",
  columns: GENERATORS.map((g, i) => ({ name: `c${i}_${g.type}`, typeId: g.oid, isKey: i === 0 })),
};

/** One column of a row: NULL, unchanged TOAST, or a generated value in either format. */
function columnArb(i: number, unchanged: boolean): fc.Arbitrary<ColumnDesc> {
  const g = GENERATORS[i]!;
  const kinds: fc.Arbitrary<ColumnDesc>[] = [
    fc.constant(null),
    g.arb.map((s) => s.text),
    g.arb.map((s) => s.binary),
  ];
  if (unchanged) kinds.push(fc.constant(UNCHANGED));
  return fc.oneof(...kinds);
}

const rowArb = (unchanged: boolean) => fc.tuple(...GENERATORS.map((_, i) => columnArb(i, unchanged)));

/** The stream's messages: the Relation message, then `rows` changes (fixed by `seed`). */
export function workload(seed: number, rows: number): Uint8Array[] {
  const changes = fc.sample(fc.tuple(fc.boolean(), rowArb(false), rowArb(true)), { seed, numRuns: rows });
  const out = [encode.relation(RELATION).bytes];
  for (const [isUpdate, old, next] of changes) {
    out.push(isUpdate
      ? encode.update({ relation: RELATION, oldTupleType: "O", oldTuple: old, newTuple: next }).bytes
      : encode.insert({ relation: RELATION, newTuple: old }).bytes);
  }
  return out;
}

/** A value as text, keeping the types JSON would lose. */
export function show(v: unknown): string {
  return JSON.stringify(v, function (this: unknown, k, x) {
    const raw = (this as Record<string, unknown>)[k];
    if (typeof raw === "bigint") return `${raw}n`;
    if (raw instanceof Date) return `Date(${raw.getTime()})`;
    if (raw instanceof Uint8Array) return `bytes(${Buffer.from(raw).toString("hex")})`;
    if (raw === undefined) return "undefined";
    if (typeof raw === "symbol") return String(raw);
    if (typeof raw === "number" && !Number.isFinite(raw)) return String(raw);
    if (raw !== null && typeof raw === "object" && !Array.isArray(raw)) {
      // Own properties with the prototype's kind: the drop-in's rows have none.
      return { proto: Object.getPrototypeOf(raw) === null ? "null" : "object", ...(raw as object) };
    }
    return x;
  });
}

/** Every change's values through the decoder (`values()`, `values({ old })`, `toObject()`). */
export function decoderDigest(d: PgoutputDecoder, messages: readonly Uint8Array[]): string[] {
  const out: string[] = [];
  for (const bytes of messages) {
    const m = d.decode(bytes);
    if (m.kind === "Insert") out.push(show([(m as Insert).newTuple.values(), (m as Insert).newTuple.toObject()]));
    if (m.kind === "Update") {
      const u = m as Update;
      out.push(show([u.oldTuple!.values(), u.newTuple.values(), u.newTuple.values({ old: u.oldTuple }), u.newTuple.toObject({ old: u.oldTuple })]));
    }
  }
  return out;
}

/** Every change's rows through the drop-in plugin's parse(). */
export function compatDigest(parse: (b: Uint8Array) => AnyMessage, messages: readonly Uint8Array[]): string[] {
  const out: string[] = [];
  for (const bytes of messages) {
    const m = parse(bytes);
    if (m.tag === "insert") out.push(show(m.new));
    if (m.tag === "update") out.push(show([m.old, m.new]));
  }
  return out;
}

/** Text no parser accepts, for the error cases (invalid JSON in the jsonb column). */
export const BAD_JSONB = utf8("{nope");
