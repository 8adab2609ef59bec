/**
 * The rows of Debezium's events (debezium.ts): per relation, how each
 * column is written (`"name":` and its value rule, debezium-values.ts), the
 * message key's columns and the replica identity's; and a row written as
 * its struct, `{"column":value,…}` — text values straight from the bytes
 * PostgreSQL sent by the decoder's kernel (`jsonColumns`,
 * bindings/jsonl-tape.ts, from a column table per relation: the JSON
 * Lines' rules where Debezium's JSON is theirs, its own JK_DBZ_* forms),
 * or where it declines by the JSON Lines' rules in JS (jsonl/text-values.ts)
 * or from the decoder's JS values; unchanged TOAST from the old row where
 * it has it, else Debezium's placeholder.
 */
import type { TypeInfo } from "../decoder.ts";
import type { Relation } from "../relation.ts";
import { unchangedToast, type Tuple } from "../tuple.ts";
import { toBase64 } from "../utf8.ts";
import { sourceOf } from "../values/toast.ts";
import { tapeColumns, type TapeColumns } from "../views/tuple.ts";
import { kernelKind, writeString, writeTextValue } from "../jsonl/text-values.ts";
import { jsonArea, type JsonArea } from "../kernel/json-area.ts";
import {
  JF_COMMA, JF_KEYS, JF_NO_CLOSE, JK_DECLINE, JK_STRING, JSON_DECLINED, JSON_DONE, JSON_REFUSED, JK_DBZ_DECIMAL, JK_DBZ_FLOAT4, JK_DBZ_DATE, JK_DBZ_TIME_MS,
  JK_DBZ_TIME_US, JK_DBZ_TIMESTAMP_MS, JK_DBZ_TIMESTAMP_US, JK_DBZ_TIMESTAMPTZ, JK_DBZ_HEX, JK_DBZ_BASE64_URL, JK_DBZ_BASE64, JK_DBZ_INTERVAL,
} from "../jsonl-tape.ts";
import type { ByteSink } from "../jsonl/sink.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import { FIRST_NORMAL_OID } from "../values/oids.ts";
import type { TapeBatch } from "../views/batch.ts";
import { HEADER_WORDS, H_TAG } from "../tape.ts";

const TAG_INSERT = 0x49; // 'I'
const TAG_DELETE = 0x44; // 'D'
import { tableFilter } from "./tables.ts";
import { placeholderText, UNAVAILABLE, representedType, valueText, type DecimalHandling, type ValueModes, type ValueText } from "./debezium-values.ts";

const KIND_T = 0x74;

/** A column as this format writes it: `"name":` and how its value becomes JSON. */
interface Column {
  readonly member: Uint8Array;
  /** How the kernel writes its text value (jsonl-tape.ts JK_*; JK_DECLINE: the JS path's). */
  readonly kernel: number;
  /** The type it is written as (a domain's base type). */
  readonly type: number;
  readonly identity: boolean;
  readonly text: ValueText;
  /** Writes a text value straight from its bytes (false: the JS path must). */
  readonly fast: ((out: ByteSink, u8: Uint8Array, p: number, n: number) => boolean) | undefined;
  readonly placeholder: string;
}

/** Per relation, made once. */
export interface Plan {
  readonly wanted: boolean;
  readonly columns: readonly Column[];
  /** The message key's columns; `undefined`: the record has no key. */
  readonly key: readonly number[] | undefined;
  /** The replica identity's columns (what a `K` old tuple carries). */
  readonly identity: readonly number[];
  /** `,"schema":…,"table":…` of `source`. */
  readonly names: string;
  /** `schema.table`, for the transaction's per-table counts. */
  readonly collection: string;
  /** Its column table in a decoder's JSON area (kernel/json-area.ts), as of that area's generation. */
  table?: { area: JsonArea; generation: number; knowledge: number; at: number };
}

/** A row to write as a struct: a tuple, the old tuple its unchanged TOAST comes from, the columns (`undefined`: all). */
export interface Row {
  readonly tuple: Tuple;
  readonly old: Tuple | undefined;
  readonly only: readonly number[] | undefined;
}

/** Text values whose JSON is the JSON Lines' (jsonl/text-values.ts): integers, booleans, strings, float8 and their arrays. */
const SAME_AS_JSONL = new Set([16, 21, 23, 20, 26, 28, 29, 25, 1043, 1042, 19, 18, 2950, 142, 1790, 705, 701, 1005, 1007, 1016, 1009, 1015, 1014, 1003]);

