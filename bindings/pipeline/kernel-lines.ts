/**
 * Whole lines from the kernel for a format's pushBatch (Format.pushBatch):
 * the kernel (`jsonLines`, bindings/line-templates.ts) writes Begin,
 * Commit and row-change lines for a run of a batch's messages, from the
 * format's programs (its lines, field for field, as its push() writes
 * them) and a template per relation, with no JS object per message. It
 * takes the row changes of plain transactions (not a streamed block's,
 * which the caller replays) with every column of a row its own; a column
 * it declines goes through the format's JS path in its place, and a
 * message it stops at is the caller's to `push()`: every message of the
 * stream goes through one of the two, in order, and the bytes are the
 * same either way. The open transaction (xid, time, whether its B line
 * was written) passes between the format and the kernel's line state
 * whenever the path changes.
 *
 * A format is a `LineFormat`: JSON Lines (jsonl/kernel-lines.ts), wal2json
 * versions 2 and 1 (formats/wal2json-v2-lines.ts, wal2json-v1-lines.ts),
 * CloudEvents (formats/cloudevents-lines.ts), Debezium
 * (formats/debezium-lines.ts).
 */
import type { Batch } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import { TapeBatch } from "../views/batch.ts";
import { tapeColumns, type TapeColumns } from "../views/tuple.ts";
import type { RecordKind, Records } from "./records.ts";
import { compareChangePositions } from "./change-id.ts";
import type { FormatItem } from "./format.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import { jsonArea, type JsonArea, type TemplateParts } from "../kernel/json-area.ts";
import { decoderInternals, TapeDecoder } from "../kernel/decoder.ts";
import type { PgoutputDecoder } from "../decoder.ts";
import { JF_COMMA } from "../jsonl-tape.ts";
import {
  LE_WORDS, LF_BOUNDARIES, LINES_COLUMN, LINES_DONE, LINES_FULL, LINES_HELD, LINES_TEMPLATE, LK_BEGIN, LK_BEGIN_MARK, LK_COMMIT, LK_DELETE, LS_BEGIN_BYTES, LS_BEGIN_LENGTH, LS_CHANGED,
  LS_FINAL_HI, LS_FINAL_LO, LS_HELD, LS_POSITION, LS_TIME_HI, LS_TIME_LO, LS_LAST_HI, LS_LAST_LO, LS_LAST_KNOWN, LS_CALL_LENGTH, LS_CALL_BYTES,
  LS_OPEN, LS_ORIGIN, LS_PRINTED, LS_RESUME_COLUMN, LS_RESUME_FLAGS, LS_RESUME_TUPLE, LS_TIME_BYTES, LS_TIME_LENGTH, LS_WORDS, LS_XID, LT_NEW, OP_BYTES, OP_IF,
} from "../line-templates.ts";
import type { ByteSink } from "../jsonl/sink.ts";

