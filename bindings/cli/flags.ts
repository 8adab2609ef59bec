/**
 * The command line's flags, each defined once: its name, short form, type,
 * default, allowed values, value name and description. A command lists the
 * flags it takes (in titled sections); `parseFlags()` makes parseArgs'
 * options from them and checks the allowed values, and `flagLines()` writes
 * the usage lines, so what is accepted and what is shown cannot drift apart.
 *
 * Flags that set a format option (`--tables`, `--transactions`,
 * `--numbers-as-strings`) name it in `formatOption`: they are shorthands of
 * `-o NAME=VALUE` (output.ts).
 */
import { parseArgs } from "node:util";
import { CONNECT_TIMEOUT_MS } from "./connection.ts";
import { usage } from "./errors.ts";

export interface Flag {
  /** The long name, without `--`. */
  readonly name: string;
  readonly short?: string;
  readonly type: "boolean" | "string";
  /** Repeatable: the values are collected in a list. */
  readonly multiple?: boolean;
  readonly default?: boolean | string;
  /** The values it takes; any other is a usage error. */
  readonly choices?: readonly string[];
  /** The value's name in the usage (default: the choices, `a|b|c`). */
  readonly value?: string;
  /** The usage text; a newline starts a continuation line. */
  readonly description: string;
  /** The format option it sets (its value, or true). */
  readonly formatOption?: string;
}

/** Flags under a title in a command's usage. */
export interface FlagSection {
  readonly title: string;
  readonly flags: readonly Flag[];
}

/** Parsed values, by long name. */
export type FlagValues = Readonly<Record<string, string | boolean | string[] | undefined>>;

// ---------------------------------------------------------------- the flags

export const CONNECTION: Flag = {
  name: "connection", short: "c", type: "string", value: "STR",
  description: `postgres://user:password@host:port/database, or keyword/value
pairs: "host=db port=5432 dbname=app user=u password='p w'"
(default: the PG* variables PGHOST, PGPORT, PGUSER,
PGPASSWORD, PGDATABASE, when set); errors never show the password;
connect_timeout=SECONDS in it: how long to wait for the server (default ${CONNECT_TIMEOUT_MS / 1000})`,
};

export const BACKEND: Flag = { name: "backend", type: "string", choices: ["wasm", "baseline"], default: "wasm", description: "decoder (default wasm)" };

/** Where a stream comes from and how: tail's and capture's. */
export const SOURCE_FLAGS: readonly Flag[] = [
  CONNECTION,
  { name: "publication", type: "string", multiple: true, value: "NAME", description: "publication(s) to stream: repeat or comma-separate (required)" },
  { name: "slot", type: "string", value: "NAME", description: "slot to stream from (default: a temporary slot, changes from now on)" },
  { name: "create-slot", type: "boolean", default: false, description: "create --slot if it does not exist" },
  { name: "temporary", type: "boolean", default: false, description: "create --slot as a temporary slot (dropped on exit)" },
  { name: "start-lsn", type: "string", value: "X/Y", description: "start at this LSN (the server starts at the later of it and the slot's position)" },
  { name: "proto", type: "string", choices: ["1", "2", "3", "4"], value: "1-4", description: "pgoutput protocol version (default: what the options need)" },
  { name: "streaming", type: "string", choices: ["off", "on", "parallel"], description: "stream large transactions while in progress (default on, PostgreSQL 14+)" },
  { name: "binary", type: "boolean", default: false, description: "values in binary format" },
  { name: "messages", type: "boolean", description: "include logical decoding messages (pg_logical_emit_message)" },
  { name: "two-phase", type: "boolean", default: false, description: "decode prepared transactions at PREPARE (P, K, R lines)" },
  { name: "pg", type: "string", value: "18", description: "the embedded PostgreSQL's version (the only one it ships)" },
  {
    name: "heartbeat", type: "string", value: "SECONDS",
    description: `write a heartbeat into the WAL every SECONDS (pg_logical_emit_message,
filtered from the output) so the slot of a quiet database keeps advancing`,
  },
  { name: "failover", type: "boolean", default: false, description: "create --slot as a failover slot (PostgreSQL 17+; an error before)" },
  {
    name: "primary", type: "string", value: "STR",
    description: `the primary, when --connection is a standby (PostgreSQL 16+): a standby
cannot write, so --heartbeat writes there, and while --create-slot (or a
temporary slot) is made on the standby, pg_log_standby_snapshot() runs
there so the creation finishes on an idle primary (as --connection: a URL
or keyword/value pairs; its password is never shown)`,
  },
];

export const NO_RECONNECT: Flag = {
  name: "no-reconnect", type: "boolean", default: false,
  description: `exit on a lost connection instead of reconnecting (reconnecting, the
default, needs a slot that outlives the connection: --slot, not --temporary;
transactions not yet acknowledged are written again)`,
};

export const DDL: Flag = {
  name: "ddl", type: "boolean", default: false,
  description: `write the DDL commands the event trigger captured (Q lines; install it
first: pgoutput-wasm ddl install)`,
};

export const UNTIL: Flag = {
  name: "until", type: "string", value: "X/Y",
  description: `stop after the last transaction that ends at or before this LSN
(acknowledged), once the server's WAL reached it`,
};

