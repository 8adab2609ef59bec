/**
 * `npm run demo:sql`: starts a throwaway PostgreSQL (Debian's 15 by default,
 * `--pg 18` for the embedded build), makes changes of every kind, pulls the
 * pgoutput bytes through the SQL slot functions (pg_logical_slot_get_binary_changes,
 * no replication connection) and prints the decoded messages one by one.
 * Nothing is left behind: the cluster lives in a temporary folder.
 *
 * `npm run demo` is the CLI's live demo instead (`pgoutput-wasm tail` on an
 * embedded PostgreSQL, streamed over a replication connection).
 *
 *   npm run demo:sql [-- --pg 15|18] [--backend wasm|baseline] [--save FILE]
 */
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { startCluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { createSlot, encodeCapture, getChanges } from "../devkit/capture/slot.ts";
import { createDecoder, formatLsn, timestampToISO, unchangedToast } from "../bindings/index.ts";
import type { PgoutputMessage, Tuple } from "../bindings/index.ts";

const { values } = parseArgs({
  options: {
    pg: { type: "string", default: "15" },
    backend: { type: "string", default: "wasm" },
    save: { type: "string" },
  },
});
const major = Number(values.pg) as PgMajor;
if (major !== 15 && major !== 18) throw new Error("--pg must be 15 or 18");

const WORKLOAD = `
CREATE TYPE mood AS ENUM ('happy', 'sad');
CREATE TABLE account (id serial PRIMARY KEY, owner text NOT NULL, balance numeric(12,2), mood mood, notes text);
ALTER TABLE account ALTER notes SET STORAGE EXTERNAL;
CREATE TABLE audit (id bigserial PRIMARY KEY, account_id int REFERENCES account, what text);
ALTER TABLE audit REPLICA IDENTITY FULL;
CREATE PUBLICATION demo FOR TABLE account, audit;
`;

const CHANGES = [
  `INSERT INTO account (owner, balance, mood, notes) VALUES ('alice', 100.50, 'happy', repeat('long note ', 300)), ('bob', 7, 'sad', NULL)`,
  `BEGIN; UPDATE account SET balance = balance - 10 WHERE owner = 'alice';
          INSERT INTO audit (account_id, what) VALUES (1, 'withdraw 10');
          SELECT pg_logical_emit_message(true, 'demo', 'transactional hello'); COMMIT`,
  `SELECT pg_logical_emit_message(false, 'demo', 'non-transactional hello')`,
  `UPDATE account SET id = 42 WHERE owner = 'bob'`,
  `DELETE FROM audit`,
  // Large enough to be streamed (logical_decoding_work_mem = 64kB).
  `INSERT INTO audit (what) SELECT 'bulk ' || g FROM generate_series(1, 2000) g`,
  `TRUNCATE audit`,
];

const cluster = await startCluster(major);
try {
  console.log(`PostgreSQL ${cluster.version} on ${cluster.host}:${cluster.port} (temporary)\n`);
  await cluster.query(WORKLOAD);
  await createSlot(cluster, "demo_slot");
  for (const sql of CHANGES) await cluster.query(sql);

  const rows = await getChanges(cluster, "demo_slot", {
    proto_version: "2",
    publication_names: "demo",
    messages: "true",
    streaming: "on",
  });
  const messages = rows.map((r) => r.data);
  if (values.save) {
    writeFileSync(values.save, gzipSync(encodeCapture(messages)));
    console.log(`saved ${messages.length} messages to ${values.save}\n`);
  }

  const decoder = await createDecoder({ backend: values.backend as "wasm" | "baseline" });
  const batch = decoder.decodeBatch(messages);
  let streamedInserts = 0;
  for (let i = 0; i < batch.length; i++) {
    const msg = batch.get(i);
    // A streamed bulk insert is thousands of rows: show the first few.
    if (msg.kind === "Insert" && msg.xid !== undefined && ++streamedInserts > 3) {
      if (streamedInserts === 4) console.log(`${" ".repeat(12)}  ... (more streamed inserts)`);
      continue;
    }
    console.log(`${rows[i]!.lsn.padStart(10)}  ${describe(msg)}`);
  }
  console.log(`\n${batch.length} messages, ${messages.reduce((n, m) => n + m.length, 0)} bytes, decoded by the ${decoder.backend} backend`);
} finally {
  await cluster.stop();
}

function describe(msg: PgoutputMessage): string {
  const kind = msg.kind.padEnd(14);
  const xid = "xid" in msg && msg.xid !== undefined ? ` [xid ${msg.xid}]` : "";
  switch (msg.kind) {
    case "Begin":
      return `${kind}xid ${msg.xid}, commits at ${formatLsn(msg.finalLsn)}, ${timestampToISO(msg.commitTime)}`;
    case "Commit":
    case "StreamCommit":
      return `${kind}${formatLsn(msg.commitLsn)}, ${timestampToISO(msg.commitTime)}${msg.kind === "StreamCommit" ? ` (xid ${msg.xid})` : ""}`;
    case "Relation":
      return `${kind}${msg.namespace}.${msg.relationName} (oid ${msg.relationId}, replica identity ${msg.replicaIdentity}): ${msg.columns
        .map((c) => `${c.name}${c.isKey ? "*" : ""}:${c.typeId}`)
        .join(", ")}${xid}`;
    case "Type":
      return `${kind}${msg.namespace}.${msg.typeName} (oid ${msg.typeId})${xid}`;
    case "Insert":
      return `${kind}${name(msg.relation)} ${row(msg.newTuple)}${xid}`;
    case "Update":
      return `${kind}${name(msg.relation)} ${msg.oldTuple ? `${row(msg.oldTuple)} (${msg.oldTupleType}) -> ` : ""}${row(msg.newTuple)}${xid}`;
    case "Delete":
      return `${kind}${name(msg.relation)} ${row(msg.oldTuple)} (${msg.oldTupleType})${xid}`;
    case "Truncate":
      return `${kind}${msg.relations.map(name).join(", ")}${msg.cascade ? " CASCADE" : ""}${msg.restartIdentity ? " RESTART IDENTITY" : ""}${xid}`;
    case "Message":
      return `${kind}${msg.transactional ? "transactional" : "non-transactional"} "${msg.prefix}": ${JSON.stringify(msg.contentText)}${xid}`;
    case "StreamStart":
      return `${kind}xid ${msg.xid}${msg.firstSegment ? " (first segment)" : ""}`;
    case "StreamStop":
      return kind;
    case "StreamAbort":
      return `${kind}xid ${msg.xid}, subxact ${msg.subXid}`;
    default:
      return `${kind}${JSON.stringify(msg.toJSON())}`;
  }
}

function name(rel: { namespace: string; name: string } | undefined): string {
  return rel ? `${rel.namespace}.${rel.name}` : "?";
}

function row(t: Tuple): string {
  const cols = t.relation?.columns;
  const parts: string[] = [];
  for (let i = 0; i < t.length; i++) {
    const label = cols?.[i]?.name ?? String(i);
    const kind = t.kind(i);
    let value: string;
    if (kind === "binary") value = `<${t.byteLength(i)} bytes>`;
    else {
      const text = t.text(i);
      value = text === null ? "NULL" : text === unchangedToast ? "(unchanged TOAST)" : text.length > 40 ? `${JSON.stringify(text.slice(0, 37))}... (${text.length} chars)` : JSON.stringify(text);
    }
    parts.push(`${label}=${value}`);
  }
  return `{${parts.join(", ")}}`;
}
