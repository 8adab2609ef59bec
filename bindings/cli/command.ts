/**
 * A command of the CLI: one file exporting one of these, and one entry in
 * COMMANDS (commands.ts). main.ts parses its flags (flags.ts) and answers
 * -h / --help with its usage, which is made here from its description and
 * its flag sections: what it accepts and what its help shows come from the
 * same definitions.
 */
import { flagLines, type FlagSection, type FlagValues } from "./flags.ts";

export interface Command {
  readonly name: string;
  /** What follows the name in the usage line: `[options]`, `FILE|- [options]`, `path|clean`. */
  readonly synopsis: string;
  /** One line for the top-level help. */
  readonly summary: string;
  /** Command lines shown under it in the top-level help. */
  readonly examples?: readonly string[];
  /** The paragraphs before the flags. */
  readonly description: string;
  readonly sections: readonly FlagSection[];
  /** The paragraphs after the flags (exit codes, signals). */
  readonly notes?: string;
  /** Whether it takes arguments besides its flags (checked by the command). */
  readonly positionals?: boolean;
  /** Runs it with its parsed flags; resolves with the exit code. */
  run(values: FlagValues, positionals: string[]): Promise<number>;
}

/** The command's usage text: its --help. */
export function commandUsage(c: Command): string {
  const parts = [`usage: pgoutput-wasm ${c.name} ${c.synopsis}`, c.description.trim()];
  c.sections.forEach((s, i) => parts.push(`${s.title}:\n${flagLines(s.flags, i === c.sections.length - 1)}`));
  if (c.notes !== undefined) parts.push(c.notes.trim());
  return `${parts.join("\n\n")}\n`;
}

/** The top-level help: every command of `commands`, its arguments, summary and examples. */
export function topUsage(commands: readonly Command[]): string {
  const lefts = commands.map((c) => `  ${c.name} ${c.synopsis.replace(/\s*\[options\]$/, "")}`.trimEnd());
  const column = Math.max(...lefts.map((l) => l.length)) + 2;
  const lines: string[] = [];
  commands.forEach((c, i) => {
    lines.push(`${lefts[i]!.padEnd(column)}${c.summary}`);
    for (const e of c.examples ?? []) lines.push(`${" ".repeat(column + 2)}${e}`);
  });
  return `usage: pgoutput-wasm <command> [options]

commands:
${lines.join("\n")}

pgoutput-wasm <command> --help shows a command's options; pgoutput-wasm --version its version.
`;
}
