/**
 * Whole lines from the kernel for JsonLinesWriter.pushBatch (writer.ts):
 * the kernel (`jsonLines`, bindings/line-templates.ts) writes Begin,
 * Commit and row-change lines for a run of a batch's messages, from
 * programs (the lines of docs/cli-output.md, field for field, as
 * ChangeLines writes them) and a template per relation, with no JS object
 * per message. It takes the row changes of plain transactions (not a
 * streamed block's, which the caller replays) with every column of a row
 * its own; a column it declines goes through the writer's JS path in its
 * place, and a message it stops at is the caller's to `push()`: every
 * message of the stream goes through one of the two, in order, and the
 * bytes are the same either way. The open transaction (xid, time, whether
 * its B line was written) passes between the formatter and the kernel's
 * line state whenever the path changes.
 */
import type { Batch } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import { TapeBatch } from "../views/batch.ts";
import { tapeColumns, type TapeColumns } from "../views/tuple.ts";
import type { RecordKind, Records } from "../pipeline/records.ts";
import { compareChangePositions } from "../pipeline/change-id.ts";
import type { FormatItem } from "../pipeline/format.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import { jsonArea, type JsonArea } from "../kernel/json-area.ts";
import { JF_COMMA, JF_NUMBERS_AS_STRINGS } from "../jsonl-tape.ts";
import {
  LC_ALL, LC_KEYS_IF_K, LE_WORDS, LF_BOUNDARIES, LF_FIRST, LF_SECOND, LF_TRANSACTIONS, LF_WAL_START, LINES_COLUMN, LINES_DONE, LINES_FULL, LINES_TEMPLATE,
  LS_RESUME_COLUMN, LS_RESUME_FLAGS, LS_RESUME_TUPLE,
  LK_BEGIN, LK_BEGIN_MARK, LK_COMMIT, LK_DELETE, LK_INSERT, LK_UPDATE, LS_BEGIN_BYTES, LS_BEGIN_LENGTH, LS_CHANGED, LS_OPEN, LS_ORIGIN, LS_PRINTED,
  LS_TIME_BYTES, LS_TIME_LENGTH, LS_WORDS, LS_XID, LT_IDENTITY, LT_NEW, LT_OLD, OP_BYTES, OP_COLUMNS, OP_HEAD, OP_IF_LSN, OP_LSN, OP_TIME, OP_XID,
} from "../line-templates.ts";
import type { ChangeLines, OpenTxn } from "./change-lines.ts";
import type { ByteSink } from "./sink.ts";

type Row = PgoutputMessage & { kind: "Insert" | "Update" | "Delete" };
type Op = readonly [number, number, number];

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Whether the next record `out` ends may be one a restart's redelivery
 * takes back (at or before Records.skip, as Records.end compares): the
 * kernel's lines are ended together (endAt), never taken back, so such a
 * record is push()'s. Positions only grow in a transaction, so once its
 * next record is past `skip` every later one is: a batch handed to the
 * sink in the middle of a transaction (skip is then its last record) does
 * not keep the rest of it from the kernel.
 */
function mayTakeBack(out: Records): boolean {
  const skip = out.skip;
  const txn = out.txn;
  return skip !== undefined && txn.ordered && compareChangePositions({ lsn: txn.lsn, index: txn.next }, skip) <= 0;
}

/** The records' kinds of the line kinds (LK_*). */
const LINE_KINDS: readonly RecordKind[] = ["insert", "update", "delete", "begin", "commit"];

/** What the kernel's lines take from the writer: its column prefixes and tables, and its JS path for a declined column. */
export interface LinesHost {
  prefixesOf(rel: Relation, length: number, types: string[]): Uint8Array[];
  tableOf(rel: Relation, area: JsonArea, values: ValueDecoder, prefixes: Uint8Array[]): number;
  /** Column i of `tuple` into `out` as push() writes it (a comma first unless `first`); false when left out. */
  column(out: ByteSink, tuple: Tuple, old: Tuple | undefined, i: number, here: TapeColumns | undefined, there: TapeColumns | undefined, prefix: Uint8Array, first: boolean): boolean;
}

