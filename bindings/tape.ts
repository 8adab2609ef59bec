/**
 * The tape: the index the wasm kernel writes and the bindings read. This file
 * is the one place its numbers are defined; it is compiled into both the
 * AssemblyScript kernel and the TypeScript bindings, so it holds only integer
 * constants (valid AssemblyScript and TypeScript alike).
 *
 * ## Memory
 * The binding lays out, from the kernel's `heapBase()`:
 *   [ result: RESULT_WORDS i32 | input bytes | tape: i32 words ]
 * and calls `decode(input, inputLength, framing, tape, tapeCapacity, state, maxMessage, result)`
 * once per chunk. Offsets on the tape are byte offsets from the input start.
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
 * without error: `consumed` tells where it starts.
 *
 * A pgoutput message that came in an XLogData has FLAG_XLOGDATA; its record
 * offset is that of the pgoutput tag, the 24 header bytes precede it. A
 * keepalive is a record with tag 'k', FLAG_KEEPALIVE, offset of the 'k'.
 *
 * ## Records
 * Every message is one record of i32 words:
 *   word 0  tag | flags << 8      tag: the message's tag byte ('B' = 66 ...)
 *   word 1  size of the record in words, header included (skip in O(1))
 *   word 2  offset of the message's tag byte
 *   word 3  length of the message in bytes
 * followed by a body that depends on the tag. Fixed-layout fields (LSNs,
 * times, xids, OIDs, flags) are not copied: readers load them from the bytes
 * at offsets that follow from the tag and FLAG_XID. The body holds what a
 * reader cannot find in O(1):
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
 * value follows the length. Every offset and length on the tape has been
 * checked by the kernel against the end of its message.
 *
 * ## Worked example
 * A framed Begin then Insert (relation 16384, one text column "hi"):
 *   input: 00 00 00 15 | 42 <finalLsn:8> <commitTime:8> <xid:4>
 *          00 00 00 0F | 49 00 00 40 00 4E 00 01 74 00 00 00 02 68 69
 *   tape:  [66, 4, 4, 21,   73, 6, 29, 15, 1, 37]
 * Begin: tag 66 'B', 4 words, at byte 4, 21 bytes long. Insert: tag 73 'I',
 * 6 words, at byte 29, 15 bytes; TUPLE: 1 column whose kind byte ('t') is at
 * byte 37, so its length is at 38 and the value "hi" at 42..44.
 * (test/tape.test.ts decodes exactly this input and checks this tape.)
 *
 * ## Result
 * `decode` returns a STATUS and fills RESULT_WORDS i32 at `result`. The
 * error words are reset on every call (code 0, offset 0, field 0, column -1,
 * tuple 0) so the words depend on the call alone; R_ERROR_TAG and
 * R_ERROR_START are written only with STATUS_ERROR.
 *
 * ## Relation width table
 * A last argument points to the relation width table (below): the kernel
 * updates it from Relation messages and checks every Insert, Update and
 * Delete tuple's column count against it (COLUMN_COUNT_MISMATCH), so the
 * bindings need not walk the changes at all. A null pointer (0) means no
 * table: nothing is checked.
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

export const TUPLE_OLD = 1;
export const TUPLE_NEW = 2;

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
