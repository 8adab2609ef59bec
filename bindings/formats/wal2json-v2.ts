/**
 * wal2json's `format-version` 2: one JSON document per record — `B` and `C`
 * around each transaction (include-transaction), one per change (`I`, `U`,
 * `D`, `T` per table truncated) and per logical message (`M`) — with
 * wal2json's field order: action, xid, timestamp, lsn, schema, table,
 * columns, identity, pk.
 *
 * B carries the transaction's `nextlsn` (include-lsn), which pgoutput sends
 * only with the Commit: with include-lsn and include-transaction a
 * transaction's records are held until its commit, then written after B.
 * pretty-print and include-typmod change nothing here, as in wal2json.
 */
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { Tuple } from "../tuple.ts";
import type { Format, FormatItem } from "../pipeline/format.ts";
import type { RecordKind, Records } from "../pipeline/records.ts";
import { ByteSink } from "../jsonl/sink.ts";
import { formatLsn } from "../lsn.ts";
import type { TypeInfo } from "../decoder.ts";
import { messageWanted, type Wal2jsonSettings } from "./wal2json-options.ts";
import {
  ColumnReader, KIND_UNCHANGED, RelationFactsCache, commitTimeText, nameOf, refuseUnplain, writeContent, writeValue,
  type RecordTarget, type RelationFacts,
} from "./wal2json-values.ts";
import { KernelLines, linesFor } from "../pipeline/kernel-lines.ts";
import { VALUE_KEY, Wal2jsonV2Lines, type V2Columns, type V2Transaction } from "./wal2json-v2-lines.ts";

type Row = PgoutputMessage & { kind: "Insert" | "Update" | "Delete" };

const encoder = new TextEncoder();
const NEWLINE = 0x0a;

/** Records held back until the transaction's end is known. */
class Held implements RecordTarget {
  readonly bytes = new ByteSink();
  readonly #ends: number[] = [];
  readonly #kinds: RecordKind[] = [];
  readonly #relations: (Relation | undefined)[] = [];

  end(kind: RecordKind, relation?: Relation): void {
    this.endAt(this.bytes.len, kind, relation);
  }

  /** Ends a record whose bytes end at `end` of `bytes` (the kernel's lines: pipeline/kernel-lines.ts). */
  endAt(end: number, kind: RecordKind, relation: Relation | undefined): void {
    this.#ends.push(end);
    this.#kinds.push(kind);
    this.#relations.push(relation);
  }

  /** Writes the held records into `out`, in order, and forgets them. */
  moveTo(out: RecordTarget): void {
    this.#write(out);
    this.clear();
  }

  /** The Commit the kernel took (pipeline/kernel-lines.ts): its B line, what was held, its C line (held after them). */
  finish(out: Records, begin: number, commit: number, end: number): void {
    out.bytes.bytes(this.bytes.buf, begin, commit);
    out.end("begin");
    this.#write(out);
    out.bytes.bytes(this.bytes.buf, commit, end);
    out.end("commit");
    this.clear();
  }

  #write(out: RecordTarget): void {
    let start = 0;
    for (let i = 0; i < this.#ends.length; i++) {
      out.bytes.bytes(this.bytes.buf, start, this.#ends[i]);
      out.end(this.#kinds[i]!, this.#relations[i]);
      start = this.#ends[i]!;
    }
  }

  clear(): void {
    this.bytes.len = 0;
    this.#ends.length = this.#kinds.length = this.#relations.length = 0;
  }
}

export class Wal2jsonV2 implements Format {
  readonly #s: Wal2jsonSettings;
  readonly #facts: RelationFactsCache;
  readonly #col = new ColumnReader();
  /** The open transaction (shared with the kernel's lines). */
  #open: V2Transaction | undefined;
  /** `,"xid":…,"timestamp":…` as asked, of #open (made on first use: the kernel's lines need none). */
  #fieldsOf: V2Transaction | undefined;
  #fieldsText = "";
  readonly #held: Held | undefined;
  /** Fields of a record outside any transaction (a non-transactional message, a snapshot row): wal2json's nulls. */
  readonly #outside: string;
  /** pushBatch's whole lines (pipeline/kernel-lines.ts). */
  readonly #lines: KernelLines;

