// jsonLines: whole output lines for a run of tape records, from the
// binding's templates (spec: bindings/line-templates.ts). The columns are
// json-columns.ts'; this writes the rest of a line around them and keeps
// the transaction's state. Built twice from this source, as decode.ts is
// (portable.ts). Reads the records decode() bounds-checked and the
// binding's area (every address from it checked against memory before
// use); writes only the output, the line entries, the result words and the
// area's state.
import { JF_AS_PORTABLE, JF_KEYS, JF_NUMBERS_AS_STRINGS, JF_BRACES, LC_COLUMN_FLAGS, JR_WRITTEN, JSON_DONE, JSON_FULL } from "../jsonl-tape.ts";
import {
  LINES_DONE, LINES_STOPPED, LINES_TEMPLATE, LINES_FULL, LINES_COLUMN, LS_RESUME_OP, LS_RESUME_COLUMN, LS_RESUME_FLAGS, LS_RESUME_TUPLE, LF_TRANSACTIONS, LF_BOUNDARIES, JR_RECORD, JR_LINES, LE_WORDS, LE_END, LE_CODE,
  LF_EVERY_TRANSACTION, LF_PG_TIME, LF_BEGIN_AHEAD, LF_UNCHANGED_LEFT_OUT, LF_HOLD, LF_NO_NEWLINE, LF_HELD_COMMITS, LF_FINAL, LINES_HELD, LS_FINAL_HI, LS_FINAL_LO, LS_POSITION, IF_PRINTED, IF_FINAL, OP_POSITION,
  LK_INSERT, LK_UPDATE, LK_DELETE, LK_BEGIN, LK_COMMIT, LK_BEGIN_MARK, LK_COMMIT_MARK, LS_OPEN, LS_XID, LS_PRINTED, LS_ORIGIN, LS_HELD, LS_TIME_LENGTH, LS_BEGIN_LENGTH,
  LS_CHANGED, LS_WORDS, LS_TIME_BYTES, LS_BEGIN_BYTES, LS_CALL_BYTES, LS_STATE_BYTES, LS_TIME_HI, LS_TIME_LO, LS_LAST_HI, LS_LAST_LO, LS_LAST_KNOWN, LS_CALL_LENGTH,
  OP_STOP, OP_CALL_TEXT, LF_WAL_START_DECIMAL, LF_LAST_END_DECIMAL, IF_OLD, IF_LAST_END, IF_NOT, TIME_TEXT, TIME_MS, TIME_US, TIME_NS, LP_HEADER_WORDS, LP_OPS, LP_OP_WORDS, LP_MAX_OPS, LP_PROGRAM_WORDS,
  LP_KINDS, OP_BYTES, OP_XID, OP_LSN, OP_IF, OP_TIME, OP_HEAD, OP_COLUMNS, LF_WAL_START, LF_FIRST, LF_AHEAD_END, LF_WAL_START_OR_NULL, LT_NEW, LT_OLD, LT_IDENTITY,
  IF_WAL_START, IF_IDENTITY, IF_PK, IF_UNSENT, LC_KEYS_IF_K, LC_KEYS, LC_ALL_IF_OLD, LC_WHICH, LC_TABLE_SHIFT, RT_WORDS, RT_COLUMNS, RT_WANTED, RT_HEAD, RT_HEAD_LENGTH, RT_INDEX,
  RT_FLAGS, RT_COLUMNS_1, RT_HEAD_1, RT_HEAD_1_LENGTH, RTF_KEYS, RTF_PK,
} from "../line-templates.ts";
import { FLAG_XID, FLAG_XLOGDATA, FLAG_KEEPALIVE, FLAG_BACKEND, H_SIZE, H_OFFSET, HEADER_WORDS, TABLE_HASH } from "../tape.ts";
import { loadU8, loadI32BE, loadI32, storeI32, loadWord, memoryBytes, imul, u32AsF64 } from "./portable.ts";
import { columnsAt, tupleFits, stopColumn, stopFlags, isoTime, pgTime, timeAt } from "./json-columns.ts";
import { cursor, setCursor, putByte, putBytes, putBytesUpTo, putDecimal, putSigned } from "./json-out.ts";

const TAG_BEGIN = 0x42; // 'B'
const TAG_COMMIT = 0x43; // 'C'
const TAG_INSERT = 0x49; // 'I'
const TAG_UPDATE = 0x55; // 'U'
const TAG_DELETE = 0x44; // 'D'
const QUOTE = 0x22;

/** Room for a field a program op writes beyond its literal bytes (an LSN, a 29-byte time, an xid). */
const FIELD_ROOM = 32;

