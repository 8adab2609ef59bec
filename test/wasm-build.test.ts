/**
 * The wasm kernel's release build, as `npm run build:wasm` makes it, says
 * nothing: a warning on every build (binaryen's "Last converge was
 * suboptimal." with `converge`, which also made the module larger) trains
 * people to ignore the build's output.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "pgoutputwasm-asc-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("asc --target release builds the kernel without a word on stdout or stderr", () => {
  const out = join(dir, "release.wasm");
  const r = spawnSync(process.execPath, [join(ROOT, "node_modules", "assemblyscript", "bin", "asc.js"), "--config", "asconfig.json", "--target", "release", "--outFile", out, "--textFile", join(dir, "release.wat")], { cwd: ROOT, encoding: "utf8" });
  expect(r.status).toBe(0);
  expect(`${r.stdout}${r.stderr}`).toBe("");
  expect(statSync(out).size).toBeGreaterThan(4096);
}, 120_000);
