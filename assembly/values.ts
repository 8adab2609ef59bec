// The wasm kernel's textTimestamp: bindings/kernel/text-timestamp.ts's
// parse, as the i64 of µs since 1970-01-01 UTC that the binding reads, or
// NOT_PARSED for the JS parser (bindings/baseline/kernel.ts makes the TS
// build's bigint the same way).
import { parseTextTimestamp, timestampDays, timestampSeconds, timestampFraction } from "../bindings/kernel/text-timestamp";

/** Not parsed here; let the JS parser decide. No timestamp maps to it (the earliest, 4713 BC, is about -2^57.5). */
export const NOT_PARSED: i64 = i64.MIN_VALUE + 1;

/** A text timestamp (withZone: timestamptz) at memory[offset, offset + length) → µs since 1970-01-01 UTC, or NOT_PARSED. */
export function textTimestamp(offset: i32, length: i32, withZone: i32): i64 {
  if (!parseTextTimestamp(offset, length, withZone)) return NOT_PARSED;
  return (<i64>timestampDays * 86400 + <i64>timestampSeconds) * 1000000 + <i64>timestampFraction;
}
