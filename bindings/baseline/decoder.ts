/**
 * The pure-TS backend: the shared tape decoder (kernel/decoder.ts) driving
 * the kernel's TS build (kernel.ts: its source compiled by tsc). Same tape, same views,
 * same values and errors as the wasm backend; it needs no WebAssembly, so it
 * runs under `node --jitless` or where the global is missing, and it is the
 * benchmark reference: the kernel's algorithm in JS.
 *
 * Nothing here, nor in what it imports, touches the WebAssembly global
 * (scripts/pack-check.mjs runs it with the global deleted).
 *
 * @example
 * ```ts
 * const decoder = new BaselineDecoder();
 * for (const msg of decoder.push(chunk)) {
 *   if (msg.kind === "Insert") console.log(msg.relation?.name, msg.newTuple.toJSON());
 * }
 * ```
 */
import type { DecoderOptions } from "../decoder.ts";
import { TapeDecoder } from "../kernel/decoder.ts";
import { createKernel } from "./kernel.ts";

export class BaselineDecoder extends TapeDecoder {
  readonly backend = "baseline" as const;

  constructor(options: DecoderOptions = {}) {
    super(options, createKernel);
  }

  fork(): BaselineDecoder {
    return new BaselineDecoder(this.options);
  }
}
