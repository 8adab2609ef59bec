#!/usr/bin/env node
/**
 * The `pgoutput-wasm` command. Subcommands:
 *   decode FILE|-   decode a capture file to JSON Lines
 */
import { decodeCommand } from "./decode.ts";
import { isPgoutputError } from "../errors.ts";

const USAGE = `usage: pgoutput-wasm <command> [options]

commands:
  decode FILE|-  decode a capture file ([uint32 BE length][message]..., optionally gzipped)
                 to one JSON object per message on stdout
                   --backend wasm|baseline   decoder to use (default wasm)
                   --stats                   print counts by message kind to stderr
                   --values                  add typed column values (newValues, oldValues)
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "decode":
      return decodeCommand(rest);
    case undefined:
    case "-h":
    case "--help":
    case "help":
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`pgoutput-wasm: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (error: unknown) => {
    const text = error instanceof Error ? error.message : String(error);
    process.stderr.write(`pgoutput-wasm: ${isPgoutputError(error) ? `${error.code}: ` : ""}${text}\n`);
    process.exitCode = 1;
  },
);
