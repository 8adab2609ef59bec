/**
 * One chunk of a backfill, read on the backfill's own connection between
 * its two watermarks (Netflix DBLog's algorithm, as Debezium's incremental
 * snapshots use it), with PostgreSQL's snapshot made part of it:
 *
 * 1. the low watermark: a non-transactional logical decoding message
 *    (`pg_logical_emit_message`), so it takes its place in the stream at
 *    once, between the transactions committed before and after it;
 * 2. the transactions still running then are waited out, as CREATE INDEX
 *    CONCURRENTLY does: a transaction whose commit record precedes the low
 *    watermark may still be invisible to a snapshot taken just after it
 *    (its commit is written before it leaves the proc array). Not by a
 *    snapshot's in-progress list: that leaves out every xid from its xmax
 *    (latest completed + 1) on, which such a transaction's often is (a
 *    writer's newest). By an xid taken after the watermark: every
 *    transaction that committed before it has a smaller one, so once a
 *    snapshot's xmin (its oldest running xid) is past it, each of them has
 *    ended. After the wait, every transaction before the low watermark is
 *    visible to the chunk;
 * 3. in a REPEATABLE READ transaction: the chunk's snapshot (kept: a live
 *    change it does not see is newer than the chunk's row), the rows as a
 *    COPY in key order (re-framed as pgoutput Inserts, copy-reframe.ts, in
 *    the stream's value format), and their keys as text (for the next
 *    chunk's bound), both under the same snapshot;
 * 4. the high watermark (`emitHigh`), once the chunk is held: committed in
 *    a transaction of its own so that its WAL is flushed at once (a
 *    non-transactional message alone waits for the WAL writer).
 */
import type { Client } from "pg";
import { copyOut } from "./copy-out.ts";
import { CopyReframer, type CopyFormat } from "./copy-reframe.ts";
import { copyCommand, sqlLiteral } from "./snapshot-catalog.ts";
import { keyColumns, keyLiteral, type BackfillTable } from "./backfill-catalog.ts";
import { quoteIdent } from "./commands.ts";
import { parseLsn } from "../lsn.ts";

/** The prefix of the watermark messages (filtered out of every stream, like heartbeats). */
export const BACKFILL_PREFIX = "pgoutput-wasm.backfill";

/** What a watermark message says: the backfill run it belongs to, the chunk's number, low or high. */
export interface Watermark {
  run: string;
  seq: number;
  mark: "low" | "high";
}

/** A watermark's content, or undefined when it is not one. */
export function parseWatermark(text: string): Watermark | undefined {
  try {
    const w = JSON.parse(text) as Partial<Watermark>;
    if (typeof w.run !== "string" || typeof w.seq !== "number" || (w.mark !== "low" && w.mark !== "high")) return undefined;
    return w as Watermark;
  } catch {
    return undefined;
  }
}

/** A snapshot (`pg_current_snapshot()`): which transactions it sees. */
export class PgSnapshot {
  readonly xmin: bigint;
  readonly xmax: bigint;
  readonly #running: Set<bigint>;

  constructor(readonly text: string) {
    const [xmin, xmax, xip] = text.split(":");
    this.xmin = BigInt(xmin!);
    this.xmax = BigInt(xmax!);
    this.#running = new Set(xip === undefined || xip === "" ? [] : xip.split(",").map((x) => BigInt(x)));
  }

  /** Whether the committed transaction `xid` (32 bits, as pgoutput sends it) is visible: committed before the snapshot was taken. */
  sees(xid: number): boolean {
    // The 64-bit xid nearest to xmax with these low 32 bits (a live transaction is within 2^31 of it).
    const low = BigInt(xid >>> 0);
    let full = (this.xmax & ~0xffffffffn) | low;
    if (full > this.xmax + 0x80000000n) full -= 0x100000000n;
    else if (full < this.xmax - 0x80000000n) full += 0x100000000n;
    if (full < this.xmin) return true;
    return full < this.xmax && !this.#running.has(full);
  }
}

/** What a chunk reads. */
export interface ChunkPlan {
  table: BackfillTable;
  run: string;
  seq: number;
  format: CopyFormat;
  chunkRows: number;
  /** The caller's condition (`where`), if any. */
  where: string | undefined;
  /** Read the keys after this one… */
  lastKey: readonly string[] | null;
  /** …and these again. */
  reread: readonly (readonly string[])[];
  maxTupleBytes: number | undefined;
  /** Whether the backfill was stopped (checked while waiting: a transaction left open makes the wait long). */
  stopped: () => boolean;
}

/** A chunk read, held until its high watermark is reached in the stream. */
export interface ChunkRead {
  seq: number;
  lowLsn: bigint;
  snapshot: PgSnapshot;
  /** The Relation (and Type) messages, then the rows as Inserts, framed for `decodeFramed`. */
  frames: Uint8Array;
  /** Each row's key as text, and whether it is after `lastKey` (not a key read again). */
  keys: { texts: string[]; fresh: boolean }[];
  /** Fewer rows than asked for: the table's key range is read to its end. */
  last: boolean;
}

