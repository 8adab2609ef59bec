// Runs in the temporary consumer project against the installed tarball, under
// Node, Deno and Bun (scripts/pack-check.mjs). Decodes the hand-built
// messages of wire.cjs with both backends and with the package's release.wasm
// file. Argument: the backend createDecoder() must pick ("wasm" by default;
// "baseline" when run where WebAssembly is missing, e.g. node --jitless).
import { readFile } from "node:fs/promises";
import wire from "./wire.cjs";
import { BaselineDecoder, WasmDecoder, createDecoder, formatLsn, timestampToISO, wasmSupport } from "pgoutput-wasm";

const args = globalThis.Deno?.args ?? process.argv.slice(2);
const want = args[0] ?? "wasm";

const { messages, EXPECTED, summarize } = wire;

function check(decoder) {
  const got = summarize(decoder.decodeBatch(messages), { formatLsn, timestampToISO });
  if (got !== EXPECTED) throw new Error(`${decoder.backend}: got ${got}`);
  return got;
}

const reasons = [];
const auto = await createDecoder({ onFallback: (r) => reasons.push(r) });
if (auto.backend !== want) throw new Error(`createDecoder() chose ${auto.backend}, expected ${want} (${reasons.join("; ")})`);
check(auto);
check(new BaselineDecoder());
if (want === "wasm") {
  check(await WasmDecoder.create());
  const file = new URL(import.meta.resolve("pgoutput-wasm/release.wasm"));
  check(await createDecoder({ backend: "wasm", wasm: new Uint8Array(await readFile(file)) }));
} else {
  const support = wasmSupport();
  if (support.supported || reasons.length !== 1 || reasons[0] !== support.reason) throw new Error(`no reason given: ${JSON.stringify({ support, reasons })}`);
}
console.log(`ok: createDecoder() → ${auto.backend}${reasons.length ? ` (${reasons[0]})` : ""}`);
