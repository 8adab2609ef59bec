/**
 * What each change line says (change-lines.ts writes them, in stream
 * order): the object of a row change, truncate, logical decoding message,
 * `A` (a table's shape changed) and snapshot row, and a row change's head
 * as JSON text for the writer's hot path. Field names after wal2json's
 * format-version 2 (docs/cli-output.md).
 */
import type { TypeInfo } from "../decoder.ts";
import type { Message, PgoutputMessage } from "../messages.ts";
import type { Relation } from "../relation.ts";
import { unchangedToast, type Tuple } from "../tuple.ts";
import { formatLsn } from "../lsn.ts";
import { toBase64 } from "../utf8.ts";
import { typeName } from "../values/type-names.ts";
import type { RelationChange, RelationChanged } from "../relation-changes.ts";
import { RawJson, jsonText } from "./json-text.ts";

/** The transaction the next message is in, as the lines need it (JsonLinesWriter hands it to its kernel and back). */
export interface OpenTxn {
  xid: number;
  /** JSON text of the time (commit, or prepare) */
  time: string;
  origin: string | undefined;
  /** The B line, printed before the first change line (a transaction without one prints neither B nor C). */
  begin: string | undefined;
  /** Whether a change line was printed. */
  printed: boolean;
  /** The transaction's commit (prepare) LSN, as the Begin (BeginPrepare) named it. */
  finalLsn: bigint;
}

/** Per relation: its filter verdict, column type names, and (rowHead) the head's schema/table text. */
export interface RelationInfo {
  wanted: boolean;
  types: string[];
  table?: string;
}

export type Row = PgoutputMessage & { kind: "Insert" | "Update" | "Delete" };

/** A line object: field name → value, written by lineText(). */
type LineObject = Record<string, unknown>;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The `timestamp` of a line in the open transaction: its time (null outside one). */
export function timeJson(open: OpenTxn | undefined): RawJson {
  return new RawJson(open?.time ?? "null", "json");
}

/** An `M` line: a transactional message's carries the transaction's xid, timestamp and origin. */
export function messageObject(msg: Message, open: OpenTxn | undefined): LineObject {
  const obj: LineObject = msg.transactional ? { action: "M", xid: open?.xid } : { action: "M" };
  obj.lsn = formatLsn(msg.lsn);
  if (msg.transactional) {
    obj.timestamp = timeJson(open);
    obj.origin = open?.origin;
  }
  obj.transactional = msg.transactional;
  obj.prefix = msg.prefix;
  let text: string | undefined;
  try {
    text = utf8.decode(msg.content);
  } catch {
    text = undefined;
  }
  if (text !== undefined) obj.content = text;
  else {
    obj.content = toBase64(msg.content);
    obj.encoding = "base64";
  }
  return obj;
}

/** An `A` line: the table's new shape, the old one, and what differs. `typesOf`: a relation's column type names. */
export function relationChangedObject(msg: RelationChanged, open: OpenTxn | undefined, typesOf: (rel: Relation) => string[], types: ReadonlyMap<number, TypeInfo> | undefined): LineObject {
  const now = msg.relation;
  const shape = (rel: Relation, names: string[]) => ({
    schema: rel.namespace, table: rel.name, replicaidentity: rel.replicaIdentity,
    columns: rel.columns.map((c, i) => ({ name: c.name, type: names[i], key: c.isKey })),
  });
  const { columns, replicaidentity } = shape(now, typesOf(now));
  return {
    action: "A", xid: open?.xid, lsn: lsnOf(msg), timestamp: timeJson(open), origin: open?.origin,
    schema: now.namespace, table: now.name, replicaidentity, columns,
    old: msg.previous === undefined ? null : shape(msg.previous, typesOf(msg.previous)),
    changes: msg.changes.map((c) => relationChangeObject(c, types)),
  };
}

/** One entry of an `A` line's `changes`: `change` (the RelationChange kind) and its fields, types by name. */
function relationChangeObject(c: RelationChange, types: ReadonlyMap<number, TypeInfo> | undefined): LineObject {
  switch (c.kind) {
    case "columnAdded":
      return { change: c.kind, column: c.column, type: typeName(c.typeId, c.typeModifier, types), key: c.isKey };
    case "columnDropped":
      return { change: c.kind, column: c.column };
    case "columnRenamed":
      return { change: c.kind, column: c.column, oldname: c.oldName };
    case "typeChanged":
      return { change: c.kind, column: c.column, oldtype: typeName(c.oldTypeId, c.oldTypeModifier, types), type: typeName(c.typeId, c.typeModifier, types) };
    case "keyChanged":
      return { change: c.kind, column: c.column, key: c.isKey };
    case "replicaIdentityChanged":
      return { change: c.kind, oldreplicaidentity: c.oldReplicaIdentity, replicaidentity: c.replicaIdentity };
    case "relationRenamed":
      return { change: c.kind, oldschema: c.oldNamespace, oldtable: c.oldName, schema: c.namespace, table: c.name };
  }
}

