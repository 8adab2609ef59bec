/**
 * The JSON Lines as the kernel's lines (pipeline/kernel-lines.ts): the
 * lines of docs/cli-output.md as programs, field for field as ChangeLines
 * writes them (`push`, and `rowHeadText` in change-objects.ts), and the
 * formatter's open transaction as the kernel's line state. JsonLinesWriter
 * (writer.ts) gives the column tables and the JS path of a declined column.
 */
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import type { TapeColumns } from "../views/tuple.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import type { JsonArea } from "../kernel/json-area.ts";
import { JF_NAMES_ONLY, JF_NO_CLOSE, JF_NUMBERS_AS_STRINGS, JF_ONLY_UNSENT, JF_UNSENT_SKIPPED } from "../jsonl-tape.ts";
import {
  IF_UNSENT, IF_WAL_START, LC_ALL, LC_KEYS_IF_K, LC_TABLE_SHIFT, LF_FIRST, LF_SECOND, LF_TRANSACTIONS, LF_UNCHANGED_LEFT_OUT, LF_WAL_START, LK_BEGIN, LK_COMMIT, LK_DELETE, LK_INSERT, LK_UPDATE,
  LT_IDENTITY, LT_NEW, LT_OLD, OP_COLUMNS, OP_HEAD, OP_LSN, OP_TIME, OP_XID,
} from "../line-templates.ts";
import { program, type LineFormat, type LineTemplate, type LineTransaction, type ProgramPart, type Row } from "../pipeline/kernel-lines.ts";
import type { ChangeLines } from "./change-lines.ts";
import type { ByteSink } from "./sink.ts";

const encoder = new TextEncoder();

/** What the kernel's lines take from the writer: its column prefixes and tables, and its JS path for a declined column. */
export interface LinesHost {
  prefixesOf(rel: Relation, length: number, types: string[]): Uint8Array[];
  tableOf(rel: Relation, area: JsonArea, values: ValueDecoder, prefixes: Uint8Array[]): number;
  /** Column i of `tuple` into `out` as push() writes it (a comma first unless `first`); false when left out. */
  column(out: ByteSink, tuple: Tuple, old: Tuple | undefined, i: number, here: TapeColumns | undefined, there: TapeColumns | undefined, prefix: Uint8Array, first: boolean): boolean;
}

export class JsonlLineFormat implements LineFormat {
  readonly lineFlags: number;
  readonly #formatter: ChangeLines;
  readonly #host: LinesHost;

  constructor(formatter: ChangeLines, options: { numbersAsStrings: boolean; transactions: boolean }, host: LinesHost) {
    this.#formatter = formatter;
    this.#host = host;
    this.lineFlags = LF_UNCHANGED_LEFT_OUT | (options.numbersAsStrings ? JF_NUMBERS_AS_STRINGS : 0) | (options.transactions ? LF_TRANSACTIONS : 0);
  }

  programs(area: JsonArea): void {
    for (const [kind, parts] of this.parts()) area.program(kind, program(area, parts));
  }

  /** The program of each line kind (LK_*), as parts (pipeline/kernel-lines.ts program()): what a format wrapping these lines builds on. */
  parts(): [number, ProgramPart[]][] {
    const head = (action: string): ProgramPart[] => [
      `{"action":"${action}","xid":`, [OP_XID, 0, 0],
      { if: IF_WAL_START, then: [',"lsn":"', [OP_LSN, LF_WAL_START, 0], '"'] },
      ',"timestamp":', [OP_TIME, 0, 0], [OP_HEAD, 0, 0],
    ];
    // Unchanged TOAST that no old value stands in for is left out, and named in `unchanged` (the names' table, 1).
    const columns: ProgramPart[] = [',"columns":', [OP_COLUMNS, LT_NEW, LC_ALL | JF_UNSENT_SKIPPED]];
    const identity = (tuple: number): ProgramPart[] => [',"identity":', [OP_COLUMNS, tuple, LC_KEYS_IF_K | JF_UNSENT_SKIPPED]];
    const unchanged: ProgramPart = { if: IF_UNSENT, then: [',"unchanged":', [OP_COLUMNS, LT_NEW, LC_ALL | JF_ONLY_UNSENT | JF_NAMES_ONLY | JF_NO_CLOSE | (1 << LC_TABLE_SHIFT)]] };
    return [
      [LK_INSERT, [...head("I"), ...columns, "}"]],
      [LK_UPDATE, [...head("U"), ...columns, ...identity(LT_IDENTITY), unchanged, "}"]],
      [LK_DELETE, [...head("D"), ...identity(LT_OLD), "}"]],
      [LK_BEGIN, ['{"action":"B","xid":', [OP_XID, 0, 0], ',"lsn":"', [OP_LSN, LF_FIRST, 0], '","timestamp":', [OP_TIME, 0, 0], "}"]],
      [LK_COMMIT, [
        '{"action":"C","xid":', [OP_XID, 0, 0], ',"lsn":"', [OP_LSN, LF_FIRST, 0], '","nextlsn":"', [OP_LSN, LF_SECOND, 0], '","timestamp":', [OP_TIME, 1, 0], "}",
      ]],
    ];
  }

  template(rel: Relation, msg: Row, area: JsonArea, values: ValueDecoder): LineTemplate {
    const info = this.#formatter.rowInfo(rel);
    const tuple = msg.kind === "Delete" ? msg.oldTuple : msg.newTuple;
    const head = encoder.encode(info.table);
    if (!info.wanted) return { head, wanted: false, flags: 0, columns: 0 };
    const columns = this.#host.tableOf(rel, area, values, this.#host.prefixesOf(rel, tuple.length, info.types));
    // The names `unchanged` lists, as JSON strings (names only: no kinds).
    const none = rel.columns.map(() => 0);
    const names = area.table(none, rel.columns.map((c) => encoder.encode(JSON.stringify(c.name))), none);
    return { head, wanted: true, flags: 0, columns, tables: [names] };
  }

  declinedRow(rel: Relation, length: number): Uint8Array[] {
    return this.#host.prefixesOf(rel, length, this.#formatter.rowInfo(rel).types);
  }

  column(out: ByteSink, row: unknown, tuple: Tuple, old: Tuple | undefined, i: number, here: TapeColumns | undefined, there: TapeColumns | undefined, first: boolean): boolean {
    return this.#host.column(out, tuple, old, i, here, there, (row as Uint8Array[])[i]!, first);
  }

  lineTransaction(): LineTransaction | undefined {
    const t = this.#formatter.transaction;
    return t === undefined ? undefined : { xid: t.xid, time: t.time, printed: t.printed, begin: t.begin, foreignRows: t.origin !== undefined, held: false, finalLsn: t.finalLsn };
  }

  setLineTransaction(t: LineTransaction | undefined, changed: boolean): void {
    if (changed) {
      this.#formatter.transaction = t === undefined ? undefined : { xid: t.xid, time: t.time, origin: undefined, printed: t.printed, begin: t.begin, finalLsn: t.finalLsn };
      return;
    }
    const open = this.#formatter.transaction;
    if (open === undefined || t === undefined) return;
    open.printed = t.printed;
    if (t.begin === undefined) open.begin = undefined;
  }
}
