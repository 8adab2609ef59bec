/**
 * The benchmark cases: what is done with each message, per competitor. One
 * benchmark op is one pass over the whole corpus.
 *
 * - `kernel`: decode only. Ours: `push()` each 64 KB chunk, count messages
 *   (the kernel call and its tape walk: the wasm kernel, or for the
 *   baseline the same kernel source built by tsc, writing the same tape,
 *   so the two differ only in the target of the same code). pg-logical-replication has no lazy form: its `parse()` is all
 *   of its work, so its figure is the same work in every case. `js-walk`:
 *   the floor (walk.ts).
 * - `lazy`: per message its kind; per change also its relation's name and
 *   one column's typed value (column 0 of the new row, of the old row for a
 *   Delete).
 * - `full`: every field of every message, and every column's typed value of
 *   the new and the old row of every change (`tuple.values()`, through the
 *   relation's row reader, values/row-reader.ts; for
 *   pg-logical-replication every property of its row objects, which its
 *   parse already filled by `pg`'s default type parsers).
 * - `compat`: pg-logical-replication's message objects (tag, relation
 *   objects, rows parsed by `pg.types`): its own `PgoutputPlugin` against
 *   this package's drop-in plugin (bindings/compat) over each backend, all
 *   fed `parse(buffer)` per message.
 * - `jsonl`: `decode --changes`' JSON Lines bytes (JsonLinesWriter's
 *   pushBatch: whole lines from each backend's kernel, `jsonLines`, a
 *   message it stops at through push()) over decoders with
 *   `changeValueOptions()`; `js-formatter` is the JS path alone
 *   (`kernel: false`); pg-logical-replication its parse() of each message,
 *   before any JSON. Output MB/s (bytes of
 *   JSON Lines per second) is reported next to the input MB/s.
 */
import type { PgoutputMessage, Tuple } from "../bindings/index.ts";
import type { AnyMessage } from "../bindings/compat/types.ts";
import {
  compatPass, decoderPass, formatterPass, jsonlPass, plrPass, walkPass, type OutputCount, type Competitors, type CompetitorId, type InputForm, type PlrMessage,
} from "./competitors.ts";
import type { BenchInput } from "./input.ts";

export type CaseName = "kernel" | "lazy" | "full" | "compat" | "jsonl";
export const CASES: readonly CaseName[] = ["kernel", "lazy", "full", "compat", "jsonl"];

export interface Entry {
  case: CaseName;
  competitor: CompetitorId;
  form: InputForm;
  /** One pass over the corpus; returns the number of messages. */
  run: () => number;
  /** Bytes the last run wrote, for cases that produce output. */
  output?: OutputCount;
}

