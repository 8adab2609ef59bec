// SQL workloads for the benchmark corpora (see devkit/capture/corpus.ts).
//
// Four workloads, each run on its own connection, concurrently within a
// round (so that, as on a busy server, small transactions commit between the
// streamed blocks of a large one):
//
//   wide  bulk transactions on a 21-column table of mixed types (ints,
//         floats, numeric, text, varchar, bool, date, timestamp(tz), uuid,
//         jsonb, bytea, int4[] and text[] arrays, interval, an enum, NULLs),
//         with bulk updates, deletes, a rolled-back savepoint and now and then
//         an aborted transaction (Stream Abort in the streaming variants).
//   oltp  many single-row transactions (insert / update / delete) on a narrow
//         table (id, counter, small text, timestamptz): a DO block that
//         COMMITs after every statement, so each is its own transaction.
//   docs  10-100 KB text documents: most bodies incompressible (md5 hex, so
//         stored out of line uncompressed), a quarter repetitive (compressed);
//         a STORAGE EXTERNAL `notes` column; many updates that leave the
//         documents alone (unchanged TOAST: 'u' in the new tuple), a few that
//         rewrite the body, and deletes.
//   misc  a REPLICA IDENTITY FULL table (updates with the whole old row 'O',
//         deletes), truncates (several relations, CASCADE, RESTART IDENTITY),
//         logical messages (transactional, non-transactional, binary), and a
//         few transactions with a replication origin (Origin messages).
//
// All data derives from counters (md5 of the row number, arithmetic), never
// from random() or now(), so two runs produce the same rows; only xids, LSNs
// and commit times differ (and, with the concurrency, the interleaving).
//
// A workload's size in a round is given in "units" (wide: inserted rows,
// oltp: transactions, docs: inserted documents, misc: ledger operations);
// devkit/capture/corpus.ts measures the bytes each workload produced per unit and
// sizes the next round to keep the byte mix near MIX.

export type WorkloadName = "wide" | "oltp" | "docs" | "misc";

export const WORKLOADS: readonly WorkloadName[] = ["wide", "oltp", "docs", "misc"];

/** Target share of message bytes per workload. */
export const MIX: Readonly<Record<WorkloadName, number>> = { wide: 0.4, oltp: 0.25, docs: 0.25, misc: 0.1 };

/** First guesses of message bytes per unit (text format), refined from measurements. */
export const INITIAL_BYTES_PER_UNIT: Readonly<Record<WorkloadName, number>> = {
  wide: 1000,
  oltp: 120,
  docs: 75_000,
  misc: 450,
};

export const SCHEMA = "bench";
export const PUBLICATION = "corpus_pub";
export const ORIGIN = "corpus_upstream";

/** Published tables and the workload each belongs to. */
export const TABLES: Readonly<Record<string, WorkloadName>> = {
  wide: "wide",
  oltp_events: "oltp",
  docs: "docs",
  ledger: "misc",
  stage_parent: "misc",
  stage_child: "misc",
};

const S = SCHEMA;

/** Live window sizes: older rows are deleted so the tables stay small. */
const WIDE_WINDOW = 20_000;
const DOCS_WINDOW = 150;
const SEED_OLTP = 5_000;
const SEED_DOCS = 40;
const SEED_LEDGER = 500;

// ------------------------------------------------------------ expressions

/** Text of a 32-bit signed int taken from 8 hex digits of an md5. */
const hexInt32 = (hex: string) => `('x' || ${hex})::bit(32)::int`;