/**
 * The kernel's rule for a text value of this type (jsonl-tape.ts JK_*): the
 * JSON Lines' where Debezium's JSON is theirs, else Debezium's own forms
 * as debezium-values.ts valueText() picks them for the type modifier and
 * modes (JK_DBZ_*).
 */
function kernelRule(oid: number, typmod: number, modes: ValueModes): number {
  if (SAME_AS_JSONL.has(oid)) return kernelKind(oid);
  const upTo3 = typmod >= 0 && typmod <= 3;
  switch (oid) {
    case 114:
    case 3802:
      return JK_STRING;
    case 1700:
      return modes.decimal === "string" ? JK_DBZ_DECIMAL : JK_DECLINE;
    case 700:
      return JK_DBZ_FLOAT4;
    case 1082:
      return JK_DBZ_DATE;
    case 1083:
      return modes.time === "adaptive" && upTo3 ? JK_DBZ_TIME_MS : JK_DBZ_TIME_US;
    case 1114:
      return modes.time !== "microseconds" && upTo3 ? JK_DBZ_TIMESTAMP_MS : JK_DBZ_TIMESTAMP_US;
    case 1184:
      // Six fraction digits: a precision of 6 or none.
      return typmod < 0 || typmod >= 6 ? JK_DBZ_TIMESTAMPTZ : JK_DECLINE;
    case 17:
      return modes.binary === "hex" ? JK_DBZ_HEX : modes.binary === "base64-url-safe" ? JK_DBZ_BASE64_URL : JK_DBZ_BASE64;
    case 1186:
      return modes.interval === "string" ? JK_DBZ_INTERVAL : JK_DECLINE;
    default:
      return JK_DECLINE;
  }
}

function fastWriter(oid: number, decimal: DecimalHandling): Column["fast"] {
  if (SAME_AS_JSONL.has(oid)) return (out, u8, p, n) => writeTextValue(out, oid, u8, p, n, false);
  // json, jsonb: their text as a string.
  if (oid === 114 || oid === 3802) return writeString;
  // numeric in `string` mode: a number's text as a string (NaN and Infinity get Debezium's names on the JS path).
  if (oid === 1700 && decimal === "string") return (out, u8, p, n) => n > 0 && (u8[p] !== 0x2d || n > 1) && isDigit(u8[u8[p] === 0x2d ? p + 1 : p]!) && writeString(out, u8, p, n);
  return undefined;
}

const isDigit = (b: number): boolean => b >= 0x30 && b <= 0x39;

/** `message.key.columns`: entries `table-regex:column,column` separated by `;`. */
export function parseKeyColumns(text: string | undefined): { table: RegExp; columns: string[] }[] {
  if (text === undefined || text.trim() === "") return [];
  return text.split(";").map((entry) => {
    const colon = entry.lastIndexOf(":");
    const columns = colon < 0 ? [] : entry.slice(colon + 1).split(",").map((c) => c.trim()).filter((c) => c !== "");
    if (colon <= 0 || columns.length === 0) throw new TypeError(`key-columns: ${JSON.stringify(entry)} is not schema.table:column[,column] (entries separated by ;)`);
    let table: RegExp;
    try {
      table = new RegExp(`^(?:${entry.slice(0, colon).trim()})$`);
    } catch (e) {
      throw new TypeError(`key-columns: ${JSON.stringify(entry.slice(0, colon))} is not a regular expression: ${(e as Error).message}`);
    }
    return { table, columns };
  });
}

export interface RowOptions {
  keyColumns?: string;
  tables?: readonly string[];
  modes: ValueModes;
  types?: ReadonlyMap<number, TypeInfo>;
  /** The decoder's kernel writes the columns it can (else the JS path writes every value). */
  kernel: boolean;
}

export class DebeziumRows {
  readonly #keyColumns: { table: RegExp; columns: string[] }[];
  readonly #wanted: ((rel: Relation | undefined) => boolean) | undefined;
  readonly #modes: ValueModes;
  readonly #types: ReadonlyMap<number, TypeInfo> | undefined;
  readonly #plans = new WeakMap<Relation, Plan>();
  readonly #kernel: boolean;

  constructor(o: RowOptions) {
    this.#keyColumns = parseKeyColumns(o.keyColumns);
    this.#wanted = tableFilter(o.tables);
    this.#modes = o.modes;
    this.#types = o.types;
    this.#kernel = o.kernel;
  }

