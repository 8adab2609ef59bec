// Running PostgreSQL's binaries as someone who is allowed to: PostgreSQL
// refuses to start as root, and CI (and `sudo npx pgoutput-wasm tail`) runs
// as root. When the process is root, every server command runs as the
// unprivileged OS user PG_OS_USER (created with useradd if missing) through
// runuser, or setpriv where runuser is missing. Otherwise commands run as we
// are. The embedded server (embedded.ts) and the development cluster harness
// (devkit/) both go through here, so the rules exist once.

import { execFile, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

/** Name of the unprivileged OS user the server runs as when we are root. */
export const PG_OS_USER = "pgoutputwasm";

export interface RunAs {
  /** Prefix that runs a command as the server's OS user ([] when not root). */
  prefix: string[];
  uid: number;
  gid: number;
}

/** Environment for server processes: no PG* variables leaking in, C locale. */
export function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("PG") || k.startsWith("LC_") || k === "LANG" || k === "LANGUAGE") continue;
    env[k] = v;
  }
  env.LC_ALL = "C";
  env.LANG = "C";
  // runuser/setpriv/useradd live in sbin, which a non-login PATH may miss.
  const parts = (env.PATH ?? "").split(path.delimiter).filter(Boolean);
  for (const p of ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]) if (!parts.includes(p)) parts.push(p);
  env.PATH = parts.join(path.delimiter);
  return env;
}

/** execFile with childEnv(), a timeout, and the command's output in the error message. */
export function execFileAsync(
  file: string,
  args: string[],
  options: { timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { env: childEnv(), timeout: options.timeoutMs ?? 120_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (err) {
          const e = err as Error & { stdout?: string; stderr?: string };
          e.message = `${file} ${args.join(" ")} failed: ${err.message}\n${stderr}${stdout}`;
          e.stdout = String(stdout);
          e.stderr = String(stderr);
          reject(e);
        } else resolve({ stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

function findOnPath(name: string): string | undefined {
  for (const dir of (childEnv().PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* keep looking */
    }
  }
  return undefined;
}

function idOf(user: string): { uid: number; gid: number } | undefined {
  const u = spawnSync("id", ["-u", user], { env: childEnv(), encoding: "utf8" });
  const g = spawnSync("id", ["-g", user], { env: childEnv(), encoding: "utf8" });
  if (u.status !== 0 || g.status !== 0) return undefined;
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function ensureOsUser(): Promise<{ uid: number; gid: number }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const ids = idOf(PG_OS_USER);
    if (ids) return ids;
    const useradd = findOnPath("useradd");
    if (!useradd) throw new Error("running as root, but useradd is missing: cannot create an unprivileged user for PostgreSQL");
    // Another process may be creating the same user right now: useradd then
    // fails (exit 9: exists, 10: cannot lock /etc/passwd) and we look again.
    spawnSync(
      useradd,
      ["--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", "--comment", "pgoutput-wasm PostgreSQL", PG_OS_USER],
      { env: childEnv(), encoding: "utf8" },
    );
    if (idOf(PG_OS_USER)) continue;
    await sleep(50 + Math.random() * 100);
  }
  throw new Error(`could not create OS user ${PG_OS_USER}`);
}

let runAsPromise: Promise<RunAs> | undefined;

/** Who server commands run as; looked up (and the OS user created) once per process. */
export function getRunAs(): Promise<RunAs> {
  runAsPromise ??= (async () => {
    if (process.getuid?.() !== 0) {
      return { prefix: [], uid: process.getuid?.() ?? -1, gid: process.getgid?.() ?? -1 };
    }
    const ids = await ensureOsUser();
    const runuser = findOnPath("runuser");
    const setpriv = findOnPath("setpriv");
    let prefix: string[];
    if (runuser) prefix = [runuser, "-u", PG_OS_USER, "--"];
    else if (setpriv) prefix = [setpriv, `--reuid=${ids.uid}`, `--regid=${ids.gid}`, "--init-groups", "--"];
    else throw new Error("running as root, but neither runuser nor setpriv is available");
    return { prefix, uid: ids.uid, gid: ids.gid };
  })();
  return runAsPromise;
}

/** The command line that runs `file args` as the server's OS user. */
export function wrap(runAs: RunAs, file: string, args: string[]): [string, string[]] {
  if (runAs.prefix.length === 0) return [file, args];
  return [runAs.prefix[0]!, [...runAs.prefix.slice(1), file, ...args]];
}

export function runAsUser(runAs: RunAs, file: string, args: string[], timeoutMs?: number) {
  const [f, a] = wrap(runAs, file, args);
  return execFileAsync(f, a, { timeoutMs });
}

/** Hands a file or directory we created to the server's OS user (a no-op when not root). */
export function giveToServer(runAs: RunAs, file: string): void {
  if (runAs.prefix.length > 0) fs.chownSync(file, runAs.uid, runAs.gid);
}
