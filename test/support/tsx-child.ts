import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/**
 * The environment of a child run with tsx (`node --import tsx`): TMPDIR a
 * folder of its own, where tsx keeps its cache (`tsx-<uid>`), removed by
 * `remove()`, so that the test leaves nothing in the temp dir.
 */
export function tsxChildEnv(): { env: NodeJS.ProcessEnv; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pgoutput-wasm-tsx-"));
  return { env: { ...process.env, TMPDIR: dir }, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
