/**
 * The kernel's line export, `jsonLines`: whole output lines for a run of
 * tape records (tape.ts) of one decoded batch — Begin, Commit and the row
 * changes of plain transactions — written by the kernel
 * (bindings/kernel/json-lines.ts) from templates the binding writes once:
 * a program per line kind (the format's literal text and where the fields
 * go: LP_*), and per relation a template (its schema/table text, its
 * column table of bindings/jsonl-tape.ts, whether the format wants it). A
 * format is its programs: JSON Lines (bindings/jsonl/writer.ts) has one;
 * another format that writes `{name,type,value}` columns (wal2json v2,
 * Debezium-style) is other literal text and another field order, the same
 * kernel. Like tape.ts it is compiled into both kernels, so it holds only
 * integer constants.
 *
 * ## jsonLines: 9 arguments
 *   jsonLines(records, count, flags, area, out, outCapacity, lines, linesCapacity, result): LINES_*
 * - records, count: byte address of the first tape record, and how many
 *   consecutive records to walk (the batch's records from one message on).
 * - flags: JF_NUMBERS_AS_STRINGS (jsonl-tape.ts), LF_TRANSACTIONS (Begin
 *   and Commit lines too), LF_BOUNDARIES (an entry marking each Begin and
 *   Commit taken: LK_BEGIN_MARK, LK_COMMIT_MARK | record number << 4),
 *   LF_EVERY_TRANSACTION (with LF_TRANSACTIONS: the B line written at the
 *   Begin, after its mark, and the C line at every Commit of a transaction
 *   the kernel has open, whether or not a change line was written; a Commit
 *   outside one is the binding's), LF_PG_TIME (the transaction's time text
 *   as PostgreSQL prints it, `"2024-02-29 12:34:56.789012+00"`, the
 *   fraction's trailing zeros dropped; else ISO 8601), LF_BEGIN_AHEAD (the
 *   B line of a Begin whose Commit is among the call's records may name
 *   that Commit's end, OP_LSN LF_AHEAD_END; any other transaction is held,
 *   as with LF_HOLD), LF_HOLD (every transaction is held: no B line, its
 *   rows' lines are the binding's to hold, its Commit the binding's:
 *   LINES_HELD), LF_HELD_COMMITS (a held transaction's Commit is the
 *   kernel's: at it, the B line, its end known now (LF_AHEAD_END names
 *   this Commit's), and the C line, each an entry if not empty: the
 *   binding makes the transaction's records of them and what it holds),
 *   LF_NO_NEWLINE (lines end without a newline: parts of a record the
 *   binding makes of them),
 *   LF_UNCHANGED_LEFT_OUT (the format's lines take unchanged TOAST that no
 *   old value stands in for: JF_SKIP_UNCHANGED, JF_UNSENT_SKIPPED; else
 *   such a row is the binding's).
 * - area: byte address of the line area: LS_WORDS state words, the
 *   programs, the relation map (below), all written by the binding.
 * - out, outCapacity: the output bytes.
 * - lines, linesCapacity: LE_WORDS words per line written: LE_END (its end,
 *   in bytes from `out`), LE_CODE (LK_*; a row's also | its template's
 *   index << 4 | its record's number in the call << 13).
 * - result: JR_WORDS result words (jsonl-tape.ts): JR_WRITTEN (bytes),
 *   JR_RECORD (records done), JR_LINES (lines written).
 *
 * ## Status
 * - LINES_DONE: all `count` records are done.
 * - LINES_STOPPED: record JR_RECORD is the binding's, whole (nothing of it
 *   written): a message that is not B, C, I, U or D of a plain
 *   transaction, a row outside a transaction or after an Origin, a row
 *   with a column jsonColumns declines (the binding writes that row with
 *   its per-column path), a Begin or Commit whose time is outside years
 *   1..9999, a row too large for the whole output.
 * - LINES_TEMPLATE: record JR_RECORD's relation has no template in the
 *   map: the binding adds one (or takes the record itself) and calls again.
 * - LINES_FULL: the output or the line entries are full: the binding takes
 *   what was written and calls again from JR_RECORD (which may be a row
 *   whose line is written in part: LS_RESUME_OP says where it goes on).
 * - LINES_HELD: record JR_RECORD - 1 changed whether lines are held: a
 *   Begin whose transaction is held (LS_HELD; the lines of the next calls,
 *   up to its Commit, are the binding's to hold), or the Commit of one
 *   (LF_HELD_COMMITS; this call's lines were its last). A call that starts
 *   in a held transaction writes only lines of it.
 * - LINES_COLUMN: the row of record JR_RECORD is written up to a column
 *   jsonColumns declines (a binary value, a text outside its shapes, one
 *   larger than the whole output): the output ends inside its line. The
 *   binding writes that column (LS_RESUME_TUPLE's column LS_RESUME_COLUMN,
 *   a comma first if LS_RESUME_FLAGS has JF_COMMA), sets LS_RESUME_COLUMN
 *   to the next and JF_COMMA if it wrote one, and calls again from the row:
 *   the kernel goes on at op LS_RESUME_OP - 1. A row with unchanged TOAST
 *   that no old value stands in for is LINES_STOPPED before any of it is
 *   written (its line names it in `unchanged`, the binding's).
 *
 * ## The line area (at `area`, 4-aligned)
 *   [ state: LS_WORDS words | time text: LS_TIME_BYTES | pending begin line: LS_BEGIN_BYTES
 *     | programs: LP_KINDS × LP_PROGRAM_WORDS words | relation map ]
 * State, read and written by both sides between calls (the transaction
 * the next record is in): LS_OPEN, LS_XID, LS_PRINTED (a change line was
 * written), LS_ORIGIN (an Origin message named one: rows are the
 * binding's), LS_HELD (the binding holds the transaction's records until its
 * Commit, which is the binding's; rows are written as ever, and a call that
 * starts with it set writes only lines of that transaction), LS_FINAL_HI and
 * LS_FINAL_LO (its Begin's finalLsn), LS_POSITION (the transaction's
 * records so far: 0 at its Begin, one more per line written, set by the
 * binding to the records' count when it wrote some), LS_TIME_LENGTH (the transaction's time as JSON text, in the
 * time bytes), LS_BEGIN_LENGTH (the B line due before the first change
 * line, without its newline, in the begin bytes; -1: one the kernel cannot
 * write, so rows are the binding's), LS_CHANGED (set by the kernel when it
 * began or ended a transaction).
 *   A program (per LK_* kind) is LP_HEADER_WORDS words (its length in
 * ops, at most LP_MAX_OPS) then LP_OP_WORDS per op: code, a, b; a row
 * kind whose program has no ops writes no line (the format leaves that
 * action out). Every op checks the room it needs. Ops:
 * - OP_BYTES a, b: copy memory[a, a + b).
 * - OP_XID: the transaction's xid (a row's, a Commit's), or the Begin's own, in decimal.
 * - OP_LSN a: LSN field a (LF_*) as `X/Y`; LF_WAL_START_OR_NULL: the
 *   walStart as the JSON string `"X/Y"`, or `null` where it is 0 or the
 *   message came in no XLogData.
 * - OP_IF a, b: skip the next b ops unless condition a holds: IF_WAL_START
 *   (the message came in an XLogData whose walStart is not 0),
 *   IF_IDENTITY (the row has an old tuple, or its template RTF_KEYS),
 *   IF_PK (its template RTF_PK), IF_PRINTED (a change line of the
 *   transaction was written: LS_PRINTED), IF_UNSENT (an Update whose new
 *   tuple has an unchanged TOAST column its old tuple has no value for),
 *   IF_FINAL (the transaction's finalLsn is not 0).
 * - OP_POSITION: LS_POSITION in decimal: the line's record's position in
 *   its transaction (a record id's `N`, pipeline/change-id.ts).
 * - OP_TIME a: a = 0 the transaction's time text; else the message's
 *   time field, as JSON text (a quoted ISO 8601 string).
 * - OP_HEAD a: the relation template's head bytes (a = 0), or its second
 *   head (a = 1).
 * - OP_COLUMNS a, b: the columns of tuple a (LT_*) as jsonColumns writes
 *   them, bracketed: `[`, columns, `]`; b: LC_* which columns, or'd with
 *   the column flags LC_COLUMN_FLAGS (jsonl-tape.ts JF_*), and the
 *   template's column table it takes (0..3) << LC_TABLE_SHIFT.
 * The relation map: word capacity (a power of 2), then per entry a
 * relation OID and the byte address of its template (0: empty), found by
 * linear probing from `imul(oid, TABLE_HASH) >>> 16 & (capacity - 1)`.
 * A template: RT_WORDS words: RT_COLUMNS (the jsonl-tape.ts column table),
 * RT_WANTED (0: the format writes nothing for its rows), RT_HEAD, RT_HEAD_LENGTH
 * (the bytes OP_HEAD copies), RT_INDEX (the binding's number for it, in LE_CODE),
 * RT_FLAGS (RTF_KEYS: a column is flagged key; RTF_PK: the format's pk),
 * RT_COLUMNS_1..3 (more column tables of the same columns, other prefixes;
 * 0: none), RT_HEAD_1, RT_HEAD_1_LENGTH (the second head).
 */

