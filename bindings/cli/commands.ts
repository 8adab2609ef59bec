/**
 * The commands, in the order the top-level help lists them: one entry per
 * command file (command.ts). `tail` and `capture` load `pg` (a dependency)
 * and the embedded PostgreSQL (an optional one) only when they run.
 */
import { cache } from "./cache-command.ts";
import { capture } from "./capture.ts";
import type { Command } from "./command.ts";
import { ddl } from "./ddl-command.ts";
import { decode } from "./decode.ts";
import { slots } from "./slots.ts";
import { tail } from "./tail.ts";

export const COMMANDS: readonly Command[] = [tail, capture, decode, slots, ddl, cache];

/** The command named, if there is one. */
export function commandNamed(name: string | undefined): Command | undefined {
  return COMMANDS.find((c) => c.name === name);
}