/** Column expressions of a wide row, for row number `g` (bigint), with h = md5(g), h2 = md5(g || 'b'). */
const WIDE_COLUMNS: [name: string, type: string, expr: string][] = [
  ["id", "bigint PRIMARY KEY", "g"],
  ["c_int2", "int2", "((('x' || substr(h, 1, 4))::bit(16)::int) - 32768)::int2"],
  ["c_int4", "int4", hexInt32("substr(h, 5, 8)")],
  ["c_int8", "int8", "('x' || substr(h, 9, 16))::bit(64)::bigint"],
  ["c_float4", "float4", "CASE WHEN g % 17 = 0 THEN NULL ELSE ((g % 100000)::float4 / 7) END"],
  ["c_float8", "float8", `${hexInt32("substr(h2, 1, 8)")}::float8 / 1000 * pi()`],
  ["c_numeric", "numeric(18,4)", `(${hexInt32("substr(h2, 9, 8)")}::numeric * 1000 + (g % 10000)) / 10000`],
  ["c_text", "text", "CASE WHEN g % 10 = 0 THEN 'Zoë ' ELSE 'name ' END || substr(h, 1, 4 + (g % 25)::int)"],
  ["c_varchar", "varchar(32)", "upper(substr(h2, 1, 6 + (g % 11)::int))"],
  ["c_bool", "bool", "CASE WHEN g % 11 = 0 THEN NULL ELSE g % 3 = 0 END"],
  ["c_date", "date", "DATE '2000-01-01' + (g % 9000)::int"],
  ["c_timestamp", "timestamp", "TIMESTAMP '2020-01-01 00:00:00' + g * interval '37 seconds' + (g % 1000000) * interval '1 microsecond'"],
  ["c_timestamptz", "timestamptz", "TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * interval '1.234567 seconds'"],
  ["c_uuid", "uuid", "h2::uuid"],
  [
    "c_jsonb",
    "jsonb",
    `CASE WHEN g % 13 = 0 THEN NULL ELSE jsonb_build_object(
       'id', g, 'sku', substr(h, 1, 10), 'price', (g % 100000) / 100.0,
       'tags', jsonb_build_array('t' || (g % 5), 'u' || (g % 7)),
       'dims', jsonb_build_object('w', g % 100, 'h', g % 37, 'ok', g % 2 = 0),
       'note', CASE WHEN g % 3 = 0 THEN 'line\nbreak "quoted"' ELSE NULL END) END`,
  ],
  ["c_bytea", "bytea", "decode(substr(h || h2, 1, 8 + (g % 25)::int * 2), 'hex')"],
  ["c_int4_arr", "int4[]", "(SELECT array_agg(((g * j) % 10007)::int4) FROM generate_series(1, 1 + (g % 8)::int) j)"],
  [
    "c_text_arr",
    "text[]",
    `ARRAY['tag' || (g % 13), substr(h2, 1, 6), CASE WHEN g % 4 = 0 THEN 'with space' WHEN g % 4 = 1 THEN 'q"uote' ELSE NULL END]`,
  ],
  ["c_interval", "interval", "make_interval(days => (g % 30)::int, secs => (g % 86400)::float8 / 10)"],
  ["c_mood", `${S}.mood`, `(enum_range(NULL::${S}.mood))[1 + (g % 4)::int]`],
  ["c_note", "text", "CASE WHEN g % 5 = 0 THEN NULL ELSE 'note ' || repeat(substr(h, 1, 8), (g % 4)::int) END"],
];

function wideInsert(from: number, to: number): string {
  return `INSERT INTO ${S}.wide (${WIDE_COLUMNS.map((c) => c[0]).join(", ")})
SELECT ${WIDE_COLUMNS.map((c) => c[2]).join(",\n  ")}
FROM generate_series(${from}::bigint, ${to}::bigint) g, LATERAL (SELECT md5(g::text) AS h, md5(g::text || 'b') AS h2) m`;
}

/** Document length in bytes (10-100 KB) and body, for document number `g` (int). */
const DOC_LEN = `(10240 + (('x' || substr(md5(g::text || 'len'), 1, 6))::bit(24)::int % 92161))`;
const DOC_WORDS = `ARRAY['lorem', 'ipsum', 'dolor', 'sit', 'amet', 'consectetur', 'adipiscing', 'elit', 'sed', 'do',
  'eiusmod', 'tempor', 'incididunt', 'ut', 'labore', 'et', 'dolore', 'magna', 'aliqua.', 'Enim', 'ad', 'minim', 'veniam,',
  'quis', 'nostrud', 'exercitation', 'ullamco', 'laboris', 'nisi', 'aliquip', 'ex', 'ea']`;
/**
 * g % 16 in 0-10: md5 hex words, incompressible for pglz: stored out of line
 * uncompressed. 11-14: random Latin words, compressed but still out of line.
 * 15: one sentence repeated (a quarter of the length), compressed so well
 * that it stays inline: updates send it again in full.
 */
