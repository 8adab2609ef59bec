/**
 * wal2json's format-version 1 as the kernel's lines (pipeline/kernel-lines.ts):
 * every transaction is held (LF_HOLD), and each of its changes is one
 * object of the document's `change` list, written by the kernel into the
 * format's change list field for field as Wal2jsonV1.push() writes it
 * (wal2json-v1.ts), pretty-print's tabs and newlines included; at the
 * Commit (LF_HELD_COMMITS) it writes the document's head, which the list
 * then follows (ChangeList.finish). Per relation:
 * its schema and table lines (head), its pk object (second head), and four
 * column tables of its columns — values (wal2json's rules, wal2json-values.ts
 * kernelKind), names, types and type OIDs (names only).
 */
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import type { TapeColumns } from "../views/tuple.ts";
import type { JsonArea } from "../kernel/json-area.ts";
import { JF_NAMES_ONLY, JF_NO_CLOSE, JF_NUMBERS_AS_STRINGS, JF_SKIP_NULL, JF_SKIP_UNCHANGED, JF_SPACED } from "../jsonl-tape.ts";
import {
  IF_PK, IF_PRINTED, LC_ALL, LC_ALL_IF_OLD, LC_KEYS, LC_TABLE_SHIFT, LF_HELD_COMMITS, LF_HOLD, LF_NO_NEWLINE, LF_PG_TIME, LF_SECOND, LF_UNCHANGED_LEFT_OUT,
  LK_BEGIN, LK_COMMIT, LK_DELETE, LK_INSERT, LK_UPDATE, LT_IDENTITY, LT_NEW, LT_OLD, OP_COLUMNS, OP_HEAD, OP_LSN, OP_TIME, OP_XID, RTF_PK,
} from "../line-templates.ts";
import { program, type HeldLines, type LineFormat, type LineTemplate, type LineTransaction, type ProgramPart, type Row } from "../pipeline/kernel-lines.ts";
import type { ByteSink } from "../jsonl/sink.ts";
import type { Wal2jsonSettings } from "./wal2json-options.ts";
import { kernelKind, nameOf, type RelationFacts, type RelationFactsCache } from "./wal2json-values.ts";

const encoder = new TextEncoder();

/** The column tables of a template (OP_COLUMNS' table << LC_TABLE_SHIFT). */
const VALUES = 0;
const NAMES = 1 << LC_TABLE_SHIFT;
const TYPES = 2 << LC_TABLE_SHIFT;
const OIDS = 3 << LC_TABLE_SHIFT;

/** wal2json's pretty-print strings: tab, newline, space (all empty without it), 3 and 4 tabs. */
export interface Pretty {
  readonly ht: string;
  readonly nl: string;
  readonly sp: string;
  readonly ht3: string;
  readonly ht4: string;
}

/** Per relation: its schema and table lines, and its pk object (without what follows it). */
export interface V1Relation {
  readonly table: Uint8Array;
  readonly pk: Uint8Array;
}

/** A change object's kind line. */
export const kindLine = (p: Pretty, kind: string): string => `${p.ht3}"kind":${p.sp}"${kind}",${p.nl}`;

/** The open transaction of Wal2jsonV1, as it keeps it. */
export interface V1Transaction {
  readonly xid: number;
  /** The commit time as JSON text (`"2024-02-29 12:34:56.789012+00"`). */
  readonly time: string;
}

/** The change list of the open transaction: its bytes, and how many changes it has. */
export interface ChangeList extends HeldLines {
  changes: number;
  clear(): void;
}

/** What the kernel's lines take from Wal2jsonV1. */
export interface V1Host {
  readonly facts: RelationFactsCache;
  relation(facts: RelationFacts): V1Relation;
  transaction: V1Transaction | undefined;
  readonly list: ChangeList;
  /** Column i's value (the separator written) as push() writes it. */
  value(out: ByteSink, facts: RelationFacts, tuple: Tuple, i: number): void;
}

export class Wal2jsonV1Lines implements LineFormat {
  readonly lineFlags: number;
  readonly #s: Wal2jsonSettings;
  readonly #p: Pretty;
  readonly #host: V1Host;

  constructor(settings: Wal2jsonSettings, pretty: Pretty, host: V1Host) {
    this.#s = settings;
    this.#p = pretty;
    this.#host = host;
    this.lineFlags = LF_HOLD | LF_HELD_COMMITS | LF_NO_NEWLINE | LF_PG_TIME | LF_UNCHANGED_LEFT_OUT | (settings.numbersAsStrings ? JF_NUMBERS_AS_STRINGS : 0);
  }

  get held(): HeldLines {
    return this.#host.list;
  }