export class KernelLines {
  readonly #formatter: ChangeLines;
  readonly #o: { numbersAsStrings: boolean; transactions: boolean };
  readonly #host: LinesHost;
  /** The area, as of which layout (programs), generation and type knowledge (templates); the relations of its templates by index. */
  #state: { area: JsonArea; layouts: number; generation: number; knowledge: number } | undefined;
  readonly #relations: Relation[] = [];
  /** The row whose declined columns #declined writes, and its views. */
  #cut: {
    batch: TapeBatch; index: number; newTuple: Tuple | undefined; oldTuple: Tuple | undefined;
    newTape: TapeColumns | undefined; oldTape: TapeColumns | undefined; prefixes: Uint8Array[];
  } | undefined;
  /** Whether the kernel's line state is the formatter's transaction (nothing was push()ed since). */
  #inSync = false;

  constructor(formatter: ChangeLines, options: { numbersAsStrings: boolean; transactions: boolean }, host: LinesHost) {
    this.#formatter = formatter;
    this.#o = options;
    this.#host = host;
  }

  /** An item went through the writer's push(): the formatter's transaction is ahead of the kernel's. */
  pushed(item: FormatItem): void {
    this.#inSync = false;
    // A relation defined again, a type learned: the kernel's templates are made again as rows need them.
    if (item.kind === "Relation" || item.kind === "Type") this.#forgetTemplates();
  }

  reset(): void {
    this.#inSync = false;
    this.#forgetTemplates();
  }

  /**
   * JsonLinesWriter.pushBatch: the lines of messages [from, to) of `batch`,
   * as far as the kernel takes them; the index of the first it did not.
   * `boundary(i)`: called for each Begin and Commit taken, in order among
   * the records ended: a Begin before its transaction's, a Commit after.
   */
  push(batch: Batch, from: number, out: Records, to: number, boundary?: (index: number) => void): number {
    if (from >= to || mayTakeBack(out) || !(batch instanceof TapeBatch) || batch.host === undefined) return from;
    const area = jsonArea(batch.host);
    if (area === undefined) return from;
    this.#prepare(area, batch);
    if (!this.#inSync) this.#toKernel(area);
    const flags = (this.#o.numbersAsStrings ? JF_NUMBERS_AS_STRINGS : 0) | (this.#o.transactions ? LF_TRANSACTIONS : 0) | (boundary ? LF_BOUNDARIES : 0);
    let i = from;
    let changed = false;
    let templated = -1;
    while (i < to) {
      const status = area.lines(batch.recordAt(i) << 2, to - i, flags);
      changed ||= area.i32[(area.line >> 2) + LS_CHANGED] !== 0;
      this.#take(area, out, i, boundary);
      i += area.record;
      if (status === LINES_DONE) break;
      if (status === LINES_FULL) continue;
      if (status === LINES_COLUMN) {
        this.#declined(area, batch, i, out);
        continue;
      }
      // A template once per message: asked again, the message is push()'s.
      if (status !== LINES_TEMPLATE || i === templated || !this.#addTemplate(area, batch, i)) break;
      templated = i;
    }
    this.#fromKernel(area, changed);
    this.#cut = undefined;
    return i;
  }

  /** The area's programs (after it moved) and templates (after it started over or the types changed) as this writer needs them. */
  #prepare(area: JsonArea, batch: TapeBatch): void {
    const knowledge = batch.values.knowledge;
    const last = this.#state;
    if (last === undefined || last.area !== area || last.layouts !== area.layouts) {
      this.#programs(area);
      area.forgetTemplates();
      this.#relations.length = 0;
      this.#inSync = false;
      this.#state = { area, layouts: area.layouts, generation: area.generation, knowledge };
    } else if (last.generation !== area.generation || last.knowledge !== knowledge) {
      area.forgetTemplates();
      this.#relations.length = 0;
      last.generation = area.generation;
      last.knowledge = knowledge;
    }
  }

  #forgetTemplates(): void {
    this.#state?.area.forgetTemplates();
    this.#relations.length = 0;
  }

  /**
   * The lines of docs/cli-output.md as programs (line-templates.ts): what
   * ChangeLines writes for Begin, Commit and row changes (`push`, and
   * `rowHeadText` in change-objects.ts), field for field.
   */
  #programs(area: JsonArea): void {
    area.clearLiterals();
    const lit = (text: string): Op => [OP_BYTES, ...area.literal(encoder.encode(text))];
    const head = (action: string): Op[] => [
      lit(`{"action":"${action}","xid":`), [OP_XID, 0, 0],
      [OP_IF_LSN, LF_WAL_START, 3], lit(',"lsn":"'), [OP_LSN, LF_WAL_START, 0], lit('"'),
      lit(',"timestamp":'), [OP_TIME, 0, 0], [OP_HEAD, 0, 0],
    ];
    area.program(LK_INSERT, [...head("I"), lit(',"columns":'), [OP_COLUMNS, LT_NEW, LC_ALL], lit("}")]);
    area.program(LK_UPDATE, [...head("U"), lit(',"columns":'), [OP_COLUMNS, LT_NEW, LC_ALL], lit(',"identity":'), [OP_COLUMNS, LT_IDENTITY, LC_KEYS_IF_K], lit("}")]);
    area.program(LK_DELETE, [...head("D"), lit(',"identity":'), [OP_COLUMNS, LT_OLD, LC_KEYS_IF_K], lit("}")]);
    area.program(LK_BEGIN, [lit('{"action":"B","xid":'), [OP_XID, 0, 0], lit(',"lsn":"'), [OP_LSN, LF_FIRST, 0], lit('","timestamp":'), [OP_TIME, 0, 0], lit("}")]);
    area.program(LK_COMMIT, [
      lit('{"action":"C","xid":'), [OP_XID, 0, 0], lit(',"lsn":"'), [OP_LSN, LF_FIRST, 0], lit('","nextlsn":"'), [OP_LSN, LF_SECOND, 0],
      lit('","timestamp":'), [OP_TIME, 1, 0], lit("}"),
    ]);
  }

  /** Message i's relation as a template (line-templates.ts); false: the message is the caller's. */
  #addTemplate(area: JsonArea, batch: TapeBatch, i: number): boolean {
    const msg = batch.get(i) as Row;
    const rel = msg.relation;
    if (rel === undefined) return false;
    const info = this.#formatter.rowInfo(rel);
    const tuple = msg.kind === "Delete" ? msg.oldTuple : msg.newTuple;
    const prefixes = this.#host.prefixesOf(rel, tuple.length, info.types);
    const head = encoder.encode(info.table);
    // Twice at most: once more after the area started over for want of room.
    for (let attempt = 0; attempt < 2; attempt++) {
      const table = info.wanted ? this.#host.tableOf(rel, area, batch.values, prefixes) : 0;
      if (table < 0) return false;
      if (this.#state!.generation !== area.generation) {
        this.#relations.length = 0;
        this.#state!.generation = area.generation;
      }
      if (area.template(rel.relationId, table, info.wanted, head, this.#relations.length)) {
        this.#relations.push(rel);
        return true;
      }
    }
    return false;
  }

  /**
   * The column of row i the kernel declined (LINES_COLUMN), through the JS
   * path as push() writes it, after the part of its line the kernel wrote;
   * the kernel goes on after it.
   */
  #declined(area: JsonArea, batch: TapeBatch, i: number, out: Records): void {
    const i32 = area.i32;
    const w = area.line >> 2;
    const which = i32[w + LS_RESUME_TUPLE]!;
    // The row's views, made once for all its declined columns.
    let row = this.#cut;
    if (row === undefined || row.batch !== batch || row.index !== i) {
      const msg = batch.get(i) as Row;
      const rel = msg.relation!;
      const oldTuple = msg.kind === "Insert" ? undefined : (msg.oldTuple ?? undefined);
      const newTuple = msg.kind === "Delete" ? undefined : msg.newTuple;
      const length = (newTuple ?? oldTuple)!.length;
      row = this.#cut = {
        batch, index: i, newTuple, oldTuple, newTape: newTuple && tapeColumns(newTuple), oldTape: oldTuple && tapeColumns(oldTuple),
        prefixes: this.#host.prefixesOf(rel, length, this.#formatter.rowInfo(rel).types),
      };
    }
    const isNew = which === LT_NEW && row.newTuple !== undefined;
    const tuple = isNew ? row.newTuple! : row.oldTuple!;
    const old = isNew ? row.oldTuple : undefined;
    const column = i32[w + LS_RESUME_COLUMN]!;
    const flags = i32[w + LS_RESUME_FLAGS]!;
    const written = this.#host.column(out.bytes, tuple, old, column, isNew ? row.newTape : row.oldTape, old === undefined ? undefined : row.oldTape, row.prefixes[column]!, (flags & JF_COMMA) === 0);
    i32[w + LS_RESUME_COLUMN] = column + 1;
    i32[w + LS_RESUME_FLAGS] = written ? flags | JF_COMMA : flags;
  }

  /** The bytes and records of the last jsonLines call (from message `first` on) into `out`, and its boundaries. */
  #take(area: JsonArea, out: Records, first: number, boundary: ((index: number) => void) | undefined): void {
    const written = area.written;
    if (written === 0 && boundary === undefined) return;
    const bytes = out.bytes;
    const base = bytes.len;
    bytes.bytes(area.u8, area.out, area.out + written);
    const i32 = area.i32;
    const relations = this.#relations;
    let e = area.entries >> 2;
    for (let k = area.lineCount; k > 0; k--, e += LE_WORDS) {
      const code = i32[e + 1]!;
      const kind = code & 15;
      if (kind >= LK_BEGIN_MARK) boundary!(first + (code >> 4));
      else out.endAt(base + i32[e]!, LINE_KINDS[kind]!, kind <= LK_DELETE ? relations[code >> 4] : undefined);
    }
  }

  /** The formatter's transaction into the kernel's line state. */
  #toKernel(area: JsonArea): void {
    const i32 = area.i32;
    const w = area.line >> 2;
    const t = this.#formatter.transaction;
    i32[w + LS_OPEN] = t === undefined ? 0 : 1;
    if (t === undefined) return;
    const timeAt = area.line + LS_WORDS * 4;
    const time = encoder.encodeInto(t.time, area.u8.subarray(timeAt, timeAt + LS_TIME_BYTES));
    i32[w + LS_XID] = t.xid;
    i32[w + LS_PRINTED] = t.printed ? 1 : 0;
    // An origin (or a time the area cannot hold): the rows are push()'s.
    i32[w + LS_ORIGIN] = t.origin !== undefined || time.read < t.time.length ? 1 : 0;
    i32[w + LS_TIME_LENGTH] = time.written;
    let begin = 0;
    if (this.#o.transactions && t.begin !== undefined) {
      const beginAt = timeAt + LS_TIME_BYTES;
      const r = encoder.encodeInto(t.begin, area.u8.subarray(beginAt, beginAt + LS_BEGIN_BYTES));
      begin = r.read < t.begin.length || r.written === 0 ? -1 : r.written;
    }
    i32[w + LS_BEGIN_LENGTH] = begin;
    this.#inSync = true;
  }

  /** The kernel's line state into the formatter's transaction. */
  #fromKernel(area: JsonArea, changed: boolean): void {
    const i32 = area.i32;
    const w = area.line >> 2;
    const begin = i32[w + LS_BEGIN_LENGTH]!;
    if (changed) {
      let t: OpenTxn | undefined;
      if (i32[w + LS_OPEN] !== 0) {
        const timeAt = area.line + LS_WORDS * 4;
        const beginAt = timeAt + LS_TIME_BYTES;
        t = {
          xid: i32[w + LS_XID]! >>> 0, time: decoder.decode(area.u8.subarray(timeAt, timeAt + i32[w + LS_TIME_LENGTH]!)), origin: undefined,
          printed: i32[w + LS_PRINTED] !== 0, begin: begin > 0 ? decoder.decode(area.u8.subarray(beginAt, beginAt + begin)) : undefined,
        };
      }
      this.#formatter.transaction = t;
    } else {
      const t = this.#formatter.transaction;
      if (t !== undefined) {
        t.printed = i32[w + LS_PRINTED] !== 0;
        if (begin === 0) t.begin = undefined;
      }
    }
    this.#inSync = true;
  }
}
