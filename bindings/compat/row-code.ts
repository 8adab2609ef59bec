/**
 * The drop-in's compiled row reader: one function per relation's columns,
 * made once per Relation message, that reads a TUPLE of the tape and builds
 * pg-logical-replication's row object in one go (tape-rows.ts is the same
 * reading as a loop, and the path where code generation is refused). Each
 * column has its own call site of its fast and type parser, which V8 then
 * sees only one function at and inlines; the loop calls every column's
 * parser through one site. The object is the row builder's literal
 * (rows.ts), filled from locals.
 */
import { KIND_BINARY as KIND_B, KIND_TEXT as KIND_T, KIND_UNCHANGED as KIND_U } from "../tape.ts";
import { readString } from "../utf8.ts";
import { generated } from "../generated-code.ts";
import { NOT_FAST, type FastParser } from "./fast-parsers.ts";
import { LITERAL_MAX, literalProperty } from "./rows.ts";
import type { Slab } from "./slab.ts";
import type * as T from "./types.ts";

/**
 * The row of the TUPLE at tape word `w`, which has `names.length` columns;
 * an unchanged TOASTed column takes `fallback`'s value (the old row), else
 * `undefined`; binary values are copied once per row into `slab`.
 */
export type CompiledRow = (u8: Uint8Array, dv: DataView, t: Int32Array, w: number, fallback: T.Row | null | undefined, slab: Slab) => T.Row;

/** Each reader's source is unique, so V8 gives each its own feedback rather than one shared by readers of another relation. */
let serial = 0;

type Parser = T.RelationColumn["parser"];

interface Made {
  parsers: readonly Parser[];
  fast: readonly (FastParser | undefined)[];
  read: CompiledRow;
}

/**
 * Readers by column names, each with the parsers it calls. PostgreSQL sends
 * a table's Relation message again at every session start and schema
 * change, and a new reader costs a compile and a warm-up: relations with
 * the same columns and parsers share one.
 */
const made = new Map<string, Made[]>();
/** Bounded: a stream with ever new column lists (DDL in a loop) must not grow it forever. */
const MADE_MAX = 1024;

/** The compiled reader of rows with these columns; `undefined` where code generation is refused or the row is too wide for a literal. */
export function compiledRow(names: readonly string[], parsers: readonly Parser[], fast: readonly (FastParser | undefined)[]): CompiledRow | undefined {
  if (names.length > LITERAL_MAX) return undefined;
  const key = JSON.stringify(names);
  const same = made.get(key) ?? [];
  const hit = same.find((m) => sameItems(m.parsers, parsers) && sameItems(m.fast, fast));
  if (hit !== undefined) return hit.read;
  const read = generated(() => compile(names, parsers, fast));
  if (read === undefined) return undefined;
  if (made.size >= MADE_MAX) made.clear();
  // A name list read with many parser sets (getTypeParser changed between sessions) keeps its latest few.
  const kept = [{ parsers: [...parsers], fast: [...fast], read }, ...same];
  kept.length = Math.min(kept.length, 4);
  made.set(key, kept);
  return read;
}

function sameItems<X>(a: readonly X[], b: readonly X[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function compile(names: readonly string[], parsers: readonly Parser[], fast: readonly (FastParser | undefined)[]): CompiledRow {
  const consts: string[] = [];
  const body: string[] = [];
  for (let i = 0; i < names.length; i++) {
    consts.push(`const P${i} = parsers[${i}], F${i} = fast[${i}], N${i} = names[${i}];`);
    const text = fast[i] === undefined
      ? `v${i} = P${i}(readString(u8, p + 5, dv.getInt32(p + 1)));`
      : `{ const len = dv.getInt32(p + 1); v${i} = F${i}(u8, p + 5, len); if (v${i} === NF) v${i} = P${i}(readString(u8, p + 5, len)); }`;
    body.push(
      `p = t[w + ${i + 1}]; k = u8[p]; let v${i};`,
      `if (k === ${KIND_T}) ${text}`,
      `else if (k === ${KIND_B}) { if (copy === undefined) { shift = slab.copy(u8, p, tupleEnd(u8, dv, t, w)) - p; copy = slab.held; } const from = p + 5 + shift; v${i} = copy.subarray(from, from + dv.getInt32(p + 1)); }`,
      `else if (k === ${KIND_U}) v${i} = fallback == null ? undefined : fallback[N${i}];`,
      `else v${i} = null;`,
    );
  }
  const props = names.map((n, i) => literalProperty(n, `v${i}`)).join(", ");
  const source = `"use strict"; // compat row ${serial++}
${consts.join("\n")}
return function row(u8, dv, t, w, fallback, slab) {
  let p = 0, k = 0, copy, shift = 0;
  ${body.join("\n  ")}
  const o = { ${props} };
  setPrototypeOf(o, null);
  return o;
};`;
  const factory = new Function("parsers", "fast", "names", "NF", "readString", "tupleEnd", "setPrototypeOf", source);
  return factory(parsers, fast, names, NOT_FAST, readString, tupleEnd, Object.setPrototypeOf) as CompiledRow;
}

/** Where the last column of the TUPLE at tape word `w` ends. */
export function tupleEnd(u8: Uint8Array, dv: DataView, t: Int32Array, w: number): number {
  const last = t[w + t[w]!]!;
  const k = u8[last];
  return k === KIND_T || k === KIND_B ? last + 5 + dv.getInt32(last + 1) : last + 1;
}