// The call's area, memory size, and the record being written.
let area: usize = 0;
let size: u64 = 0;
let rec: usize = 0;
let msg: usize = 0;
let template: usize = 0;
// The flags of the call that the columns take (jsonl-tape.ts).
let columnFlags: i32 = 0;

function state(word: i32): i32 {
  return loadI32(area + (<usize>word << 2));
}

function setState(word: i32, v: i32): void {
  storeI32(area + (<usize>word << 2), v);
}

function timeBytes(): usize {
  return area + (<usize>LS_WORDS << 2);
}

function beginBytes(): usize {
  return timeBytes() + <usize>LS_TIME_BYTES;
}

function callBytes(): usize {
  return beginBytes() + <usize>LS_BEGIN_BYTES;
}

function program(kind: i32): usize {
  return area + <usize>LS_STATE_BYTES + (<usize>(LP_PROGRAM_WORDS * kind) << 2);
}

function relationMap(): usize {
  return program(LP_KINDS);
}

/** Writes lines for records [0, count) from `records` (bindings/line-templates.ts); returns a LINES_* status. */
export function jsonLines(records: usize, count: i32, flags: i32, lineArea: usize, out: usize, outCapacity: i32, lines: usize, linesCapacity: i32, result: usize): i32 {
  size = memoryBytes();
  area = lineArea;
  columnFlags = flags & (JF_NUMBERS_AS_STRINGS | JF_AS_PORTABLE);
  newlines = (flags & LF_NO_NEWLINE) == 0;
  const mapAt = relationMap();
  let done = 0;
  let lineCount = 0;
  let status = LINES_DONE;
  const areaOk = (area & 3) == 0 && <u64>mapAt + 4 <= size && <u64>mapAt + 4 + <u64>loadI32(mapAt) * 8 <= size;
  if (count < 0 || outCapacity < 0 || linesCapacity < 0 || <u64>out + <u64>outCapacity > size || <u64>lines + <u64>linesCapacity * LE_WORDS * 4 > size
    || <u64>result + 12 > size || !areaOk) {
    storeI32(result + (JR_WRITTEN << 2), 0);
    storeI32(result + (JR_RECORD << 2), 0);
    storeI32(result + (JR_LINES << 2), 0);
    return LINES_STOPPED;
  }
  const end = out + <usize>outCapacity;
  outputEnd = end;
  setState(LS_CHANGED, 0);
  // A row whose line an earlier call wrote in part goes on where it stopped (record 0).
  let resume = state(LS_RESUME_OP);
  setState(LS_RESUME_OP, 0);
  setCursor(out);
  rec = records;
  for (; done < count; done++) {
    // The records are decode()'s, but the binding chose the address: each is checked before it is read.
    if ((rec & 3) != 0 || <u64>rec + (<u64>HEADER_WORDS << 2) > size) { status = LINES_STOPPED; break; }
    const head = loadWord(rec);
    const words = loadWord(rec + (H_SIZE << 2));
    msg = <usize>loadWord(rec + (H_OFFSET << 2));
    const tag = head & 0xff;
    if (words < HEADER_WORDS || <u64>rec + (<u64>words << 2) > size || (head >> 8) & (FLAG_XID | FLAG_KEEPALIVE | FLAG_BACKEND) || <u64>msg + 34 > size) {
      status = LINES_STOPPED;
      break;
    }
    if (lineCount + 3 > linesCapacity) { status = LINES_FULL; break; }
    const mark = cursor();
    const position = state(LS_POSITION);
    let s = LINES_DONE;
    if (tag == TAG_BEGIN) {
      s = begin(flags, count - done);
      // Its B line now (LF_EVERY_TRANSACTION): the mark stands before it.
      if (s == LINES_DONE && eager(flags)) s = line(LK_BEGIN, end);
      if ((s == LINES_DONE || s == LINES_HELD) && (flags & LF_BOUNDARIES) != 0) lineCount = entry(lines, lineCount, out, mark, (done << 4) | LK_BEGIN_MARK);
      if (s == LINES_DONE && cursor() != mark) lineCount = entry(lines, lineCount, out, cursor(), LK_BEGIN);
      // A held transaction's lines are held by the binding: they start with the next call.
      if (s == LINES_HELD) {
        done++;
        status = s;
        break;
      }
    } else if (tag == TAG_COMMIT) {
      const open = state(LS_OPEN) != 0;
      const held = state(LS_HELD) != 0;
      // A Commit of a transaction held (unless its B and C lines are the kernel's), or (every transaction's C line) of none the kernel has open, is the binding's.
      if ((held && ((flags & LF_HELD_COMMITS) == 0 || !open)) || (!open && eager(flags))) s = LINES_STOPPED;
      else if (held) {
        // The held transaction's B line, now that its end is known, then its C line.
        ahead = msg;
        s = line(LK_BEGIN, end);
        const c = cursor();
        if (s == LINES_DONE) s = line(LK_COMMIT, end);
        // Their entries once both are written (a cut one is written again at the next call).
        if (s == LINES_DONE && c != mark) lineCount = entry(lines, lineCount, out, c, LK_BEGIN);
        if (s == LINES_DONE && cursor() != c) lineCount = entry(lines, lineCount, out, cursor(), LK_COMMIT);
      } else s = (flags & LF_TRANSACTIONS) != 0 && open && (state(LS_PRINTED) != 0 || eager(flags)) ? line(LK_COMMIT, end) : LINES_DONE;
      if (s == LINES_DONE) {
        if (!held && cursor() != mark) lineCount = entry(lines, lineCount, out, cursor(), LK_COMMIT);
        if ((flags & LF_BOUNDARIES) != 0) lineCount = entry(lines, lineCount, out, cursor(), (done << 4) | LK_COMMIT_MARK);
        setState(LS_OPEN, 0);
        setState(LS_HELD, 0);
        setState(LS_BEGIN_LENGTH, 0);
        setState(LS_CHANGED, 1);
        setState(LS_LAST_HI, loadI32BE(msg + 10));
        setState(LS_LAST_LO, loadI32BE(msg + 14));
        setState(LS_LAST_KNOWN, 1);
        // The lines after it are not held: they start with the next call.
        if (held) {
          done++;
          status = LINES_HELD;
          break;
        }
      }
    } else if (tag == TAG_INSERT || tag == TAG_UPDATE || tag == TAG_DELETE) {
      const kind = tag == TAG_INSERT ? LK_INSERT : tag == TAG_UPDATE ? LK_UPDATE : LK_DELETE;
      s = row(kind, end, flags, resume, out);
      // The B line it printed first is an entry of its own.
      if ((s == LINES_DONE || s == LINES_COLUMN) && beginEnd != 0) lineCount = entry(lines, lineCount, out, beginEnd, LK_BEGIN);
      // A row's entry names its template and its record in the call (line-templates.ts LE_CODE).
      if (s == LINES_DONE && cursor() != mark) lineCount = entry(lines, lineCount, out, cursor(), (done << 13) | (loadI32(template + (RT_INDEX << 2)) << 4) | kind);
      // Written in part: the output ends inside its line, which goes on at the next call.
      if (s == LINES_COLUMN || (s == LINES_FULL && state(LS_RESUME_OP) != 0)) { status = s; break; }
    } else s = LINES_STOPPED;
    resume = 0;
    if (s != LINES_DONE) {
      setCursor(mark);
      setState(LS_POSITION, position);
      // A line that fits no output at all is the binding's.
      status = s == LINES_FULL && mark == out ? LINES_STOPPED : s;
      break;
    }
    rec += <usize>words << 2;
  }
  storeI32(result + (JR_WRITTEN << 2), <i32>(cursor() - out));
  storeI32(result + (JR_RECORD << 2), done);
  storeI32(result + (JR_LINES << 2), lineCount);
  return status;
}

