// Data directories from a template instead of initdb: initdb costs 0.7-2.5 s
// of CPU (more on a busy 2-core machine) and the test suites start dozens of
// clusters, while copying a pristine initdb'ed directory costs ~0.1 s.
// Templates live in os.tmpdir(), one per binary directory, version and OS
// user, made once (atomically, so concurrent processes are fine) and reused
// by later runs. Any trouble falls back to a plain initdb. The shipped CLI
// starts one server per run, so this stays out of the package.

import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { execFileAsync, giveToServer, type RunAs } from "../../bindings/cli/run-as.ts";
import { initdb } from "../../bindings/cli/server.ts";

const templates = new Map<string, Promise<string | undefined>>();

function templateFor(major: number, bin: string, runAs: RunAs): Promise<string | undefined> {
  const postgres = path.join(bin, "postgres");
  const version = fs.existsSync(postgres) ? String(fs.statSync(postgres).mtimeMs) : "";
  const key = createHash("sha256").update(`${bin}\0${version}\0${runAs.uid}\0v2`).digest("hex").slice(0, 12);
  let p = templates.get(key);
  if (!p) {
    p = (async () => {
      const root = path.join(os.tmpdir(), `pgoutputwasm-template-pg${major}-${key}`);
      const ready = path.join(root, "data", "PG_VERSION");
      if (fs.existsSync(ready) && fs.readFileSync(ready, "utf8").trim() === String(major)) return path.join(root, "data");
      const staging = `${root}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
      try {
        fs.mkdirSync(staging, { mode: 0o755 });
        giveToServer(runAs, staging);
        await initdb(bin, runAs, path.join(staging, "data"));
        try {
          fs.renameSync(staging, root);
        } catch {
          fs.rmSync(staging, { recursive: true, force: true }); // another process won
        }
        return fs.existsSync(ready) ? path.join(root, "data") : undefined;
      } catch {
        fs.rmSync(staging, { recursive: true, force: true });
        return undefined;
      }
    })();
    templates.set(key, p);
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
