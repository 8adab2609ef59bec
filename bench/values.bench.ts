/**
 * Micro-benchmark of bindings/values: ns per value, text vs binary, for a
 * few types, with pg-types (what `pg` users get: decode the string, then its
 * parser) in the same run for scale. Seeded data, one process.
 *
 *   npx tsx bench/values.bench.ts        (VALUES_BENCH_MS=300 per case by default)
 */
import pg from "pg";
import { Oid, ValueDecoder } from "../bindings/values/index.ts";
import { readString } from "../bindings/utf8.ts";
import {
  printArray, printTimestamp, sendArray, sendDate, sendFloat8, sendInt4, sendInt8, sendInterval, sendNumeric, sendTimestamp, sendUuid, printDate,
  printInterval, utf8,
} from "../devkit/encoder/values-print.ts";

const N = 4096;
const MS = Number(process.env.VALUES_BENCH_MS ?? 300);

let seed = 12345;
function rnd(): number {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x80000000;
}
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));

interface Column {
  bytes: Uint8Array;
  offsets: Int32Array;
  lengths: Int32Array;
}

function pack(items: Uint8Array[]): Column {
  const total = items.reduce((a, b) => a + b.length, 0);
  const bytes = new Uint8Array(total);
  const offsets = new Int32Array(items.length);
  const lengths = new Int32Array(items.length);
  let p = 0;
  items.forEach((b, i) => {
    bytes.set(b, p);
    offsets[i] = p;
    lengths[i] = b.length;
    p += b.length;
  });
  return { bytes, offsets, lengths };
}

interface Case {
  name: string;
  oid: number;
  text: string[];
  binary: Uint8Array[];
}

const uuid = () => Array.from({ length: 16 }, () => int(0, 255).toString(16).padStart(2, "0")).join("").replace(/^(.{8})(.{4})(.{4})(.{4})/, "$1-$2-$3-$4-");
const ts = () => BigInt(int(1_500_000_000, 1_800_000_000)) * 1_000_000n + BigInt(int(0, 999_999));
const num = () => `${int(0, 99999)}.${String(int(0, 99)).padStart(2, "0")}`;

function build(): Case[] {
  const make = <T>(name: string, oid: number, gen: () => T, text: (v: T) => string, binary: (v: T) => Uint8Array): Case => {
    const vs = Array.from({ length: N }, gen);
    return { name, oid, text: vs.map(text), binary: vs.map(binary) };
  };
  return [
    make("bool", Oid.bool, () => rnd() < 0.5, (v) => (v ? "t" : "f"), (v) => Uint8Array.of(v ? 1 : 0)),
    make("int4", Oid.int4, () => int(-2e9, 2e9), String, sendInt4),
    make("int8", Oid.int8, () => BigInt(int(-2e9, 2e9)) * 1000003n, String, sendInt8),
    make("float8", Oid.float8, () => (rnd() - 0.5) * 1e6, String, sendFloat8),
    make("numeric(7,2)", Oid.numeric, num, (v) => v, sendNumeric),
    make("text(12)", Oid.text, () => `user-${int(100000, 999999)}x`, (v) => v, utf8),
    make("uuid", Oid.uuid, uuid, (v) => v, sendUuid),
    make("date", Oid.date, () => int(0, 20000), printDate, sendDate),
    make("timestamptz", Oid.timestamptz, ts, (v) => printTimestamp(v, 0), sendTimestamp),
    make("interval", Oid.interval, () => ({ months: int(0, 30), days: int(0, 30), microseconds: BigInt(int(0, 86_399_999_999)) }), printInterval, sendInterval),
    make(
      "int4[10]",
      Oid._int4,
      () => Array.from({ length: 10 }, () => int(-1e6, 1e6)),
      (v) => printArray(v.map(String)),
      (v) => sendArray(v.map(sendInt4), Oid.int4),
    ),
  ];
}

function time(fn: () => number): number {
  // Warm up, then run whole passes for about MS milliseconds.
  for (let i = 0; i < 20; i++) fn();
  let passes = 0;
  let sink = 0;
  const start = performance.now();
  let now = start;
  while (now - start < MS) {
    sink += fn();
    passes++;
    now = performance.now();
  }
  if (sink === -1) console.log(sink);
  return ((now - start) * 1e6) / (passes * N);
}

/**
 * A loop over every value with its own call site (a fresh function per case),
 * so one case's parser does not make another's call site polymorphic.
 */
function loop(parse: (b: Uint8Array, off: number, len: number, typmod: number) => unknown, col: Column): () => number {
  const f = new Function(
    "parse", "bytes", "offsets", "lengths", "N",
    "return function () { let k = 0; for (let i = 0; i < N; i++) if (parse(bytes, offsets[i], lengths[i], -1) !== undefined) k++; return k; };",
  ) as (...a: unknown[]) => () => number;
  return f(parse, col.bytes, col.offsets, col.lengths, N);
}

const values = new ValueDecoder();
const rows: string[][] = [["type", "text ns", "binary ns", "pg-types (text) ns"]];
for (const c of build()) {
  const t = pack(c.text.map(utf8));
  const b = pack(c.binary);
  const pgParse = pg.types.getTypeParser(c.oid, "text") as (s: string) => unknown;
  const nsText = time(loop(values.textParser(c.oid), t));
  const nsBinary = time(loop(values.binaryParser(c.oid), b));
  const nsPg = time(loop((bytes, off, len) => pgParse(readString(bytes, off, len)), t));
  rows.push([c.name, nsText.toFixed(0), nsBinary.toFixed(0), nsPg.toFixed(0)]);
}
// Through ValueDecoder.text()/binary() (per-call OID lookup) rather than a held parser.
{
  const c = build().find((x) => x.name === "timestamptz")!;
  const t = pack(c.text.map(utf8));
  const b = pack(c.binary);
  const nsText = time(loop((bytes, off, len) => values.text(Oid.timestamptz, bytes, off, len), t));
  const nsBinary = time(loop((bytes, off, len) => values.binary(Oid.timestamptz, bytes, off, len), b));
  rows.push(["timestamptz via .text()/.binary()", nsText.toFixed(0), nsBinary.toFixed(0), ""]);
}
const width = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) console.log(r.map((x, i) => (i === 0 ? x.padEnd(width[i]!) : x.padStart(width[i]!))).join("  "));