/** Line entry n: a line that ends at `at`. */
function entry(lines: usize, n: i32, out: usize, at: usize, code: i32): i32 {
  const e = lines + (<usize>(n * LE_WORDS) << 2);
  storeI32(e + (LE_END << 2), <i32>(at - out));
  storeI32(e + (LE_CODE << 2), code);
  return n + 1;
}

/** A line was written whole: it is a record of its transaction, and the next one's position follows. */
function advance(): void {
  setState(LS_POSITION, state(LS_POSITION) + 1);
}

/** The B and C lines of every transaction (wal2json's), not only of those that printed a change line. */
function eager(flags: i32): bool {
  return (flags & (LF_TRANSACTIONS | LF_EVERY_TRANSACTION)) == (LF_TRANSACTIONS | LF_EVERY_TRANSACTION);
}

/** The Commit a Begin found ahead (LF_BEGIN_AHEAD): its message. */
let ahead: usize = 0;

/**
 * Begin (`left` records from it in the call): the transaction's state
 * (xid, time text, the B line due); nothing is written to the output.
 * LINES_HELD: the transaction is held (LF_HOLD, or LF_BEGIN_AHEAD without
 * its Commit ahead).
 */
function begin(flags: i32, left: i32): i32 {
  ahead = 0;
  const held = (flags & LF_HOLD) != 0 || ((flags & LF_BEGIN_AHEAD) != 0 && !findCommit(left));
  const saved = cursor();
  // The time first: a time the kernel does not write leaves the Begin (and the state) to the binding.
  setCursor(timeBytes());
  if (!((flags & LF_PG_TIME) != 0 ? pgTime(msg + 9) : isoTime(msg + 9, true))) { setCursor(saved); return LINES_STOPPED; }
  setState(LS_TIME_LENGTH, <i32>(cursor() - timeBytes()));
  setState(LS_OPEN, 1);
  setState(LS_XID, loadI32BE(msg + 17));
  setState(LS_PRINTED, 0);
  setState(LS_ORIGIN, 0);
  setState(LS_HELD, held ? 1 : 0);
  setState(LS_FINAL_HI, loadI32BE(msg + 1));
  setState(LS_FINAL_LO, loadI32BE(msg + 5));
  setState(LS_TIME_HI, loadI32BE(msg + 9));
  setState(LS_TIME_LO, loadI32BE(msg + 13));
  setState(LS_POSITION, 0);
  setState(LS_CHANGED, 1);
  setState(LS_BEGIN_LENGTH, 0);
  if (held) {
    setCursor(saved);
    return LINES_HELD;
  }
  if ((flags & LF_TRANSACTIONS) != 0 && !eager(flags)) {
    setCursor(beginBytes());
    template = 0;
    resumeOp = 0;
    // A B line the kernel cannot write (too long): rows of the transaction are the binding's, which writes it.
    if (!run(program(LK_BEGIN), beginBytes() + <usize>LS_BEGIN_BYTES, 0)) setState(LS_BEGIN_LENGTH, -1);
    else setState(LS_BEGIN_LENGTH, <i32>(cursor() - beginBytes()));
  }
  setCursor(saved);
  return LINES_DONE;
}