export const LINES_DONE = 0;
export const LINES_STOPPED = 1;
export const LINES_TEMPLATE = 2;
export const LINES_FULL = 3;
export const LINES_COLUMN = 4;
export const LINES_HELD = 5;

export const LF_TRANSACTIONS = 8;
/** Marks too (LK_BEGIN_MARK, LK_COMMIT_MARK): where each Begin and Commit taken is among the lines. */
export const LF_BOUNDARIES = 16;
// (32 is jsonl-tape.ts' JF_AS_PORTABLE; 64 and 128 its column flags.)
export const LF_EVERY_TRANSACTION = 256;
export const LF_PG_TIME = 512;
export const LF_BEGIN_AHEAD = 1024;
export const LF_UNCHANGED_LEFT_OUT = 2048;
export const LF_HOLD = 4096;
export const LF_NO_NEWLINE = 8192;
export const LF_HELD_COMMITS = 16384;

// Result words, beside jsonl-tape.ts' JR_WRITTEN.
export const JR_RECORD = 1;
export const JR_LINES = 2;

// Line entries.
export const LE_WORDS = 2;
export const LE_END = 0;
export const LE_CODE = 1;

// Line kinds: the programs, and the records' kinds.
export const LK_INSERT = 0;
export const LK_UPDATE = 1;
export const LK_DELETE = 2;
export const LK_BEGIN = 3;
export const LK_COMMIT = 4;
// Marks, no line (LE_END is where the output stood; the code's high bits are the record's number in the call):
// a Begin taken, before any line of its transaction; a Commit taken, after its C line.
export const LK_BEGIN_MARK = 5;
export const LK_COMMIT_MARK = 6;
export const LP_KINDS = 5;