const DOC_BODY = `CASE
    WHEN g % 16 = 15 THEN repeat('Lorem ipsum dolor sit amet, document ' || g || ', consectetur adipiscing elit. ', ${DOC_LEN} / 288)
    WHEN g % 16 >= 11 THEN (SELECT string_agg((${DOC_WORDS})[1 + ('x' || substr(md5(g::text || '.' || j), 1, 2))::bit(8)::int % 32], ' ')
      FROM generate_series(1, ${DOC_LEN} / 7) j)
    ELSE (SELECT string_agg(md5(g::text || ':' || j), CASE WHEN j % 12 = 0 THEN E'\\n' ELSE ' ' END) FROM generate_series(1, ${DOC_LEN} / 33) j)
  END`;
const DOC_NOTES = `CASE WHEN g % 3 = 0 THEN (SELECT string_agg(md5(j || '/' || g), '') FROM generate_series(1, 300 + g % 300) j) END`;

function docsInsert(from: number, to: number): string {
  return `INSERT INTO ${S}.docs (id, title, version, updated_at, tags, body, notes)
SELECT g, 'Document ' || g || ': ' || substr(md5(g::text), 1, 12), 1,
  TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * interval '1 minute',
  ARRAY['kind' || (g % 6), 'lang-' || (g % 3)],
  ${DOC_BODY},
  ${DOC_NOTES}
FROM generate_series(${from}, ${to}) g`;
}

function ledgerInsert(fromExpr: string, toExpr: string): string {
  return `INSERT INTO ${S}.ledger (account_id, owner, balance, currency, status, opened, updated_at, meta)
SELECT g, 'owner ' || substr(md5(g::text), 1, 10), (g % 100000) / 100.0,
  (ARRAY['EUR', 'USD', 'JPY', 'GBP'])[1 + abs(g % 4)], 'open', DATE '2010-01-01' + abs(g % 5000),
  TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * interval '1 second',
  jsonb_build_object('tier', g % 3, 'flags', jsonb_build_array(g % 2 = 0, g % 5 = 0))
FROM generate_series(${fromExpr}, ${toExpr}) g`;
}

// -------------------------------------------------------------- schema

/** DDL and seed rows; run before the publication and slot exist (seeds are not in the corpus). */
export function setupSql(): string[] {
  return [
    `CREATE SCHEMA ${S}`,
    `CREATE TYPE ${S}.mood AS ENUM ('calm', 'busy', 'angry', 'sleepy')`,
    `CREATE TABLE ${S}.wide (${WIDE_COLUMNS.map((c) => `${c[0]} ${c[1]}`).join(", ")})`,
    `CREATE TABLE ${S}.oltp_events (id bigint PRIMARY KEY, counter int NOT NULL, label text, updated_at timestamptz NOT NULL)`,
    `CREATE TABLE ${S}.docs (id int PRIMARY KEY, title text NOT NULL, version int NOT NULL, updated_at timestamptz NOT NULL,
       tags text[], body text, notes text)`,
    `ALTER TABLE ${S}.docs ALTER COLUMN notes SET STORAGE EXTERNAL`,
    `CREATE TABLE ${S}.ledger (account_id int PRIMARY KEY, owner text NOT NULL, balance numeric(14,2) NOT NULL,
       currency char(3) NOT NULL, status text, opened date, updated_at timestamptz, meta jsonb)`,
    `ALTER TABLE ${S}.ledger REPLICA IDENTITY FULL`,
    `CREATE TABLE ${S}.stage_parent (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, label text NOT NULL)`,
    `CREATE TABLE ${S}.stage_child (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
       parent_id int NOT NULL REFERENCES ${S}.stage_parent (id), qty int NOT NULL, at timestamptz NOT NULL)`,
    `INSERT INTO ${S}.oltp_events SELECT g, 0, 'seed-' || substr(md5(g::text), 1, 8),
       TIMESTAMPTZ '2024-01-01 00:00:00+00' FROM generate_series(1, ${SEED_OLTP}) g`,
    docsInsert(1, SEED_DOCS),
    ledgerInsert("1", String(SEED_LEDGER)),
    `SELECT pg_replication_origin_create('${ORIGIN}')`,
    `ANALYZE`,
    `CREATE PUBLICATION ${PUBLICATION} FOR TABLE ${Object.keys(TABLES).map((t) => `${S}.${t}`).join(", ")}`,
  ];
}

// --------------------------------------------------------------- rounds

