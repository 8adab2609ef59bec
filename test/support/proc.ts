// What /proc says about the processes of a test's run, read independently of
// the CLI's own code (bindings/cli/processes.ts) so that a test of the CLI's
// cleanup does not take the CLI's word for it. Linux only, as the embedded
// server is. Root reads every process; another user, its own.

import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { sep } from "node:path";

/** A process as identified across pid reuse: its pid and start time (clock ticks since boot). */
export interface Proc {
  pid: number;
  start: string;
}

/** The fields of /proc/PID/stat after the command name: [state, ppid, ...]; undefined when gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** The process `pid` now, or undefined when there is none (or only its zombie, which has exited). */
export function proc(pid: number): Proc | undefined {
  const f = statFields(pid);
  if (f === undefined || f[0] === "Z" || f[0] === "X") return undefined;
  return { pid, start: f[19]! };
}

/** Whether that very process (not a later one with its pid) still runs. */
export function running(p: Proc): boolean {
  return proc(p.pid)?.start === p.start;
}

function pids(): number[] {
  return readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map(Number);
}

/** Every process below `root` (children, their children, ...), `root` not included. */
export function descendants(root: number): Proc[] {
  const parent = new Map<number, number>();
  for (const pid of pids()) {
    const f = statFields(pid);
    if (f !== undefined && f[0] !== "Z") parent.set(pid, Number(f[1]));
  }
  const out: Proc[] = [];
  const seen = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of parent) {
      if (seen.has(ppid) && !seen.has(pid)) {
        seen.add(pid);
        const p = proc(pid);
        if (p) out.push(p);
        grew = true;
      }
    }
  }
  return out;
}

/**
 * Processes whose working directory, executable or an argument is inside
 * `dir` (a server's, from its folders: the postmaster is `postgres -D
 * <dir>/...`, which even root without CAP_SYS_PTRACE can read).
 */
export function processesIn(dir: string): { pid: number; cmd: string }[] {
  const inside = (p: string) => p === dir || p.startsWith(dir + sep);
  const out: { pid: number; cmd: string }[] = [];
  for (const pid of pids()) {
    if (pid === process.pid) continue;
    const paths: string[] = [];
    for (const link of ["cwd", "exe"]) {
      try {
        paths.push(readlinkSync(`/proc/${pid}/${link}`).replace(/ \(deleted\)$/, ""));
      } catch {
        /* gone, or not ours to read */
      }
    }
    let args: string[] = [];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
      /* gone meanwhile */
    }
    if ([...paths, ...args].some(inside) && proc(pid) !== undefined) out.push({ pid, cmd: args.join(" ").trim() });
  }
  return out;
}

/** The postmaster of a data directory, from its postmaster.pid; undefined when it has none. */
export function postmasterOf(dataDir: string): Proc | undefined {
  try {
    return proc(Number(readFileSync(`${dataDir}/postmaster.pid`, "utf8").split("\n")[0]));
  } catch {
    return undefined;
  }
}

/**
 * Stops every process inside `dir` (a test's own leftovers, whatever the CLI
 * did): SIGQUIT (a server's immediate shutdown) first, SIGKILL after 3 s.
 */
export async function killAllIn(dir: string): Promise<void> {
  for (let i = 0; i < 60; i++) {
    const left = processesIn(dir);
    if (left.length === 0) return;
    for (const { pid } of left) {
      try {
        process.kill(pid, i < 30 ? "SIGQUIT" : "SIGKILL");
      } catch {
        /* gone */
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