// State words.
export const LS_OPEN = 0;
export const LS_XID = 1;
export const LS_PRINTED = 2;
export const LS_ORIGIN = 3;
export const LS_TIME_LENGTH = 4;
export const LS_BEGIN_LENGTH = 5;
export const LS_CHANGED = 6;
export const LS_RESUME_OP = 7; // 0, or the op a row's line resumes at, plus 1
export const LS_RESUME_COLUMN = 8;
export const LS_RESUME_FLAGS = 9;
export const LS_RESUME_TUPLE = 10; // LT_NEW (with the old tuple for unchanged TOAST) or LT_OLD
export const LS_HELD = 11;
export const LS_FINAL_HI = 12;
export const LS_FINAL_LO = 13;
export const LS_POSITION = 14;
export const LS_TIME_HI = 15;
export const LS_TIME_LO = 16;
export const LS_LAST_HI = 17;
export const LS_LAST_LO = 18;
export const LS_LAST_KNOWN = 19;
export const LS_CALL_LENGTH = 20;
export const LS_WORDS = 24;
export const LS_TIME_BYTES = 64;
export const LS_BEGIN_BYTES = 1024;
export const LS_CALL_BYTES = 128;
/** The line state's bytes: its words, the time text, the B line due, the call's text; the programs follow. */
export const LS_STATE_BYTES = LS_WORDS * 4 + LS_TIME_BYTES + LS_BEGIN_BYTES + LS_CALL_BYTES;

