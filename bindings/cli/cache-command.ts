/**
 * `pgoutput-wasm cache path|clean`: where the cache folder is (cache.ts),
 * and removing it with what ended runs left in the temp directory.
 */
import { cacheDir, cleanCache } from "./cache.ts";
import type { Command } from "./command.ts";
import { CliError, usage } from "./errors.ts";
import { formatBytes } from "./status.ts";

export const cache: Command = {
  name: "cache",
  synopsis: "path|clean",
  summary: "where pgoutput-wasm keeps files between runs, and removing them",
  description: `The only files pgoutput-wasm keeps between runs are in one folder:
$XDG_CACHE_HOME/pgoutput-wasm, or ~/.cache/pgoutput-wasm (as root too,
in root's home). It holds PostgreSQL data-directory templates
made by the development test harness; the CLI's embedded server keeps
nothing there. What a run makes in the temp directory (its server's
pgoutputwasm-pg18-*, a copy of the binaries pgoutputwasm-bin-*) goes when
it ends, by a signal too; after a kill -9 its server stops by itself, and
the next run removes what is left.

  path    print the folder
  clean   remove it; and from the temp directory, the folders of runs that
          have ended (pgoutputwasm-pg*-*, -bin-*, -initdb-*; a server still
          running in one is stopped). Folders a running process uses
          stay, and are listed`,
  sections: [],
  positionals: true,
  run: (_values, args) => cacheCommand(args),
};

async function cacheCommand(args: string[]): Promise<number> {
  const [action, ...extra] = args;
  if (extra.length > 0 || (action !== "path" && action !== "clean")) {
    throw usage(action === undefined ? "cache needs path or clean" : `cache takes path or clean, not ${JSON.stringify(args.join(" "))}`);
  }
  if (action === "path") {
    process.stdout.write(`${cacheDir()}\n`);
    return 0;
  }
  const { removed, bytes, failed, kept } = cleanCache();
  if (removed.length > 0) process.stdout.write(`removed ${removed.join(", ")} (${formatBytes(bytes)})\n`);
  else if (failed.length === 0) process.stdout.write(`nothing to remove (${cacheDir()} does not exist)\n`);
  for (const k of kept) process.stdout.write(`kept ${k.path}: ${k.reason}\n`);
  if (failed.length === 0) return 0;
  throw new CliError(`could not remove ${failed.map((f) => `${f.path} (${f.reason})`).join(", ")}`, "another user's files: remove them as that user (or root)");
}
