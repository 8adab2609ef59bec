/**
 * Which columns may skip pg-types: a column takes a fast parser
 * (fast-parsers.ts) only while its type's parser is still pg-types' own
 * default for that OID, so a parser set with `pg.types.setTypeParser` (or a
 * `typeParsers` source of the application's) always wins. The defaults are
 * the very function objects pg-types registered at load: its `textParsers`
 * module hands them to any `register` callback, so calling its `init` with
 * ours yields them however the application changed the type table since.
 * Compared once per column per Relation message, never per value.
 */
import { createRequire } from "node:module";
import { readString } from "../utf8.ts";
import { fastBool, fastDate, fastFloat, fastInt, type FastParser } from "./fast-parsers.ts";
import { fastInt8Array, fastIntArray, fastStringArray } from "./fast-arrays.ts";
import { makeFastInterval } from "./fast-interval.ts";
import { fastBytea } from "./fast-bytea.ts";
import type { TypeParser } from "./type-parsers.ts";

/** int8: pg-types' parseBigInteger returns its input string whatever it holds. */
const fastInt8String: FastParser = readString;

const FAST_BY_OID = new Map<number, FastParser>([
  [20, fastInt8String],
  [21, fastInt],
  [23, fastInt],
  [26, fastInt],
  [700, fastFloat],
  [701, fastFloat],
  [16, fastBool],
  [1082, fastDate],
  [1114, fastDate],
  [1184, fastDate],
  [17, fastBytea],
  [1005, fastIntArray], // int2[]
  [1007, fastIntArray], // int4[]
  [1028, fastIntArray], // oid[]
  [1016, fastInt8Array], // int8[]
  [1009, fastStringArray], // text[]
  [1015, fastStringArray], // varchar[]
  [1014, fastStringArray], // char[]
  [2951, fastStringArray], // uuid[]
]);

let defaults: Map<number, TypeParser> | null | undefined;
/** pg-types' parser for an OID it has none for (`noParse`: `String(text)`, the text itself). */
let noParse: TypeParser | undefined;

/** pg-types' default text parsers by OID, from the pg-types that `pg` loads; `null` when neither loads. */
function pgTypesDefaults(): Map<number, TypeParser> | null {
  if (defaults !== undefined) return defaults;
  try {
    const req = createRequire(import.meta.url);
    const fromPg = createRequire(req.resolve("pg"));
    const textParsers = fromPg("pg-types/lib/textParsers") as { init(register: (oid: number, fn: TypeParser) => void): void };
    const found = new Map<number, TypeParser>();
    textParsers.init((oid, fn) => found.set(oid, fn));
    // getTypeParser answers noParse for a format it has no table for, whatever was registered for any OID.
    const types = fromPg("pg-types") as { getTypeParser(oid: number, format: string): TypeParser };
    noParse = types.getTypeParser(0, "no such format");
    defaults = found;
  } catch {
    defaults = null;
  }
  return defaults;
}

/** interval's default parser is postgres-interval's PostgresInterval itself; the fast one builds objects of its prototype. */
const INTERVAL = 1186;
let fastInterval: FastParser | undefined;

/** The fast parser for a column of type `oid` whose parser is `parser`, or `undefined` to call `parser` on the text. */
export function fastParserFor(oid: number, parser: TypeParser): FastParser | undefined {
  const d = pgTypesDefaults();
  if (d === null) return undefined;
  // text, varchar, numeric, uuid, enums, ...: pg-types hands the text over as it is.
  if (parser === noParse) return readString;
  if (d.get(oid) !== parser) return undefined;
  if (oid === INTERVAL) return (fastInterval ??= makeFastInterval((parser as unknown as { prototype: object }).prototype));
  return FAST_BY_OID.get(oid);
}
