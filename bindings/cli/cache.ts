// The one place pgoutput-wasm keeps files between runs: the user cache
// directory, $XDG_CACHE_HOME/pgoutput-wasm (when XDG_CACHE_HOME is an
// absolute path) or ~/.cache/pgoutput-wasm — also as root, so it is in
// root's home then. It holds pristine data directories
// (templates/, made by the development harness, devkit/cluster/template.ts)
// that later runs copy instead of running initdb, shared by every checkout.
// Everything else a run creates is temporary (temp-folders.ts) and removed
// when it ends. `pgoutput-wasm cache path` prints the folder, `cache clean`
// removes it and the temporary folders of runs that have ended (what a run
// killed with its watchdog left); never what a running process uses.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { executesFrom, postmasterIn } from "./processes.ts";
import { FOLDER_KINDS, folderOwner, removeFolder } from "./temp-folders.ts";

/** The cache folder (not created here). */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME;
  const base = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), ".cache");
  return path.join(base, "pgoutput-wasm");
}

/** Total size in bytes of a file or folder (symbolic links not followed). */
function sizeOf(p: string): number {
  const st = fs.lstatSync(p, { throwIfNoEntry: false });
  if (st === undefined) return 0;
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const e of fs.readdirSync(p)) total += sizeOf(path.join(p, e));
  return total;
}

/**
 * How long a run's folder that names no owner is left alone: it may be
 * being set up right now (its owner file is written just after the folder
 * is made; a run killed in between leaves one without).
 */
const OWNERLESS_GRACE_MS = 10 * 60_000;

/** Why a run's temporary folder must stay, or undefined when it can go. */
function keepReason(dir: string, now: number): string | undefined {
  switch (folderOwner(dir)) {
    case "dead":
      return undefined;
    case "alive":
      return "its run is still going";
    case "unknown":
      return "its owner cannot be told (another user's, or another PID namespace's)";
    case "none": {
      // A run ended before it wrote its owner file: gone unless something uses it.
      const pid = postmasterIn(path.join(dir, "data"));
      if (pid !== undefined) return `a server runs in it (pid ${pid})`;
      if (executesFrom(dir)) return "a program runs from it";
      const st = fs.statSync(dir, { throwIfNoEntry: false });
      if (st !== undefined && now - st.mtimeMs < OWNERLESS_GRACE_MS) return "made a moment ago";
      return undefined;
    }
  }
}

export interface Cleaned {
  /** The folders removed. */
  removed: string[];
  bytes: number;
  /** What could not be removed (another user's folder, say), with why. */
  failed: { path: string; reason: string }[];
  /** Runs' folders left in place because they are in use (or may be), with why. */
  kept: { path: string; reason: string }[];
}

/**
 * Removes the cache folder and, from the temp directory, the folders of
 * runs that have ended (their servers stopped first).
 */
export function cleanCache(env: NodeJS.ProcessEnv = process.env): Cleaned {
  const tmp = os.tmpdir();
  const now = Date.now();
  const targets = [cacheDir(env)];
  const kept: Cleaned["kept"] = [];
  for (const name of fs.readdirSync(tmp)) {
    const dir = path.join(tmp, name);
    if (FOLDER_KINDS.test(name)) {
      const reason = keepReason(dir, now);
      if (reason === undefined) targets.push(dir);
      else kept.push({ path: dir, reason });
    }
  }
  const removed: string[] = [];
  const failed: Cleaned["failed"] = [];
  let bytes = 0;
  for (const t of targets) {
    if (!fs.existsSync(t)) continue;
    try {
      const size = sizeOf(t);
      removeFolder(t);
      bytes += size;
      removed.push(t);
    } catch (e) {
      failed.push({ path: t, reason: (e as NodeJS.ErrnoException).code ?? (e as Error).message });
    }
  }
  return { removed, bytes, failed, kept };
}
