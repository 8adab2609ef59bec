/**
 * The tape: the index the kernel (bindings/kernel/decode.ts) writes and the
 * bindings (bindings/kernel/decoder.ts, views/) read. This file is the spec and the one place its
 * numbers are defined; it is compiled into both the AssemblyScript kernel and
 * the TypeScript bindings, so it holds only integer constants.
 *   Why one file: kernel and reader cannot drift apart on a number.
 *
 * ## Worked example (test/tape.test.ts runs exactly this)
 * A framed Begin then Insert (relation 16384, one text column "hi"), 44 bytes:
 *   input: 00 00 00 15 | 42 <finalLsn:8> <commitTime:8> <xid:4>
 *          00 00 00 0F | 49 00 00 40 00 4E 00 01 74 00 00 00 02 68 69
 *   call:  decode(inputAt, 0, 44, FRAMING_LENGTH, tapeAt, 0, 64, 0, 1 << 30, result, 0)
 *   tape:  [66, 4, 4, 21,   73, 6, 29, 15, 1, 37]
 *   result: STATUS_OK; R_CONSUMED 44, R_TAPE_USED 10, R_COUNT 2, R_STATE 0
 * Begin: tag 66 'B', 4 words, at byte 4, 21 bytes long; its fields are not on
 * the tape but at fixed offsets from 4: finalLsn at 5, commitTime at 13, xid
 * at 21. Insert: tag 73 'I', 6 words, at byte 29, 15 bytes; relation OID at
 * 30; TUPLE: 1 column whose kind byte ('t') is at byte 37, so its length is
 * at 38 and the value "hi" at 42..44.
 *
 * ## COPY rows (initial snapshot)
 * Rows of `COPY ... TO STDOUT` (binary or text) reach the kernel in no
 * framing of its own: bindings/pg/copy-reframe.ts re-frames each tuple as a
 * length-framed pgoutput Insert (a binary field as a `b` column, a text
 * field as `t`, NULL as `n`; the COPY framing is specified there), so the
 * tape of a snapshot row is the tape of an Insert.
 *
 * ## Memory
 * The binding lays out, from the kernel's `heapBase()` (16-aligned):
 *   [ result: 64 bytes (RESULT_WORDS i32 used) | row values: ROW_VALUE_BYTES (bindings/row-values.ts) | input bytes | tape: i32 words | relation width table: i32 words | JSON area ]
 * The tape starts 16-aligned after the input capacity, the table right after
 * the tape capacity, the JSON area (bindings/kernel/json-area.ts; only once
 * a JSON Lines writer asked for it) right after the table; the whole layout
 * ends at or below 2^31 (offsets are i32); bindings/kernel/memory-layout.ts
 * lays it out.
 *   Why one linear region, owned by the binding: the kernel allocates nothing
 *   and imports nothing, so it cannot fail or trap on memory; the binding
 *   grows memory only between calls, and re-takes its typed-array views then.
 *   Why the table last: growing the table (STATUS_TABLE_FULL) moves nothing
 *   else; the binding rewrites it behind a grown tape.
 *
 * The kernel's second export over the tape, `jsonColumns` (a tuple's
 * columns as JSON Lines bytes, for bindings/jsonl/writer.ts), is specified
 * in bindings/jsonl-tape.ts.
 *
 * ## decode: 11 arguments
 *   decode(input, from, length, framing, tape, tapeFrom, tapeCapacity, state, maxMessage, result, widths): STATUS
 * - input: byte address that tape offsets and positions count from. The
 *   binding passes 0, so every offset on the tape is a memory address.
 * - from, length: decode bytes [from, length) relative to `input`; `length`
 *   is the end position, not a count.
 * - framing: FRAMING_* (below).
 * - tape, tapeFrom, tapeCapacity: records go to words [tapeFrom, tapeCapacity)
 *   of the tape at byte address `tape`.
 * - state: STATE_IN_STREAM if the input starts inside a streamed block.
 * - maxMessage: largest pgoutput message in bytes (MESSAGE_TOO_LARGE above).
 * - result: byte address of the RESULT_WORDS result words.
 * - widths: byte address of the relation width table, or 0 for none.
 * One call per chunk, as many messages as the chunk holds.
 *   Why: crossing into wasm has a fixed cost; one call per chunk pays it per
 *   chunk, not per message.
 *   Why `from`/`tapeFrom`: after TAPE_FULL or TABLE_FULL the binding grows
 *   and calls again at R_CONSUMED / R_TAPE_USED with R_STATE, keeping the
 *   records already written (FRAMING_ONE starts over: one message).
 *   Why `state` in and out: inside a streamed block R, Y, I, U, D, T and M
 *   carry an xid after the tag; the kernel must know to parse them, and
 *   StreamStart/Stop change it mid-chunk.
 *
 * ## Records
 * Every message is one record of i32 words:
 *   word 0  tag | flags << 8      tag: the message's tag byte ('B' = 66 ...)
 *   word 1  size of the record in words, header included
 *   word 2  offset of the message's tag byte
 *   word 3  length of the message in bytes
 * followed by a body that depends on the tag. The body holds what a reader
 * cannot find in O(1), the positions of variable-length fields:
 *   Origin 'O'             nameOffset, nameLength
 *   Message 'M'            prefixOffset, prefixLength, contentOffset, contentLength
 *   Relation 'R'           namespaceOffset, namespaceLength, nameOffset, nameLength,
 *                          ncols, then per column: offset of its flags byte, length of its name
 *   Type 'Y'               namespaceOffset, namespaceLength, nameOffset, nameLength
 *   Insert 'I'             TUPLE
 *   Update 'U'             oldTupleType (0, 'K' or 'O'), [TUPLE if oldTupleType], TUPLE
 *   Delete 'D'             oldTupleType ('K' or 'O'), TUPLE
 *   b P K r p (two-phase)  gidOffset, gidLength
 *   B C S E c A T          (empty)
 * TUPLE is: ncols, then per column the offset of its kind byte ('n', 'u',
 * 't', 'b'); for 't' and 'b' the Int32 length follows the kind byte and the
 * value follows the length. Strings' lengths exclude their NUL. Every offset
 * and length on the tape has been checked by the kernel against the end of
 * its message, so readers load without bounds checks.
 *   Why i32 words: one Int32Array indexes them, no decoding of the tape.
 *   Why a size word: skipping a record is O(1) whatever its body.
 *   Why offsets, not copies: values stay in the input bytes; a view reads
 *   only the fields it is asked for (lazy, and zero-copy for bytes).
 *   Why the tag in the low byte: `head & 0xff` is the kind, flags need no
 *   second load.
 *
 * ## Fixed fields, relative to the record offset o
 * Fixed-width fields are not copied to the tape: a reader loads them
 * (big-endian) at an offset that follows from the tag and FLAG_XID.
 *   Why: they cost the kernel nothing to skip and the tape nothing to hold.
 * With x = 4 if FLAG_XID is set, else 0 (the xid itself is the Int32 at o+1):
 *   B  Begin            finalLsn o+1, commitTime o+9, xid o+17
 *   C  Commit           flags o+1, commitLsn o+2, endLsn o+10, commitTime o+18
 *   O  Origin           originLsn o+1 (name on the tape)
 *   M  Message          flags o+1+x (1 = transactional), lsn o+2+x
 *   R  Relation         relationId o+1+x; replica identity and ncols follow the name's NUL;
 *                       a column's typeId at flags + nameLength + 2, typmod 4 later
 *   Y  Type             typeId o+1+x
 *   I U D               relationId o+1+x; then 'N' / 'K' / 'O' at o+5+x
 *   T  Truncate         nrels o+1+x, options o+5+x (1 cascade, 2 restart identity), OIDs from o+6+x
 *   S  Stream Start     xid o+1, firstSegment o+5
 *   E  Stream Stop      (none)
 *   c  Stream Commit    xid o+1, flags o+5, commitLsn o+6, endLsn o+14, commitTime o+22
 *   A  Stream Abort     xid o+1, subXid o+5; with FLAG_ABORT_V4 abortLsn o+9, abortTime o+17
 *   b  Begin Prepare    prepareLsn o+1, endLsn o+9, prepareTime o+17, xid o+25 (GID on the tape)
 *   P K p               flags o+1, prepareLsn / commitLsn o+2, endLsn o+10, time o+18, xid o+26
 *   r  Rollback Prep.   flags o+1, prepareEndLsn o+2, rollbackEndLsn o+10, prepareTime o+18,
 *                       rollbackTime o+26, xid o+34
 * With FLAG_XLOGDATA the 'w' header precedes: 'w' at o-25, walStart o-24,
 * walEnd o-16, sendTime o-8. A keepalive (FLAG_KEEPALIVE, tag 'k', o = its
 * 'k'): walEnd o+1, sendTime o+9, replyRequested o+17. A backend message
 * (FLAG_BACKEND, tag = its type byte, o = that byte, length = the whole
 * message): Int32 length o+1, body from o+5.
 *
 * ## Framing of the input
 * - FRAMING_ONE: the whole input is one pgoutput message.
 * - FRAMING_LENGTH: repeated [uint32 big-endian length][message] (the capture
 *   format; also how the binding packs a list of messages).
 * - FRAMING_COPYDATA: repeated [uint32 big-endian length][walsender CopyData
 *   payload]: 'w' XLogData (start LSN, end of WAL, send time, one pgoutput
 *   message) or 'k' primary keepalive.
 * - FRAMING_BACKEND: raw backend-protocol bytes after START_REPLICATION:
 *   [type byte][Int32 length, counting itself][body]; 'd' CopyData bodies
 *   are walsender payloads as above; other messages (ErrorResponse 'E',
 *   CopyDone 'c', ...) get a record with FLAG_BACKEND and no body.
 * In all but FRAMING_ONE a frame that is not wholly present ends the walk
 * without error: R_CONSUMED tells where it starts. A frame longer than
 * maxMessage (plus 1 + XLOGDATA_HEADER for walsender payloads) is
 * MESSAGE_TOO_LARGE at its header, before its bytes are needed.
 *   Why four framings in the kernel: the socket's bytes go in as they came
 *   (no JS pass to split frames or strip headers), and the capture file and
 *   a list of messages share one loop.
 *   Why the size check at the header: a hostile length is refused before the
 *   binding buffers gigabytes waiting for it.
 *
 * ## Result
 * `decode` returns a STATUS and fills the result words at `result` (R_*):
 * R_CONSUMED (end of the last whole decoded frame), R_TAPE_USED (the tape
 * cursor: tapeFrom + words written), R_COUNT, R_STATE, R_STATE_RECORDS
 * (how many of the call's records are Relation, Type, Stream Start or
 * Stream Stop messages), and on STATUS_ERROR
 * the code, offset, field, column, tuple, tag and start of the fault. The
 * error words are reset on every call (code 0, offset 0, field 0, column -1,
 * tuple 0) so the words depend on the call alone; R_ERROR_TAG and
 * R_ERROR_START are written only with STATUS_ERROR.
 *   Why a result block, not return values: the export stays one i32 in, one
 *   i32 out on every host; each word is one Int32Array read.
 *   Why R_STATE_RECORDS: the binding must apply those records (to its
 *   caches, to its stream state) and nothing else; with the count it stops
 *   walking after the last of them, and most calls have none, so most
 *   batches are never walked in JS.
 *   Why errors as numbers: the binding builds the PgoutputError (message,
 *   kind, field name); the kernel stays allocation-free.
 *   Why records before an error stay valid: the binding applies the good
 *   messages (Relations to its caches) and hands them over with the error.
 *
 * ## Relation width table
 * The kernel updates it from Relation messages and checks every Insert,
 * Update and Delete tuple's column count against it
 * (COLUMN_COUNT_MISMATCH); `widths` = 0 means no table, nothing checked.
 * Layout: header words TABLE_CAPACITY (a power of 2) and TABLE_COUNT, then
 * TABLE_CAPACITY entries of two words (relation OID, column count + 1;
 * 0 marks a free slot), open addressing with linear probing from
 * (oid * TABLE_HASH) & (capacity - 1). A Relation that would take the load
 * above 3/4 stops the walk with STATUS_TABLE_FULL before it is decoded; the
 * binding doubles the table (re-hashing the entries) and resumes.
 *   Why in the kernel: the bindings then need not walk the changes at all,
 *   only Relation and Type records.
 *   Why open addressing on i32 words: no allocation, and the binding can
 *   write and read the same table with an Int32Array and Math.imul.
 */