/** Whether the Commit of the Begin at `rec` is among the next `left` records (`ahead`: its message). */
function findCommit(left: i32): bool {
  let r = rec;
  for (let k = 0; k < left; k++) {
    if ((r & 3) != 0 || <u64>r + (<u64>HEADER_WORDS << 2) > size) return false;
    const words = loadWord(r + (H_SIZE << 2));
    const m = <usize>loadWord(r + (H_OFFSET << 2));
    if (words < HEADER_WORDS || <u64>r + (<u64>words << 2) > size || <u64>m + 26 > size) return false;
    if ((loadWord(r) & 0xff) == TAG_COMMIT) {
      ahead = m;
      return true;
    }
    r += <usize>words << 2;
  }
  return false;
}

/**
 * A row change's line (with the B line due before it); LINES_DONE also
 * when the format wants none of the table. `resume`: LS_RESUME_OP of a
 * line written in part (0: a new line).
 */
function row(kind: i32, end: usize, flags: i32, resume: i32, out: usize): i32 {
  template = 0;
  beginEnd = 0;
  resumeOp = resume;
  if (resume != 0) {
    const r = find(loadI32BE(msg + 1));
    if (r == 0 || <u64>r + RT_WORDS * 4 > size) return LINES_STOPPED;
    template = r;
    start = out;
    return finish(kind, end);
  }
  if (state(LS_OPEN) == 0 || state(LS_ORIGIN) != 0) return LINES_STOPPED;
  const t = find(loadI32BE(msg + 1));
  if (t == 0) return LINES_TEMPLATE;
  if (<u64>t + RT_WORDS * 4 > size) return LINES_STOPPED;
  // The format wants nothing of the table, or of this action.
  if (loadI32(t + (RT_WANTED << 2)) == 0 || loadI32(program(kind) + (LP_OPS << 2)) == 0) return LINES_DONE;
  if (!fits(t, (flags & LF_UNCHANGED_LEFT_OUT) != 0)) return LINES_STOPPED;
  template = t;
  if (!runs(program(kind))) return LINES_STOPPED;
  const pending = (flags & LF_TRANSACTIONS) != 0 ? state(LS_BEGIN_LENGTH) : 0;
  if (pending < 0 || pending > LS_BEGIN_BYTES) return LINES_STOPPED;
  if (pending > 0) {
    if (<u64>pending + 1 > <u64>(end - cursor())) return LINES_FULL;
    putBytes(beginBytes(), pending);
    putByte(0x0a);
    beginEnd = cursor();
    advance();
  }
  // A column that fits in no output is declined (the binding's) only in a line that has been cut already.
  start = 0;
  return finish(kind, end);
}

function finish(kind: i32, end: usize): i32 {
  if (!runLine(kind, end)) {
    if (failure == LINES_COLUMN || (failure == LINES_FULL && resumeOp != 0)) printed();
    else setState(LS_RESUME_OP, 0);
    return failure;
  }
  printed();
  return LINES_DONE;
}

/**
 * Whether program p runs to its end for this row but for want of room: its
 * ops that stop (OP_STOP, a number beyond the exact range, a time no ISO
 * text has, an area out of bounds) are checked before any of the line is
 * written, for a line a declined column cut is never taken back.
 */
