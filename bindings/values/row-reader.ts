/**
 * Every column's value of a tape TUPLE of one relation, in one call: the
 * relation's row reader. `tuple.value(i)` resolves the column's type and
 * parser on each call and calls it through one shared call site, which V8
 * sees as megamorphic (a different parser per column). A row reader is
 * made once per relation (and again when a Type message changes how an OID
 * parses): generated code with one call site per column, each of which only
 * ever sees its column's parser, so V8 inlines it.
 *
 * Where code generation is refused (a Content-Security-Policy without
 * 'unsafe-eval', `node --disallow-code-generation-from-strings`) the reader
 * is a plain loop over the same resolved parsers, with the same values and
 * errors.
 *
 * Values and errors are those of `columnValue` (column.ts) per column: a
 * parser's error becomes the INVALID_VALUE naming the column, its type OID
 * and format.
 */
import type { Relation } from "../relation.ts";
import { unchangedToast } from "../tuple.ts";
import type { Parse } from "./bytes.ts";
import type { ValueDecoder } from "./decoder.ts";
import { inColumn } from "./failure.ts";
import { generated } from "../generated-code.ts";
import { ROW_BOOL, ROW_INT8, ROW_TIMESTAMP, ROW_TIMESTAMPTZ, ROW_VALUE_COLUMNS } from "../row-values.ts";
import { rowValueOf, type RowValue, type RowValues } from "./registry.ts";
import { KIND_BINARY as KIND_B, KIND_TEXT as KIND_T, KIND_UNCHANGED as KIND_U } from "../tape.ts";

/**
 * The values of the TUPLE at tape word `w` (its column count, then each
 * column's kind-byte offset) of `relation`, which has the relation's width
 * (the caller checks; the kernel already did). `relation` names the column
 * in an error.
 */
export type RowReader = (u8: Uint8Array, dv: DataView, tape: Int32Array, w: number, relation: Relation) => unknown[];

/** What a reader is made from: per column its type, type modifier and both formats' parsers, and the side table's part. */
interface ReaderPlan {
  typeIds: number[];
  typeModifiers: number[];
  text: Parse[];
  binary: Parse[];
  /** Per column, what the side table gives for its text form (undefined: the parser runs); none without a side table. */
  rows: (RowValue | undefined)[];
  /** The codes of `rows` as rowValues() takes them (bindings/row-values.ts). */
  codes: number[];
  /**
   * The first coded column. The kernel reads text only, and a binary stream
   * sends every column binary: where this one is binary, the row is not
   * worth a kernel call.
   */
  first: number;
  side: RowValues | undefined;
}

interface Made {
  values: ValueDecoder;
  knowledge: number;
  read: RowReader;
}

/** Where a relation keeps its reader (a Relation object belongs to one decoder, so to one ValueDecoder). */
const SLOT = Symbol("rowReader");
type WithSlot = Relation & { [SLOT]?: Made };

/**
 * Readers by column types, per ValueDecoder. PostgreSQL sends a table's
 * Relation message again at every session start and schema change, and a
 * new reader costs a compile and a warm-up: relations of the same column
 * types share one.
 */
const byTypes = new WeakMap<ValueDecoder, Map<string, RowReader>>();
/** Bounded: a stream with ever new column lists (DDL in a loop) must not grow it forever. */
const BY_TYPES_MAX = 1024;

/** The row reader of `relation` for tuples decoded with `values`; made again if `values` learned a type since. */
export function rowReader(values: ValueDecoder, relation: Relation): RowReader {
  const m = (relation as WithSlot)[SLOT];
  if (m !== undefined && m.values === values && m.knowledge === values.knowledge) return m.read;
  const columns = relation.columns;
  const key = `${values.knowledge}:${columns.map((c) => `${c.typeId}/${c.typeModifier}`).join(",")}`;
  let shared = byTypes.get(values);
  if (shared === undefined) byTypes.set(values, (shared = new Map()));
  let read = shared.get(key);
  if (read === undefined) {
    read = makeRowReader(values, relation, true);
    if (shared.size >= BY_TYPES_MAX) shared.clear();
    shared.set(key, read);
  }
  (relation as WithSlot)[SLOT] = { values, knowledge: values.knowledge, read };
  return read;
}

/** A reader compiled (`compile`, when code generation is allowed) or interpreted; exported for the tests of both. */
export function makeRowReader(values: ValueDecoder, relation: Relation, compile: boolean): RowReader {
  const columns = relation.columns;
  const text = columns.map((c) => values.textParser(c.typeId));
  const side = values.rowValues;
  const rows = text.map((p, i) => (side !== undefined && i < ROW_VALUE_COLUMNS ? rowValueOf(p) : undefined));
  const first = rows.findIndex((r) => r !== undefined);
  const codes = [0, 0, 0, 0];
  rows.forEach((r, i) => {
    if (r !== undefined) codes[i >> 3]! |= r.code << ((i & 7) << 2);
  });
  const plan: ReaderPlan = {
    typeIds: columns.map((c) => c.typeId),
    typeModifiers: columns.map((c) => c.typeModifier),
    text,
    binary: columns.map((c) => values.binaryParser(c.typeId)),
    rows,
    codes,
    first: Math.max(0, first),
    side: first < 0 ? undefined : side,
  };
  return (compile && columns.length <= COMPILED_MAX ? generated(() => compiledReader(plan)) : undefined) ?? interpretedReader(plan);
}

