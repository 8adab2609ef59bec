import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startCli, type CliRun } from "./run-cli.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The compiles under way, by folder: removeCli() waits for its own, or tsc would write into a removed folder. */
const compiling = new Map<string, Promise<string>>();

/**
 * The CLI as it is published: bindings/ compiled to JavaScript, into a
 * folder of the caller's own (test files run in parallel and compile too).
 * Resolves with the path of its main.js.
 */
export function buildCli(folder: string): Promise<string> {
  const built = compile(folder);
  compiling.set(folder, built);
  return built;
}

/** Removes what buildCli(folder) wrote, once its compile is over (whether it built or failed). */
export async function removeCli(folder: string): Promise<void> {
  await compiling.get(folder)?.catch(() => undefined);
  compiling.delete(folder);
  rmSync(join(ROOT, "build", folder), { recursive: true, force: true });
}

function compile(folder: string): Promise<string> {
  const out = join(ROOT, "build", folder);
  const main = join(out, "cli", "main.js");
  if (!existsSync(join(ROOT, "bindings", "wasm-inline.ts"))) {
    return Promise.reject(new Error("bindings/wasm-inline.ts is missing: run npm run build:wasm first"));
  }
  return new Promise<string>((resolve, reject) => {
    rmSync(out, { recursive: true, force: true });
    const tsc = spawn(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json", "--outDir", out, "--declaration", "false", "--sourceMap", "false"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    tsc.stdout.on("data", (d) => (err += d));
    tsc.stderr.on("data", (d) => (err += d));
    tsc.on("close", () => (existsSync(main) ? resolve(main) : reject(new Error(`tsc did not emit ${main}: ${err}`))));
  });
}

export type { CliRun } from "./run-cli.ts";

/**
 * Runs the built CLI (`main`) to its end, without the PG* variables (killed after `killAfterMs`). To stop one
 * that streams, startCli() and a signal once it is seen streaming: at a fixed time it may not listen yet.
 */
export function runCli(main: string, args: string[], killAfterMs = 60_000): Promise<CliRun> {
  return startCli(main, args, { killAfterMs }).exited;
}
