/**
 * The JSON Lines format (docs/cli-output.md): the lines `ChangeLines`
 * writes, byte for byte, into a pipeline's records. A row change's columns are written by the
 * decoder's kernel, from the tape into its memory (`jsonColumns`,
 * bindings/jsonl-tape.ts), without becoming JS values; a column it
 * declines takes the JS path here: text-values.ts for the same rules (and
 * escaped array elements), else the formatter's JS values (binary format,
 * intervals, float4, domains, …), per column.
 * Everything that is not a row change (B/C lines, messages, truncates,
 * snapshot rows, pretty output) is ChangeLines' text.
 *   `pushBatch()` goes further: the kernel writes whole lines — Begin,
 * Commit and row changes — for a run of a batch's messages (`jsonLines`,
 * bindings/line-templates.ts) from this writer's programs and per-relation
 * templates, with no JS object per message; a message it stops at is the
 * caller's to `push()`, and the same bytes come out either way.
 *
 * The decoder must be made with `changeValueOptions()`: the fast path
 * writes what those options make of a value.
 *
 * @example
 * ```ts
 * const decoder = await createDecoder({ values: changeValueOptions() });
 * const writer = new JsonLinesWriter({ decoder });
 * const records = new Records();
 * for (const msg of decoder.push(chunk)) writer.push(msg, records);
 * process.stdout.write(records.bytes.take());
 * ```
 */