// Framings.
export const FRAMING_ONE = 0;
export const FRAMING_LENGTH = 1;
export const FRAMING_COPYDATA = 2;
export const FRAMING_BACKEND = 3;

/** Bytes of an XLogData header after its 'w': start LSN, end of WAL, send time. */
export const XLOGDATA_HEADER = 24;

// Header words of a record.
export const HEADER_WORDS = 4;
export const H_TAG = 0;
export const H_SIZE = 1;
export const H_OFFSET = 2;
export const H_LENGTH = 3;

// Flags in word 0 (shifted left by 8).
export const FLAG_XID = 1; // the message carries a streamed transaction's xid after its tag
export const FLAG_ABORT_V4 = 2; // Stream Abort carries abort LSN and time (protocol 4, parallel)
export const FLAG_XLOGDATA = 4; // the message came in an XLogData: its 24-byte header precedes the tag
export const FLAG_KEEPALIVE = 8; // a primary keepalive ('k'): end of WAL, send time, reply flag follow the tag
export const FLAG_BACKEND = 16; // a backend-protocol message other than CopyData (tag = its type byte)

// Decoder state, passed in and returned.
export const STATE_IN_STREAM = 1;

// Status returned by decode().
export const STATUS_OK = 0;
export const STATUS_ERROR = 1;
export const STATUS_TAPE_FULL = 2;
export const STATUS_TABLE_FULL = 3; // the relation width table needs room: grow it and resume at R_CONSUMED

