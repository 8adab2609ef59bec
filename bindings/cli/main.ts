#!/usr/bin/env node
/**
 * The `pgoutput-wasm` command. Subcommands:
 *   tail            stream live changes as JSON Lines (an embedded demo without a connection)
 *   capture FILE|-  record a live stream to a capture file
 *   decode FILE|-   decode a capture file to JSON Lines
 *   slots           each replication slot's health (lag, WAL retained, status)
 *
 * `tail` and `capture` load `pg` (and the embedded PostgreSQL) only when
 * they run: both are optional dependencies of the package.
 */
import { decodeCommand } from "./decode.ts";
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

pgoutput-wasm <command> --help shows a command's options.
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "decode":
      return decodeCommand(rest);
    case "tail": {
      const { tailCommand } = await import("./tail.ts");
      return tailCommand(rest);
    }
    case "slots": {
      const { slotsCommand } = await import("./slots.ts");
      return slotsCommand(rest);
    }
    case "capture": {
      const { captureCommand } = await import("./capture.ts");
      return captureCommand(rest);
    }
    case undefined:
    case "-h":
    case "--help":
    case "help":
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`pgoutput-wasm: unknown command ${printable(JSON.stringify(command))}\n\n${USAGE}`);
      return 2;
  }
}

/** parseArgs' errors (unknown option, missing value) are usage errors. */
function isUsageError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS");
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
    text = `${outside((error as Error).message)} (hint: see pgoutput-wasm ${printable(process.argv[2] ?? "")} --help)`;
    code = 2;
  } else {
    const message = error instanceof Error ? error.message : String(error);
    text = outside(`${isPgoutputError(error) ? `${error.code}: ` : ""}${message}`);
  }
  process.stderr.write(`pgoutput-wasm: ${text.replace(/\s*\n\s*/g, " ")}\n`);
  finish(code);
});