function runs(p: usize): bool {
  if (<u64>p + (<u64>LP_PROGRAM_WORDS << 2) > size) return false;
  const ops = loadI32(p + (LP_OPS << 2));
  if (ops < 0 || ops > LP_MAX_OPS) return false;
  for (let i = 0; i < ops; i++) {
    const at = p + (<usize>(LP_HEADER_WORDS + LP_OP_WORDS * i) << 2);
    const code = loadI32(at);
    const a = loadI32(at + 4);
    const b = loadI32(at + 8);
    if (code == OP_IF) {
      const yes = holds(a & 0xff);
      if ((a & IF_NOT) != 0 ? yes : !yes) i += b;
    } else if (code == OP_STOP) return false;
    else if (code == OP_BYTES) {
      if (a < 0 || b < 0 || <u64>a + <u64>b > size) return false;
    } else if (code == OP_CALL_TEXT) {
      const n = state(LS_CALL_LENGTH);
      if (n < 0 || n > LS_CALL_BYTES) return false;
    } else if (code == OP_LSN) {
      if (a == LF_AHEAD_END && ahead == 0) return false;
      if (a == LF_WAL_START_DECIMAL && !exact(loadI32BE(msg - 24))) return false;
      if (a == LF_LAST_END_DECIMAL && !exact(state(LS_LAST_HI))) return false;
    } else if (code == OP_TIME) {
      if (a == TIME_MS || a == TIME_US || a == TIME_NS) {
        const hi = state(LS_TIME_HI);
        if (hi < -(1 << 20) || hi >= 1 << 20) return false;
      } else if (a == TIME_TEXT) {
        const n = state(LS_TIME_LENGTH);
        if (n < 0 || n > LS_TIME_BYTES) return false;
      } else if (!timeAt((head() & 0xff) == TAG_BEGIN ? msg + 9 : msg + 18)) return false;
    } else if (code == OP_HEAD) {
      const h = loadI32(template + ((a == 0 ? RT_HEAD : RT_HEAD_1) << 2));
      const n = loadI32(template + ((a == 0 ? RT_HEAD_LENGTH : RT_HEAD_1_LENGTH) << 2));
      if (h < 0 || n < 0 || <u64>h + <u64>n > size) return false;
    } else if (code != OP_XID && code != OP_POSITION && code != OP_COLUMNS) return false;
  }
  return true;
}

/** Whether an unsigned 64-bit number whose high word is `hi` is below 2^53 (decimal64 writes it). */
function exact(hi: i32): bool {
  return hi >= 0 && hi < 1 << 21;
}

function printed(): void {
  setState(LS_PRINTED, 1);
  setState(LS_BEGIN_LENGTH, 0);
}

/**
 * Whether the row's tuples fit its template's column table, and (unless
 * `leftOut`: the format leaves them out) every unchanged TOAST column of
 * its new tuple has an old value to stand in (else its line names it in
 * `unchanged`: the binding's). Checked before any of the line is written,
 * which is then never taken back.
 */
function fits(t: usize, leftOut: bool): bool {
  const tag = head() & 0xff;
  const body = rec + (<usize>HEADER_WORDS << 2);
  const table = <usize>loadI32(t + (RT_COLUMNS << 2));
  let oldT: usize = 0;
  let newT: usize = 0;
  if (tag == TAG_INSERT) newT = body;
  else {
    if (loadWord(body) != 0) oldT = body + 4;
    if (tag == TAG_UPDATE) {
      if (oldT != 0 && !tupleFits(oldT, 0, table, 0, size)) return false;
      newT = oldT != 0 ? oldT + (<usize>(1 + loadWord(oldT)) << 2) : body + 4;
    }
  }
  if (oldT != 0 && !tupleFits(oldT, 0, table, 0, size)) return false;
  if (newT == 0) return true;
  if (!tupleFits(newT, oldT, table, 0, size)) return false;
  if (leftOut) return true;
  const n = loadWord(newT);
  const oldN = oldT != 0 ? loadWord(oldT) : 0;
  for (let i = 0; i < n; i++) {
    const at = loadWord(newT + (<usize>(1 + i) << 2));
    if (at < 0 || <u64>at + 5 > size || loadU8(<usize>at) != 0x75) continue;
    if (i >= oldN) return false;
    const oldAt = loadWord(oldT + (<usize>(1 + i) << 2));
    const k = oldAt >= 0 && <u64>oldAt + 5 <= size ? loadU8(<usize>oldAt) : 0;
    if (k != 0x74 && k != 0x62) return false;
  }
  return true;
}

/** The op the line being written resumes at, plus 1 (0: none), and where this call's output starts (0 in a new line). */
let resumeOp: i32 = 0;
let start: usize = 0;

