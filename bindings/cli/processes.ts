// Processes as /proc tells of them, for the cleanup of temporary folders
// (temp-folders.ts): who owns a folder and whether that owner still runs,
// and the PostgreSQL server running in a data directory, stopped
// synchronously (from a signal handler or an 'exit' hook, where nothing
// asynchronous runs any more).
//
// An owner is told apart from a later process that got its pid by its start
// time (field 22 of /proc/PID/stat, clock ticks since boot); the boot id
// tells a folder left before a reboot; a folder written in another PID
// namespace (a container sharing the temp directory) is never judged.
// Without /proc (not Linux), a pid that answers kill(pid, 0) counts as alive.

import * as fs from "node:fs";
import * as path from "node:path";

/** /proc/PID/stat after the command name (which may hold spaces): [state, ppid, ...]; undefined when there is no such process. */
function statFields(pid: number): string[] | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** The start time of a running process (a zombie has exited), or undefined. */
function startTime(pid: number): string | undefined {
  const f = statFields(pid);
  return f === undefined || f[0] === "Z" || f[0] === "X" ? undefined : f[19];
}

function readOr(file: string, otherwise: string): string {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    return otherwise;
  }
}

function linkOr(link: string, otherwise: string): string {
  try {
    return fs.readlinkSync(link);
  } catch {
    return otherwise;
  }
}

const UNKNOWN = "-";
const bootId = () => readOr("/proc/sys/kernel/random/boot_id", UNKNOWN);
const pidNamespace = () => linkOr("/proc/self/ns/pid", UNKNOWN);

let own: string | undefined;

/**
 * This process as the owner of a folder, one line: `pid start boot pidns`
 * (e.g. `4242 81234 3f81fef1-... pid:[4026531836]`). The watchdog compares
 * it as text, so it is the same string every time.
 */
export function ownerLine(): string {
  own ??= [process.pid, startTime(process.pid) ?? UNKNOWN, bootId(), pidNamespace()].join(" ");
  return own;
}

/**
 * Whether the owner a folder names still runs: true, false, or undefined
 * when that cannot be told (a line we do not understand, another PID
 * namespace): such a folder is left alone.
 */
export function ownerAlive(line: string): boolean | undefined {
  const [pidText, start, boot, pidns, extra] = line.trim().split(" ");
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || pidns === undefined || extra !== undefined) return undefined;
  const myBoot = bootId();
  if (boot !== UNKNOWN && myBoot !== UNKNOWN && boot !== myBoot) return false; // written before a reboot
  if (pidns !== pidNamespace()) return undefined;
  const f = start === UNKNOWN ? undefined : statFields(pid);
  if (f !== undefined) return f[0] !== "Z" && f[0] !== "X" && f[19] === start;
  // No start time to compare (no /proc, or the process hidden from us by hidepid): ask the kernel whether the pid is taken.
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  return start === UNKNOWN ? true : undefined;
}

/** Blocks the thread for `ms` (an 'exit' hook or a signal handler cannot wait otherwise). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function realpathOr(p: string): string | undefined {
  try {
    return fs.realpathSync(p);
  } catch {
    return undefined;
  }
}

/** A process's arguments (empty for a zombie, or when it is gone). Readable for anyone's process, unlike its cwd or exe. */
function commandLine(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, -1);
  } catch {
    return [];
  }
}

/**
 * The postmaster serving `dataDir`: the pid in its postmaster.pid, if that
 * process is `postgres -D <dataDir>` (how pg_ctl starts it; the postmaster
 * keeps its arguments), so that a stale pid file never names someone else's
 * process. Its command line and not its working directory: root without
 * CAP_SYS_PTRACE (a container's default) cannot read another user's cwd.
 */
export function postmasterIn(dataDir: string): number | undefined {
  const pid = Number(readOr(`${dataDir}/postmaster.pid`, "").split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const args = commandLine(pid);
  const d = args.indexOf("-D");
  if (path.basename(args[0] ?? "") !== "postgres" || d < 0) return undefined;
  const given = args[d + 1]!;
  return given === dataDir || (realpathOr(given) ?? given) === realpathOr(dataDir) ? pid : undefined;
}

/**
 * Stops the server running in `dataDir`, if one does, and waits until it
 * has exited: SIGQUIT (what `pg_ctl stop -m immediate` sends: the
 * postmaster stops its children, then itself; no checkpoint, the folder
 * goes anyway), SIGKILL after `timeoutMs`. Synchronous; a signal is
 * allowed to root, and to the server's owner.
 */
export function stopPostmaster(dataDir: string, timeoutMs = 5000): void {
  const pid = postmasterIn(dataDir);
  if (pid === undefined) return;
  const start = startTime(pid);
  const gone = () => startTime(pid) !== start;
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      /* gone already */
    }
  };
  signal("SIGQUIT");
  const deadline = Date.now() + timeoutMs;
  while (!gone() && Date.now() < deadline) sleepSync(10);
  if (gone()) return;
  signal("SIGKILL");
  for (let i = 0; i < 100 && !gone(); i++) sleepSync(10);
}

/** Whether some process runs a program inside `dir` (a copy of the binaries in use): by its exe where readable, else its argv[0]. */
export function executesFrom(dir: string): boolean {
  const root = realpathOr(dir);
  if (root === undefined) return false;
  let names: string[];
  try {
    names = fs.readdirSync("/proc");
  } catch {
    return false;
  }
  const inside = (p: string) => p.startsWith(`${root}/`) || p.startsWith(`${dir}/`);
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const exe = linkOr(`/proc/${name}/exe`, "").replace(/ \(deleted\)$/, "");
    if (inside(exe) || inside(commandLine(Number(name))[0] ?? "")) return true;
  }
  return false;
}
