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

// The decoders.
export { BaselineDecoder, WasmDecoder };
export { createDecoder, type BackendChoice, type CreateDecoderOptions } from "./create-decoder.ts";
export { wasmSupport, type WasmSupport } from "./runtime.ts";
export type { Batch, DecodeOptions, DecoderOptions, PgoutputDecoder, TypeInfo } from "./decoder.ts";
export type { ProtocolVersion } from "./layout.ts";
// Messages, relations and tuples.
export type {
  Begin, BeginPrepare, Commit, CommitPrepared, Delete, Insert, Message, MessageBase, MessageKind, OldTupleType, Origin,
  PgoutputMessage, Prepare, RelationColumn, RelationMessage, Replayed, ReplicaIdentity, RollbackPrepared, StreamAbort,
  StreamCommit, StreamPrepare, StreamStart, StreamStop, Streamed, Truncate, TypeMessage, Update,
} from "./messages.ts";
export { Relation } from "./relation.ts";
export type { ColumnKind, ColumnRef, JsonColumn, MaterializedColumn, Tuple, UnchangedToast } from "./tuple.ts";
export { unchangedToast } from "./tuple.ts";
// Errors, LSNs, timestamps.
export { PgoutputError, isPgoutputError, type PgoutputErrorCode } from "./errors.ts";
export { compareLsn, formatLsn, parseLsn } from "./lsn.ts";
export { timestampToDate, timestampToISO } from "./time.ts";
// The walsender's other payloads, and the standby status update (sans-IO streaming).
export { BackendMessage, PrimaryKeepalive, encodeStandbyStatusUpdate, type StandbyStatus, type WalMessage } from "./walsender.ts";
// Typed values.
export {
  ValueDecoder, Oid, TYPES_QUERY, typesFromCatalog, TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, INTERVAL_INFINITY, INTERVAL_NEG_INFINITY,
  type ValueOptions, type TypeOverride, type TypeKnowledge, type Interval, type TimeTz, type PgArray, type CatalogTypeRow,
} from "./values/index.ts";
