// The CLI (compiled from bindings/ as published) as a newcomer first meets
// it: every command answers --help (usage on stdout, exit 0), the top level
// answers --help and --version (package.json's), unknown options and
// missing values get one line of ours with a hint and exit 2 (not Node's
// parseArgs wording), and `cache path|clean` name and remove the one folder
// kept between runs (plus, in the temp directory, the folders of runs that
// ended and what older versions left, never a live run's).
// A bad capture gives the same line on both backends, each detail once
// (the unknown tag, the frame's size, the field, the byte in the capture);
// `capture` to a file whose connection fails leaves no file behind. The
// pipeline's names (--format, --sink, -o) and replicate()'s own option
// checks give usage errors too, before anything starts.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, removeCli } from "./support/build-cli.ts";
import { quotedBytes } from "../bindings/quoted-bytes.ts";
import { FORMATS } from "../bindings/formats/index.ts";
import { SINKS } from "../bindings/sinks/index.ts";
import { closedPort } from "./support/closed-port.ts";
import { proc } from "./support/proc.ts";
import { cliEnv, startCli, type CliRun } from "./support/run-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FOLDER = "cli-test-help";
let main = "";
const scratch = mkdtempSync(join(tmpdir(), "pgoutputwasm-cli-help-"));

type Run = Omit<CliRun, "ms">;

/** How the CLI ended: exit code and output (compared whole, so without the time it took). */
const run = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
  startCli(main, args, { env: cliEnv(env, (k) => k === "XDG_CACHE_HOME"), killAfterMs: 30_000 }).exited.then(({ code, stdout, stderr }) => ({ code, stdout, stderr }));

beforeAll(async () => {
  main = await buildCli(FOLDER);
}, 120_000);

afterAll(async () => {
  await removeCli(FOLDER);
  rmSync(scratch, { recursive: true, force: true });
});

const COMMANDS = ["tail", "capture", "decode", "slots", "cache"];

