/**
 * The portable cases in a browser page (test/portable/browser.html), plus
 * the release.wasm file through WebAssembly.compileStreaming. Built by
 * tsconfig.browser.json into build/browser/; driven by browser.run.mjs,
 * which reads `window.__results`.
 */
import { cases, releaseWasmCase } from "./cases.ts";
import { runCases, type Outcome } from "./harness.ts";

const lines: string[] = [];
const outcome: Outcome = await runCases(
  {
    ...cases,
    // build/browser/test/portable/ → build/release.wasm, served as application/wasm
    "release.wasm file via WebAssembly.compileStreaming(fetch())": releaseWasmCase(() =>
      WebAssembly.compileStreaming(fetch(new URL("../../../release.wasm", import.meta.url)))),
  },
  (line) => {
    lines.push(line);
    console.log(line);
  },
);
(globalThis as { __results?: unknown }).__results = { ...outcome, lines, userAgent: navigator.userAgent };