export const SNAPSHOT: Flag = {
  name: "snapshot", type: "boolean", default: false,
  description: `first write every row the publications hold (S lines, initial snapshot),
then the changes after them; needs a new slot (--create-slot, or no --slot)`,
};

export const BACKFILL: Flag = {
  name: "backfill", type: "string", multiple: true, value: "TABLE",
  description: `also write every row of these tables while streaming (S lines among the
changes: read in key order, in chunks between WAL watermarks, on the running
slot); schema.table or table, repeat or comma-separate; turns on --messages`,
};

/** How a stream is run: tail's and capture's. */
export const RUN_FLAGS: readonly Flag[] = [
  { name: "max-messages", type: "string", value: "N", description: "stop after N records: N lines, or N messages of a capture" },
  {
    name: "ack", type: "string", choices: ["auto", "manual", "none"], default: "auto",
    description: `auto (default): acknowledge a transaction once the sink holds it
(stdout: written; a file: written and flushed to disk);
manual: acknowledge LSNs read from stdin (X/Y, or a line's JSON with nextlsn);
none: never (a later run from the slot gets them all again)`,
  },
  BACKEND,
  { name: "follow", type: "boolean", default: false, description: "embedded demo: keep streaming after the workload until Ctrl-C" },
  { name: "progress", type: "boolean", default: false, description: "status line and summary on stderr even when it is not a terminal" },
];

/** tail's: the memory streamed transactions may take until their commit (pipeline/resequence.ts). */
export const HELD_MEMORY: Flag = {
  name: "held-memory", type: "string", value: "MIB",
  description: `streamed transactions are held until they commit: in memory up to
MIB for all of them (default 32), beyond it in temporary files
(removed as soon as made: nothing is left, however the run ends)`,
};

// Shorthands of jsonl's options (formats/jsonl.ts), for tail and decode --changes.
export const TABLES: Flag = {
  name: "tables", type: "string", multiple: true, value: "LIST", formatOption: "tables",
  description: "only these tables: schema.table or table; repeat or comma-separate",
};
export const TRANSACTIONS: Flag = { name: "transactions", type: "boolean", default: false, formatOption: "transactions", description: "also write B (begin) and C (commit) lines" };
export const NUMBERS_AS_STRINGS: Flag = {
  name: "numbers-as-strings", type: "boolean", default: false, formatOption: "numbers-as-strings",
  description: "int8 and numeric as JSON strings (default: exact JSON numbers)",
};

/** -h / --help, which main.ts answers before a command runs: in every usage, never parsed. */
const HELP: Flag = { name: "help", short: "h", type: "boolean", description: "this help" };

// ---------------------------------------------------------------- parsing

/** A list in words: "a, b or c". */
export function orList(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
}

/** Parses `args` with `flags`; a value outside a flag's choices is a usage error. parseArgs' own errors (unknown option, missing value) are left to main.ts. */
export function parseFlags(flags: readonly Flag[], args: string[], allowPositionals: boolean): { values: FlagValues; positionals: string[] } {
  const options: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean; default?: string | boolean }> = {};
  for (const f of flags) {
    // parseArgs checks each key it finds: only those set.
    options[f.name] = { type: f.type, ...(f.short && { short: f.short }), ...(f.multiple && { multiple: true }), ...(f.default !== undefined && { default: f.default }) };
  }
  const { values, positionals } = parseArgs({ args, options, allowPositionals, strict: true });
  for (const f of flags) {
    const v = values[f.name];
    if (f.choices === undefined || v === undefined || f.choices.includes(String(v))) continue;
    throw usage(`--${f.name} must be ${orList(f.choices)}, not ${JSON.stringify(v)}`);
  }
  return { values: values as FlagValues, positionals };
}

/** A repeatable, comma-separable list flag's items. */
export function listFlag(values: readonly string[] | undefined): string[] {
  return (values ?? []).flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v.length > 0);
}

/** Every flag of sections, each once. */
export function flagsOf(sections: readonly FlagSection[]): Flag[] {
  return [...new Set(sections.flatMap((s) => s.flags))];
}

// ---------------------------------------------------------------- usage lines

/** Where descriptions start. */
const COLUMN = 25;

/** A flag as the usage shows it: `-c, --connection STR`. */
function flagText(f: Flag): string {
  const value = f.type === "string" ? ` ${f.value ?? f.choices?.join("|") ?? "VALUE"}` : "";
  return `${f.short ? `-${f.short}, ` : ""}--${f.name}${value}`;
}

/** The usage lines of a section's flags; `help`: add -h, --help. */
export function flagLines(flags: readonly Flag[], help = false): string {
  const out: string[] = [];
  for (const f of help ? [...flags, HELP] : flags) {
    const left = `  ${flagText(f)}`;
    const [first, ...rest] = f.description.split("\n");
    out.push(left.length < COLUMN - 1 ? `${left.padEnd(COLUMN - 1)} ${first}` : `${left}  ${first}`);
    for (const line of rest) out.push(`${" ".repeat(COLUMN)}${line}`);
  }
  return out.join("\n");
}