function watermark(run: string, seq: number, mark: "low" | "high"): string {
  return `SELECT pg_catalog.pg_logical_emit_message(false, ${sqlLiteral(BACKFILL_PREFIX)}, ${sqlLiteral(JSON.stringify({ run, seq, mark }))})::text AS lsn`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.());

/** Reads a chunk (steps 1-3 above). The connection must have WALSENDER_OUTPUT_SETTINGS. */
export async function readChunk(client: Client, plan: ChunkPlan): Promise<ChunkRead> {
  const t = plan.table;
  // One round trip (simple query protocol: one implicit transaction, so the xid is taken after the watermark was written,
  // and ends before the reply).
  const [lowResult, xidResult] = (await client.query(`${watermark(plan.run, plan.seq, "low")}; ` +
    "SELECT pg_catalog.pg_current_xact_id()::text AS xid")) as unknown as { rows: { lsn?: string; xid?: string }[] }[];
  const low = lowResult!.rows[0]!.lsn!;
  const after = `${sqlLiteral(xidResult!.rows[0]!.xid!)}::xid8`;
  for (let pause = 1; ; pause = Math.min(pause * 2, 100)) {
    const past = (await client.query<{ past: boolean }>(`SELECT pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()) > ${after} AS past`)).rows[0]!.past;
    if (past) break;
    if (plan.stopped()) throw new Error("stopped");
    await sleep(pause);
  }
  const key = keyColumns(t);
  const range: string[] = [];
  if (plan.lastKey !== null) range.push(`${key} > ${keyLiteral(t, plan.lastKey)}`);
  else range.push("true");
  if (plan.reread.length > 0) range.push(`${key} IN (${plan.reread.map((k) => keyLiteral(t, k)).join(", ")})`);
  const where = [...(plan.where !== undefined ? [plan.where] : []), range.join(" OR ")];
  const orderBy = t.key.map((k) => quoteIdent(k.name)).join(", ");
  const limit = plan.chunkRows + plan.reread.length;
  const fresh = plan.lastKey === null ? "true" : `${key} > ${keyLiteral(t, plan.lastKey)}`;
  const reframer = new CopyReframer({ relationId: t.relationId, columns: t.columns.length, format: plan.format, maxTupleBytes: plan.maxTupleBytes });
  const [, snapshotResult] = (await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT pg_catalog.pg_current_snapshot()::text AS s")) as unknown as { rows: { s: string }[] }[];
  try {
    const snapshot = new PgSnapshot(snapshotResult!.rows[0]!.s);
    await copyOut(client, copyCommand({ table: t, where, orderBy, limit }, plan.format), (payload) => reframer.push(payload)).done;
    reframer.end();
    const filters = [...(t.rowFilter !== undefined ? [t.rowFilter] : []), ...where].map((w) => `(${w})`).join(" AND ");
    // ONLY, as the COPY: an inheritance child is a table of its own.
    const from = `${t.kind === "p" ? "" : "ONLY "}${quoteIdent(t.schema)}.${quoteIdent(t.name)}`;
    const texts = t.key.map((k, i) => `${quoteIdent(k.name)}::text AS k${i}`).join(", ");
    const sql = `SELECT ${texts}, ${fresh} AS fresh FROM ${from} WHERE ${filters} ORDER BY ${orderBy} LIMIT ${limit}; COMMIT`;
    const [keysResult] = (await client.query(sql)) as unknown as { rows: Record<string, string | boolean>[] }[];
    const rows = keysResult!.rows;
    if (rows.length !== reframer.rows) throw new Error(`backfill chunk of ${t.qualified}: ${reframer.rows} rows copied but ${rows.length} keys read under the same snapshot`);
    const rowsOut = reframer.take();
    const frames = new Uint8Array(t.metadata.length + rowsOut.length);
    frames.set(t.metadata);
    frames.set(rowsOut, t.metadata.length);
    return {
      seq: plan.seq,
      lowLsn: parseLsn(low),
      snapshot,
      frames,
      keys: rows.map((r) => ({ texts: t.key.map((_, i) => r[`k${i}`] as string), fresh: r.fresh === true })),
      last: rows.length < limit,
    };
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {});
    throw e;
  }
}

/** Step 4: the high watermark, flushed (its transaction takes an xid, so its commit is written and flushed). Returns its LSN. */
export async function emitHigh(client: Client, run: string, seq: number): Promise<bigint> {
  // One simple query: an implicit transaction, committed (or rolled back) by the server.
  const [result] = (await client.query(`${watermark(run, seq, "high")}; SELECT pg_catalog.pg_current_xact_id()`)) as unknown as { rows: { lsn: string }[] }[];
  return parseLsn(result!.rows[0]!.lsn);
}
