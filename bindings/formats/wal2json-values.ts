/**
 * What both versions of the `wal2json` format write the same way: values,
 * type names, table selection, commit times, and the per-relation facts
 * (column names and types as JSON text, computed once per Relation
 * message).
 *
 * Values are written from the text PostgreSQL's output functions made (the
 * bytes pgoutput sent, copied from the decoder's memory without becoming
 * strings), by wal2json's rules (`pg_decode_write_value`): smallint,
 * integer, bigint, oid, real, double precision and numeric as JSON numbers
 * (their text as it is; NaN and ±Infinity as `null`), boolean as
 * `true`/`false`, bytea as its hex digits without `\x`, everything else —
 * arrays, json, domains over numbers — as a JSON string of the text. With
 * numeric-data-types-as-string (wal2json 2.6) the numbers are strings.
 */
import type { TypeInfo } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import type { RecordKind } from "../pipeline/records.ts";
import type { ByteSink } from "../jsonl/sink.ts";
import type { TypeKnowledge } from "../values/options.ts";
import { writeString } from "../jsonl/text-values.ts";
import { tapeColumns, type TapeColumns } from "../views/tuple.ts";
import { typeName, typname } from "../values/type-names.ts";
import { civilFromDays, fraction, pad2, US_PER_DAY } from "../values/calendar.ts";
import { toBase64 } from "../utf8.ts";
import { selectsTable, type Wal2jsonSettings } from "./wal2json-options.ts";
import { JK_BOOL, JK_STRING, JK_W2J_BYTEA, JK_W2J_NUMBER } from "../jsonl-tape.ts";

/** A column's kind byte, as the tape holds it (TupleData's n, u, t, b). */
export const KIND_NULL = 0x6e;
export const KIND_UNCHANGED = 0x75;
export const KIND_TEXT = 0x74;
export const KIND_BINARY = 0x62;

/** How wal2json writes a value of a type (by the column's type OID: a domain is not its base type). */
const enum ValueClass { String, Number, Bool, Bytea }

/** The kernel's column kind (jsonl-tape.ts) that writes a value of each class by wal2json's rule. */
const KERNEL_KINDS: Readonly<Record<ValueClass, number>> = {
  [ValueClass.String]: JK_STRING, [ValueClass.Number]: JK_W2J_NUMBER, [ValueClass.Bool]: JK_BOOL, [ValueClass.Bytea]: JK_W2J_BYTEA,
};

/** Column i's kernel column kind (jsonl-tape.ts JK_*): writeValue's rule for its text. */
export function kernelKind(facts: RelationFacts, i: number): number {
  return KERNEL_KINDS[facts.classes[i] ?? ValueClass.String];
}

const CLASS: Partial<Record<number, ValueClass>> = {
  21: ValueClass.Number, 23: ValueClass.Number, 20: ValueClass.Number, 26: ValueClass.Number,
  700: ValueClass.Number, 701: ValueClass.Number, 1700: ValueClass.Number,
  16: ValueClass.Bool, 17: ValueClass.Bytea,
};

/** Where a record goes: the pipeline's records, or records held back (a B that needs its transaction's end). */
export interface RecordTarget {
  readonly bytes: ByteSink;
  end(kind: RecordKind, relation?: Relation): void;
}

/** What a format writes about one relation, made once per Relation message. */
export interface RelationFacts {
  readonly relation: Relation | undefined;
  /** Kept by the table selection (add-tables, filter-tables). */
  readonly wanted: boolean;
  /** `schema` (pg_catalog for pgoutput's "") and `table`, as JSON strings. */
  readonly schema: string;
  readonly table: string;
  /** Per column, JSON text: name, type as wal2json prints it (include-typmod), type in a v1 `pk` object, type OID. */
  readonly names: string[];
  readonly types: string[];
  readonly pkTypes: string[];
  readonly oids: number[];
  /** Replica identity columns (the Relation message's key flag: every column with REPLICA IDENTITY FULL). */
  readonly keys: boolean[];
  readonly anyKey: boolean;
  /**
   * The primary key is known: REPLICA IDENTITY DEFAULT, whose identity is
   * the primary key (none flagged: the table has none). With FULL, USING
   * INDEX or NOTHING pgoutput does not say which columns it is.
   */
  readonly pkKnown: boolean;
  readonly classes: ValueClass[];
  /** Made with the decoder's type knowledge (from a row on its tape). */
  readonly informed: boolean;
  /** What a version's writer keeps per relation. */
  cache: unknown;
}

/**
 * A type name as JSON text, as wal2json writes format_type()'s result: a
 * quoted identifier (`"char"`, `"My Type"`) as it is — so its JSON string
 * is the name without the quotes — unless it ends in `]` (`arrays`: wal2json's
 * columns rule; its pk rule has none), anything else escaped. Where wal2json
 * would write invalid JSON (`"S".t`), the name is escaped.
 */