describe.concurrent("--help and --version", () => {
  for (const cmd of COMMANDS) {
    it(`${cmd} --help, ${cmd} -h and help ${cmd}: its usage on stdout, exit 0`, async () => {
      for (const args of [[cmd, "--help"], [cmd, "-h"], ["help", cmd], [cmd, "--backend", "nope", "--help"]]) {
        const r = await run(args);
        expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
        expect(r.stdout.startsWith(`usage: pgoutput-wasm ${cmd}`), r.stdout.slice(0, 80)).toBe(true);
        expect(r.stderr).toBe("");
      }
    });
  }

  it("the top level: --help lists every command; --version prints package.json's version", async () => {
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    for (const cmd of COMMANDS) expect(help.stdout).toMatch(new RegExp(`^  ${cmd}\\b`, "m"));
    const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    const v = await run(["--version"]);
    expect(v).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("tail --help says what a run creates and where, and what running as root adds", async () => {
    const { stdout } = await run(["tail", "--help"]);
    expect(stdout).toMatch(/pgoutputwasm-pg18-\*\) is removed on\s+exit/);
    expect(stdout).toMatch(/however the run ends \(a signal too; after a kill -9 the server stops\s+by itself, and the next run removes what is left\)/);
    expect(stdout).toMatch(/As\s+root, PostgreSQL runs as the system user pgoutputwasm/);
    expect(stdout).toMatch(/userdel pgoutputwasm/);
    expect(stdout).toMatch(/pgoutput-wasm cache --help/);
  });
});

describe.concurrent("bad options: one line of ours, exit 2", () => {
  const expectUsage = (r: Run, line: string) => {
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`${line}\n`);
  };
  for (const cmd of ["tail", "capture", "decode"]) {
    it(`${cmd}: an unknown option`, async () => {
      const args = cmd === "tail" ? [cmd, "--bogus"] : [cmd, "x.bin", "--bogus"];
      expectUsage(await run(args), `pgoutput-wasm: unknown option --bogus (hint: see pgoutput-wasm ${cmd} --help)`);
    });
  }
  it("the connection under another tool's name (--url, --dsn, psql's -d): -c/--connection, where the command has it", async () => {
    for (const cmd of ["tail", "capture", "slots"]) {
      const args = cmd === "capture" ? [cmd, "x.bin", "--url", "postgres://u@127.0.0.1/db"] : [cmd, "--url", "postgres://u@127.0.0.1/db"];
      expectUsage(await run(args), `pgoutput-wasm: unknown option --url (hint: did you mean -c/--connection? See pgoutput-wasm ${cmd} --help)`);
    }
    expectUsage(await run(["tail", "--dsn", "x"]), "pgoutput-wasm: unknown option --dsn (hint: did you mean -c/--connection? See pgoutput-wasm tail --help)");
    expectUsage(await run(["tail", "-d", "app"]), "pgoutput-wasm: unknown option -d (hint: did you mean -c/--connection? See pgoutput-wasm tail --help)");
    // decode reads a file: no connection to suggest.
    expectUsage(await run(["decode", "x.bin", "--url", "x"]), "pgoutput-wasm: unknown option --url (hint: see pgoutput-wasm decode --help)");
  });

  it("a misspelt option: the one meant (a typo or two away, _ for -)", async () => {
    expectUsage(await run(["tail", "--publications", "p"]), "pgoutput-wasm: unknown option --publications (hint: did you mean --publication? See pgoutput-wasm tail --help)");
    expectUsage(await run(["tail", "--create_slot"]), "pgoutput-wasm: unknown option --create_slot (hint: did you mean --create-slot? See pgoutput-wasm tail --help)");
    expectUsage(await run(["decode", "x.bin", "--stat"]), "pgoutput-wasm: unknown option --stat (hint: did you mean --stats? See pgoutput-wasm decode --help)");
  });

  it("the pipeline seam: an unknown format, sink or format option; replicate()'s own checks in the CLI's words", async () => {
    const formats = [...Object.keys(FORMATS), "pretty"].join(", ");
    const schemes = SINKS.flatMap((s) => s.schemes).join(", ");
    expectUsage(await run(["tail", "--format", "avro"]), `pgoutput-wasm: unknown format "avro": one of ${formats} (hint: see pgoutput-wasm tail --help)`);
    expectUsage(await run(["tail", "--sink", "kafka://127.0.0.1:9092"]), `pgoutput-wasm: no sink takes "kafka://127.0.0.1:9092": one of ${schemes} (hint: see pgoutput-wasm tail --help)`);
    expectUsage(await run(["tail", "-o", "indent=2"]), 'pgoutput-wasm: format jsonl has no option "indent" (it takes transactions, tables, pretty, numbers-as-strings) (hint: see pgoutput-wasm tail --help)');
    expectUsage(await run(["capture", "x.bin", "--proto", "1", "--two-phase"]), "pgoutput-wasm: --two-phase needs --proto 3 or later (hint: see pgoutput-wasm capture --help)");
  });

  it("an option without its value; tail given an argument; cache without an action", async () => {
    expectUsage(await run(["decode", "x.bin", "--format"]), "pgoutput-wasm: option --format needs a value (hint: see pgoutput-wasm decode --help)");
    expectUsage(await run(["tail", "extra"]), `pgoutput-wasm: unexpected argument "extra": tail takes options only (hint: see pgoutput-wasm tail --help)`);
    expectUsage(await run(["cache"]), "pgoutput-wasm: cache needs path or clean (hint: see pgoutput-wasm cache --help)");
  });
});

