// The side table (spec: bindings/row-values.ts): a tape tuple's numbers,
// booleans and timestamps parsed in one call. The wasm build's only: it
// writes int64s, which the TS build of the kernel has not (portable.ts).
import {
  ROW_BOOL, ROW_FLOAT4, ROW_FLOAT8, ROW_INT, ROW_INT8, ROW_TIMESTAMP, ROW_TIMESTAMPTZ, ROW_VALUE_COLUMNS,
} from "../bindings/row-values";
import { KIND_TEXT } from "../bindings/tape";
import { parseTextTimestamp, timestampDays, timestampSeconds, timestampFraction } from "../bindings/kernel/text-timestamp";

/** Every coded text column of the TUPLE at `tuple` into its slot at `out`; returns the bit set of slots written. */
export function rowValues(tuple: i32, plan0: i32, plan1: i32, plan2: i32, plan3: i32, out: i32): i32 {
  const count = load<i32>(tuple);
  const n = count < ROW_VALUE_COLUMNS ? count : ROW_VALUE_COLUMNS;
  let done = 0;
  for (let i = 0; i < n; i++) {
    const plan = i < 8 ? plan0 : i < 16 ? plan1 : i < 24 ? plan2 : plan3;
    const code = (plan >>> ((i & 7) << 2)) & 15;
    if (code == 0) continue;
    const p = load<i32>(tuple + 4 + (i << 2));
    if (<i32>load<u8>(p) != KIND_TEXT) continue;
    if (parse(code, p + 5, <i32>bswap<u32>(load<u32>(p + 1)), out + (i << 3))) done |= 1 << i;
  }
  return done;
}

function parse(code: i32, at: i32, length: i32, slot: i32): bool {
  if (code == ROW_INT) return int(at, length, 15, slot);
  if (code == ROW_INT8) return int8(at, length, slot);
  if (code == ROW_FLOAT8 || code == ROW_FLOAT4) return float(at, length, code == ROW_FLOAT4, slot);
  if (code == ROW_BOOL) {
    if (length != 1) return false;
    const c = <i32>load<u8>(at);
    if (c != 0x74 && c != 0x66) return false;
    store<f64>(slot, c == 0x74 ? 1.0 : 0.0);
    return true;
  }
  if (code == ROW_TIMESTAMP || code == ROW_TIMESTAMPTZ) {
    if (!parseTextTimestamp(at, length, code == ROW_TIMESTAMPTZ ? 1 : 0)) return false;
    store<i64>(slot, (<i64>timestampDays * 86400 + <i64>timestampSeconds) * 1000000 + <i64>timestampFraction);
    return true;
  }
  return false;
}

// The last integer digitsOf() read: its magnitude (unsigned: 19 digits are below 10^19 < 2^64, so it cannot wrap) and sign.
let magnitude: u64 = 0;
let negative = false;

/** `-?[0-9]{1,max}` (max ≤ 19) into magnitude and negative. */
function digitsOf(at: i32, length: i32, max: i32): bool {
  const end = at + length;
  let p = at;
  negative = p < end && load<u8>(p) == 0x2d;
  if (negative) p++;
  if (p == end || end - p > max) return false;
  let v: u64 = 0;
  for (; p < end; p++) {
    const d = <i32>load<u8>(p) - 48;
    if (<u32>d > 9) return false;
    v = v * 10 + <u64>d;
  }
  magnitude = v;
  return true;
}

/** `-?[0-9]{1,max}` (max ≤ 15, so exact) → a double; `-0` is 0, as the JS parser's `0 - n`. */
function int(at: i32, length: i32, max: i32, slot: i32): bool {
  if (!digitsOf(at, length, max)) return false;
  const v = <f64>magnitude;
  store<f64>(slot, negative ? 0 - v : v);
  return true;
}

/** `-?[0-9]{1,19}` within int8's range → the int64. */
function int8(at: i32, length: i32, slot: i32): bool {
  if (!digitsOf(at, length, 19) || magnitude > (negative ? <u64>0x8000000000000000 : <u64>0x7fffffffffffffff)) return false;
  store<i64>(slot, negative ? -<i64>magnitude : <i64>magnitude);
  return true;
}

/** textFloat8's exact fast path (spec: ROW_FLOAT8), rounded to float32 for `single`. */
function float(at: i32, length: i32, single: bool, slot: i32): bool {
  const end = at + length;
  let p = at;
  const neg = p < end && load<u8>(p) == 0x2d;
  if (neg) p++;
  const first = p;
  // The same operations in the same order as the JS parser: n stays exact below 2^53.
  let n: f64 = 0;
  let scale = -1;
  for (; p < end; p++) {
    const c = <i32>load<u8>(p);
    const d = c - 48;
    if (<u32>d <= 9) {
      n = n * 10 + <f64>d;
      if (scale >= 0) scale++;
    } else if (c == 0x2e && scale < 0) scale = 0;
    else return false;
  }
  if (p == first || scale == 0 || !(n < 9007199254740992.0) || scale > 22) return false;
  let v = n;
  if (scale > 0) {
    // 10^scale by exact products (every power up to 10^22 is a double).
    let ten: f64 = 1;
    for (let k = 0; k < scale; k++) ten *= 10;
    v = n / ten;
  }
  if (neg) v = -v;
  store<f64>(slot, single ? <f64><f32>v : v);
  return true;
}