  /** `decoder`: the one the messages come from, whose kernel is to write the lines (pushBatch) from its first call. */
  constructor(settings: Wal2jsonSettings, types: ReadonlyMap<number, TypeInfo> | undefined, decoder?: Pick<PgoutputDecoder, "types">) {
    this.#s = settings;
    linesFor(decoder);
    this.#facts = new RelationFactsCache(settings, types);
    this.#held = settings.includeTransaction && settings.includeLsn ? new Held() : undefined;
    this.#outside = `${settings.includeXids ? ',"xid":null' : ""}${settings.includeTimestamp ? ',"timestamp":null' : ""}`;
    const self = this;
    this.#lines = new KernelLines(new Wal2jsonV2Lines(settings, {
      facts: this.#facts,
      columns: (facts) => this.#columns(facts),
      get transaction() {
        return self.#open;
      },
      set transaction(t) {
        self.#open = t;
      },
      held: this.#held,
      value: (out, facts, tuple, i) => {
        const col = this.#col.of(tuple);
        const kind = col.read(i);
        if (kind === KIND_UNCHANGED) return false;
        writeValue(out, facts, i, kind, col, settings.numbersAsStrings);
        return true;
      },
    }));
  }

  /**
   * The records of `batch`'s messages [from, to) of plain transactions, the
   * kernel writing whole lines as far as it takes them (Format.pushBatch);
   * the index of the first message it did not take.
   */
  pushBatch(batch: Batch, from: number, out: Records, to = batch.length, boundary?: (index: number) => void): number {
    return this.#lines.push(batch, from, out, Math.min(to, batch.length), boundary);
  }

  push(item: FormatItem, out: Records): void {
    const s = this.#s;
    this.#lines.pushed(item);
    switch (item.kind) {
      case "SnapshotRow":
        // A row committed before the slot's start: an insert outside any transaction.
        this.#row(out, "snapshot", "I", item.relation, 0, undefined, item.tuple, undefined, this.#outside);
        return;
      case "Begin": {
        const begun = s.includeTransaction && this.#held === undefined;
        this.#open = { xid: item.xid, time: `"${commitTimeText(item.commitTime)}"`, finalLsn: item.finalLsn, begun };
        if (begun) this.#record(out, "begin", undefined, `{"action":"B"${this.#fields()}}`);
        return;
      }
      case "Commit": {
        if (!s.includeTransaction) {
          this.#open = undefined;
          return;
        }
        const open = this.#open;
        const fields = this.#fields();
        this.#open = undefined;
        const lsn = (at: bigint | undefined) => `,"lsn":${at === undefined ? "null" : `"${formatLsn(at)}"`},"nextlsn":"${formatLsn(item.endLsn)}"`;
        if (this.#held !== undefined && open?.begun !== true) {
          this.#record(out, "begin", undefined, `{"action":"B"${fields}${lsn(open?.finalLsn)}}`);
          this.#held.moveTo(out);
        }
        this.#record(out, "commit", undefined, `{"action":"C"${fields}${s.includeLsn ? lsn(item.commitLsn) : ""}}`);
        return;
      }
      case "Message": {
        if (!messageWanted(s, item.prefix)) return;
        const target = item.transactional ? this.#target(out) : out;
        const bytes = target.bytes;
        bytes.str(`{"action":"M"${item.transactional ? this.#fields() : this.#outside}`);
        if (s.includeLsn) bytes.str(`,"lsn":"${formatLsn(item.lsn)}"`);
        bytes.str(`,"transactional":${item.transactional},"prefix":${JSON.stringify(item.prefix)},"content":`);
        if (writeContent(bytes, item.content)) bytes.str(',"encoding":"base64"');
        this.#end(target, "message", undefined);
        return;
      }
      case "Truncate": {
        if (!s.actions.truncate) return;
        const target = this.#target(out);
        item.relationIds.forEach((id, i) => {
          const rel = item.relations[i];
          const facts = this.#facts.of(rel, id, undefined);
          if (!facts.wanted) return;
          target.bytes.str(`{"action":"T"${this.#fields()}${this.#lsn(item.walStart)}${this.#columns(facts).table}`);
          this.#end(target, "truncate", rel);
        });
        return;
      }
      case "Insert":
        if (s.actions.insert) this.#change(out, item);
        return;
      case "Update":
        if (s.actions.update) this.#change(out, item);
        return;
      case "Delete":
        if (s.actions.delete) this.#change(out, item);
        return;
      default:
        refuseUnplain(item);
    }
  }

  reset(): void {
    this.#open = undefined;
    this.#held?.clear();
    this.#lines.reset();
  }

  #target(out: Records): RecordTarget {
    return this.#held !== undefined && this.#open !== undefined && !this.#open.begun ? this.#held : out;
  }

  #fields(): string {
    const open = this.#open;
    if (open === undefined) return this.#outside;
    if (this.#fieldsOf !== open) {
      this.#fieldsOf = open;
      this.#fieldsText = `${this.#s.includeXids ? `,"xid":${open.xid}` : ""}${this.#s.includeTimestamp ? `,"timestamp":${open.time}` : ""}`;
    }
    return this.#fieldsText;
  }

  #lsn(walStart: bigint | undefined): string {
    if (!this.#s.includeLsn) return "";
    // A capture file has no XLogData positions: null.
    return walStart !== undefined && walStart > 0n ? `,"lsn":"${formatLsn(walStart)}"` : ',"lsn":null';
  }

  #record(target: RecordTarget, kind: RecordKind, relation: Relation | undefined, text: string): void {
    target.bytes.str(text);
    target.bytes.byte(NEWLINE);
    target.end(kind, relation);
  }

  /** Closes the document and ends the record. */
  #end(target: RecordTarget, kind: RecordKind, relation: Relation | undefined): void {
    target.bytes.byte(0x7d);
    target.bytes.byte(NEWLINE);
    target.end(kind, relation);
  }

  #change(out: Records, msg: Row): void {
    const kind = msg.kind === "Insert" ? "insert" : msg.kind === "Update" ? "update" : "delete";
    const action = msg.kind === "Insert" ? "I" : msg.kind === "Update" ? "U" : "D";
    const newTuple = msg.kind === "Delete" ? undefined : msg.newTuple;
    const oldTuple = msg.kind === "Insert" ? undefined : (msg.oldTuple ?? undefined);
    this.#row(this.#target(out), kind, action, msg.relation, msg.relationId, msg.walStart, newTuple, oldTuple, this.#fields());
  }

  /** One change's document: wal2json's pg_decode_write_change. */
  #row(target: RecordTarget, kind: RecordKind, action: string, rel: Relation | undefined, relationId: number, walStart: bigint | undefined,
    newTuple: Tuple | undefined, oldTuple: Tuple | undefined, fields: string): void {
    const facts = this.#facts.of(rel, relationId, newTuple ?? oldTuple);
    if (!facts.wanted) return;
    const cols = this.#columns(facts);
    const out = target.bytes;
    out.str(`{"action":"${action}"`);
    out.str(fields);
    if (this.#s.includeLsn) out.str(this.#lsn(walStart));
    out.str(cols.table);
    if (newTuple !== undefined) {
      out.str(',"columns":[');
      this.#tuple(out, facts, cols, newTuple, false);
      out.byte(0x5d);
    }
    // The old tuple when pgoutput sent one (key changed, REPLICA IDENTITY FULL, deletes), else the new row's identity columns.
    const identity = oldTuple ?? (kind === "update" && facts.anyKey ? newTuple : undefined);
    if (identity !== undefined) {
      out.str(',"identity":[');
      this.#tuple(out, facts, cols, identity, true);
      out.byte(0x5d);
    }
    if (this.#s.includePk && facts.pkKnown) {
      // Known only for REPLICA IDENTITY DEFAULT (its key columns are the primary key): left out otherwise (docs/cli-output.md).
      const from = this.#col.of(oldTuple ?? newTuple!);
      out.str(',"pk":[');
      let first = true;
      for (let i = 0; i < cols.entries.length; i++) {
        if (!facts.keys[i] || from.read(i) === KIND_UNCHANGED) continue;
        if (!first) out.byte(0x2c);
        first = false;
        out.str(cols.entries[i]!);
        out.byte(0x7d);
      }
      out.byte(0x5d);
    }
    this.#end(target, kind, rel);
  }

  /** `{name, type, typeoid, value}` of each column (`keys`: the replica identity's only); unchanged TOAST left out, as wal2json. */
  #tuple(out: ByteSink, facts: RelationFacts, cols: V2Columns, tuple: Tuple, keys: boolean): void {
    const col = this.#col.of(tuple);
    const asStrings = this.#s.numbersAsStrings;
    let first = true;
    for (let i = 0; i < tuple.length; i++) {
      if (keys && facts.keys[i] !== true) continue;
      const kind = col.read(i);
      if (kind === KIND_UNCHANGED) continue;
      if (!first) out.byte(0x2c);
      first = false;
      out.bytes(i < cols.prefixes.length ? cols.prefixes[i]! : this.#prefix(facts, i));
      writeValue(out, facts, i, kind, col, asStrings);
      out.byte(0x7d);
    }
  }

  #columns(facts: RelationFacts): V2Columns {
    if (facts.cache !== undefined) return facts.cache as V2Columns;
    const s = this.#s;
    const entries = facts.names.map((name, i) =>
      `{"name":${name}${s.includeTypes ? `,"type":${facts.types[i]}` : ""}${s.includeTypeOids ? `,"typeoid":${facts.oids[i]}` : ""}`);
    const cols: V2Columns = {
      table: `${s.includeSchemas ? `,"schema":${facts.schema}` : ""},"table":${facts.table}`, entries, prefixes: entries.map((e) => encoder.encode(e + VALUE_KEY)),
    };
    return (facts.cache = cols);
  }

  /** A column the Relation message did not list (no relation known): named by position, no type. */
  #prefix(facts: RelationFacts, i: number): Uint8Array {
    return encoder.encode(`{"name":${nameOf(facts, i)},"value":`);
  }
}
