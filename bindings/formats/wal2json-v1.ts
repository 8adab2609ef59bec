/**
 * wal2json's `format-version` 1 (its default): one JSON document per
 * transaction, `{"xid", "nextlsn", "timestamp", "change": [...]}`, each
 * change an object with `kind`, `schema`, `table`, `columnnames`,
 * `columntypes`, `columntypeoids`, `columnvalues`, `pk` and `oldkeys`; a
 * non-transactional logical message is a document of its own. Truncates
 * are not shown (wal2json 2.5/2.6 print nothing for them in this version).
 * pretty-print indents with wal2json's tabs, byte for byte.
 *
 * The document is built as the transaction's changes come and written as
 * one record at its Commit (which also brings `nextlsn`); pushBatch has
 * the kernel write the changes into it (wal2json-v1-lines.ts).
 */
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import type { RecordKind } from "../pipeline/records.ts";
import { KernelLines, linesFor } from "../pipeline/kernel-lines.ts";
import { Wal2jsonV1Lines, kindLine, type Pretty, type V1Relation, type V1Transaction } from "./wal2json-v1-lines.ts";
import type { Tuple } from "../tuple.ts";
import type { TypeInfo } from "../decoder.ts";
import type { Format, FormatItem } from "../pipeline/format.ts";
import type { Records } from "../pipeline/records.ts";
import { ByteSink } from "../jsonl/sink.ts";
import { formatLsn } from "../lsn.ts";
import { messageWanted, type Wal2jsonSettings } from "./wal2json-options.ts";
import {
  ColumnReader, KIND_NULL, KIND_UNCHANGED, RelationFactsCache, commitTimeText, nameOf, refuseUnplain, writeContent, writeValue,
  type RelationFacts,
} from "./wal2json-values.ts";

type Row = PgoutputMessage & { kind: "Insert" | "Update" | "Delete" };

/** Per relation: what the kernel's lines take (V1Relation), and name/type arrays made once. */
interface V1Arrays extends V1Relation {
  /** The arrays of a block when every column it may show is shown (the common case: no unchanged TOAST, no NULL key). */
  complete: Map<string, Uint8Array>;
}

const encoder = new TextEncoder();

/** A change list being written: its bytes and how many changes it has (the comma before each after the first). */
class ChangeList {
  readonly bytes = new ByteSink();
  changes = 0;

  constructor(
    /** What ends a document after its list (pretty-print's newlines and tabs), and its newline. */
    readonly tail: string,
  ) {}

  /** The Commit the kernel took (pipeline/kernel-lines.ts): the document's head is its C line, held after the list. */
  finish(out: Records, _begin: number, commit: number, end: number): void {
    const bytes = out.bytes;
    bytes.bytes(this.bytes.buf, commit, end);
    bytes.bytes(this.bytes.buf, 0, commit);
    bytes.str(this.tail);
    out.end("commit");
    this.clear();
  }

  /** A change the kernel wrote (its bytes are in `bytes` up to `end`). */
  endAt(_end: number, _kind: RecordKind, _relation: Relation | undefined): void {
    this.changes++;
  }

  clear(): void {
    this.bytes.len = 0;
    this.changes = 0;
  }
}

export class Wal2jsonV1 implements Format {
  readonly #s: Wal2jsonSettings;
  readonly #facts: RelationFactsCache;
  readonly #col = new ColumnReader();
  readonly #p: Pretty;
  /** The open transaction (xid and commit time), its changes in `#txn`. */
  #open: V1Transaction | undefined;
  readonly #txn: ChangeList;
  /** A document of one change outside the transaction: a non-transactional message, a snapshot row. */
  readonly #solo: ChangeList;
  /** Which columns of the tuple being written are shown (scratch). */
  readonly #shown: boolean[] = [];
  /** pushBatch's changes from the kernel (pipeline/kernel-lines.ts). */
  readonly #lines: KernelLines;

