/**
 * Timestamps. pgoutput sends TimestampTz: signed 64-bit microseconds since
 * 2000-01-01 00:00:00 UTC. The decoder reports them as `bigint` microseconds
 * since the Unix epoch, so no precision is lost; these helpers turn them into
 * a `Date` (milliseconds, loses the last three digits) or an ISO string that
 * keeps all six fractional digits.
 *
 * @example
 * ```ts
 * timestampToISO(1700000000123456n) === "2023-11-14T22:13:20.123456Z";
 * ```
 */

/** Microseconds between the Unix epoch and PostgreSQL's epoch (2000-01-01). */
export const POSTGRES_EPOCH_US = 946_684_800_000_000n;

/** PostgreSQL's ±infinity timestamps (DT_NOBEGIN / DT_NOEND) on the wire. */
const PG_NOBEGIN = -0x8000_0000_0000_0000n;
const PG_NOEND = 0x7fff_ffff_ffff_ffffn;

/** Converts a wire TimestampTz (µs since 2000-01-01) to µs since the Unix epoch; ±infinity stays at the int64 extremes. */
export function fromPostgresTimestamp(pgMicros: bigint): bigint {
  if (pgMicros === PG_NOBEGIN || pgMicros === PG_NOEND) return pgMicros;
  return pgMicros + POSTGRES_EPOCH_US;
}

/** Above this high half (in magnitude) µs since 2000 plus the Unix epoch offset may leave the exact doubles. */
const SAFE_HIGH = 0x10_0000;
const EPOCH_US = Number(POSTGRES_EPOCH_US);

/**
 * fromPostgresTimestamp of the wire timestamp whose high 32 bits are `hi`
 * (signed) and low 32 bits `lo` (unsigned): within ±142 years of 2000
 * (|µs| < 2^52) computed exactly in doubles and made a bigint once, else
 * (±infinity included) through bigints.
 */
export function timeOfHalves(hi: number, lo: number): bigint {
  if (hi < SAFE_HIGH && hi > -SAFE_HIGH) return BigInt(hi * 0x1_0000_0000 + lo + EPOCH_US);
  return fromPostgresTimestamp((BigInt(hi) << 32n) + BigInt(lo));
}

/** Converts µs since the Unix epoch to the wire form (µs since 2000-01-01). */
export function toPostgresTimestamp(unixMicros: bigint): bigint {
  if (unixMicros === PG_NOBEGIN || unixMicros === PG_NOEND) return unixMicros;
  return unixMicros - POSTGRES_EPOCH_US;
}

/** A `Date` for a µs-since-Unix-epoch timestamp (microseconds are truncated toward -infinity). */
export function timestampToDate(unixMicros: bigint): Date {
  const ms = unixMicros / 1000n - (unixMicros % 1000n < 0n ? 1n : 0n);
  return new Date(Number(ms));
}

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
let lastSecond = Number.NaN;
let lastPrefix = "";

/** An ISO 8601 UTC string with six fractional digits, e.g. `2023-11-14T22:13:20.123456Z`. */
export function timestampToISO(unixMicros: bigint): string {
  // Within 2^53 µs (±285 years) doubles are exact; consecutive commit times
  // mostly share their second, whose Date text is kept (Date is the cost).
  if (unixMicros >= -SAFE && unixMicros <= SAFE) {
    const n = Number(unixMicros);
    let us = n % 1_000_000;
    if (us < 0) us += 1_000_000;
    const seconds = (n - us) / 1_000_000;
    if (seconds !== lastSecond) {
      lastPrefix = new Date(seconds * 1000).toISOString().slice(0, -5);
      lastSecond = seconds;
    }
    return `${lastPrefix}.${String(us).padStart(6, "0")}Z`;
  }
  let micros = unixMicros % 1_000_000n;
  if (micros < 0n) micros += 1_000_000n;
  const seconds = (unixMicros - micros) / 1_000_000n;
  const iso = new Date(Number(seconds) * 1000).toISOString(); // ...T..:..:..000Z
  return `${iso.slice(0, -5)}.${micros.toString().padStart(6, "0")}Z`;
}
