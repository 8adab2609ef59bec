/**
 * The pipeline seam on the command line: `--format NAME` (a format of
 * formats/index.ts), `-o/--option NAME=VALUE` (its options, checked against
 * what it declares), `--sink TARGET` (a sink of sinks/index.ts, by scheme).
 * The flags' help lists the registries' entries, so a new format or sink
 * is offered here without an edit. Unknown names are usage errors that
 * list the known ones.
 */
import { FORMATS, formatNamed, formatOptions } from "../formats/index.ts";
import type { FormatDefinition, FormatOptionValues } from "../pipeline/format.ts";
import type { SinkDefinition } from "../pipeline/sink.ts";
import { SINKS, sinkFor } from "../sinks/index.ts";
import { usage, type CliError } from "./errors.ts";
import { listFlag, type Flag, type FlagValues } from "./flags.ts";

/** Names `--format` takes besides the formats': a layout of one (kept from before the registry). */
const FORMAT_ALIASES: Readonly<Record<string, { format: string; options: FormatOptionValues; summary: string }>> = {
  pretty: { format: "jsonl", options: { pretty: true }, summary: "jsonl, indented (-o pretty)" },
};

const entries = (rows: readonly [string, string][]): string => {
  const width = Math.max(...rows.map(([name]) => name.length)) + 2;
  return rows.map(([name, summary]) => `  ${name.padEnd(width)}${summary}`).join("\n");
};

export const FORMAT: Flag = {
  name: "format", type: "string", default: "jsonl", value: "NAME",
  description: `output format (default jsonl):\n${entries([
    ...Object.values(FORMATS).map((f): [string, string] => [f.name, f.summary]),
    ...Object.entries(FORMAT_ALIASES).map(([name, a]): [string, string] => [name, a.summary]),
  ])}`,
};

export const OPTION: Flag = {
  name: "option", short: "o", type: "string", multiple: true, value: "NAME=VALUE",
  description: `a format option (repeatable; NAME alone: true; lists comma-separated):\n${entries(
    Object.values(FORMATS).filter((f) => Object.keys(f.options).length > 0).map((f) => [f.name, Object.keys(f.options).join(", ")]),
  )}`,
};

export const SINK: Flag = {
  name: "sink", type: "string", default: "-", value: "TARGET",
  description: `where the records go (default -):\n${entries(SINKS.map((s) => [s.schemes.map((x) => (x === "-" ? "-" : `${x}...`)).join(" "), s.summary]))}`,
};

export const SUBJECT: Flag = {
  name: "subject", type: "string", value: "TEMPLATE",
  description: "the subject of a table's changes for --sink nats:... ({prefix}, {schema}, {table}; default cdc.{schema}.{table}): its subject= option",
};

/** The sink options the flags give (`--subject`), for the sinks that take them. */
export function sinkOptions(target: string, values: Record<string, unknown>): Record<string, string> | undefined {
  if (values.subject === undefined) return undefined;
  if (sinkFor(target).name !== "nats") throw usage(`--subject is for --sink nats:..., not ${sinkFor(target).name}`);
  return { subject: values.subject as string };
}

/** An option's value from its text, as the format's declaration types it. */
function optionValue(format: FormatDefinition, name: string, text: string | undefined): boolean | string | string[] {
  const spec = Object.hasOwn(format.options, name) ? format.options[name] : undefined;
  if (spec?.type === "boolean" || spec === undefined) {
    if (text === undefined) return true;
    if (/^(true|yes|on|1)$/i.test(text)) return true;
    if (/^(false|no|off|0)$/i.test(text)) return false;
    if (spec === undefined) return text; // refused by name below
    throw usage(`-o ${name}: a yes or no (true, false), not ${JSON.stringify(text)}`);
  }
  if (text === undefined) throw usage(`-o ${name} needs a value: -o ${name}=VALUE`);
  return spec.type === "list" ? text.split(",").map((t) => t.trim()).filter((t) => t.length > 0) : text;
}

/**
 * The format `--format` names and its options: from `-o NAME=VALUE`, and
 * from the flags of `flags` that are shorthands of one (`--tables`; set
 * ones only). `name`: the format when the command has no --format flag.
 */
export function chosenFormat(values: FlagValues, flags: readonly Flag[], name = values.format as string): { format: FormatDefinition; options: FormatOptionValues } {
  const alias = Object.hasOwn(FORMAT_ALIASES, name) ? FORMAT_ALIASES[name] : undefined;
  let format: FormatDefinition;
  try {
    format = formatNamed(alias?.format ?? name);
  } catch (e) {
    throw usage(`${(e as Error).message}${Object.keys(FORMAT_ALIASES).map((a) => `, ${a}`).join("")}`);
  }
  const options: Record<string, boolean | string | readonly string[]> = { ...alias?.options };
  const add = (key: string, value: boolean | string | readonly string[]) => {
    const before = options[key];
    options[key] = Array.isArray(before) && Array.isArray(value) ? [...before, ...value] : value;
  };
  for (const f of flags) {
    const v = values[f.name];
    if (f.formatOption === undefined || v === undefined || v === false) continue;
    add(f.formatOption, f.multiple ? listFlag(v as string[]) : v);
  }
  for (const o of (values.option as string[] | undefined) ?? []) {
    const eq = o.indexOf("=");
    const key = eq < 0 ? o : o.slice(0, eq);
    add(key, optionValue(format, key, eq < 0 ? undefined : o.slice(eq + 1)));
  }
  try {
    return { format, options: formatOptions(format, options) };
  } catch (e) {
    throw usage((e as Error).message);
  }
}

/**
 * Checks that a sink takes `target` (before anything starts), and the
 * records' headers when the format's need them: a usage error lists the
 * schemes, or the sinks that carry headers.
 */
export function checkSink(target: string, format?: FormatDefinition, options: FormatOptionValues = {}): void {
  let sink: SinkDefinition;
  try {
    sink = sinkFor(target);
  } catch (e) {
    throw usage((e as Error).message);
  }
  if (format?.headers?.(options) === true && sink.headers !== true) throw headersUsage(format, sink.name);
}

/** The records' headers hold what they say, and `sink` has no place for them. */
export function headersUsage(format: FormatDefinition, sink: string): CliError {
  const carriers = SINKS.filter((s) => s.headers === true).flatMap((s) => s.schemes.map((x) => `${x}//`));
  return usage(`--format ${format.name} with these options puts what each record says in headers, which ${sink} has no place for`, `write to a sink that carries them: ${carriers.join(", ")}`);
}
