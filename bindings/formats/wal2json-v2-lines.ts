/**
 * wal2json's format-version 2 as the kernel's lines (pipeline/kernel-lines.ts):
 * its documents as programs, field for field as Wal2jsonV2.push() writes
 * them (wal2json-v2.ts) — B at each Begin and C at each Commit
 * (include-transaction), with the B of include-lsn naming its Commit's end
 * (written at the Begin when its Commit is among the messages the kernel
 * is given, LF_BEGIN_AHEAD; else the transaction's records are held, and
 * the kernel writes B at the Commit, LF_HELD_COMMITS) — and per relation its `,"schema":…,"table":…`
 * and its columns' `{"name":…,"type":…,"typeoid":…,"value":` with
 * wal2json's value rules (wal2json-values.ts kernelKind).
 */
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import type { TapeColumns } from "../views/tuple.ts";
import type { JsonArea } from "../kernel/json-area.ts";
import { JF_NAMES_ONLY, JF_NUMBERS_AS_STRINGS, JF_SKIP_UNCHANGED } from "../jsonl-tape.ts";
import {
  IF_IDENTITY, IF_PK, LC_ALL, LC_KEYS, LF_AHEAD_END, LF_BEGIN_AHEAD, LF_EVERY_TRANSACTION, LF_FINAL, LF_FIRST, LF_HELD_COMMITS, LF_PG_TIME, LF_SECOND, LF_TRANSACTIONS,
  LF_UNCHANGED_LEFT_OUT, LF_WAL_START_OR_NULL, LK_BEGIN, LK_COMMIT, LK_DELETE, LK_INSERT, LK_UPDATE, LT_IDENTITY, LT_NEW, LT_OLD, OP_COLUMNS, OP_HEAD, OP_LSN,
  OP_TIME, OP_XID, RTF_KEYS, RTF_PK,
} from "../line-templates.ts";
import { program, type HeldLines, type LineFormat, type LineTemplate, type LineTransaction, type Op, type ProgramPart, type Row } from "../pipeline/kernel-lines.ts";
import type { ByteSink } from "../jsonl/sink.ts";
import type { Wal2jsonSettings } from "./wal2json-options.ts";
import { kernelKind, type RelationFacts, type RelationFactsCache } from "./wal2json-values.ts";

const encoder = new TextEncoder();

/** Per relation: `,"schema":…,"table":…` and per column `{"name":…,"type":…,"typeoid":…` then `,"value":`, as bytes. */
export interface V2Columns {
  readonly table: string;
  /** Column i's entry without its value: `{"name":…,"type":…,"typeoid":…`. */
  readonly entries: readonly string[];
  /** Column i's entry and `,"value":`, as bytes. */
  readonly prefixes: readonly Uint8Array[];
}

/** `,"value":` after a column's entry. */
export const VALUE_KEY = ',"value":';

/** The open transaction of Wal2jsonV2, as it keeps it. */
export interface V2Transaction {
  readonly xid: number;
  /** The commit time as JSON text (`"2024-02-29 12:34:56.789012+00"`). */
  readonly time: string;
  /** Its Begin's finalLsn: the B record's `lsn` (include-lsn with include-transaction writes B at the Commit). */
  readonly finalLsn: bigint;
  /** Its B record is written (the records after it need not be held until the Commit). */
  readonly begun: boolean;
}

/** What the kernel's lines take from Wal2jsonV2: its relation facts and columns, its transaction, and its JS path for a declined column. */
export interface V2Host {
  readonly facts: RelationFactsCache;
  columns(facts: RelationFacts): V2Columns;
  transaction: V2Transaction | undefined;
  /** Where the records of a transaction not yet begun are held until its Commit (include-lsn with include-transaction); undefined: none are. */
  readonly held: HeldLines | undefined;
  /** Column i's value (`{"name"…` written) as push() writes it; false: left out (unchanged TOAST). */
  value(out: ByteSink, facts: RelationFacts, tuple: Tuple, i: number): boolean;
}

export class Wal2jsonV2Lines implements LineFormat {
  readonly lineFlags: number;
  readonly #s: Wal2jsonSettings;
  readonly #host: V2Host;

  constructor(settings: Wal2jsonSettings, host: V2Host) {
    this.#s = settings;
    this.#host = host;
    this.lineFlags = LF_PG_TIME | LF_UNCHANGED_LEFT_OUT | (settings.numbersAsStrings ? JF_NUMBERS_AS_STRINGS : 0)
      | (settings.includeTransaction ? LF_TRANSACTIONS | LF_EVERY_TRANSACTION : 0) | (host.held !== undefined ? LF_BEGIN_AHEAD | LF_HELD_COMMITS : 0);
  }