  programs(area: JsonArea): void {
    const s = this.#s;
    const { ht, nl, sp, ht3, ht4 } = this.#p;
    const spaced = sp === "" ? 0 : JF_SPACED;
    /** The names, types and type OIDs arrays of the shown columns (wal2json-v1.ts #arrays), then the values'. */
    const arrays = (indent: string, names: string, types: string, oids: string, values: string, tuple: number, which: number, skip: number): ProgramPart[] => [
      `${indent}"${names}":${sp}`, [OP_COLUMNS, tuple, which | NAMES | JF_NAMES_ONLY | JF_NO_CLOSE | skip | spaced], `,${nl}`,
      ...(s.includeTypes ? [`${indent}"${types}":${sp}`, [OP_COLUMNS, tuple, which | TYPES | JF_NAMES_ONLY | JF_NO_CLOSE | skip | spaced] as const, `,${nl}`] : []),
      ...(s.includeTypeOids ? [`${indent}"${oids}":${sp}`, [OP_COLUMNS, tuple, which | OIDS | JF_NAMES_ONLY | JF_NO_CLOSE | skip | spaced] as const, `,${nl}`] : []),
      `${indent}"${values}":${sp}`, [OP_COLUMNS, tuple, which | VALUES | JF_NO_CLOSE | skip | spaced],
    ];
    const columns = arrays(ht3, "columnnames", "columntypes", "columntypeoids", "columnvalues", LT_NEW, LC_ALL, JF_SKIP_UNCHANGED);
    const oldkeys = (tuple: number, which: number): ProgramPart[] => [
      `${ht3}"oldkeys":${sp}{${nl}`, ...arrays(ht4, "keynames", "keytypes", "keytypeoids", "keyvalues", tuple, which, JF_SKIP_UNCHANGED | JF_SKIP_NULL), `${nl}${ht3}}${nl}`,
    ];
    // The pk object (second head) and what follows it.
    const pk = (after: string): ProgramPart => ({ if: IF_PK, then: [[OP_HEAD, 1, 0], after] });
    // The start of the list's next element (wal2json-v1.ts #next), the kind line, the schema and table lines (head).
    const change = (kind: string, wanted: boolean, body: ProgramPart[]): ProgramPart[] =>
      !wanted ? [] : [`${nl}${ht}${ht}`, { if: IF_PRINTED, then: [","] }, `{${nl}${kindLine(this.#p, kind)}`, [OP_HEAD, 0, 0], ...body, `${ht}${ht}}`];
    const set = (kind: number, parts: ProgramPart[]) => area.program(kind, program(area, parts));
    set(LK_INSERT, change("insert", s.actions.insert, [...columns, { if: IF_PK, then: [","] }, nl, pk(nl)]));
    // An update's oldkeys: every non-null column of the old row when sent, else the new row's identity.
    set(LK_UPDATE, change("update", s.actions.update, [...columns, `,${nl}`, pk(`,${nl}`), ...oldkeys(LT_IDENTITY, LC_ALL_IF_OLD)]));
    set(LK_DELETE, change("delete", s.actions.delete, [pk(`,${nl}`), ...oldkeys(LT_OLD, LC_KEYS)]));
    set(LK_BEGIN, []);
    // The document's head (wal2json-v1.ts push() of a Commit); the list and its end follow (ChangeList.finish).
    set(LK_COMMIT, [
      `{${nl}`, ...(s.includeXids ? [`${ht}"xid":${sp}`, [OP_XID, 0, 0] as const, `,${nl}`] : []),
      ...(s.includeLsn ? [`${ht}"nextlsn":${sp}"`, [OP_LSN, LF_SECOND, 0] as const, `",${nl}`] : []),
      ...(s.includeTimestamp ? [`${ht}"timestamp":${sp}`, [OP_TIME, 0, 0] as const, `,${nl}`] : []),
      `${ht}"change":${sp}[`,
    ]);
  }

  template(rel: Relation, msg: Row, area: JsonArea): LineTemplate {
    const facts = this.#host.facts.of(rel, msg.relationId, msg.kind === "Delete" ? msg.oldTuple : msg.newTuple);
    const r = this.#host.relation(facts);
    const flags = this.#s.includePk && facts.pkKnown && facts.anyKey ? RTF_PK : 0;
    if (!facts.wanted) return { head: new Uint8Array(0), wanted: false, flags, columns: 0 };
    const n = rel.columns.length;
    const kinds: number[] = [];
    for (let i = 0; i < n; i++) kinds.push(kernelKind(facts, i) | (facts.keys[i] ? 1 << 8 : 0));
    const none = kinds.map(() => 0);
    const table = (texts: readonly string[]): number => area.table(kinds, texts.map((t) => encoder.encode(t)), none);
    const columns = table(kinds.map(() => ""));
    const tables = [
      table(kinds.map((_, i) => nameOf(facts, i))), table(kinds.map((_, i) => facts.types[i] ?? '"unknown"')), table(kinds.map((_, i) => String(facts.oids[i] ?? 0))),
    ];
    return { head: r.table, head1: r.pk, wanted: true, flags, columns, tables };
  }

  declinedRow(rel: Relation): RelationFacts {
    return this.#host.facts.of(rel, 0, undefined);
  }

  column(out: ByteSink, row: unknown, tuple: Tuple, old: Tuple | undefined, i: number, here: TapeColumns | undefined, there: TapeColumns | undefined, first: boolean): boolean {
    // Only a value is ever declined (names, types and OIDs are the tables' own bytes).
    if (!first) out.str(`,${this.#p.sp}`);
    this.#host.value(out, row as RelationFacts, tuple, i);
    return true;
  }

  lineTransaction(): LineTransaction | undefined {
    const t = this.#host.transaction;
    if (t === undefined) return undefined;
    return { xid: t.xid, time: t.time, printed: this.#host.list.changes > 0, begin: undefined, foreignRows: false, held: true, finalLsn: 0n };
  }

  setLineTransaction(t: LineTransaction | undefined, changed: boolean): void {
    if (!changed) return;
    // A transaction the kernel began (held from its Begin): its change list starts empty.
    this.#host.transaction = t === undefined ? undefined : { xid: t.xid, time: t.time };
    if (t !== undefined) this.#host.list.clear();
  }
}
