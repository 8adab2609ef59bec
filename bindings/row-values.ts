/**
 * The side table: a tape TUPLE's numbers, booleans and timestamps parsed by
 * the wasm kernel in one call, for the row readers (values/row-reader.ts).
 * Written once here; assembly/row-values.ts implements it.
 *
 *   rowValues(tuple, plan0, plan1, plan2, plan3, out): done
 * - tuple: byte address of the TUPLE's first tape word (its column count;
 *   then each column's kind-byte address, bindings/tape.ts).
 * - plan0..plan3: a ROW_* code per column in 4-bit fields, column i in bits
 *   4(i mod 8) of plan⌊i/8⌋; columns 0-31 only (ROW_VALUE_COLUMNS).
 * - out: byte address of ROW_VALUE_COLUMNS 8-byte slots (the binding's,
 *   memory-layout.ts), slot i for column i.
 * - done: bit i set when slot i holds column i's value. Only a text-format
 *   ('t') column with a code is tried, and only a form the JS parser of
 *   that type reads the same way (below) is taken: for anything else the
 *   bit is clear and the JS parser decides, errors included. Nothing else
 *   is written; the kernel reads only the tuple's bytes.
 *
 * Codes, the JS parser they stand for (values/text/*.ts) and the slot:
 * - ROW_BOOL (textBool): `t` or `f` → a double 1 or 0.
 * - ROW_INT (textInt, textUint32, textInt8Number's short case):
 *   `-?[0-9]{1,15}` → the double (`-0` is 0, as `0 - 0`).
 * - ROW_INT8 (textInt8): `-?[0-9]{1,19}` in int8's range → the int64.
 * - ROW_FLOAT8 (textFloat8's exact fast path): `-?[0-9]*(\.[0-9]+)?` with a
 *   digit, whose digits as an integer n are below 2^53 with at most 22 after
 *   the point → n / 10^k, negated for `-` (one correctly rounded division).
 * - ROW_FLOAT4 (textFloat4): ROW_FLOAT8's double rounded to float32.
 * - ROW_TIMESTAMP, ROW_TIMESTAMPTZ (textTimestamp, textTimestamptz): what
 *   kernel/text-timestamp.ts parses → µs since 1970-01-01 UTC, an int64.
 *
 * Why one call per row: a call into wasm has a fixed cost, and a row's
 * values are parsed by one loop there rather than one JS parser each; the
 * int64s come out as one BigInt64Array read instead of BigInt arithmetic.
 * Why only wasm: the TS build of the kernel has no 64-bit integers
 * (portable.ts), and the pure-TS backend's parsers are the JS ones anyway.
 */
export const ROW_NONE = 0;
export const ROW_BOOL = 1;
export const ROW_INT = 2;
export const ROW_INT8 = 3;
export const ROW_FLOAT8 = 4;
export const ROW_FLOAT4 = 5;
export const ROW_TIMESTAMP = 6;
export const ROW_TIMESTAMPTZ = 7;

/** Columns a side table covers: the first 32 (one bit each in `done`). */
export const ROW_VALUE_COLUMNS = 32;
/** Bytes of the binding's slots. */
export const ROW_VALUE_BYTES = ROW_VALUE_COLUMNS * 8;
