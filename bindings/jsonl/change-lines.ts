/**
 * The JSON Lines of changes (documented in docs/cli-output.md), the JS path:
 * one object per change, field names after wal2json's format-version 2 —
 * `action` (I U D T M, and B C P K R for transaction boundaries), `schema`,
 * `table`, `columns` and `identity` as `[{name, type, value}]` — plus `xid`,
 * `lsn` and `timestamp` on every line; `A` for a table whose shape changed
 * (a RelationChanged) and `Q` for a captured DDL command (a Ddl). `JsonLinesWriter` (writer.ts) writes
 * the same bytes with the kernel writing the columns; this is the reference
 * it is tested against, and what it falls back on.
 *
 * Fed the messages of plain transactions in stream order (the pipeline
 * replays a streamed transaction as a plain one, resequence.ts: its B, C
 * and P lines say `"streamed":true`), it writes each line into the records
 * with its kind. A transaction's B line is written before its first change
 * line, and its C line only if it had one: a transaction whose changes the
 * table filter leaves out prints nothing.
 *
 * Values are typed (`tuple.values()` of a decoder made with
 * `changeValueOptions()`), and exact in the JSON text: int8 and numeric are
 * written as JSON numbers with every digit (or as strings with
 * `numbersAsStrings`), json/jsonb embedded as JSON.
 */
import type { TypeInfo } from "../decoder.ts";
import type { PgoutputMessage, Replayed } from "../messages.ts";
import type { Relation } from "../relation.ts";
import { formatLsn } from "../lsn.ts";
import { timestampToISO } from "../time.ts";
import { typeName } from "../values/type-names.ts";
import type { SnapshotRow } from "../snapshot-items.ts";
import type { RecordKind, Records } from "../pipeline/records.ts";
import type { RelationChanged } from "../relation-changes.ts";
import type { Ddl } from "../pg/ddl.ts";
import { lineText } from "./json-text.ts";
import { tableFilter } from "../formats/tables.ts";
import {
  messageObject, relationChangedObject, rowHeadText, rowObject, snapshotObject, tableText, timeJson, truncateObjects,
  type OpenTxn, type RelationInfo, type Row,
} from "./change-objects.ts";

export type { OpenTxn, RelationInfo } from "./change-objects.ts";

export interface ChangeLineOptions {
  /** Also print B and C lines for transaction boundaries. */
  transactions?: boolean;
  /** Only changes of these tables: `schema.table` or `table` (any schema). */
  tables?: readonly string[];
  /** Indented output (one field per line) instead of JSON Lines. */
  pretty?: boolean;
  /** int8 and numeric as JSON strings instead of exact JSON numbers. */
  numbersAsStrings?: boolean;
  /** Types named by Type messages (the decoder's `types`), for the `type` field. */
  types?: ReadonlyMap<number, TypeInfo>;
}

const NEWLINE = 0x0a;

/** `"streamed":true` on the boundary lines of a transaction the pipeline replayed from its blocks. */
const streamedMark = (msg: Replayed): true | undefined => msg.streamed;

