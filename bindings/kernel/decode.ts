// The pgoutput kernel: walks a chunk of messages once and writes the tape
// (bindings/tape.ts defines it). One source, two builds: asc compiles it to
// the wasm kernel (assembly/index.ts), tsc to the pure-TS backend's
// (bindings/baseline/kernel.ts), so it keeps to what portable.ts says means
// the same in both. No allocation, no traps, and in wasm no imports: every
// read is checked against the end of its message before it happens, and bad
// input returns STATUS_ERROR with a code, a field and a byte offset.
import {
  FRAMING_ONE, FRAMING_LENGTH, FRAMING_COPYDATA, FRAMING_BACKEND, FLAG_XLOGDATA, FLAG_KEEPALIVE, FLAG_BACKEND,
  XLOGDATA_HEADER, HEADER_WORDS, H_TAG, H_SIZE, H_OFFSET, H_LENGTH, FLAG_XID, FLAG_ABORT_V4,
  STATE_IN_STREAM, STATUS_OK, STATUS_ERROR, STATUS_TAPE_FULL, STATUS_TABLE_FULL,
  TABLE_CAPACITY, TABLE_COUNT, TABLE_HEADER_WORDS, TABLE_HASH, E_COLUMN_COUNT_MISMATCH,
  R_CONSUMED, R_TAPE_USED, R_COUNT, R_STATE, R_ERROR_CODE, R_ERROR_OFFSET, R_ERROR_FIELD,
  R_ERROR_COLUMN, R_ERROR_TUPLE, R_ERROR_TAG, R_ERROR_START, R_STATE_RECORDS, TUPLE_OLD, TUPLE_NEW,
  E_INCOMPLETE, E_UNKNOWN_MESSAGE, E_INVALID_COLUMN_KIND, E_INVALID_VALUE, E_INVALID_LENGTH,
  E_TRAILING_BYTES, E_MESSAGE_TOO_LARGE,
  F_TAG, F_XID, F_FLAGS, F_LSN, F_END_LSN, F_TIME, F_TIME2, F_NAME, F_NAMESPACE, F_PREFIX,
  F_CONTENT_LENGTH, F_CONTENT, F_RELATION_ID, F_REPLICA_IDENTITY, F_COLUMN_COUNT, F_COLUMN_FLAGS,
  F_COLUMN_NAME, F_COLUMN_TYPE, F_COLUMN_TYPMOD, F_TYPE_ID, F_TUPLE_TYPE, F_TUPLE_COLUMN_COUNT,
  F_TUPLE_COLUMN_KIND, F_TUPLE_COLUMN_LENGTH, F_TUPLE_COLUMN_VALUE, F_OPTIONS, F_RELATION_COUNT,
  F_RELATION_IDS, F_FIRST_SEGMENT, F_SUB_XID, F_GID, F_FRAME_LENGTH, F_END,
  F_WAL_START, F_WAL_END, F_SEND_TIME, F_REPLY_REQUESTED,
} from "../tape.ts";
import { loadU8, loadI16BE, loadI32BE, loadWord, storeWord, imul, gtU32 } from "./portable.ts";

// Parse functions return the offset after what they read, or one of these.
const ERR: i32 = -1;
const FULL: i32 = -2;
const TABLE_FULL: i32 = -3;

// Per call: where the input and the tape are, and the tape cursor.
let base: usize = 0;
let tapeBase: usize = 0;
let tp: i32 = 0;
let tapeCap: i32 = 0;
let inStream: bool = false;
// Relation, Type, Stream Start and Stop records written this call (R_STATE_RECORDS).
let stateRecords: i32 = 0;

// The innermost message being decoded, for error reports.
let curStart: i32 = 0;
let curEnd: i32 = 0;
// Flags the enclosing frame adds to the message's record (FLAG_XLOGDATA).
let frameFlags: i32 = 0;

// The relation width table (tape.ts), and what the current message's tuples were.
let table: usize = 0;
let oldAt: i32 = -1; // offset of the old TupleData's Int16 ncols, or -1
let oldN: i32 = 0;
let newAt: i32 = -1;
let newN: i32 = 0;
let relN: i32 = 0; // a Relation message's column count

