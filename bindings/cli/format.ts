/**
 * The JSON line shape of `tail` and `decode --changes` (documented in
 * docs/cli-output.md): one object per change, field names after wal2json's
 * format-version 2 — `action` (I U D T M, and B C P K R for transaction
 * boundaries), `schema`, `table`, `columns` and `identity` as
 * `[{name, type, value}]` — plus `xid`, `lsn` and `timestamp` on every line.
 *
 * `ChangeFormatter` is sans-IO: fed pgoutput messages in stream order, it
 * returns the lines each one completes and, for the end of a transaction, the
 * position that may be acknowledged once those lines are written. Plain
 * transactions are printed as they arrive (their Begin carries the commit
 * time); a streamed one is held (as text, in the `StreamedTransactions`
 * `TransactionAssembler` uses too) until its StreamCommit, without
 * the changes of subtransactions a StreamAbort rolled back.
 *
 * Values are typed (`tuple.values()` of a decoder made with
 * `changeValueOptions()`), and exact in the JSON text: int8 and numeric are
 * written as JSON numbers with every digit (or as strings with
 * `numbersAsStrings`), json/jsonb embedded as JSON.
 */
import type { TypeInfo } from "../decoder.ts";
import type { Message, PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import { unchangedToast, type Tuple } from "../tuple.ts";
import type { TypeKnowledge, ValueOptions } from "../values/options.ts";
import { formatLsn } from "../lsn.ts";
import { streamAbortLsn } from "../ack.ts";
import { StreamedTransactions } from "../streamed-transactions.ts";
import { timestampToISO } from "../time.ts";
import { toBase64 } from "../utf8.ts";

/** JSON text to embed as it is: an exact number, or a json/jsonb value. */
export class RawJson {
  constructor(
    readonly json: string,
    /** `number`: quoted instead when numbers are printed as strings. */
    readonly kind: "number" | "json",
  ) {}
}

const NUMERIC_TEXT = /^-?\d+(?:\.\d+)?$/;

/**
 * The decoder's `values` option for the change lines: int8 as bigint,
 * numeric and json/jsonb as `RawJson` (exact), money as its text,
 * timestamps as ISO 8601 strings; `types` from the server's catalog (enums, domains).
 */
export function changeValueOptions(types?: Record<number, TypeKnowledge>): ValueOptions {
  return {
    int8: "bigint",
    numeric: (text) => (NUMERIC_TEXT.test(text) ? new RawJson(text, "number") : text),
    money: "string",
    // PostgreSQL's json text is valid JSON; line breaks can only be whitespace between tokens.
    json: (text) => new RawJson(text.replace(/[\r\n]+/g, " "), "json"),
    timestamp: "iso",
    ...(types === undefined ? {} : { types }),
  };
}

// ------------------------------------------------------------------ JSON text

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function hex(bytes: Uint8Array): string {
  let s = "\\x";
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]!];
  return s;
}

/** Compact JSON of a value: bigint and RawJson numbers exact, bytes as `\x…` hex text. */
export function jsonText(value: unknown, numbersAsStrings = false, space = ""): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : value > 0 ? '"Infinity"' : value < 0 ? '"-Infinity"' : '"NaN"';
    case "bigint":
      return numbersAsStrings ? `"${value}"` : value.toString();
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (value instanceof RawJson) return numbersAsStrings && value.kind === "number" ? `"${value.json}"` : value.json;
      if (value instanceof Uint8Array) return JSON.stringify(hex(value));
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? "null" : JSON.stringify(value.toISOString());
      if (Array.isArray(value)) {
        let s = "[";
        for (let i = 0; i < value.length; i++) s += (i > 0 ? `,${space}` : "") + jsonText(value[i], numbersAsStrings, space);
        return s + "]";
      }
      let s = "{";
      let first = true;
      for (const [k, v] of Object.entries(value)) {
        if (v === undefined) continue;
        s += `${first ? "" : `,${space}`}${JSON.stringify(k)}:${space}${jsonText(v, numbersAsStrings, space)}`;
        first = false;
      }
      return s + "}";
    }
    default:
      return "null"; // undefined, symbol, function
  }
}

/**
 * A line object as text. `pretty`: one field per line, and arrays of objects
 * (columns, identity) one element per line.
 */
