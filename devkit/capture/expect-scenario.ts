// Checks decoded pgoutput messages against what a capture scenario
// (devkit/capture/scenarios.ts) recorded in its `expected` — the same object the
// live tests get from a scenario run and test/fixtures/index.json stores for
// each golden capture.
//
// A ScenarioChecker is fed the messages one at a time, in stream order, while
// each view is still valid (so it works for views from decode() one message
// at a time as well as for the views of one batch), and keeps only plain data
// between messages. It uses soft assertions: a run reports every discrepancy
// it finds (up to a cap), each labelled with the message index and kind.
//
// What it verifies, per message kind:
//   Relation  OID, namespace, name, replica identity, columns (name, type OID,
//             typmod, key flag) against pg_class/pg_attribute; the cached
//             Relation object agrees with the message.
//   Type      OID, namespace, name (enum-domain), in column order.
//   Begin/Commit  xid, final LSN = commit LSN within the recorded range, end
//             LSN, commit time (as the ISO string recorded), change count.
//   Origin    name and origin LSN (above 2^63).
//   I/U/D     relation, every column (text = the SELECT ...::text value, NULL
//             vs unchanged TOAST, md5 of large values), K vs O old tuples;
//             binary mode: bytes = the send-format hex, decoded back to text.
//   Truncate  relation list, options, cascade/restartIdentity.
//   Message   prefix, content bytes, flags/transactional, LSN.
//   Streams   xids (changes carry the (sub)transaction's xid inside S/E and
//             none outside), first-segment flags, rows kept after applying
//             Stream Abort of subtransactions = the committed rows, aborted
//             transactions, Stream Commit LSNs/time, protocol 4 abort fields.
//   Two-phase gids, xids, LSNs, prepare/commit/rollback times.
// With slot rows (live captures) it also compares the LSN and xid columns
// PostgreSQL printed for a row with the message's fields where they are the
// same value (e.g. a Commit row's lsn is the Commit's end LSN).

import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { expect } from "vitest";
import type { PgoutputDecoder } from "../../bindings/decoder.ts";
import { isPgoutputError } from "../../bindings/errors.ts";
import { formatLsn, parseLsn } from "../../bindings/lsn.ts";
import type { Delete, Insert, Message, PgoutputMessage, RelationMessage, Truncate, TypeMessage, Update } from "../../bindings/messages.ts";
import { fromPostgresTimestamp, timestampToISO } from "../../bindings/time.ts";
import { unchangedToast, type Tuple } from "../../bindings/tuple.ts";
import type { Cell, ExpectedChange, ExpectedRelation, ExpectedTxn, IdRange, PreparedTxn } from "./scenarios.ts";

// ------------------------------------------------------------------ helpers

export const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
export const md5Hex = (b: Uint8Array | string): string => createHash("md5").update(b).digest("hex");

/** µs since the Unix epoch for an ISO string as the scenarios record them ("...T...123456Z"). */
export function isoToMicros(iso: string): bigint {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?Z$/.exec(iso);
  if (m === null) throw new Error(`not an ISO timestamp: ${iso}`);
  return BigInt(Date.parse(`${m[1]}Z`)) * 1000n + BigInt((m[2] ?? "").padEnd(6, "0"));
}

/** Run-length form of streamed rows: consecutive ids of one xid become one IdRange. */
export function runsOf(rows: readonly { id: number; xid: number }[]): IdRange[] {
  const out: IdRange[] = [];
  for (const r of rows) {
    const last = out[out.length - 1];
    if (last !== undefined && last.xid === r.xid && last.to + 1 === r.id) last.to = r.id;
    else out.push({ from: r.id, to: r.id, xid: r.xid });
  }
  return out;
}

/** The pad column of the streaming scenarios: repeat('x', 100) || id. */
const pad = (id: number | string): string => `${"x".repeat(100)}${id}`;

/** PostgreSQL's text output of a timestamptz in UTC with DateStyle ISO: trailing fraction zeros dropped. */
function pgTimestamptzText(unixMicros: bigint): string {
  const iso = timestampToISO(unixMicros); // 2024-02-29T12:34:56.789012Z
  let s = `${iso.slice(0, 10)} ${iso.slice(11, -1)}`;
  s = s.replace(/0+$/, "").replace(/\.$/, "");
  return `${s}+00`;
}

/** The text form (what ::text gives) of a binary (send format) value, for the types of the binary scenario. */
function binaryAsText(typeOid: number, b: Uint8Array): string {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  switch (typeOid) {
    case 16: return b.length === 1 ? (b[0] !== 0 ? "true" : "false") : `<bool of ${b.length} bytes>`;
    case 20: return b.length === 8 ? v.getBigInt64(0).toString() : `<int8 of ${b.length} bytes>`;
    case 23: return b.length === 4 ? String(v.getInt32(0)) : `<int4 of ${b.length} bytes>`;
    case 25: return new TextDecoder("utf-8", { fatal: true }).decode(b);
    case 1184: return b.length === 8 ? pgTimestamptzText(fromPostgresTimestamp(v.getBigInt64(0))) : `<timestamptz of ${b.length} bytes>`;
    default: return `<type ${typeOid}: ${hex(b)}>`;
  }
}

function utf8OrReplacement(b: Uint8Array): string {
  return new TextDecoder("utf-8").decode(b);
}

const CHANGE_OP = { Insert: "I", Update: "U", Delete: "D", Truncate: "T" } as const;

const TXN_SCENARIOS = new Set(["replica-identity", "toast-unchanged", "truncate", "messages", "origin", "enum-domain", "binary", "unicode", "wide"]);
const STREAM_SCENARIOS = new Set(["streaming", "parallel-abort", "two-phase"]);

/** The committed streamed transaction of `streaming` (expected.committed) and `parallel-abort` (expected itself). */
interface CommittedSpec {
  xid: number;
  subxid: number;
  rows: IdRange[];
  rolledBack: IdRange;
  commitTime: string | null;
  lsnRange: [string, string];
}