/** Every case × competitor that applies (js-walk only to `kernel`). */
export function entries(input: BenchInput, c: Competitors): Entry[] {
  const chunks = input.chunks;
  const split = () => input.split;
  return [
    { case: "kernel", competitor: "wasm", form: "64 KB chunks", run: () => decoderPass(c.wasm, chunks) },
    { case: "kernel", competitor: "baseline", form: "64 KB chunks", run: () => decoderPass(c.baseline, chunks) },
    { case: "kernel", competitor: "pg-logical-replication", form: "pre-split messages", run: () => plrPass(c.plr, split(), plrCount) },
    { case: "kernel", competitor: "js-walk", form: "64 KB chunks", run: () => walkPass(c.walk, chunks) },
    { case: "lazy", competitor: "wasm", form: "64 KB chunks", run: () => decoderPass(c.wasm, chunks, lazyTouch) },
    { case: "lazy", competitor: "baseline", form: "64 KB chunks", run: () => decoderPass(c.baseline, chunks, lazyTouch) },
    { case: "lazy", competitor: "pg-logical-replication", form: "pre-split messages", run: () => plrPass(c.plr, split(), plrLazy) },
    { case: "full", competitor: "wasm", form: "64 KB chunks", run: () => decoderPass(c.wasm, chunks, fullTouch) },
    { case: "full", competitor: "baseline", form: "64 KB chunks", run: () => decoderPass(c.baseline, chunks, fullTouch) },
    { case: "full", competitor: "pg-logical-replication", form: "pre-split messages", run: () => plrPass(c.plr, split(), plrFull) },
    { case: "compat", competitor: "wasm", form: "pre-split messages", run: () => compatPass(c.compatWasm, split(), compatTouch) },
    { case: "compat", competitor: "baseline", form: "pre-split messages", run: () => compatPass(c.compatBaseline, split(), compatTouch) },
    { case: "compat", competitor: "pg-logical-replication", form: "pre-split messages", run: () => plrPass(c.plr, split(), compatTouch) },
    withOutput((o) => ({ case: "jsonl", competitor: "wasm", form: "64 KB chunks", run: () => jsonlPass(c.jsonlWasm, chunks, o) })),
    withOutput((o) => ({ case: "jsonl", competitor: "baseline", form: "64 KB chunks", run: () => jsonlPass(c.jsonlBaseline, chunks, o) })),
    withOutput((o) => ({ case: "jsonl", competitor: "js-formatter", form: "64 KB chunks", run: () => formatterPass(c.jsonlWasm, chunks, o) })),
    // What a consumer of pg-logical-replication pays before it writes any JSON: its parse() of every message.
    { case: "jsonl", competitor: "pg-logical-replication", form: "pre-split messages", run: () => plrPass(c.plr, split(), plrCount) },
  ];
}

function withOutput(make: (o: OutputCount) => Entry): Entry {
  const output: OutputCount = { bytes: 0 };
  return { ...make(output), output };
}

// ------------------------------------------------------------ our messages

/** A typed value's contribution to the checksum (cheap; the value itself was computed). */
function cell(v: unknown): number {
  return v === null || v === undefined ? 0 : 1;
}

function big(v: bigint | null | undefined): number {
  return v === null || v === undefined ? 0 : 1;
}

export function lazyTouch(msg: PgoutputMessage): number {
  switch (msg.kind) {
    case "Insert":
    case "Update":
      return msg.relation!.name.length + cell(msg.newTuple.value(0));
    case "Delete":
      return msg.relation!.name.length + cell(msg.oldTuple.value(0));
    default:
      return msg.kind.length;
  }
}

function tupleValues(t: Tuple | null): number {
  if (t === null) return 0;
  let n = 0;
  const vals = t.values();
  for (let i = 0; i < vals.length; i++) n += cell(vals[i]);
  return n;
}

/** Every field of the message; every column's value of both rows of a change. */
export function fullTouch(m: PgoutputMessage): number {
  switch (m.kind) {
    case "Begin":
      return big(m.finalLsn) + big(m.commitTime) + m.xid;
    case "Commit":
      return m.flags + big(m.commitLsn) + big(m.endLsn) + big(m.commitTime);
    case "Origin":
      return big(m.originLsn) + m.name.length;
    case "Message":
      return m.flags + (m.transactional ? 1 : 0) + big(m.lsn) + m.prefix.length + m.content.length + (m.xid ?? 0);
    case "Relation": {
      let n = m.relationId + m.namespace.length + m.relationName.length + m.replicaIdentity.length + (m.xid ?? 0);
      for (const col of m.columns) n += col.flags + (col.isKey ? 1 : 0) + col.name.length + col.typeId + col.typeModifier;
      return n + m.relation.columnCount;
    }
    case "Type":
      return m.typeId + m.namespace.length + m.typeName.length + (m.xid ?? 0);
    case "Insert":
      return m.relationId + m.relation!.name.length + (m.xid ?? 0) + tupleValues(m.newTuple);
    case "Update":
      return m.relationId + m.relation!.name.length + (m.xid ?? 0) + (m.oldTupleType?.length ?? 0) + tupleValues(m.oldTuple) + tupleValues(m.newTuple);
    case "Delete":
      return m.relationId + m.relation!.name.length + (m.xid ?? 0) + m.oldTupleType.length + tupleValues(m.oldTuple);
    case "Truncate": {
      let n = m.options + (m.cascade ? 1 : 0) + (m.restartIdentity ? 1 : 0) + (m.xid ?? 0);
      for (const id of m.relationIds) n += id;
      for (const r of m.relations) n += r === undefined ? 0 : r.name.length;
      return n;
    }
    case "StreamStart":
      return m.xid + (m.firstSegment ? 1 : 0);
    case "StreamStop":
      return 1;
    case "StreamCommit":
      return m.xid + m.flags + big(m.commitLsn) + big(m.endLsn) + big(m.commitTime);
    case "StreamAbort":
      return m.xid + m.subXid + big(m.abortLsn) + big(m.abortTime);
    case "BeginPrepare":
      return m.xid + m.gid.length + big(m.prepareLsn) + big(m.endLsn) + big(m.prepareTime);
    case "Prepare":
    case "StreamPrepare":
      return m.xid + m.gid.length + m.flags + big(m.prepareLsn) + big(m.endLsn) + big(m.prepareTime);
    case "CommitPrepared":
      return m.xid + m.gid.length + m.flags + big(m.commitLsn) + big(m.endLsn) + big(m.commitTime);
    case "RollbackPrepared":
      return m.xid + m.gid.length + m.flags + big(m.prepareEndLsn) + big(m.rollbackEndLsn) + big(m.prepareTime) + big(m.rollbackTime);
  }
}