function slot(i: i32): usize {
  return table + (<usize>(TABLE_HEADER_WORDS + 2 * i) << 2);
}

/** The column count the table holds for a relation, or -1. */
function widthOf(oid: i32): i32 {
  if (table == 0) return -1;
  const mask = loadWord(table + (TABLE_CAPACITY << 2)) - 1;
  let i = imul(oid, TABLE_HASH) & mask;
  // The load stays at most 3/4, so a free slot ends the probe; the bound is a second guarantee.
  for (let k = 0; k <= mask; k++) {
    const s = slot(i);
    const w = loadWord(s + 4);
    if (w == 0) return -1;
    if (loadWord(s) == oid) return w - 1;
    i = (i + 1) & mask;
  }
  return -1;
}

/** Records a relation's column count (the caller checked there is room). */
function setWidth(oid: i32, width: i32): void {
  if (table == 0) return;
  const mask = loadWord(table + (TABLE_CAPACITY << 2)) - 1;
  let i = imul(oid, TABLE_HASH) & mask;
  for (let k = 0; k <= mask; k++) {
    const s = slot(i);
    const w = loadWord(s + 4);
    if (w == 0) {
      storeWord(table + (TABLE_COUNT << 2), loadWord(table + (TABLE_COUNT << 2)) + 1);
      storeWord(s, oid);
    }
    if (w == 0 || loadWord(s) == oid) {
      storeWord(s + 4, width + 1);
      return;
    }
    i = (i + 1) & mask;
  }
}

// The error being reported, if any.
let eCode: i32 = 0;
let eOffset: i32 = 0;
let eField: i32 = 0;
let eColumn: i32 = -1;
let eTuple: i32 = 0;

function u8at(o: i32): i32 {
  return loadU8(base + <usize>o);
}
function i16at(o: i32): i32 {
  return loadI16BE(base + <usize>o);
}
function i32at(o: i32): i32 {
  return loadI32BE(base + <usize>o);
}
function put(i: i32, v: i32): void {
  storeWord(tapeBase + (<usize>i << 2), v);
}

function fail(code: i32, offset: i32, field: i32): i32 {
  eCode = code;
  eOffset = offset;
  eField = field;
  return ERR;
}

/** Checks that n bytes of `field` start at p before the message end e; returns p + n or ERR. */
function take(p: i32, n: i32, e: i32, field: i32): i32 {
  return e - p < n ? fail(E_INCOMPLETE, p, field) : p + n;
}

/** Skips a NUL-terminated String; returns the offset after the NUL or ERR. */
function cstring(p: i32, e: i32, field: i32): i32 {
  let q = p;
  while (q < e) {
    if (u8at(q) == 0) return q + 1;
    q++;
  }
  return fail(E_INCOMPLETE, p, field);
}

/** A String field put on the tape as (offset, length); returns the offset after it or ERR. */
function stringField(p: i32, e: i32, field: i32): i32 {
  const q = cstring(p, e, field);
  if (q < 0) return ERR;
  put(tp++, p);
  put(tp++, q - 1 - p);
  return q;
}

/** The last field must end the message exactly. */
function finish(p: i32, e: i32): i32 {
  return p < 0 ? p : p == e ? p : fail(E_TRAILING_BYTES, p, F_END);
}

/**
 * TupleData: Int16 ncols, then per column a kind byte and, for 't'/'b', an
 * Int32 length and the value. Puts ncols and each column's kind-byte offset.
 */