/** Counters carried from round to round (all workloads' positions). */
export class WorkloadState {
  round = 0;
  // wide: ids below wideNext are used (inserted, or skipped by a rollback).
  wideNext = 1;
  wideTxns = 0;
  // oltp: live ids are [oltpLo, oltpHi); oltpSeq numbers the transactions.
  oltpLo = 1;
  oltpHi = SEED_OLTP + 1;
  oltpSeq = 0;
  // docs: live ids are [docsLo, docsNext).
  docsLo = 1;
  docsNext = SEED_DOCS + 1;
  docsSeq = 0;
  // misc: live ledger accounts are [ledgerLo, ledgerHi).
  ledgerLo = 1;
  ledgerHi = SEED_LEDGER + 1;
  ledgerSeq = 0;
  messageSeq = 0;
}

/** What one workload does in a round: SQL statements run one after another on its connection. */
export interface RoundWork {
  statements: string[];
  /** Statements for the origin connection (misc only), run after `statements`. */
  originStatements?: string[];
  /** Transactions that commit, as planned (for reports; empty ones are skipped by pgoutput). */
  transactions: number;
}

/** Transactions of a DO loop over i in [start, end] that COMMITs when i % every = 0 and once more at the end. */
function loopTransactions(start: number, end: number, every: number): number {
  if (end < start) return 0;
  const commits = Math.floor(end / every) - Math.floor((start - 1) / every);
  return commits + (end % every === 0 ? 0 : 1);
}

const WIDE_TXN_SIZES = [500, 1500, 3000, 800, 2000, 250, 4000, 1200];

/** `rows` inserted wide rows in bulk transactions, plus updates and deletes. */
export function wideRound(st: WorkloadState, rows: number): RoundWork {
  const out: string[] = [];
  let txns = 0;
  let left = Math.max(0, Math.round(rows));
  const firstId = st.wideNext;
  while (left > 0) {
    const size = Math.min(left, WIDE_TXN_SIZES[st.wideTxns % WIDE_TXN_SIZES.length]!);
    const a = st.wideNext;
    const b = a + size - 1;
    if (st.wideNext === firstId && st.round % 2 === 0 && size >= 100) {
      // First transaction of every other round: a savepoint whose 300 rows
      // are rolled back (their ids are skipped); streamed, that is a Stream
      // Abort of the sub-transaction.
      const mid = a + Math.floor(size / 2);
      out.push(
        `BEGIN; ${wideInsert(a, mid - 1)}; SAVEPOINT sp; ${wideInsert(b + 1, b + 300)}; ` +
          `ROLLBACK TO SAVEPOINT sp; ${wideInsert(mid, b)}; COMMIT`,
      );
      st.wideNext = b + 301;
    } else {
      out.push(`BEGIN; ${wideInsert(a, b)}; COMMIT`);
      st.wideNext = b + 1;
    }
    st.wideTxns++;
    txns++;
    left -= size;
  }
  if (rows >= 1) {
    // Bulk update of a fifth of this round's rows: every column sent again.
    const n = Math.max(1, Math.floor(rows / 5));
    out.push(
      `BEGIN; UPDATE ${S}.wide SET c_float8 = c_float8 + 1, c_int4 = c_int4 / 2, c_timestamptz = c_timestamptz + interval '1 day',
         c_jsonb = c_jsonb || jsonb_build_object('rev', ${st.round}), c_mood = 'busy'
       WHERE id BETWEEN ${firstId} AND ${firstId + n - 1}; COMMIT`,
    );
    txns++;
    // Keep a window of rows: deletes send only the key.
    const cut = st.wideNext - WIDE_WINDOW;
    if (cut > 1) {
      out.push(`BEGIN; DELETE FROM ${S}.wide WHERE id < ${cut}; COMMIT`);
      txns++;
    }
    // Now and then a large transaction that aborts (streamed and then Stream
    // Abort on PostgreSQL 15 with streaming; nothing otherwise).
    if (st.round % 3 === 1) {
      const a = st.wideNext;
      out.push(`BEGIN; ${wideInsert(a, a + 199)}; ROLLBACK`);
      st.wideNext = a + 200;
    }
  }
  return { statements: out, transactions: txns };
}

