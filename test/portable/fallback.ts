/**
 * A page's view of createDecoder() where wasm cannot run: nowasm.html
 * removes WebAssembly before this module loads, csp.html is served with a
 * Content-Security-Policy that forbids compiling wasm. Reports the chosen
 * backend, the fallback reason and a decoded message in `window.__results`.
 */
import { createDecoder, wasmSupport } from "../../bindings/index.ts";
import { encode } from "../../devkit/encoder/encoder.ts";

const reasons: string[] = [];
let result: Record<string, unknown>;
try {
  const decoder = await createDecoder({ onFallback: (r) => reasons.push(r) });
  const begin = encode.begin({ finalLsn: 0x17864c0n, commitTime: 1_700_000_000_123_456n, xid: 742 });
  const msg = decoder.decode(begin.bytes);
  result = { backend: decoder.backend, reasons, support: wasmSupport(), decoded: msg.toJSON() };
} catch (e) {
  result = { error: String(e) };
}
(globalThis as { __results?: unknown }).__results = result;