  plan(rel: Relation | undefined): Plan {
    if (rel === undefined) return { wanted: this.#wanted === undefined, columns: [], key: undefined, identity: [], names: `,"schema":"","table":""`, collection: "" };
    let plan = this.#plans.get(rel);
    if (plan !== undefined) return plan;
    const schema = rel.namespace === "" ? "pg_catalog" : rel.namespace;
    const collection = `${schema}.${rel.name}`;
    const columns = rel.columns.map((c): Column => {
      const oid = representedType(c.typeId, this.#types);
      return {
        member: encoder.encode(`${JSON.stringify(c.name)}:`), kernel: kernelRule(oid, c.typeModifier, this.#modes), type: oid, identity: c.isKey, text: valueText(oid, c.typeModifier, this.#modes),
        fast: fastWriter(oid, this.#modes.decimal), placeholder: placeholderText(oid, this.#modes),
      };
    });
    const identity = rel.columns.flatMap((c, i) => (c.isKey ? [i] : []));
    plan = {
      wanted: this.#wanted?.(rel) ?? true, columns, key: this.#keyOf(rel, collection, identity), identity,
      names: `,"schema":${JSON.stringify(schema)},"table":${JSON.stringify(rel.name)}`, collection,
    };
    this.#plans.set(rel, plan);
    return plan;
  }

  /**
   * The key's columns: `key-columns`' for the table, else the replica
   * identity's (the primary key, or the USING INDEX index). REPLICA
   * IDENTITY FULL flags every column, which says nothing of the table's
   * key: no key then, unless `key-columns` names one.
   */
  #keyOf(rel: Relation, collection: string, identity: number[]): number[] | undefined {
    const names = rel.columns.map((c) => c.name);
    for (const entry of this.#keyColumns) {
      if (!entry.table.test(collection)) continue;
      const key = entry.columns.map((c) => names.indexOf(c)).filter((i) => i >= 0);
      if (key.length > 0) return key;
    }
    if (rel.replicaIdentity === "f" || rel.replicaIdentity === "n") return undefined;
    // The identity itself, which the kernel writes (struct(), tapeKey()).
    return identity.length > 0 ? identity : undefined;
  }

  /** The key struct of a row, written into `sink` (emptied first); `undefined` when the table has no key. */
  key(sink: ByteSink, row: Row, plan: Plan): Uint8Array | undefined {
    if (plan.key === undefined) return undefined;
    sink.len = 0;
    this.struct(sink, row, plan);
    return sink.buf.subarray(0, sink.len);
  }

  /**
   * The key struct of row change i of `batch` (an Insert's or Update's new
   * tuple, a Delete's old one) as key() writes it, by the kernel straight
   * from the tape: no view of the message. `undefined` when the record has
   * no key or the kernel declines a column of it (key() then writes it).
   */
  tapeKey(sink: ByteSink, batch: TapeBatch, i: number, plan: Plan): Uint8Array | undefined {
    const area = batch.host === undefined ? undefined : jsonArea(batch.host);
    if (plan.key === undefined || area === undefined || plan.key !== plan.identity) return undefined;
    const t = batch.t;
    const record = batch.recordAt(i);
    const tag = t[record + H_TAG]! & 0xff;
    const body = record + HEADER_WORDS;
    // Insert: TUPLE; Delete: oldTupleType, TUPLE; Update: oldTupleType, [TUPLE], TUPLE (tape.ts).
    const tuple = tag === TAG_INSERT ? body : tag === TAG_DELETE || t[body] === 0 ? body + 1 : body + 2 + t[body + 1]!;
    if (t[tuple] !== plan.columns.length) return undefined;
    if (area.columns(tuple * 4, 0, this.tableOf(plan, area, batch.values), 0, JF_NO_CLOSE | JF_KEYS) !== JSON_DONE) return undefined;
    sink.len = 0;
    sink.byte(0x7b);
    sink.bytes(area.u8, area.out, area.out + area.written);
    sink.byte(0x7d);
    return sink.buf.subarray(0, sink.len);
  }

  /** `before`: the whole old row (REPLICA IDENTITY FULL), or the replica identity's columns of a `K` tuple. */
  oldRow(old: Tuple, type: "K" | "O", plan: Plan): Row {
    return { tuple: old, old: undefined, only: type === "O" ? undefined : plan.identity };
  }

  /** `{"column":value,…}` of a row (`only`: these columns); unchanged TOAST from `old` where it has the value, else the placeholder. */
  struct(out: ByteSink, row: Row, plan: Plan): void {
    const { tuple, old, only } = row;
    const here = tapeColumns(tuple);
    const there = old === undefined ? undefined : tapeColumns(old);
    out.byte(0x7b);
    const n = only === undefined ? tuple.length : only.length;
    let first = true;
    let k = 0;
    // The kernel writes what it can of a whole row, or of its replica identity's columns (the key bits of its table).
    const whole = only === undefined || only === plan.identity;
    const area = this.#kernel && whole && here?.host !== undefined && tuple.length === plan.columns.length ? jsonArea(here.host) : undefined;
    if (area !== undefined) {
      const tupleAt = (here!.first - 1) * 4;
      const oldAt = there === undefined || there.host !== here!.host ? 0 : (there.first - 1) * 4;
      const table = this.tableOf(plan, area, here!.values);
      let flags = JF_NO_CLOSE | (only === undefined ? 0 : JF_KEYS);
      let i = 0;
      for (;;) {
        const status = area.columns(tupleAt, oldAt, table, i, flags);
        if (status === JSON_REFUSED) break;
        if (area.written > 0) out.bytes(area.u8, area.out, area.out + area.written);
        i = area.column;
        flags = area.flags;
        first = (flags & JF_COMMA) === 0;
        if (status === JSON_DONE) {
          out.byte(0x7d);
          return;
        }
        if (status === JSON_DECLINED) {
          this.member(out, plan, tuple, old, here, there, i, first);
          first = false;
          flags |= JF_COMMA;
          i++;
        }
      }
      // Refused (the tuple does not fit the table): the JS path writes every column, from the first.
    }
    for (; k < n; k++) {
      const i = only === undefined ? k : only[k]!;
      if (i >= tuple.length) continue;
      this.member(out, plan, tuple, old, here, there, i, first);
      first = false;
    }
    out.byte(0x7d);
  }

  /** Column i as `"name":value`, a comma first unless `first`. */
  member(out: ByteSink, plan: Plan, tuple: Tuple, old: Tuple | undefined, here: TapeColumns | undefined, there: TapeColumns | undefined, i: number, first: boolean): void {
    const col = plan.columns[i];
    if (!first) out.byte(0x2c);
    if (col === undefined) out.str(`${JSON.stringify(String(i))}:`);
    else out.bytes(col.member);
    const src = sourceOf(tuple, i, old);
    this.#value(out, src, i, src === tuple ? here : there, col);
  }

  /**
   * The relation's column table in the area (written again per area
   * generation and state of the decoder's type knowledge): `"name":`
   * prefixes, the kernel's rules, the key bits. A type outside the
   * built-ins whose text the decoder hands over as a string (an enum, a
   * type nothing is known of) is written as one, as the JS path does.
   */
  tableOf(plan: Plan, area: JsonArea, values: ValueDecoder): number {
    const cached = plan.table;
    if (cached !== undefined && cached.area === area && cached.generation === area.generation && cached.knowledge === values.knowledge) return cached.at;
    const kinds = plan.columns.map((c) => {
      const kind = c.kernel === JK_DECLINE && c.type >= FIRST_NORMAL_OID && values.textIsString(c.type) ? JK_STRING : c.kernel;
      return kind | (c.identity ? 1 << 8 : 0);
    });
    const at = area.table(kinds, plan.columns.map((c) => c.member), kinds.map(() => 0));
    plan.table = { area, generation: area.generation, knowledge: values.knowledge, at };
    return at;
  }

  /** Writes column i's JSON. */
  #value(out: ByteSink, src: Tuple, i: number, tape: TapeColumns | undefined, col: Column | undefined): void {
    const kind = src.kind(i);
    if (kind === "null") {
      out.str("null");
      return;
    }
    if (kind === "text" && col?.fast !== undefined && tape !== undefined) {
      const at = tape.tape[tape.first + i]!;
      if (tape.u8[at] === KIND_T && col.fast(out, tape.u8, at + 5, tape.dv.getInt32(at + 1))) return;
    }
    let value: unknown;
    try {
      value = kind === "unchanged" ? unchangedToast : src.value(i);
    } catch {
      // As the JSON Lines: a value that does not parse is written as its text (or its bytes, base64).
      out.str(kind === "text" ? JSON.stringify(src.text(i)) : JSON.stringify(toBase64(src.bytes(i) as Uint8Array)));
      return;
    }
    if (value === null) out.str("null");
    else if (value === unchangedToast) out.str(col?.placeholder ?? JSON.stringify(UNAVAILABLE));
    else out.str(col === undefined ? JSON.stringify(String(value)) : col.text(value));
  }
}

const encoder = new TextEncoder();
