// Data directories from a template instead of initdb: initdb costs 0.7-2.5 s
// of CPU (more on a busy 2-core machine) and the test suites start dozens of
// clusters, while copying a pristine initdb'ed directory costs ~0.1 s.
// Templates live in the user cache folder (bindings/cli/cache.ts:
// <cache>/templates/pg<major>-<key>), one per PostgreSQL version string,
// binary size and OS user, so every checkout shares them; made once
// (atomically, so concurrent processes are fine) and reused by later runs;
// `pgoutput-wasm cache clean` removes them. Any trouble falls back to a
// plain initdb. The shipped CLI starts one server per run, so this stays out
// of the package.

import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { cacheDir } from "../../bindings/cli/cache.ts";
import { execFileAsync, giveToServer, type RunAs } from "../../bindings/cli/run-as.ts";
import { initdb } from "../../bindings/cli/server.ts";
import { makeTempFolder, removeTempFolder } from "../../bindings/cli/temp-folders.ts";

const templates = new Map<string, Promise<string | undefined>>();

/** What identifies a data directory's format: the binaries' version string and size, and the owner. */
async function templateKey(bin: string, runAs: RunAs): Promise<string> {
  const postgres = path.join(bin, "postgres");
  const { stdout } = await execFileAsync(postgres, ["--version"], { timeoutMs: 30_000 });
  return createHash("sha256").update(`${stdout.trim()}\0${fs.statSync(postgres).size}\0${runAs.uid}\0v3`).digest("hex").slice(0, 12);
}

async function makeTemplate(major: number, bin: string, runAs: RunAs): Promise<string | undefined> {
  const root = path.join(cacheDir(), "templates", `pg${major}-${await templateKey(bin, runAs)}`);
  const ready = path.join(root, "data", "PG_VERSION");
  if (fs.existsSync(ready) && fs.readFileSync(ready, "utf8").trim() === String(major)) return path.join(root, "data");
  // initdb runs as the server's OS user, who (as root) cannot enter root's ~/.cache: it writes to a
  // temporary folder; we copy the result into the cache under a private name, then rename it into
  // place (another process may win the race, which is fine: its copy is as good).
  const work = makeTempFolder(`initdb-pg${major}`);
  const staging = `${root}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    giveToServer(runAs, work);
    await initdb(bin, runAs, path.join(work, "data"));
    fs.mkdirSync(staging, { recursive: true });
    await execFileAsync("cp", ["-a", path.join(work, "data"), path.join(staging, "data")]);
    try {
      fs.renameSync(staging, root);
    } catch {
      /* another process won */
    }
    return fs.existsSync(ready) ? path.join(root, "data") : undefined;
  } catch {
    return undefined;
  } finally {
    removeTempFolder(work);
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

function templateFor(major: number, bin: string, runAs: RunAs): Promise<string | undefined> {
  const id = `${major}\0${bin}\0${runAs.uid}`;
  let p = templates.get(id);
  if (!p) {
    p = makeTemplate(major, bin, runAs).catch(() => undefined);
    templates.set(id, p);
  }
  return p;
}

/** Creates `dataDir` as a copy of the template (made on first use), or with initdb. */
export async function initFromTemplate(major: number, bin: string, runAs: RunAs, dataDir: string): Promise<void> {
  const template = await templateFor(major, bin, runAs);
  if (template) {
    try {
      // cp -a keeps the owner (the server's OS user) and the 0700 mode.
      await execFileAsync("cp", ["-a", template, dataDir]);
      return;
    } catch {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
  await initdb(bin, runAs, dataDir);
}
