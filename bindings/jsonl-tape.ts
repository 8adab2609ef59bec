/**
 * The kernel's JSON export, `jsonColumns`: the `[{"name":…,"type":…,"value":…},…]`
 * array of one tuple on the tape (tape.ts), written as UTF-8 bytes into
 * kernel memory by the kernel (bindings/kernel/json-columns.ts), the same
 * bytes in its wasm and its TS build. The JSON Lines writer
 * (bindings/jsonl/writer.ts) calls it per tuple and writes itself only what
 * the kernel declines. Like tape.ts it is compiled into both kernels, so it
 * holds only integer constants.
 *
 * ## jsonColumns: 8 arguments
 *   jsonColumns(tuple, old, columns, from, flags, out, outCapacity, result): JSON_*
 * - tuple: byte address of a TUPLE's ncols word on the tape.
 * - old: the same for the old tuple of an Update (its values stand in for
 *   unchanged TOAST columns of `tuple`), or 0.
 * - columns: byte address of the relation's column table, written by the
 *   binding once per relation (and again after the memory layout moved):
 *   word ncols, then per column JC_WORDS words: kind | isKey << 8 (kind:
 *   JK_*) | its binary kind (JB_*) << 16 | a JB_ARRAY's element kind << 24,
 *   address and length of the column's prefix bytes
 *   `{"name":<name>,"type":<type>,"value":`, a JB_ARRAY's element type
 *   OID, and how many of the prefix's bytes JF_NAMES_ONLY writes.
 * - from: the first column to write.
 * - flags: JF_KEYS (only replica identity columns), JF_NUMBERS_AS_STRINGS
 *   (int8 and numeric quoted), JF_COMMA (a column is already written: the
 *   next one starts with a comma), JF_SKIP_UNCHANGED (unchanged TOAST
 *   columns are left out, not taken from `old`), JF_NAMES_ONLY (each
 *   column's first JC_NAME_LENGTH prefix bytes and `}`, no value),
 *   JF_NO_CLOSE (no `}` after a column), JF_SKIP_NULL (NULL columns are
 *   left out), JF_SPACED (a space after each comma), JF_UNSENT_SKIPPED
 *   (an unchanged TOAST column that `old` has no value for is left out),
 *   JF_ONLY_UNSENT (only those columns); and for a line program's
 *   OP_COLUMNS, JF_BRACES (the columns in `{` `}`, an object, not `[` `]`).
 * - out, outCapacity: the output bytes [out, out + outCapacity).
 * - result: byte address of JR_WORDS result words: JR_WRITTEN (bytes
 *   written at `out`), JR_COLUMN (where it stopped), JR_FLAGS (`flags` with
 *   JF_COMMA as it is after what was written).
 * Per column i: `,` if JF_COMMA, the prefix, the value's JSON, `}`. Kind
 * 'n' is `null`; 'u' takes `old`'s column i when that is 't' or 'b'.
 * Neither the `[` nor the `]` is written.
 *
 * ## Status
 * - JSON_DONE: every column from `from` on is written.
 * - JSON_DECLINED: column JR_COLUMN is the binding's (nothing of it
 *   written): a binary value, unchanged TOAST without an old value, a kind
 *   JK_DECLINE, or text outside the shapes below; the binding writes it and
 *   calls again from JR_COLUMN + 1.
 * - JSON_FULL: column JR_COLUMN may not fit in what is left of the output:
 *   the binding takes the bytes written and calls again from JR_COLUMN. The
 *   room asked for a column is its prefix + 6 × its value length +
 *   JSON_SLACK bytes (every byte a `\u00xx` escape), or where that is more
 *   than is left, its prefix + JSON_SLACK + the value's length with what
 *   each escape adds counted (and 2 quotes per string array element); a
 *   column that needs more than the whole output is declined instead, so a
 *   call always makes progress.
 * - JSON_REFUSED: the arguments do not fit together (the tuple's ncols is
 *   not the table's, `from` out of range, an address outside memory):
 *   nothing written, the binding writes the whole tuple.
 *   Why decline rather than fail: the binding's JS path writes every value
 *   (the same bytes, by the rules both share); the kernel takes the common
 *   shapes only, so it never has to be right about a rare one.
 *
 * ## Text values the kernel writes (else JSON_DECLINED)
 * What the writer's JS path makes of them with `changeValueOptions()`:
 * JK_BOOL `t`/`f` → true/false; JK_INT (int2, int4) and JK_UINT (oid, xid,
 * cid) canonical decimal copied; JK_INT8 copied (quoted with
 * JF_NUMBERS_AS_STRINGS); JK_NUMERIC `-?\d+(\.\d+)?` copied (quoted with
 * the flag), other ASCII (NaN, Infinity) as a string; JK_STRING a JSON
 * string, escaped as JSON.stringify escapes, valid UTF-8 copied (invalid:
 * declined, the JS path turns it into U+FFFD); JK_JSON json/jsonb embedded
 * with each CR/LF run made one space (valid UTF-8 only); JK_TIMESTAMP(TZ)
 * ISO text as timestampISO() prints it (years 1..9999, `+00` only);
 * JK_FLOAT (float8) a decimal of at most 15 significant digits, or of 16
 * or 17 that is its double's shortest (exponent or not), laid out as a JS
 * number prints it; JK_FLOAT4 (float4) the shortest digits of Math.fround's
 * double, laid out the same (both: the wasm build's only); JK_BYTEA lowercase `\x` hex as
 * the string `"\\x…"`; the JK_*_ARRAY kinds one-dimensional arrays in
 * PostgreSQL's plain shape (`{1,NULL,"a b"}`), each element by its kind's
 * rule and NULL (any case, unquoted) as null, a quoted string element's
 * backslash escapes undone (another kind's are declined); JK_INTERVAL IntervalStyle postgres text as
 * the object `{"months":…,"days":…,"microseconds":…}` (microseconds quoted
 * with JF_NUMBERS_AS_STRINGS).
 */

