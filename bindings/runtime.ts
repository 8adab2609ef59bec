/**
 * Whether this runtime can run the wasm kernel, and why not when it cannot.
 * `createDecoder()` asks this before choosing its backend; it checks only
 * ES globals (`WebAssembly`, `atob`), so it works the same in Node, Deno,
 * Bun and browsers.
 *
 * The check validates the kernel itself, so it also fails where a
 * WebAssembly feature the kernel was built with (e.g. SIMD) is missing. It
 * cannot see a Content-Security-Policy that forbids compiling; for that
 * `createDecoder()` falls back when the compile itself is refused.
 *
 * @example
 * ```ts
 * const support = wasmSupport();
 * if (!support.supported) console.warn(`pgoutput-wasm: pure-TS decoder (${support.reason})`);
 * ```
 */
import { wasmBase64 } from "./wasm-inline.ts";

/** The outcome of `wasmSupport()`. */
export type WasmSupport = { readonly supported: true } | { readonly supported: false; readonly reason: string };

// The verdict, for the WebAssembly object it was found with (a test or a
// sandbox may remove or replace the global later).
let checked: { wasm: unknown; verdict: WasmSupport } | undefined;

/** Whether the wasm kernel can run here; when not, a `reason` for logs and errors. */
export function wasmSupport(): WasmSupport {
  const wasm = (globalThis as { WebAssembly?: typeof WebAssembly }).WebAssembly;
  if (checked === undefined || checked.wasm !== wasm) checked = { wasm, verdict: check(wasm) };
  return checked.verdict;
}

function check(wasm: typeof WebAssembly | undefined): WasmSupport {
  if (typeof wasm !== "object" || wasm === null) {
    return { supported: false, reason: "WebAssembly is not available in this runtime" };
  }
  for (const name of ["validate", "compile", "Module", "Instance"] as const) {
    if (typeof wasm[name] !== "function") return { supported: false, reason: `WebAssembly.${name} is not available in this runtime` };
  }
  if (typeof atob !== "function") return { supported: false, reason: "atob is not available to decode the inlined kernel" };
  let valid: boolean;
  try {
    valid = wasm.validate(kernelBytes());
  } catch (e) {
    return { supported: false, reason: `WebAssembly.validate failed: ${String(e)}` };
  }
  if (!valid) {
    return { supported: false, reason: "this runtime's WebAssembly does not support a feature the kernel uses (e.g. SIMD)" };
  }
  return { supported: true };
}

function kernelBytes(): Uint8Array<ArrayBuffer> {
  const text = atob(wasmBase64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}
