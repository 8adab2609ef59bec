/**
 * pgoutput-wasm: a decoder for PostgreSQL's logical replication stream
 * (the `pgoutput` plugin, protocol versions 1-4).
 *
 * @example
 * ```ts
 * import { createDecoder, formatLsn } from "pgoutput-wasm";
 * const decoder = await createDecoder();
 * const batch = decoder.decodeBatch(rows.map((r) => r.data));
 * for (const msg of batch) {
 *   if (msg.kind === "Commit") console.log("commit at", formatLsn(msg.commitLsn));
 * }
 * ```
 */
import { BaselineDecoder } from "./baseline/decoder.ts";
import { WasmDecoder } from "./wasm/decoder.ts";

export type { Batch, DecodeOptions, DecoderOptions, PgoutputDecoder, TypeInfo } from "./decoder.ts";
export type * from "./messages.ts";
export { MessageTag, kindOfTag } from "./messages.ts";
export { Relation } from "./relation.ts";
export type { ColumnKind, ColumnRef, JsonColumn, MaterializedColumn, Tuple, UnchangedToast } from "./tuple.ts";
export { unchangedToast } from "./tuple.ts";
export { PgoutputError, isPgoutputError, type PgoutputErrorCode } from "./errors.ts";
export { compareLsn, formatLsn, parseLsn, INVALID_LSN } from "./lsn.ts";
export { POSTGRES_EPOCH_US, fromPostgresTimestamp, timestampToDate, timestampToISO, toPostgresTimestamp } from "./time.ts";
export { BaselineDecoder, WasmDecoder };
export { createDecoder, type BackendChoice, type CreateDecoderOptions } from "./create-decoder.ts";
export { wasmSupport, type WasmSupport } from "./runtime.ts";
export { BackendMessage, PrimaryKeepalive, encodeStandbyStatusUpdate, noticeFields, type StandbyStatus, type WalMessage } from "./walsender.ts";
export {
  ValueDecoder, Oid, TYPES_QUERY, typesFromCatalog, lowerBounds, tupleObject, tupleValues, unchangedColumnNames,
  TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, INTERVAL_INFINITY, INTERVAL_NEG_INFINITY,
  type ValueOptions, type TypeOverride, type TypeKnowledge, type Interval, type TimeTz, type PgArray, type CatalogTypeRow,
} from "./values/index.ts";
export { toJsonValue } from "./values/json.ts";
// JSON Lines of changes (the CLI's `decode --changes` / `tail` lines) as bytes; decoders made with changeValueOptions().
export { JsonLinesWriter, changesToJsonLines, type JsonLinesOptions } from "./jsonl/writer.ts";
export { changeValueOptions } from "./jsonl/json-text.ts";
export { Records, type RecordInfo, type RecordKind } from "./pipeline/records.ts";
export { StreamResequencer } from "./pipeline/resequence.ts";