// Result words.
export const RESULT_WORDS = 12;
export const R_CONSUMED = 0; // bytes of input in whole, decoded messages (resume point)
export const R_TAPE_USED = 1; // tape words written
export const R_COUNT = 2; // messages decoded
export const R_STATE = 3; // state after the last decoded message
export const R_ERROR_CODE = 4;
export const R_ERROR_OFFSET = 5; // byte offset of the fault in the input
export const R_ERROR_FIELD = 6; // a FIELD_* id
export const R_ERROR_COLUMN = 7; // column index within a tuple or relation, or -1
export const R_ERROR_TUPLE = 8; // TUPLE_OLD or TUPLE_NEW for tuple fields, else 0
export const R_ERROR_TAG = 9; // tag byte of the failing message, or 0 when not read
export const R_ERROR_START = 10; // offset of the failing message's tag byte
export const R_STATE_RECORDS = 11; // records of state-changing messages (R, Y, S, E) among R_COUNT

export const TUPLE_OLD = 1;
export const TUPLE_NEW = 2;

// TupleData: the byte before each column says what follows (PostgreSQL's protocol): for 't' and 'b'
// an Int32 length and that many bytes of the value, nothing for the other two. Defined here, the file
// both kernels compile, so that kernels and readers share them.
export const KIND_NULL = 0x6e; // 'n'
export const KIND_UNCHANGED = 0x75; // 'u': an unchanged TOASTed value, not sent
export const KIND_TEXT = 0x74; // 't'
export const KIND_BINARY = 0x62; // 'b'