function tuple(p: i32, e: i32, which: i32): i32 {
  if (e - p < 2) return tupleFail(E_INCOMPLETE, p, F_TUPLE_COLUMN_COUNT, -1, which);
  const n = i16at(p);
  if (n < 0) return tupleFail(E_INVALID_LENGTH, p, F_TUPLE_COLUMN_COUNT, -1, which);
  if (which == TUPLE_OLD) { oldAt = p; oldN = n; } else { newAt = p; newN = n; }
  p += 2;
  // One capacity check per tuple keeps the column loop free of them.
  if (tp + 1 + n > tapeCap) return FULL;
  put(tp, n);
  // The hottest loop: globals copied to locals (wasm globals are not kept in registers).
  const b = base;
  let out = tapeBase + (<usize>(tp + 1) << 2);
  tp += 1 + n;
  for (let i = 0; i < n; i++) {
    if (p >= e) return tupleFail(E_INCOMPLETE, p, F_TUPLE_COLUMN_KIND, i, which);
    const kind = loadU8(b + <usize>p);
    storeWord(out, p);
    out += 4;
    if (kind == 0x74 || kind == 0x62) { // 't', 'b'
      if (e - p < 5) return tupleFail(E_INCOMPLETE, p + 1, F_TUPLE_COLUMN_LENGTH, i, which);
      const len = loadI32BE(b + <usize>(p + 1));
      if (len < 0) return tupleFail(E_INVALID_LENGTH, p + 1, F_TUPLE_COLUMN_LENGTH, i, which);
      // Subtraction, not p + 5 + len: a huge len must not overflow past e.
      if (len > e - p - 5) return tupleFail(E_INCOMPLETE, p + 5, F_TUPLE_COLUMN_VALUE, i, which);
      p += 5 + len;
    } else if (kind == 0x6e || kind == 0x75) { // 'n', 'u'
      p++;
    } else {
      return tupleFail(E_INVALID_COLUMN_KIND, p, F_TUPLE_COLUMN_KIND, i, which);
    }
  }
  return p;
}

function tupleFail(code: i32, offset: i32, field: i32, column: i32, which: i32): i32 {
  eColumn = column;
  eTuple = which;
  return fail(code, offset, field);
}

/** Relation: OID, namespace, name, replica identity, Int16 ncols, columns. */
function relation(p: i32, e: i32): i32 {
  p = take(p, 4, e, F_RELATION_ID);
  if (p < 0) return ERR;
  p = stringField(p, e, F_NAMESPACE);
  if (p < 0) return ERR;
  p = stringField(p, e, F_NAME);
  if (p < 0) return ERR;
  if (p >= e) return fail(E_INCOMPLETE, p, F_REPLICA_IDENTITY);
  const ri = u8at(p);
  // 'd', 'n', 'f', 'i'
  if (ri != 0x64 && ri != 0x6e && ri != 0x66 && ri != 0x69) return fail(E_INVALID_VALUE, p, F_REPLICA_IDENTITY);
  p++;
  if (e - p < 2) return fail(E_INCOMPLETE, p, F_COLUMN_COUNT);
  const n = i16at(p);
  if (n < 0) return fail(E_INVALID_LENGTH, p, F_COLUMN_COUNT);
  relN = n;
  p += 2;
  if (tp + 1 + 2 * n > tapeCap) return FULL;
  put(tp++, n);
  for (let i = 0; i < n; i++) {
    eColumn = i;
    if (p >= e) return fail(E_INCOMPLETE, p, F_COLUMN_FLAGS);
    put(tp++, p);
    const q = cstring(p + 1, e, F_COLUMN_NAME);
    if (q < 0) return ERR;
    put(tp++, q - 2 - p);
    p = take(q, 4, e, F_COLUMN_TYPE);
    if (p < 0) return ERR;
    p = take(p, 4, e, F_COLUMN_TYPMOD);
    if (p < 0) return ERR;
  }
  eColumn = -1;
  return p;
}

/** Update: [K or O + old TupleData], N + new TupleData. */
function update(p: i32, e: i32): i32 {
  if (p >= e) return fail(E_INCOMPLETE, p, F_TUPLE_TYPE);
  let b = u8at(p);
  if (b == 0x4b || b == 0x4f) { // 'K', 'O'
    put(tp++, b);
    p = tuple(p + 1, e, TUPLE_OLD);
    if (p < 0) return p;
    if (p >= e) return fail(E_INCOMPLETE, p, F_TUPLE_TYPE);
    b = u8at(p);
  } else {
    put(tp++, 0);
  }
  if (b != 0x4e) return fail(E_INVALID_VALUE, p, F_TUPLE_TYPE); // 'N'
  return tuple(p + 1, e, TUPLE_NEW);
}

