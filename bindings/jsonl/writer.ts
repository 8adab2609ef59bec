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
 * Commit and row changes — for a run of a batch's messages
 * (pipeline/kernel-lines.ts); a message it stops at is the caller's to `push()`,
 * and the same bytes come out either way.
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
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import { unchangedToast, type Tuple } from "../tuple.ts";
import { ChangeLines, type ChangeLineOptions } from "./change-lines.ts";
import { jsonText } from "./json-text.ts";
import { JsonlLineFormat } from "./kernel-lines.ts";
import { KernelLines, linesFor, type LineFormat } from "../pipeline/kernel-lines.ts";
import type { Format, FormatItem } from "../pipeline/format.ts";
import { Records } from "../pipeline/records.ts";
import type { ByteSink } from "./sink.ts";
import { sourceOf } from "../values/toast.ts";
import { tapeColumns, type TapeColumns } from "../views/tuple.ts";
import { jsonArea, type JsonArea } from "../kernel/json-area.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import { JB_ARRAY, JF_COMMA, JF_KEYS, JF_NUMBERS_AS_STRINGS, JK_DECLINE, JK_STRING, JSON_DECLINED, JSON_DONE, JSON_REFUSED } from "../jsonl-tape.ts";
import { binaryKernelKind, kernelKind, writeTextValue } from "./text-values.ts";
import { FIRST_NORMAL_OID, arrayElement } from "../values/oids.ts";
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

let wrapLines: (writer: JsonLinesWriter, make: (jsonl: JsonlLineFormat) => LineFormat) => void;

/**
 * Has `writer`'s pushBatch write the kernel lines of a format that wraps
 * JSON Lines (CloudEvents' envelope, formats/cloudevents-lines.ts), made of
 * its line format: its records are then the wrapping format's. Not public API.
 */
export function wrappedLines(writer: JsonLinesWriter, make: (jsonl: JsonlLineFormat) => LineFormat): JsonLinesWriter {
  wrapLines(writer, make);
  return writer;
}

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
  /** pushBatch's whole lines (pipeline/kernel-lines.ts), and the line format they are of. */
  #lines: KernelLines;
  readonly #lineFormat: JsonlLineFormat;
  #declinedColumns = 0;

  constructor(options: JsonLinesOptions = {}) {
    const decoder = options.decoder;
    this.#formatter = new ChangeLines({ ...options, types: options.types ?? decoder?.types });
    this.#strings = options.numbersAsStrings === true;
    this.#kernel = options.kernel !== false;
    if (this.#kernel) linesFor(decoder);
    const format = new JsonlLineFormat(this.#formatter, { numbersAsStrings: this.#strings, transactions: options.transactions === true }, {
      prefixesOf: (rel, length, types) => this.#prefixesOf(rel, length, types),
      tableOf: (rel, area, values, prefixes) => this.#tableOf(rel, area, values, prefixes),
      column: (out, tuple, old, i, here, there, prefix, first) => {
        this.#out = out;
        this.#declinedColumns++;
        return this.#column(tuple, old, i, here, there, prefix, first, undefined);
      },
    });
    this.#lineFormat = format;
    this.#lines = new KernelLines(format);
  }

  static {
    wrapLines = (writer, make) => {
      writer.#lines = new KernelLines(make(writer.#lineFormat));
    };
  }

  /** Column values the kernel left to the JS path so far (a figure for benches and tests: the output is the same). */
  get declinedColumns(): number {
    return this.#declinedColumns;
  }

  /** Writes the lines one item (in stream order) completes. */
  push(item: FormatItem, out: Records): void {
    this.#lines.pushed(item);
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
    this.#lines.reset();
  }

  /**
   * Writes the lines of `batch`'s messages from `from` on (up to `to`)
   * with the kernel as far as it takes them; returns the index of the first message it did
   * not take, which the caller `push()`es before it calls again from the
   * next one (pipeline/kernel-lines.ts). `from` itself when this path does not apply
   * (`kernel: false`, pretty output, records `out.skip` may take back).
   * `boundary(i)` is told of each Begin and Commit taken, in order among
   * the records ended (Format.pushBatch).
   *
   * @example
   * ```ts
   * const batch = decoder.push(chunk);
   * for (let i = writer.pushBatch(batch, 0, records); i < batch.length; i = writer.pushBatch(batch, i + 1, records)) {
   *   writer.push(batch.get(i), records);
   * }
   * ```
   */
  pushBatch(batch: Batch, from: number, out: Records, to = batch.length, boundary?: (index: number) => void): number {
    if (!this.#kernel || this.#formatter.pretty) return from;
    return this.#lines.push(batch, from, out, Math.min(to, batch.length), boundary);
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
          this.#declinedColumns++;
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
    const kinds: number[] = [];
    const elements: number[] = [];
    for (const c of rel.columns) {
      const builtin = c.typeId < FIRST_NORMAL_OID;
      const kind = builtin ? kernelKind(c.typeId) : values.textIsString(c.typeId) ? JK_STRING : JK_DECLINE;
      const binary = builtin ? binaryKernelKind(c.typeId) : 0;
      // An array's elements are written by their type's rule.
      const element = binary === JB_ARRAY ? arrayElement(c.typeId) : 0;
      kinds.push(kind | (c.isKey ? 1 << 8 : 0) | (binary << 16) | (element === 0 ? 0 : binaryKernelKind(element) << 24));
      elements.push(element);
    }
    const at = area.table(kinds, prefixes, elements);
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