// Error codes (the binding names them; see errors.ts).
export const E_INCOMPLETE = 1;
export const E_UNKNOWN_MESSAGE = 2;
export const E_INVALID_COLUMN_KIND = 3;
export const E_INVALID_VALUE = 4;
export const E_INVALID_LENGTH = 5;
export const E_TRAILING_BYTES = 6;
export const E_MESSAGE_TOO_LARGE = 7;
export const E_COLUMN_COUNT_MISMATCH = 8;

// The relation width table: what the kernel knows of each relation's column
// count, to check every TupleData against it. Header words, then `capacity`
// entries of two words (relation OID, column count + 1; 0 marks a free slot),
// open addressing with linear probing from TABLE_HASH * oid. The kernel adds
// an entry for every Relation message; it keeps the load at most 3/4 and
// answers STATUS_TABLE_FULL when a Relation needs a larger table.
export const TABLE_CAPACITY = 0; // header word: number of entries (a power of 2)
export const TABLE_COUNT = 1; // header word: entries in use
export const TABLE_HEADER_WORDS = 2;
export const TABLE_HASH = 0x9e3779b1;

// Fields named in errors.
export const F_TAG = 1;
export const F_XID = 2;
export const F_FLAGS = 3;
export const F_LSN = 4; // the message's first LSN field (finalLsn, commitLsn, lsn, prepareLsn ...)
export const F_END_LSN = 5; // its second LSN field (endLsn, rollbackEndLsn, abortLsn)
export const F_TIME = 6; // its first timestamp (commitTime, prepareTime, abortTime)
export const F_TIME2 = 7; // its second timestamp (rollbackTime)
export const F_NAME = 8; // origin name, relation name, type name
export const F_NAMESPACE = 9;
export const F_PREFIX = 10;
export const F_CONTENT_LENGTH = 11;
export const F_CONTENT = 12;
export const F_RELATION_ID = 13;
export const F_REPLICA_IDENTITY = 14;
export const F_COLUMN_COUNT = 15;
export const F_COLUMN_FLAGS = 16;
export const F_COLUMN_NAME = 17;
export const F_COLUMN_TYPE = 18;
export const F_COLUMN_TYPMOD = 19;
export const F_TYPE_ID = 20;
export const F_TUPLE_TYPE = 21; // the 'N' / 'K' / 'O' byte before a TupleData
export const F_TUPLE_COLUMN_COUNT = 22;
export const F_TUPLE_COLUMN_KIND = 23;
export const F_TUPLE_COLUMN_LENGTH = 24;
export const F_TUPLE_COLUMN_VALUE = 25;
export const F_OPTIONS = 26;
export const F_RELATION_COUNT = 27;
export const F_RELATION_IDS = 28;
export const F_FIRST_SEGMENT = 29;
export const F_SUB_XID = 30;
export const F_GID = 31;
export const F_FRAME_LENGTH = 32;
export const F_END = 33; // bytes after the last field
export const F_WAL_START = 34;
export const F_WAL_END = 35;
export const F_SEND_TIME = 36;
export const F_REPLY_REQUESTED = 37;