export class ChangeLines {
  readonly #transactions: boolean;
  readonly #pretty: boolean;
  readonly #strings: boolean;
  readonly #types: ReadonlyMap<number, TypeInfo> | undefined;
  readonly #wanted: ((rel: Relation | undefined) => boolean) | undefined;
  readonly #relationInfo = new WeakMap<Relation, RelationInfo>();
  #open: OpenTxn | undefined;
  /** The last head rowHead() made, and what it was made of. */
  #lastHead: {
    kind: string; relation: Relation | undefined; relationId: number; walStart: bigint | undefined;
    open: OpenTxn | undefined; time: string | undefined; origin: string | undefined; head: string;
  } | undefined;

  constructor(options: ChangeLineOptions = {}) {
    this.#transactions = options.transactions === true;
    this.#pretty = options.pretty === true;
    this.#strings = options.numbersAsStrings === true;
    this.#types = options.types;
    this.#wanted = tableFilter(options.tables);
  }

  /** Writes the lines one message (in stream order) completes. */
  push(msg: PgoutputMessage | RelationChanged | Ddl, out: Records): void {
    switch (msg.kind) {
      case "RelationChanged":
        if (this.#info(msg.relation).wanted) this.#changeLines(out, "relationChanged", [[msg.relation, relationChangedObject(msg, this.#open, (rel) => this.#info(rel).types, this.#types)]]);
        return;
      case "Ddl":
        this.#changeLines(out, "ddl", [[undefined, {
          action: "Q", xid: this.#open?.xid, lsn: formatLsn(msg.lsn), timestamp: timeJson(this.#open), origin: this.#open?.origin,
          tag: msg.tag, command: msg.command, objects: msg.objects, user: msg.user,
        }]]);
        return;
      case "Begin":
        this.#open = {
          xid: msg.xid, time: this.#time(msg.commitTime), origin: undefined, printed: false, finalLsn: msg.finalLsn,
          begin: this.#transactions
            ? this.#text({ action: "B", xid: msg.xid, lsn: formatLsn(msg.finalLsn), timestamp: timestampToISO(msg.commitTime), streamed: streamedMark(msg) })
            : undefined,
        };
        return;
      case "BeginPrepare":
        this.#open = {
          xid: msg.xid, time: this.#time(msg.prepareTime), origin: undefined, printed: false, finalLsn: msg.prepareLsn,
          begin: this.#transactions
            ? this.#text({ action: "B", xid: msg.xid, lsn: formatLsn(msg.prepareLsn), timestamp: timestampToISO(msg.prepareTime), gid: msg.gid, streamed: streamedMark(msg) })
            : undefined,
        };
        return;
      case "Origin":
        if (this.#open) this.#open.origin = msg.name;
        return;
      case "Commit": {
        const xid = this.#open?.xid ?? 0;
        const printed = this.#open?.printed === true;
        this.#open = undefined;
        if (this.#transactions && printed) {
          this.#line(out, "commit", undefined, this.#text({
            action: "C", xid, lsn: formatLsn(msg.commitLsn), nextlsn: formatLsn(msg.endLsn), timestamp: timestampToISO(msg.commitTime), streamed: streamedMark(msg),
          }));
        }
        return;
      }
      case "Prepare":
        this.#open = undefined;
        this.#line(out, "prepare", undefined, this.#text({
          action: "P", xid: msg.xid, gid: msg.gid, lsn: formatLsn(msg.prepareLsn), nextlsn: formatLsn(msg.endLsn), timestamp: timestampToISO(msg.prepareTime), streamed: streamedMark(msg),
        }));
        return;
      case "CommitPrepared":
        this.#line(out, "commitPrepared", undefined, this.#text({
          action: "K", xid: msg.xid, gid: msg.gid, lsn: formatLsn(msg.commitLsn), nextlsn: formatLsn(msg.endLsn), timestamp: timestampToISO(msg.commitTime),
        }));
        return;
      case "RollbackPrepared":
        this.#line(out, "rollbackPrepared", undefined, this.#text({
          action: "R", xid: msg.xid, gid: msg.gid, lsn: formatLsn(msg.prepareEndLsn), nextlsn: formatLsn(msg.rollbackEndLsn), timestamp: timestampToISO(msg.rollbackTime),
        }));
        return;
      case "StreamStart":
      case "StreamStop":
      case "StreamCommit":
      case "StreamAbort":
      case "StreamPrepare":
        throw new TypeError(`${msg.kind}: replay streamed transactions first (StreamResequencer, or a Pipeline with a replayDecoder)`);
      case "Message":
        if (!msg.transactional) this.#line(out, "message", undefined, this.#text(messageObject(msg, undefined)));
        else this.#changeLines(out, "message", [[undefined, messageObject(msg, this.#open)]]);
        return;
      case "Truncate":
        this.#changeLines(out, "truncate", truncateObjects(msg, this.#open, (rel) => this.#info(rel).wanted));
        return;
      case "Insert":
      case "Update":
      case "Delete": {
        const info = this.#info(msg.relation);
        if (info.wanted) this.#changeLines(out, msg.kind === "Insert" ? "insert" : msg.kind === "Update" ? "update" : "delete", [[msg.relation, rowObject(msg, this.#open, info)]]);
        return;
      }
      default:
        // Relation and Type: the decoder's caches have them.
        return;
    }
  }

  /**
   * A row of the initial snapshot (`tail --snapshot`): action `S`, schema,
   * table and columns, no xid, lsn or timestamp (it was committed before the
   * slot's consistent point). Nothing for a table the filter leaves out.
   */
  snapshotRow(row: SnapshotRow, out: Records): void {
    const { relation, tuple } = row;
    const info = this.#info(relation);
    if (!info.wanted) return;
    this.#line(out, "snapshot", relation, this.#text(snapshotObject(relation, tuple, info)));
  }

  /** Forgets the transaction in progress (the stream starts over). */
  reset(): void {
    this.#open = undefined;
  }

  /** The transaction in progress (for a writer whose kernel wrote lines meanwhile: `transaction = …`). */
  get transaction(): OpenTxn | undefined {
    return this.#open;
  }

  set transaction(t: OpenTxn | undefined) {
    this.#open = t;
  }

  get pretty(): boolean {
    return this.#pretty;
  }

  /** A relation's filter verdict, column type names and the `,"schema":…,"table":…` text of its rows' lines. */
  rowInfo(rel: Relation): RelationInfo & { table: string } {
    const info = this.#info(rel);
    info.table ??= tableText(rel, rel.relationId);
    return info as RelationInfo & { table: string };
  }

  /**
   * For `JsonLinesWriter`, which writes a row change's columns itself: does
   * what push() does for it but print — writes the B line due before it —
   * and returns the line's JSON text up to its columns (without the closing
   * brace) and the column type names. `null`: its table is filtered out.
   * `undefined`: push() must do this one (pretty output).
   */
  rowHead(msg: Row, out: Records): { head: string; types: string[] } | null | undefined {
    if (this.#pretty) return undefined;
    const info = this.#info(msg.relation);
    if (!info.wanted) return null;
    // Rows of one table in one transaction share their head: made once (the same string, so the writer can tell).
    const last = this.#lastHead;
    const open = this.#open;
    const time = open?.time;
    const origin = open?.origin;
    let head: string;
    if (last !== undefined && last.kind === msg.kind && last.relation === msg.relation && last.relationId === msg.relationId
      && last.walStart === msg.walStart && last.open === open && last.time === time && last.origin === origin) {
      head = last.head;
    } else {
      head = rowHeadText(msg, open, info);
      this.#lastHead = { kind: msg.kind, relation: msg.relation, relationId: msg.relationId, walStart: msg.walStart, open, time, origin, head };
    }
    this.#beginLine(out);
    return { head, types: info.types };
  }

  #line(out: Records, kind: RecordKind, relation: Relation | undefined, text: string): void {
    out.bytes.str(text);
    out.bytes.byte(NEWLINE);
    out.end(kind, relation);
  }

  /** The open transaction's B line, before its first change line. */
  #beginLine(out: Records): void {
    const open = this.#open;
    if (open === undefined) return;
    open.printed = true;
    if (open.begin !== undefined) {
      this.#line(out, "begin", undefined, open.begin);
      open.begin = undefined;
    }
  }

  #changeLines(out: Records, kind: RecordKind, objs: [Relation | undefined, Record<string, unknown>][]): void {
    if (objs.length === 0) return;
    this.#beginLine(out);
    for (const [rel, obj] of objs) this.#line(out, kind, rel, this.#text(obj));
  }

  #text(obj: Record<string, unknown>): string {
    return lineText(obj, this.#pretty, this.#strings);
  }

  #time(t: bigint): string {
    return JSON.stringify(timestampToISO(t));
  }

  #info(rel: Relation | undefined): RelationInfo {
    if (rel === undefined) return { wanted: this.#wanted === undefined, types: [] };
    let info = this.#relationInfo.get(rel);
    if (info === undefined) {
      info = { wanted: this.#wanted?.(rel) ?? true, types: rel.columns.map((c) => typeName(c.typeId, c.typeModifier, this.#types)) };
      this.#relationInfo.set(rel, info);
    }
    return info;
  }
}