  programs(area: JsonArea): void {
    const s = this.#s;
    const fields: ProgramPart[] = [...(s.includeXids ? [',"xid":', [OP_XID, 0, 0] as Op] : []), ...(s.includeTimestamp ? [',"timestamp":', [OP_TIME, 0, 0] as Op] : [])];
    const lsnPair = (first: number, second: number): ProgramPart[] => [',"lsn":"', [OP_LSN, first, 0], '","nextlsn":"', [OP_LSN, second, 0], '"'];
    const set = (kind: number, parts: ProgramPart[]) => area.program(kind, program(area, parts));
    set(LK_BEGIN, ['{"action":"B"', ...fields, ...(this.#host.held !== undefined ? lsnPair(LF_FINAL, LF_AHEAD_END) : []), "}"]);
    set(LK_COMMIT, ['{"action":"C"', ...fields, ...(s.includeLsn ? lsnPair(LF_FIRST, LF_SECOND) : []), "}"]);
    const row = (action: string, wanted: boolean, body: ProgramPart[]): ProgramPart[] => !wanted ? [] : [
      `{"action":"${action}"`, ...fields, ...(s.includeLsn ? [',"lsn":', [OP_LSN, LF_WAL_START_OR_NULL, 0] as Op] : []), [OP_HEAD, 0, 0],
      ...body,
      // pk: the key columns' entries, of the old row when sent, else the new.
      ...(s.includePk ? [{ if: IF_PK, then: [',"pk":', [OP_COLUMNS, LT_IDENTITY, LC_KEYS | JF_NAMES_ONLY | JF_SKIP_UNCHANGED] as Op] }] : []),
      "}",
    ];
    const columns: ProgramPart[] = [',"columns":', [OP_COLUMNS, LT_NEW, LC_ALL | JF_SKIP_UNCHANGED]];
    const identity = (tuple: number): ProgramPart[] => [',"identity":', [OP_COLUMNS, tuple, LC_KEYS | JF_SKIP_UNCHANGED]];
    set(LK_INSERT, row("I", s.actions.insert, columns));
    // An update's identity: the old row when sent, else the new row's key columns (none when it has none).
    set(LK_UPDATE, row("U", s.actions.update, [...columns, { if: IF_IDENTITY, then: identity(LT_IDENTITY) }]));
    set(LK_DELETE, row("D", s.actions.delete, identity(LT_OLD)));
  }

  template(rel: Relation, msg: Row, area: JsonArea): LineTemplate {
    const facts = this.#host.facts.of(rel, msg.relationId, msg.kind === "Delete" ? msg.oldTuple : msg.newTuple);
    const cols = this.#host.columns(facts);
    const head = encoder.encode(cols.table);
    const flags = (facts.anyKey ? RTF_KEYS : 0) | (this.#s.includePk && facts.pkKnown ? RTF_PK : 0);
    if (!facts.wanted) return { head, wanted: false, flags, columns: 0 };
    const n = rel.columns.length;
    const kinds: number[] = [];
    for (let i = 0; i < n; i++) kinds.push(kernelKind(facts, i) | (facts.keys[i] ? 1 << 8 : 0));
    const columns = area.table(kinds, cols.prefixes, kinds.map(() => 0), cols.prefixes.map((p) => p.length - VALUE_KEY.length));
    return { head, wanted: true, flags, columns };
  }

  declinedRow(rel: Relation, length: number): RelationFacts {
    return this.#host.facts.of(rel, 0, undefined);
  }

  column(out: ByteSink, row: unknown, tuple: Tuple, old: Tuple | undefined, i: number, here: TapeColumns | undefined, there: TapeColumns | undefined, first: boolean, flags: number): boolean {
    const facts = row as RelationFacts;
    const cols = this.#host.columns(facts);
    const mark = out.len;
    if (!first) out.byte(0x2c);
    if ((flags & JF_NAMES_ONLY) !== 0) {
      out.str(cols.entries[i]!);
      out.byte(0x7d);
      return true;
    }
    out.bytes(cols.prefixes[i]!);
    if (!this.#host.value(out, facts, tuple, i)) {
      out.len = mark;
      return false;
    }
    out.byte(0x7d);
    return true;
  }

  lineTransaction(): LineTransaction | undefined {
    const t = this.#host.transaction;
    if (t === undefined) return undefined;
    return { xid: t.xid, time: t.time, printed: false, begin: undefined, foreignRows: false, held: this.#host.held !== undefined && !t.begun, finalLsn: t.finalLsn };
  }

  setLineTransaction(t: LineTransaction | undefined, changed: boolean): void {
    // A transaction the kernel began and did not hold has its B written (include-transaction: the kernel writes it at the Begin).
    if (changed) this.#host.transaction = t === undefined ? undefined : { xid: t.xid, time: t.time, finalLsn: t.finalLsn, begun: !t.held };
  }

  get held(): HeldLines | undefined {
    return this.#host.held;
  }
}
