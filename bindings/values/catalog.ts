/**
 * The `types` option from the server's catalog: pgoutput's Type message
 * names a non-built-in type but does not say what it is, so ask once.
 *
 * @example
 * ```ts
 * const { rows } = await client.query(TYPES_QUERY);
 * const values = new ValueDecoder({ types: typesFromCatalog(rows) });
 * ```
 */
import { Oid } from "./oids.ts";
import type { TypeKnowledge } from "./options.ts";

/** Non-built-in types that decode like another type: enums, domains, arrays. */
export const TYPES_QUERY = `SELECT oid, typtype, typbasetype, typelem, typlen FROM pg_catalog.pg_type
WHERE oid >= 16384 AND (typtype IN ('e', 'd') OR (typelem <> 0 AND typlen = -1))`;

export interface CatalogTypeRow {
  oid: number | string;
  typtype: string;
  typbasetype: number | string;
  typelem: number | string;
  typlen: number | string;
}

/** `types` entries from rows of `TYPES_QUERY`: enum → text, domain → its base type, array → its element type. */
export function typesFromCatalog(rows: Iterable<CatalogTypeRow>): Record<number, TypeKnowledge> {
  const out: Record<number, TypeKnowledge> = {};
  for (const r of rows) {
    const oid = Number(r.oid);
    if (r.typtype === "e") out[oid] = { baseType: Oid.text };
    else if (r.typtype === "d") out[oid] = { baseType: Number(r.typbasetype) };
    else if (Number(r.typelem) !== 0 && Number(r.typlen) === -1) out[oid] = { elementType: Number(r.typelem) };
  }
  return out;
}
