/**
 * Debezium's change events as the kernel's lines (pipeline/kernel-lines.ts):
 * `{"before":…,"after":…,"source":{…},"op":…,"ts_ms":…,"ts_us":…,"ts_ns":…,"transaction":null}`
 * field for field as DebeziumEvents.push() writes it (debezium.ts), for
 * inserts, deletes, and updates but those with an old row of a table with
 * a key (which may have changed it: push() splits it into a delete and a
 * create).
 * The rows are their structs (`{"column":value,…}`, debezium-rows.ts'
 * column table: the values whose JSON is the JSON Lines' by the kernel, the
 * others by the JS path); `source` has the commit time as numbers, the
 * last transaction's end and the change's walStart in decimal, the
 * relation's schema and table (its template's head); the processing time
 * is the call's text. Each record's key, when the table has one, is
 * written by the JS path (DebeziumRows.key) before its line is ended.
 * Taken only without transaction metadata, tombstones or key-columns.
 */
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import type { TapeColumns } from "../views/tuple.ts";
import type { TapeBatch } from "../views/batch.ts";
import type { JsonArea } from "../kernel/json-area.ts";
import type { Records } from "../pipeline/records.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import { JF_BRACES, JF_NO_CLOSE } from "../jsonl-tape.ts";
import {
  IF_LAST_END, IF_NOT, IF_OLD, IF_PK, IF_WAL_START, RTF_PK, LC_ALL, LC_KEYS_IF_K, LF_LAST_END_DECIMAL, LF_UNCHANGED_LEFT_OUT, LF_WAL_START_DECIMAL, LK_BEGIN, LK_COMMIT,
  LK_DELETE, LK_INSERT, LK_UPDATE, LT_NEW, LT_OLD, OP_CALL_TEXT, OP_COLUMNS, OP_HEAD, OP_LSN, OP_STOP, OP_TIME, OP_XID, TIME_MS, TIME_NS, TIME_US,
} from "../line-templates.ts";
import { program, type LineFormat, type LineTemplate, type LineTransaction, type Op, type ProgramPart, type Row } from "../pipeline/kernel-lines.ts";
import type { ByteSink } from "../jsonl/sink.ts";
import type { DebeziumRows, Plan } from "./debezium-rows.ts";

const encoder = new TextEncoder();

/** Debezium's open transaction, as much of it as its lines take. */
export interface DebeziumTransaction {
  readonly xid: number;
  /** The commit LSN (the Begin's finalLsn). */
  readonly lsn: bigint;
  /** The commit time, µs since the Unix epoch. */
  readonly timeUs: bigint;
}

/** What the kernel's lines take from DebeziumEvents. */
export interface DebeziumHost {
  readonly rows: DebeziumRows;
  /** `{"version":…,"connector":"postgresql","name":…,"ts_ms":` and `,"db":…` */
  readonly sourceHead: string;
  readonly db: string;
  /** Operations written (`c`, `u`, `d`). */
  writes(op: string): boolean;
  /** The processing time's fields (`"ts_ms":…,"ts_us":…,"ts_ns":…`) now. */
  now(): string;
  transaction(): DebeziumTransaction | undefined;
  open(t: DebeziumTransaction | undefined): void;
  lastCommit: bigint | undefined;
  /** Scratch for a key. */
  readonly keys: ByteSink;
}

const BRACED = JF_BRACES | JF_NO_CLOSE;

export class DebeziumLines implements LineFormat {
  readonly lineFlags = LF_UNCHANGED_LEFT_OUT;
  readonly #h: DebeziumHost;

  constructor(host: DebeziumHost) {
    this.#h = host;
  }

