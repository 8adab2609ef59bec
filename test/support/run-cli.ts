import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** How a CLI run ended: its exit code (null when killed by a signal), its output, and how long it ran. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * process.env without the PG* variables (the machine's libpq settings must
 * not reach the CLI under test) and without those `drop` names, then `extra`.
 */
export function cliEnv(extra: Record<string, string> = {}, drop: (name: string) => boolean = () => false): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG") && !drop(k) && v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

/**
 * Starts `node main ...args` from the repository root, collecting its output;
 * `exited` resolves when it has ended. Killed (SIGKILL) after `killAfterMs`.
 * With `stdin: "pipe"` its stdin is an empty pipe, closed at once.
 */
export function startCli(main: string, args: readonly string[], opts: { env?: NodeJS.ProcessEnv; killAfterMs?: number; stdin?: "ignore" | "pipe" } = {}): { child: ChildProcess; exited: Promise<CliRun> } {
  const t0 = Date.now();
  const child = spawn(process.execPath, [main, ...args], { cwd: ROOT, env: opts.env ?? cliEnv(), stdio: [opts.stdin ?? "ignore", "pipe", "pipe"] });
  child.stdin?.end();
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), opts.killAfterMs ?? 60_000);
  const exited = new Promise<CliRun>((resolve) => child.on("close", (code) => {
    clearTimeout(timer);
    resolve({ code, stdout, stderr, ms: Date.now() - t0 });
  }));
  return { child, exited };
}
