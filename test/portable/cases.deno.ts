/**
 * The portable cases under Deno: `deno test --allow-read=build test/portable/cases.deno.ts`
 * (read access only for the release.wasm case; the inlined kernel needs no
 * permission). One Deno.test per case; the last prints `N passed, N failed`.
 */
import { cases, releaseWasmCase } from "./cases.ts";
import { counted, summary, type Cases } from "./harness.ts";

const all: Cases = {
  ...cases,
  "release.wasm file via Deno.readFile": releaseWasmCase(() => Deno.readFile(new URL("../../build/release.wasm", import.meta.url))),
};
const count = { passed: 0, failed: 0 };

for (const [name, fn] of Object.entries(all)) {
  Deno.test(name, counted(fn, count));
}

Deno.test("summary", () => {
  console.log(`deno ${Deno.version.deno}:\n${summary(count)}`);
});
