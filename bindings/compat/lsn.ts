/**
 * LSNs and timestamps in pg-logical-replication's form.
 */

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

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).toUpperCase().padStart(2, "0"));

/** 32-bit `n` as 8 upper-case hex digits. */
function hex8(n: number): string {
  return HEX_BYTE[n >>> 24]! + HEX_BYTE[(n >>> 16) & 0xff]! + HEX_BYTE[(n >>> 8) & 0xff]! + HEX_BYTE[n & 0xff]!;
}

/** `compatLsn` for an optional LSN (`null` stays `null`). */
export function compatLsnOrNull(lsn: bigint | null): string | null {
  return lsn === null ? null : compatLsn(lsn);
}
