/**
 * Row objects in pg-logical-replication's form: own properties in column
 * order, no prototype. Its PgoutputPlugin makes them with
 * `Object.create(null)` and one assignment per column, which V8 turns into
 * a dictionary-mode object (a hash table per row, a store through it per
 * column). Here each relation gets a builder made once per Relation
 * message: an object literal of its column names (a fixed-shape object,
 * filled in one go), then `Object.setPrototypeOf(row, null)`, whose map
 * transition V8 caches. The same own properties, values and (null)
 * prototype, at a third of the cost for ten columns and less the wider the
 * row (measured in node 20).
 *
 * The literal needs code made at run time (`new Function`); where that is
 * refused (a Content-Security-Policy without 'unsafe-eval') the builder
 * falls back to pg-logical-replication's own way.
 */
import type { Row } from "./types.ts";
import { generated } from "../generated-code.ts";

/** Makes a row from `values[0 .. names.length)`, property `names[i]` taking `values[i]`. */
export type RowBuilder = (values: readonly unknown[]) => Row;

/** Past this many columns a literal buys little (V8 makes such objects dictionaries anyway). */
export const LITERAL_MAX = 200;

/**
 * A builder for rows with these property names, in this order (names are
 * distinct, as PostgreSQL's column names are). Builders are shared by
 * name list: PostgreSQL re-sends a table's Relation message at every
 * session start and schema change, and compiling one costs about as much
 * as building a thousand rows.
 */
export function rowBuilder(names: readonly string[]): RowBuilder {
  const key = JSON.stringify(names);
  let made = built.get(key);
  if (made !== undefined) return made;
  made = makeBuilder(names);
  // Bounded: a stream with ever new column lists (DDL in a loop) must not grow this forever.
  if (built.size >= BUILT_MAX) built.clear();
  built.set(key, made);
  return made;
}

const built = new Map<string, RowBuilder>();
const BUILT_MAX = 1024;

function makeBuilder(names: readonly string[]): RowBuilder {
  return (names.length <= LITERAL_MAX ? generated(() => literalBuilder(names)) : undefined) ?? dictionaryBuilder(names);
}

/** The object literal's property `names[i]: values[i]`, for any name. */
export function literalProperty(name: string, value: string): string {
  // JSON.stringify gives a valid JS string literal for any name. "__proto__" as a plain key would set the
  // prototype instead of making a property: it is the one name written as a computed key.
  return `${name === "__proto__" ? `[${JSON.stringify(name)}]` : JSON.stringify(name)}: ${value}`;
}

function literalBuilder(names: readonly string[]): RowBuilder {
  const props = names.map((n, i) => literalProperty(n, `v[${i}]`));
  const make = new Function("setPrototypeOf", `return function row(v) { const o = { ${props.join(", ")} }; setPrototypeOf(o, null); return o; };`);
  return make(Object.setPrototypeOf) as RowBuilder;
}

/** pg-logical-replication's way: a null-prototype object, one assignment per column. */
export function dictionaryBuilder(names: readonly string[]): RowBuilder {
  return (v) => {
    const o: Row = Object.create(null);
    for (let i = 0; i < names.length; i++) o[names[i]!] = v[i];
    return o;
  };
}