  /** `decoder`: the one the messages come from, whose kernel is to write the changes (pushBatch) from its first call. */
  constructor(settings: Wal2jsonSettings, types: ReadonlyMap<number, TypeInfo> | undefined, decoder?: Pick<PgoutputDecoder, "types">) {
    this.#s = settings;
    this.#facts = new RelationFactsCache(settings, types);
    const ht = settings.pretty ? "\t" : "";
    this.#p = { ht, nl: settings.pretty ? "\n" : "", sp: settings.pretty ? " " : "", ht3: ht.repeat(3), ht4: ht.repeat(4) };
    const tail = `${this.#p.nl}${ht}]${this.#p.nl}}\n`;
    this.#txn = new ChangeList(tail);
    this.#solo = new ChangeList(tail);
    linesFor(decoder);
    const self = this;
    this.#lines = new KernelLines(new Wal2jsonV1Lines(settings, this.#p, {
      facts: this.#facts,
      relation: (facts) => this.#relation(facts),
      get transaction() {
        return self.#open;
      },
      set transaction(t) {
        self.#open = t;
      },
      list: this.#txn,
      value: (out, facts, tuple, i) => {
        const col = this.#col.of(tuple);
        writeValue(out, facts, i, col.read(i), col, settings.numbersAsStrings);
      },
    }));
  }

  /**
   * The records of `batch`'s messages [from, to) of plain transactions, the
   * kernel writing the changes as far as it takes them (Format.pushBatch);
   * the index of the first message it did not take.
   */
  pushBatch(batch: Batch, from: number, out: Records, to = batch.length, boundary?: (index: number) => void): number {
    return this.#lines.push(batch, from, out, Math.min(to, batch.length), boundary);
  }

  push(item: FormatItem, out: Records): void {
    const { ht, nl, sp } = this.#p;
    this.#lines.pushed(item);
    switch (item.kind) {
      case "SnapshotRow":
        // A row committed before the slot's start: an insert in a document of its own, without transaction fields.
        this.#row(this.#solo, item.relation, 0, "insert", item.tuple, undefined);
        this.#document(out, this.#solo, "snapshot", `{${nl}${ht}"change":${sp}[`);
        return;
      case "Begin":
        this.#open = { xid: item.xid, time: `"${commitTimeText(item.commitTime)}"` };
        this.#txn.clear();
        return;
      case "Commit": {
        const open = this.#open;
        const s = this.#s;
        let head = `{${nl}`;
        if (s.includeXids) head += `${ht}"xid":${sp}${open?.xid ?? "null"},${nl}`;
        if (s.includeLsn) head += `${ht}"nextlsn":${sp}"${formatLsn(item.endLsn)}",${nl}`;
        if (s.includeTimestamp) head += `${ht}"timestamp":${sp}${open?.time ?? "null"},${nl}`;
        this.#document(out, this.#txn, "commit", `${head}${ht}"change":${sp}[`);
        this.#open = undefined;
        return;
      }
      case "Message":
        if (!messageWanted(this.#s, item.prefix)) return;
        if (item.transactional) {
          this.#message(this.#txn, item.prefix, item.content, true);
          return;
        }
        // A document of its own (wal2json 2.5 put a stray comma in it after a transaction of several changes; 2.6 does not).
        this.#message(this.#solo, item.prefix, item.content, false);
        this.#document(out, this.#solo, "message", `{${nl}${ht}"change":${sp}[`);
        return;
      case "Insert":
        if (this.#s.actions.insert) this.#change(item);
        return;
      case "Update":
        if (this.#s.actions.update) this.#change(item);
        return;
      case "Delete":
        if (this.#s.actions.delete) this.#change(item);
        return;
      case "Truncate":
        return;
      default:
        refuseUnplain(item);
    }
  }

  reset(): void {
    this.#open = undefined;
    this.#txn.clear();
    this.#lines.reset();
  }

  /** Writes `head`, the change list and the document's end as one record. */
  #document(out: Records, list: ChangeList, kind: "commit" | "message" | "snapshot", head: string): void {
    const bytes = out.bytes;
    bytes.str(head);
    bytes.bytes(list.bytes.buf, 0, list.bytes.len);
    bytes.str(list.tail);
    out.end(kind);
    list.clear();
  }

  /** The start of the list's next element: a newline, two tabs, the comma after the first, the brace. */
  #next(list: ChangeList): ByteSink {
    const { ht, nl } = this.#p;
    list.changes++;
    list.bytes.str(`${nl}${ht}${ht}${list.changes > 1 ? "," : ""}{${nl}`);
    return list.bytes;
  }

  #message(list: ChangeList, prefix: string, content: Uint8Array, transactional: boolean): void {
    const { ht, nl, sp, ht3 } = this.#p;
    const doc = this.#next(list);
    doc.str(`${ht3}"kind":${sp}"message",${nl}${ht3}"transactional":${sp}${transactional},${nl}${ht3}"prefix":${sp}${JSON.stringify(prefix)},${nl}${ht3}"content":${sp}`);
    if (writeContent(doc, content)) doc.str(`,${nl}${ht3}"encoding":${sp}"base64"`);
    doc.str(`${nl}${ht}${ht}}`);
  }

  #change(msg: Row): void {
    const kind = msg.kind === "Insert" ? "insert" : msg.kind === "Update" ? "update" : "delete";
    this.#row(this.#txn, msg.relation, msg.relationId, kind, msg.kind === "Delete" ? undefined : msg.newTuple, msg.kind === "Insert" ? undefined : (msg.oldTuple ?? undefined));
  }

  /** One change: wal2json's pg_decode_change_v1. */
  #row(list: ChangeList, rel: Row["relation"], relationId: number, kind: "insert" | "update" | "delete", newTuple: Tuple | undefined, oldTuple: Tuple | undefined): void {
    const facts = this.#facts.of(rel, relationId, newTuple ?? oldTuple);
    if (!facts.wanted) return;
    const { ht, nl, sp, ht3 } = this.#p;
    const r = this.#relation(facts);
    // wal2json 2.5 prints pk in this version for REPLICA IDENTITY DEFAULT tables that have one (pgoutput flags its columns).
    const pk = this.#s.includePk && facts.pkKnown && facts.anyKey;
    const doc = this.#next(list);
    doc.str(kindLine(this.#p, kind));
    doc.bytes(r.table);
    if (kind === "insert") {
      this.#columns(doc, facts, newTuple!, pk);
      if (pk) {
        doc.bytes(r.pk);
        doc.str(nl);
      }
    } else {
      if (kind === "update") this.#columns(doc, facts, newTuple!, true);
      if (pk) {
        doc.bytes(r.pk);
        doc.str(`,${nl}`);
      }
      // An update's old row when sent (every non-null column of it), else the new row's identity; a delete's identity.
      if (kind === "update" && oldTuple !== undefined) this.#oldkeys(doc, facts, oldTuple, false);
      else this.#oldkeys(doc, facts, kind === "update" ? newTuple! : oldTuple!, true);
    }
    doc.str(`${ht}${ht}}`);
  }

  /** `columnnames`, `columntypes`, `columntypeoids`, `columnvalues` (and a comma after them when more follows). */
  #columns(doc: ByteSink, facts: RelationFacts, tuple: Tuple, comma: boolean): void {
    const { nl, sp, ht3 } = this.#p;
    const complete = this.#pick(facts, tuple, false, false);
    this.#arrays(doc, facts, complete, ht3, "columnnames", "columntypes", "columntypeoids");
    doc.str(`${ht3}"columnvalues":${sp}[`);
    this.#values(doc, facts, tuple);
    doc.str(`]${comma ? "," : ""}${nl}`);
  }

  /** `oldkeys`: the shown columns' names, types, OIDs and values (`keys`: the replica identity's only; NULLs left out). */
  #oldkeys(doc: ByteSink, facts: RelationFacts, tuple: Tuple, keys: boolean): void {
    const { nl, sp, ht3, ht4 } = this.#p;
    const complete = this.#pick(facts, tuple, true, keys);
    doc.str(`${ht3}"oldkeys":${sp}{${nl}`);
    this.#arrays(doc, facts, complete && keys, ht4, "keynames", "keytypes", "keytypeoids");
    doc.str(`${ht4}"keyvalues":${sp}[`);
    this.#values(doc, facts, tuple);
    doc.str(`]${nl}${ht3}}${nl}`);
  }

  /**
   * Marks the columns shown: not unchanged TOAST; for oldkeys not NULL
   * either, and (`keys`) replica identity ones only. True when every column
   * that could be shown is.
   */
  #pick(facts: RelationFacts, tuple: Tuple, identity: boolean, keys: boolean): boolean {
    const col = this.#col.of(tuple);
    const shown = this.#shown;
    shown.length = tuple.length;
    let complete = tuple.length === facts.names.length;
    for (let i = 0; i < tuple.length; i++) {
      const kind = col.read(i);
      const candidate = !(keys && facts.keys[i] !== true);
      shown[i] = candidate && kind !== KIND_UNCHANGED && !(identity && kind === KIND_NULL);
      if (candidate && !shown[i]) complete = false;
    }
    return complete;
  }

  /** The names, types and type OIDs arrays of the shown columns (made once per relation and block when `complete`). */
  #arrays(doc: ByteSink, facts: RelationFacts, complete: boolean, indent: string, names: string, types: string, oids: string): void {
    const cache = complete ? this.#relation(facts).complete : undefined;
    const cached = cache?.get(names);
    if (cached !== undefined) {
      doc.bytes(cached);
      return;
    }
    const s = this.#s;
    const { nl, sp } = this.#p;
    const shown = this.#shown;
    const sep = `,${sp}`;
    const list = (f: (i: number) => string): string => {
      let text = "";
      let first = true;
      for (let i = 0; i < shown.length; i++) {
        if (!shown[i]) continue;
        text += (first ? "" : sep) + f(i);
        first = false;
      }
      return text;
    };
    let text = `${indent}"${names}":${sp}[${list((i) => nameOf(facts, i))}],${nl}`;
    if (s.includeTypes) text += `${indent}"${types}":${sp}[${list((i) => facts.types[i] ?? '"unknown"')}],${nl}`;
    if (s.includeTypeOids) text += `${indent}"${oids}":${sp}[${list((i) => String(facts.oids[i] ?? 0))}],${nl}`;
    if (cache !== undefined) {
      const bytes = encoder.encode(text);
      cache.set(names, bytes);
      doc.bytes(bytes);
    } else doc.str(text);
  }

  #values(doc: ByteSink, facts: RelationFacts, tuple: Tuple): void {
    const col = this.#col.of(tuple);
    const shown = this.#shown;
    const asStrings = this.#s.numbersAsStrings;
    const sep = `,${this.#p.sp}`;
    let first = true;
    for (let i = 0; i < shown.length; i++) {
      if (!shown[i]) continue;
      if (!first) doc.str(sep);
      first = false;
      writeValue(doc, facts, i, col.read(i), col, asStrings);
    }
  }

  #relation(facts: RelationFacts): V1Arrays {
    if (facts.cache !== undefined) return facts.cache as V1Arrays;
    const s = this.#s;
    const { nl, sp, ht3, ht4 } = this.#p;
    let table = s.includeSchemas ? `${ht3}"schema":${sp}${facts.schema},${nl}` : "";
    table += `${ht3}"table":${sp}${facts.table},${nl}`;
    const pkNames: string[] = [];
    const pkTypes: string[] = [];
    facts.keys.forEach((key, i) => {
      if (!key) return;
      pkNames.push(facts.names[i]!);
      pkTypes.push(facts.pkTypes[i]!);
    });
    // pktypes is there even without include-types (empty then), as in wal2json.
    const pk = `${ht3}"pk":${sp}{${nl}${ht4}"pknames":${sp}[${pkNames.join(`,${sp}`)}],${nl}${ht4}"pktypes":${sp}[${s.includeTypes ? pkTypes.join(`,${sp}`) : ""}]${nl}${ht3}}`;
    const r: V1Arrays = { table: encoder.encode(table), pk: encoder.encode(pk), complete: new Map() };
    facts.cache = r;
    return r;
  }
}