describe("cache path|clean", () => {
  it("path: $XDG_CACHE_HOME/pgoutput-wasm, or ~/.cache/pgoutput-wasm (a relative XDG_CACHE_HOME is ignored, as the spec says)", async () => {
    const home = join(scratch, "home");
    expect(await run(["cache", "path"], { XDG_CACHE_HOME: join(scratch, "xdg"), HOME: home })).toEqual({ code: 0, stdout: `${join(scratch, "xdg", "pgoutput-wasm")}\n`, stderr: "" });
    expect((await run(["cache", "path"], { XDG_CACHE_HOME: "relative/dir", HOME: home })).stdout).toBe(`${join(home, ".cache", "pgoutput-wasm")}\n`);
    expect((await run(["cache", "path"], { HOME: home })).stdout).toBe(`${join(home, ".cache", "pgoutput-wasm")}\n`);
  });

  it("clean: removes the cache folder and the folders of ended runs in the temp directory, nothing else", async () => {
    const xdg = join(scratch, "xdg-clean");
    const tmp = join(scratch, "tmp-clean");
    const template = join(xdg, "pgoutput-wasm", "templates", "pg18-0123456789ab", "data");
    mkdirSync(template, { recursive: true });
    writeFileSync(join(template, "PG_VERSION"), "18\n");
    for (const d of ["pgoutputwasm-pg18-running", "unrelated"]) mkdirSync(join(tmp, d), { recursive: true });
    // Runs' folders name their owner (pid, start time, boot, PID namespace: bindings/cli/processes.ts).
    const me = proc(process.pid)!;
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const ns = readlinkSync("/proc/self/ns/pid");
    const owned = {
      "pgoutputwasm-pg18-live": `${me.pid} ${me.start} ${boot} ${ns}`, // this process: stays
      "pgoutputwasm-pg18-reused": `${me.pid} ${Number(me.start) - 1} ${boot} ${ns}`, // its pid, an earlier start: a dead run
      "pgoutputwasm-bin-rebooted": `${me.pid} ${me.start} 00000000-0000-0000-0000-000000000000 ${ns}`, // before a reboot
      "pgoutputwasm-bin-elsewhere": `${me.pid} ${me.start} ${boot} pid:[1]`, // another PID namespace: cannot be told, stays
    };
    let ownerBytes = 0;
    for (const [d, line] of Object.entries(owned)) {
      mkdirSync(join(tmp, d));
      writeFileSync(join(tmp, d, "owner"), `${line}\n`);
      if (!d.endsWith("live") && !d.endsWith("elsewhere")) ownerBytes += line.length + 1;
    }
    // No owner file (its run ended before writing it): removed once it is older than a moment, unless in use.
    mkdirSync(join(tmp, "pgoutputwasm-bin-old"));
    utimesSync(join(tmp, "pgoutputwasm-bin-old"), new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
    const r = await run(["cache", "clean"], { XDG_CACHE_HOME: xdg, TMPDIR: tmp });
    expect(r.code, r.stderr).toBe(0);
    const [removed, ...kept] = r.stdout.trimEnd().split("\n");
    expect(removed).toMatch(new RegExp(`^removed .* \\(${3 + ownerBytes} B\\)$`)); // PG_VERSION and the dead runs' owner files
    const gone = ["pgoutputwasm-pg18-reused", "pgoutputwasm-bin-rebooted", "pgoutputwasm-bin-old"];
    for (const d of [join(xdg, "pgoutput-wasm"), ...gone.map((g) => join(tmp, g))]) expect(removed).toContain(d);
    expect(existsSync(join(xdg, "pgoutput-wasm"))).toBe(false);
    // A live run's folders, one that may be being set up, one whose owner cannot be told, and other programs' files stay.
    expect(readdirSync(tmp).sort()).toEqual(["pgoutputwasm-bin-elsewhere", "pgoutputwasm-pg18-live", "pgoutputwasm-pg18-running", "unrelated"]);
    expect(kept.sort()).toEqual([
      `kept ${join(tmp, "pgoutputwasm-bin-elsewhere")}: its owner cannot be told (another user's, or another PID namespace's)`,
      `kept ${join(tmp, "pgoutputwasm-pg18-live")}: its run is still going`,
      `kept ${join(tmp, "pgoutputwasm-pg18-running")}: made a moment ago`,
    ]);
    const again = await run(["cache", "clean"], { XDG_CACHE_HOME: xdg, TMPDIR: tmp });
    expect(again.stdout).toMatch(/^nothing to remove/);
  });
});

describe.concurrent("decode: a bad capture, the same line on both backends", () => {
  const frame = (...body: number[]) => [(body.length >>> 24) & 255, (body.length >>> 16) & 255, (body.length >>> 8) & 255, body.length & 255, ...body];
  // A good Origin message first, so offsets count from the start of the capture, not of the frame.
  const origin = frame(0x4f, 0, 0, 0, 0, 0, 0, 0, 1, 0x78, 0);
  const cases = [
    { name: "an unknown tag", bytes: [...origin, ...frame(0x5a, 1, 2)], line: `UNKNOWN_MESSAGE: unknown message tag 0x5a ("Z") (message #1, field tag, byte ${origin.length + 4})` },
    { name: "a frame beyond maxMessageSize", bytes: [...origin, 0xff, 0xff, 0xff, 0xf0, 0x42], line: `MESSAGE_TOO_LARGE: frame of 4294967280 bytes larger than maxMessageSize (1073741824) (message #1, field frameLength, byte ${origin.length})` },
    { name: "a capture ending inside a frame header", bytes: [...origin, 0, 0], line: `INCOMPLETE: stream ended inside a frame (2 bytes of it received) (field frameLength, byte ${origin.length})` },
    // Past the first 64 KB chunk read: the index and the byte still count from the start of the capture.
    { name: "an unknown tag after 10000 messages", bytes: [...Array.from({ length: 10000 }, () => origin).flat(), ...frame(0x5a)], stdout: 10000, line: `UNKNOWN_MESSAGE: unknown message tag 0x5a ("Z") (message #10000, field tag, byte ${origin.length * 10000 + 4})` },
    { name: "a message cut short", bytes: [...origin, ...frame(0x42, 0, 0)], line: `INCOMPLETE: message cut short (Begin, message #1, field finalLsn, byte ${origin.length + 5})` },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const file = join(scratch, `bad-${c.name.replace(/\W+/g, "-")}.bin`);
      writeFileSync(file, new Uint8Array(c.bytes));
      const runs = await Promise.all(["wasm", "baseline"].map((b) => run(["decode", file, "--backend", b])));
      for (const r of runs) {
        expect(r.code, r.stderr).toBe(1);
        expect(r.stdout).toBe(`${JSON.stringify({ kind: "Origin", originLsn: "0/1", name: "x" })}\n`.repeat(c.stdout ?? 1)); // what decoded before it
      }
      expect(runs[0]!.stderr).toBe(`pgoutput-wasm: ${c.line}\n`);
      expect(runs[1]!.stderr).toBe(runs[0]!.stderr);
      expect(runs[0]!.stderr.match(/field /g), "the field is named once").toHaveLength(1);
    });
  }
});