/** Past this many columns the generated function is too big for V8 to optimize well (PostgreSQL allows 1,600). */
const COMPILED_MAX = 200;

/** Each made reader's source is unique, so V8 gives each its own feedback (shared feedback would make the call sites polymorphic again). */
let serial = 0;

function compiledReader(plan: ReaderPlan): RowReader {
  const n = plan.typeIds.length;
  const consts: string[] = [];
  const body: string[] = [];
  const side = plan.side;
  if (side !== undefined) body.push(`const done = u8[t[w + ${plan.first + 1}]] === ${KIND_B} ? 0 : S.read(u8, w, ${plan.codes.join(", ")}), f = S.f64, l = S.i64;`);
  for (let i = 0; i < n; i++) {
    const row = plan.rows[i];
    consts.push(`const T${i} = text[${i}], B${i} = binary[${i}], M${i} = mods[${i}];${row?.then === undefined ? "" : ` const R${i} = rows[${i}].then;`}`);
    const parsed = `c = ${i}, p = t[w + ${i + 1}], k = u8[p], k === ${KIND_T} ? T${i}(u8, p + 5, dv.getInt32(p + 1), M${i}) : k === ${KIND_B} ? B${i}(u8, p + 5, dv.getInt32(p + 1), M${i}) : k === ${KIND_U} ? U : null`;
    body.push(row === undefined ? `const v${i} = (${parsed});` : `const v${i} = done & ${1 << i} ? ${slotSource(row, i)} : (${parsed});`);
  }
  const values = Array.from({ length: n }, (_, i) => `v${i}`).join(", ");
  const source = `"use strict"; // row reader ${serial++}
${consts.join("\n")}
return function readRow(u8, dv, t, w, relation) {
  let c = 0, p = 0, k = 0;
  try {
    ${body.join("\n    ")}
    return [${values}];
  } catch (e) {
    throw fail(e, relation, c, k);
  }
};`;
  const factory = new Function("text", "binary", "mods", "rows", "S", "U", "fail", source);
  return factory(plan.text, plan.binary, plan.typeModifiers, plan.rows, side, unchangedToast, failure(plan)) as RowReader;
}

/** The source that reads column `i`'s slot as its parser's value. */
function slotSource(row: RowValue, i: number): string {
  if (row.then !== undefined) return `R${i}(l[${i}])`;
  if (row.code === ROW_BOOL) return `f[${i}] !== 0`;
  return isInt64(row.code) ? `l[${i}]` : `f[${i}]`;
}

/** The same, read by the interpreted reader. */
function slotValue(row: RowValue, side: RowValues, i: number): unknown {
  if (row.then !== undefined) return row.then(side.i64[i]!);
  if (row.code === ROW_BOOL) return side.f64[i] !== 0;
  return isInt64(row.code) ? side.i64[i] : side.f64[i];
}

function isInt64(code: number): boolean {
  return code === ROW_INT8 || code === ROW_TIMESTAMP || code === ROW_TIMESTAMPTZ;
}

/** The same reads as a loop. */
function interpretedReader(plan: ReaderPlan): RowReader {
  const { text, binary, typeModifiers, rows, codes, first, side } = plan;
  const n = typeModifiers.length;
  const fail = failure(plan);
  return (u8, dv, t, w, relation) => {
    const out: unknown[] = new Array(n);
    const done = side === undefined || u8[t[w + 1 + first]!] === KIND_B ? 0 : side.read(u8, w, codes[0]!, codes[1]!, codes[2]!, codes[3]!);
    let i = 0;
    let k = 0;
    try {
      for (; i < n; i++) {
        if (i < ROW_VALUE_COLUMNS && done & (1 << i)) {
          out[i] = slotValue(rows[i]!, side!, i);
          continue;
        }
        const p = t[w + 1 + i]!;
        k = u8[p]!;
        out[i] = k === KIND_T ? text[i]!(u8, p + 5, dv.getInt32(p + 1), typeModifiers[i]!)
          : k === KIND_B ? binary[i]!(u8, p + 5, dv.getInt32(p + 1), typeModifiers[i]!)
          : k === KIND_U ? unchangedToast : null;
      }
    } catch (e) {
      throw fail(e, relation, i, k);
    }
    return out;
  };
}

/** A parser's error at column `c` of kind `k` as column.ts reports it. */
function failure(plan: ReaderPlan): (e: unknown, relation: Relation, c: number, k: number) => Error {
  return (e, relation, c, k) => inColumn(e, relation, c, plan.typeIds[c]!, k === KIND_T ? "text" : "binary");
}
