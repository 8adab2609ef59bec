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
import type { DecoderOptions, PgoutputDecoder } from "./decoder.ts";
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

export interface CreateDecoderOptions extends DecoderOptions {
  /** `wasm`, `baseline`, or `auto` (default): wasm where WebAssembly works, else the baseline. */
  backend?: "wasm" | "baseline" | "auto";
}

/** A decoder: the wasm one where WebAssembly is available (or asked for), else the pure-TS baseline. */
export async function createDecoder(options: CreateDecoderOptions = {}): Promise<PgoutputDecoder> {
  const backend = options.backend ?? "auto";
  if (backend === "baseline") return new BaselineDecoder(options);
  if (backend === "wasm") return WasmDecoder.create(options);
  try {
    return await WasmDecoder.create(options);
  } catch {
    return new BaselineDecoder(options);
  }
}
