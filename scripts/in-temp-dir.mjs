// node scripts/in-temp-dir.mjs <command> [args...]: runs the command with TMPDIR set to a folder of its own, removed
// afterwards, so that what the command's tools put in the temp dir (tsx makes a tsx-<uid> folder there even with
// --no-cache) does not outlive it. Exits with the command's code (128 + n for a signal).
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = mkdtempSync(join(tmpdir(), "pgoutput-wasm-run-"));
// As /tmp is: the embedded PostgreSQL runs as an unprivileged user (bindings/cli/run-as.ts) and makes its folders here.
chmodSync(dir, 0o1777);
const [command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: "inherit", env: { ...process.env, TMPDIR: dir, TMP: dir, TEMP: dir } });
const forward = (signal) => child.kill(signal);
process.on("SIGINT", forward);
process.on("SIGTERM", forward);
child.on("close", (code, signal) => {
  rmSync(dir, { recursive: true, force: true });
  process.exit(code ?? 128 + (signal === "SIGINT" ? 2 : 15));
});
