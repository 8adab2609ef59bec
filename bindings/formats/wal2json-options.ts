/**
 * The options of the `wal2json` format, named, spelled and defaulted as
 * wal2json 2.5/2.6 takes them (its `pg_decode_startup()`), and parsed by its
 * rules: `add-tables` / `filter-tables` are comma-separated
 * `schema.table` entries where `*.t` is table t in every schema and `s.*`
 * every table of schema s, a backslash makes the next character literal
 * (`public.Foo\ bar`, `a\,b.c`) and whitespace around an entry is dropped;
 * `add-msg-prefixes`, `filter-msg-prefixes` and `actions` split the same
 * way but keep their backslashes (as wal2json does).
 *
 * The options wal2json has that need what pgoutput does not send are
 * refused, each with its reason (`WAL2JSON_REFUSED`; docs/cli-output.md).
 */
import type { FormatOptionSpec, FormatOptionValues } from "../pipeline/format.ts";

/** A table selector of `add-tables` / `filter-tables`. */
export interface TableSelector {
  /** `*.table`: any schema. */
  readonly allSchemas: boolean;
  /** `schema.*`: any table. */
  readonly allTables: boolean;
  readonly schema: string;
  readonly table: string;
}

export interface Wal2jsonSettings {
  readonly version: 1 | 2;
  readonly includeTransaction: boolean;
  readonly includeXids: boolean;
  readonly includeTimestamp: boolean;
  readonly includeLsn: boolean;
  readonly includeSchemas: boolean;
  readonly includeTypes: boolean;
  readonly includeTypmod: boolean;
  readonly includeTypeOids: boolean;
  readonly includePk: boolean;
  readonly numbersAsStrings: boolean;
  readonly pretty: boolean;
  readonly actions: { readonly insert: boolean; readonly update: boolean; readonly delete: boolean; readonly truncate: boolean };
  readonly addTables: readonly TableSelector[];
  readonly filterTables: readonly TableSelector[];
  readonly addMsgPrefixes: readonly string[];
  readonly filterMsgPrefixes: readonly string[];
}

const bool = (description: string): FormatOptionSpec => ({ type: "boolean", description });
const text = (description: string): FormatOptionSpec => ({ type: "string", description });

/** The options taken, with wal2json's defaults in their descriptions. */
export const WAL2JSON_OPTIONS: Readonly<Record<string, FormatOptionSpec>> = {
  "format-version": text("1: one JSON document per transaction (wal2json's default); 2: one per change, with B/C records"),
  "include-transaction": bool("version 2: B and C records for each transaction (default true)"),
  "include-xids": bool("the transaction id, xid (default false)"),
  "include-timestamp": bool("the commit time, timestamp (default false)"),
  "include-lsn": bool("version 1: nextlsn; version 2: lsn (and nextlsn on B/C) (default false)"),
  "include-schemas": bool("the table's schema (default true)"),
  "include-types": bool("column types (default true)"),
  "include-typmod": bool("version 1: types with their modifier, character varying(20) rather than varchar (default true)"),
  "include-type-oids": bool("column type OIDs (default false)"),
  "include-pk": bool("the primary key's columns, pk (default false; known for REPLICA IDENTITY DEFAULT tables)"),
  "numeric-data-types-as-string": bool("numbers as JSON strings, as wal2json 2.6 (default false)"),
  "pretty-print": bool("version 1: indented with tabs (default false)"),
  actions: text("only these changes: comma-separated insert, update, delete, truncate (default all)"),
  "add-tables": text("only these tables: comma-separated schema.table, *.table, schema.*; \\ escapes (default all)"),
  "filter-tables": text("not these tables (same syntax as add-tables)"),
  "add-msg-prefixes": text("only logical messages with these prefixes (comma-separated)"),
  "filter-msg-prefixes": text("not logical messages with these prefixes (applied before add-msg-prefixes)"),
};

