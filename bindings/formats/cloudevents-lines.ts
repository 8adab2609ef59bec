/**
 * CloudEvents' structured events of JSON Lines data as the kernel's lines
 * (pipeline/kernel-lines.ts): each JSON Lines program (jsonl/kernel-lines.ts)
 * inside the envelope CloudEvents.push() writes around the line
 * (cloudevents.ts): `{"specversion":"1.0","id":"X/Y:N","source":…,"type":…,
 * "subject":…,"time":…,"pgoutputlsn":…,"pgoutputxid":…,
 * "datacontenttype":"application/json","data":` the line `}`. The id's
 * `X/Y:N` is the transaction's commit LSN and the record's position in it
 * (OP_POSITION); the subject is each relation template's second head.
 */
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import type { TapeColumns } from "../views/tuple.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import type { JsonArea } from "../kernel/json-area.ts";
import { IF_FINAL, LF_FINAL, LK_BEGIN, LK_COMMIT, LK_DELETE, LK_INSERT, LK_UPDATE, OP_HEAD, OP_LSN, OP_POSITION, OP_TIME, OP_XID } from "../line-templates.ts";
import { program, type LineFormat, type LineTemplate, type LineTransaction, type ProgramPart, type Row } from "../pipeline/kernel-lines.ts";
import type { RecordKind } from "../pipeline/records.ts";
import type { ByteSink } from "../jsonl/sink.ts";
import type { JsonlLineFormat } from "../jsonl/kernel-lines.ts";
import { formatLsn } from "../lsn.ts";

const encoder = new TextEncoder();

/** What ends the envelope's attributes: the data follows. */
const DATA = ',"datacontenttype":"application/json","data":';

/** The records' kinds of the line kinds (LK_*). */
const KINDS: Readonly<Record<number, RecordKind>> = { [LK_INSERT]: "insert", [LK_UPDATE]: "update", [LK_DELETE]: "delete", [LK_BEGIN]: "begin", [LK_COMMIT]: "commit" };

export class CloudEventsLines implements LineFormat {
  readonly lineFlags: number;
  readonly #data: JsonlLineFormat;
  /** `,"source":…` */
  readonly #source: string;
  readonly #types: Readonly<Record<string, string>>;
  readonly #subject: (rel: Relation) => string;

  /** `types`: the `type` attribute of each kind of record; `subject`: a relation's as JSON text. */
  constructor(data: JsonlLineFormat, source: string, types: Readonly<Record<string, string>>, subject: (rel: Relation) => string) {
    this.#data = data;
    this.lineFlags = data.lineFlags;
    this.#source = source;
    this.#types = types;
    this.#subject = subject;
  }

  programs(area: JsonArea): void {
    for (const [kind, data] of this.#data.parts()) {
      const row = kind <= LK_DELETE;
      const envelope: ProgramPart[] = [
        '{"specversion":"1.0","id":"', [OP_LSN, LF_FINAL, 0], ":", [OP_POSITION, 0, 0], `"${this.#source},"type":"${this.#types[KINDS[kind]!]}"`,
        ...(row ? [[OP_HEAD, 1, 0] as const] : []),
        ',"time":', [OP_TIME, 0, 0],
        { if: IF_FINAL, then: [',"pgoutputlsn":"', [OP_LSN, LF_FINAL, 0], '"'] },
        ',"pgoutputxid":"', [OP_XID, 0, 0], `"${DATA}`,
      ];
      area.program(kind, program(area, [...envelope, ...data, "}"]));
    }
  }

  template(rel: Relation, msg: Row, area: JsonArea, values: ValueDecoder): LineTemplate {
    return { ...this.#data.template(rel, msg, area, values), head1: encoder.encode(`,"subject":${this.#subject(rel)}`) };
  }

  declinedRow(rel: Relation, length: number): unknown {
    return this.#data.declinedRow(rel, length);
  }

  column(out: ByteSink, row: unknown, tuple: Tuple, old: Tuple | undefined, i: number, here: TapeColumns | undefined, there: TapeColumns | undefined, first: boolean): boolean {
    return this.#data.column(out, row, tuple, old, i, here, there, first);
  }

  /** The B line JSON Lines has due, in its event (the transaction's first record: position 0). */
  lineTransaction(): LineTransaction | undefined {
    const t = this.#data.lineTransaction();
    if (t?.begin === undefined) return t;
    const lsn = formatLsn(t.finalLsn);
    const begin = `{"specversion":"1.0","id":"${lsn}:0"${this.#source},"type":"${this.#types.begin}","time":${t.time}${t.finalLsn > 0n ? `,"pgoutputlsn":"${lsn}"` : ""}` +
      `,"pgoutputxid":"${t.xid}"${DATA}${t.begin}}`;
    return { ...t, begin };
  }

  /** A B line the kernel made due is in its event: JSON Lines takes the line alone. */
  setLineTransaction(t: LineTransaction | undefined, changed: boolean): void {
    const begin = t?.begin;
    const data = changed && begin !== undefined ? { ...t!, begin: begin.slice(begin.indexOf(DATA) + DATA.length, -1) } : t;
    this.#data.setLineTransaction(data, changed);
  }
}
