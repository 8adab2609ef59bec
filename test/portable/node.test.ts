/**
 * The portable cases under Node, through vitest (one `it` per case), plus
 * the release.wasm file read with node:fs. Prints `N passed, N failed`.
 */
import { readFile } from "node:fs/promises";
import { afterAll, it } from "vitest";
import { cases, releaseWasmCase } from "./cases.ts";
import { counted, summary, type Cases } from "./harness.ts";

const all: Cases = {
  ...cases,
  "release.wasm file via node:fs": releaseWasmCase(async () => new Uint8Array(await readFile(new URL("../../build/release.wasm", import.meta.url)))),
};
const count = { passed: 0, failed: 0 };

for (const [name, fn] of Object.entries(all)) {
  it(name, counted(fn, count));
}

afterAll(() => {
  console.log(`node ${process.version}:\n${summary(count)}`);
});
