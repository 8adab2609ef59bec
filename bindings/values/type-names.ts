/**
 * A column type's name as PostgreSQL's `format_type()` spells it, from the
 * type OID and modifier a Relation message carries: `integer`,
 * `character varying(20)`, `numeric(12,2)`, `timestamp(3) with time zone`,
 * `text[]`; a user type by the name its Type message (or the catalog) gave,
 * schema-qualified unless it is in `public`. wal2json prints these names,
 * and so do the JSON Lines (`type`).
 */
import type { TypeInfo } from "../decoder.ts";
import { Oid, arrayElement, builtinTypes } from "./oids.ts";

/** format_type()'s own spellings; every other built-in type is printed as its `typname`. */
const SPELLED: Partial<Record<string, string>> = {
  bool: "boolean", char: '"char"', int8: "bigint", int2: "smallint", int4: "integer", float4: "real",
  float8: "double precision", bpchar: "character", varchar: "character varying", time: "time without time zone",
  timestamp: "timestamp without time zone", timestamptz: "timestamp with time zone", timetz: "time with time zone",
  varbit: "bit varying",
};

const NAMES = new Map<number, string>(builtinTypes().map(({ name, oid }) => [oid, SPELLED[name] ?? name]));

/** The type modifier as format_type() shows it, for the types that have one worth showing. */
function withTypmod(oid: number, name: string, typmod: number): string {
  if (typmod < 0) return name;
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
    default:
      return name;
  }
}

function quoteIdentIfNeeded(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/** format_type(typeId, typeModifier); a user type by `types` (Type messages), else its OID as text. */
export function typeName(typeId: number, typeModifier: number, types?: ReadonlyMap<number, TypeInfo>): string {
  const builtin = NAMES.get(typeId);
  if (builtin !== undefined) return withTypmod(typeId, builtin, typeModifier);
  const element = arrayElement(typeId);
  if (element !== 0) return `${withTypmod(element, NAMES.get(element)!, typeModifier)}[]`;
  const info = types?.get(typeId);
  if (info === undefined) return String(typeId);
  const name = quoteIdentIfNeeded(info.typeName);
  return info.namespace === "" || info.namespace === "public" || info.namespace === "pg_catalog" ? name : `${quoteIdentIfNeeded(info.namespace)}.${name}`;
}