/** The two-phase messages end with Int32 xid, String GID. */
function xidAndGid(p: i32, e: i32): i32 {
  p = take(p, 4, e, F_XID);
  if (p < 0) return ERR;
  return stringField(p, e, F_GID);
}

/** Decodes the message in [s, e) into one tape record; returns e, ERR or FULL. */
function message(s: i32, e: i32): i32 {
  curStart = s;
  curEnd = e;
  if (s >= e) return fail(E_INCOMPLETE, s, F_TAG);
  // Header plus the largest fixed body; tuples and columns check their own room.
  if (tp + HEADER_WORDS + 8 > tapeCap) return FULL;
  const tag = u8at(s);
  // Begin and Commit, over half of most streams' messages, have one valid length and no body on the tape.
  if ((tag == 0x42 && e - s == 21) || (tag == 0x43 && e - s == 26)) return fixedRecord(tag | (frameFlags << 8), s, e);
  // A Relation may add a table entry: keep the load at most 3/4.
  if (tag == 0x52 && table != 0 && (loadWord(table + (TABLE_COUNT << 2)) + 1) * 4 > loadWord(table + (TABLE_CAPACITY << 2)) * 3) return TABLE_FULL;
  const rec = tp;
  tp += HEADER_WORDS;
  oldAt = -1;
  newAt = -1;
  let flags = frameFlags;
  let p = s + 1;
  // Inside a streamed block these messages carry the transaction's xid first.
  if (inStream && (tag == 0x52 || tag == 0x59 || tag == 0x49 || tag == 0x55 || tag == 0x44 || tag == 0x54 || tag == 0x4d)) {
    p = take(p, 4, e, F_XID);
    if (p < 0) return ERR;
    flags |= FLAG_XID;
  }
  switch (tag) {
    case 0x42: { // 'B' Begin: final LSN, commit time, xid
      p = take(p, 8, e, F_LSN);
      if (p >= 0) p = take(p, 8, e, F_TIME);
      if (p >= 0) p = take(p, 4, e, F_XID);
      break;
    }
    case 0x43: { // 'C' Commit: flags, commit LSN, end LSN, commit time
      p = take(p, 1, e, F_FLAGS);
      if (p >= 0) p = take(p, 8, e, F_LSN);
      if (p >= 0) p = take(p, 8, e, F_END_LSN);
      if (p >= 0) p = take(p, 8, e, F_TIME);
      break;
    }
    case 0x4f: { // 'O' Origin: origin LSN, name
      p = take(p, 8, e, F_LSN);
      if (p >= 0) p = stringField(p, e, F_NAME);
      break;
    }
    case 0x4d: { // 'M' Message: flags, LSN, prefix, Int32 n, content
      p = take(p, 1, e, F_FLAGS);
      if (p >= 0) p = take(p, 8, e, F_LSN);
      if (p >= 0) p = stringField(p, e, F_PREFIX);
      if (p >= 0) {
        if (e - p < 4) return fail(E_INCOMPLETE, p, F_CONTENT_LENGTH);
        const n = i32at(p);
        if (n < 0) return fail(E_INVALID_LENGTH, p, F_CONTENT_LENGTH);
        p += 4;
        if (n > e - p) return fail(E_INCOMPLETE, p, F_CONTENT);
        put(tp++, p);
        put(tp++, n);
        p += n;
      }
      break;
    }
    case 0x52: { // 'R' Relation
      p = relation(p, e);
      break;
    }
    case 0x59: { // 'Y' Type: OID, namespace, name
      p = take(p, 4, e, F_TYPE_ID);
      if (p >= 0) p = stringField(p, e, F_NAMESPACE);
      if (p >= 0) p = stringField(p, e, F_NAME);
      break;
    }
    case 0x49: { // 'I' Insert: relation OID, 'N', TupleData
      p = take(p, 4, e, F_RELATION_ID);
      if (p >= 0) {
        if (p >= e) return fail(E_INCOMPLETE, p, F_TUPLE_TYPE);
        if (u8at(p) != 0x4e) return fail(E_INVALID_VALUE, p, F_TUPLE_TYPE);
        p = tuple(p + 1, e, TUPLE_NEW);
      }
      break;
    }
    case 0x55: { // 'U' Update
      p = take(p, 4, e, F_RELATION_ID);
      if (p >= 0) p = update(p, e);
      break;
    }
    case 0x44: { // 'D' Delete: relation OID, 'K' or 'O', TupleData
      p = take(p, 4, e, F_RELATION_ID);
      if (p >= 0) {
        if (p >= e) return fail(E_INCOMPLETE, p, F_TUPLE_TYPE);
        const b = u8at(p);
        if (b != 0x4b && b != 0x4f) return fail(E_INVALID_VALUE, p, F_TUPLE_TYPE);
        put(tp++, b);
        p = tuple(p + 1, e, TUPLE_OLD);
      }
      break;
    }
    case 0x54: { // 'T' Truncate: Int32 nrels, options, nrels OIDs
      if (e - p < 4) return fail(E_INCOMPLETE, p, F_RELATION_COUNT);
      const n = i32at(p);
      if (n < 0) return fail(E_INVALID_LENGTH, p, F_RELATION_COUNT);
      p = take(p + 4, 1, e, F_OPTIONS);
      // Compare counts, not n * 4: the product can overflow.
      if (p >= 0 && n > (e - p) >> 2) return fail(E_INCOMPLETE, p + ((e - p) & ~3), F_RELATION_IDS);
      if (p >= 0) p += n << 2;
      break;
    }
    case 0x53: { // 'S' Stream Start: xid, first-segment flag
      p = take(p, 4, e, F_XID);
      if (p >= 0) p = take(p, 1, e, F_FIRST_SEGMENT);
      break;
    }
    case 0x45: { // 'E' Stream Stop: no fields
      break;
    }
    case 0x63: { // 'c' Stream Commit: xid, flags, commit LSN, end LSN, commit time
      p = take(p, 4, e, F_XID);
      if (p >= 0) p = take(p, 1, e, F_FLAGS);
      if (p >= 0) p = take(p, 8, e, F_LSN);
      if (p >= 0) p = take(p, 8, e, F_END_LSN);
      if (p >= 0) p = take(p, 8, e, F_TIME);
      break;
    }
    case 0x41: { // 'A' Stream Abort: xid, sub-xid, and with protocol 4 parallel: abort LSN, abort time
      p = take(p, 4, e, F_XID);
      if (p >= 0) p = take(p, 4, e, F_SUB_XID);
      // The v4 fields are told by the remaining length, not the protocol version.
      if (p >= 0 && p < e) {
        p = take(p, 8, e, F_END_LSN);
        if (p >= 0) p = take(p, 8, e, F_TIME);
        flags |= FLAG_ABORT_V4;
      }
      break;
    }
    case 0x62: { // 'b' Begin Prepare: prepare LSN, end LSN, prepare time, xid, GID
      p = take(p, 8, e, F_LSN);
      if (p >= 0) p = take(p, 8, e, F_END_LSN);
      if (p >= 0) p = take(p, 8, e, F_TIME);
      if (p >= 0) p = xidAndGid(p, e);
      break;
    }
    case 0x50: // 'P' Prepare
    case 0x4b: // 'K' Commit Prepared
    case 0x70: { // 'p' Stream Prepare: flags, LSN, end LSN, time, xid, GID
      p = take(p, 1, e, F_FLAGS);
      if (p >= 0) p = take(p, 8, e, F_LSN);
      if (p >= 0) p = take(p, 8, e, F_END_LSN);
      if (p >= 0) p = take(p, 8, e, F_TIME);
      if (p >= 0) p = xidAndGid(p, e);
      break;
    }
    case 0x72: { // 'r' Rollback Prepared: flags, prepare end LSN, rollback end LSN, prepare time, rollback time, xid, GID
      p = take(p, 1, e, F_FLAGS);
      if (p >= 0) p = take(p, 8, e, F_LSN);
      if (p >= 0) p = take(p, 8, e, F_END_LSN);
      if (p >= 0) p = take(p, 8, e, F_TIME);
      if (p >= 0) p = take(p, 8, e, F_TIME2);
      if (p >= 0) p = xidAndGid(p, e);
      break;
    }
    default:
      return fail(E_UNKNOWN_MESSAGE, s, F_TAG);
  }
  p = finish(p, e);
  if (p < 0) return p;
  // The relation OID follows the tag (and the streamed xid) in R, I, U and D.
  const oidAt = s + 1 + ((flags & FLAG_XID) != 0 ? 4 : 0);
  if (tag == 0x49 || tag == 0x55 || tag == 0x44) { // 'I', 'U', 'D'
    // Checked once the whole message was read: a cut-short message is INCOMPLETE first.
    const width = widthOf(i32at(oidAt));
    if (width >= 0 && oldAt >= 0 && oldN != width) return tupleFail(E_COLUMN_COUNT_MISMATCH, oldAt, F_TUPLE_COLUMN_COUNT, -1, TUPLE_OLD);
    if (width >= 0 && newAt >= 0 && newN != width) return tupleFail(E_COLUMN_COUNT_MISMATCH, newAt, F_TUPLE_COLUMN_COUNT, -1, TUPLE_NEW);
  } else if (tag == 0x52) { // 'R'
    setWidth(i32at(oidAt), relN);
    stateRecords++;
  } else if (tag == 0x53 || tag == 0x45) { // 'S', 'E'
    inStream = tag == 0x53;
    stateRecords++;
  } else if (tag == 0x59) stateRecords++; // 'Y'
  put(rec + H_TAG, tag | (flags << 8));
  put(rec + H_SIZE, tp - rec);
  put(rec + H_OFFSET, s);
  put(rec + H_LENGTH, e - s);
  return e;
}

