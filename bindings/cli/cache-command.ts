/**
 * `pgoutput-wasm cache path|clean`: where the cache folder is (cache.ts),
 * and removing it.
 */
import { cacheDir, cleanCache } from "./cache.ts";
import { CliError, usage } from "./errors.ts";
import { formatBytes } from "./status.ts";

export const CACHE_USAGE = `usage: pgoutput-wasm cache path|clean

The only files pgoutput-wasm keeps between runs are in one folder:
$XDG_CACHE_HOME/pgoutput-wasm, or ~/.cache/pgoutput-wasm (as root too,
in root's home). It holds PostgreSQL data-directory templates
made by the development test harness; the CLI's embedded server keeps
nothing there (its data directory is temporary and removed on exit).

  path    print the folder
  clean   remove it, and the copies older versions left in the temp directory
          (pgoutputwasm-template-*, pgoutputwasm-native-*)
`;

export async function cacheCommand(args: string[]): Promise<number> {
  const [action, ...extra] = args;
  if (extra.length > 0 || (action !== "path" && action !== "clean")) {
    throw usage(action === undefined ? "cache needs path or clean" : `cache takes path or clean, not ${JSON.stringify(args.join(" "))}`);
  }
  if (action === "path") {
    process.stdout.write(`${cacheDir()}\n`);
    return 0;
  }
  const { removed, bytes, failed } = cleanCache();
  if (removed.length > 0) process.stdout.write(`removed ${removed.join(", ")} (${formatBytes(bytes)})\n`);
  else if (failed.length === 0) process.stdout.write(`nothing to remove (${cacheDir()} does not exist)\n`);
  if (failed.length === 0) return 0;
  throw new CliError(`could not remove ${failed.map((f) => `${f.path} (${f.reason})`).join(", ")}`, "another user's files: remove them as that user (or root)");
}
