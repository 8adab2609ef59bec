// The temporary folders a run makes in the temp directory, and that none
// outlives it, however it ends. The kinds (FOLDER_KINDS): a server's
// pgoutputwasm-pg<major>-* (data directory, socket, log; server.ts), the
// copy of the npm binaries pgoutputwasm-bin-* (embedded.ts), the harness's
// initdb work folder pgoutputwasm-initdb-pg<major>-* (devkit/cluster/).
//
// - The process exits (the end of its work, process.exit, an uncaught
//   exception): an 'exit' hook removes its folders.
// - A signal (HUP, INT, TERM, QUIT) that no command takes: the handler
//   removes them, synchronously, then the process dies by the same signal,
//   so a shell still sees 128+N. A command that takes one (tail's and
//   capture's clean stop on INT and TERM) stops its server on its way out,
//   and the 'exit' hook removes the rest. SIGPIPE is not among them: Node
//   ignores it, and a write to a closed pipe fails with EPIPE, which the
//   commands take as a stop.
// - kill -9, or anything else that ends it with no code of ours running: a
//   watchdog (a shell, started with the first folder) holds a pipe from
//   this process; when the pipe ends, so has the process, and the watchdog
//   stops the servers in the folders it owned and removes them.
// - If the watchdog could not do it either (killed too), each folder names
//   its owner in a file `owner` (processes.ts: pid, start time, boot,
//   PID namespace), and the next run, or `cache clean`, removes the folders
//   of dead owners. Folders of a live process, or whose owner cannot be
//   told, are left alone.
//
// Removing a folder first stops the server running in it (the postmaster
// its data/postmaster.pid names, if it runs in that directory).

import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ownerAlive, ownerLine, stopPostmaster } from "./processes.ts";
import { childEnv } from "./run-as.ts";

/** Names of the folders made here (the part before mkdtemp's random suffix). */
export const FOLDER_KINDS = /^pgoutputwasm-(pg\d+|bin|initdb-pg\d+)-/;

const OWNER_FILE = "owner";

/** The folders this process made and has not removed yet, oldest first. */
const mine: string[] = [];
/** The watchdogs, by the temp directory each watches; held for the process's life, as their pipes must stay open. */
const watched = new Map<string, ChildProcess | undefined>();
let hooked = false;

/**
 * A new folder `pgoutputwasm-<kind>-XXXXXX` in the temp directory, owned by
 * this process: removed by removeTempFolder(), else when the process ends.
 * The first one also removes what dead runs left (reapOrphans) and starts
 * the watchdog.
 */
export function makeTempFolder(kind: string): string {
  // Absolute and normalized: the watchdog finds the folders by this path's text.
  const tmp = path.resolve(os.tmpdir());
  if (!hooked) installHooks();
  if (!watched.has(tmp)) {
    reapOrphans(tmp);
    watched.set(tmp, startWatchdog(tmp));
  }
  const dir = fs.mkdtempSync(path.join(tmp, `pgoutputwasm-${kind}-`));
  mine.push(dir);
  fs.writeFileSync(path.join(dir, OWNER_FILE), `${ownerLine()}\n`);
  return dir;
}

/** Stops the server running in a folder, if any, and removes the folder. Throws if it cannot be removed. */
export function removeFolder(dir: string): void {
  stopPostmaster(path.join(dir, "data"));
  fs.rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
}

/** Removes a folder of makeTempFolder()'s now (stopping a server still running in it). */
export function removeTempFolder(dir: string): void {
  removeFolder(dir);
  const i = mine.indexOf(dir);
  if (i >= 0) mine.splice(i, 1);
}

function removeAll(): void {
  // Newest first: servers before the binaries they run from.
  for (const dir of mine.splice(0).reverse()) {
    try {
      removeFolder(dir);
    } catch {
      /* what cannot be removed now, the next run or cache clean will */
    }
  }
}

const SIGNALS = ["SIGHUP", "SIGINT", "SIGTERM", "SIGQUIT"] as const;

function installHooks(): void {
  hooked = true;
  process.on("exit", removeAll);
  for (const sig of SIGNALS) {
    const onSignal = (): void => {
      // A command that takes this signal decides (and cleans up on its way out).
      if (process.listeners(sig).some((l) => l !== onSignal)) return;
      removeAll();
      process.off(sig, onSignal);
      process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

/** Who owns a folder: its owner runs (`alive`), has ended (`dead`), cannot be told (`unknown`), or it names none (`none`: being set up, or its run ended before writing it). */
export function folderOwner(dir: string): "alive" | "dead" | "unknown" | "none" {
  let line: string;
  try {
    line = fs.readFileSync(path.join(dir, OWNER_FILE), "utf8");
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT" ? "none" : "unknown";
  }
  const alive = ownerAlive(line);
  return alive === undefined ? "unknown" : alive ? "alive" : "dead";
}

/** Removes the folders in `tmp` whose owner has ended (stopping their servers); returns those removed. */
export function reapOrphans(tmp: string = os.tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(tmp);
  } catch {
    return removed;
  }
  for (const name of names) {
    const dir = path.join(tmp, name);
    if (!FOLDER_KINDS.test(name) || folderOwner(dir) !== "dead") continue;
    try {
      removeFolder(dir);
      removed.push(dir);
    } catch {
      /* cache clean reports it */
    }
  }
  return removed;
}

/**
 * The watchdog's script. $1: the owner line of this process's folders; $2:
 * the temp directory they are in. Its stdin is a pipe from this process that
 * nobody writes to: `read` returns at its end, when this process has ended,
 * whichever way. Then it does what removeFolder() does, for each folder
 * whose owner file is this process's line: the postmaster named by
 * postmaster.pid, if it is `postgres -D <the data directory>` (as
 * postmasterIn() checks), gets SIGQUIT (SIGKILL after 5 s), and the folder
 * is removed. A normal exit has removed the folders already: it finds none.
 * A shell and not a Node script: it costs 1 MB, and runs the same from the
 * compiled CLI and from the harness's TypeScript.
 */
const WATCHDOG = `
data_of() { tr '\\0' '\\n' < "/proc/$1/cmdline" 2>/dev/null | sed -n '/^-D$/{n;p;q;}'; }
while read -r _; do :; done
for d in "$2"/pgoutputwasm-*/; do
  d=\${d%/}
  [ "$(cat "$d/owner" 2>/dev/null)" = "$1" ] || continue
  pid=$(head -n 1 "$d/data/postmaster.pid" 2>/dev/null)
  [ -n "$pid" ] && [ "$(data_of "$pid")" = "$d/data" ] || continue
  kill -QUIT "$pid"
  n=0
  while [ "$(data_of "$pid")" = "$d/data" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
  [ "$(data_of "$pid")" = "$d/data" ] && kill -KILL "$pid"
done
for d in "$2"/pgoutputwasm-*/; do
  d=\${d%/}
  [ "$(cat "$d/owner" 2>/dev/null)" = "$1" ] && rm -rf "$d"
done
`;

function startWatchdog(tmp: string): ChildProcess | undefined {
  try {
    // Its own session (detached): the terminal's signals (Ctrl-C, the hangup) do not reach it.
    // Its stdout and stderr go nowhere, so that nobody waiting for ours waits for it.
    const child = spawn("/bin/sh", ["-c", WATCHDOG, "pgoutput-wasm-watchdog", ownerLine(), tmp], {
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
      env: childEnv(),
    });
    child.on("error", () => {}); // no shell: the next run's reapOrphans() is the safety net
    child.stdin?.on("error", () => {});
    child.unref();
    return child;
  } catch {
    return undefined; // as above
  }
}
