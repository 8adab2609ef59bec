/**
 * Typed column values: text (`t`) and binary (`b`) columns of every built-in
 * type to exact JS values, the same value from either format. See
 * `options.ts` for the representation of each type and `decoder.ts` for the
 * order in which overrides apply.
 *
 * @example
 * ```ts
 * import { ValueDecoder, Oid } from "./values/index.ts";
 * const values = new ValueDecoder();
 * values.fromText(Oid.int8, "9223372036854775807"); // 9223372036854775807n
 * values.fromText(Oid.timestamptz, "2024-02-29 04:05:06.789+05:30"); // 1709159706789000n
 * ```
 */
export { ValueDecoder, type Format } from "./decoder.ts";
export type { ValueOptions, TypeOverride, TypeKnowledge, ResolvedOptions } from "./options.ts";
export type { Parse } from "./bytes.ts";
export { Oid, arrayElement, arrayOf, builtinTypes } from "./oids.ts";
export { lowerBounds, type PgArray } from "./arrays.ts";
export { TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, INTERVAL_INFINITY, INTERVAL_NEG_INFINITY, type Interval } from "./text/datetime.ts";
export type { TimeTz } from "./represent.ts";
export { TYPES_QUERY, typesFromCatalog, type CatalogTypeRow } from "./catalog.ts";
export {
  columnReader, sourceOf, tupleObject, tupleValues, unchangedColumnNames, unresolvedUnchanged,
  type ColumnReader, type TupleValuesOptions,
} from "./toast.ts";
export { unchangedToast, type UnchangedToast } from "../tuple.ts";