/** wal2json's options that need what pgoutput does not carry, and why: refused rather than ignored. */
export const WAL2JSON_REFUSED: Readonly<Record<string, string>> = {
  "include-not-null": "pgoutput's Relation message does not say which columns are NOT NULL",
  "include-default": "pgoutput does not send column default expressions",
  "include-column-positions": "pgoutput does not send column numbers (attnum): dropped and generated columns are left out",
  "include-domain-data-type": "pgoutput's Type message names a domain's base type but not its modifier",
  "include-origin": "pgoutput's Origin message carries the origin's name, not the numeric id wal2json prints",
  "filter-origins": "it takes numeric origin ids, which pgoutput does not send (the stream's origin option filters by origin)",
  "write-in-chunks": "a record is a whole document; wal2json's chunks are pieces of one",
  "include-unchanged-toast": "wal2json itself refuses it (deprecated)",
};

/** The TypeError message refusing one of WAL2JSON_REFUSED, with its reason; `undefined` for another name. */
function wal2jsonRefusal(name: string): string | undefined {
  const reason = Object.hasOwn(WAL2JSON_REFUSED, name) ? WAL2JSON_REFUSED[name] : undefined;
  return reason === undefined ? undefined : `format wal2json does not take ${name}: ${reason} (docs/cli-output.md)`;
}

const SPACE = /[ \t\n\v\f\r]/;

/**
 * wal2json's `split_string_to_list`: entries separated by commas, spaces
 * around them dropped, a backslash keeping the next character in the
 * entry (the backslash is kept too). `undefined` for bad syntax.
 */
export function splitWal2jsonList(raw: string): string[] | undefined {
  const out: string[] = [];
  let i = 0;
  const n = raw.length;
  while (i < n && SPACE.test(raw[i]!)) i++;
  if (i === n) return out;
  for (;;) {
    const start = i;
    while (i < n && raw[i] !== "," && !SPACE.test(raw[i]!)) i += raw[i] === "\\" ? 2 : 1;
    const end = Math.min(i, n);
    i = end;
    if (start === end) return undefined;
    while (i < n && SPACE.test(raw[i]!)) i++;
    out.push(raw.slice(start, end));
    if (i === n) return out;
    if (raw[i] !== ",") return undefined;
    i++;
    while (i < n && SPACE.test(raw[i]!)) i++;
  }
}

/** Drops each backslash, keeping the character after it; stops at `stop` (unescaped). */
function unescape(s: string, from: number, stop: string | undefined): { text: string; end: number } {
  let text = "";
  let i = from;
  while (i < s.length && s[i] !== stop) {
    if (s[i] === "\\") i++;
    if (i < s.length) text += s[i];
    i++;
  }
  return { text, end: i };
}

/** wal2json's `string_to_SelectTable`: `undefined` for bad syntax or an entry without a schema. */
export function parseTableSelectors(raw: string): TableSelector[] | undefined {
  const entries = splitWal2jsonList(raw);
  if (entries === undefined) return undefined;
  const out: TableSelector[] = [];
  for (const entry of entries) {
    // `*.` before any unescaping: a schema named `*` is written `\*`.
    const allSchemas = entry.startsWith("*.");
    const schema = unescape(entry, 0, ".");
    if (schema.end >= entry.length) return undefined;
    const rest = entry.slice(schema.end + 1);
    out.push({ allSchemas, allTables: rest === "*", schema: schema.text, table: unescape(rest, 0, undefined).text });
  }
  return out;
}

/** Whether one of `selectors` names schema.table. */
export function selectsTable(selectors: readonly TableSelector[], schema: string, table: string): boolean {
  for (const t of selectors) if ((t.allSchemas || t.schema === schema) && (t.allTables || t.table === table)) return true;
  return false;
}

