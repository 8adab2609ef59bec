#!/usr/bin/env node
/**
 * The `pgoutput-wasm` command. Subcommands:
 *   tail            stream live changes as JSON Lines (an embedded demo without a connection)
 *   capture FILE|-  record a live stream to a capture file
 *   decode FILE|-   decode a capture file to JSON Lines
 *   slots           each replication slot's health (lag, WAL retained, status)
 *   cache path|clean  the cache folder (cache.ts)
 *
 * Every command answers -h / --help (its usage on stdout, exit 0) here,
 * before it runs: a new command gets it by its entry in COMMANDS. Usage
 * errors (bad options) exit 2, other errors 1.
 *
 * `tail` and `capture` load `pg` (a dependency) and the embedded
 * PostgreSQL (an optional one) only when they run.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { DECODE_USAGE, decodeCommand } from "./decode.ts";
import { CliError } from "./errors.ts";
import { outside, printable } from "./terminal.ts";
import { isPgoutputError } from "../errors.ts";

const USAGE = `usage: pgoutput-wasm <command> [options]

commands:
  tail           stream changes from a logical replication slot as JSON Lines, one line per
                 change (typed values, after wal2json's format-version 2; docs/cli-output.md).
                 Without --connection: a throwaway embedded PostgreSQL 18 with a demo workload,
                 streamed and printed; it exits by itself when the demo is done (--follow: Ctrl-C)
                   npx pgoutput-wasm tail
                   npx pgoutput-wasm tail -c postgres://user@db/app --publication app --slot app_cdc --create-slot
  capture FILE|- record a live stream to a capture file (.gz: gzipped); same options as tail
  decode FILE|-  decode a capture file ([uint32 BE length][message]..., optionally gzipped)
                 to one JSON object per message on stdout
                   --backend wasm|baseline   decoder to use (default wasm)
                   --stats                   print counts by message kind to stderr
                   --values                  add typed column values (newValues, oldValues)
                   --changes                 tail's output instead: one line per change, typed
                                             (with --transactions, --tables, --numbers-as-strings)
                   --format jsonl|pretty     one line per object (default), or indented
  slots          each replication slot's health as a table (or --json): lag, WAL retained,
                 safe_wal_size, wal_status, invalidation reason, failover, active pid
                   npx pgoutput-wasm slots -c postgres://user@db/app

  cache path|clean   where pgoutput-wasm keeps files between runs, and removing them

pgoutput-wasm <command> --help shows a command's options; pgoutput-wasm --version its version.
`;

/** A command: its usage text (printed for --help) and what runs it; loaded when used. */
interface Command {
  usage: string;
  run(args: string[]): Promise<number>;
}

const COMMANDS: Record<string, () => Promise<Command>> = {
  tail: async () => { const m = await import("./tail.ts"); return { usage: m.TAIL_USAGE, run: m.tailCommand }; },
  capture: async () => { const m = await import("./capture.ts"); return { usage: m.CAPTURE_USAGE, run: m.captureCommand }; },
  decode: async () => ({ usage: DECODE_USAGE, run: decodeCommand }),
  slots: async () => { const m = await import("./slots.ts"); return { usage: m.SLOTS_USAGE, run: m.slotsCommand }; },
  cache: async () => { const m = await import("./cache-command.ts"); return { usage: m.CACHE_USAGE, run: m.cacheCommand }; },
};

/** -h / --help among a command's arguments (not after `--`, which ends the options). */
function asksHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/** The version in the package.json above this file (dist/cli/, bindings/cli/ or a test build). */
function packageVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 5; up++, dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "pgoutput-wasm" && typeof pkg.version === "string") return pkg.version;
    } catch {
      /* not here: look further up */
    }
  }
  return "unknown";
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const load = command === undefined ? undefined : Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (load !== undefined) {
    const cmd = await load();
    if (asksHelp(rest)) {
      process.stdout.write(cmd.usage);
      return 0;
    }
    try {
      return await cmd.run(rest);
    } catch (error) {
      throw withSuggestion(error, cmd.usage);
    }
  }
  switch (command) {
    case "--version":
    case "-v":
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    case undefined:
    case "-h":
    case "--help":
    case "help":
      if (command === "help" && rest[0] !== undefined && Object.hasOwn(COMMANDS, rest[0])) {
        process.stdout.write((await COMMANDS[rest[0]]!()).usage);
        return 0;
      }
      (command === undefined ? process.stderr : process.stdout).write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`pgoutput-wasm: unknown command ${printable(JSON.stringify(command))}\n\n${USAGE}`);
      return 2;
  }
}

