#!/usr/bin/env node
/**
 * The `pgoutput-wasm` command: the commands of COMMANDS (commands.ts),
 * `--version`, and the help — the top level's and each command's, made
 * from the registry and the commands' flag definitions (command.ts). Every
 * command answers -h / --help (its usage on stdout, exit 0) here, before
 * its flags are parsed. Usage errors (bad options) exit 2, other errors 1.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { commandUsage, topUsage } from "./command.ts";
import { COMMANDS, commandNamed } from "./commands.ts";
import { CliError } from "./errors.ts";
import { flagsOf, parseFlags } from "./flags.ts";
import { isUsageError, usageText, withSuggestion } from "./suggest.ts";
import { outside, printable } from "./terminal.ts";
import { isPgoutputError } from "../errors.ts";

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
  const [name, ...rest] = argv;
  const command = commandNamed(name);
  if (command !== undefined) {
    if (asksHelp(rest)) {
      process.stdout.write(commandUsage(command));
      return 0;
    }
    try {
      const { values, positionals } = parseFlags(flagsOf(command.sections), rest, command.positionals === true);
      return await command.run(values, positionals);
    } catch (error) {
      throw withSuggestion(error, command);
    }
  }
  switch (name) {
    case "--version":
    case "-v":
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    case undefined:
    case "-h":
    case "--help":
    case "help": {
      const asked = name === "help" ? commandNamed(rest[0]) : undefined;
      if (asked !== undefined) {
        process.stdout.write(commandUsage(asked));
        return 0;
      }
      (name === undefined ? process.stderr : process.stdout).write(topUsage(COMMANDS));
      return name === undefined ? 2 : 0;
    }
    default:
      process.stderr.write(`pgoutput-wasm: unknown command ${printable(JSON.stringify(name))}\n\n${topUsage(COMMANDS)}`);
      return 2;
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
  const command = process.argv[2] ?? "";
  let text: string;
  let code = 1;
  if (error instanceof CliError) {
    const hint = error.hint ?? (error.exitCode === 2 ? `see pgoutput-wasm ${command} --help` : undefined);
    text = `${outside(error.message)}${hint ? ` (hint: ${printable(hint)})` : ""}`;
    code = error.exitCode;
  } else if (isUsageError(error)) {
    text = `${outside(usageText(error as Error, command))} (hint: see pgoutput-wasm ${printable(command)} --help)`;
    code = 2;
  } else {
    const message = error instanceof Error ? error.message : String(error);
    text = outside(`${isPgoutputError(error) ? `${error.code}: ` : ""}${message}`);
  }
  process.stderr.write(`pgoutput-wasm: ${text.replace(/\s*\n\s*/g, " ")}\n`);
  finish(code);
});