/** `n` single-row transactions on the narrow table: 50% inserts, 35% updates, 15% deletes. */
export function oltpRound(st: WorkloadState, n: number): RoundWork {
  n = Math.max(0, Math.round(n));
  if (n === 0) return { statements: [], transactions: 0 };
  const start = st.oltpSeq + 1;
  const end = st.oltpSeq + n;
  // The same classification as in the DO block, to know the live range after it.
  let inserts = 0;
  let deletes = 0;
  for (let i = start; i <= end; i++) {
    const k = (i * 7) % 20;
    if (k < 10) inserts++;
    else if (k >= 17) deletes++;
  }
  const sql = `DO $corpus$
DECLARE
  lo bigint := ${st.oltpLo};
  hi bigint := ${st.oltpHi};
  k int;
BEGIN
  FOR i IN ${start}..${end} LOOP
    k := (i * 7) % 20;
    IF k < 10 THEN
      INSERT INTO ${S}.oltp_events VALUES (hi, (i % 1000)::int, 'evt-' || substr(md5(i::text), 1, 6 + (i % 19)::int),
        TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * interval '1.5 seconds');
      hi := hi + 1;
    ELSIF k < 17 THEN
      UPDATE ${S}.oltp_events SET counter = counter + 1,
          label = CASE WHEN i % 3 = 0 THEN 'upd-' || substr(md5(i::text), 1, 10) ELSE label END,
          updated_at = TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * interval '1.5 seconds'
        WHERE id = lo + (i * 2654435761) % (hi - lo);
    ELSE
      DELETE FROM ${S}.oltp_events WHERE id = lo;
      lo := lo + 1;
    END IF;
    COMMIT;
  END LOOP;
END
$corpus$`;
  st.oltpSeq = end;
  st.oltpHi += inserts;
  st.oltpLo += deletes;
  return { statements: [sql], transactions: n };
}

/** `n` inserted 10-100 KB documents, with metadata-only updates, body rewrites and deletes. */
export function docsRound(st: WorkloadState, n: number): RoundWork {
  n = Math.max(0, Math.round(n));
  const out: string[] = [];
  let txns = 0;
  // Inserts, 1-3 documents per transaction.
  let left = n;
  while (left > 0) {
    const size = Math.min(left, 1 + (st.docsNext % 3));
    out.push(`BEGIN; ${docsInsert(st.docsNext, st.docsNext + size - 1)}; COMMIT`);
    st.docsNext += size;
    left -= size;
    txns++;
  }
  // Updates that leave body and notes alone: unchanged TOAST ('u') for the
  // out-of-line ones; two per transaction.
  const updates = 4 * n + 8;
  const start = st.docsSeq + 1;
  const end = st.docsSeq + updates;
  st.docsSeq = end;
  out.push(`DO $corpus$
BEGIN
  FOR i IN ${start}..${end} LOOP
    UPDATE ${S}.docs SET version = version + 1, title = 'Document ' || id || ' rev ' || i,
        updated_at = TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * interval '1 minute'
      WHERE id = ${st.docsLo} + (i * 2654435761) % ${st.docsNext - st.docsLo};
    IF i % 2 = 0 THEN COMMIT; END IF;
  END LOOP;
  COMMIT;
END
$corpus$`);
  txns += loopTransactions(start, end, 2);
  // A few body rewrites (the new body is sent in full; notes stay 'u').
  const rewrites = Math.ceil(n / 5);
  for (let j = 0; j < rewrites; j++) {
    const id = st.docsLo + ((st.docsSeq + j * 7919) % (st.docsNext - st.docsLo));
    out.push(
      `BEGIN; UPDATE ${S}.docs SET body = body || E'\\nAppendix ' || ${st.round}, version = version + 1 WHERE id = ${id}; COMMIT`,
    );
    txns++;
  }
  // Keep a window of documents.
  const cut = st.docsNext - DOCS_WINDOW;
  if (cut > st.docsLo) {
    out.push(`BEGIN; DELETE FROM ${S}.docs WHERE id < ${cut}; COMMIT`);
    st.docsLo = cut;
    txns++;
  }
  return { statements: out, transactions: txns };
}

/**
 * `n` operations on the REPLICA IDENTITY FULL ledger (80% updates, 10%
 * inserts, 10% deletes, up to 4 per transaction, a transactional logical
 * message every 25), plus a fixed part: truncates, standalone and
 * non-transactional logical messages, and transactions with a replication
 * origin.
 */