export const JSON_DONE = 0;
export const JSON_DECLINED = 1;
export const JSON_FULL = 2;
export const JSON_REFUSED = 3;

// Flags.
export const JF_KEYS = 1;
export const JF_NUMBERS_AS_STRINGS = 2;
export const JF_COMMA = 4;
/**
 * Write only what the TS build writes too: the values that take u64
 * arithmetic (floats through kernel/shortest.ts, binary int8 past 2^53)
 * declined, as that build always does.
 * For the twin kernel (test/support/twin-kernel.ts), which compares the
 * two builds word for word.
 */
export const JF_AS_PORTABLE = 32;
export const JF_SKIP_UNCHANGED = 64;
export const JF_NAMES_ONLY = 128;
export const JF_NO_CLOSE = 256;
export const JF_SKIP_NULL = 512;
export const JF_SPACED = 1024;
export const JF_UNSENT_SKIPPED = 2048;
export const JF_ONLY_UNSENT = 4096;
export const JF_BRACES = 8192;
/** The column flags a line program's OP_COLUMNS may set (line-templates.ts). */
export const LC_COLUMN_FLAGS = JF_SKIP_UNCHANGED | JF_NAMES_ONLY | JF_NO_CLOSE | JF_SKIP_NULL | JF_SPACED | JF_UNSENT_SKIPPED | JF_ONLY_UNSENT | JF_BRACES;

// Result words.
export const JR_WORDS = 4;
export const JR_WRITTEN = 0;
export const JR_COLUMN = 1;
export const JR_FLAGS = 2;

// The column table: a header word (ncols), then JC_WORDS per column.
export const JC_HEADER_WORDS = 1;
export const JC_WORDS = 5;
export const JC_KIND = 0; // kind | isKey << 8 | binary kind (JB_*) << 16 | JB_ARRAY's element kind (JB_*) << 24
export const JC_PREFIX = 1; // byte address of the prefix
export const JC_PREFIX_LENGTH = 2;
export const JC_ELEMENT = 3; // JB_ARRAY: the element type OID (0 otherwise)
export const JC_NAME_LENGTH = 4; // the prefix's first bytes JF_NAMES_ONLY writes

/** Room asked for a value beyond 6 bytes per byte: comma, quotes, `\\`, `}`, a timestamp's padding. */
export const JSON_SLACK = 34;

