/**
 * `debezium`: Debezium's PostgreSQL connector change events, the value as
 * its JSON converter writes it with `schemas.enable=false` — one JSON
 * object per line — and the key (its key struct: the replica identity
 * columns, `{"id":1}`) as the record's key (records.ts `keys`), for sinks
 * that key their messages. docs/cli-output.md ("debezium") documents the
 * events, the options and where they differ from Debezium's and why.
 *
 * Per change: `{"before", "after", "source", "op", "ts_ms", "ts_us",
 * "ts_ns", "transaction"}`; `op` is `c`, `u`, `d`, `r` (a snapshot row), `t`
 * (truncate, when not skipped: Debezium's `skipped.operations` skips it by
 * default, and so does this), `m` (a logical decoding message). As
 * Debezium: an update whose key changed is a delete of the old key (and
 * its tombstone) then a create of the new one, with `__debezium.newkey` /
 * `__debezium.oldkey` headers; `before` is what the server sent of the old
 * row (the replica identity's columns, or with REPLICA IDENTITY FULL all of
 * them; `null` for an update that left the key alone); an unchanged TOAST
 * value is `__debezium_unavailable_value`. With `transaction-metadata`,
 * BEGIN and END events frame each transaction's events, which carry
 * `transaction: {id, total_order, data_collection_order}`.
 *
 * Values: debezium-values.ts, written straight from the bytes PostgreSQL
 * sent where Debezium's JSON is the JSON Lines' (jsonl/text-values.ts:
 * integers, booleans, strings, float8, their arrays), else from the JS
 * values of a decoder made with `debeziumValueOptions()`.
 */