/** Where the B line the last row printed before its own ends (0: none). */
let beginEnd: usize = 0;
/** Why the last program failed: LINES_FULL or LINES_STOPPED. */
let failure: i32 = LINES_STOPPED;

/** A line of `kind` at the cursor, with its newline (none of a program without ops). */
function line(kind: i32, end: usize): i32 {
  template = 0;
  resumeOp = 0;
  if (loadI32(program(kind) + (LP_OPS << 2)) == 0) return LINES_DONE;
  return runLine(kind, end) ? LINES_DONE : failure;
}

function runLine(kind: i32, end: usize): bool {
  if (!run(program(kind), end, resumeOp)) return false;
  if (newlines) {
    if (cursor() >= end) return full();
    putByte(0x0a);
  }
  advance();
  return true;
}

/** Whether lines end with a newline (not LF_NO_NEWLINE). */
let newlines = true;

function full(): bool {
  failure = LINES_FULL;
  return false;
}

/** The op being run. */
let op: i32 = 0;

/** Op `op` does not fit: LINES_FULL, and a line that resumes goes on at it. */
function cut(): bool {
  if (resumeOp != 0) {
    setState(LS_RESUME_OP, op + 1);
    setState(LS_RESUME_COLUMN, 0);
  }
  return full();
}

function stop(): bool {
  failure = LINES_STOPPED;
  return false;
}

// The end of the call's output: what lies past the cursor up to it is free (putBytesUpTo may write there),
// unlike the line state's B line, whose unused bytes are compared (test/support/twin-kernel.ts).
let outputEnd: usize = 0;

/** Runs program p at the cursor, up to `end`, from op `from` - 1 (0: from the start). */
function run(p: usize, end: usize, from: i32): bool {
  const free = end == outputEnd ? end : 0;
  if (<u64>p + (<u64>LP_PROGRAM_WORDS << 2) > size) return stop();
  const ops = loadI32(p + (LP_OPS << 2));
  if (ops < 0 || ops > LP_MAX_OPS) return stop();
  for (let i = from > 0 ? from - 1 : 0; i < ops; i++) {
    op = i;
    const at = p + (<usize>(LP_HEADER_WORDS + LP_OP_WORDS * i) << 2);
    const code = loadI32(at);
    const a = loadI32(at + 4);
    const b = loadI32(at + 8);
    // Every field but the columns (which check their own room) takes at most FIELD_ROOM bytes.
    if (code != OP_BYTES && code != OP_COLUMNS && code != OP_HEAD && code != OP_CALL_TEXT && <u64>(end - cursor()) < <u64>FIELD_ROOM) return cut();
    if (code == OP_BYTES) {
      if (a < 0 || b < 0 || <u64>a + <u64>b > size) return stop();
      if (<u64>b > <u64>(end - cursor())) return cut();
      putBytesUpTo(<usize>a, b, free);
    } else if (code == OP_XID) {
      putDecimal(u32AsF64(state(LS_XID)));
    } else if (code == OP_LSN) {
      if (a == LF_WAL_START) lsn(msg - 24);
      else if (a == LF_WAL_START_OR_NULL) {
        if (hasWalStart()) {
          putByte(QUOTE);
          lsn(msg - 24);
          putByte(QUOTE);
        } else { putByte(0x6e); putByte(0x75); putByte(0x6c); putByte(0x6c); }
      } else if (a == LF_AHEAD_END) {
        if (ahead == 0) return stop();
        lsn(ahead + 10);
      } else if (a == LF_FINAL) {
        hex(state(LS_FINAL_HI));
        putByte(0x2f);
        hex(state(LS_FINAL_LO));
      } else if (a == LF_WAL_START_DECIMAL) {
        if (!decimal64(loadI32BE(msg - 24), loadI32BE(msg - 20))) return stop();
      } else if (a == LF_LAST_END_DECIMAL) {
        if (!decimal64(state(LS_LAST_HI), state(LS_LAST_LO))) return stop();
      } else if ((head() & 0xff) == TAG_BEGIN) lsn(msg + 1);
      else lsn(a == LF_FIRST ? msg + 2 : msg + 10);
    } else if (code == OP_IF) {
      const yes = holds(a & 0xff);
      if ((a & IF_NOT) != 0 ? yes : !yes) i += b;
    } else if (code == OP_STOP) {
      return stop();
    } else if (code == OP_CALL_TEXT) {
      const n = state(LS_CALL_LENGTH);
      if (n < 0 || n > LS_CALL_BYTES) return stop();
      if (<u64>n > <u64>(end - cursor())) return cut();
      putBytesUpTo(callBytes(), n, free);
    } else if (code == OP_POSITION) {
      putDecimal(u32AsF64(state(LS_POSITION)));
    } else if (code == OP_TIME) {
      if (a == TIME_MS || a == TIME_US || a == TIME_NS) {
        if (!timeNumber(a)) return stop();
      } else if (a == TIME_TEXT) {
        const n = state(LS_TIME_LENGTH);
        if (n < 0 || n > LS_TIME_BYTES) return stop();
        putBytesUpTo(timeBytes(), n, free);
      } else if (!isoTime((head() & 0xff) == TAG_BEGIN ? msg + 9 : msg + 18, true)) return stop();
    } else if (code == OP_HEAD) {
      if (template == 0) return stop();
      const h = loadI32(template + ((a == 0 ? RT_HEAD : RT_HEAD_1) << 2));
      const n = loadI32(template + ((a == 0 ? RT_HEAD_LENGTH : RT_HEAD_1_LENGTH) << 2));
      if (h < 0 || n < 0 || <u64>h + <u64>n > size) return stop();
      if (<u64>n > <u64>(end - cursor())) return cut();
      putBytesUpTo(<usize>h, n, free);
    } else if (code == OP_COLUMNS) {
      if (template == 0) return stop();
      if (!columns(a, b, end, from == i + 1)) return false;
    } else return stop();
  }
  return true;
}