// Programs.
export const LP_HEADER_WORDS = 1;
export const LP_OPS = 0;
export const LP_OP_WORDS = 3;
export const LP_MAX_OPS = 64;
export const LP_PROGRAM_WORDS = LP_HEADER_WORDS + LP_OP_WORDS * LP_MAX_OPS;

export const OP_BYTES = 1;
export const OP_XID = 2;
export const OP_LSN = 3;
export const OP_IF = 4;
export const OP_TIME = 5;
export const OP_HEAD = 6;
export const OP_COLUMNS = 7;
export const OP_POSITION = 8;
export const OP_STOP = 9;
export const OP_CALL_TEXT = 10;

// LSN fields.
export const LF_WAL_START = 0;
export const LF_FIRST = 1; // Begin's finalLsn, Commit's commitLsn
export const LF_SECOND = 2; // Commit's endLsn
export const LF_AHEAD_END = 3; // the endLsn of the Commit a Begin found ahead (LF_BEGIN_AHEAD)
export const LF_WAL_START_OR_NULL = 4;
export const LF_FINAL = 5; // the transaction's Begin's finalLsn (LS_FINAL_*)
export const LF_WAL_START_DECIMAL = 6;
export const LF_LAST_END_DECIMAL = 7;

// OP_IF's conditions.
export const IF_WAL_START = 0;
export const IF_IDENTITY = 1;
export const IF_PK = 2;
export const IF_PRINTED = 3;
export const IF_UNSENT = 4;
export const IF_FINAL = 5;
export const IF_OLD = 6;
export const IF_LAST_END = 7;
/** Or'd into a condition: it holds when the condition does not. */
export const IF_NOT = 0x100;

// OP_TIME's a.
export const TIME_TEXT = 0;
export const TIME_MESSAGE = 1;
export const TIME_MS = 2;
export const TIME_US = 3;
export const TIME_NS = 4;

// Tuples.
export const LT_NEW = 0; // Insert, Update: the new tuple
export const LT_OLD = 1; // Update, Delete: the old tuple (an Update without one: none)
export const LT_IDENTITY = 2; // the old tuple if the message has one, else the new

// Which columns.
export const LC_ALL = 0;
export const LC_KEYS_IF_K = 1; // the replica identity columns when the old tuple is 'K' (or is not there), else all
export const LC_KEYS = 2; // the replica identity columns
export const LC_ALL_IF_OLD = 3; // every column of the old tuple when the message has one, else the replica identity columns
export const LC_WHICH = 3; // the bits of b that are LC_*
export const LC_TABLE_SHIFT = 16;

// Relation templates.
export const RT_WORDS = 11;
export const RT_COLUMNS = 0;
export const RT_WANTED = 1;
export const RT_HEAD = 2;
export const RT_HEAD_LENGTH = 3;
export const RT_INDEX = 4;
export const RT_FLAGS = 5;
export const RT_COLUMNS_1 = 6;
export const RT_HEAD_1 = 9;
export const RT_HEAD_1_LENGTH = 10;
export const RTF_KEYS = 1;
export const RTF_PK = 2;