/** The `T` lines of a Truncate: one per table `wanted` keeps. */
export function truncateObjects(msg: PgoutputMessage & { kind: "Truncate" }, open: OpenTxn | undefined, wanted: (rel: Relation | undefined) => boolean): [Relation | undefined, LineObject][] {
  const lsn = lsnOf(msg);
  const out: [Relation | undefined, LineObject][] = [];
  msg.relations.forEach((rel, i) => {
    if (!wanted(rel)) return;
    const obj: LineObject = { action: "T", xid: open?.xid, lsn, timestamp: timeJson(open), origin: open?.origin };
    obj.schema = rel?.namespace;
    obj.table = rel?.name ?? String(msg.relationIds[i]);
    if (msg.cascade) obj.cascade = true;
    if (msg.restartIdentity) obj.restartidentity = true;
    out.push([rel, obj]);
  });
  return out;
}

/** A row change's line object. */
export function rowObject(msg: Row, open: OpenTxn | undefined, info: RelationInfo): LineObject {
  const rel = msg.relation;
  const obj: LineObject = {
    action: msg.kind === "Insert" ? "I" : msg.kind === "Update" ? "U" : "D", xid: open?.xid, lsn: lsnOf(msg),
    timestamp: timeJson(open), origin: open?.origin, schema: rel?.namespace, table: rel?.name ?? String(msg.relationId),
  };
  if (msg.kind === "Insert") {
    obj.columns = columnsOf(msg.newTuple, undefined, info.types, undefined).columns;
  } else if (msg.kind === "Update") {
    const { columns, unchanged } = columnsOf(msg.newTuple, msg.oldTuple ?? undefined, info.types, undefined);
    obj.columns = columns;
    obj.identity = msg.oldTuple !== null
      ? columnsOf(msg.oldTuple, undefined, info.types, msg.oldTupleType === "K" ? "key" : undefined).columns
      : columnsOf(msg.newTuple, undefined, info.types, "key").columns;
    if (unchanged.length > 0) obj.unchanged = unchanged;
  } else {
    obj.identity = columnsOf(msg.oldTuple, undefined, info.types, msg.oldTupleType === "K" ? "key" : undefined).columns;
  }
  return obj;
}

/** An `S` line: a row of the initial snapshot, without xid, lsn or timestamp (committed before the slot's consistent point). */
export function snapshotObject(relation: Relation, tuple: Tuple, info: RelationInfo): LineObject {
  return { action: "S", schema: relation.namespace, table: relation.name, columns: columnsOf(tuple, undefined, info.types, undefined).columns };
}

/**
 * The JSON text jsonText(rowObject(…)) makes, without its columns and
 * closing brace, by concatenation: no object per row (the writer's hot
 * path). Field order and omissions as there: undefined xid, lsn, origin,
 * schema left out.
 */
export function rowHeadText(msg: Row, open: OpenTxn | undefined, info: RelationInfo): string {
  const xid = open?.xid;
  const lsn = lsnOf(msg);
  const origin = open?.origin;
  let head = `{"action":"${msg.kind === "Insert" ? "I" : msg.kind === "Update" ? "U" : "D"}"`;
  if (xid !== undefined) head += `,"xid":${jsonText(xid)}`;
  if (lsn !== undefined) head += `,"lsn":${JSON.stringify(lsn)}`;
  head += `,"timestamp":${open?.time ?? "null"}`;
  if (origin !== undefined) head += `,"origin":${JSON.stringify(origin)}`;
  const rel = msg.relation;
  // Per relation: `,"schema":…,"table":…` once.
  info.table ??= tableText(rel, msg.relationId);
  return head + info.table;
}

/** `,"schema":…,"table":…` of a row change's line. */
export function tableText(rel: Relation | undefined, relationId: number): string {
  return `${rel?.namespace === undefined ? "" : `,"schema":${JSON.stringify(rel.namespace)}`},"table":${JSON.stringify(rel?.name ?? String(relationId))}`;
}

/**
 * `[{name, type, value}]` of a tuple; with `old`, unchanged TOAST is taken
 * from it where it carries the value, else left out and named in
 * `unchanged`. `only: "key"` keeps the replica identity columns.
 */
function columnsOf(tuple: Tuple, old: Tuple | undefined, types: string[], only: "key" | undefined): { columns: LineObject[]; unchanged: string[] } {
  const rel = tuple.relation;
  const values = readValues(tuple, old);
  const columns: LineObject[] = [];
  const unchanged: string[] = [];
  for (let i = 0; i < tuple.length; i++) {
    const col = rel?.columns[i];
    if (only === "key" && col !== undefined && !col.isKey) continue;
    const name = col?.name ?? String(i);
    const value = values[i];
    if (value === unchangedToast) {
      unchanged.push(name);
      continue;
    }
    columns.push({ name, type: types[i] ?? "unknown", value });
  }
  return { columns, unchanged };
}

/** A change's `lsn`: the WAL position of its XLogData (none in a capture without XLogData headers). */
function lsnOf(msg: { walStart?: bigint }): string | undefined {
  return msg.walStart !== undefined && msg.walStart > 0n ? formatLsn(msg.walStart) : undefined;
}

/** Every value of a tuple; a column whose value does not parse comes as its text (or bytes). */
function readValues(tuple: Tuple, old: Tuple | undefined): unknown[] {
  try {
    return tuple.values({ old });
  } catch {
    const out: unknown[] = [];
    for (let i = 0; i < tuple.length; i++) {
      const src = old !== undefined && tuple.kind(i) === "unchanged" && i < old.length && (old.kind(i) === "text" || old.kind(i) === "binary") ? old : tuple;
      try {
        out.push(src.value(i));
      } catch {
        out.push(src.kind(i) === "text" ? src.text(i) : src.bytes(i));
      }
    }
    return out;
  }
}
