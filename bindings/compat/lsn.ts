/**
 * LSNs and timestamps in pg-logical-replication's form.
 */
import { fromPostgresTimestamp, POSTGRES_EPOCH_US } from "../time.ts";

/**
 * An LSN as pg-logical-replication's PgoutputPlugin prints it: both halves
 * zero-padded to 8 upper-case hex digits (`00000000/016B3748`; PostgreSQL
 * itself prints `0/16B3748` — both parse as pg_lsn), `null` for 0/0.
 */
export function compatLsn(lsn: bigint): string | null {
  if (lsn === 0n) return null;
  // Every Begin and Commit has LSNs: one Number conversion and a byte table
  // instead of two bigint shifts, toString, padStart and toUpperCase.
  const n = Number(lsn);
  if (n <= Number.MAX_SAFE_INTEGER) {
    const hi = Math.floor(n / 0x1_0000_0000);
    return `${hex8(hi)}/${hex8(n - hi * 0x1_0000_0000)}`;
  }
  return `${hex8(Number(lsn >> 32n))}/${hex8(Number(lsn & 0xffff_ffffn))}`;
}

/** `compatLsn` of the LSN at byte `o` (big-endian uint64), read as two 32-bit halves (no bigint). */
export function compatLsnAt(dv: DataView, o: number): string | null {
  return lsnOfHalves(dv.getUint32(o), dv.getUint32(o + 4));
}

/** `compatLsn` of the LSN whose high and low 32 bits are `hi` and `lo` (unsigned). */
export function lsnOfHalves(hi: number, lo: number): string | null {
  return (hi | lo) === 0 ? null : `${hex8(hi)}/${hex8(lo)}`;
}

/** Above this high half (in magnitude) µs since 2000 plus the Unix epoch offset may leave the exact doubles. */
const SAFE_HIGH = 0x10_0000;
const TWO_32 = 0x1_0000_0000;

/** `fromPostgresTimestamp(dv.getBigInt64(o))`, from the two halves (see timeOfHalves). */
export function compatTimeAt(dv: DataView, o: number): bigint {
  return timeOfHalves(dv.getInt32(o), dv.getUint32(o + 4));
}

/**
 * The timestamp whose int64 µs since 2000-01-01 has high half `hi`
 * (signed) and low half `lo` (unsigned), as µs since the Unix epoch like
 * `fromPostgresTimestamp`: within ±142 years of 2000 (|µs| < 2^52)
 * computed exactly in doubles and made a bigint once, else (±infinity
 * included) through bigints.
 */
export function timeOfHalves(hi: number, lo: number): bigint {
  if (hi < SAFE_HIGH && hi > -SAFE_HIGH) return BigInt(hi * TWO_32 + lo + POSTGRES_EPOCH_MS_US);
  return fromPostgresTimestamp((BigInt(hi) << 32n) + BigInt(lo));
}

/** POSTGRES_EPOCH_US as a double (exact). */
const POSTGRES_EPOCH_MS_US = Number(POSTGRES_EPOCH_US);

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).toUpperCase().padStart(2, "0"));

/** 32-bit `n` as 8 upper-case hex digits. */
function hex8(n: number): string {
  return HEX_BYTE[n >>> 24]! + HEX_BYTE[(n >>> 16) & 0xff]! + HEX_BYTE[(n >>> 8) & 0xff]! + HEX_BYTE[n & 0xff]!;
}

/** `compatLsn` for an optional LSN (`null` stays `null`). */
export function compatLsnOrNull(lsn: bigint | null): string | null {
  return lsn === null ? null : compatLsn(lsn);
}
