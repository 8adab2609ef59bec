/**
 * parseArgs' errors in the CLI's words, and the option a mistyped one
 * probably meant: the connection under another tool's name (psql's -d,
 * twelve-factor apps' --database-url), or a flag of the command a typo or
 * two away.
 */
import type { Command } from "./command.ts";
import { CliError } from "./errors.ts";
import { flagsOf } from "./flags.ts";

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

/** The flag of `command` an unknown `option` probably meant. */
function meant(option: string, command: Command): string | undefined {
  const offered = flagsOf(command.sections).map((f) => `--${f.name}`);
  if (CONNECTION_ALIASES.has(option) && offered.includes("--connection")) return "-c/--connection";
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
export function withSuggestion(error: unknown, command: Command): unknown {
  if ((error as { code?: unknown })?.code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") return error;
  const option = /'([^']*)'/.exec((error as Error).message)?.[1];
  const guess = option === undefined ? undefined : meant(option, command);
  if (guess === undefined) return error;
  return new CliError(usageText(error as Error & { code: string }, command.name), `did you mean ${guess}? See pgoutput-wasm ${command.name} --help`, 2);
}

/** parseArgs' errors (unknown option, missing value) are usage errors. */
export function isUsageError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS");
}

/** parseArgs' message in our words: "unknown option --x", "option --x needs a value", ... */
export function usageText(error: Error & { code?: string }, command: string): string {
  const quoted = /'([^']*)'/.exec(error.message)?.[1];
  switch (error.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown option ${quoted ?? ""}`.trim();
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return quoted === undefined ? error.message : `option ${quoted.replace(/ <value>$/, "")} needs a value`;
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL":
      return `unexpected argument ${JSON.stringify(quoted ?? "")}: ${command} takes options only`;
    default:
      return error.message;
  }
}