export function lineText(obj: Record<string, unknown>, pretty: boolean, numbersAsStrings: boolean): string {
  if (!pretty) return jsonText(obj, numbersAsStrings);
  const parts: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined) continue;
    let text: string;
    if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "object" && x !== null && !Array.isArray(x) && !(x instanceof RawJson))) {
      text = `[\n${v.map((x) => `    ${jsonText(x, numbersAsStrings, " ")}`).join(",\n")}\n  ]`;
    } else {
      text = jsonText(v, numbersAsStrings, " ");
    }
    parts.push(`  ${JSON.stringify(k)}: ${text}`);
  }
  return `{\n${parts.join(",\n")}\n}`;
}

// ------------------------------------------------------------------ type names

/** format_type()'s names of the built-in types, by OID. */
const TYPE_NAMES: Record<number, string> = {
  16: "boolean", 17: "bytea", 18: '"char"', 19: "name", 20: "bigint", 21: "smallint", 22: "int2vector", 23: "integer",
  24: "regproc", 25: "text", 26: "oid", 27: "tid", 28: "xid", 29: "cid", 30: "oidvector", 114: "json", 142: "xml",
  600: "point", 601: "lseg", 602: "path", 603: "box", 604: "polygon", 628: "line", 650: "cidr", 700: "real",
  701: "double precision", 705: "unknown", 718: "circle", 774: "macaddr8", 790: "money", 829: "macaddr", 869: "inet",
  1033: "aclitem", 1042: "character", 1043: "character varying", 1082: "date", 1083: "time without time zone",
  1114: "timestamp without time zone", 1184: "timestamp with time zone", 1186: "interval", 1266: "time with time zone",
  1560: "bit", 1562: "bit varying", 1700: "numeric", 1790: "refcursor", 2202: "regprocedure", 2203: "regoper",
  2204: "regoperator", 2205: "regclass", 2206: "regtype", 2249: "record", 2275: "cstring", 2950: "uuid",
  2970: "txid_snapshot", 3220: "pg_lsn", 3614: "tsvector", 3615: "tsquery", 3642: "gtsvector", 3734: "regconfig",
  3769: "regdictionary", 3802: "jsonb", 3904: "int4range", 3906: "numrange", 3908: "tsrange", 3910: "tstzrange",
  3912: "daterange", 3926: "int8range", 4072: "jsonpath", 4089: "regnamespace", 4096: "regrole", 4191: "regcollation",
  4451: "int4multirange", 4532: "nummultirange", 4533: "tsmultirange", 4534: "tstzmultirange", 4535: "datemultirange",
  4536: "int8multirange", 5038: "pg_snapshot", 5069: "xid8",
};

/** Array type OID → element OID of the built-in array types. */
const ARRAY_ELEMENT: Record<number, number> = {
  1000: 16, 1001: 17, 1002: 18, 1003: 19, 1016: 20, 1005: 21, 1006: 22, 1007: 23, 1008: 24, 1009: 25, 1028: 26,
  1010: 27, 1011: 28, 1012: 29, 1013: 30, 199: 114, 143: 142, 1017: 600, 1018: 601, 1019: 602, 1020: 603, 1027: 604,
  629: 628, 651: 650, 1021: 700, 1022: 701, 719: 718, 775: 774, 791: 790, 1040: 829, 1041: 869, 1034: 1033,
  1014: 1042, 1015: 1043, 1182: 1082, 1183: 1083, 1115: 1114, 1185: 1184, 1187: 1186, 1270: 1266, 1561: 1560,
  1563: 1562, 1231: 1700, 2201: 1790, 2207: 2202, 2208: 2203, 2209: 2204, 2210: 2205, 2211: 2206, 2287: 2249,
  1263: 2275, 2951: 2950, 2949: 2970, 3221: 3220, 3643: 3614, 3645: 3615, 3644: 3642, 3735: 3734, 3770: 3769,
  3807: 3802, 3905: 3904, 3907: 3906, 3909: 3908, 3911: 3910, 3913: 3912, 3927: 3926, 4073: 4072, 4090: 4089,
  4097: 4096, 4192: 4191, 6150: 4451, 6151: 4532, 6152: 4533, 6153: 4534, 6155: 4535, 6157: 4536, 5039: 5038, 271: 5069,
};

