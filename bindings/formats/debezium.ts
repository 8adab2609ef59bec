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
 * Values: debezium-values.ts, from the JS values of a decoder made with
 * `debeziumValueOptions()`, or written straight from the bytes PostgreSQL
 * sent by the decoder's kernel where it has the form (debezium-rows.ts).
 *
 * Whole events from the decoder's kernel (debezium-lines.ts, pushBatch)
 * for plain transactions' inserts, deletes and updates (but those with an
 * old row of a table with a key, which may have changed it), when the
 * events have no transaction metadata, tombstones or key-columns; the same
 * bytes as push() writes (test/format-lines.test.ts).
 */
import type { TypeInfo } from "../decoder.ts";
import type { Message, PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { SnapshotRow } from "../snapshot-items.ts";
import type { Tuple } from "../tuple.ts";
import { toBase64 } from "../utf8.ts";
import { ByteSink } from "../jsonl/sink.ts";
import type { Format, FormatContext, FormatDefinition, FormatItem, FormatOptionValues } from "../pipeline/format.ts";
import type { RecordKind, Records } from "../pipeline/records.ts";
import { DebeziumRows, parseKeyColumns, type Plan, type Row } from "./debezium-rows.ts";
import { debeziumValueOptions, type BinaryHandling, type DecimalHandling, type IntervalHandling, type TimePrecision } from "./debezium-values.ts";
import { KernelLines, linesFor } from "../pipeline/kernel-lines.ts";
import { DebeziumLines } from "./debezium-lines.ts";
import type { Batch } from "../decoder.ts";

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
  intervalHandling?: IntervalHandling;
  /** Types named by Type messages (the decoder's `types`): a domain is written as its base type. */
  types?: ReadonlyMap<number, TypeInfo>;
  /**
   * Whether the decoder's kernel writes the events and columns it can (default
   * true). `false`: every value through the JS path alone, the reference
   * the kernel's bytes are tested against; the events are the same.
   */
  kernel?: boolean;
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
  /** Its events' `source` text before `sequence`, and from `ts_us` to the table (made at its first event). */
  source: { head: string; times: string } | undefined;
}

const ms = (us: bigint): bigint => (us >= 0n || us % 1000n === 0n ? us / 1000n : us / 1000n - 1n);

export class DebeziumEvents implements Format {
  readonly #txMetadata: boolean;
  readonly #tombstones: boolean;
  readonly #skipped: Set<string>;
  readonly #rows: DebeziumRows;
  /** `{"version":…,"connector":"postgresql","name":…,"ts_ms":` */
  readonly #sourceHead: string;
  /** `,"db":…` */
  readonly #db: string;
  #open: OpenTxn | undefined;
  /** The end of the last transaction seen (Debezium's "last committed LSN", the first of `sequence`). */
  #lastCommit: bigint | undefined;
  /** The processing time of the item being written (`ts_ms` and its µs, ns forms), and its ms. */
  #now = "";
  #nowMs = -1;
  /** Scratch for the keys of a change (compared when an update may have changed it). */
  readonly #newKey = new ByteSink();
  readonly #oldKey = new ByteSink();
  /** The kernel's whole lines (debezium-lines.ts), when its events are theirs to write. */
  readonly #lines: KernelLines | undefined;
  /**
   * Format.pushBatch, when the kernel writes the events: not with
   * transaction metadata (its BEGIN events and counts), tombstones or
   * key-columns (a key not the replica identity's may change in any update).
   */
  readonly pushBatch?: (batch: Batch, from: number, out: Records, to: number, boundary: (index: number) => void) => number;