import type { PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import { decoderInternals, TapeDecoder } from "../kernel/decoder.ts";
import type { Relation } from "../relation.ts";
import { unchangedToast, type Tuple } from "../tuple.ts";
import { ChangeLines, type ChangeLineOptions, type OpenTxn } from "./change-lines.ts";
import type { Batch } from "../decoder.ts";
import { TapeBatch } from "../views/batch.ts";
import type { RecordKind } from "../pipeline/records.ts";
import {
  LC_ALL, LC_KEYS_IF_K, LE_WORDS, LF_FIRST, LF_SECOND, LF_TRANSACTIONS, LF_WAL_START, LINES_COLUMN, LINES_DONE, LINES_FULL, LINES_TEMPLATE,
  LS_RESUME_COLUMN, LS_RESUME_FLAGS, LS_RESUME_TUPLE,
  LK_BEGIN, LK_COMMIT, LK_DELETE, LK_INSERT, LK_UPDATE, LS_BEGIN_BYTES, LS_BEGIN_LENGTH, LS_CHANGED, LS_OPEN, LS_ORIGIN, LS_PRINTED,
  LS_TIME_BYTES, LS_TIME_LENGTH, LS_WORDS, LS_XID, LT_IDENTITY, LT_NEW, LT_OLD, OP_BYTES, OP_COLUMNS, OP_HEAD, OP_IF_LSN, OP_LSN, OP_TIME, OP_XID,
} from "../line-templates.ts";
import { jsonText } from "./json-text.ts";
import type { Format, FormatItem } from "../pipeline/format.ts";
import { Records } from "../pipeline/records.ts";
import type { ByteSink } from "./sink.ts";
import { sourceOf } from "../values/toast.ts";
import { tapeColumns, type TapeColumns } from "../views/tuple.ts";
import { jsonArea, type JsonArea } from "../kernel/json-area.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import { JF_COMMA, JF_KEYS, JF_NUMBERS_AS_STRINGS, JK_DECLINE, JK_STRING, JSON_DECLINED, JSON_DONE, JSON_REFUSED } from "../jsonl-tape.ts";
import { kernelKind, writeTextValue } from "./text-values.ts";
import { FIRST_NORMAL_OID } from "../values/oids.ts";
import { KIND_NULL as KIND_N, KIND_TEXT as KIND_T, KIND_UNCHANGED as KIND_U } from "../tape.ts";

const NEWLINE = 0x0a;

export interface JsonLinesOptions extends ChangeLineOptions {
  /**
   * The decoder the messages come from: its `types` name user types (for
   * `types`), and it lays out the memory its kernel writes the columns in
   * (kernel/json-area.ts) from its next call. Without it, a decoder does
   * that after the first row this writer reads of it, which is written
   * through the JS path (the same bytes).
   */
  decoder?: Pick<PgoutputDecoder, "types">;
  /**
   * Whether the decoder's kernel writes the columns it can (default true).
   * `false`: every value through the JS path alone, the reference the
   * kernel's bytes are tested against; the output is the same.
   */
  kernel?: boolean;
}

type Row = PgoutputMessage & { kind: "Insert" | "Update" | "Delete" };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The records' kinds of the line kinds (LK_*). */
const LINE_KINDS: readonly RecordKind[] = ["insert", "update", "delete", "begin", "commit"];

type Op = readonly [number, number, number];

export class JsonLinesWriter implements Format {
  readonly #formatter: ChangeLines;
  /** The records' bytes the row being written goes to. */
  #out!: ByteSink;
  readonly #strings: boolean;
  readonly #kernel: boolean;
  /** Per relation, per column: `{"name":…,"type":…,"value":` as bytes. */
  readonly #prefixes = new WeakMap<Relation, Uint8Array[]>();
  readonly #unchanged: string[] = [];
  /** Per relation: its column table in a decoder's JSON area (kernel/json-area.ts), as of that area's generation. */
  readonly #tables = new WeakMap<Relation, { area: JsonArea; generation: number; knowledge: number; at: number }>();
  readonly #transactions: boolean;
  /** pushBatch's area, as of which layout (programs), generation and type knowledge (templates); the relations of its templates by index. */
  #lines: { area: JsonArea; layouts: number; generation: number; knowledge: number } | undefined;
  readonly #relations: Relation[] = [];
  /** The row whose declined columns #declined writes, and its views. */
  #cut: {
    batch: TapeBatch; index: number; newTuple: Tuple | undefined; oldTuple: Tuple | undefined;
    newTape: TapeColumns | undefined; oldTape: TapeColumns | undefined; prefixes: Uint8Array[];
  } | undefined;
  /** Whether the kernel's line state is the formatter's transaction (nothing was push()ed since). */
  #inSync = false;

  constructor(options: JsonLinesOptions = {}) {
    const decoder = options.decoder;
    this.#formatter = new ChangeLines({ ...options, types: options.types ?? decoder?.types });
    this.#strings = options.numbersAsStrings === true;
    this.#kernel = options.kernel !== false;
    this.#transactions = options.transactions === true;
    if (this.#kernel && decoder instanceof TapeDecoder) jsonArea(decoderInternals(decoder).memory);
  }

  /** Writes the lines one item (in stream order) completes. */
  push(item: FormatItem, out: Records): void {
    this.#inSync = false;
    // A relation defined again, a type learned: the kernel's templates are made again as rows need them.
    if (item.kind === "Relation" || item.kind === "Type") this.#forgetTemplates();
    if (item.kind === "SnapshotRow") {
      this.#formatter.snapshotRow(item, out);
      return;
    }
    if (item.kind === "Insert" || item.kind === "Update" || item.kind === "Delete") {
      const head = this.#formatter.rowHead(item, out);
      if (head === null) return;
      if (head !== undefined) {
        this.#row(item, head.head, head.types, out);
        return;
      }
    }
    this.#formatter.push(item, out);
  }

  reset(): void {
    this.#formatter.reset();
    this.#inSync = false;
    this.#forgetTemplates();
  }

  /**
   * Writes the lines of `batch`'s messages from `from` on with the kernel
   * (jsonLines, bindings/line-templates.ts) as far as it takes them;
   * returns the index of the first message it did not take (`batch.length`
   * when it took all), which the caller `push()`es before it calls again
   * from the next one. The kernel takes Begin, Commit and the row changes
   * of plain transactions (not a streamed block's, which the caller
   * replays), with every column of a row its own; `from` itself when this
   * path does not apply (`kernel: false`, pretty output, `out.skip` set, a
   * baseline or wasm decoder's batch only). Every message of the stream
   * goes through one of the two, in order: the bytes are push()'s.
   *
   * @example
   * ```ts
   * const batch = decoder.push(chunk);
   * for (let i = writer.pushBatch(batch, 0, records); i < batch.length; i = writer.pushBatch(batch, i + 1, records)) {
   *   writer.push(batch.get(i), records);
   * }
   * ```
   */
  pushBatch(batch: Batch, from: number, out: Records): number {
    if (!this.#kernel || from >= batch.length || this.#formatter.pretty || out.skip !== undefined || !(batch instanceof TapeBatch) || batch.host === undefined) return from;
    const area = jsonArea(batch.host);
    if (area === undefined) return from;
    this.#prepare(area, batch);
    if (!this.#inSync) this.#toKernel(area);
    const flags = (this.#strings ? JF_NUMBERS_AS_STRINGS : 0) | (this.#transactions ? LF_TRANSACTIONS : 0);
    const records = batch.records;
    let i = from;
    let changed = false;
    let templated = -1;
    while (i < batch.length) {
      const status = area.lines(records[i]! << 2, batch.length - i, flags);
      changed ||= area.i32[(area.line >> 2) + LS_CHANGED] !== 0;
      this.#take(area, out);
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
    const last = this.#lines;
    if (last === undefined || last.area !== area || last.layouts !== area.layouts) {
      this.#programs(area);
      area.forgetTemplates();
      this.#relations.length = 0;
      this.#inSync = false;
      this.#lines = { area, layouts: area.layouts, generation: area.generation, knowledge };
    } else if (last.generation !== area.generation || last.knowledge !== knowledge) {
      area.forgetTemplates();
      this.#relations.length = 0;
      last.generation = area.generation;
      last.knowledge = knowledge;
    }
  }

  #forgetTemplates(): void {
    this.#lines?.area.forgetTemplates();
    this.#relations.length = 0;
  }

  /**
   * The lines of docs/cli-output.md as programs (line-templates.ts): what
   * ChangeLines writes for Begin, Commit and row changes (`#rowHeadText`,
   * `push`), field for field.
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
    const prefixes = this.#prefixesOf(rel, tuple.length, info.types);
    const head = encoder.encode(info.table);
    // Twice at most: once more after the area started over for want of room.
    for (let attempt = 0; attempt < 2; attempt++) {
      const table = info.wanted ? this.#tableOf(rel, area, batch.values, prefixes) : 0;
      if (table < 0) return false;
      if (this.#lines!.generation !== area.generation) {
        this.#relations.length = 0;
        this.#lines!.generation = area.generation;
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
        prefixes: this.#prefixesOf(rel, length, this.#formatter.rowInfo(rel).types),
      };
    }
    const isNew = which === LT_NEW && row.newTuple !== undefined;
    const tuple = isNew ? row.newTuple! : row.oldTuple!;
    const old = isNew ? row.oldTuple : undefined;
    const column = i32[w + LS_RESUME_COLUMN]!;
    const flags = i32[w + LS_RESUME_FLAGS]!;
    this.#out = out.bytes;
    const written = this.#column(tuple, old, column, isNew ? row.newTape : row.oldTape, old === undefined ? undefined : row.oldTape, row.prefixes[column]!, (flags & JF_COMMA) === 0, undefined);
    i32[w + LS_RESUME_COLUMN] = column + 1;
    i32[w + LS_RESUME_FLAGS] = written ? flags | JF_COMMA : flags;
  }

  /** The bytes and records of the last jsonLines call into `out`. */
  #take(area: JsonArea, out: Records): void {
    const written = area.written;
    if (written === 0) return;
    const bytes = out.bytes;
    const base = bytes.len;
    bytes.bytes(area.u8, area.out, area.out + written);
    const i32 = area.i32;
    const relations = this.#relations;
    let e = area.entries >> 2;
    for (let k = area.lineCount; k > 0; k--, e += LE_WORDS) {
      const code = i32[e + 1]!;
      const kind = code & 15;
      out.endAt(base + i32[e]!, LINE_KINDS[kind]!, kind <= LK_DELETE ? relations[code >> 4] : undefined);
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
    if (this.#transactions && t.begin !== undefined) {
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

  /** A row change's line after its head: columns, identity and unchanged as `ChangeFormatter` orders them. */
  #row(msg: Row, head: string, types: string[], records: Records): void {
    const out = (this.#out = records.bytes);
    out.str(head);
    if (msg.kind === "Insert") {
      out.str(',"columns":');
      this.#columns(msg.newTuple, undefined, types, false, undefined);
    } else if (msg.kind === "Update") {
      const unchanged = this.#unchanged;
      unchanged.length = 0;
      out.str(',"columns":');
      this.#columns(msg.newTuple, msg.oldTuple ?? undefined, types, false, unchanged);
      out.str(',"identity":');
      if (msg.oldTuple !== null) this.#columns(msg.oldTuple, undefined, types, msg.oldTupleType === "K", undefined);
      else this.#columns(msg.newTuple, undefined, types, true, undefined);
      if (unchanged.length > 0) out.str(`,"unchanged":${JSON.stringify(unchanged)}`);
    } else {
      out.str(',"identity":');
      this.#columns(msg.oldTuple, undefined, types, msg.oldTupleType === "K", undefined);
    }
    out.byte(0x7d);
    out.byte(NEWLINE);
    records.end(msg.kind === "Insert" ? "insert" : msg.kind === "Update" ? "update" : "delete", msg.relation);
  }

  /**
   * `[{name, type, value}]` of a tuple (`keys`: the replica identity columns
   * only); unchanged TOAST is taken from `old` where it carries the value,
   * else left out and its name added to `unchanged`. The kernel writes the
   * columns it can (jsonColumns, bindings/jsonl-tape.ts); each column it
   * declines is written here, and it goes on after it.
   */
  #columns(tuple: Tuple, old: Tuple | undefined, types: string[], keys: boolean, unchanged: string[] | undefined): void {
    const out = this.#out;
    const rel = tuple.relation;
    const prefixes = this.#prefixesOf(rel, tuple.length, types);
    const here = tapeColumns(tuple);
    const there = old === undefined ? undefined : tapeColumns(old);
    out.byte(0x5b);
    let first = true;
    let i = 0;
    const n = tuple.length;
    const area = this.#kernel && here?.host !== undefined ? jsonArea(here.host) : undefined;
    const table = area === undefined || rel === undefined || rel.columns.length !== n ? -1 : this.#tableOf(rel, area, here!.values, prefixes);
    if (table >= 0) {
      const tupleAt = (here!.first - 1) * 4;
      const oldAt = there === undefined || there.host !== here!.host ? 0 : (there.first - 1) * 4;
      let flags = (keys ? JF_KEYS : 0) | (this.#strings ? JF_NUMBERS_AS_STRINGS : 0);
      while (i < n) {
        const status = area!.columns(tupleAt, oldAt, table, i, flags);
        const written = area!.written;
        if (written > 0) out.bytes(area!.u8, area!.out, area!.out + written);
        i = area!.column;
        flags = area!.flags;
        first = (flags & JF_COMMA) === 0;
        if (status === JSON_DONE || status === JSON_REFUSED) break;
        if (status === JSON_DECLINED) {
          if (this.#column(tuple, old, i, here, there, prefixes[i]!, first, unchanged)) first = false;
          flags = first ? flags & ~JF_COMMA : flags | JF_COMMA;
          i++;
        }
      }
      if (i >= n) {
        out.byte(0x5d);
        return;
      }
    }
    for (; i < n; i++) {
      const col = rel?.columns[i];
      if (keys && col !== undefined && !col.isKey) continue;
      if (this.#column(tuple, old, i, here, there, prefixes[i]!, first, unchanged)) first = false;
    }
    out.byte(0x5d);
  }

  /** Column i as `{name, type, value}` (a comma first unless `first`); `false` when it is left out (unchanged TOAST). */
  #column(tuple: Tuple, old: Tuple | undefined, i: number, here: TapeColumns | undefined, there: TapeColumns | undefined, prefix: Uint8Array, first: boolean, unchanged: string[] | undefined): boolean {
    const out = this.#out;
    const col = tuple.relation?.columns[i];
    const src = sourceOf(tuple, i, old);
    const tape = src === tuple ? here : there;
    const mark = out.len;
    if (!first) out.byte(0x2c);
    out.bytes(prefix);
    if (!this.#value(src, i, tape, col?.typeId ?? 0)) {
      out.len = mark;
      unchanged?.push(col?.name ?? String(i));
      return false;
    }
    out.byte(0x7d);
    return true;
  }

  /**
   * The relation's column table in the area (written once per relation,
   * area generation and state of the decoder's type knowledge), or -1. A
   * non-built-in type whose text the decoder hands over as a string (an
   * enum, a type nothing is known of) is written as one.
   */
  #tableOf(rel: Relation, area: JsonArea, values: ValueDecoder, prefixes: Uint8Array[]): number {
    const cached = this.#tables.get(rel);
    if (cached !== undefined && cached.area === area && cached.generation === area.generation && cached.knowledge === values.knowledge) return cached.at;
    const kinds = rel.columns.map((c) => {
      const kind = c.typeId < FIRST_NORMAL_OID ? kernelKind(c.typeId) : values.textIsString(c.typeId) ? JK_STRING : JK_DECLINE;
      return kind | (c.isKey ? 1 << 8 : 0);
    });
    const at = area.table(kinds, prefixes);
    this.#tables.set(rel, { area, generation: area.generation, knowledge: values.knowledge, at });
    return at;
  }

  /** Writes column i's value; `false` for unchanged TOAST (nothing written). */
  #value(src: Tuple, i: number, tape: TapeColumns | undefined, typeId: number): boolean {
    const out = this.#out;
    if (tape !== undefined) {
      const at = tape.tape[tape.first + i]!;
      const kind = tape.u8[at]!;
      if (kind === KIND_N) {
        out.str("null");
        return true;
      }
      if (kind === KIND_U) return false;
      if (kind === KIND_T && typeId < FIRST_NORMAL_OID && writeTextValue(out, typeId, tape.u8, at + 5, tape.dv.getInt32(at + 1), this.#strings)) return true;
    }
    let value: unknown;
    try {
      value = src.value(i);
    } catch {
      // As ChangeFormatter: a value that does not parse is printed as its text (or bytes).
      value = src.kind(i) === "text" ? src.text(i) : src.bytes(i);
    }
    if (value === unchangedToast) return false;
    out.str(jsonText(value, this.#strings));
    return true;
  }

  #prefixesOf(rel: Relation | undefined, length: number, types: string[]): Uint8Array[] {
    let p = rel === undefined ? undefined : this.#prefixes.get(rel);
    if (p === undefined || p.length < length) {
      p = [];
      for (let i = 0; i < length; i++) {
        const name = rel?.columns[i]?.name ?? String(i);
        p.push(encoder.encode(`{"name":${JSON.stringify(name)},"type":${JSON.stringify(types[i] ?? "unknown")},"value":`));
      }
      if (rel !== undefined) this.#prefixes.set(rel, p);
    }
    return p;
  }
}

/** The JSON Lines (bytes) of a batch of messages of plain transactions, in order; `writer` keeps the state across batches. */
export function changesToJsonLines(messages: Iterable<PgoutputMessage>, writer: JsonLinesWriter): Uint8Array {
  const records = new Records();
  for (const msg of messages) writer.push(msg, records);
  return records.bytes.take();
}