/** The type modifier as format_type() shows it, for the types that have one worth showing. */
function withTypmod(oid: number, name: string, typmod: number): string {
  if (typmod < 0) return name;
  switch (oid) {
    case 1042: // character(n)
    case 1043:
      return `${name}(${typmod - 4})`;
    case 1560:
    case 1562:
      return `${name}(${typmod})`;
    case 1700: {
      const t = typmod - 4;
      const precision = (t >> 16) & 0xffff;
      const scale = ((t & 0x7ff) ^ 1024) - 1024; // negative scales exist since PostgreSQL 15
      return `numeric(${precision},${scale})`;
    }
    case 1083:
    case 1266:
      return name.replace(/^time/, `time(${typmod})`);
    case 1114:
    case 1184:
      return name.replace(/^timestamp/, `timestamp(${typmod})`);
    default:
      return name;
  }
}

function quoteIdentIfNeeded(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/**
 * A column type's name as PostgreSQL's format_type() spells it for built-in
 * types (`integer`, `character varying(20)`, `numeric(12,2)`, `text[]`), and
 * the name a Type message gave for others (schema-qualified unless `public`).
 */
export function typeName(typeId: number, typeModifier: number, types?: ReadonlyMap<number, TypeInfo>): string {
  const builtin = TYPE_NAMES[typeId];
  if (builtin !== undefined) return withTypmod(typeId, builtin, typeModifier);
  const element = ARRAY_ELEMENT[typeId];
  if (element !== undefined) return `${withTypmod(element, TYPE_NAMES[element]!, typeModifier)}[]`;
  const info = types?.get(typeId);
  if (info === undefined) return String(typeId);
  const name = quoteIdentIfNeeded(info.typeName);
  return info.namespace === "" || info.namespace === "public" || info.namespace === "pg_catalog" ? name : `${quoteIdentIfNeeded(info.namespace)}.${name}`;
}

// ------------------------------------------------------------------ formatter

export interface FormatOptions {
  /** Also print B and C lines for transaction boundaries. */
  transactions?: boolean;
  /** Only changes of these tables: `schema.table` or `table` (any schema). */
  tables?: readonly string[];
  /** Indented output (one field per line) instead of JSON Lines. */
  pretty?: boolean;
  /** int8 and numeric as JSON strings instead of exact JSON numbers. */
  numbersAsStrings?: boolean;
  /** Types named by Type messages (the decoder's `types`), for the `type` field. */
  types?: ReadonlyMap<number, TypeInfo>;
}

/** What one message produced. */
export interface FormatOutput {
  /** Complete JSON texts, without line ends. */
  lines: string[];
  /** The end of a transaction (or of a decision on a prepared one): acknowledge it once `lines` are written. */
  ack?: bigint;
  /** The xid of a transaction committed with these lines. */
  committed?: number;
  /** Change lines among `lines` (not B/C/P/K/R). */
  changes: number;
}

interface OpenTxn {
  xid: number;
  /** JSON text of the time (commit, or prepare) */
  time: string;
  origin: string | undefined;
  /** The B line, printed before the first change line (a transaction without one prints neither B nor C). */
  begin: string | undefined;
  /** Whether a change line was printed. */
  printed: boolean;
}

/** Where a streamed transaction's commit time goes in its held lines (no JSON text contains a raw NUL). */
const TIME_SLOT = "\u0000";
const NONE: FormatOutput = Object.freeze({ lines: Object.freeze([]) as unknown as string[], changes: 0 });

const utf8 = new TextDecoder("utf-8", { fatal: true });

export class ChangeFormatter {
  readonly #transactions: boolean;
  readonly #pretty: boolean;
  readonly #strings: boolean;
  readonly #types: ReadonlyMap<number, TypeInfo> | undefined;
  readonly #filter: { qualified: Set<string>; bare: Set<string> } | undefined;
  /** Per relation: its filter verdict, column type names, and (rowHead) the head's schema/table text. */
  readonly #relationInfo = new WeakMap<Relation, { wanted: boolean; types: string[]; table?: string }>();
  #open: OpenTxn | undefined;
  /** Lines of streamed transactions, rendered as they arrive with `\0` where the commit time goes. */
  readonly #streamed = new StreamedTransactions<string>();
  /** The origin named in the block being read: its lines carry it. */
  #blockOrigin: string | undefined;
  /** The last head rowHead() made, and what it was made of. */
  #lastHead: {
    kind: string; relation: Relation | undefined; relationId: number; walStart: bigint | undefined;
    open: OpenTxn | undefined; time: string | undefined; origin: string | undefined; head: string;
  } | undefined;

  constructor(options: FormatOptions = {}) {
    this.#transactions = options.transactions === true;
    this.#pretty = options.pretty === true;
    this.#strings = options.numbersAsStrings === true;
    this.#types = options.types;
    if (options.tables !== undefined && options.tables.length > 0) {
      const qualified = new Set<string>();
      const bare = new Set<string>();
      for (const t of options.tables) (t.includes(".") ? qualified : bare).add(t);
      this.#filter = { qualified, bare };
    }
  }

  /** Streamed transactions being held. */
  get heldTransactions(): number {
    return this.#streamed.size;
  }

  /** Feeds one message (in stream order); returns what it completes. */
  push(msg: PgoutputMessage): FormatOutput {
    switch (msg.kind) {
      case "Begin":
        this.#open = {
          xid: msg.xid, time: this.#time(msg.commitTime), origin: undefined, printed: false,
          begin: this.#transactions ? this.#text({ action: "B", xid: msg.xid, lsn: formatLsn(msg.finalLsn), timestamp: timestampToISO(msg.commitTime) }) : undefined,
        };
        return NONE;
      case "BeginPrepare":
        this.#open = {
          xid: msg.xid, time: this.#time(msg.prepareTime), origin: undefined, printed: false,
          begin: this.#transactions
            ? this.#text({ action: "B", xid: msg.xid, lsn: formatLsn(msg.prepareLsn), timestamp: timestampToISO(msg.prepareTime), gid: msg.gid })
            : undefined,
        };
        return NONE;
      case "Origin":
        if (this.#streamed.blockXid !== undefined) this.#blockOrigin = msg.name;
        else if (this.#open) this.#open.origin = msg.name;
        return NONE;
      case "Commit": {
        const xid = this.#open?.xid ?? 0;
        const printed = this.#open?.printed === true;
        this.#open = undefined;
        const lines = this.#transactions && printed
          ? [this.#text({ action: "C", xid, lsn: formatLsn(msg.commitLsn), nextlsn: formatLsn(msg.endLsn), timestamp: timestampToISO(msg.commitTime) })]
          : [];
        return { lines, ack: msg.endLsn, committed: xid, changes: 0 };
      }
      case "Prepare": {
        this.#open = undefined;
        const line = this.#text({ action: "P", xid: msg.xid, gid: msg.gid, lsn: formatLsn(msg.prepareLsn), nextlsn: formatLsn(msg.endLsn), timestamp: timestampToISO(msg.prepareTime) });
        return { lines: [line], ack: msg.endLsn, changes: 0 };
      }
      case "CommitPrepared": {
        const line = this.#text({ action: "K", xid: msg.xid, gid: msg.gid, lsn: formatLsn(msg.commitLsn), nextlsn: formatLsn(msg.endLsn), timestamp: timestampToISO(msg.commitTime) });
        return { lines: [line], ack: msg.endLsn, committed: msg.xid, changes: 0 };
      }
      case "RollbackPrepared": {
        const line = this.#text({ action: "R", xid: msg.xid, gid: msg.gid, lsn: formatLsn(msg.prepareEndLsn), nextlsn: formatLsn(msg.rollbackEndLsn), timestamp: timestampToISO(msg.rollbackTime) });
        return { lines: [line], ack: msg.rollbackEndLsn, changes: 0 };
      }
      case "StreamStart":
        this.#streamed.start(msg.xid, msg.firstSegment);
        this.#blockOrigin = undefined;
        return NONE;
      case "StreamStop":
        this.#streamed.stop();
        return NONE;
      case "StreamAbort": {
        this.#streamed.abort(msg.xid, msg.subXid);
        const at = msg.subXid === msg.xid ? streamAbortLsn(msg) : undefined;
        return at === undefined ? NONE : { lines: [], ack: at, changes: 0 };
      }
      case "StreamCommit":
      case "StreamPrepare": {
        const held = this.#streamed.take(msg.xid)?.items ?? [];
        const commit = msg.kind === "StreamCommit";
        const time = commit ? msg.commitTime : msg.prepareTime;
        const lsn = formatLsn(commit ? msg.commitLsn : msg.prepareLsn);
        const ts = this.#time(time);
        const lines: string[] = [];
        const gid = commit ? undefined : msg.gid;
        const changes = held.length;
        if (this.#transactions && changes > 0) lines.push(this.#text({ action: "B", xid: msg.xid, lsn, timestamp: timestampToISO(time), gid, streamed: true }));
        for (const line of held) lines.push(line.replace(TIME_SLOT, ts));
        if (commit) {
          if (this.#transactions && changes > 0) lines.push(this.#text({ action: "C", xid: msg.xid, lsn, nextlsn: formatLsn(msg.endLsn), timestamp: timestampToISO(time), streamed: true }));
          return { lines, ack: msg.endLsn, committed: msg.xid, changes };
        }
        lines.push(this.#text({ action: "P", xid: msg.xid, gid, lsn, nextlsn: formatLsn(msg.endLsn), timestamp: timestampToISO(time), streamed: true }));
        return { lines, ack: msg.endLsn, changes };
      }
      case "Message": {
        if (!msg.transactional) {
          return { lines: [this.#text(this.#message(msg, undefined, undefined))], changes: 1 };
        }
        return this.#change([this.#message(msg, this.#xid(), this.#timeSlot())]);
      }
      case "Insert":
      case "Update":
      case "Delete":
      case "Truncate":
        return this.#change(this.#changes(msg));
      default:
        // Relation and Type: the decoder's caches have them.
        return NONE;
    }
  }

  /**
   * A row of the initial snapshot (`tail --snapshot`): action `S`, schema,
   * table and columns, no xid, lsn or timestamp (it was committed before the
   * slot's consistent point). Undefined for a table --tables leaves out.
   */
  snapshotRow(relation: Relation, tuple: Tuple): string | undefined {
    const info = this.#info(relation);
    if (!info.wanted) return undefined;
    return this.#text({ action: "S", schema: relation.namespace, table: relation.name, columns: this.#columns(tuple, undefined, info.types, undefined).columns });
  }

  /** Forgets transactions in progress (e.g. when a stream starts over). */
  reset(): void {
    this.#open = undefined;
    this.#streamed.reset();
  }

  #text(obj: Record<string, unknown>): string {
    return lineText(obj, this.#pretty, this.#strings);
  }

  #time(t: bigint): string {
    return JSON.stringify(timestampToISO(t));
  }

  /** The top-level xid of the change being read. */
  #xid(): number | undefined {
    return this.#streamed.blockXid ?? this.#open?.xid;
  }

  /** The commit time's JSON text, or the slot to fill in at StreamCommit. */
  #timeSlot(): RawJson {
    return new RawJson(this.#streamed.blockXid !== undefined ? TIME_SLOT : (this.#open?.time ?? "null"), "json");
  }

  #origin(): string | undefined {
    return this.#streamed.blockXid !== undefined ? this.#blockOrigin : this.#open?.origin;
  }

  /** Lines of changes: printed now, or held for their streamed transaction. */
  #change(objs: Record<string, unknown>[]): FormatOutput {
    if (objs.length === 0) return NONE;
    const lines = objs.map((o) => this.#text(o));
    if (this.#streamed.blockXid === undefined) {
      const open = this.#open;
      if (open !== undefined) {
        open.printed = true;
        if (open.begin !== undefined) {
          lines.unshift(open.begin);
          open.begin = undefined;
          return { lines, changes: lines.length - 1 };
        }
      }
      return { lines, changes: lines.length };
    }
    for (let i = 0; i < lines.length; i++) this.#streamed.add(lines[i]!, objs[i]!.__sub as number | undefined);
    return NONE;
  }

  #head(action: string, sub: number | undefined): Record<string, unknown> {
    const obj: Record<string, unknown> = { action, xid: this.#xid() };
    Object.defineProperty(obj, "__sub", { value: sub, enumerable: false });
    return obj;
  }

  #message(msg: Message, xid: number | undefined, time: RawJson | undefined): Record<string, unknown> {
    const obj: Record<string, unknown> = xid === undefined ? { action: "M" } : this.#head("M", msg.xid);
    obj.lsn = formatLsn(msg.lsn);
    if (time !== undefined) obj.timestamp = time;
    if (xid !== undefined) obj.origin = this.#origin();
    obj.transactional = msg.transactional;
    obj.prefix = msg.prefix;
    let text: string | undefined;
    try {
      text = utf8.decode(msg.content);
    } catch {
      text = undefined;
    }
    if (text !== undefined) obj.content = text;
    else {
      obj.content = toBase64(msg.content);
      obj.encoding = "base64";
    }
    return obj;
  }

  #info(rel: Relation | undefined): { wanted: boolean; types: string[]; table?: string } {
    if (rel === undefined) return { wanted: this.#filter === undefined, types: [] };
    let info = this.#relationInfo.get(rel);
    if (info === undefined) {
      const f = this.#filter;
      const wanted = f === undefined || f.bare.has(rel.name) || f.qualified.has(`${rel.namespace === "" ? "pg_catalog" : rel.namespace}.${rel.name}`);
      info = { wanted, types: rel.columns.map((c) => typeName(c.typeId, c.typeModifier, this.#types)) };
      this.#relationInfo.set(rel, info);
    }
    return info;
  }

  #changes(msg: PgoutputMessage & { kind: "Insert" | "Update" | "Delete" | "Truncate" }): Record<string, unknown>[] {
    const lsn = msg.walStart !== undefined && msg.walStart > 0n ? formatLsn(msg.walStart) : undefined;
    if (msg.kind === "Truncate") {
      const out: Record<string, unknown>[] = [];
      msg.relations.forEach((rel, i) => {
        if (!this.#info(rel).wanted) return;
        const obj = this.#head("T", msg.xid);
        obj.lsn = lsn;
        obj.timestamp = this.#timeSlot();
        obj.origin = this.#origin();
        obj.schema = rel?.namespace;
        obj.table = rel?.name ?? String(msg.relationIds[i]);
        if (msg.cascade) obj.cascade = true;
        if (msg.restartIdentity) obj.restartidentity = true;
        out.push(obj);
      });
      return out;
    }
    const rel = msg.relation;
    const info = this.#info(rel);
    if (!info.wanted) return [];
    const obj = this.#rowObject(msg, lsn);
    if (msg.kind === "Insert") {
      obj.columns = this.#columns(msg.newTuple, undefined, info.types, undefined).columns;
    } else if (msg.kind === "Update") {
      const { columns, unchanged } = this.#columns(msg.newTuple, msg.oldTuple ?? undefined, info.types, undefined);
      obj.columns = columns;
      obj.identity = msg.oldTuple !== null
        ? this.#columns(msg.oldTuple, undefined, info.types, msg.oldTupleType === "K" ? "key" : undefined).columns
        : this.#columns(msg.newTuple, undefined, info.types, "key").columns;
      if (unchanged.length > 0) obj.unchanged = unchanged;
    } else {
      obj.identity = this.#columns(msg.oldTuple, undefined, info.types, msg.oldTupleType === "K" ? "key" : undefined).columns;
    }
    return [obj];
  }

  /** A row change's line up to its columns: action, xid, lsn, timestamp, origin, schema, table. */
  #rowObject(msg: PgoutputMessage & { kind: "Insert" | "Update" | "Delete" }, lsn: string | undefined): Record<string, unknown> {
    const rel = msg.relation;
    const obj = this.#head(msg.kind === "Insert" ? "I" : msg.kind === "Update" ? "U" : "D", msg.xid);
    obj.lsn = lsn;
    obj.timestamp = this.#timeSlot();
    obj.origin = this.#origin();
    obj.schema = rel?.namespace;
    obj.table = rel?.name ?? String(msg.relationId);
    return obj;
  }

  /**
   * The JSON text jsonText(#rowObject(…)) makes, without its closing brace,
   * by concatenation: no object per row (the writer's hot path). Field
   * order and omissions as there: undefined xid, lsn, origin, schema left out.
   */
  #rowHeadText(msg: PgoutputMessage & { kind: "Insert" | "Update" | "Delete" }, info: { table?: string }): string {
    const xid = this.#xid();
    const lsn = msg.walStart !== undefined && msg.walStart > 0n ? formatLsn(msg.walStart) : undefined;
    const origin = this.#origin();
    let head = `{"action":"${msg.kind === "Insert" ? "I" : msg.kind === "Update" ? "U" : "D"}"`;
    if (xid !== undefined) head += `,"xid":${jsonText(xid)}`;
    if (lsn !== undefined) head += `,"lsn":${JSON.stringify(lsn)}`;
    head += `,"timestamp":${this.#open?.time ?? "null"}`;
    if (origin !== undefined) head += `,"origin":${JSON.stringify(origin)}`;
    const rel = msg.relation;
    // Per relation: `,"schema":…,"table":…` once.
    info.table ??= `${rel?.namespace === undefined ? "" : `,"schema":${JSON.stringify(rel.namespace)}`},"table":${JSON.stringify(rel?.name ?? String(msg.relationId))}`;
    return head + info.table;
  }

  /**
   * For `JsonLinesWriter`, which writes a row change's columns itself: does
   * what push() does for it but print, and returns the B line due before it
   * (if any), the line's JSON text up to its columns (without the closing
   * brace) and the column type names. `null`: its table is filtered out.
   * `undefined`: push() must do this one (pretty output; a streamed block,
   * whose lines are held as text until their commit).
   */
  rowHead(msg: PgoutputMessage & { kind: "Insert" | "Update" | "Delete" }): { begin: string | undefined; head: string; types: string[] } | null | undefined {
    if (this.#pretty || this.#streamed.blockXid !== undefined) return undefined;
    const info = this.#info(msg.relation);
    if (!info.wanted) return null;
    // Rows of one table in one transaction share their head: made once (the same string, so the writer can tell).
    const last = this.#lastHead;
    const time = this.#open?.time;
    const origin = this.#origin();
    let head: string;
    if (last !== undefined && last.kind === msg.kind && last.relation === msg.relation && last.relationId === msg.relationId
      && last.walStart === msg.walStart && last.open === this.#open && last.time === time && last.origin === origin) {
      head = last.head;
    } else {
      head = this.#rowHeadText(msg, info);
      this.#lastHead = { kind: msg.kind, relation: msg.relation, relationId: msg.relationId, walStart: msg.walStart, open: this.#open, time, origin, head };
    }
    let begin: string | undefined;
    const open = this.#open;
    if (open !== undefined) {
      open.printed = true;
      begin = open.begin;
      open.begin = undefined;
    }
    return { begin, head, types: info.types };
  }

  /**
   * `[{name, type, value}]` of a tuple; with `old`, unchanged TOAST is taken
   * from it where it carries the value, else left out and named in
   * `unchanged`. `only: "key"` keeps the replica identity columns.
   */
  #columns(tuple: Tuple, old: Tuple | undefined, types: string[], only: "key" | undefined): { columns: Record<string, unknown>[]; unchanged: string[] } {
    const rel = tuple.relation;
    const values = readValues(tuple, old);
    const columns: Record<string, unknown>[] = [];
    const unchanged: string[] = [];
    for (let i = 0; i < tuple.length; i++) {
      const col = rel?.columns[i];
      if (only === "key" && col !== undefined && !col.isKey) continue;
      const name = col?.name ?? String(i);
      const value = values[i];
      if (value === unchangedToast) {
        unchanged.push(name);
        continue;
      }
      columns.push({ name, type: types[i] ?? "unknown", value });
    }
    return { columns, unchanged };
  }
}

/** Every value of a tuple; a column whose value does not parse comes as its text (or bytes). */
function readValues(tuple: Tuple, old: Tuple | undefined): unknown[] {
  try {
    return tuple.values({ old });
  } catch {
    const out: unknown[] = [];
    for (let i = 0; i < tuple.length; i++) {
      const src = old !== undefined && tuple.kind(i) === "unchanged" && i < old.length && (old.kind(i) === "text" || old.kind(i) === "binary") ? old : tuple;
      try {
        out.push(src.value(i));
      } catch {
        out.push(src.kind(i) === "text" ? src.text(i) : src.bytes(i));
      }
    }
    return out;
  }
}