  constructor(options: DebeziumOptions = {}) {
    this.#txMetadata = options.transactionMetadata === true;
    this.#tombstones = options.tombstones === true;
    const skipped = options.skippedOperations ?? ["t"];
    this.#skipped = new Set(skipped.includes("none") ? [] : skipped);
    this.#rows = new DebeziumRows({
      keyColumns: options.keyColumns, tables: options.tables, types: options.types, kernel: options.kernel !== false,
      modes: {
        decimal: options.decimalHandling ?? "string", binary: options.binaryHandling ?? "base64",
        time: options.timePrecision ?? "adaptive", interval: options.intervalHandling ?? "string",
      },
    });
    const name = options.serverName ?? options.database ?? "postgres";
    this.#sourceHead = `{"version":"pgoutput-wasm","connector":"postgresql","name":${JSON.stringify(name)},"ts_ms":`;
    this.#db = `,"db":${JSON.stringify(options.database ?? "")}`;
    if (options.kernel === false || this.#txMetadata || this.#tombstones || options.keyColumns !== undefined) return;
    const events = this;
    const lines = new KernelLines(new DebeziumLines({
      rows: this.#rows, sourceHead: this.#sourceHead, db: this.#db, keys: this.#newKey,
      writes: (op) => !this.#skipped.has(op),
      now: () => this.#stamp(),
      transaction: () => this.#open,
      open: (t) => {
        this.#open = t === undefined ? undefined : {
          xid: t.xid, lsn: t.lsn, beginLsn: undefined, timeMs: ms(t.timeUs), timeUs: t.timeUs, begun: false, events: 0, perTable: new Map(), source: undefined,
        };
      },
      get lastCommit() { return events.#lastCommit; },
      set lastCommit(lsn) { events.#lastCommit = lsn; },
    }));
    this.#lines = lines;
    this.pushBatch = (batch, from, out, to, boundary) => lines.push(batch, from, out, Math.min(to, batch.length), boundary);
  }

  /** The processing time's fields, `"ts_ms":…,"ts_us":…,"ts_ns":…`, made again when the ms changed. */
  #stamp(): string {
    const ms = Date.now();
    if (ms !== this.#nowMs) {
      const now = BigInt(ms);
      this.#nowMs = ms;
      this.#now = `"ts_ms":${now},"ts_us":${now * 1000n},"ts_ns":${now * 1_000_000n}`;
    }
    return this.#now;
  }

  push(item: FormatItem, out: Records): void {
    this.#stamp();
    this.#lines?.pushed(item);
    if (item.kind === "SnapshotRow") {
      this.#snapshotRow(item, out);
      return;
    }
    // Debezium's PostgreSQL connector sends no schema-change events: a new shape shows in the next event's fields.
    if (item.kind === "RelationChanged" || item.kind === "Ddl") return;
    this.#message(item, out);
  }

  reset(): void {
    this.#open = undefined;
    this.#lastCommit = undefined;
    this.#lines?.reset();
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
        const plan = this.#rows.plan(msg.relation);
        if (!plan.wanted || this.#skipped.has("c")) return;
        const row: Row = { tuple: msg.newTuple, old: undefined, only: undefined };
        this.#change(out, msg.relation, plan, "c", "insert", lsnOf(msg), undefined, row, this.#rows.key(this.#newKey, { ...row, only: plan.key }, plan));
        return;
      }
      case "Update":
        this.#update(msg, out);
        return;
      case "Delete": {
        const plan = this.#rows.plan(msg.relation);
        if (!plan.wanted || this.#skipped.has("d")) return;
        const key = this.#rows.key(this.#oldKey, { tuple: msg.oldTuple, old: undefined, only: plan.key }, plan);
        this.#change(out, msg.relation, plan, "d", "delete", lsnOf(msg), this.#rows.oldRow(msg.oldTuple, msg.oldTupleType, plan), undefined, key);
        this.#tombstone(out, msg.relation, key);
        return;
      }
      case "Truncate": {
        if (this.#skipped.has("t")) return;
        for (const rel of msg.relations) {
          const plan = this.#rows.plan(rel);
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
      source: undefined,
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
    const plan = this.#rows.plan(msg.relation);
    if (!plan.wanted || this.#skipped.has("u")) return;
    const old = msg.oldTuple ?? undefined;
    const newKey = this.#rows.key(this.#newKey, { tuple: msg.newTuple, old, only: plan.key }, plan);
    const oldKey = old === undefined ? undefined : this.#rows.key(this.#oldKey, { tuple: old, old: undefined, only: plan.key }, plan);
    const after: Row = { tuple: msg.newTuple, old, only: undefined };
    const before = old === undefined ? undefined : this.#rows.oldRow(old, msg.oldTupleType!, plan);
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
    const plan = this.#rows.plan(row.relation);
    if (!plan.wanted) return;
    const lsn = out.txn.lsn;
    const key = this.#rows.key(this.#newKey, { tuple: row.tuple, old: undefined, only: plan.key }, plan);
    if (key !== undefined) out.keys.bytes(key);
    const bytes = out.bytes;
    bytes.str(`{"before":null,"after":`);
    this.#rows.struct(bytes, { tuple: row.tuple, old: undefined, only: undefined }, plan);
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
    else this.#rows.struct(bytes, before, plan);
    bytes.str(`,"after":`);
    if (after === undefined) bytes.str("null");
    else this.#rows.struct(bytes, after, plan);
    bytes.str(`,"source":`);
    bytes.str(this.#sourceText(plan.names, lsn));
    bytes.str(`,"op":"${op}",${this.#now},"transaction":${transaction}}\n`);
    if (header !== undefined) out.header(header[0], header[1]);
    out.end(kind, rel);
  }

  /** `source` of an event in a transaction (or of a non-transactional message). */
  #sourceText(names: string, lsn: bigint | undefined): string {
    const open = this.#open;
    let parts = open?.source;
    if (parts === undefined) {
      const time = open === undefined ? BigInt(Date.now()) : open.timeMs;
      const us = open === undefined ? time * 1000n : open.timeUs;
      parts = { head: `${this.#sourceHead}${time},"snapshot":"false"${this.#db},"sequence":`, times: `,"ts_us":${us},"ts_ns":${us * 1000n}` };
      if (open !== undefined) open.source = parts;
    }
    // `sequence` is a JSON array of two decimal strings (or nulls), as a string: quoted, its quotes escaped.
    const last = this.#lastCommit === undefined ? "null" : `\\"${this.#lastCommit}\\"`;
    const at = lsn === undefined ? "null" : `\\"${lsn}\\"`;
    return `${parts.head}"[${last},${at}]"${parts.times}${names},"txId":${open?.xid ?? "null"},"lsn":${lsn ?? "null"},"xmin":null}`;
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

}

const utf8 = new TextDecoder();

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
    "interval-handling": { type: "string", choices: ["string", "numeric"], description: "interval: string (default, ISO 8601, exact), numeric (approximate µs, Debezium's default)" },
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
  create: (context: FormatContext, o: FormatOptionValues) => {
    // The rows' columns are written by the decoder's kernel where it can (debezium-rows.ts): its area from the first call.
    linesFor(context.decoder);
    return new DebeziumEvents(debeziumOptions(context, o));
  },
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
    intervalHandling: o["interval-handling"] as IntervalHandling | undefined,
    types: context.decoder.types,
  };
}

export { OPERATIONS };