function head(): i32 {
  return loadWord(rec);
}

/** OP_IF's condition a (IF_*). */
function holds(a: i32): bool {
  if (a == IF_WAL_START) return hasWalStart();
  const flags = template != 0 ? loadI32(template + (RT_FLAGS << 2)) : 0;
  if (a == IF_PK) return (flags & RTF_PK) != 0;
  if (a == IF_PRINTED) return state(LS_PRINTED) != 0;
  if (a == IF_UNSENT) return unsent();
  if (a == IF_FINAL) return (state(LS_FINAL_HI) | state(LS_FINAL_LO)) != 0;
  if (a == IF_LAST_END) return state(LS_LAST_KNOWN) != 0;
  // Update: oldTupleType first, 0 when none was sent; Delete: always one.
  if (a == IF_OLD) return (head() & 0xff) != TAG_INSERT && loadWord(rec + (<usize>HEADER_WORDS << 2)) != 0;
  if (a == IF_IDENTITY) {
    // Update: oldTupleType first, 0 when none was sent; Delete: always one.
    const tag = head() & 0xff;
    return (tag != TAG_INSERT && loadWord(rec + (<usize>HEADER_WORDS << 2)) != 0) || (flags & RTF_KEYS) != 0;
  }
  return false;
}

/** Whether the row's new tuple has an unchanged TOAST column that its old tuple has no value for (IF_UNSENT). */
function unsent(): bool {
  const tag = head() & 0xff;
  if (tag != TAG_UPDATE) return false;
  const body = rec + (<usize>HEADER_WORDS << 2);
  const oldT: usize = loadWord(body) != 0 ? body + 4 : 0;
  const newT: usize = oldT != 0 ? oldT + (<usize>(1 + loadWord(oldT)) << 2) : body + 4;
  const n = loadWord(newT);
  const oldN = oldT != 0 ? loadWord(oldT) : 0;
  for (let i = 0; i < n; i++) {
    const at = loadWord(newT + (<usize>(1 + i) << 2));
    if (at < 0 || <u64>at + 5 > size || loadU8(<usize>at) != 0x75) continue;
    const oldAt = i < oldN ? loadWord(oldT + (<usize>(1 + i) << 2)) : -1;
    const k = oldAt >= 0 && <u64>oldAt + 5 <= size ? loadU8(<usize>oldAt) : 0;
    if (k != 0x74 && k != 0x62) return true;
  }
  return false;
}

/** The unsigned 64-bit (hi, lo) in decimal, below 2^53 (else false, nothing written: the TS build's exact range). */
function decimal64(hi: i32, lo: i32): bool {
  if (!exact(hi)) return false;
  putDecimal(<f64>hi * 4294967296.0 + u32AsF64(lo));
  return true;
}

/**
 * The transaction's commit time (LS_TIME_*, µs since 2000-01-01) as a
 * number since the Unix epoch: milliseconds (floored), microseconds, or
 * nanoseconds (the µs and three zeros, `0` for 0), as Debezium's source
 * block has it; false beyond ±2^52 µs.
 */
function timeNumber(a: i32): bool {
  const hi = state(LS_TIME_HI);
  if (hi < -(1 << 20) || hi >= 1 << 20) return false;
  const us = <f64>hi * 4294967296.0 + u32AsF64(state(LS_TIME_LO)) + 946684800000000.0;
  if (a == TIME_MS) putSigned(Math.floor(us / 1000.0));
  else {
    putSigned(us);
    if (a == TIME_NS && us != 0) { putByte(0x30); putByte(0x30); putByte(0x30); }
  }
  return true;
}

