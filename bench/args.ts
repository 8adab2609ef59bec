// A bench's command line: `--name value` pairs, as every bench script takes them.

/** The value after `--name`, or undefined when it is not given. */
export function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** The number after `--name`, or `fallback` when it is not given. */
export function numberArg(name: string, fallback: number): number {
  const value = arg(name);
  return value === undefined ? fallback : Number(value);
}