export function miscRound(st: WorkloadState, n: number): RoundWork {
  n = Math.max(0, Math.round(n));
  const out: string[] = [];
  let txns = 0;
  const r = st.round;
  if (n > 0) {
    const start = st.ledgerSeq + 1;
    const end = st.ledgerSeq + n;
    let inserts = 0;
    let deletes = 0;
    for (let i = start; i <= end; i++) {
      if (i % 10 === 0) inserts++;
      else if (i % 10 === 5) deletes++;
    }
    out.push(`DO $corpus$
DECLARE
  lo int := ${st.ledgerLo};
  hi int := ${st.ledgerHi};
BEGIN
  FOR i IN ${start}..${end} LOOP
    IF i % 10 = 0 THEN
      ${ledgerInsert("hi", "hi")};
      hi := hi + 1;
    ELSIF i % 10 = 5 THEN
      DELETE FROM ${S}.ledger WHERE account_id = lo;
      lo := lo + 1;
    ELSE
      UPDATE ${S}.ledger SET balance = balance + ((i % 200) - 100) / 4.0,
          status = (ARRAY['open', 'active', 'frozen', 'review'])[1 + i % 4],
          updated_at = TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * interval '1 second'
        WHERE account_id = lo + (i * 2654435761) % (hi - lo);
    END IF;
    IF i % 25 = 0 THEN
      PERFORM pg_logical_emit_message(true, 'bench.audit', '{"op":"ledger","seq":' || i || ',"round":${r}}');
    END IF;
    IF i % 4 = 0 THEN COMMIT; END IF;
  END LOOP;
  COMMIT;
END
$corpus$`);
    st.ledgerSeq = end;
    st.ledgerHi += inserts;
    st.ledgerLo += deletes;
    txns += loopTransactions(start, end, 4);
  }
  // Truncates: two relations with RESTART IDENTITY, CASCADE, and a single one.
  const fill = `BEGIN; INSERT INTO ${S}.stage_parent (label) SELECT 'batch ${r}/' || g FROM generate_series(1, 8) g;
    INSERT INTO ${S}.stage_child (parent_id, qty, at) SELECT p.id, g, TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * interval '1 hour'
      FROM ${S}.stage_parent p, generate_series(1, 2) g; COMMIT`;
  out.push(fill, `BEGIN; TRUNCATE ${S}.stage_parent, ${S}.stage_child RESTART IDENTITY; COMMIT`);
  out.push(fill, `BEGIN; TRUNCATE ${S}.stage_parent CASCADE; COMMIT`);
  out.push(`BEGIN; TRUNCATE ${S}.stage_child; COMMIT`);
  txns += 5;
  // Logical messages: a transaction with only a message, a binary one, and
  // non-transactional ones (no Begin/Commit around them).
  const m = st.messageSeq;
  st.messageSeq += 10;
  out.push(
    `BEGIN; SELECT pg_logical_emit_message(true, 'bench.event', '{"round":${r},"seq":${m},"text":"caf\u00e9 \\u00e9"}'); COMMIT`,
    `BEGIN; SELECT pg_logical_emit_message(true, 'bench.blob', decode(repeat(md5('${r}'), ${1 + (r % 64)}), 'hex')); COMMIT`,
    `SELECT count(pg_logical_emit_message(false, 'bench.heartbeat', 'tick ' || g)) FROM generate_series(${m}, ${m + 7}) g`,
  );
  txns += 2;
  // Transactions from "another server": Origin message after Begin.
  const origin: string[] = [];
  for (let j = 0; j < 2; j++) {
    const id = -(r * 2 + j + 1);
    origin.push(
      `BEGIN; SELECT pg_replication_origin_xact_setup('${(r + 1).toString(16).toUpperCase()}/${(j * 0x1000 + 0x28).toString(16).toUpperCase()}',
         TIMESTAMPTZ '2024-01-01 00:00:00+00' + ${r} * interval '1 hour');
       ${ledgerInsert(String(id), String(id))}; COMMIT`,
    );
    txns++;
  }
  return { statements: out, originStatements: origin, transactions: txns };
}

/** SQL run once on the origin connection before its first transaction. */
export const ORIGIN_SESSION_SETUP = `SELECT pg_replication_origin_session_setup('${ORIGIN}')`;
