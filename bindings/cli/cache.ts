// The one place pgoutput-wasm keeps files between runs: the user cache
// directory, $XDG_CACHE_HOME/pgoutput-wasm (when XDG_CACHE_HOME is an
// absolute path) or ~/.cache/pgoutput-wasm — also as root, so it is in
// root's home then. It holds pristine data directories
// (templates/, made by the development harness, devkit/cluster/template.ts)
// that later runs copy instead of running initdb, shared by every checkout.
// Everything else a run creates is temporary and removed when it ends.
// `pgoutput-wasm cache path` prints the folder, `cache clean` removes it
// (and what older versions left in the temp directory).

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** The cache folder (not created here). */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME;
  const base = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), ".cache");
  return path.join(base, "pgoutput-wasm");
}

/** What versions before the cache folder left in the temp directory (template and binary copies). */
const LEGACY = /^pgoutputwasm-(template|native)-/;

/** Total size in bytes of a file or folder (symbolic links not followed). */
function sizeOf(p: string): number {
  const st = fs.lstatSync(p, { throwIfNoEntry: false });
  if (st === undefined) return 0;
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const e of fs.readdirSync(p)) total += sizeOf(path.join(p, e));
  return total;
}

export interface Cleaned {
  /** The folders removed. */
  removed: string[];
  bytes: number;
  /** What could not be removed (another user's folder, say), with why. */
  failed: { path: string; reason: string }[];
}

/** Removes the cache folder and the legacy temp-directory copies. */
export function cleanCache(env: NodeJS.ProcessEnv = process.env): Cleaned {
  const tmp = os.tmpdir();
  const targets = [cacheDir(env), ...fs.readdirSync(tmp).filter((n) => LEGACY.test(n)).map((n) => path.join(tmp, n))];
  const removed: string[] = [];
  const failed: Cleaned["failed"] = [];
  let bytes = 0;
  for (const t of targets) {
    if (!fs.existsSync(t)) continue;
    try {
      const size = sizeOf(t);
      fs.rmSync(t, { recursive: true, force: true });
      bytes += size;
      removed.push(t);
    } catch (e) {
      failed.push({ path: t, reason: (e as NodeJS.ErrnoException).code ?? (e as Error).message });
    }
  }
  return { removed, bytes, failed };
}