/** Whether a logical message with this prefix is written: filter-msg-prefixes first, then add-msg-prefixes (when given). */
export function messageWanted(s: Wal2jsonSettings, prefix: string): boolean {
  if (s.filterMsgPrefixes.includes(prefix)) return false;
  return s.addMsgPrefixes.length === 0 || s.addMsgPrefixes.includes(prefix);
}

const ALL_TABLES: readonly TableSelector[] = [{ allSchemas: true, allTables: true, schema: "*", table: "*" }];

function invalid(name: string, value: string): TypeError {
  return new TypeError(`format wal2json: could not parse value ${JSON.stringify(value)} for option ${name}`);
}

/**
 * The settings from option values (formatOptions() runs it to check them
 * before anything starts; create() again). A TypeError
 * names a refused option with its reason, an unknown one, or a value wal2json
 * would not parse.
 */
export function wal2jsonSettings(values: FormatOptionValues): Wal2jsonSettings {
  for (const [name, value] of Object.entries(values)) {
    const refusal = wal2jsonRefusal(name);
    if (refusal !== undefined) throw new TypeError(refusal);
    const spec = Object.hasOwn(WAL2JSON_OPTIONS, name) ? WAL2JSON_OPTIONS[name] : undefined;
    if (spec === undefined) throw new TypeError(`format wal2json has no option ${JSON.stringify(name)} (it takes ${Object.keys(WAL2JSON_OPTIONS).join(", ")})`);
    if (typeof value !== (spec.type === "boolean" ? "boolean" : "string")) throw new TypeError(`format wal2json: option ${name} takes a ${spec.type}`);
  }
  const flag = (name: string, fallback: boolean): boolean => (values[name] as boolean | undefined) ?? fallback;
  const str = (name: string): string | undefined => values[name] as string | undefined;

  const v = str("format-version");
  if (v !== undefined && !/^\s*\d+\s*$/.test(v)) throw invalid("format-version", v);
  const version = v === undefined ? 1 : Number(v);
  if (version !== 1 && version !== 2) throw new TypeError(`format wal2json: format-version ${version}: only 1 and 2 exist`);

  let actions = { insert: true, update: true, delete: true, truncate: true };
  const a = str("actions");
  if (a !== undefined) {
    const names = splitWal2jsonList(a);
    if (names === undefined) throw invalid("actions", a);
    actions = { insert: false, update: false, delete: false, truncate: false };
    for (const name of names) {
      if (!Object.hasOwn(actions, name)) throw invalid("actions", name);
      actions[name as keyof typeof actions] = true;
    }
  }
  const tables = (name: string, fallback: readonly TableSelector[]): readonly TableSelector[] => {
    const raw = str(name);
    if (raw === undefined) return fallback;
    const parsed = parseTableSelectors(raw);
    if (parsed === undefined) throw invalid(name, raw);
    return parsed;
  };
  const prefixes = (name: string): readonly string[] => {
    const raw = str(name);
    if (raw === undefined) return [];
    const parsed = splitWal2jsonList(raw);
    if (parsed === undefined) throw invalid(name, raw);
    return parsed;
  };
  return {
    version,
    includeTransaction: flag("include-transaction", true),
    includeXids: flag("include-xids", false),
    includeTimestamp: flag("include-timestamp", false),
    includeLsn: flag("include-lsn", false),
    includeSchemas: flag("include-schemas", true),
    includeTypes: flag("include-types", true),
    includeTypmod: flag("include-typmod", true),
    includeTypeOids: flag("include-type-oids", false),
    includePk: flag("include-pk", false),
    numbersAsStrings: flag("numeric-data-types-as-string", false),
    pretty: flag("pretty-print", false),
    actions,
    // add-tables given (even empty) replaces "every table"; an empty list then adds none, as in wal2json.
    addTables: tables("add-tables", ALL_TABLES),
    filterTables: tables("filter-tables", []),
    addMsgPrefixes: prefixes("add-msg-prefixes"),
    filterMsgPrefixes: prefixes("filter-msg-prefixes"),
  };
}
