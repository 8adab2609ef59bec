/**
 * The wasm backend: the shared tape decoder (kernel/decoder.ts) driving an
 * instance of the wasm kernel (assembly/index.ts, inlined as
 * base64 by the build; module.ts compiles it).
 */
import type { DecoderOptions } from "../decoder.ts";
import { TapeDecoder } from "../kernel/decoder.ts";
import { instantiate, kernelModule, kernelModuleAsync } from "./module.ts";

export class WasmDecoder extends TapeDecoder {
  readonly backend = "wasm" as const;

  readonly #module: WebAssembly.Module;

  /** Synchronous construction (compiles the inlined kernel on first use). See also `WasmDecoder.create`. */
  constructor(options: DecoderOptions = {}, module: WebAssembly.Module = kernelModule()) {
    super(options, () => instantiate(module));
    this.#module = module;
  }

  fork(): WasmDecoder {
    return new WasmDecoder(this.options, this.#module);
  }

  /** Compiles asynchronously (or uses the given wasm bytes or module) and returns a decoder. */
  static async create(options?: DecoderOptions, source?: BufferSource | WebAssembly.Module): Promise<WasmDecoder> {
    return new WasmDecoder(options, await kernelModuleAsync(source));
  }
}