function typeJson(name: string, arrays: boolean): string {
  return name.startsWith('"') && (!arrays || !name.endsWith("]")) && /^"[^"\\\u0000-\u001f]*"$/.test(name) ? name : JSON.stringify(name);
}

export class RelationFactsCache {
  readonly #facts = new WeakMap<Relation, RelationFacts>();

  constructor(
    readonly settings: Wal2jsonSettings,
    readonly types: ReadonlyMap<number, TypeInfo> | undefined,
  ) {}

  /** The facts of a change's relation; `tuple` gives the decoder's type knowledge (array element types). */
  of(relation: Relation | undefined, relationId: number, tuple: Tuple | undefined): RelationFacts {
    const cached = relation === undefined ? undefined : this.#facts.get(relation);
    if (cached !== undefined && (cached.informed || tuple === undefined)) return cached;
    const values = tuple === undefined ? undefined : tapeColumns(tuple)?.values;
    // Made before a row (a truncate's): made again at the first row, which brings the decoder's type knowledge.
    if (cached !== undefined && values === undefined) return cached;
    const known = values === undefined ? undefined : (oid: number): TypeKnowledge | undefined => values.knownType(oid);
    const s = this.settings;
    const schema = relation === undefined ? "" : relation.namespace === "" ? "pg_catalog" : relation.namespace;
    const table = relation?.name ?? String(relationId);
    const columns = relation?.columns ?? [];
    const full = columns.map((c) => typeName(c.typeId, c.typeModifier, this.types, known));
    const facts: RelationFacts = {
      relation,
      wanted: !selectsTable(s.filterTables, schema, table) && selectsTable(s.addTables, schema, table),
      schema: JSON.stringify(schema),
      table: JSON.stringify(table),
      names: columns.map((c) => JSON.stringify(c.name)),
      // include-typmod only changes version 1; version 2 always prints format_type().
      types: s.version === 1 && !s.includeTypmod ? columns.map((c) => JSON.stringify(typname(c.typeId, this.types))) : full.map((t) => typeJson(t, true)),
      pkTypes: s.includeTypmod ? full.map((t) => typeJson(t, false)) : columns.map((c) => JSON.stringify(typname(c.typeId, this.types))),
      oids: columns.map((c) => c.typeId),
      keys: columns.map((c) => c.isKey),
      anyKey: columns.some((c) => c.isKey),
      pkKnown: relation?.replicaIdentity === "d",
      classes: columns.map((c) => CLASS[c.typeId] ?? ValueClass.String),
      informed: values !== undefined,
      cache: undefined,
    };
    if (relation !== undefined) this.#facts.set(relation, facts);
    return facts;
  }
}

/** Column i's name for a relation the stream never described (a capture cut mid-stream): its position. */
export function nameOf(facts: RelationFacts, i: number): string {
  return facts.names[i] ?? JSON.stringify(String(i));
}

/**
 * Reads a tuple's columns as bytes: for a tuple on the decoder's tape, where
 * the value is in its memory (no copy); for another, a copy.
 */
export class ColumnReader {
  u8: Uint8Array = new Uint8Array(0);
  p = 0;
  n = 0;
  #tape: TapeColumns | undefined;
  #tuple: Tuple | undefined;

  of(tuple: Tuple): this {
    this.#tuple = tuple;
    this.#tape = tapeColumns(tuple);
    return this;
  }

  /** Column i's kind (KIND_*); for text and binary, its bytes are `u8[p, p+n)`. */
  read(i: number): number {
    const t = this.#tape;
    if (t !== undefined) {
      const at = t.tape[t.first + i]!;
      const kind = t.u8[at]!;
      if (kind === KIND_TEXT || kind === KIND_BINARY) {
        this.u8 = t.u8;
        this.n = t.dv.getInt32(at + 1);
        this.p = at + 5;
      }
      return kind;
    }
    const tuple = this.#tuple!;
    const kind = tuple.kind(i);
    if (kind === "null") return KIND_NULL;
    if (kind === "unchanged") return KIND_UNCHANGED;
    const bytes = tuple.bytes(i) as Uint8Array;
    this.u8 = bytes;
    this.p = 0;
    this.n = bytes.length;
    return kind === "text" ? KIND_TEXT : KIND_BINARY;
  }
}

const NUMBER_CHARS = new Uint8Array(128);
for (const c of "0123456789+-eE.") NUMBER_CHARS[c.charCodeAt(0)] = 1;

/** Case-insensitive `word` at u8[p…]: wal2json's pg_strncasecmp(text, word, length). */
function startsWith(u8: Uint8Array, p: number, n: number, word: string): boolean {
  if (n < word.length) return false;
  for (let i = 0; i < word.length; i++) if ((u8[p + i]! | 0x20) !== (word.charCodeAt(i) | 0x20)) return false;
  return true;
}

