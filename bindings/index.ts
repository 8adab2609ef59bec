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
import { wasmSupport } from "./runtime.ts";

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
export { wasmSupport, type WasmSupport } from "./runtime.ts";
export { BackendMessage, PrimaryKeepalive, encodeStandbyStatusUpdate, noticeFields, type StandbyStatus, type WalMessage } from "./walsender.ts";
export {
  ValueDecoder, Oid, TYPES_QUERY, typesFromCatalog, lowerBounds, tupleObject, tupleValues, unchangedColumnNames,
  TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, INTERVAL_INFINITY, INTERVAL_NEG_INFINITY,
  type ValueOptions, type TypeOverride, type TypeKnowledge, type Interval, type TimeTz, type PgArray, type CatalogTypeRow,
} from "./values/index.ts";
export { toJsonValue } from "./values/json.ts";

export interface CreateDecoderOptions extends DecoderOptions {
  /** `wasm`, `baseline`, or `auto` (default): wasm where WebAssembly works, else the baseline. */
  backend?: "wasm" | "baseline" | "auto";
  /**
   * The kernel to use instead of the inlined copy: its bytes or a compiled
   * module, e.g. from the package's `pgoutput-wasm/release.wasm` file with
   * `WebAssembly.compileStreaming(fetch(url))`.
   */
  wasm?: BufferSource | WebAssembly.Module;
  /** With `auto`: called with the reason when the baseline is used instead of wasm. */
  onFallback?: (reason: string) => void;
}

/**
 * A decoder: the wasm one where WebAssembly is available (or asked for), else
 * the pure-TS baseline. `decoder.backend` tells which; with `auto`,
 * `onFallback` receives why the baseline was chosen (`wasmSupport()` tells
 * it beforehand). With `backend: "wasm"` an unsupported runtime is an error.
 *
 * @example
 * ```ts
 * const decoder = await createDecoder({ onFallback: (why) => console.warn(`baseline decoder: ${why}`) });
 * console.log(decoder.backend); // "wasm" or "baseline"
 * ```
 */
export async function createDecoder(options: CreateDecoderOptions = {}): Promise<PgoutputDecoder> {
  const backend = options.backend ?? "auto";
  if (backend === "baseline") return new BaselineDecoder(options);
  const support = wasmSupport();
  if (backend === "wasm") {
    if (!support.supported) throw new Error(`pgoutput-wasm: the wasm backend cannot run here: ${support.reason}`);
    return WasmDecoder.create(options, options.wasm);
  }
  let reason: string;
  if (support.supported) {
    try {
      return await WasmDecoder.create(options, options.wasm);
    } catch (e) {
      // e.g. a Content-Security-Policy without 'wasm-unsafe-eval' refuses the compile
      reason = `the wasm kernel failed to load: ${e instanceof Error ? e.message : String(e)}`;
    }
  } else {
    reason = support.reason;
  }
  options.onFallback?.(reason);
  return new BaselineDecoder(options);
}
