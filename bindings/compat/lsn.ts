/**
 * LSNs and timestamps in pg-logical-replication's form.
 */
import { timeOfHalves } from "../time.ts";

/**
 * An LSN as pg-logical-replication's PgoutputPlugin prints it: both halves
 * zero-padded to 8 upper-case hex digits (`00000000/016B3748`; PostgreSQL
 * itself prints `0/16B3748` — both parse as pg_lsn), `null` for 0/0.
 */
export function compatLsn(lsn: bigint): string | null {
  // One Number conversion where the LSN is below 2^53 (all of them, in practice), two bigint operations otherwise.
  const n = Number(lsn);
  if (n <= Number.MAX_SAFE_INTEGER) {
    const hi = Math.floor(n / 0x1_0000_0000);
    return lsnOfHalves(hi, n - hi * 0x1_0000_0000);
  }
  return lsnOfHalves(Number(lsn >> 32n), Number(lsn & 0xffff_ffffn));
}

/** `compatLsn` of the LSN at byte `o` (big-endian uint64), read as two 32-bit halves (no bigint). */
export function compatLsnAt(dv: DataView, o: number): string | null {
  return lsnOfHalves(dv.getUint32(o), dv.getUint32(o + 4));
}

// The last LSN text and commit time made, by their halves: a Commit's commit LSN and time are its
// Begin's, made just before (strings and bigints are values: handing out the same one is safe).
let lastLsnHi = 0;
let lastLsnLo = 0;
let lastLsn: string | null = null;
let lastTimeHi = 0;
let lastTimeLo = 0;
let lastTime = timeOfHalves(0, 0);

/** `compatLsn` of the LSN whose high and low 32 bits are `hi` and `lo` (unsigned). */
export function lsnOfHalves(hi: number, lo: number): string | null {
  if (hi === lastLsnHi && lo === lastLsnLo) return lastLsn;
  lastLsnHi = hi;
  lastLsnLo = lo;
  return (lastLsn = lsnText(hi, lo));
}

function lsnText(hi: number, lo: number): string | null {
  if ((hi | lo) === 0) return null;
  // One string from 17 character codes: half the cost of joining hex pieces (every Begin and Commit has LSNs).
  const h = HEX;
  return String.fromCharCode(
    h[hi >>> 28]!, h[(hi >>> 24) & 15]!, h[(hi >>> 20) & 15]!, h[(hi >>> 16) & 15]!,
    h[(hi >>> 12) & 15]!, h[(hi >>> 8) & 15]!, h[(hi >>> 4) & 15]!, h[hi & 15]!, SLASH,
    h[lo >>> 28]!, h[(lo >>> 24) & 15]!, h[(lo >>> 20) & 15]!, h[(lo >>> 16) & 15]!,
    h[(lo >>> 12) & 15]!, h[(lo >>> 8) & 15]!, h[(lo >>> 4) & 15]!, h[lo & 15]!,
  );
}

/** Character codes of the upper-case hex digits, and of `/`. */
const HEX = Uint8Array.from("0123456789ABCDEF", (c) => c.charCodeAt(0));
const SLASH = 0x2f;

/** `fromPostgresTimestamp(dv.getBigInt64(o))`, from the two halves (compatTime). */
export function compatTimeAt(dv: DataView, o: number): bigint {
  return compatTime(dv.getInt32(o), dv.getUint32(o + 4));
}

/** time.ts timeOfHalves(hi, lo), the last one made again when asked again. */
export function compatTime(hi: number, lo: number): bigint {
  if (hi === lastTimeHi && lo === lastTimeLo) return lastTime;
  lastTimeHi = hi;
  lastTimeLo = lo;
  return (lastTime = timeOfHalves(hi, lo));
}

/** `compatLsn` for an optional LSN (`null` stays `null`). */
export function compatLsnOrNull(lsn: bigint | null): string | null {
  return lsn === null ? null : compatLsn(lsn);
}