/** A text whose UTF-8 is invalid (only outside a UTF-8 database): decoded with U+FFFD, the documented fallback. */
const lenient = new TextDecoder("utf-8");

function writeText(out: ByteSink, u8: Uint8Array, p: number, n: number): void {
  if (!writeString(out, u8, p, n)) out.str(JSON.stringify(lenient.decode(u8.subarray(p, p + n))));
}

/**
 * Writes the value of a column that is text (`kind` KIND_TEXT) or null;
 * binary-format values have no wal2json form (wal2json prints the output
 * functions' text): a TypeError says to stream without `binary`.
 */
export function writeValue(out: ByteSink, facts: RelationFacts, i: number, kind: number, col: ColumnReader, asStrings: boolean): void {
  if (kind === KIND_NULL) {
    out.str("null");
    return;
  }
  if (kind !== KIND_TEXT) throw new TypeError("format wal2json writes PostgreSQL's text output of each value: stream without binary (a column came in binary format)");
  const { u8, p, n } = col;
  switch (facts.classes[i]) {
    case ValueClass.Number: {
      const special = startsWith(u8, p, n, "NaN") || startsWith(u8, p, n, "Infinity") || startsWith(u8, p, n, "-Infinity");
      let number = n > 0;
      for (let k = p; k < p + n && number; k++) number = u8[k]! < 128 && NUMBER_CHARS[u8[k]!] === 1;
      if (asStrings && (number || special)) writeText(out, u8, p, n);
      else if (special) out.str("null");
      else if (number) out.bytes(u8, p, p + n);
      // wal2json stops with "… is not a number"; PostgreSQL never prints one. Written as a string.
      else writeText(out, u8, p, n);
      return;
    }
    case ValueClass.Bool:
      out.str(n === 1 && u8[p] === 0x74 ? "true" : "false");
      return;
    case ValueClass.Bytea:
      writeText(out, u8, p + Math.min(2, n), Math.max(0, n - 2));
      return;
    default:
      writeText(out, u8, p, n);
  }
}

/**
 * Writes a logical message's content as a JSON string: wal2json's when it
 * is UTF-8 without a NUL; otherwise (wal2json cuts it at the first NUL and
 * copies invalid bytes as they are) its base64, and returns true: the
 * caller adds `"encoding":"base64"`.
 */
export function writeContent(out: ByteSink, content: Uint8Array): boolean {
  if (!content.includes(0) && writeString(out, content, 0, content.length)) return false;
  out.str(JSON.stringify(toBase64(content)));
  return true;
}

/**
 * A commit time as wal2json prints it (timestamptz_to_str() in the
 * session's TimeZone): here always UTC, `2024-02-29 12:34:56.789012+00`,
 * trailing zeros of the fraction dropped.
 */
export function commitTimeText(unixMicros: bigint): string {
  const us = Number(unixMicros);
  const days = Math.floor(us / US_PER_DAY);
  let rest = us - days * US_PER_DAY;
  const c = civilFromDays(days);
  const secs = Math.floor(rest / 1_000_000);
  rest -= secs * 1_000_000;
  const year = c.year > 0 ? c.year : 1 - c.year;
  const date = `${String(year).padStart(4, "0")}-${pad2(c.month)}-${pad2(c.day)}`;
  const time = `${pad2(Math.floor(secs / 3600))}:${pad2(Math.floor(secs / 60) % 60)}:${pad2(secs % 60)}${fraction(rest)}`;
  return `${date} ${time}+00${c.year > 0 ? "" : " BC"}`;
}

/**
 * For the messages a format of plain transactions does not take: a
 * prepared transaction (wal2json has no two-phase output: without
 * two-phase the server sends it at COMMIT PREPARED, as wal2json shows it),
 * and streamed blocks (the pipeline replays them first). Relation, Type and
 * Origin pass (the decoder's caches have them; include-origin is refused).
 */
export function refuseUnplain(msg: PgoutputMessage | { kind: "RelationChanged" | "Ddl" }): void {
  switch (msg.kind) {
    case "RelationChanged":
    case "Ddl":
      // wal2json writes nothing for a schema change, and a DDL trigger's message as the message it is (keepsMessages).
      return;
    case "BeginPrepare":
    case "Prepare":
    case "CommitPrepared":
    case "RollbackPrepared":
      throw new TypeError(`format wal2json: ${msg.kind}: wal2json has no form for prepared transactions; stream without two-phase (the transaction then comes at COMMIT PREPARED, as wal2json shows it)`);
    case "StreamStart":
    case "StreamStop":
    case "StreamCommit":
    case "StreamAbort":
    case "StreamPrepare":
      throw new TypeError(`format wal2json: ${msg.kind}: replay streamed transactions first (a Pipeline with a replayDecoder)`);
    default:
  }
}