import type { TypeInfo } from "../decoder.ts";
import type { Message, PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { SnapshotRow } from "../snapshot-items.ts";
import { unchangedToast, type Tuple } from "../tuple.ts";
import { toBase64 } from "../utf8.ts";
import { sourceOf } from "../values/toast.ts";
import { tapeColumns, type TapeColumns } from "../views/tuple.ts";
import { writeString, writeTextValue } from "../jsonl/text-values.ts";
import { ByteSink } from "../jsonl/sink.ts";
import type { Format, FormatContext, FormatDefinition, FormatItem, FormatOptionValues } from "../pipeline/format.ts";
import type { RecordKind, Records } from "../pipeline/records.ts";
import { tableFilter } from "./tables.ts";
import {
  debeziumValueOptions, placeholderText, UNAVAILABLE, representedType, valueText,
  type BinaryHandling, type DecimalHandling, type TimePrecision, type ValueModes, type ValueText,
} from "./debezium-values.ts";

const KIND_T = 0x74;
const NEWLINE = 0x0a;

/** Debezium's operations, as `skipped.operations` names them. */
const OPERATIONS = ["c", "u", "d", "t"] as const;

export interface DebeziumOptions {
  /** `source.name` (Debezium's `topic.prefix`, the logical server name); default: the database's name, else `postgres`. */
  serverName?: string;
  /** `source.db`. */
  database?: string;
  /** BEGIN/END events and the `transaction` block (Debezium's `provide.transaction.metadata`). */
  transactionMetadata?: boolean;
  /** A `tombstone` record (no value, the delete's key) after each delete (Debezium's `tombstones.on.delete`; default false here). */
  tombstones?: boolean;
  /** Operations not written: `c`, `u`, `d`, `t` (Debezium's `skipped.operations`; default `["t"]`). */
  skippedOperations?: readonly string[];
  /** The message key's columns per table, Debezium's `message.key.columns`: `schema.table:col,col;regex:col`. */
  keyColumns?: string;
  /** Only these tables (`schema.table` or `table`). */
  tables?: readonly string[];
  decimalHandling?: DecimalHandling;
  binaryHandling?: BinaryHandling;
  timePrecision?: TimePrecision;
  /** Types named by Type messages (the decoder's `types`): a domain is written as its base type. */
  types?: ReadonlyMap<number, TypeInfo>;
}

/** A column as this format writes it: `"name":` and how its value becomes JSON. */
interface Column {
  readonly member: Uint8Array;
  readonly identity: boolean;
  readonly text: ValueText;
  /** Writes a text value straight from its bytes (false: the JS path must). */
  readonly fast: ((out: ByteSink, u8: Uint8Array, p: number, n: number) => boolean) | undefined;
  readonly placeholder: string;
}

/** Per relation, made once. */
interface Plan {
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
}

/** A row to write as a struct: a tuple, the old tuple its unchanged TOAST comes from, the columns (`undefined`: all). */
interface Row {
  readonly tuple: Tuple;
  readonly old: Tuple | undefined;
  readonly only: readonly number[] | undefined;
}

interface OpenTxn {
  xid: number;
  /** The commit (prepare) LSN: the lsn of the BEGIN event when the stream has no positions (a capture). */
  lsn: bigint;
  /** The Begin's own WAL position, for the BEGIN event's id. */
  beginLsn: bigint | undefined;
  timeMs: bigint;
  timeUs: bigint;
  begun: boolean;
  events: number;
  perTable: Map<string, number>;
}

/** Text values whose JSON is the JSON Lines' (jsonl/text-values.ts): integers, booleans, strings, float8 and their arrays. */
const SAME_AS_JSONL = new Set([16, 21, 23, 20, 26, 28, 29, 25, 1043, 1042, 19, 18, 2950, 142, 1790, 705, 701, 1005, 1007, 1016, 1009, 1015, 1014, 1003]);

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
function parseKeyColumns(text: string | undefined): { table: RegExp; columns: string[] }[] {
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

const ms = (us: bigint): bigint => (us >= 0n || us % 1000n === 0n ? us / 1000n : us / 1000n - 1n);

export class DebeziumEvents implements Format {
  readonly #txMetadata: boolean;
  readonly #tombstones: boolean;
  readonly #skipped: Set<string>;
  readonly #keyColumns: { table: RegExp; columns: string[] }[];
  readonly #wanted: ((rel: Relation | undefined) => boolean) | undefined;
  readonly #modes: ValueModes;
  readonly #types: ReadonlyMap<number, TypeInfo> | undefined;
  readonly #plans = new WeakMap<Relation, Plan>();
  /** `{"version":…,"connector":"postgresql","name":…,"ts_ms":` */
  readonly #sourceHead: string;
  /** `,"db":…` */
  readonly #db: string;
  #open: OpenTxn | undefined;
  /** The end of the last transaction seen (Debezium's "last committed LSN", the first of `sequence`). */
  #lastCommit: bigint | undefined;
  /** The processing time of the item being written (`ts_ms` and its µs, ns forms). */
  #now = "";
  /** Scratch for the keys of a change (compared when an update may have changed it). */
  readonly #newKey = new ByteSink();
  readonly #oldKey = new ByteSink();

  constructor(options: DebeziumOptions = {}) {
    this.#txMetadata = options.transactionMetadata === true;
    this.#tombstones = options.tombstones === true;
    const skipped = options.skippedOperations ?? ["t"];
    this.#skipped = new Set(skipped.includes("none") ? [] : skipped);
    this.#keyColumns = parseKeyColumns(options.keyColumns);
    this.#wanted = tableFilter(options.tables);
    this.#modes = { decimal: options.decimalHandling ?? "string", binary: options.binaryHandling ?? "base64", time: options.timePrecision ?? "adaptive" };
    this.#types = options.types;
    const name = options.serverName ?? options.database ?? "postgres";
    this.#sourceHead = `{"version":"pgoutput-wasm","connector":"postgresql","name":${JSON.stringify(name)},"ts_ms":`;
    this.#db = `,"db":${JSON.stringify(options.database ?? "")}`;
  }

  push(item: FormatItem, out: Records): void {
    const now = BigInt(Date.now());
    this.#now = `"ts_ms":${now},"ts_us":${now * 1000n},"ts_ns":${now * 1_000_000n}`;
    if (item.kind === "SnapshotRow") {
      this.#snapshotRow(item, out);
      return;
    }
    this.#message(item, out);
  }

  reset(): void {
    this.#open = undefined;
    this.#lastCommit = undefined;
  }

  #message(msg: PgoutputMessage, out: Records): void {
    switch (msg.kind) {
      case "Begin":
        this.#begin(msg.xid, msg.finalLsn, msg.commitTime, msg.walStart);
        return;
      case "BeginPrepare":
        this.#begin(msg.xid, msg.prepareLsn, msg.prepareTime, msg.walStart);
        return;
      case "Commit":
        this.#end(out, msg.endLsn);
        return;
      case "Prepare":
        this.#end(out, msg.endLsn);
        return;
      case "Insert": {
        const plan = this.#plan(msg.relation);
        if (!plan.wanted || this.#skipped.has("c")) return;
        const row: Row = { tuple: msg.newTuple, old: undefined, only: undefined };
        this.#change(out, msg.relation, plan, "c", "insert", lsnOf(msg), undefined, row, this.#key(this.#newKey, { ...row, only: plan.key }, plan));
        return;
      }
      case "Update":
        this.#update(msg, out);
        return;
      case "Delete": {
        const plan = this.#plan(msg.relation);
        if (!plan.wanted || this.#skipped.has("d")) return;
        const key = this.#key(this.#oldKey, { tuple: msg.oldTuple, old: undefined, only: plan.key }, plan);
        this.#change(out, msg.relation, plan, "d", "delete", lsnOf(msg), this.#oldRow(msg.oldTuple, msg.oldTupleType, plan), undefined, key);
        this.#tombstone(out, msg.relation, key);
        return;
      }
      case "Truncate": {
        if (this.#skipped.has("t")) return;
        for (const rel of msg.relations) {
          const plan = this.#plan(rel);
          if (plan.wanted) this.#change(out, rel, plan, "t", "truncate", lsnOf(msg), undefined, undefined, undefined);
        }
        return;
      }
      case "Message":
        this.#logicalMessage(msg, out);
        return;
      default:
        if (msg.kind.startsWith("Stream")) throw new TypeError(`${msg.kind}: the debezium format takes plain transactions: replay streamed ones first (a Pipeline with a replayDecoder)`);
        // Relation, Type, Origin: nothing of their own; CommitPrepared and RollbackPrepared: Debezium has no two-phase events.
        return;
    }
  }

  #begin(xid: number, lsn: bigint, time: bigint, walStart: bigint | undefined): void {
    this.#open = {
      xid, lsn, beginLsn: walStart !== undefined && walStart > 0n ? walStart : undefined, timeMs: ms(time), timeUs: time, begun: false, events: 0, perTable: new Map(),
    };
  }

  /** A transaction's end: its END event (when its BEGIN was written), and the LSN `sequence` names next. */
  #end(out: Records, endLsn: bigint): void {
    const open = this.#open;
    this.#open = undefined;
    this.#lastCommit = endLsn;
    if (open === undefined || !open.begun) return;
    const id = `${open.xid}:${endLsn}`;
    const collections = [...open.perTable].map(([c, n]) => `{"data_collection":${JSON.stringify(c)},"event_count":${n}}`).join(",");
    this.#transactionEvent(out, "commit", id, `{"status":"END","id":"${id}","event_count":${open.events},"data_collections":[${collections}],"ts_ms":${open.timeMs}}`);
  }

  #transactionEvent(out: Records, kind: RecordKind, id: string, value: string): void {
    out.keys.str(`{"id":"${id}"}`);
    out.bytes.str(value);
    out.bytes.byte(NEWLINE);
    out.end(kind);
  }

  #update(msg: PgoutputMessage & { kind: "Update" }, out: Records): void {
    const plan = this.#plan(msg.relation);
    if (!plan.wanted || this.#skipped.has("u")) return;
    const old = msg.oldTuple ?? undefined;
    const newKey = this.#key(this.#newKey, { tuple: msg.newTuple, old, only: plan.key }, plan);
    const oldKey = old === undefined ? undefined : this.#key(this.#oldKey, { tuple: old, old: undefined, only: plan.key }, plan);
    const after: Row = { tuple: msg.newTuple, old, only: undefined };
    const before = old === undefined ? undefined : this.#oldRow(old, msg.oldTupleType!, plan);
    const lsn = lsnOf(msg);
    if (oldKey === undefined || (newKey !== undefined && sameBytes(oldKey, newKey))) {
      this.#change(out, msg.relation, plan, "u", "update", lsn, before, after, newKey);
      return;
    }
    // The key changed: as Debezium, a delete of the old key and a create of the new one, each naming the other key in a header.
    this.#change(out, msg.relation, plan, "d", "delete", lsn, before, undefined, oldKey, newKey === undefined ? undefined : ["__debezium.newkey", utf8.decode(newKey)]);
    this.#tombstone(out, msg.relation, oldKey);
    this.#change(out, msg.relation, plan, "c", "insert", lsn, undefined, after, newKey, ["__debezium.oldkey", utf8.decode(oldKey)]);
  }

  #tombstone(out: Records, rel: Relation | undefined, key: Uint8Array | undefined): void {
    if (!this.#tombstones) return;
    if (key !== undefined) out.keys.bytes(key);
    out.bytes.str("null\n");
    out.end("tombstone", rel);
  }

  /** A snapshot row: `op` `r`, `source.snapshot` "true", `lsn` the slot's consistent point, no transaction. */
  #snapshotRow(row: SnapshotRow, out: Records): void {
    const plan = this.#plan(row.relation);
    if (!plan.wanted) return;
    const lsn = out.txn.lsn;
    const key = this.#key(this.#newKey, { tuple: row.tuple, old: undefined, only: plan.key }, plan);
    if (key !== undefined) out.keys.bytes(key);
    const bytes = out.bytes;
    bytes.str(`{"before":null,"after":`);
    this.#struct(bytes, { tuple: row.tuple, old: undefined, only: undefined }, plan);
    const now = BigInt(Date.now());
    bytes.str(`,"source":${this.#sourceHead}${now},"snapshot":"true"${this.#db},"sequence":${JSON.stringify(JSON.stringify([null, String(lsn)]))},"ts_us":${now * 1000n},"ts_ns":${now * 1_000_000n}${plan.names},"txId":null,"lsn":${lsn},"xmin":null},"op":"r",${this.#now},"transaction":null}\n`);
    out.end("snapshot", row.relation);
  }

  /** One change event (its BEGIN first, with transaction metadata). */
  #change(
    out: Records, rel: Relation | undefined, plan: Plan, op: string, kind: RecordKind, lsn: bigint | undefined,
    before: Row | undefined, after: Row | undefined, key: Uint8Array | undefined, header?: [string, string],
  ): void {
    const open = this.#open;
    let transaction = "null";
    if (this.#txMetadata && open !== undefined) {
      if (!open.begun) {
        open.begun = true;
        const id = `${open.xid}:${open.beginLsn ?? open.lsn}`;
        this.#transactionEvent(out, "begin", id, `{"status":"BEGIN","id":"${id}","event_count":null,"data_collections":null,"ts_ms":${open.timeMs}}`);
      }
      open.events++;
      const n = (open.perTable.get(plan.collection) ?? 0) + 1;
      open.perTable.set(plan.collection, n);
      transaction = `{"id":"${open.xid}:${lsn ?? open.lsn}","total_order":${open.events},"data_collection_order":${n}}`;
    }
    if (key !== undefined) out.keys.bytes(key);
    const bytes = out.bytes;
    bytes.str(`{"before":`);
    if (before === undefined) bytes.str("null");
    else this.#struct(bytes, before, plan);
    bytes.str(`,"after":`);
    if (after === undefined) bytes.str("null");
    else this.#struct(bytes, after, plan);
    bytes.str(`,"source":`);
    bytes.str(this.#sourceText(plan.names, lsn));
    bytes.str(`,"op":"${op}",${this.#now},"transaction":${transaction}}\n`);
    if (header !== undefined) out.header(header[0], header[1]);
    out.end(kind, rel);
  }

  /** `source` of an event in a transaction (or of a non-transactional message). */
  #sourceText(names: string, lsn: bigint | undefined): string {
    const open = this.#open;
    const sequence = JSON.stringify([this.#lastCommit === undefined ? null : String(this.#lastCommit), lsn === undefined ? null : String(lsn)]);
    const time = open === undefined ? BigInt(Date.now()) : open.timeMs;
    const us = open === undefined ? time * 1000n : open.timeUs;
    return `${this.#sourceHead}${time},"snapshot":"false"${this.#db},"sequence":${JSON.stringify(sequence)},"ts_us":${us},"ts_ns":${us * 1000n}${names},"txId":${open?.xid ?? "null"},"lsn":${lsn ?? "null"},"xmin":null}`;
  }

  /** `op` `m`: `{source, op, ts_ms…, message: {prefix, content}}`, keyed by its prefix (Debezium's message events). */
  #logicalMessage(msg: Message, out: Records): void {
    const saved = this.#open;
    if (!msg.transactional) this.#open = undefined;
    const source = this.#sourceText(`,"schema":"","table":""`, msg.lsn > 0n ? msg.lsn : lsnOf(msg));
    this.#open = saved;
    out.keys.str(`{"prefix":${JSON.stringify(msg.prefix)}}`);
    out.bytes.str(`{"source":${source},"op":"m",${this.#now},"message":{"prefix":${JSON.stringify(msg.prefix)},"content":${JSON.stringify(toBase64(msg.content))}}}\n`);
    out.end("message");
  }

  #plan(rel: Relation | undefined): Plan {
    if (rel === undefined) return { wanted: this.#wanted === undefined, columns: [], key: undefined, identity: [], names: `,"schema":"","table":""`, collection: "" };
    let plan = this.#plans.get(rel);
    if (plan !== undefined) return plan;
    const schema = rel.namespace === "" ? "pg_catalog" : rel.namespace;
    const collection = `${schema}.${rel.name}`;
    const columns = rel.columns.map((c): Column => {
      const oid = representedType(c.typeId, this.#types);
      return {
        member: encoder.encode(`${JSON.stringify(c.name)}:`), identity: c.isKey, text: valueText(oid, c.typeModifier, this.#modes),
        fast: fastWriter(oid, this.#modes.decimal), placeholder: placeholderText(oid, this.#modes),
      };
    });
    plan = {
      wanted: this.#wanted?.(rel) ?? true, columns, key: this.#keyOf(rel, collection),
      identity: rel.columns.flatMap((c, i) => (c.isKey ? [i] : [])),
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
  #keyOf(rel: Relation, collection: string): number[] | undefined {
    const names = rel.columns.map((c) => c.name);
    for (const entry of this.#keyColumns) {
      if (!entry.table.test(collection)) continue;
      const key = entry.columns.map((c) => names.indexOf(c)).filter((i) => i >= 0);
      if (key.length > 0) return key;
    }
    if (rel.replicaIdentity === "f" || rel.replicaIdentity === "n") return undefined;
    const key = rel.columns.flatMap((c, i) => (c.isKey ? [i] : []));
    return key.length > 0 ? key : undefined;
  }

  /** The key struct of a row, written into `sink` (emptied first); `undefined` when the table has no key. */
  #key(sink: ByteSink, row: Row, plan: Plan): Uint8Array | undefined {
    if (plan.key === undefined) return undefined;
    sink.len = 0;
    this.#struct(sink, row, plan);
    return sink.buf.subarray(0, sink.len);
  }

  /** `before`: the whole old row (REPLICA IDENTITY FULL), or the replica identity's columns of a `K` tuple. */
  #oldRow(old: Tuple, type: "K" | "O", plan: Plan): Row {
    return { tuple: old, old: undefined, only: type === "O" ? undefined : plan.identity };
  }

  /** `{"column":value,…}` of a row (`only`: these columns); unchanged TOAST from `old` where it has the value, else the placeholder. */
  #struct(out: ByteSink, row: Row, plan: Plan): void {
    const { tuple, old, only } = row;
    const here = tapeColumns(tuple);
    const there = old === undefined ? undefined : tapeColumns(old);
    out.byte(0x7b);
    const n = only === undefined ? tuple.length : only.length;
    let first = true;
    for (let k = 0; k < n; k++) {
      const i = only === undefined ? k : only[k]!;
      if (i >= tuple.length) continue;
      const col = plan.columns[i];
      if (!first) out.byte(0x2c);
      first = false;
      if (col === undefined) out.str(`${JSON.stringify(String(i))}:`);
      else out.bytes(col.member);
      const src = sourceOf(tuple, i, old);
      this.#value(out, src, i, src === tuple ? here : there, col);
    }
    out.byte(0x7d);
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

const utf8 = new TextDecoder();
const encoder = new TextEncoder();

/** A change's WAL position (its XLogData), when the stream has positions (a capture has none). */
function lsnOf(msg: { walStart?: bigint }): bigint | undefined {
  return msg.walStart !== undefined && msg.walStart > 0n ? msg.walStart : undefined;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export const debezium: FormatDefinition = {
  name: "debezium",
  summary: "Debezium's PostgreSQL change events (JSON, schemas off); the key to sinks (docs/cli-output.md)",
  options: {
    "server-name": { type: "string", description: "source.name, Debezium's topic.prefix (default: the database's name)" },
    "transaction-metadata": { type: "boolean", description: "BEGIN/END events and each event's transaction block (provide.transaction.metadata)" },
    "decimal-handling": { type: "string", choices: ["string", "double", "precise"], description: "numeric and money: string (default), double, precise (Connect Decimal bytes)" },
    "binary-handling": { type: "string", choices: ["base64", "base64-url-safe", "hex"], description: "bytea: base64 (default, Debezium's bytes in JSON), base64-url-safe, hex" },
    "time-precision": { type: "string", choices: ["adaptive", "adaptive_time_microseconds", "microseconds"], description: "time and timestamp: adaptive (default), adaptive_time_microseconds, microseconds" },
    tombstones: { type: "boolean", description: "a null-value record with the key after each delete (tombstones.on.delete)" },
    "skipped-operations": { type: "list", choices: ["c", "u", "d", "t", "none"], description: "operations left out: c, u, d, t, or none (default t)" },
    "key-columns": { type: "string", description: "message key columns, schema.table:col,col;regex:col (message.key.columns)" },
    tables: { type: "list", description: "only these tables (schema.table, or table in any schema)" },
  },
  check: (o) => {
    // Run before the options' own check: values of the wrong type are left to it.
    const skipped = o["skipped-operations"];
    if (Array.isArray(skipped) && skipped.includes("none") && skipped.length > 1) throw new TypeError("format debezium: skipped-operations none leaves nothing out: give it alone");
    if (typeof o["key-columns"] === "string") parseKeyColumns(o["key-columns"]);
  },
  values: (types) => debeziumValueOptions(types),
  create: (context: FormatContext, o: FormatOptionValues) => new DebeziumEvents(debeziumOptions(context, o)),
};

/** The DebeziumOptions of the format's option values. */
export function debeziumOptions(context: FormatContext, o: FormatOptionValues): DebeziumOptions {
  return {
    serverName: o["server-name"] as string | undefined,
    database: context.database,
    transactionMetadata: o["transaction-metadata"] === true,
    tombstones: o.tombstones === true,
    skippedOperations: o["skipped-operations"] as readonly string[] | undefined,
    keyColumns: o["key-columns"] as string | undefined,
    tables: o.tables as readonly string[] | undefined,
    decimalHandling: o["decimal-handling"] as DecimalHandling | undefined,
    binaryHandling: o["binary-handling"] as BinaryHandling | undefined,
    timePrecision: o["time-precision"] as TimePrecision | undefined,
    types: context.decoder.types,
  };
}

export { OPERATIONS };