function hasWalStart(): bool {
  return ((head() >> 8) & FLAG_XLOGDATA) != 0 && <u64>msg >= 24 && (loadI32BE(msg - 24) | loadI32BE(msg - 20)) != 0;
}

/**
 * The bracketed columns of tuple `which` (LT_*) of the row's record; with
 * `resuming`, from LS_RESUME_COLUMN on with LS_RESUME_FLAGS (its `[` is
 * written). A column declined, or one that does not fit in a line written
 * in part already: the resume words say where it goes on.
 */
function columns(which: i32, keys: i32, end: usize, resuming: bool): bool {
  const tag = head() & 0xff;
  const body = rec + (<usize>HEADER_WORDS << 2);
  // Update: oldTupleType, [old TUPLE], new TUPLE; Delete: oldTupleType, old TUPLE; Insert: new TUPLE.
  let oldT: usize = 0;
  let newT: usize = 0;
  let oldType = 0;
  if (tag == TAG_INSERT) newT = body;
  else {
    oldType = loadWord(body);
    if (oldType != 0) oldT = body + 4;
    if (tag == TAG_UPDATE) newT = oldT != 0 ? oldT + (<usize>(1 + loadWord(oldT)) << 2) : body + 4;
  }
  const isNew = which == LT_NEW || (which == LT_IDENTITY && oldT == 0);
  const tuple: usize = isNew ? newT : oldT;
  const old: usize = which == LT_NEW ? oldT : 0;
  if (tuple == 0) return stop();
  const tableIndex = (keys >>> LC_TABLE_SHIFT) & 3;
  const table = <usize>loadI32(template + ((tableIndex == 0 ? RT_COLUMNS : RT_COLUMNS_1 + tableIndex - 1) << 2));
  if (table == 0) return stop();
  let from = 0;
  let flags = columnFlags | (keys & LC_COLUMN_FLAGS);
  const only = keys & LC_WHICH;
  if (resuming) {
    from = state(LS_RESUME_COLUMN);
    flags = state(LS_RESUME_FLAGS);
  } else if (only == LC_KEYS || (only == LC_KEYS_IF_K && (oldT == 0 || oldType == 0x4b)) || (only == LC_ALL_IF_OLD && oldT == 0)) flags |= JF_KEYS;
  if (!tupleFits(tuple, old, table, from, size)) return stop();
  if (!resuming) {
    if (<u64>(end - cursor()) < 2) return cut();
    putByte((flags & JF_BRACES) != 0 ? 0x7b : 0x5b);
  }
  const s = columnsAt(tuple, old, table, from, flags, start, end - 1, size);
  if (s != JSON_DONE) {
    const cutLine = s == JSON_FULL ? resumeOp != 0 : true;
    if (cutLine) {
      setState(LS_RESUME_OP, op + 1);
      setState(LS_RESUME_COLUMN, stopColumn());
      setState(LS_RESUME_FLAGS, stopFlags());
      setState(LS_RESUME_TUPLE, isNew ? LT_NEW : LT_OLD);
      // From here on the line is cut: FULL goes on here too.
      resumeOp = op + 1;
    }
    if (s == JSON_FULL) return full();
    failure = LINES_COLUMN;
    return false;
  }
  putByte((flags & JF_BRACES) != 0 ? 0x7d : 0x5d);
  return true;
}

/** The relation map's template of `oid`, or 0. */
function find(oid: i32): usize {
  const map = relationMap();
  const capacity = loadI32(map);
  if (capacity <= 0 || (capacity & (capacity - 1)) != 0) return 0;
  let slot = (imul(oid, TABLE_HASH) >>> 16) & (capacity - 1);
  for (let probes = 0; probes < capacity; probes++) {
    const e = map + 4 + (<usize>slot << 3);
    const at = loadI32(e + 4);
    if (at == 0) return 0;
    if (loadI32(e) == oid) return <usize>at;
    slot = (slot + 1) & (capacity - 1);
  }
  return 0;
}

function hex(v: i32): void {
  let shift = 28;
  while (shift > 0 && ((v >>> shift) & 15) == 0) shift -= 4;
  for (; shift >= 0; shift -= 4) {
    const d = (v >>> shift) & 15;
    putByte(d < 10 ? 0x30 + d : 0x37 + d);
  }
}

/** The big-endian LSN at p as PostgreSQL prints it (lsn.ts formatLsn). */
function lsn(p: usize): void {
  hex(loadI32BE(p));
  putByte(0x2f);
  hex(loadI32BE(p + 4));
}

