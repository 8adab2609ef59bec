/**
 * The row readers (bindings/values/row-reader.ts, and the drop-in's
 * bindings/compat/row-code.ts): `values()` and `toObject()` read a whole
 * row through a reader made per relation, compiled where code generation is
 * allowed and interpreted where it is refused. Both must give, column by
 * column, what `value(i)` gives, with the same errors; a relation re-sent
 * with the same types keeps its reader, and a Type message that changes how
 * a column parses makes a new one. The refused case runs for real: a child
 * under `node --disallow-code-generation-from-strings`, whose values and
 * drop-in rows must equal this process's.
 */
import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Insert, Update } from "../bindings/messages.ts";
import type { Tuple } from "../bindings/tuple.ts";
import { isPgoutputError, type PgoutputError } from "../bindings/errors.ts";
import { tapeColumns } from "../bindings/views/tuple.ts";
import { makeRowReader, rowReader } from "../bindings/values/row-reader.ts";
import { tupleValues } from "../bindings/values/toast.ts";
import { Oid } from "../bindings/values/oids.ts";
import { PgoutputWasmPlugin } from "../bindings/compat/plugin.ts";
import { createDecoderSync } from "../bindings/create-decoder.ts";
import { encode, type RelationDesc } from "../devkit/encoder/encoder.ts";
import { backend } from "./support/backends.ts";
import { tsxChildEnv } from "./support/tsx-child.ts";
import { BAD_JSONB, compatDigest, decoderDigest, RELATION, show, workload } from "./support/row-workload.ts";

const RUNS = Number(process.env.ROW_READER_RUNS ?? 40);

/** The interpreted reader's values of a tape tuple. */
function interpreted(t: Tuple): unknown[] {
  const c = tapeColumns(t)!;
  return makeRowReader(c.values, t.relation!, false)(c.u8, c.dv, c.tape, c.first - 1, t.relation!);
}

const byColumn = (t: Tuple): unknown[] => Array.from({ length: t.length }, (_, i) => t.value(i));

function errorOf(f: () => unknown): PgoutputError {
  try {
    f();
  } catch (e) {
    expect(isPgoutputError(e), String(e)).toBe(true);
    return e as PgoutputError;
  }
  throw new Error("expected an error");
}

describe(`${backend.name}: row readers`, () => {
  it("values(), toObject() and the interpreted reader give value(i)'s values, with unchanged TOAST filled from the old row", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (seed) => {
        const d = await backend.create();
        for (const bytes of workload(seed, 8)) {
          const m = d.decode(bytes);
          if (m.kind !== "Insert" && m.kind !== "Update") continue;
          const tuples: Tuple[] = m.kind === "Insert" ? [(m as Insert).newTuple] : [(m as Update).oldTuple!, (m as Update).newTuple];
          for (const t of tuples) {
            const expected = byColumn(t);
            expect(show(t.values())).toBe(show(expected));
            expect(show(interpreted(t))).toBe(show(expected));
            expect(show(t.toObject())).toBe(show(Object.fromEntries(RELATION.columns.map((c, i) => [c.name, expected[i]]))));
          }
          if (m.kind === "Update") {
            const u = m as Update;
            const merged = tupleValues(u.newTuple, (t, i) => t.value(i), { old: u.oldTuple });
            expect(show(u.newTuple.values({ old: u.oldTuple }))).toBe(show(merged));
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("a value that does not parse: both readers throw value(i)'s error, naming the column, and the decoder goes on", async () => {
    const d = await backend.create();
    d.decode(encode.relation(RELATION).bytes);
    const jsonb = RELATION.columns.findIndex((c) => c.typeId === Oid.jsonb);
    for (const format of ["text", "binary"] as const) {
      const row = RELATION.columns.map(() => null as string | Uint8Array | null);
      row[jsonb] = format === "text" ? new TextDecoder().decode(BAD_JSONB) : Uint8Array.of(1, ...BAD_JSONB);
      const t = (d.decode(encode.insert({ relation: RELATION, newTuple: row }).bytes) as Insert).newTuple;
      const expected = errorOf(() => t.value(jsonb));
      expect(expected).toMatchObject({ code: "INVALID_VALUE", column: jsonb, columnName: RELATION.columns[jsonb]!.name, typeId: Oid.jsonb, format });
      for (const e of [errorOf(() => t.values()), errorOf(() => interpreted(t)), errorOf(() => t.toObject())]) {
        expect({ ...e, message: e.message }).toStrictEqual({ ...expected, message: expected.message });
      }
      expect(t.value(0)).toBeNull();
    }
    const ok = (d.decode(encode.insert({ relation: RELATION, newTuple: RELATION.columns.map(() => null) }).bytes) as Insert).newTuple;
    expect(ok.values()).toStrictEqual(RELATION.columns.map(() => null));
  });

  it("a relation re-sent with the same types keeps its reader; a Type message that changes a column's parser makes a new one", async () => {
    const DOMAIN = 70010;
    const rel: RelationDesc = { relationId: 16601, namespace: "public", relationName: "d", columns: [{ name: "id", typeId: Oid.int4 }, { name: "n", typeId: DOMAIN }] };
    const d = await backend.create();
    const readerOf = (t: Tuple) => rowReader(tapeColumns(t)!.values, t.relation!);
    const insert = () => (d.decode(encode.insert({ relation: rel, newTuple: ["1", "12"] }).bytes) as Insert).newTuple;
    d.decode(encode.relation(rel).bytes);
    const first = insert();
    expect(first.values()).toStrictEqual([1, "12"]);
    const reader = readerOf(first);
    d.decode(encode.relation(rel).bytes);
    const again = insert();
    expect(again.relation).not.toBe(first.relation);
    expect(readerOf(again)).toBe(reader);
    // A domain over int4, as pgoutput's Type message names it.
    d.decode(encode.type({ typeId: DOMAIN, namespace: "", typeName: "int4" }).bytes);
    const taught = insert();
    expect(taught.values()).toStrictEqual([1, 12]);
    expect(readerOf(taught)).not.toBe(reader);
  });

  it("with code generation refused (node --disallow-code-generation-from-strings), the same values and drop-in rows", () => {
    const seed = 20261202;
    const messages = workload(seed, 60);
    const plugin = new PgoutputWasmPlugin({ protoVersion: 1, publicationNames: ["p"], backend: backend.name });
    const here = { decoder: decoderDigest(createDecoderSync({ backend: backend.name }), messages), compat: compatDigest((x) => plugin.parse(x), messages) };
    const tsx = tsxChildEnv();
    try {
      const out = execFileSync(
        process.execPath,
        ["--disallow-code-generation-from-strings", "--import", "tsx", "test/support/row-readers-child.ts", String(seed), "60", backend.name],
        { env: tsx.env, encoding: "utf8", timeout: 60_000, maxBuffer: 64 << 20 },
      );
      const child = JSON.parse(out) as { refused: boolean; decoder: string[]; compat: string[] };
      expect(child.refused).toBe(true);
      expect(child.decoder.length).toBe(60);
      expect(child.compat.length).toBe(60);
      expect(child.decoder).toStrictEqual(here.decoder);
      expect(child.compat).toStrictEqual(here.compat);
    } finally {
      tsx.remove();
    }
  });
});
