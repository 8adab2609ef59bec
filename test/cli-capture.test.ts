// `pgoutput-wasm capture` and `decode --changes`, end to end: the CLI
// (compiled from bindings/ as published) records a live stream from a real
// PostgreSQL 15 while the test writes changes; the file holds the server's
// own bytes (compared with pg_logical_slot_peek_binary_changes), `decode
// --changes` prints what was written with exact values, the slot is
// acknowledged up to what the file holds. Without a connection, capture
// records the embedded PostgreSQL 18 demo, and the decoded file shows every
// kind of change. Through the pipeline: the file holds exactly what the
// server sent (compared with a twin slot read by SQL), the slot is
// acknowledged as the file is flushed, while the capture runs, and never
// past it, even when the capture is killed; --max-messages cuts where it
// says. `tail --sink file:PATH` appends to a file the same way.

import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "pg";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { decodeCapture, peekChanges } from "../devkit/capture/slot.ts";
import { transactionEnd } from "../bindings/ack.ts";
import { parseLsn } from "../bindings/lsn.ts";
import { waitStreaming } from "./support/slot-streaming.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";
import { startCli, type CliRun } from "./support/run-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI_FOLDER = "cli-test-capture";
const MAIN = join(ROOT, "build", CLI_FOLDER, "cli", "main.js");
const tmp = mkdtempSync(join(tmpdir(), "pgoutputwasm-cli-capture-"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Run = CliRun;

const start = (args: string[]): { child: ChildProcess; exited: Promise<Run> } => startCli(MAIN, args);

const run = (args: string[]) => start(args).exited;

/** Exact-number JSON: numbers become their text (enough for these checks). */
function parseExact(line: string): any {
  // Quote every bare number outside strings, then JSON.parse.
  let out = "";
  let inString = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (inString) {
      out += ch;
      if (ch === "\\") out += line[++i];
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
      out += ch;
    } else if (/[-\d]/.test(ch)) {
      const m = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(line.slice(i))!;
      out += JSON.stringify(m[0]);
      i += m[0].length - 1;
    } else out += ch;
  }
  return JSON.parse(out);
}

const value = (line: any, name: string, field = "columns") => (line[field] as { name: string; value: unknown }[]).find((c) => c.name === name)?.value;

function messagesOf(file: string): PgoutputMessage[] {
  let bytes = new Uint8Array(readFileSync(file));
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = new Uint8Array(gunzipSync(bytes));
  const d = new BaselineDecoder();
  return [...(d.decodeFramed(bytes) as Iterable<PgoutputMessage>)].map((m) => m.materialize() as unknown as PgoutputMessage);
}

let cluster: Cluster;

beforeAll(async () => {
  const compile = buildCli(CLI_FOLDER);
  [cluster] = await Promise.all([startCluster(15), compile]);
  await cluster.query(`
    CREATE TABLE cap (id int8 PRIMARY KEY, n numeric, note text, doc jsonb);
    ALTER TABLE cap ALTER note SET STORAGE EXTERNAL;
    CREATE PUBLICATION p_cap FOR TABLE cap;
  `);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  rmSync(tmp, { recursive: true, force: true });
  await removeCli(CLI_FOLDER);
});

async function tx(client: Client, ...statements: string[]): Promise<void> {
  await client.query("BEGIN");
  for (const s of statements) await client.query(s);
  await client.query("COMMIT");
}

const NUM = "98765432109876543210987654321.123456789012345678901234567890";

describe("capture from PostgreSQL 15", () => {
  it("records the stream while changes are made; decode --changes gives them back exactly; the slot is acknowledged up to the file's end", async () => {
    const file = join(tmp, "live.bin");
    const slot = "cap_live";
    const cap = start(["capture", file, "-c", cluster.connectionString, "--publication", "p_cap", "--slot", slot, "--create-slot", "--messages"]);
    await waitStreaming(cluster, slot);
    const w = await cluster.connect();
    try {
      await tx(w, `INSERT INTO cap VALUES (-9223372036854775808, '${NUM}', repeat('n', 5000), '{"k": 18446744073709551616}')`, `SELECT pg_logical_emit_message(true, 'cap', 'in the transaction')`);
      await tx(w, `UPDATE cap SET n = 0 WHERE id = -9223372036854775808`);
      await tx(w, `INSERT INTO cap (id, n) SELECT g, g FROM generate_series(1, 1200) g`); // streamed
      await tx(w, `DELETE FROM cap WHERE id > 1000`);
    } finally {
      await w.end();
    }
    // The file grows transaction by transaction: wait for the fourth commit, then Ctrl-C.
    const deadline = Date.now() + 30_000;
    while (messagesOf(file).filter((m) => m.kind === "Commit" || m.kind === "StreamCommit").length < 4) {
      if (Date.now() > deadline) throw new Error("capture did not record four transactions");
      await sleep(100);
    }
    cap.child.kill("SIGINT");
    const r = await cap.exited;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");

    const msgs = messagesOf(file);
    const kinds = msgs.map((m) => m.kind);
    expect(kinds).toContain("StreamStart");
    expect(kinds).toContain("StreamCommit");
    expect(kinds.filter((k) => k === "Delete")).toHaveLength(200);

    // The slot is acknowledged exactly up to the last transaction in the file.
    const ends = msgs.filter((m) => m.kind === "Commit" || m.kind === "StreamCommit") as unknown as { endLsn: bigint }[];
    const lastEnd = ends[ends.length - 1]!.endLsn;
    const [s] = await cluster.query<{ lsn: string }>("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [slot]);
    const [hi, lo] = s!.lsn.split("/");
    expect((BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`)).toBe(lastEnd);

    // decode --changes: tail's typed lines from the file.
    const d = await run(["decode", file, "--changes", "--transactions"]);
    expect(d.code, d.stderr).toBe(0);
    const lines = d.stdout.trim().split("\n").map(parseExact);
    const [first] = lines.filter((l) => l.action === "I");
    expect(value(first, "id")).toBe("-9223372036854775808");
    expect(value(first, "n")).toBe(NUM);
    expect(value(first, "doc")).toEqual({ k: "18446744073709551616" });
    expect(first.lsn).toBeUndefined(); // a capture has no per-message positions
    expect(lines.find((l) => l.action === "M")).toMatchObject({ transactional: true, prefix: "cap", content: "in the transaction" });
    const u = lines.find((l) => l.action === "U");
    expect(u.unchanged).toEqual(["note"]);
    expect(value(u, "n")).toBe("0");
    expect(lines.filter((l) => l.action === "B" && l.streamed === true)).toHaveLength(1);
    expect(lines.filter((l) => l.action === "I")).toHaveLength(1201);
    expect(lines.filter((l) => l.action === "D").map((l) => Number(value(l, "id", "identity")))).toEqual(Array.from({ length: 200 }, (_, i) => 1001 + i));

    // The same lines from both decoders, and the number formats.
    const base = await run(["decode", file, "--changes", "--transactions", "--backend", "baseline"]);
    expect(base.stdout).toBe(d.stdout);
    const strings = await run(["decode", file, "--changes", "--numbers-as-strings"]);
    expect(strings.stdout).toContain(`{"name":"id","type":"bigint","value":"-9223372036854775808"}`);
    expect(strings.stdout).toContain(`"value":"${NUM}"`);
    expect(d.stdout).toContain(`{"name":"id","type":"bigint","value":-9223372036854775808}`);
    const pretty = await run(["decode", file, "--changes", "--format", "pretty"]);
    expect(pretty.stdout.split("\n").slice(0, 5)).toEqual(['{', '  "action": "I",', expect.stringMatching(/^ {2}"xid": \d+,$/), expect.stringMatching(/^ {2}"timestamp": "/), '  "schema": "public",']);
    expect(pretty.stdout).toContain('    {"name": "id", "type": "bigint", "value": -9223372036854775808},');
  });

  it("writes the server's bytes (.gz), stops at --max-messages, acknowledges only whole transactions", async () => {
    const slot = "cap_bytes";
    await cluster.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [slot]);
    await cluster.query(`INSERT INTO cap (id, n) VALUES (5001, 1), (5002, 2), (5003, 3)`);
    const [before] = await cluster.query<{ lsn: string }>("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [slot]);
    const file = join(tmp, "bytes.bin.gz");
    // Begin, Relation, Insert, Insert: the transaction is cut short.
    const r = await run(["capture", file, "-c", cluster.connectionString, "--publication", "p_cap", "--slot", slot, "--max-messages", "4"]);
    expect(r.code, r.stderr).toBe(0);
    const captured = decodeCapture(gunzipSync(readFileSync(file)));
    expect(captured).toHaveLength(4);
    // What the SQL interface returns for the same slot (not advanced: the transaction was not finished).
    const [after] = await cluster.query<{ lsn: string }>("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [slot]);
    expect(after!.lsn).toBe(before!.lsn);
    const peeked = await peekChanges(cluster, slot, { proto_version: "2", publication_names: "p_cap", streaming: "on" });
    expect(peeked.map((p) => p.data).slice(0, 4)).toEqual(captured.map((c) => new Uint8Array(c)));
    expect(peeked).toHaveLength(6); // ... Insert, Commit
  });

  it("--seconds ends an idle capture; errors are one line with a hint", async () => {
    const file = join(tmp, "idle.bin");
    const t0 = Date.now();
    const r = await run(["capture", file, "-c", cluster.connectionString, "--publication", "p_cap", "--seconds", "1"]);
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(readFileSync(file)).toHaveLength(0);
    const e = await run(["capture", file, "-c", cluster.connectionString, "--publication", "p_cap", "--slot", "nope"]);
    expect(e.code).toBe(1);
    expect(e.stderr.trim()).toMatch(/^pgoutput-wasm: replication slot "nope" does not exist \(hint: .*--create-slot/);
    const u = await run(["capture", "-c", cluster.connectionString]);
    expect(u.code).toBe(2);
  });
});

/** The messages of the complete frames of a capture being written (a write may be under way at its end). */
function messagesSoFar(file: string): PgoutputMessage[] {
  const bytes = new Uint8Array(readFileSync(file));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at + 4 <= bytes.length && at + 4 + view.getUint32(at) <= bytes.length) at += 4 + view.getUint32(at);
  return [...(new BaselineDecoder().decodeFramed(bytes.subarray(0, at)) as Iterable<PgoutputMessage>)].map((m) => m.materialize() as unknown as PgoutputMessage);
}

/** confirmed_flush_lsn of a slot. */
async function confirmed(slot: string): Promise<bigint> {
  const [s] = await cluster.query<{ lsn: string }>("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [slot]);
  return parseLsn(s!.lsn);
}

/** The end LSN of the last transaction a capture's messages complete (0 when none). */
function lastEnd(msgs: PgoutputMessage[]): bigint {
  const ends = msgs.map((m) => transactionEnd(m)).filter((e) => e !== undefined);
  return ends.length === 0 ? 0n : ends[ends.length - 1]!;
}

const SAME_AS_CAPTURE = { proto_version: "2", publication_names: "p_cap", streaming: "on" }; // what capture asks of PostgreSQL 15 by default

describe("capture through the pipeline (stream → capture format → file sink)", () => {
  it("the file holds exactly the server's messages, and the slot is acknowledged as they are flushed, while the capture runs", async () => {
    const slot = "cap_flow";
    // A twin slot created at the same point, read with the SQL interface: what the server sends for the same changes.
    await cluster.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [slot]);
    await cluster.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [`${slot}_peek`]);
    const file = join(tmp, "flow.bin");
    const cap = start(["capture", file, "-c", cluster.connectionString, "--publication", "p_cap", "--slot", slot]);
    await waitStreaming(cluster, slot);
    const w = await cluster.connect();
    try {
      for (let t = 0; t < 5; t++) await tx(w, `INSERT INTO cap (id, n, note) SELECT g, g, 'flow' FROM generate_series(${7000 + t * 10}, ${7004 + t * 10}) g`, `UPDATE cap SET n = -n WHERE id = ${7000 + t * 10}`);
      await tx(w, "DELETE FROM cap WHERE id BETWEEN 7000 AND 7050");
    } finally {
      await w.end();
    }
    const peeked = (await peekChanges(cluster, `${slot}_peek`, SAME_AS_CAPTURE)).map((p) => p.data);
    expect(peeked.length).toBeGreaterThan(40);
    const deadline = Date.now() + 20_000;
    while (messagesSoFar(file).length < peeked.length) {
      if (Date.now() > deadline) throw new Error("the capture did not record the workload");
      await sleep(50);
    }
    const end = lastEnd(messagesOf(file));
    // Acknowledged while the capture still runs: each transaction once flushed to the file (not only at the end).
    // (It may go past `end`: with nothing unconfirmed the stream confirms keepalive positions, and the server
    // writes WAL of its own, e.g. the running-transactions record every 15 s.)
    while ((await confirmed(slot)) < end) {
      if (Date.now() > deadline) throw new Error(`the slot stayed at ${await confirmed(slot)}, the file ends at ${end}`);
      await sleep(100);
    }
    expect(cap.child.exitCode).toBeNull();
    expect(decodeCapture(readFileSync(file)).map((c) => new Uint8Array(c))).toEqual(peeked);
    cap.child.kill("SIGINT");
    const r = await cap.exited;
    expect(r.code, r.stderr).toBe(0);
    expect(await confirmed(slot)).toBeGreaterThanOrEqual(end);
    // …but never past a transaction the file lacks: the twin slot has none after the file's last one.
    expect((await peekChanges(cluster, `${slot}_peek`, SAME_AS_CAPTURE)).length).toBe(peeked.length);
    await cluster.query("SELECT pg_drop_replication_slot($1)", [`${slot}_peek`]);
  });

  it("killed (kill -9) while recording: the slot never passes what the file holds", async () => {
    const slot = "cap_kill";
    const file = join(tmp, "killed.bin");
    const cap = start(["capture", file, "-c", cluster.connectionString, "--publication", "p_cap", "--slot", slot, "--create-slot"]);
    await waitStreaming(cluster, slot);
    const w = await cluster.connect();
    let writing = true;
    const load = (async () => {
      for (let t = 0; writing && t < 2000; t++) await w.query(`INSERT INTO cap (id, n) VALUES (${20000 + t}, ${t})`);
    })();
    try {
      const deadline = Date.now() + 20_000;
      while (messagesSoFar(file).filter((m) => m.kind === "Commit").length < 30) {
        if (Date.now() > deadline) throw new Error("capture did not record 30 transactions");
        await sleep(50);
      }
      await sleep(1200); // a status update or more goes out meanwhile
      cap.child.kill("SIGKILL");
      await cap.exited;
    } finally {
      writing = false;
      await load;
      await w.end();
    }
    const acked = await confirmed(slot);
    const inFile = lastEnd(messagesSoFar(file));
    expect(acked).toBeGreaterThan(0n);
    expect(acked <= inFile, `slot at ${acked}, file up to ${inFile}`).toBe(true);
    await cluster.query("SELECT pg_drop_replication_slot($1)", [slot]);
  });

  it("--max-messages cuts inside the second transaction: the file holds the cut, the slot only the first transaction", async () => {
    const slot = "cap_cut";
    await cluster.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [slot]);
    await cluster.query("INSERT INTO cap (id, n) VALUES (8001, 1), (8002, 2), (8003, 3)");
    await cluster.query("INSERT INTO cap (id, n) VALUES (8004, 4), (8005, 5), (8006, 6)");
    const file = join(tmp, "cut.bin");
    // Begin, Relation, Insert x3, Commit; then Begin, Insert: 8.
    const r = await run(["capture", file, "-c", cluster.connectionString, "--publication", "p_cap", "--slot", slot, "--max-messages", "8"]);
    expect(r.code, r.stderr).toBe(0);
    const msgs = messagesOf(file);
    expect(msgs.map((m) => m.kind)).toEqual(["Begin", "Relation", "Insert", "Insert", "Insert", "Commit", "Begin", "Insert"]);
    expect(await confirmed(slot)).toBe(lastEnd(msgs.slice(0, 6)));
    // The same slot, --ack none: recorded, not acknowledged.
    const again = await run(["capture", join(tmp, "cut-none.bin"), "-c", cluster.connectionString, "--publication", "p_cap", "--slot", slot, "--max-messages", "5", "--ack", "none"]);
    expect(again.code, again.stderr).toBe(0);
    expect(messagesOf(join(tmp, "cut-none.bin")).map((m) => m.kind)).toEqual(["Begin", "Relation", "Insert", "Insert", "Insert"]);
    expect(await confirmed(slot)).toBe(lastEnd(msgs.slice(0, 6)));
    await cluster.query("SELECT pg_drop_replication_slot($1)", [slot]);
  });
});

describe("tail --sink file:PATH", () => {
  it("appends the lines to the file, acknowledges up to its last transaction; the next run appends after it, nothing twice", async () => {
    const slot = "tail_sink";
    const file = join(tmp, "tail.jsonl");
    const args = ["tail", "-c", cluster.connectionString, "--publication", "p_cap", "--slot", slot, "--transactions", "--sink", `file:${file}`];
    const w = await cluster.connect();
    try {
      for (const [runs, from] of [[1, 9001], [2, 9004]] as const) {
        const t = start([...args, ...(runs === 1 ? ["--create-slot"] : [])]);
        await waitStreaming(cluster, slot);
        await tx(w, `INSERT INTO cap (id, n) SELECT g, g FROM generate_series(${from}, ${from + 2}) g`);
        const deadline = Date.now() + 20_000;
        while ((readFileSync(file, "utf8").match(/"action":"C"/g) ?? []).length < runs) {
          if (Date.now() > deadline) throw new Error(`tail did not write run ${runs}'s transaction`);
          await sleep(50);
        }
        t.child.kill("SIGINT");
        const r = await t.exited;
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toBe(""); // to the file, not stdout
      }
    } finally {
      await w.end();
    }
    const lines = readFileSync(file, "utf8").trimEnd().split("\n").map(parseExact);
    expect(lines.map((l) => l.action)).toEqual(["B", "I", "I", "I", "C", "B", "I", "I", "I", "C"]);
    expect(lines.filter((l) => l.action === "I").map((l) => value(l, "id"))).toEqual(["9001", "9002", "9003", "9004", "9005", "9006"]);
    expect(await confirmed(slot)).toBeGreaterThanOrEqual(parseLsn(lines[lines.length - 1].nextlsn));
    await cluster.query("SELECT pg_drop_replication_slot($1)", [slot]);
  });
});

describe("capture without a connection", () => {
  it("records the embedded PostgreSQL 18 demo; decoded, it has every kind of change", async () => {
    const file = join(tmp, "demo.bin.gz");
    const r = await run(["capture", file]);
    expect(r.code, r.stderr).toBe(0);
    const kinds = new Set(messagesOf(file).map((m) => m.kind));
    for (const k of ["Begin", "Commit", "Relation", "Type", "Insert", "Update", "Delete", "Truncate", "Message", "StreamStart", "StreamStop", "StreamCommit", "StreamAbort"]) {
      expect(kinds.has(k as never), k).toBe(true);
    }
    const d = await run(["decode", file, "--changes"]);
    const lines = d.stdout.trim().split("\n").map(parseExact);
    expect(lines.filter((l) => l.table === "ledger" && l.action === "I" && String(value(l, "memo")).startsWith("bulk row"))).toHaveLength(600);
    expect(lines.some((l) => l.action === "I" && String(value(l, "memo") ?? "").startsWith("rolled back"))).toBe(false);
    expect(lines.some((l) => l.action === "U" && l.unchanged?.[0] === "notes")).toBe(true);
  });
});
