/**
 * The backends every shared test runs against: the wasm decoder and the
 * pure-TS baseline. A test does `for (const backend of backends) describe(backend.name, ...)`.
 */
import type { DecoderOptions, PgoutputDecoder } from "../../bindings/decoder.ts";
import { BaselineDecoder } from "../../bindings/baseline/decoder.ts";
import { WasmDecoder } from "../../bindings/wasm/decoder.ts";

export interface Backend {
  name: "wasm" | "baseline";
  create(options?: DecoderOptions): Promise<PgoutputDecoder>;
}

export const backends: Backend[] = [
  { name: "wasm", create: (options) => WasmDecoder.create(options) },
  { name: "baseline", create: async (options) => new BaselineDecoder(options) },
];