export type Row = PgoutputMessage & { kind: "Insert" | "Update" | "Delete" };

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** 2000-01-01 (PostgreSQL's epoch) in µs since the Unix epoch. */
const PG_EPOCH_US = 946_684_800_000_000n;

/** A format's open transaction as the kernel's line state holds it (line-templates.ts, LS_*). */
export interface LineTransaction {
  xid: number;
  /** The transaction's time as its programs' OP_TIME 0 writes it (JSON text). */
  time: string;
  /** A change line was written. */
  printed: boolean;
  /** The B line due before the first change line, without its newline (lines written lazily); `undefined`: none due. */
  begin: string | undefined;
  /** Its rows are the format's push()'s (an Origin named one). */
  foreignRows: boolean;
  /** The format holds its records until its Commit, which is push()'s (the kernel's lines of its rows go to the format's `held`). */
  held: boolean;
  /** Its Begin's finalLsn. */
  finalLsn: bigint;
  /** Its commit time, µs since the Unix epoch (OP_TIME's numbers), for a format that writes it. */
  commitTime?: bigint;
}

/** Where the lines of a held transaction go (LineFormat.held). */
export interface HeldLines {
  readonly bytes: ByteSink;
  /** Ends a record whose bytes end at `end` of `bytes`. */
  endAt(end: number, kind: RecordKind, relation: Relation | undefined): void;
  /**
   * The held transaction's Commit, taken by the kernel (LF_HELD_COMMITS):
   * its B line is `bytes[begin, commit)` (may be empty), its C line
   * `bytes[commit, end)`, what was held before them; writes the
   * transaction's records into `out` and forgets what it held.
   */
  finish(out: Records, begin: number, commit: number, end: number): void;
}

/** A relation's template (line-templates.ts): `columns` the address of its column table in the area, -1: its rows are push()'s. */
export type LineTemplate = TemplateParts;

/** What a format gives the kernel's lines. */
export interface LineFormat {
  /** The flags of every call: LF_* and JF_NUMBERS_AS_STRINGS. */
  readonly lineFlags: number;
  /** Writes its programs (area.program per LK_* kind, literals from area.literal). */
  programs(area: JsonArea): void;
  /** The template of row `msg`'s relation (its column table in `area`), or undefined: its rows are push()'s. */
  template(rel: Relation, msg: Row, area: JsonArea, values: ValueDecoder): LineTemplate | undefined;
  /** What column() needs of a row's relation, made once per row with a declined column. */
  declinedRow(rel: Relation, length: number): unknown;
  /**
   * Column i of `tuple` (`old`: the old tuple its unchanged TOAST comes
   * from) into `out` as push() writes it, a comma first unless `first`;
   * `flags`: the column flags of its OP_COLUMNS (jsonl-tape.ts JF_*).
   * False when nothing was written (left out).
   */
  column(out: ByteSink, row: unknown, tuple: Tuple, old: Tuple | undefined, i: number, here: TapeColumns | undefined, there: TapeColumns | undefined, first: boolean, flags: number): boolean;
  /** Where the lines of a transaction it holds go (LINES_HELD), for a format that holds any. */
  readonly held?: HeldLines;
  /** Its open transaction, for the kernel's line state. */
  lineTransaction(): LineTransaction | undefined;
  /** The end of the last transaction it saw (IF_LAST_END, LF_LAST_END_DECIMAL), for a format that writes it; and taking it back. */
  lastEnd?(): bigint | undefined;
  setLastEnd?(lsn: bigint): void;
  /** The text of OP_CALL_TEXT for this push (a processing time), at most LS_CALL_BYTES bytes of UTF-8. */
  callText?(): string;
  /** Record i of `batch`'s key (a row change of `relation`), written into `out.keys` before the row's line is ended, for a format whose records have keys. */
  key?(out: Records, batch: TapeBatch, i: number, relation: Relation): void;
  /**
   * The kernel's line state after a run: `changed`, a transaction began or
   * ended in it (`t` is the one open now); else `t` stands for the same
   * one, and only its `printed` and whether a `begin` is still due
   * (`undefined`: none) are news.
   */
  setLineTransaction(t: LineTransaction | undefined, changed: boolean): void;
}

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

/** A program op (line-templates.ts): code, a, b. */
export type Op = readonly [number, number, number];

/** A part of a program: literal text, an op, or ops written only when a condition holds (OP_IF). */
export type ProgramPart = string | Op | { readonly if: number; readonly then: readonly ProgramPart[] };

const utf8 = new TextEncoder();

/**
 * A program's ops from its parts (line-templates.ts): adjacent literal
 * texts become one OP_BYTES of bytes copied into the area's literals, a
 * condition an OP_IF that skips its parts' ops.
 */
export function program(area: JsonArea, parts: readonly ProgramPart[]): Op[] {
  const ops: Op[] = [];
  let text = "";
  const flush = () => {
    if (text !== "") ops.push([OP_BYTES, ...area.literal(utf8.encode(text))]);
    text = "";
  };
  for (const part of parts) {
    if (typeof part === "string") text += part;
    else if ("if" in part) {
      flush();
      const then = program(area, part.then);
      ops.push([OP_IF, part.if, then.length], ...then);
    } else {
      flush();
      ops.push(part);
    }
  }
  flush();
  return ops;
}

/**
 * Has the decoder lay out the kernel's area (kernel/json-area.ts) from its
 * first call, for a format made with it: otherwise the first rows it reads
 * ask for it, and take the JS path until the decoder's next call.
 */
export function linesFor(decoder: Pick<PgoutputDecoder, "types"> | undefined): void {
  if (decoder instanceof TapeDecoder) jsonArea(decoderInternals(decoder).memory);
}

export class KernelLines {
  readonly #format: LineFormat;
  /** The area, as of which layout (programs), generation and type knowledge (templates); the relations of its templates by index. */
  #state: { area: JsonArea; layouts: number; generation: number; knowledge: number } | undefined;
  readonly #relations: Relation[] = [];
  /** The row whose declined columns #declined writes, and its views. */
  #cut: {
    batch: TapeBatch; index: number; newTuple: Tuple | undefined; oldTuple: Tuple | undefined;
    newTape: TapeColumns | undefined; oldTape: TapeColumns | undefined; row: unknown;
  } | undefined;
  /** Whether the kernel's line state is the format's transaction (nothing was push()ed since). */
  #inSync = false;

  constructor(format: LineFormat) {
    this.#format = format;
  }

  /** An item went through the format's push(): its transaction is ahead of the kernel's. */
  pushed(item: FormatItem): void {
    this.#inSync = false;
    // A relation defined again: its template is made again when a row needs it. PostgreSQL sends a
    // table's Relation message again after any invalidation of it, so the others are kept. A type
    // learned may change any table's columns: every template is made again.
    if (item.kind === "Relation") this.#forgetTemplate(item.relationId);
    else if (item.kind === "Type") this.#forgetTemplates();
  }

  reset(): void {
    this.#inSync = false;
    this.#forgetTemplates();
  }

  /**
   * The format's pushBatch: the lines of messages [from, to) of `batch`,
   * as far as the kernel takes them; the index of the first it did not.
   * `boundary(i)`: called for each Begin and Commit taken, in order among
   * the records ended: a Begin before its transaction's, a Commit after.
   */
  push(batch: Batch, from: number, out: Records, to: number, boundary?: (index: number) => void): number {
    if (from >= to || mayTakeBack(out) || !(batch instanceof TapeBatch) || batch.host === undefined) return from;
    const area = jsonArea(batch.host);
    if (area === undefined) return from;
    this.#prepare(area, batch);
    if (!this.#inSync) this.#toKernel(area, out);
    const flags = this.#format.lineFlags | (boundary ? LF_BOUNDARIES : 0);
    let i = from;
    let changed = false;
    let templated = -1;
    const w = area.line >> 2;
    const call = this.#format.callText?.();
    if (call !== undefined) {
      const at = area.line + LS_WORDS * 4 + LS_TIME_BYTES + LS_BEGIN_BYTES;
      area.i32[w + LS_CALL_LENGTH] = encoder.encodeInto(call, area.u8.subarray(at, at + LS_CALL_BYTES)).written;
    }
    while (i < to) {
      // A call that starts in a held transaction writes only its lines (line-templates.ts LS_HELD).
      const held = area.i32[w + LS_OPEN] !== 0 && area.i32[w + LS_HELD] !== 0 ? this.#format.held : undefined;
      const status = area.lines(batch.recordAt(i) << 2, to - i, flags);
      changed ||= area.i32[w + LS_CHANGED] !== 0;
      this.#take(area, out, held, batch, i, boundary);
      i += area.record;
      if (status === LINES_DONE) break;
      if (status === LINES_FULL) continue;
      if (status === LINES_HELD) {
        // The format takes the held transaction now: the next calls write into what it holds.
        this.#fromKernel(area, true);
        changed = false;
        continue;
      }
      if (status === LINES_COLUMN) {
        this.#declined(area, batch, i, (held ?? out).bytes);
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

  /** The area's programs (after it moved, or another format wrote its own) and templates (after it started over or the types changed) as this format needs them. */
  #prepare(area: JsonArea, batch: TapeBatch): void {
    const knowledge = batch.values.knowledge;
    const last = this.#state;
    if (last === undefined || last.area !== area || last.layouts !== area.layouts || area.programmer !== this) {
      area.clearLiterals();
      this.#format.programs(area);
      area.programmer = this;
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

  #forgetTemplate(relationId: number): void {
    const area = this.#state?.area;
    if (area?.programmer === this) area.forgetTemplate(relationId);
  }

  #forgetTemplates(): void {
    const area = this.#state?.area;
    if (area?.programmer === this) area.forgetTemplates();
    this.#relations.length = 0;
  }

  /** Message i's relation as a template (line-templates.ts); false: the message is the caller's. */
  #addTemplate(area: JsonArea, batch: TapeBatch, i: number): boolean {
    const msg = batch.get(i) as Row;
    const rel = msg.relation;
    if (rel === undefined) return false;
    // Again after the area started over for want of room (its tables are gone: written again).
    for (let attempt = 0; attempt < 3; attempt++) {
      const generation = area.generation;
      const t = this.#format.template(rel, msg, area, batch.values);
      if (t === undefined || t.columns < 0 || t.tables?.some((at) => at < 0) === true) return false;
      if (area.generation !== generation) continue;
      if (this.#state!.generation !== area.generation) {
        this.#relations.length = 0;
        this.#state!.generation = area.generation;
      }
      if (area.template(rel.relationId, t, this.#relations.length)) {
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
  #declined(area: JsonArea, batch: TapeBatch, i: number, out: ByteSink): void {
    const i32 = area.i32;
    const w = area.line >> 2;
    const which = i32[w + LS_RESUME_TUPLE]!;
    // The row's views, made once for all its declined columns.
    let cut = this.#cut;
    if (cut === undefined || cut.batch !== batch || cut.index !== i) {
      const msg = batch.get(i) as Row;
      const oldTuple = msg.kind === "Insert" ? undefined : (msg.oldTuple ?? undefined);
      const newTuple = msg.kind === "Delete" ? undefined : msg.newTuple;
      cut = this.#cut = {
        batch, index: i, newTuple, oldTuple, newTape: newTuple && tapeColumns(newTuple), oldTape: oldTuple && tapeColumns(oldTuple),
        row: this.#format.declinedRow(msg.relation!, (newTuple ?? oldTuple)!.length),
      };
    }
    const isNew = which === LT_NEW && cut.newTuple !== undefined;
    const tuple = isNew ? cut.newTuple! : cut.oldTuple!;
    const old = isNew ? cut.oldTuple : undefined;
    const column = i32[w + LS_RESUME_COLUMN]!;
    const flags = i32[w + LS_RESUME_FLAGS]!;
    const written = this.#format.column(out, cut.row, tuple, old, column, isNew ? cut.newTape : cut.oldTape, old === undefined ? undefined : cut.oldTape, (flags & JF_COMMA) === 0, flags);
    i32[w + LS_RESUME_COLUMN] = column + 1;
    i32[w + LS_RESUME_FLAGS] = written ? flags | JF_COMMA : flags;
  }

  /**
   * The bytes and records of the last jsonLines call (from message `first`
   * on) into `out`, or what `held` holds (a call that started in a held
   * transaction), and its boundaries.
   */
  #take(area: JsonArea, out: Records, held: HeldLines | undefined, batch: TapeBatch, first: number, boundary: ((index: number) => void) | undefined): void {
    const written = area.written;
    if (written === 0 && boundary === undefined) return;
    const target = held ?? out;
    const bytes = target.bytes;
    const base = bytes.len;
    bytes.bytes(area.u8, area.out, area.out + written);
    const i32 = area.i32;
    const relations = this.#relations;
    let e = area.entries >> 2;
    let start = base;
    let begin = -1;
    const key = held === undefined ? this.#format.key : undefined;
    for (let k = area.lineCount; k > 0; k--, e += LE_WORDS) {
      const code = i32[e + 1]!;
      const kind = code & 15;
      const end = base + i32[e]!;
      if (kind >= LK_BEGIN_MARK) boundary!(first + (code >> 4));
      // A held transaction's B and C lines, written at its Commit (LF_HELD_COMMITS).
      else if (held !== undefined && kind === LK_BEGIN) begin = start;
      else if (held !== undefined && kind === LK_COMMIT) held.finish(out, begin < 0 ? start : begin, start, end);
      else if (kind <= LK_DELETE) {
        const relation = relations[(code >> 4) & 511]!;
        key?.call(this.#format, out, batch, first + (code >>> 13), relation);
        target.endAt(end, LINE_KINDS[kind]!, relation);
      } else target.endAt(end, LINE_KINDS[kind]!, undefined);
      start = end;
    }
  }

  /** The format's transaction into the kernel's line state (and how many records `out` ended of it). */
  #toKernel(area: JsonArea, out: Records): void {
    const i32 = area.i32;
    const w = area.line >> 2;
    const t = this.#format.lineTransaction();
    i32[w + LS_POSITION] = out.txn.next;
    i32[w + LS_OPEN] = t === undefined ? 0 : 1;
    i32[w + LS_HELD] = t?.held === true ? 1 : 0;
    const last = this.#format.lastEnd?.();
    i32[w + LS_LAST_KNOWN] = last === undefined ? 0 : 1;
    if (last !== undefined) {
      i32[w + LS_LAST_HI] = Number(last >> 32n);
      i32[w + LS_LAST_LO] = Number(last & 0xffff_ffffn);
    }
    if (t === undefined) return;
    const timeAt = area.line + LS_WORDS * 4;
    const time = encoder.encodeInto(t.time, area.u8.subarray(timeAt, timeAt + LS_TIME_BYTES));
    i32[w + LS_XID] = t.xid;
    i32[w + LS_PRINTED] = t.printed ? 1 : 0;
    // Foreign rows (or a time the area cannot hold): the rows are push()'s.
    i32[w + LS_ORIGIN] = t.foreignRows || time.read < t.time.length ? 1 : 0;
    i32[w + LS_FINAL_HI] = Number(t.finalLsn >> 32n);
    i32[w + LS_FINAL_LO] = Number(t.finalLsn & 0xffff_ffffn);
    const wire = BigInt.asUintN(64, (t.commitTime ?? PG_EPOCH_US) - PG_EPOCH_US);
    i32[w + LS_TIME_HI] = Number(wire >> 32n);
    i32[w + LS_TIME_LO] = Number(wire & 0xffff_ffffn);
    i32[w + LS_TIME_LENGTH] = time.written;
    let begin = 0;
    if (t.begin !== undefined) {
      const beginAt = timeAt + LS_TIME_BYTES;
      const r = encoder.encodeInto(t.begin, area.u8.subarray(beginAt, beginAt + LS_BEGIN_BYTES));
      begin = r.read < t.begin.length || r.written === 0 ? -1 : r.written;
    }
    i32[w + LS_BEGIN_LENGTH] = begin;
    this.#inSync = true;
  }

  /** The kernel's line state into the format's transaction. */
  #fromKernel(area: JsonArea, changed: boolean): void {
    const i32 = area.i32;
    const w = area.line >> 2;
    let t: LineTransaction | undefined;
    if (i32[w + LS_OPEN] !== 0) {
      const begin = i32[w + LS_BEGIN_LENGTH]!;
      const timeAt = area.line + LS_WORDS * 4;
      const beginAt = timeAt + LS_TIME_BYTES;
      t = {
        xid: i32[w + LS_XID]! >>> 0, time: changed ? decoder.decode(area.u8.subarray(timeAt, timeAt + i32[w + LS_TIME_LENGTH]!)) : "",
        printed: i32[w + LS_PRINTED] !== 0,
        begin: !changed ? (begin !== 0 ? "" : undefined) : begin > 0 ? decoder.decode(area.u8.subarray(beginAt, beginAt + begin)) : undefined,
        foreignRows: i32[w + LS_ORIGIN] !== 0, held: i32[w + LS_HELD] !== 0,
        finalLsn: (BigInt(i32[w + LS_FINAL_HI]! >>> 0) << 32n) | BigInt(i32[w + LS_FINAL_LO]! >>> 0),
        commitTime: BigInt.asIntN(64, (BigInt(i32[w + LS_TIME_HI]! >>> 0) << 32n) | BigInt(i32[w + LS_TIME_LO]! >>> 0)) + PG_EPOCH_US,
      };
    }
    this.#format.setLineTransaction(t, changed);
    if (i32[w + LS_LAST_KNOWN] !== 0) this.#format.setLastEnd?.((BigInt(i32[w + LS_LAST_HI]! >>> 0) << 32n) | BigInt(i32[w + LS_LAST_LO]! >>> 0));
    this.#inSync = true;
  }
}