describe.concurrent("decode: a file that is not a capture says so, with its first bytes", () => {
  // Deterministic "random" bytes (xorshift32): their first four make a frame length over 1 GiB.
  let x = 0x9e3779b9;
  const noise = Uint8Array.from({ length: 4096 }, () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x & 0xff));
  const cases = [
    { name: "a text file", file: "notes.txt", bytes: new TextEncoder().encode("# my notes\nnothing to decode here\n"), first: `"# my notes\\nnothi"` },
    { name: "random bytes", file: "noise.bin", bytes: noise, first: quotedBytes(noise.subarray(0, 16)) },
    { name: "a gzipped text file", file: "notes.txt.gz", bytes: gzipSync("hello, world\n"), first: `"hello, world\\n"` },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const file = join(scratch, c.file);
      writeFileSync(file, c.bytes);
      const r = await run(["decode", file]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr.split("\n")).toHaveLength(2); // one line
      expect(r.stderr).toMatch(/^pgoutput-wasm: (MESSAGE_TOO_LARGE|INCOMPLETE|UNKNOWN_MESSAGE): .*\bbyte \d+\) /);
      expect(r.stderr).toContain(`(hint: ${file} is not a capture file: it starts with ${c.first}, not [uint32 big-endian length][pgoutput message] (what pgoutput-wasm capture writes, gzipped or not))\n`);
    });
  }

  it("a real capture cut inside its first message is not called that (its first frame is a capture's)", async () => {
    const file = join(scratch, "cut-first.bin");
    writeFileSync(file, new Uint8Array([0, 0, 0, 11, 0x4f, 0, 0, 0])); // an Origin frame's start
    const r = await run(["decode", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^pgoutput-wasm: INCOMPLETE: /);
    expect(r.stderr).not.toContain("not a capture file");
  });
});

describe("capture to a file", () => {
  it("a connection that fails leaves no file behind (and an existing one untouched)", async () => {
    const port = await closedPort();
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    for (const name of ["new.bin", "new.bin.gz"]) {
      const file = join(scratch, name);
      const r = await run(["capture", file, "-c", url, "--publication", "p"]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/^pgoutput-wasm: connection refused at 127\.0\.0\.1:\d+ \(hint: /);
      expect(existsSync(file), `${name} was created`).toBe(false);
    }
    const old = join(scratch, "old.bin");
    writeFileSync(old, "an earlier capture");
    expect((await run(["capture", old, "-c", url, "--publication", "p"])).code).toBe(1);
    expect(readFileSync(old, "utf8")).toBe("an earlier capture");
  });
});
