/**
 * Every error out of a value parser becomes a `PgoutputError` here, at the
 * one place values are dispatched (`ValueDecoder.text` / `.binary`): a
 * built-in parser's INVALID_VALUE gains the type OID and format; anything
 * else (JSON.parse's SyntaxError, a RangeError, a user parser's error) is
 * wrapped as INVALID_VALUE with the original as `cause`. The tuple then adds
 * the column (`inColumn`). Parsers keep no state across calls, so the
 * decoder stays usable after such an error.
 */
import { PgoutputError } from "../errors.ts";
import type { Relation } from "../relation.ts";

export function valueFailure(e: unknown, typeId: number, format: "text" | "binary"): PgoutputError {
  if (e instanceof PgoutputError) return e.typeId !== undefined ? e : e.withDetails({ typeId, format });
  const why = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return new PgoutputError(`value of type ${typeId} (${format} format) does not parse: ${why}`, {
    code: "INVALID_VALUE",
    field: "value",
    typeId,
    format,
    cause: e,
  });
}

/** The error of column `index` (a value error from `valueFailure`, or anything else thrown below it). */
export function inColumn(e: unknown, relation: Relation | undefined, index: number, typeId: number, format: "text" | "binary"): PgoutputError {
  const error = valueFailure(e, typeId, format);
  return error.withDetails({ column: index, columnName: relation?.columns[index]?.name });
}