// Column kinds (how a text value becomes JSON).
export const JK_DECLINE = 0;
export const JK_BOOL = 1;
export const JK_INT = 2;
export const JK_UINT = 3;
export const JK_INT8 = 4;
export const JK_NUMERIC = 5;
export const JK_STRING = 6;
export const JK_JSON = 7;
export const JK_TIMESTAMP = 8;
export const JK_TIMESTAMPTZ = 9;
export const JK_FLOAT = 10;
export const JK_BYTEA = 11;
export const JK_INT_ARRAY = 12; // int2[], int4[]: elements as JK_INT
export const JK_INT8_ARRAY = 13; // int8[]: elements as JK_INT8
export const JK_STRING_ARRAY = 14; // text[], varchar[], bpchar[], name[]: elements as JK_STRING
export const JK_INTERVAL = 15;
export const JK_FLOAT4 = 16;
// wal2json's rules (formats/wal2json-values.ts): a number's text copied as it is when it is made of
// [0-9+-eE.] (quoted with JF_NUMBERS_AS_STRINGS), `null` for a text that starts NaN, Infinity or -Infinity
// (any case; the text quoted with the flag), any other text a string; bytea's text without its first two
// bytes (`\x`) as a string.
export const JK_W2J_NUMBER = 17;
export const JK_W2J_BYTEA = 18;
// Debezium's forms (formats/debezium-values.ts, kernel/json-debezium.ts) of texts PostgreSQL prints:
// date (`YYYY-MM-DD`, years 1-9999) as days since 1970-01-01; timestamp as µs or ms (floored) since
// then (µs below 2^53); time (`HH:MM:SS[.f]`, hours to 23) as µs or ms since midnight; timestamptz
// (`+00`) as ISO 8601 with six fraction digits and `Z`; numeric whose text starts with a digit (or `-`
// and one) as that text, a string; bytea (`\x` and lowercase hex) as base64, base64 URL-safe or hex; an
// interval (JK_INTERVAL's texts) as `P…Y…M…DT…H…M…S`; float4 as the JS number of its text when its digits
// are the ones Float.toString gives (json-debezium.ts writeFloat4Digits). Any other text, an invalid date
// or time among them: declined.
export const JK_DBZ_DATE = 19;
export const JK_DBZ_TIMESTAMP_US = 20;
export const JK_DBZ_TIMESTAMP_MS = 21;
export const JK_DBZ_TIME_US = 22;
export const JK_DBZ_TIME_MS = 23;
export const JK_DBZ_TIMESTAMPTZ = 24;
export const JK_DBZ_DECIMAL = 25;
export const JK_DBZ_BASE64 = 26;
export const JK_DBZ_BASE64_URL = 27;
export const JK_DBZ_HEX = 28;
export const JK_DBZ_INTERVAL = 29;
export const JK_DBZ_FLOAT4 = 30;

/**
 * Binary-format column kinds (a column's JB_* beside its JK_*): JB_BOOL one
 * byte (0: false); JB_INT2/JB_INT4 big-endian signed, JB_UINT4 unsigned
 * (oid, xid, cid), JB_INT8 signed (beyond 2^53 in magnitude the wasm build's
 * only, as JB_FLOAT*; quoted with JF_NUMBERS_AS_STRINGS); JB_FLOAT4/JB_FLOAT8 IEEE 754, non-zero and
 * finite, as the JS number prints (the wasm build's only, as JK_FLOAT4);
 * JB_TEXT UTF-8 text (text, varchar, bpchar, name), as JK_STRING;
 * JB_TIMESTAMP/JB_TIMESTAMPTZ µs since 2000-01-01 as the ISO string (years
 * 1..9999); JB_DATE days since 2000-01-01 as PostgreSQL's `YYYY-MM-DD`
 * (years 1..9999, not ±infinity), as the text column's; JB_UUID 16 bytes as
 * the lowercase `8-4-4-4-12` hex string; JB_NUMERIC the base-10000 digits
 * as numeric_out prints them (`-?\d+(\.\d+)?`, dscale fraction digits),
 * quoted with JF_NUMBERS_AS_STRINGS (NaN and ±Infinity declined); JB_JSON
 * the json text, JB_JSONB version byte 1 and the jsonb text, each as
 * JK_JSON; JB_BYTEA the bytes as the `"\\x…"` hex string; JB_INTERVAL
 * [int64 µs][int32 days][int32 months] as JK_INTERVAL's object (µs beyond
 * 2^53 in magnitude, the infinities among them, declined); JB_ARRAY a
 * one-dimensional array (array_send: Int32 ndim, has-nulls flag, element
 * OID, then size and lower bound, then per element an Int32 length, -1 for
 * NULL, and its bytes) whose element OID is the column's JC_ELEMENT, as the
 * JSON array of its elements, each by the element kind's rule (`null` for
 * NULL; the lower bound is not in the JSON, as jsonText drops the JS
 * array's `lowerBounds`); ndim 0 is `[]`. Any other length or value (more
 * dimensions, another element type, an element its rule declines):
 * declined.
 */
export const JB_DECLINE = 0;
export const JB_BOOL = 1;
export const JB_INT2 = 2;
export const JB_INT4 = 3;
export const JB_UINT4 = 4;
export const JB_INT8 = 5;
export const JB_FLOAT4 = 6;
export const JB_FLOAT8 = 7;
export const JB_TEXT = 8;
export const JB_TIMESTAMP = 9;
export const JB_TIMESTAMPTZ = 10;
export const JB_DATE = 11;
export const JB_UUID = 12;
export const JB_NUMERIC = 13;
export const JB_JSON = 14;
export const JB_JSONB = 15;
export const JB_BYTEA = 16;
export const JB_INTERVAL = 17;
export const JB_ARRAY = 18;