/** Puts a record for a message the kernel does not parse further (keepalive, backend message). */
function plainRecord(tag: i32, flags: i32, s: i32, e: i32): i32 {
  if (tp + HEADER_WORDS > tapeCap) return FULL;
  return fixedRecord(tag | (flags << 8), s, e);
}

/** Puts a header-only record (the caller checked the room); returns e. */
function fixedRecord(head: i32, s: i32, e: i32): i32 {
  const at = tapeBase + (<usize>tp << 2);
  storeWord(at + (H_TAG << 2), head);
  storeWord(at + (H_SIZE << 2), HEADER_WORDS);
  storeWord(at + (H_OFFSET << 2), s);
  storeWord(at + (H_LENGTH << 2), e - s);
  tp += HEADER_WORDS;
  return e;
}

/**
 * A CopyData payload from the walsender: 'w' XLogData (start LSN, end of
 * WAL, send time, one pgoutput message) or 'k' primary keepalive (end of
 * WAL, send time, reply requested).
 */
function walsender(s: i32, e: i32): i32 {
  curStart = s;
  curEnd = e;
  if (s >= e) return fail(E_INCOMPLETE, s, F_TAG);
  const tag = u8at(s);
  let p = s + 1;
  if (tag == 0x77) { // 'w'
    p = take(p, 8, e, F_WAL_START);
    if (p >= 0) p = take(p, 8, e, F_WAL_END);
    if (p >= 0) p = take(p, 8, e, F_SEND_TIME);
    if (p < 0) return ERR;
    frameFlags = FLAG_XLOGDATA;
    const r = message(p, e);
    frameFlags = 0;
    return r;
  }
  if (tag == 0x6b) { // 'k'
    p = take(p, 8, e, F_WAL_END);
    if (p >= 0) p = take(p, 8, e, F_SEND_TIME);
    if (p >= 0) p = take(p, 1, e, F_REPLY_REQUESTED);
    p = finish(p, e);
    return p < 0 ? p : plainRecord(tag, FLAG_KEEPALIVE, s, e);
  }
  curEnd = s; // no pgoutput message kind to name
  return fail(E_UNKNOWN_MESSAGE, s, F_TAG);
}