interface Row {
  id: number;
  xid: number;
}

/** A plain transaction between its Begin and its Commit, as the checker follows it. */
interface OpenTxn {
  exp: ExpectedTxn & { origin?: { name: string; lsn: string } | null };
  xid: number;
  finalLsn: bigint;
  commitTime: bigint;
  changeIdx: number;
  origin: boolean;
}

export interface CheckOptions {
  /** Scenario name (devkit/capture/scenarios.ts). */
  scenario: string;
  major: number;
  /** The scenario's `expected`. */
  expected: any;
  /** Prefix of every failure message, e.g. "pg15 streaming wasm decode()". */
  label: string;
  /** The slot rows the messages came from (live captures), for their lsn/xid columns. */
  rows?: readonly { lsn: string; xid: string }[];
  /** Failures reported in full; later ones are only counted. */
  maxReported?: number;
}

// ------------------------------------------------------------------ checker

export class ScenarioChecker {
  readonly #o: CheckOptions;
  readonly #e: any;
  readonly #relByOid = new Map<number, { key: string; rel: ExpectedRelation }>();
  readonly #relSeen = new Set<number>();
  #ctx = "";
  #failures = 0;
  #suppressed = 0;
  #count = 0;

  // Begin ... Commit (and Begin Prepare ... Prepare)
  #txnIdx = 0;
  #txn: OpenTxn | undefined;
  #msgIdx = 0;
  #typeIdx = 0;
  #binIdx = 0;

  // Streams
  #inStream = false;
  #streamXid = -1;
  readonly #started = new Set<number>();
  readonly #streamRows = new Map<number, Row[]>();
  /** Rows dropped by a Stream Abort, by the aborted (sub)xid. */
  readonly #discarded = new Map<number, Row[]>();
  readonly #abortedSubxids = new Set<number>();
  readonly #abortedTop = new Set<number>();
  readonly #committedTop = new Set<number>();
  readonly #knownXids = new Map<number, Set<number>>();
  #committedSpec: CommittedSpec | undefined;

  // Two-phase
  #tp: { p: PreparedTxn; prepareLsn: bigint; endLsn: bigint; prepareTime: bigint; rows: Row[] } | undefined;
  readonly #prepared = new Map<string, { endLsn: bigint; prepareTime: bigint }>();
  readonly #resolved: string[] = [];

  constructor(options: CheckOptions) {
    this.#o = options;
    this.#e = options.expected;
    const rels = (this.#e.relations ?? {}) as Record<string, ExpectedRelation>;
    for (const [key, rel] of Object.entries(rels)) this.#relByOid.set(rel.oid, { key, rel });
    const s = options.scenario;
    if (!TXN_SCENARIOS.has(s) && !STREAM_SCENARIOS.has(s)) this.#fail(`unknown scenario ${s}`);
    if (s === "streaming" || s === "parallel-abort") {
      const c: CommittedSpec = s === "streaming" ? this.#e.committed : this.#e;
      this.#committedSpec = c;
      this.#knownXids.set(c.xid, new Set([c.xid, c.subxid, c.rolledBack.xid, ...c.rows.map((r) => r.xid)]));
      if (s === "streaming" && this.#e.abortedIsStreamed) this.#knownXids.set(this.#e.aborted.xid, new Set([this.#e.aborted.xid]));
    }
    if (s === "two-phase") {
      for (const p of this.#e.prepared as PreparedTxn[]) if (p.streamed) this.#knownXids.set(p.xid, new Set([p.xid]));
    }
  }

  // -------------------------------------------------------------- reporting

  #report(ok: boolean, send: () => void): void {
    if (ok) return;
    this.#failures++;
    if (this.#failures > (this.#o.maxReported ?? 30)) this.#suppressed++;
    else send();
  }

  /** Deep equality (plain data). */
  #eq(actual: unknown, expected: unknown, what: string): void {
    this.#report(isDeepStrictEqual(actual, expected), () => expect.soft(actual, `${this.#ctx}: ${what}`).toStrictEqual(expected));
  }

  #ok(cond: boolean, what: string): void {
    this.#report(cond, () => expect.soft(cond, `${this.#ctx}: ${what}`).toBe(true));
  }

  #fail(what: string): void {
    this.#ok(false, what);
  }

  /** The open transaction; none is a failure, `missing` saying what came without one. */
  #openTxn(missing: string): OpenTxn | undefined {
    if (this.#txn === undefined) this.#fail(missing);
    return this.#txn;
  }

