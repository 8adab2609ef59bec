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
  const hi = Number(lsn >> 32n).toString(16).padStart(8, "0");
  const lo = Number(lsn & 0xffff_ffffn).toString(16).padStart(8, "0");
  return `${hi}/${lo}`.toUpperCase();
}

/** `compatLsn` for an optional LSN (`null` stays `null`). */
export function compatLsnOrNull(lsn: bigint | null): string | null {
  return lsn === null ? null : compatLsn(lsn);
}
