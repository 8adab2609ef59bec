/**
 * A test's server process (a broker) that cannot outlive the test process:
 * it runs under a small shell that holds a pipe from this process, and when
 * the pipe ends — this process exited, however it died, kill -9 included —
 * the shell kills the server and removes its folder. Stopping it normally
 * (stop()) does the same from here and waits for the exit.
 *
 * Folders are `pgoutputwasm-broker-*` in the temp directory.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

/**
 * sh: start the command, and kill it (and remove the folder) once stdin ends; exit with the command's
 * status. (An asynchronous list's stdin is /dev/null in a non-interactive shell: the reader takes the
 * pipe on fd 3.) The reader inherits the ignored TERM, so when the server exits (halt()) it is ended with
 * KILL: otherwise it would outlive the shell and, once the pipe closes, remove the folder halt() keeps.
 * Its cleanup runs in a process of its own, started before it kills the server, so that this KILL,
 * which the server's end sets off, cannot cut the cleanup short.
 */
const WATCHDOG = `
trap '' TERM INT HUP QUIT
exec 3<&0
"$@" 3<&- >> "$LOG" 2>&1 &
child=$!
( read -r _ <&3 ; ( sleep 0.2 ; rm -rf "$DIR" ) & kill -KILL "$child" 2>/dev/null ) &
reader=$!
exec 3<&-
wait "$child"
status=$?
kill -KILL "$reader" 2>/dev/null
exit "$status"
`;

export interface TiedProcess {
  /** The shell's pid (the server is its child). */
  readonly pid: number;
  /** Resolves with the server's exit status once it has exited. */
  readonly exited: Promise<number | null>;
  /** Signals the server (its process group: the shell and its reader ignore the usual stop signals and wait for it). */
  signal(sig: NodeJS.Signals): void;
}

/** The shells running: held, since their stdin pipes (unref'd) must not be collected and closed. */
const running = new Set<ChildProcess>();

/** Runs `command args` in `dir`, its output appended to `log`, tied to this process's life. */
export function spawnTied(command: string, args: readonly string[], dir: string, log: string): TiedProcess {
  const child: ChildProcess = spawn("sh", ["-c", WATCHDOG, "sh", command, ...args], {
    cwd: dir,
    env: { ...process.env, LOG: log, DIR: dir },
    stdio: ["pipe", "ignore", "ignore"],
    detached: true, // its own process group: a terminal's Ctrl-C reaches the test, which stops it, not the server directly
  });
  child.unref();
  (child.stdin as unknown as { unref?: () => void })?.unref?.();
  running.add(child);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => (running.delete(child), resolve(code))));
  return {
    pid: child.pid!,
    exited,
    signal: (sig) => {
      try {
        process.kill(-child.pid!, sig);
      } catch {
        /* gone already */
      }
    },
  };
}

/** A folder of the test's own in the temp directory. */
export function brokerFolder(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "pgoutputwasm-broker-"));
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves once a TCP connection to 127.0.0.1:port succeeds; rejects after `timeoutMs`, with the log's tail. */
export async function waitForPort(port: number, timeoutMs: number, log: string, exited?: Promise<unknown>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void exited?.then(() => (gone = true));
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => (s.destroy(), resolve(true)));
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (gone || Date.now() > deadline) {
      const text = fs.existsSync(log) ? fs.readFileSync(log, "utf8").slice(-4000) : "(no log)";
      throw new Error(`nothing listens on 127.0.0.1:${port} ${gone ? "(the server exited)" : `after ${timeoutMs} ms`}\n--- log ---\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A broker for a test: started, stoppable, startable again on the same port and data. */
export interface Broker {
  readonly port: number;
  readonly dir: string;
  readonly url: string;
  /** Stops it (SIGTERM, then SIGKILL after 5 s) and waits; the data stays for start(). */
  halt(): Promise<void>;
  /** Starts it again after halt(), on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its folder. Idempotent. */
  stop(): Promise<void>;
}

/** A broker from a command line (given its port and folder), tied to this process. */
export async function startBroker(
  scheme: string,
  command: string,
  argsFor: (port: number, dir: string) => string[],
  readyMs = 15_000,
): Promise<Broker> {
  const dir = brokerFolder();
  const port = await freePort();
  const log = path.join(dir, "server.log");
  let proc: TiedProcess | undefined;
  const start = async () => {
    proc = spawnTied(command, argsFor(port, dir), dir, log);
    await waitForPort(port, readyMs, log, proc.exited);
  };
  const halt = async () => {
    const p = proc;
    proc = undefined;
    if (p === undefined) return;
    p.signal("SIGTERM");
    const timer = setTimeout(() => p.signal("SIGKILL"), 5000);
    await p.exited;
    clearTimeout(timer);
  };
  let stopped = false;
  try {
    await start();
  } catch (e) {
    await halt();
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    port,
    dir,
    url: `${scheme}://127.0.0.1:${port}`,
    halt,
    start,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await halt();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