// ------------------------------------------- pg-logical-replication's shapes

function plrCount(_m: PlrMessage): number {
  return 1;
}

function lsn(s: string | null): number {
  return s === null ? 0 : s.length;
}

function rowFirst(row: Record<string, unknown> | null, m: { relation: { columns: { name: string }[] } }): number {
  return row === null ? 0 : cell(row[m.relation.columns[0]!.name]);
}

function plrLazy(m: PlrMessage): number {
  switch (m.tag) {
    case "insert":
    case "update":
      return m.relation.name.length + rowFirst(m.new, m);
    case "delete":
      return m.relation.name.length + rowFirst(m.key ?? m.old, m);
    default:
      return m.tag.length;
  }
}

function rowValues(row: Record<string, unknown> | null): number {
  if (row === null) return 0;
  let n = 0;
  for (const k in row) n += cell(row[k]);
  return n;
}

function plrFull(m: PlrMessage): number {
  switch (m.tag) {
    case "begin":
      return lsn(m.commitLsn) + cell(m.commitTime) + m.xid;
    case "commit":
      return m.flags + lsn(m.commitLsn) + lsn(m.commitEndLsn) + cell(m.commitTime);
    case "origin":
      return lsn(m.originLsn) + m.originName.length;
    case "message":
      return m.flags + (m.transactional ? 1 : 0) + lsn(m.messageLsn) + m.prefix.length + m.content.length;
    case "relation": {
      let n = m.relationOid + m.schema.length + m.name.length + m.replicaIdentity.length + m.keyColumns.length;
      for (const col of m.columns) n += col.flags + col.name.length + col.typeOid + col.typeMod + cell(col.typeName);
      return n;
    }
    case "type":
      return m.typeOid + m.typeSchema.length + m.typeName.length;
    case "insert":
      return m.relation.relationOid + m.relation.name.length + rowValues(m.new);
    case "update":
      return m.relation.relationOid + m.relation.name.length + rowValues(m.key) + rowValues(m.old) + rowValues(m.new);
    case "delete":
      return m.relation.relationOid + m.relation.name.length + rowValues(m.key) + rowValues(m.old);
    case "truncate": {
      let n = (m.cascade ? 1 : 0) + (m.restartIdentity ? 1 : 0);
      for (const r of m.relations) n += r === undefined ? 0 : r.name.length;
      return n;
    }
  }
}

/** The compat case: the objects are complete once parsed (plain objects, rows parsed). */
function compatTouch(m: AnyMessage | PlrMessage): number {
  return m.tag.length;
}
