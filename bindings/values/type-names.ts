/**
 * A column type's name as PostgreSQL's `format_type(oid, typmod)` spells it,
 * from the type OID and modifier a Relation message carries: `integer`,
 * `character varying(20)`, `numeric(12,2)`, `timestamp(3) with time zone`,
 * `interval day to second(3)`, `text[]`, `bpchar` (no modifier); a user
 * type by the name its Type message (or the catalog) gave, quoted as
 * `quote_identifier()` does and schema-qualified unless it is in `public`
 * (the default search_path). wal2json prints these names, and so do the
 * JSON Lines (`type`).
 *
 * What pgoutput does not carry: its Type message for a domain names the
 * domain's base type (so a domain over int8 is `bigint` here, where
 * format_type() says the domain's name), and for an array of a user type
 * the array type itself (`_mood`): with the catalog's knowledge that it is
 * an array (`known`, e.g. `typesFromCatalog`), it is `mood[]`.
 */
import type { TypeInfo } from "../decoder.ts";
import type { TypeKnowledge } from "./options.ts";
import { Oid, arrayElement, builtinTypes } from "./oids.ts";

/** format_type()'s own spellings; every other built-in type is printed as its `typname`. */
const SPELLED: Partial<Record<string, string>> = {
  bool: "boolean", char: '"char"', int8: "bigint", int2: "smallint", int4: "integer", float4: "real",
  float8: "double precision", bpchar: "character", varchar: "character varying", time: "time without time zone",
  timestamp: "timestamp without time zone", timestamptz: "timestamp with time zone", timetz: "time with time zone",
  varbit: "bit varying",
};

const NAMES = new Map<number, string>(builtinTypes().map(({ name, oid }) => [oid, SPELLED[name] ?? name]));
const TYPNAMES = new Map<number, string>(Object.entries(Oid).map(([name, oid]) => [oid, name]));

/** `interval`'s field masks (INTERVAL_MASK of datetime.h) as intervaltypmodout() prints them. */
const INTERVAL_FIELDS = new Map<number, string>([
  [4, " year"], [2, " month"], [8, " day"], [1024, " hour"], [2048, " minute"], [4096, " second"],
  [6, " year to month"], [8 | 1024, " day to hour"], [8 | 1024 | 2048, " day to minute"], [8 | 1024 | 2048 | 4096, " day to second"],
  [1024 | 2048, " hour to minute"], [1024 | 2048 | 4096, " hour to second"], [2048 | 4096, " minute to second"], [0x7fff, ""],
]);

/** The type modifier as format_type() shows it, for the types that have one worth showing. */
function withTypmod(oid: number, name: string, typmod: number): string {
  if (typmod < 0) return oid === Oid.bpchar ? "bpchar" : name; // bpchar without a modifier is not character(1)
  switch (oid) {
    case Oid.bpchar:
    case Oid.varchar:
      return `${name}(${typmod - 4})`;
    case Oid.bit:
    case Oid.varbit:
      return `${name}(${typmod})`;
    case Oid.numeric: {
      const t = typmod - 4;
      const precision = (t >> 16) & 0xffff;
      const scale = ((t & 0x7ff) ^ 1024) - 1024; // negative scales exist since PostgreSQL 15
      return `numeric(${precision},${scale})`;
    }
    case Oid.time:
    case Oid.timetz:
      return name.replace(/^time/, `time(${typmod})`);
    case Oid.timestamp:
    case Oid.timestamptz:
      return name.replace(/^timestamp/, `timestamp(${typmod})`);
    case Oid.interval: {
      const fields = INTERVAL_FIELDS.get((typmod >> 16) & 0x7fff);
      const precision = typmod & 0xffff;
      return fields === undefined ? name : `${name}${fields}${precision === 0xffff ? "" : `(${precision})`}`;
    }
    default:
      return name;
  }
}

/** The keywords quote_identifier() quotes (every category but unreserved; PostgreSQL 15's pg_get_keywords()). */
const KEYWORDS = new Set(
  ("all analyse analyze and any array as asc asymmetric authorization between bigint binary bit boolean both case cast char character check " +
    "coalesce collate collation column concurrently constraint create cross current_catalog current_date current_role current_schema current_time " +
    "current_timestamp current_user dec decimal default deferrable desc distinct do else end except exists extract false fetch float for foreign " +
    "freeze from full grant greatest group grouping having ilike in initially inner inout int integer intersect interval into is isnull join lateral " +
    "leading least left like limit localtime localtimestamp national natural nchar none normalize not notnull null nullif numeric offset on only or " +
    "order out outer overlaps overlay placing position precision primary real references returning right row select session_user setof similar " +
    "smallint some substring symmetric table tablesample then time timestamp to trailing treat trim true union unique user using values varchar " +
    "variadic verbose when where window with xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot " +
    "xmlserialize xmltable").split(" "),
);

/** quote_identifier(): as it is when lower-case letters, digits and `_` (not first a digit) and not a keyword, else double-quoted. */
export function quoteIdentifier(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) && !KEYWORDS.has(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

function userTypeName(info: TypeInfo, name = info.typeName): string {
  const quoted = quoteIdentifier(name);
  return info.namespace === "" || info.namespace === "public" || info.namespace === "pg_catalog" ? quoted : `${quoteIdentifier(info.namespace)}.${quoted}`;
}

/**
 * format_type(typeId, typeModifier); a user type by `types` (Type
 * messages), else its OID as text. `known`: what the catalog says of a
 * type (an array's element type).
 */
export function typeName(typeId: number, typeModifier: number, types?: ReadonlyMap<number, TypeInfo>, known?: (typeId: number) => TypeKnowledge | undefined): string {
  const builtin = NAMES.get(typeId);
  if (builtin !== undefined) return withTypmod(typeId, builtin, typeModifier);
  const element = arrayElement(typeId);
  if (element !== 0) return `${withTypmod(element, NAMES.get(element)!, typeModifier)}[]`;
  const info = types?.get(typeId);
  const elementType = known?.(typeId)?.elementType;
  if (elementType !== undefined) {
    // An array of a user type: named after its element (the Type message of the element, else the array's name without its `_`).
    const elementInfo = types?.get(elementType);
    if (elementInfo !== undefined || NAMES.has(elementType)) return `${typeName(elementType, typeModifier, types, known)}[]`;
    if (info !== undefined && info.typeName.startsWith("_")) return `${userTypeName(info, info.typeName.slice(1))}[]`;
  }
  if (info === undefined) return String(typeId);
  // A domain: pgoutput's Type message names its base type, in pg_catalog (namespace "").
  const base = info.namespace === "" ? (Oid as Record<string, number | undefined>)[info.typeName] : undefined;
  if (base !== undefined) return typeName(base, -1);
  return userTypeName(info);
}

/** `pg_type.typname` (what wal2json prints with include-typmod off): `int4`, `_text`, a user type's name unqualified. */
export function typname(typeId: number, types?: ReadonlyMap<number, TypeInfo>): string {
  return TYPNAMES.get(typeId) ?? types?.get(typeId)?.typeName ?? String(typeId);
}