/** What other tools (psql, ORMs, twelve-factor apps) call the connection: the command's -c/--connection, where it has one. */
const CONNECTION_ALIASES = new Set([
  "--url", "--uri", "--dsn", "--database-url", "--db-url", "--conninfo", "--connection-string", "--conn", "--connstring",
  "--database", "--db", "--dbname", "--host", "--port", "--user", "--username", "-d", "-U", "-p",
]);

/** Levenshtein distance, for a misspelt option. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[b.length]!;
}

/** The option of `usage` an unknown `option` probably meant: the connection under another name, or one a typo or two away. */
function meant(option: string, usage: string): string | undefined {
  const offered = new Set(usage.match(/--[a-z][a-z0-9-]*/g) ?? []);
  if (CONNECTION_ALIASES.has(option) && offered.has("--connection")) return "-c/--connection";
  const dashed = option.replace(/_/g, "-");
  let best: string | undefined;
  let bestDistance = 3; // at most two edits
  for (const o of offered) {
    const d = distance(dashed, o);
    if (d < bestDistance) [best, bestDistance] = [o, d];
  }
  return best;
}

/** An unknown option of a command as a usage error with what it probably meant; anything else as it is. */
function withSuggestion(error: unknown, usage: string): unknown {
  if ((error as { code?: unknown })?.code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") return error;
  const option = /'([^']*)'/.exec((error as Error).message)?.[1];
  const guess = option === undefined ? undefined : meant(option, usage);
  if (guess === undefined) return error;
  return new CliError(usageText(error as Error & { code: string }), `did you mean ${guess}? See pgoutput-wasm ${process.argv[2] ?? ""} --help`, 2);
}

/** parseArgs' errors (unknown option, missing value) are usage errors. */
function isUsageError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS");
}

/** parseArgs' message in our words: "unknown option --x", "option --x needs a value", ... */
function usageText(error: Error & { code?: string }): string {
  const quoted = /'([^']*)'/.exec(error.message)?.[1];
  switch (error.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown option ${quoted ?? ""}`.trim();
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return quoted === undefined ? error.message : `option ${quoted.replace(/ <value>$/, "")} needs a value`;
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL":
      return `unexpected argument ${JSON.stringify(quoted ?? "")}: ${process.argv[2]} takes options only`;
    default:
      return error.message;
  }
}

function finish(code: number): void {
  process.exitCode = code;
  // Normally nothing is left and the process ends now; if a socket or timer lingers, do not hang.
  setTimeout(() => process.exit(code), 2000).unref();
}

main(process.argv.slice(2)).then(finish, (error: unknown) => {
  // Messages may carry outside text (server errors, the connection string):
  // redacted and made printable. Hints are the CLI's own words, but may name
  // things from the server (publications, roles): printable.
  let text: string;
  let code = 1;
  if (error instanceof CliError) {
    const hint = error.hint ?? (error.exitCode === 2 ? `see pgoutput-wasm ${process.argv[2] ?? ""} --help` : undefined);
    text = `${outside(error.message)}${hint ? ` (hint: ${printable(hint)})` : ""}`;
    code = error.exitCode;
  } else if (isUsageError(error)) {
    text = `${outside(usageText(error as Error))} (hint: see pgoutput-wasm ${printable(process.argv[2] ?? "")} --help)`;
    code = 2;
  } else {
    const message = error instanceof Error ? error.message : String(error);
    text = outside(`${isPgoutputError(error) ? `${error.code}: ` : ""}${message}`);
  }
  process.stderr.write(`pgoutput-wasm: ${text.replace(/\s*\n\s*/g, " ")}\n`);
  finish(code);
});