  programs(area: JsonArea): void {
    const h = this.#h;
    const quotedOrNull = (condition: number, field: number): ProgramPart[] => [
      { if: condition, then: ['\\"', [OP_LSN, field, 0], '\\"'] }, { if: condition | IF_NOT, then: ["null"] },
    ];
    const source: ProgramPart[] = [
      `,"source":${h.sourceHead}`, [OP_TIME, TIME_MS, 0], `,"snapshot":"false"${h.db},"sequence":"[`,
      ...quotedOrNull(IF_LAST_END, LF_LAST_END_DECIMAL), ",", ...quotedOrNull(IF_WAL_START, LF_WAL_START_DECIMAL),
      ']","ts_us":', [OP_TIME, TIME_US, 0], ',"ts_ns":', [OP_TIME, TIME_NS, 0], [OP_HEAD, 0, 0], ',"txId":', [OP_XID, 0, 0], ',"lsn":',
      { if: IF_WAL_START, then: [[OP_LSN, LF_WAL_START_DECIMAL, 0] as Op] }, { if: IF_WAL_START | IF_NOT, then: ["null"] }, ',"xmin":null}',
    ];
    const event = (op: string, before: ProgramPart[], after: ProgramPart[]): ProgramPart[] => !h.writes(op) ? [] : [
      '{"before":', ...before, ',"after":', ...after, ...source, `,"op":"${op}",`, [OP_CALL_TEXT, 0, 0], ',"transaction":null}',
    ];
    const row = (tuple: number, which: number): ProgramPart[] => [[OP_COLUMNS, tuple, which | BRACED]];
    const set = (kind: number, parts: ProgramPart[]) => area.program(kind, program(area, parts));
    set(LK_INSERT, event("c", ["null"], row(LT_NEW, LC_ALL)));
    // An update with its old row: that row as `before` (as a delete's) when the record has no key (REPLICA IDENTITY
    // FULL); with a key (RTF_PK), which may have changed, push()'s.
    set(LK_UPDATE, event("u", [
      { if: IF_OLD, then: [{ if: IF_PK, then: [[OP_STOP, 0, 0] as Op] }, ...row(LT_OLD, LC_KEYS_IF_K)] }, { if: IF_OLD | IF_NOT, then: ["null"] },
    ], row(LT_NEW, LC_ALL)));
    // `before`: the old row as sent, every column with REPLICA IDENTITY FULL, else the replica identity's.
    set(LK_DELETE, event("d", row(LT_OLD, LC_KEYS_IF_K), ["null"]));
    set(LK_BEGIN, []);
    set(LK_COMMIT, []);
  }

  template(rel: Relation, msg: Row, area: JsonArea, values: ValueDecoder): LineTemplate {
    const plan = this.#h.rows.plan(rel);
    const head = encoder.encode(plan.names);
    if (!plan.wanted) return { head, wanted: false, flags: 0, columns: 0 };
    return { head, wanted: true, flags: plan.key === undefined ? 0 : RTF_PK, columns: this.#h.rows.tableOf(plan, area, values) };
  }

  declinedRow(rel: Relation): Plan {
    return this.#h.rows.plan(rel);
  }

  column(out: ByteSink, row: unknown, tuple: Tuple, old: Tuple | undefined, i: number, here: TapeColumns | undefined, there: TapeColumns | undefined, first: boolean): boolean {
    this.#h.rows.member(out, row as Plan, tuple, old, here, there, i, first);
    return true;
  }

  /** The key of record i (an Insert, an Update, a Delete), as push() writes it: from the tape, else from its message. */
  key(out: Records, batch: TapeBatch, i: number, rel: Relation): void {
    const rows = this.#h.rows;
    const plan = rows.plan(rel);
    if (plan.key === undefined) return;
    let key = rows.tapeKey(this.#h.keys, batch, i, plan);
    if (key === undefined) {
      const msg = batch.get(i) as Row;
      key = rows.key(this.#h.keys, { tuple: msg.kind === "Delete" ? msg.oldTuple : msg.newTuple, old: undefined, only: plan.key }, plan);
    }
    if (key !== undefined) out.keys.bytes(key);
  }

  callText(): string {
    return this.#h.now();
  }

  lastEnd(): bigint | undefined {
    return this.#h.lastCommit;
  }

  setLastEnd(lsn: bigint): void {
    this.#h.lastCommit = lsn;
  }

  lineTransaction(): LineTransaction | undefined {
    const t = this.#h.transaction();
    if (t === undefined) return undefined;
    return { xid: t.xid, time: "", printed: false, begin: undefined, foreignRows: false, held: false, finalLsn: t.lsn, commitTime: t.timeUs };
  }

  setLineTransaction(t: LineTransaction | undefined, changed: boolean): void {
    if (changed) this.#h.open(t === undefined ? undefined : { xid: t.xid, lsn: t.finalLsn, timeUs: t.commitTime! });
  }
}
