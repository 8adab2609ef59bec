// Logical replication slot helpers over a Cluster (SQL interface), and the
// capture file format shared by fixtures, tests, the demo and benchmarks.
//
// Capture format: the pgoutput messages one after another, each as
// [uint32 big-endian length][message bytes]; optionally gzipped as a whole.

import { gunzipSync } from "node:zlib";
import type { Cluster } from "../cluster/cluster.ts";

export interface SlotRow {
  /** LSN of the message as PostgreSQL prints it, e.g. "0/17864C0". */
  lsn: string;
  /** xid of the transaction the message belongs to, as text ("0" for none). */
  xid: string;
  /** One pgoutput message (a plain Uint8Array, not a Buffer). */
  data: Uint8Array;
}

/** pg_create_logical_replication_slot(slot, 'pgoutput', false, twoPhase). */
export async function createSlot(c: Cluster, slot: string, opts: { twoPhase?: boolean } = {}): Promise<void> {
  await c.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput', false, $2)", [slot, opts.twoPhase ?? false]);
}

/** Drops the slot if it exists. */
export async function dropSlot(c: Cluster, slot: string): Promise<void> {
  await c.query(
    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1",
    [slot],
  );
}

function optionArray(options: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(options)) out.push(k, v);
  return out;
}

/**
 * Makes all WAL written so far durable. The SQL decoding functions only read
 * up to the flushed WAL position, and the test clusters run with
 * synchronous_commit = off, so a just-committed transaction may not be
 * visible yet. A transaction that wrote WAL (here: catalog rows for a
 * temporary table) and commits with synchronous_commit = on flushes its
 * commit record and so everything before it. (A transaction that only takes
 * an xid would not do: with nothing written before its commit record, its
 * commit stays asynchronous.) A temporary table is never published, so
 * pgoutput sends nothing for this transaction (an empty transaction, skipped
 * on PostgreSQL 15+).
 */
export async function flushWal(c: Cluster): Promise<void> {
  await c.query("BEGIN; SET LOCAL synchronous_commit = on; CREATE TEMP TABLE pgoutputwasm_flush () ON COMMIT DROP; COMMIT");
}

async function changes(fn: string, c: Cluster, slot: string, options: Record<string, string>): Promise<SlotRow[]> {
  await flushWal(c);
  const rows = await c.query<{ lsn: string; xid: string; data: Uint8Array }>(
    `SELECT lsn::text AS lsn, xid::text AS xid, data FROM ${fn}($1, NULL, NULL, VARIADIC $2::text[])`,
    [slot, optionArray(options)],
  );
  // pg returns Buffers that may share one pooled ArrayBuffer: copy each into
  // its own plain Uint8Array.
  return rows.map((r) => ({ lsn: r.lsn, xid: r.xid, data: new Uint8Array(r.data) }));
}

/**
 * pg_logical_slot_get_binary_changes(slot, NULL, NULL, k1, v1, ...): consumes.
 * Flushes the WAL first (see flushWal), so every transaction committed before
 * the call is there.
 */
export function getChanges(c: Cluster, slot: string, options: Record<string, string>): Promise<SlotRow[]> {
  return changes("pg_logical_slot_get_binary_changes", c, slot, options);
}

/** pg_logical_slot_peek_binary_changes(slot, NULL, NULL, k1, v1, ...): does not consume. Flushes first too. */
export function peekChanges(c: Cluster, slot: string, options: Record<string, string>): Promise<SlotRow[]> {
  return changes("pg_logical_slot_peek_binary_changes", c, slot, options);
}

/** Concatenates messages as [uint32 BE length][bytes]... */
export function encodeCapture(messages: Uint8Array[]): Uint8Array {
  let total = 0;
  for (const m of messages) total += 4 + m.length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let off = 0;
  for (const m of messages) {
    view.setUint32(off, m.length, false);
    out.set(m, off + 4);
    off += 4 + m.length;
  }
  return out;
}

/** The inverse of encodeCapture; gunzips first if the bytes start with the gzip magic (1f 8b). */
export function decodeCapture(bytes: Uint8Array): Uint8Array[] {
  // Work on a plain Uint8Array view (a Buffer's slice() would not copy).
  let buf = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) {
    const z = gunzipSync(buf);
    buf = new Uint8Array(z.buffer, z.byteOffset, z.byteLength);
  }
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: Uint8Array[] = [];
  let off = 0;
  while (off < buf.length) {
    if (off + 4 > buf.length) throw new Error(`truncated capture: length prefix at offset ${off}`);
    const n = view.getUint32(off, false);
    off += 4;
    if (off + n > buf.length) throw new Error(`truncated capture: message of ${n} bytes at offset ${off}`);
    out.push(buf.slice(off, off + n));
    off += n;
  }
  return out;
}
