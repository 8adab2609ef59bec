/**
 * JSON Lines of changes as bytes: the lines `ChangeFormatter` prints for
 * `decode --changes` and `tail` (docs/cli-output.md), byte for byte, written
 * into a growable buffer. A row change's columns are written from the
 * decoder's memory: text values of the common built-in types become JSON
 * without becoming JS values (text-values.ts); any other value (binary
 * format, timestamps, arrays, …) takes the formatter's JS path, per column.
 * Everything that is not a row change printed now (B/C lines, messages,
 * truncates, streamed transactions held until their commit, pretty output)
 * is the formatter's text, appended.
 *
 * The decoder must be made with `changeValueOptions()`: the fast path
 * writes what those options make of a value.
 *
 * @example
 * ```ts
 * const decoder = await createDecoder({ values: changeValueOptions() });
 * const writer = new JsonLinesWriter({ types: decoder.types });
 * process.stdout.write(changesToJsonLines(decoder.push(chunk), writer));
 * ```
 */
import type { PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import { unchangedToast, type Tuple } from "../tuple.ts";
import { ChangeFormatter, jsonText, type FormatOptions } from "../cli/format.ts";
import { sourceOf } from "../values/toast.ts";
import { tapeColumns } from "../views/tuple.ts";
import { ByteSink } from "./sink.ts";
import { writeTextValue } from "./text-values.ts";

const KIND_T = 0x74;
const KIND_U = 0x75;
const KIND_N = 0x6e;
const NEWLINE = 0x0a;
const FIRST_NORMAL_OID = 16384;

/** What one message produced besides its lines (as `FormatOutput`, without the text). */
export interface WriteOutput {
  ack?: bigint;
  committed?: number;
  changes: number;
}

type Row = PgoutputMessage & { kind: "Insert" | "Update" | "Delete" };

const encoder = new TextEncoder();

export class JsonLinesWriter {
  /** The lines written so far (`take()` empties it). */
  readonly out = new ByteSink();
  readonly #formatter: ChangeFormatter;
  readonly #strings: boolean;
  /** Per relation, per column: `{"name":…,"type":…,"value":` as bytes. */
  readonly #prefixes = new WeakMap<Relation, Uint8Array[]>();
  readonly #unchanged: string[] = [];

  constructor(options: FormatOptions = {}) {
    this.#formatter = new ChangeFormatter(options);
    this.#strings = options.numbersAsStrings === true;
  }

  /** The formatter behind it (held streamed transactions, reset()). */
  get formatter(): ChangeFormatter {
    return this.#formatter;
  }

  /** Appends the lines one message (in stream order) completes. */
  push(msg: PgoutputMessage): WriteOutput {
    if (msg.kind === "Insert" || msg.kind === "Update" || msg.kind === "Delete") {
      const head = this.#formatter.rowHead(msg);
      if (head === null) return { changes: 0 };
      if (head !== undefined) {
        if (head.begin !== undefined) this.#line(head.begin);
        this.#row(msg, head.head, head.types);
        return { changes: 1 };
      }
    }
    const r = this.#formatter.push(msg);
    for (const line of r.lines) this.#line(line);
    return r;
  }

  /** The bytes written so far (a copy), emptying the buffer. */
  take(): Uint8Array {
    return this.out.take();
  }

  #line(text: string): void {
    this.out.str(text);
    this.out.byte(NEWLINE);
  }

  /** A row change's line after its head: columns, identity and unchanged as `ChangeFormatter` orders them. */
  #row(msg: Row, head: string, types: string[]): void {
    const out = this.out;
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
  }

  /**
   * `[{name, type, value}]` of a tuple (`keys`: the replica identity columns
   * only); unchanged TOAST is taken from `old` where it carries the value,
   * else left out and its name added to `unchanged`.
   */
  #columns(tuple: Tuple, old: Tuple | undefined, types: string[], keys: boolean, unchanged: string[] | undefined): void {
    const out = this.out;
    const rel = tuple.relation;
    const prefixes = this.#prefixesOf(rel, tuple.length, types);
    const here = tapeColumns(tuple);
    const there = old === undefined ? undefined : tapeColumns(old);
    out.byte(0x5b);
    let first = true;
    for (let i = 0; i < tuple.length; i++) {
      const col = rel?.columns[i];
      if (keys && col !== undefined && !col.isKey) continue;
      const src = sourceOf(tuple, i, old);
      const tape = src === tuple ? here : there;
      const mark = out.len;
      if (!first) out.byte(0x2c);
      out.bytes(prefixes[i]!);
      if (!this.#value(src, i, tape, col?.typeId ?? 0)) {
        out.len = mark;
        unchanged?.push(col?.name ?? String(i));
        continue;
      }
      out.byte(0x7d);
      first = false;
    }
    out.byte(0x5d);
  }

  /** Writes column i's value; `false` for unchanged TOAST (nothing written). */
  #value(src: Tuple, i: number, tape: ReturnType<typeof tapeColumns>, typeId: number): boolean {
    const out = this.out;
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

/** The JSON Lines (bytes) of a batch of messages, in order; `writer` keeps the state across batches. */
export function changesToJsonLines(messages: Iterable<PgoutputMessage>, writer: JsonLinesWriter): Uint8Array {
  for (const msg of messages) writer.push(msg);
  return writer.take();
}
