/**
 * The one place a backend is chosen: `createDecoder` (the package's entry),
 * `replicate()` and the pg-logical-replication plugin all come here, so
 * "auto", the fallback and its reason mean the same everywhere.
 *
 * `createDecoderSync` exists because the compat plugin's `decoder` getter is
 * synchronous (pg-logical-replication calls `parse` without awaiting); it
 * compiles the kernel synchronously, which hosts allow for a module this small.
 */
import type { DecoderOptions, PgoutputDecoder } from "./decoder.ts";
import { BaselineDecoder } from "./baseline/decoder.ts";
import { WasmDecoder } from "./wasm/decoder.ts";
import { wasmSupport } from "./runtime.ts";

/** A backend by name, or a decoder to use as it is. */
export type BackendChoice = "wasm" | "baseline" | "auto" | PgoutputDecoder;

export interface CreateDecoderOptions extends DecoderOptions {
  /**
   * `wasm`, `baseline`, or `auto` (default): wasm where WebAssembly works,
   * else the baseline. A decoder instance is returned as it is (it keeps its
   * own options).
   */
  backend?: BackendChoice;
  /**
   * The kernel to use instead of the inlined copy: its bytes or a compiled
   * module, e.g. from the package's `pgoutput-wasm/release.wasm` file with
   * `WebAssembly.compileStreaming(fetch(url))`.
   */
  wasm?: BufferSource | WebAssembly.Module;
  /** With `auto`: called with the reason when the baseline is used instead of wasm. */
  onFallback?: (reason: string) => void;
}

/** Whether `choice` is a backend `createDecoder` accepts (facades check it first to throw their own error type). */
export function isBackendChoice(choice: unknown): choice is BackendChoice {
  if (choice === "wasm" || choice === "baseline" || choice === "auto") return true;
  return typeof choice === "object" && choice !== null && typeof (choice as PgoutputDecoder).decodeCopyData === "function";
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
  const plan = choose(options);
  if (typeof plan === "object") return plan;
  if (plan === "baseline") return new BaselineDecoder(options);
  if (plan === "wasm") return WasmDecoder.create(options, options.wasm);
  try {
    return await WasmDecoder.create(options, options.wasm);
  } catch (e) {
    return fallBack(options, e);
  }
}

/** `createDecoder`, compiling synchronously: for callers that cannot await. */
export function createDecoderSync(options: CreateDecoderOptions = {}): PgoutputDecoder {
  const plan = choose(options);
  if (typeof plan === "object") return plan;
  if (plan === "baseline") return new BaselineDecoder(options);
  const wasm = options.wasm;
  const make = () => new WasmDecoder(options, wasm === undefined || wasm instanceof WebAssembly.Module ? wasm : new WebAssembly.Module(wasm));
  if (plan === "wasm") return make();
  try {
    return make();
  } catch (e) {
    return fallBack(options, e);
  }
}

/**
 * What to build: a given decoder, the baseline, wasm (failing if it does not
 * load), or `try-wasm` (the baseline if it does not). Checked before any
 * compile, so an unsupported runtime costs no exception.
 */
function choose(options: CreateDecoderOptions): PgoutputDecoder | "baseline" | "wasm" | "try-wasm" {
  const backend = options.backend ?? "auto";
  if (!isBackendChoice(backend)) throw new TypeError(`backend must be "wasm", "baseline", "auto" or a decoder, not ${String(backend)}`);
  if (typeof backend === "object" || backend === "baseline") return backend;
  const support = wasmSupport();
  if (support.supported) return backend === "wasm" ? "wasm" : "try-wasm";
  if (backend === "wasm") throw new Error(`pgoutput-wasm: the wasm backend cannot run here: ${support.reason}`);
  options.onFallback?.(support.reason);
  return "baseline";
}

function fallBack(options: CreateDecoderOptions, e: unknown): PgoutputDecoder {
  // e.g. a Content-Security-Policy without 'wasm-unsafe-eval' refuses the compile
  options.onFallback?.(`the wasm kernel failed to load: ${e instanceof Error ? e.message : String(e)}`);
  return new BaselineDecoder(options);
}
