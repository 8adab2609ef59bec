/**
 * The demo of `tail` and `capture` without a connection: a schema, a
 * publication, and a workload that runs while the stream is read — inserts
 * (int8 extremes, a 40-digit numeric, an enum, an array, jsonb, bytea, a
 * TOASTed text), updates (one leaving the TOASTed column unchanged, one
 * changing the primary key, one on a REPLICA IDENTITY FULL table),
 * logical decoding messages, deletes, a transaction large enough to be
 * streamed (with a subtransaction rolled back inside it), a truncate.
 */

/** A way to run SQL: a `pg` Client's `query`. */
export type Query = (sql: string) => Promise<{ rows: Record<string, unknown>[] }>;

export const DEMO_PUBLICATION = "pgoutput_wasm_demo";
export const DEMO_SLOT = "pgoutput_wasm_demo";

/** The long note of account 1: stored out of line (STORAGE EXTERNAL, > 2 kB), so updates that keep it send it as unchanged TOAST. */
export const DEMO_NOTE_SQL = "repeat('A long note, stored out of line by TOAST. ', 100)";

export const DEMO_SETUP_SQL = `
CREATE SCHEMA demo;
CREATE TYPE demo.mood AS ENUM ('happy', 'curious', 'sad');
CREATE TABLE demo.account (
  id bigint PRIMARY KEY,
  owner text NOT NULL,
  balance numeric(40,10),
  mood demo.mood,
  tags text[],
  profile jsonb,
  avatar bytea,
  opened timestamptz,
  notes text
);
ALTER TABLE demo.account ALTER COLUMN notes SET STORAGE EXTERNAL;
CREATE TABLE demo.ledger (
  id bigserial PRIMARY KEY,
  account_id bigint NOT NULL,
  amount numeric NOT NULL,
  memo text
);
ALTER TABLE demo.ledger REPLICA IDENTITY FULL;
CREATE PUBLICATION ${DEMO_PUBLICATION} FOR TABLES IN SCHEMA demo;
`;

export interface DemoStep {
  /** What it does, in a few words. */
  note: string;
  /** Statements run in one transaction (or alone with `bare`). */
  sql: string[];
  /** Run without BEGIN/COMMIT (and no xid): a non-transactional message. */
  bare?: boolean;
}

/** Rows of the large transaction (enough to pass logical_decoding_work_mem = 64kB and be streamed). */
export const DEMO_BULK_ROWS = 600;

export const DEMO_STEPS: readonly DemoStep[] = [
  {
    note: "insert three accounts: int8 extremes, a 40-digit numeric, enum, array, jsonb, bytea, a TOASTed note",
    sql: [
      `INSERT INTO demo.account (id, owner, balance, mood, tags, profile, avatar, opened, notes) VALUES
        (1, 'alice', 123456789012345678901234567890.0123456789, 'happy', '{vip,"early adopter"}',
         '{"plan": "pro", "quota": 9007199254740993}', '\\xdeadbeef', '2024-02-29 12:34:56.789012+00', ${DEMO_NOTE_SQL}),
        (9223372036854775807, 'max', 99999999999999999999999999999.9999999999, 'curious', '{}', NULL, NULL, '1999-12-31 23:59:59+00', 'short'),
        (-9223372036854775808, 'min', -0.0000000001, 'sad', NULL, '[]', '\\x00', NULL, NULL)`,
    ],
  },
  {
    note: "update alice's balance: her TOASTed note is not sent (unchanged)",
    sql: [`UPDATE demo.account SET balance = balance + 1, mood = 'curious' WHERE id = 1`],
  },
  {
    note: "two ledger rows and a transactional message",
    sql: [
      `INSERT INTO demo.ledger (account_id, amount, memo) VALUES (1, 10.50, 'deposit'), (9223372036854775807, -3.25, 'fee')`,
      `SELECT pg_logical_emit_message(true, 'demo', 'two ledger rows')`,
    ],
  },
  { note: "double the fee (REPLICA IDENTITY FULL: the old row is sent)", sql: [`UPDATE demo.ledger SET amount = amount * 2 WHERE memo = 'fee'`] },
  { note: "a message outside any transaction", sql: [`SELECT pg_logical_emit_message(false, 'demo', 'hello from outside a transaction')`], bare: true },
  { note: "change alice's primary key 1 -> 2 (identity: the old key)", sql: [`UPDATE demo.account SET id = 2, owner = 'alice (moved)' WHERE id = 1`] },
  { note: "delete the min account", sql: [`DELETE FROM demo.account WHERE id = -9223372036854775808`] },
  {
    note: `a large transaction, streamed while in progress: ${DEMO_BULK_ROWS} ledger rows, and a savepoint rolled back`,
    sql: [
      `INSERT INTO demo.ledger (account_id, amount, memo) SELECT 2, g / 100.0, 'bulk row ' || g || ' ' || repeat('.', 40) FROM generate_series(1, ${DEMO_BULK_ROWS}) g`,
      `SAVEPOINT undo`,
      `INSERT INTO demo.ledger (account_id, amount, memo) SELECT 2, -g, 'rolled back ' || g || ' ' || repeat('.', 40) FROM generate_series(1, 300) g`,
      `ROLLBACK TO SAVEPOINT undo`,
      `UPDATE demo.account SET balance = 0 WHERE id = 2`,
    ],
  },
  { note: "truncate the ledger", sql: [`TRUNCATE demo.ledger`] },
  { note: "one more account", sql: [`INSERT INTO demo.account (id, owner, balance, mood, opened) VALUES (3, 'carol', 0.1, 'happy', '2025-01-01 00:00:00+00')`] },
];

export interface WorkloadResult {
  /** Xids (32-bit, as pgoutput sends them) of the committed transactions, in order. */
  xids: number[];
  /** The last one: the demo is printed once its commit is. */
  lastXid: number;
}

/** Creates the demo schema and publication. */
export async function setupDemo(query: Query): Promise<void> {
  await query(DEMO_SETUP_SQL);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs the demo steps one after another, `pauseMs` apart; `onStep` hears of each as it starts. */
export async function runDemoWorkload(query: Query, options: { pauseMs?: number; onStep?: (step: DemoStep, index: number) => void } = {}): Promise<WorkloadResult> {
  const pause = options.pauseMs ?? 150;
  const xids: number[] = [];
  for (let i = 0; i < DEMO_STEPS.length; i++) {
    const step = DEMO_STEPS[i]!;
    if (i > 0 && pause > 0) await sleep(pause);
    options.onStep?.(step, i);
    if (step.bare) {
      for (const sql of step.sql) await query(sql);
      continue;
    }
    await query("BEGIN");
    try {
      for (const sql of step.sql) await query(sql);
      const res = await query("SELECT (pg_current_xact_id()::text::numeric % 4294967296)::text AS xid");
      await query("COMMIT");
      xids.push(Number(res.rows[0]!.xid));
    } catch (e) {
      await query("ROLLBACK").catch(() => {});
      throw e;
    }
  }
  return { xids, lastXid: xids[xids.length - 1]! };
}