  #lsnWithin(what: string, lsn: bigint, range: readonly [string, string]): void {
    this.#eq(typeof lsn, "bigint", `${what} is a bigint`);
    if (typeof lsn !== "bigint") return;
    const [lo, hi] = [parseLsn(range[0]), parseLsn(range[1])];
    this.#ok(lo <= lsn && lsn <= hi, `${what} ${formatLsn(lsn)} within the recorded [${range[0]}, ${range[1]}]`);
  }

  #timeWithin(what: string, t: bigint | null, range: readonly [string, string]): void {
    this.#eq(typeof t, "bigint", `${what} is a bigint`);
    if (typeof t !== "bigint") return;
    const [lo, hi] = [isoToMicros(range[0]), isoToMicros(range[1])];
    this.#ok(lo <= t && t <= hi, `${what} ${timestampToISO(t)} within the recorded [${range[0]}, ${range[1]}]`);
  }

  /**
   * The two LSNs of a message that ends a transaction or a prepare (Commit,
   * StreamCommit, the two-phase messages), `start` and `end` naming its
   * fields: both within the range the workload recorded around it, the end
   * after the start and, with `index`, the end equal to the slot row's lsn
   * (not given for BeginPrepare, whose fields are the prepare's, not its own).
   */
  #lsnSpan<K extends string>(msg: { kind: string } & Record<K, bigint>, start: K, end: K, range: readonly [string, string], index?: number): void {
    this.#lsnWithin(`${msg.kind}.${start}`, msg[start], range);
    this.#lsnWithin(`${msg.kind}.${end}`, msg[end], range);
    this.#ok(msg[end] > msg[start], `${msg.kind}.${end} after ${start}`);
    if (index !== undefined) this.#rowLsn(index, msg[end], `${msg.kind}.${end}`);
  }

  /** Stream framing, Begin and the two-phase messages come between streamed blocks, never inside one. */
  #outsideStream(kind: string): void {
    this.#ok(!this.#inStream, `${kind} outside a streamed block`);
  }

  /** Begin, BeginPrepare and StreamStart open something: no Begin ... Commit nor Begin Prepare ... Prepare may be open. */
  #outsideTxn(kind: string): void {
    this.#ok(this.#txn === undefined && this.#tp === undefined, `${kind} outside any transaction`);
  }

  #time(what: string, t: bigint, iso: string | null): void {
    this.#eq(typeof t, "bigint", `${what} is a bigint`);
    if (typeof t === "bigint") this.#eq(timestampToISO(t), iso, what);
  }

  #row(index: number): { lsn: string; xid: string } | undefined {
    return this.#o.rows?.[index];
  }

  /** The slot row's lsn column equals this message LSN field (they are the same value for these messages). */
  #rowLsn(index: number, lsn: bigint, what: string): void {
    const row = this.#row(index);
    if (row !== undefined && typeof lsn === "bigint") this.#eq(formatLsn(lsn), row.lsn, `${what} vs the slot row's lsn`);
  }

  #rowXid(index: number, xid: number, what: string): void {
    const row = this.#row(index);
    if (row !== undefined) this.#eq(xid, Number(row.xid), `${what} vs the slot row's xid`);
  }

  // ------------------------------------------------------------------- feed

  /** Checks one message (a view that is valid now). `index` is its position in the stream. */
  feed(msg: PgoutputMessage, index: number): void {
    this.#count++;
    this.#ctx = `${this.#o.label} message #${index} (${msg.kind})`;
    const scenario = this.#o.scenario;
    const stream = STREAM_SCENARIOS.has(scenario);
    switch (msg.kind) {
      case "Relation":
        this.#relation(msg);
        break;
      case "Type":
        this.#type(msg);
        break;
      case "Begin": {
        this.#ok(!stream, "no Begin in this scenario");
        this.#outsideTxn("Begin");
        this.#outsideStream("Begin");
        const exp = (this.#e.transactions as ExpectedTxn[] | undefined)?.[this.#txnIdx++];
        if (exp === undefined) {
          this.#fail(`Begin #${this.#txnIdx} beyond the ${this.#e.transactions?.length ?? 0} expected transactions`);
          break;
        }
        this.#eq(msg.xid, exp.xid, "Begin.xid");
        this.#rowXid(index, msg.xid, "Begin.xid");
        this.#lsnWithin("Begin.finalLsn", msg.finalLsn, exp.lsnRange);
        this.#time("Begin.commitTime", msg.commitTime, exp.commitTime);
        this.#txn = { exp, xid: msg.xid, finalLsn: msg.finalLsn, commitTime: msg.commitTime, changeIdx: 0, origin: false };
        break;
      }
      case "Commit": {
        const t = this.#openTxn("Commit without Begin");
        if (t === undefined) break;
        this.#eq(msg.flags, 0, "Commit.flags");
        this.#eq(typeof msg.commitLsn === "bigint" ? formatLsn(msg.commitLsn) : msg.commitLsn, formatLsn(t.finalLsn), "Commit.commitLsn equals Begin.finalLsn");
        this.#lsnSpan(msg, "commitLsn", "endLsn", t.exp.lsnRange, index);
        this.#time("Commit.commitTime", msg.commitTime, t.exp.commitTime);
        this.#eq(msg.commitTime, t.commitTime, "Commit.commitTime equals Begin.commitTime");
        this.#eq(t.changeIdx, t.exp.changes.length, `number of changes in transaction ${t.exp.xid}`);
        if ("origin" in t.exp) this.#eq(t.origin, t.exp.origin !== null, `transaction ${t.exp.xid} has an Origin message`);
        this.#txn = undefined;
        break;
      }
      case "Origin": {
        const t = this.#openTxn("Origin outside Begin/Commit");
        if (t === undefined) break;
        this.#eq(t.changeIdx, 0, "Origin comes right after Begin");
        this.#ok(!t.origin, "one Origin per transaction");
        t.origin = true;
        const exp = t.exp.origin;
        if (exp == null) {
          this.#fail(`no Origin expected in transaction ${t.exp.xid}`);
          break;
        }
        this.#eq(msg.name, exp.name, "Origin.name");
        this.#eq(msg.originLsn, parseLsn(exp.lsn), "Origin.originLsn (bigint)");
        if (typeof msg.originLsn === "bigint") this.#eq(formatLsn(msg.originLsn), exp.lsn, "Origin.originLsn");
        this.#ok(msg.originLsn >= 1n << 63n, "Origin.originLsn read unsigned (above 2^63)");
        if (this.#e.originTimestamp !== undefined) this.#time("commit time of the replayed transaction", t.commitTime, this.#e.originTimestamp);
        break;
      }
      case "Message":
        this.#message(msg, index);
        break;
      case "Insert":
      case "Update":
      case "Delete":
      case "Truncate":
        if (stream) this.#streamChange(msg);
        else this.#change(msg);
        break;
      case "StreamStart": {
        this.#ok(stream, "no streaming in this scenario");
        this.#outsideStream("StreamStart");
        this.#outsideTxn("StreamStart");
        this.#inStream = true;
        this.#streamXid = msg.xid;
        this.#ok(this.#knownXids.has(msg.xid), `StreamStart.xid ${msg.xid} is an expected streamed transaction (${[...this.#knownXids.keys()].join(", ")})`);
        this.#rowXid(index, msg.xid, "StreamStart.xid");
        this.#eq(msg.firstSegment, !this.#started.has(msg.xid), "StreamStart.firstSegment (true only on the first block of the xid)");
        this.#started.add(msg.xid);
        if (!this.#streamRows.has(msg.xid)) this.#streamRows.set(msg.xid, []);
        break;
      }
      case "StreamStop":
        this.#ok(this.#inStream, "StreamStop inside a streamed block");
        this.#inStream = false;
        break;
      case "StreamAbort":
        this.#streamAbort(msg, index);
        break;
      case "StreamCommit":
        this.#streamCommit(msg, index);
        break;
      case "BeginPrepare":
      case "Prepare":
      case "StreamPrepare":
      case "CommitPrepared":
      case "RollbackPrepared":
        this.#twoPhase(msg, index);
        break;
      default:
        this.#fail(`unexpected message kind ${(msg as { kind: string }).kind}`);
    }
  }

  // ------------------------------------------------------- schema messages

  #streamedXid(msg: { xid: number | undefined }, what: string): void {
    if (!this.#inStream) {
      this.#eq(msg.xid, undefined, `${what}.xid is undefined outside a streamed block`);
      return;
    }
    this.#eq(typeof msg.xid, "number", `${what}.xid is set inside a streamed block`);
    const known = this.#knownXids.get(this.#streamXid);
    if (known !== undefined && msg.xid !== undefined) {
      this.#ok(known.has(msg.xid), `${what}.xid ${msg.xid} is the streamed transaction ${this.#streamXid} or one of its subtransactions (${[...known].join(", ")})`);
    }
  }

  #relation(msg: RelationMessage): void {
    this.#streamedXid(msg, "Relation");
    const hit = this.#relByOid.get(msg.relationId);
    if (hit === undefined) {
      this.#fail(`Relation ${msg.relationId} is none of the expected relations (${[...this.#relByOid.keys()].join(", ")})`);
      return;
    }
    this.#relSeen.add(msg.relationId);
    const exp = hit.rel;
    const columns = msg.columns.map((c) => ({ name: c.name, typeOid: c.typeId, typmod: c.typeModifier, key: c.isKey }));
    this.#eq(
      { namespace: msg.namespace, name: msg.relationName, replicaIdentity: msg.replicaIdentity, columns },
      { namespace: exp.namespace, name: exp.name, replicaIdentity: exp.replicaIdentity, columns: exp.columns },
      `Relation ${hit.key} (OID ${exp.oid}) against pg_class/pg_attribute`,
    );
    this.#eq(msg.columns.map((c) => c.flags), exp.columns.map((c) => (c.key ? 1 : 0)), `Relation ${hit.key} column flags`);
    const r = msg.relation;
    this.#eq(
      { relationId: r.relationId, namespace: r.namespace, name: r.name, replicaIdentity: r.replicaIdentity, columnCount: r.columnCount, columns: r.columns.map((c) => ({ ...c })) },
      { relationId: msg.relationId, namespace: msg.namespace, name: msg.relationName, replicaIdentity: msg.replicaIdentity, columnCount: msg.columns.length, columns: msg.columns.map((c) => ({ ...c })) },
      `Relation ${hit.key}: the cached Relation object agrees with the message`,
    );
    if (this.#o.scenario === "enum-domain") this.#eq(this.#typeIdx, (this.#e.types as unknown[]).length, "every Type message comes before the Relation");
  }

  #type(msg: TypeMessage): void {
    this.#streamedXid(msg, "Type");
    const exp = (this.#e.types as { oid: number; namespace: string; name: string; column: string }[] | undefined)?.[this.#typeIdx++];
    if (exp === undefined) {
      this.#fail("unexpected Type message");
      return;
    }
    this.#eq({ typeId: msg.typeId, namespace: msg.namespace, typeName: msg.typeName }, { typeId: exp.oid, namespace: exp.namespace, typeName: exp.name }, `Type of column ${exp.column}`);
  }

  // ------------------------------------------------------------ tuples

  /** A column as a Cell (text mode), after checking that its accessors agree with each other. */
  #cell(t: Tuple, i: number, exp: Cell | undefined): unknown {
    const kind = t.kind(i);
    const bad: string[] = [];
    let value: unknown;
    switch (kind) {
      case "null":
        if (!t.isNull(i)) bad.push("isNull() false");
        if (t.text(i) !== null) bad.push(`text() ${String(t.text(i))}`);
        if (t.bytes(i) !== null) bad.push("bytes() not null");
        if (t.byteLength(i) !== 0) bad.push(`byteLength() ${t.byteLength(i)}`);
        value = null;
        break;
      case "unchanged":
        if (t.isNull(i)) bad.push("isNull() true");
        if (t.text(i) !== unchangedToast) bad.push(`text() ${t.text(i) === null ? "null" : String(t.text(i))} instead of unchangedToast`);
        if (t.bytes(i) !== unchangedToast) bad.push("bytes() not unchangedToast");
        if (t.byteLength(i) !== 0) bad.push(`byteLength() ${t.byteLength(i)}`);
        value = { unchanged: true };
        break;
      case "text": {
        const s = t.text(i);
        const b = t.bytes(i);
        if (t.isNull(i)) bad.push("isNull() true");
        if (typeof s !== "string") {
          bad.push(`text() is ${String(s)}`);
          break;
        }
        if (!(b instanceof Uint8Array)) bad.push("bytes() not a Uint8Array");
        else {
          if (Buffer.from(b).toString("utf8") !== s) bad.push("bytes() are not the UTF-8 of text()");
          if (t.byteLength(i) !== b.length) bad.push(`byteLength() ${t.byteLength(i)} != bytes().length ${b.length}`);
        }
        value = exp !== null && typeof exp === "object" && "md5" in exp ? { md5: md5Hex(s), length: Buffer.byteLength(s) } : s;
        break;
      }
      case "binary": {
        const b = t.bytes(i);
        value = `<binary ${b instanceof Uint8Array ? hex(b) : String(b)}>`;
        break;
      }
      default:
        value = `<kind ${String(kind)}>`;
    }
    return bad.length > 0 ? `<${kind} column whose accessors disagree: ${bad.join("; ")}>` : value;
  }

  #tupleCommon(t: Tuple, rel: ExpectedRelation, what: string): void {
    this.#eq(t.length, rel.columns.length, `${what}.length`);
    this.#eq(t.relation?.relationId, rel.oid, `${what}.relation`);
    const unchanged: number[] = [];
    for (let i = 0; i < t.length; i++) if (t.kind(i) === "unchanged") unchanged.push(i);
    this.#eq(t.unchangedColumns(), unchanged, `${what}.unchangedColumns()`);
    // By name as well as by index.
    const badNames: string[] = [];
    for (let i = 0; i < Math.min(t.length, rel.columns.length); i++) {
      const name = rel.columns[i]!.name;
      if (t.index(name) !== i || t.kind(name) !== t.kind(i)) badNames.push(name);
    }
    this.#eq(badNames, [], `${what}: columns addressed by name agree with the index`);
  }

  /** Whether there is a tuple whose cells to check: none when none is expected (and that is checked), one with the checks every tuple gets. */
  #expectedTuple(t: Tuple | null, expected: unknown, rel: ExpectedRelation, what: string): t is Tuple {
    if (expected === undefined) {
      this.#eq(t === null ? null : "a tuple", null, what);
      return false;
    }
    if (t === null) {
      this.#fail(`${what} missing`);
      return false;
    }
    this.#tupleCommon(t, rel, what);
    return true;
  }

  #cells(t: Tuple | null, exp: readonly Cell[] | undefined, rel: ExpectedRelation, what: string): void {
    if (!this.#expectedTuple(t, exp, rel, what) || exp === undefined) return;
    const actual: unknown[] = [];
    for (let i = 0; i < t.length; i++) actual.push(this.#cell(t, i, exp[i]));
    this.#eq(actual, exp, `${what} columns`);
    for (let i = 0; i < t.length; i++) {
      const e = exp[i];
      if (e !== null && typeof e === "object" && "md5" in e && t.kind(i) === "text") this.#eq(t.byteLength(i), e.length, `${what} column ${i} byteLength()`);
    }
  }

  /** Binary mode: bytes() = the send-format hex; decoded back, the values equal the ::text ones. */
  #binaryCells(t: Tuple | null, hexCells: readonly (string | null)[] | undefined, textCells: readonly Cell[] | undefined, rel: ExpectedRelation, what: string): void {
    if (!this.#expectedTuple(t, hexCells, rel, what) || hexCells === undefined) return;
    const actualHex: unknown[] = [];
    const asText: unknown[] = [];
    for (let i = 0; i < t.length; i++) {
      const kind = t.kind(i);
      if (kind === "null") {
        actualHex.push(t.isNull(i) && t.bytes(i) === null ? null : "<null column whose accessors disagree>");
        asText.push(null);
      } else if (kind === "binary") {
        const b = t.bytes(i);
        if (!(b instanceof Uint8Array)) {
          actualHex.push(`<binary column with bytes() ${String(b)}>`);
          asText.push(undefined);
          continue;
        }
        let textErr = "text() did not throw";
        try {
          t.text(i);
        } catch (e) {
          textErr = isPgoutputError(e) ? e.code : String(e);
        }
        actualHex.push(textErr === "WRONG_COLUMN_KIND" && t.byteLength(i) === b.length ? hex(b) : `<binary ${hex(b)}: text() -> ${textErr}, byteLength() ${t.byteLength(i)}>`);
        asText.push(binaryAsText(rel.columns[i]!.typeOid, b));
      } else {
        actualHex.push(`<${kind} column instead of binary>`);
        asText.push(kind === "text" ? t.text(i) : undefined);
      }
    }
    this.#eq(actualHex, hexCells, `${what} columns (send-format hex)`);
    if (textCells !== undefined) this.#eq(asText, textCells, `${what} columns decoded from binary vs the ::text values`);
  }

  // ------------------------------------------------------------ changes

  #change(msg: Insert | Update | Delete | Truncate): void {
    this.#streamedXid(msg, msg.kind);
    const t = this.#openTxn(`${msg.kind} outside Begin/Commit`);
    if (t === undefined) return;
    const ch = t.exp.changes[t.changeIdx++];
    if (ch === undefined) {
      this.#fail(`change #${t.changeIdx - 1} of transaction ${t.exp.xid} is beyond the ${t.exp.changes.length} expected`);
      return;
    }
    const where = `change #${t.changeIdx - 1} of transaction ${t.exp.xid}`;
    this.#eq(CHANGE_OP[msg.kind], ch.op, `${where}: operation`);
    if (CHANGE_OP[msg.kind] !== ch.op) return;
    const R = this.#e.relations as Record<string, ExpectedRelation>;
    if (msg.kind === "Truncate") {
      const c = ch as Extract<ExpectedChange, { op: "T" }>;
      this.#eq([...msg.relationIds], c.relations.map((k) => R[k]!.oid), `${where}: Truncate.relationIds`);
      this.#eq(msg.relations.map((r) => (r === undefined ? undefined : `${r.namespace}.${r.name}`)), c.relations.map((k) => `${R[k]!.namespace}.${R[k]!.name}`), `${where}: Truncate.relations`);
      this.#eq(
        { options: msg.options, cascade: msg.cascade, restartIdentity: msg.restartIdentity },
        { options: c.options, cascade: (c.options & 1) !== 0, restartIdentity: (c.options & 2) !== 0 },
        `${where}: Truncate options`,
      );
      return;
    }
    const c = ch as Extract<ExpectedChange, { op: "I" | "U" | "D" }>;
    const rel = R[c.relation]!;
    this.#eq(
      { relationId: msg.relationId, namespace: msg.relation?.namespace, name: msg.relation?.name },
      { relationId: rel.oid, namespace: rel.namespace, name: rel.name },
      `${where}: relation`,
    );
    const oldType = c.key !== undefined ? "K" : c.old !== undefined ? "O" : null;
    if (this.#o.scenario === "binary") {
      const b = (this.#e.binary as { op: string; key?: (string | null)[]; new?: (string | null)[] }[])[this.#binIdx++];
      if (b === undefined) {
        this.#fail(`${where}: no expected.binary entry`);
        return;
      }
      if (msg.kind !== "Delete") this.#binaryCells(msg.newTuple, b.new, c.new, rel, `${where}: newTuple`);
      if (msg.kind !== "Insert") {
        this.#eq(msg.oldTupleType, oldType, `${where}: oldTupleType`);
        this.#binaryCells(msg.oldTuple, b.key, c.key, rel, `${where}: oldTuple`);
      }
      return;
    }
    if (msg.kind !== "Delete") this.#cells(msg.newTuple, c.new, rel, `${where}: newTuple`);
    if (msg.kind !== "Insert") {
      this.#eq(msg.oldTupleType, oldType, `${where}: oldTupleType (K key / O old row / null)`);
      this.#cells(msg.oldTuple, c.key ?? c.old, rel, `${where}: oldTuple`);
    }
  }

  #message(msg: Message, index: number): void {
    this.#streamedXid(msg, "Message");
    const exp = (this.#e.messages as { transactional: boolean; prefix: string; contentHex: string; xid: number | null; lsn: string }[] | undefined)?.[this.#msgIdx++];
    if (exp === undefined) {
      this.#fail("unexpected Message");
      return;
    }
    const content = msg.content;
    this.#eq(
      { prefix: msg.prefix, contentHex: hex(content), transactional: msg.transactional, flags: msg.flags },
      { prefix: exp.prefix, contentHex: exp.contentHex, transactional: exp.transactional, flags: exp.transactional ? 1 : 0 },
      `Message #${this.#msgIdx - 1}`,
    );
    this.#eq(msg.contentText, utf8OrReplacement(Buffer.from(exp.contentHex, "hex")), "Message.contentText");
    this.#eq(typeof msg.lsn === "bigint" ? formatLsn(msg.lsn) : msg.lsn, exp.lsn, "Message.lsn (what pg_logical_emit_message returned)");
    this.#rowLsn(index, msg.lsn, "Message.lsn");
    const t = this.#txn;
    if (!exp.transactional) {
      this.#ok(t === undefined, "a non-transactional Message is sent outside Begin/Commit");
      return;
    }
    if (t === undefined) {
      this.#fail("a transactional Message outside Begin/Commit");
      return;
    }
    this.#eq(t.xid, exp.xid, "xid of the transaction around the transactional Message");
    const ch = t.exp.changes[t.changeIdx++];
    this.#eq(
      ch,
      { op: "M", transactional: msg.transactional, prefix: msg.prefix, contentHex: hex(content), lsn: typeof msg.lsn === "bigint" ? formatLsn(msg.lsn) : msg.lsn },
      `change #${t.changeIdx - 1} of transaction ${t.exp.xid}`,
    );
  }

  // ------------------------------------------------------------ streams

  #streamChange(msg: Insert | Update | Delete | Truncate): void {
    this.#streamedXid(msg, msg.kind);
    if (msg.kind !== "Insert") {
      this.#fail(`unexpected ${msg.kind} (the streaming scenarios only insert)`);
      return;
    }
    const rels = [...this.#relByOid.values()];
    const rel = rels[0]?.rel;
    if (rel === undefined || rels.length !== 1) {
      this.#fail("the streaming scenarios have one table");
      return;
    }
    this.#eq(msg.relationId, rel.oid, "Insert.relationId");
    const idText = msg.newTuple.length > 0 ? msg.newTuple.text(0) : null;
    const id = typeof idText === "string" ? Number(idText) : NaN;
    this.#cells(msg.newTuple, [String(id), pad(id)], rel, `Insert of id ${id}`);
    let row: Row;
    let list: Row[] | undefined;
    if (this.#inStream) {
      row = { id, xid: msg.xid ?? -1 };
      this.#ok(!this.#abortedSubxids.has(row.xid) && !this.#abortedTop.has(this.#streamXid), `Insert of id ${id}: no change of an aborted (sub)transaction after its Stream Abort`);
      list = this.#streamRows.get(this.#streamXid);
    } else if (this.#tp !== undefined) {
      row = { id, xid: this.#tp.p.xid };
      list = this.#tp.rows;
    } else {
      this.#fail("Insert outside a streamed block and outside Begin Prepare/Prepare");
      return;
    }
    list?.push(row);
  }

  #streamAbort(msg: Extract<PgoutputMessage, { kind: "StreamAbort" }>, index: number): void {
    this.#outsideStream("StreamAbort");
    this.#rowXid(index, msg.subXid, "StreamAbort.subXid");
    const list = this.#streamRows.get(msg.xid);
    if (list === undefined) {
      this.#fail(`StreamAbort of xid ${msg.xid}, which was never streamed`);
      return;
    }
    if (this.#o.scenario === "parallel-abort") {
      this.#lsnWithin("StreamAbort.abortLsn (protocol 4)", msg.abortLsn as bigint, this.#e.abortLsnRange);
      if (msg.abortLsn !== null) this.#rowLsn(index, msg.abortLsn, "StreamAbort.abortLsn");
      this.#timeWithin("StreamAbort.abortTime (protocol 4)", msg.abortTime, this.#e.abortTimeRange);
      this.#eq([msg.xid, msg.subXid], [this.#e.xid, this.#e.subxid], "StreamAbort xid/subXid");
    } else {
      this.#eq({ abortLsn: msg.abortLsn, abortTime: msg.abortTime }, { abortLsn: null, abortTime: null }, "StreamAbort has no protocol 4 fields");
    }
    if (this.#o.scenario === "streaming") {
      const e = this.#e;
      const pairs: [number, number][] = [[e.committed.xid, e.committed.subxid]];
      if (e.abortedIsStreamed) pairs.push([e.aborted.xid, e.aborted.xid]);
      this.#ok(pairs.some(([x, s]) => x === msg.xid && s === msg.subXid), `StreamAbort (${msg.xid}, ${msg.subXid}) is one of ${JSON.stringify(pairs)}`);
    }
    if (msg.subXid === msg.xid) {
      this.#abortedTop.add(msg.xid);
      this.#discarded.set(msg.xid, list.splice(0));
    } else {
      this.#abortedSubxids.add(msg.subXid);
      const keep = list.filter((r) => r.xid !== msg.subXid);
      this.#discarded.set(msg.subXid, list.filter((r) => r.xid === msg.subXid));
      list.splice(0, list.length, ...keep);
    }
  }

  #streamCommit(msg: Extract<PgoutputMessage, { kind: "StreamCommit" }>, index: number): void {
    this.#outsideStream("StreamCommit");
    const c = this.#committedSpec;
    if (c === undefined) {
      this.#fail("unexpected StreamCommit");
      return;
    }
    this.#eq(msg.xid, c.xid, "StreamCommit.xid");
    this.#rowXid(index, msg.xid, "StreamCommit.xid");
    this.#eq(msg.flags, 0, "StreamCommit.flags");
    this.#lsnSpan(msg, "commitLsn", "endLsn", c.lsnRange, index);
    this.#time("StreamCommit.commitTime", msg.commitTime, c.commitTime);
    this.#committedTop.add(msg.xid);
    // What is left after applying the Stream Abort of the subtransaction is what was committed.
    this.#eq(runsOf(this.#streamRows.get(msg.xid) ?? []), c.rows, `rows of streamed transaction ${c.xid} left after Stream Abort of subtransaction ${c.subxid}`);
    this.#ok(this.#abortedSubxids.has(c.subxid), `a Stream Abort (${c.xid}, ${c.subxid}) came before the Stream Commit`);
    const dropped = runsOf(this.#discarded.get(c.subxid) ?? []);
    this.#ok(
      dropped.length === 1 && dropped[0]!.xid === c.rolledBack.xid && dropped[0]!.from === c.rolledBack.from && dropped[0]!.to <= c.rolledBack.to,
      `rows discarded by the Stream Abort ${JSON.stringify(dropped)} are a non-empty prefix of the rolled-back ${JSON.stringify(c.rolledBack)}`,
    );
  }

  // ---------------------------------------------------------- two-phase

  #preparedSpec(gid: string, what: string): PreparedTxn | undefined {
    const p = (this.#e.prepared as PreparedTxn[] | undefined)?.find((x) => x.gid === gid);
    if (p === undefined) this.#fail(`${what}.gid ${JSON.stringify(gid)} is none of the prepared transactions`);
    return p;
  }

  /**
   * CommitPrepared or RollbackPrepared of `p`: the outcome its workload chose,
   * no flags, after the Prepare or StreamPrepare it resolves (whose recorded
   * end LSN and time it returns); `p` counts as resolved (finish() checks the order).
   */
  #resolving(msg: { kind: "CommitPrepared" | "RollbackPrepared"; flags: number }, p: PreparedTxn, outcome: PreparedTxn["outcome"]): { endLsn: bigint; prepareTime: bigint } | undefined {
    this.#eq(p.outcome, outcome, `${msg.kind} for a transaction that was ${outcome === "commit" ? "committed" : "rolled back"}`);
    this.#eq(msg.flags, 0, `${msg.kind}.flags`);
    const st = this.#prepared.get(p.gid);
    this.#ok(st !== undefined, `${msg.kind} after its Prepare/StreamPrepare`);
    this.#resolved.push(p.gid);
    return st;
  }

  #twoPhase(msg: Extract<PgoutputMessage, { kind: "BeginPrepare" | "Prepare" | "StreamPrepare" | "CommitPrepared" | "RollbackPrepared" }>, index: number): void {
    this.#ok(this.#o.scenario === "two-phase", "no two-phase messages in this scenario");
    this.#outsideStream(msg.kind);
    const p = this.#preparedSpec(msg.gid, msg.kind);
    if (p === undefined) return;
    this.#eq(msg.xid, p.xid, `${msg.kind}.xid`);
    this.#rowXid(index, msg.xid, `${msg.kind}.xid`);
    switch (msg.kind) {
      case "BeginPrepare":
        this.#outsideTxn("BeginPrepare");
        this.#eq(p.streamed, false, "BeginPrepare only for a transaction that was not streamed");
        this.#lsnSpan(msg, "prepareLsn", "endLsn", p.lsnRange);
        this.#time("BeginPrepare.prepareTime", msg.prepareTime, p.prepareTime);
        this.#tp = { p, prepareLsn: msg.prepareLsn, endLsn: msg.endLsn, prepareTime: msg.prepareTime, rows: [] };
        break;
      case "Prepare": {
        const tp = this.#tp;
        if (tp === undefined || tp.p !== p) {
          this.#fail("Prepare without its BeginPrepare");
          break;
        }
        this.#eq(msg.flags, 0, "Prepare.flags");
        this.#eq(
          { prepareLsn: msg.prepareLsn, endLsn: msg.endLsn, prepareTime: msg.prepareTime },
          { prepareLsn: tp.prepareLsn, endLsn: tp.endLsn, prepareTime: tp.prepareTime },
          "Prepare's LSNs and time equal BeginPrepare's",
        );
        this.#time("Prepare.prepareTime", msg.prepareTime, p.prepareTime);
        this.#rowLsn(index, msg.endLsn, "Prepare.endLsn");
        this.#eq(runsOf(tp.rows), [p.rows], `rows of prepared transaction ${p.gid}`);
        this.#prepared.set(p.gid, { endLsn: msg.endLsn, prepareTime: msg.prepareTime });
        this.#tp = undefined;
        break;
      }
      case "StreamPrepare":
        this.#eq(p.streamed, true, "StreamPrepare only for a streamed transaction");
        this.#eq(msg.flags, 0, "StreamPrepare.flags");
        this.#lsnSpan(msg, "prepareLsn", "endLsn", p.lsnRange, index);
        this.#time("StreamPrepare.prepareTime", msg.prepareTime, p.prepareTime);
        this.#eq(runsOf(this.#streamRows.get(p.xid) ?? []), [p.rows], `rows of streamed prepared transaction ${p.gid}`);
        this.#prepared.set(p.gid, { endLsn: msg.endLsn, prepareTime: msg.prepareTime });
        break;
      case "CommitPrepared": {
        const st = this.#resolving(msg, p, "commit");
        if (st !== undefined) this.#ok(msg.commitLsn >= st.endLsn, "CommitPrepared.commitLsn not before the prepare's end");
        this.#lsnSpan(msg, "commitLsn", "endLsn", p.lsnRange, index);
        this.#time("CommitPrepared.commitTime", msg.commitTime, p.commitTime);
        break;
      }
      case "RollbackPrepared": {
        const st = this.#resolving(msg, p, "rollback");
        if (st !== undefined) {
          this.#eq(msg.prepareEndLsn, st.endLsn, "RollbackPrepared.prepareEndLsn equals Prepare.endLsn");
          this.#eq(msg.prepareTime, st.prepareTime, "RollbackPrepared.prepareTime equals Prepare.prepareTime");
        }
        this.#lsnSpan(msg, "prepareEndLsn", "rollbackEndLsn", p.lsnRange, index);
        this.#time("RollbackPrepared.prepareTime", msg.prepareTime, p.prepareTime);
        if (p.rollbackTimeRange !== null) this.#timeWithin("RollbackPrepared.rollbackTime", msg.rollbackTime, p.rollbackTimeRange);
        break;
      }
    }
  }

  // -------------------------------------------------------------- finish

  /** End-of-stream checks; with the decoder that decoded the stream, its caches too. */
  finish(decoder?: PgoutputDecoder): void {
    this.#ctx = `${this.#o.label} after all ${this.#count} messages`;
    const e = this.#e;
    const s = this.#o.scenario;
    this.#ok(!this.#inStream, "no streamed block left open");
    this.#ok(this.#txn === undefined && this.#tp === undefined, "no transaction left open");
    this.#eq([...this.#relSeen].sort((a, b) => a - b), [...this.#relByOid.keys()].sort((a, b) => a - b), "a Relation message for every expected relation");
    if (TXN_SCENARIOS.has(s)) this.#eq(this.#txnIdx, (e.transactions as unknown[]).length, "number of transactions");
    if (e.messages !== undefined) this.#eq(this.#msgIdx, e.messages.length, "number of Message messages");
    if (e.types !== undefined) this.#eq(this.#typeIdx, e.types.length, "number of Type messages");
    if (s === "binary") this.#eq(this.#binIdx, e.binary.length, "number of binary changes");
    if (s === "streaming" || s === "parallel-abort") {
      const c = this.#committedSpec!;
      this.#ok(this.#committedTop.has(c.xid), `a StreamCommit for ${c.xid}`);
    }
    if (s === "streaming") {
      const a = e.aborted as { xid: number; rows: IdRange };
      if (e.abortedIsStreamed) {
        this.#ok(this.#abortedTop.has(a.xid), `a Stream Abort (${a.xid}, ${a.xid}) of the aborted transaction`);
        const dropped = runsOf(this.#discarded.get(a.xid) ?? []);
        this.#ok(
          dropped.length === 1 && dropped[0]!.xid === a.xid && dropped[0]!.from === a.rows.from && dropped[0]!.to <= a.rows.to,
          `rows streamed for the aborted transaction ${JSON.stringify(dropped)} are a non-empty prefix of ${JSON.stringify(a.rows)}`,
        );
        this.#ok(!this.#committedTop.has(a.xid), "the aborted transaction is not committed");
      } else {
        this.#ok(!this.#started.has(a.xid), `no Stream Start for the aborted transaction ${a.xid}`);
      }
    }
    if (s === "two-phase") {
      this.#eq(this.#resolved, (e.prepared as PreparedTxn[]).map((p) => p.gid), "each prepared transaction committed or rolled back once, in order");
    }
    if (decoder !== undefined) {
      this.#eq(decoder.inStream, false, "decoder.inStream at the end");
      for (const { key, rel } of this.#relByOid.values()) {
        const r = decoder.relations.get(rel.oid);
        this.#eq(
          r === undefined ? undefined : { namespace: r.namespace, name: r.name, replicaIdentity: r.replicaIdentity, columns: r.columns.map((c) => ({ name: c.name, typeOid: c.typeId, typmod: c.typeModifier, key: c.isKey })) },
          { namespace: rel.namespace, name: rel.name, replicaIdentity: rel.replicaIdentity, columns: rel.columns },
          `decoder.relations has ${key}`,
        );
      }
      for (const t of (e.types ?? []) as { oid: number; namespace: string; name: string }[]) {
        const got = decoder.types.get(t.oid);
        this.#eq(got === undefined ? undefined : { ...got }, { typeId: t.oid, namespace: t.namespace, typeName: t.name }, `decoder.types has ${t.oid}`);
      }
    }
    if (this.#suppressed > 0) expect.soft(this.#suppressed, `${this.#o.label}: further failures not shown`).toBe(0);
  }
}

/** Feeds every message to a checker and finishes it. */
export function checkScenario(options: CheckOptions, messages: Iterable<PgoutputMessage>, decoder?: PgoutputDecoder): void {
  const checker = new ScenarioChecker(options);
  let i = 0;
  for (const m of messages) checker.feed(m, i++);
  checker.finish(decoder);
}
