/**
 * LSNs (XLogRecPtr): unsigned 64-bit WAL positions, kept exact as `bigint`.
 * PostgreSQL prints them as two hex halves without leading zeros, `0/17864C0`.
 *
 * @example
 * ```ts
 * formatLsn(parseLsn("16/B374D848")) === "16/B374D848";
 * compareLsn(0x10n, parseLsn("0/F")) === 1;
 * ```
 */

const LSN_PATTERN = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/;
const MAX = 0xffff_ffff_ffff_ffffn;

/** Formats an LSN as PostgreSQL does: `X/Y`, upper-case hex, no leading zeros. */
export function formatLsn(lsn: bigint): string {
  if (lsn < 0n || lsn > MAX) throw new RangeError(`LSN out of range: ${lsn}`);
  const hi = Number(lsn >> 32n);
  const lo = Number(lsn & 0xffff_ffffn);
  return `${hi.toString(16).toUpperCase()}/${lo.toString(16).toUpperCase()}`;
}

/** The LSN whose high and low 32 bits are `hi` and `lo` (unsigned): one bigint below 2^53, as nearly all are. */
export function lsnFromHalves(hi: number, lo: number): bigint {
  return hi < 0x20_0000 ? BigInt(hi * 0x1_0000_0000 + lo) : (BigInt(hi) << 32n) | BigInt(lo);
}

/** Parses PostgreSQL's `X/Y` form into a bigint. Throws a `SyntaxError` on anything else. */
export function parseLsn(text: string): bigint {
  const m = LSN_PATTERN.exec(text);
  if (m === null) throw new SyntaxError(`not an LSN: ${JSON.stringify(text)}`);
  return (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`);
}

/** Orders two LSNs: -1, 0 or 1. Accepts bigints or `X/Y` strings. */
export function compareLsn(a: bigint | string, b: bigint | string): -1 | 0 | 1 {
  const x = typeof a === "string" ? parseLsn(a) : a;
  const y = typeof b === "string" ? parseLsn(b) : b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The invalid LSN `0/0` (InvalidXLogRecPtr). */
export const INVALID_LSN = 0n;