/**
 * Decodes input[from, length) (offsets relative to `input`) and appends
 * records to tape[tapeFrom, tapeCapacity). Framings (tape.ts): one message;
 * length-prefixed messages; length-prefixed walsender CopyData payloads; or
 * raw backend-protocol bytes. A frame that has not wholly arrived ends the
 * walk without error. Fills the result words at `result`; returns a STATUS.
 */
export function decode(
  input: usize, from: i32, length: i32, framing: i32,
  tape: usize, tapeFrom: i32, tapeCapacity: i32,
  state: i32, maxMessage: i32, result: usize, widths: usize,
): i32 {
  base = input;
  table = widths;
  tapeBase = tape;
  tp = tapeFrom;
  tapeCap = tapeCapacity;
  inStream = (state & STATE_IN_STREAM) != 0;
  frameFlags = 0;
  stateRecords = 0;
  // Every error word is reset, so the result words depend on this call alone (not on an earlier one's error).
  eCode = 0;
  eOffset = 0;
  eField = 0;
  eColumn = -1;
  eTuple = 0;
  curStart = from;
  curEnd = from;
  let pos = from;
  let count = 0;
  let status = STATUS_OK;
  if (framing == FRAMING_ONE) {
    if (length - from > maxMessage) {
      status = STATUS_ERROR;
      curEnd = length; // its tag names the message kind
      fail(E_MESSAGE_TOO_LARGE, from, F_TAG);
    } else {
      const r = message(from, length);
      if (r >= 0) { pos = length; count = 1; }
      else status = r == FULL ? STATUS_TAPE_FULL : r == TABLE_FULL ? STATUS_TABLE_FULL : STATUS_ERROR;
    }
  } else {
    const backend = framing == FRAMING_BACKEND;
    // A walsender payload adds the 'w' and the XLogData header to the message.
    // It is compared with the frame length as u32 (gtU32), as both are meant: the length is read
    // as an Int32, and the sum wraps in the wasm build (gtU32 takes it modulo 2^32 in the TS one).
    const limit = framing == FRAMING_LENGTH ? maxMessage : maxMessage + 1 + XLOGDATA_HEADER;
    const headerSize = backend ? 5 : 4;
    while (length - pos >= headerSize) {
      // Backend frames: type byte, Int32 length counting itself. Others: uint32 length of what follows.
      const type = backend ? u8at(pos) : 0;
      let n = loadI32BE(input + <usize>(backend ? pos + 1 : pos));
      const start = pos + headerSize;
      curStart = start;
      curEnd = start;
      if (backend) {
        if (n < 4) {
          status = STATUS_ERROR;
          fail(E_INVALID_LENGTH, pos + 1, F_FRAME_LENGTH);
          break;
        }
        n -= 4;
      }
      if (gtU32(n, limit)) {
        status = STATUS_ERROR;
        fail(E_MESSAGE_TOO_LARGE, backend ? pos + 1 : pos, F_FRAME_LENGTH);
        break;
      }
      if (n > length - start) break; // the rest of the frame has not arrived
      const end = start + n;
      const rollback = tp;
      let r: i32;
      if (framing == FRAMING_LENGTH) r = message(start, end);
      else if (!backend || type == 0x64) r = walsender(start, end); // 'd' CopyData
      else r = plainRecord(type, FLAG_BACKEND, pos, end); // ErrorResponse, CopyDone, ...
      if (r < 0) {
        tp = rollback;
        status = r == FULL ? STATUS_TAPE_FULL : r == TABLE_FULL ? STATUS_TABLE_FULL : STATUS_ERROR;
        break;
      }
      pos = end;
      count++;
    }
  }
  if (status == STATUS_ERROR) {
    // The failing message's tag, if it has one.
    storeWord(result + (R_ERROR_TAG << 2), curStart < curEnd ? u8at(curStart) : 0);
    storeWord(result + (R_ERROR_START << 2), curStart);
  }
  storeWord(result + (R_CONSUMED << 2), pos);
  storeWord(result + (R_TAPE_USED << 2), tp);
  storeWord(result + (R_COUNT << 2), count);
  storeWord(result + (R_STATE << 2), inStream ? STATE_IN_STREAM : 0);
  storeWord(result + (R_STATE_RECORDS << 2), stateRecords);
  storeWord(result + (R_ERROR_CODE << 2), eCode);
  storeWord(result + (R_ERROR_OFFSET << 2), eOffset);
  storeWord(result + (R_ERROR_FIELD << 2), eField);
  storeWord(result + (R_ERROR_COLUMN << 2), eColumn);
  storeWord(result + (R_ERROR_TUPLE << 2), eTuple);
  return status;
}
