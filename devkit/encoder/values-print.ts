/**
 * For tests of bindings/values: JS values → the text PostgreSQL's output
 * functions print (DateStyle ISO, IntervalStyle postgres, extra_float_digits
 * 1, bytea_output hex, lc_monetary C) and the bytes its send functions write.
 * Written apart from the parsers (dates through `Date`, not the parsers'
 * calendar code) so that a parser is not checked against itself; checked
 * against a real server in values-pg.test.ts.
 */

const enc = new TextEncoder();

export function utf8(s: string): Uint8Array {
  return enc.encode(s);
}

// ------------------------------------------------------------ byte writers

export class Writer {
  private bytes: number[] = [];
  u8(v: number): this {
    this.bytes.push(v & 0xff);
    return this;
  }
  i16(v: number): this {
    return this.u8(v >> 8).u8(v);
  }
  i32(v: number): this {
    return this.u8(v >>> 24).u8(v >>> 16).u8(v >>> 8).u8(v);
  }
  i64(v: bigint): this {
    const x = BigInt.asUintN(64, v);
    return this.i32(Number(x >> 32n)).i32(Number(x & 0xffffffffn));
  }
  f32(v: number): this {
    const dv = new DataView(new ArrayBuffer(4));
    dv.setFloat32(0, v);
    for (let i = 0; i < 4; i++) this.u8(dv.getUint8(i));
    return this;
  }
  f64(v: number): this {
    const dv = new DataView(new ArrayBuffer(8));
    dv.setFloat64(0, v);
    for (let i = 0; i < 8; i++) this.u8(dv.getUint8(i));
    return this;
  }
  raw(b: Uint8Array): this {
    for (const x of b) this.bytes.push(x);
    return this;
  }
  done(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

const w = () => new Writer();

// ------------------------------------------------------------ numbers

export const sendBool = (v: boolean) => w().u8(v ? 1 : 0).done();
export const sendInt2 = (v: number) => w().i16(v).done();
export const sendInt4 = (v: number) => w().i32(v).done();
export const sendInt8 = (v: bigint) => w().i64(v).done();
export const sendFloat4 = (v: number) => w().f32(v).done();
export const sendFloat8 = (v: number) => w().f64(v).done();

/** PostgreSQL's shortest-exact float output: %g-like, exponent at least two digits, `NaN`, `Infinity`. */
function printShortest(digits: string, exponent: number, negative: boolean, maxFixedExponent: number): string {
  // digits: significant digits without a point; value = 0.d1d2… × 10^(exponent+1) i.e. d1.d2… × 10^exponent
  let s: string;
  if (exponent < -4 || exponent >= maxFixedExponent) {
    const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exponent);
    s = `${mant}e${exponent < 0 ? "-" : "+"}${e < 10 ? `0${e}` : e}`;
  } else if (exponent < 0) {
    s = `0.${"0".repeat(-exponent - 1)}${digits}`;
  } else if (digits.length <= exponent + 1) {
    s = digits + "0".repeat(exponent + 1 - digits.length);
  } else {
    s = `${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`;
  }
  return negative ? `-${s}` : s;
}

function special(v: number): string | undefined {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  return undefined;
}

/** A positive finite float as mant × 2^exp exactly, with its precision (53 or 24 bits) and exponent floor. */
function decompose(x: number, bits: 53 | 24): { mant: bigint; exp: number; lowerGapHalf: boolean } {
  const minExp = bits === 53 ? -1074 : -149;
  let exp = Math.floor(Math.log2(x)) - (bits - 1);
  if (exp < minExp) exp = minExp;
  // Adjust for log2 rounding at the edges.
  while (x / 2 ** exp >= 2 ** bits) exp++;
  while (exp > minExp && x / 2 ** exp < 2 ** (bits - 1)) exp--;
  const mant = BigInt(x / 2 ** exp); // exact: x is a multiple of 2^exp below 2^bits · 2^exp
  return { mant, exp, lowerGapHalf: mant === 1n << BigInt(bits - 1) && exp > minExp };
}

/** Whether D × 10^k lies strictly inside the rounding interval of mant × 2^exp, and how far from it (in common units). */
function compare(D: bigint, k: number, f: ReturnType<typeof decompose>): { inside: boolean; dist: bigint } {
  // Scale everything by 2^(-exp+1) · 10^(-k) (when those exponents are positive) to integers.
  let cand = D * 2n;
  let val = f.mant * 2n;
  let half = 1n; // half the upper gap, times 2
  if (k >= 0) cand *= 10n ** BigInt(k);
  else {
    val *= 10n ** BigInt(-k);
    half *= 10n ** BigInt(-k);
  }
  if (f.exp >= 0) {
    val *= 2n ** BigInt(f.exp);
    half *= 2n ** BigInt(f.exp);
  } else cand *= 2n ** BigInt(-f.exp);
  const dist = cand - val;
  const a = dist < 0n ? -dist : dist;
  // Below a power of two the gap is half as wide: compare twice the distance.
  const inside = dist < 0n && f.lowerGapHalf ? 2n * a < half : a < half;
  return { inside, dist: a };
}

/**
 * PostgreSQL's shortest-exact float output (Ryu): the fewest significant
 * digits strictly inside the float's rounding interval (a decimal exactly
 * halfway to a neighbour is not used), the closest such, ties to even.
 */
function shortest(v: number, bits: 53 | 24, maxFixedExponent: number): string {
  const f = decompose(Math.abs(v), bits);
  for (let p = 1; p <= 17; p++) {
    const e = Math.abs(v).toExponential(p - 1);
    const [m, x] = e.split("e");
    const k0 = Number(x) - (p - 1);
    const D0 = BigInt(m!.replace(".", ""));
    let best: { D: bigint; k: number; dist: bigint } | undefined;
    for (const D of [D0 - 1n, D0, D0 + 1n]) {
      if (D <= 0n) continue;
      const c = compare(D, k0, f);
      if (!c.inside) continue;
      if (best === undefined || c.dist < best.dist || (c.dist === best.dist && D % 2n === 0n)) best = { D, k: k0, dist: c.dist };
    }
    if (best !== undefined) {
      let digits = best.D.toString();
      let k = best.k;
      while (digits.length > 1 && digits.endsWith("0")) {
        digits = digits.slice(0, -1);
        k++;
      }
      return printShortest(digits, k + digits.length - 1, v < 0, maxFixedExponent);
    }
  }
  throw new Error(`no shortest form for ${v}`);
}

export function printFloat8(v: number): string {
  return special(v) ?? shortest(v, 53, 15);
}

/** float4 text: `v` must be a float32 value (Math.fround). */
export function printFloat4(v: number): string {
  return special(v) ?? shortest(v, 24, 6);
}

/** numeric text (canonical: `-12.3400`) → numeric_send bytes. */
export function sendNumeric(text: string): Uint8Array {
  if (text === "NaN") return w().i16(0).i16(0).i16(0xc000).i16(0).done();
  // The server sends a dscale of 32 with the infinities.
  if (text === "Infinity") return w().i16(0).i16(0).i16(0xd000).i16(32).done();
  if (text === "-Infinity") return w().i16(0).i16(0).i16(0xf000).i16(32).done();
  const neg = text.startsWith("-");
  const body = neg ? text.slice(1) : text;
  const [intPart, fracPart = ""] = body.split(".");
  const dscale = fracPart.length;
  const intDigits = intPart!.replace(/^0+/, "");
  const ip = intDigits.padStart(Math.ceil(intDigits.length / 4) * 4, "0");
  const fp = fracPart.padEnd(Math.ceil(fracPart.length / 4) * 4, "0");
  const groups: number[] = [];
  for (let i = 0; i < ip.length; i += 4) groups.push(Number(ip.slice(i, i + 4)));
  let weight = groups.length - 1;
  for (let i = 0; i < fp.length; i += 4) groups.push(Number(fp.slice(i, i + 4)));
  while (groups.length > 0 && groups[0] === 0) {
    groups.shift();
    weight--;
  }
  while (groups.length > 0 && groups[groups.length - 1] === 0) groups.pop();
  if (groups.length === 0) weight = 0;
  const out = w().i16(groups.length).i16(weight).i16(neg && groups.length > 0 ? 0x4000 : 0).i16(dscale);
  for (const g of groups) out.i16(g);
  return out.done();
}

/** money text under lc_monetary C: `-$1,234.56`. */
export function printMoney(v: bigint): string {
  const neg = v < 0n;
  const s = (neg ? -v : v).toString().padStart(3, "0");
  const int = s.slice(0, -2).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${neg ? "-" : ""}$${int}.${s.slice(-2)}`;
}

// ------------------------------------------------------------ bytea, uuid

export function printByteaHex(b: Uint8Array): string {
  return `\\x${Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("")}`;
}

/** bytea_output = escape: printable ASCII as is, `\\` for backslash, `\ooo` for the rest. */
export function printByteaEscape(b: Uint8Array): string {
  let s = "";
  for (const x of b) {
    if (x === 0x5c) s += "\\\\";
    else if (x < 0x20 || x > 0x7e) s += `\\${x.toString(8).padStart(3, "0")}`;
    else s += String.fromCharCode(x);
  }
  return s;
}

export function sendUuid(text: string): Uint8Array {
  const hex = text.replace(/-/g, "");
  return Uint8Array.from({ length: 16 }, (_, i) => parseInt(hex.slice(2 * i, 2 * i + 2), 16));
}

// ------------------------------------------------------------ dates and times

const p2 = (n: number) => String(n).padStart(2, "0");
const pYear = (y: number) => String(y).padStart(4, "0");

/** Fraction of a second as PostgreSQL prints it (trailing zeros dropped). */
function frac(us: number): string {
  return us === 0 ? "" : `.${String(us).padStart(6, "0").replace(/0+$/, "")}`;
}

/** Civil date of days since 1970 through Date (valid for ±100,000,000 days). */
function civilOf(days: number): { y: number; m: number; d: number } {
  const dt = new Date(days * 86_400_000);
  return { y: dt.getUTCFullYear(), m: dt.getUTCMonth() + 1, d: dt.getUTCDate() };
}

/** date text, DateStyle ISO. `days` since 1970-01-01, within Date's range. */
export function printDate(days: number): string {
  if (days === Infinity) return "infinity";
  if (days === -Infinity) return "-infinity";
  const { y, m, d } = civilOf(days);
  return y > 0 ? `${pYear(y)}-${p2(m)}-${p2(d)}` : `${pYear(1 - y)}-${p2(m)}-${p2(d)} BC`;
}

export function sendDate(days: number): Uint8Array {
  if (days === Infinity) return w().i32(0x7fffffff).done();
  if (days === -Infinity) return w().i32(-0x80000000).done();
  return w().i32(days - 10957).done();
}

export function printTime(us: number): string {
  const s = Math.floor(us / 1e6);
  return `${p2(Math.floor(s / 3600))}:${p2(Math.floor(s / 60) % 60)}:${p2(s % 60)}${frac(us % 1e6)}`;
}

export const sendTime = (us: number) => w().i64(BigInt(us)).done();

export function printOffset(east: number): string {
  const a = Math.abs(east);
  const h = Math.floor(a / 3600);
  const m = Math.floor(a / 60) % 60;
  const s = a % 60;
  const sign = east < 0 ? "-" : "+";
  return s !== 0 ? `${sign}${p2(h)}:${p2(m)}:${p2(s)}` : m !== 0 ? `${sign}${p2(h)}:${p2(m)}` : `${sign}${p2(h)}`;
}

export const printTimetz = (us: number, east: number) => printTime(us) + printOffset(east);
export const sendTimetz = (us: number, east: number) => w().i64(BigInt(us)).i32(-east).done();

const INF = 0x7fffffffffffffffn;
const NINF = -0x8000000000000000n;

/** timestamp (offset undefined) or timestamptz text shown at `east` seconds offset; µs since 1970. */
export function printTimestamp(us: bigint, east?: number): string {
  if (us === INF) return "infinity";
  if (us === NINF) return "-infinity";
  const local = us + BigInt((east ?? 0) * 1e6);
  let days = local / 86_400_000_000n;
  let rest = local % 86_400_000_000n;
  if (rest < 0n) {
    rest += 86_400_000_000n;
    days -= 1n;
  }
  const { y, m, d } = civilOf(Number(days));
  const date = `${pYear(y > 0 ? y : 1 - y)}-${p2(m)}-${p2(d)}`;
  const tz = east === undefined ? "" : printOffset(east);
  return `${date} ${printTime(Number(rest))}${tz}${y > 0 ? "" : " BC"}`;
}

export function sendTimestamp(us: bigint): Uint8Array {
  if (us === INF || us === NINF) return w().i64(us).done();
  return w().i64(us - 946_684_800_000_000n).done();
}

export interface IntervalValue {
  months: number;
  days: number;
  microseconds: bigint;
}

/** interval text, IntervalStyle postgres. */
export function printInterval(v: IntervalValue): string {
  if (v.months === 0x7fffffff && v.days === 0x7fffffff && v.microseconds === INF) return "infinity";
  if (v.months === -0x80000000 && v.days === -0x80000000 && v.microseconds === NINF) return "-infinity";
  const parts: string[] = [];
  let before = false; // a negative field came before
  const year = Math.trunc(v.months / 12);
  const mon = v.months % 12;
  const add = (n: number, unit: string) => {
    if (n === 0) return;
    parts.push(`${before && n > 0 ? "+" : ""}${n} ${unit}${n === 1 ? "" : "s"}`);
    before = n < 0;
  };
  add(year, "year");
  add(mon, "mon");
  add(v.days, "day");
  const t = v.microseconds;
  if (parts.length === 0 || t !== 0n) {
    const neg = t < 0n;
    const a = neg ? -t : t;
    const hours = a / 3_600_000_000n;
    const restUs = Number(a % 3_600_000_000n);
    const mins = Math.floor(restUs / 60e6);
    const secUs = restUs - mins * 60e6;
    const sec = Math.floor(secUs / 1e6);
    const hh = hours < 10n ? `0${hours}` : `${hours}`;
    parts.push(`${neg ? "-" : before ? "+" : ""}${hh}:${p2(mins)}:${p2(sec)}${frac(secUs % 1e6)}`);
  }
  return parts.join(" ");
}

export const sendInterval = (v: IntervalValue) => w().i64(v.microseconds).i32(v.days).i32(v.months).done();

// ------------------------------------------------------------ arrays

/** A nested array value: elements are already-printed element texts (string) or null. */
export type TextTree = (string | null | TextTree)[];

function needsQuotes(s: string, delim: string): boolean {
  if (s === "" || s.toUpperCase() === "NULL") return true;
  for (const c of s) {
    if (c === '"' || c === "\\" || c === "{" || c === "}" || c === delim || c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\v" || c === "\f") return true;
  }
  return false;
}

/** array_out of element texts; `lowerBounds` adds the `[lo:hi]=` prefix when any is not 1. */
export function printArray(tree: TextTree, lowerBounds?: number[], delim = ","): string {
  const body = (t: TextTree): string =>
    `{${t
      .map((e) => (e === null ? "NULL" : Array.isArray(e) ? body(e) : needsQuotes(e, delim) ? `"${e.replace(/[\\"]/g, "\\$&")}"` : e))
      .join(delim)}}`;
  let prefix = "";
  if (lowerBounds && lowerBounds.some((b) => b !== 1)) {
    const dims = dimsOf(tree);
    prefix = `${dims.map((n, i) => `[${lowerBounds[i]}:${lowerBounds[i]! + n - 1}]`).join("")}=`;
  }
  return prefix + body(tree);
}

function dimsOf(tree: unknown): number[] {
  const dims: number[] = [];
  for (let t = tree; Array.isArray(t); t = t[0]) {
    dims.push(t.length);
    if (t.length === 0) break;
  }
  return dims;
}

/** array_send of element bytes (null for NULL). */
export function sendArray(tree: (Uint8Array | null | unknown[])[], elementOid: number, lowerBounds?: number[]): Uint8Array {
  const dims = tree.length === 0 ? [] : dimsOf(tree);
  const flat: (Uint8Array | null)[] = [];
  const walk = (t: unknown) => {
    if (Array.isArray(t)) t.forEach(walk);
    else flat.push(t as Uint8Array | null);
  };
  walk(tree);
  const out = w().i32(dims.length).i32(flat.some((x) => x === null) ? 1 : 0).i32(elementOid);
  dims.forEach((n, i) => out.i32(n).i32(lowerBounds?.[i] ?? 1));
  for (const e of flat) {
    if (e === null) out.i32(-1);
    else out.i32(e.length).raw(e);
  }
  return out.done();
}
