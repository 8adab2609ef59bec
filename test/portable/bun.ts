/**
 * The portable cases under Bun: `bun run test/portable/bun.ts`. Prints
 * failures and `N passed, N failed`; exits 1 on any failure.
 */
import { cases, releaseWasmCase } from "./cases.ts";
import { runCases } from "./harness.ts";

declare const Bun: { version: string; file(path: URL): { arrayBuffer(): Promise<ArrayBuffer> } };

console.log(`bun ${Bun.version}:`);
const outcome = await runCases(
  {
    ...cases,
    "release.wasm file via Bun.file": releaseWasmCase(async () => new Uint8Array(await Bun.file(new URL("../../build/release.wasm", import.meta.url)).arrayBuffer())),
  },
  (line) => console.log(line),
);
if (outcome.failed > 0) process.exitCode = 1;
