/**
 * The shortest decimal that reads back as a double, the digits V8 prints
 * for it (Number::toString): Grisu3 (Loitsch, "Printing Floating-Point
 * Numbers Quickly and Accurately with Integers", PLDI 2010), the fast
 * path V8 runs before its exact bignum fallback. Where Grisu3 cannot be
 * sure of the shortest and closest digits (about 0.5% of doubles) it says
 * so, and the caller declines the value to the JS path, so what it writes
 * is always what V8 would.
 *
 * The wasm build only: it needs u64 arithmetic, which the TS build's
 * numbers do not have, so its callers run it only there (json-columns.ts's
 * u64Values); the TS build declines those values instead, to the same
 * bytes.
 */
import { wasmBuild } from "./portable.ts";

/** The digits of the last successful shortest() as an integer, how many, and the power of ten they scale by. */
export let shortDigits: u64 = 0;
export let shortLength: i32 = 0;
export let shortExponent: i32 = 0;

// 10^k for k = -348, -340, ..., 340 (FIRST_POWER + 8i) as f × 2^e, f normalized (bit 63 set) and
// rounded to nearest. Generated with BigInt; test/float-shortest.test.ts checks them again.
const FIRST_POWER = -348;
const POWER_STEP = 8;
const POWERS = 87;

function powerSignificands(): usize {
  if (<i32>0.5 == 0) {
    return memory.data<u64>([
    0xfa8fd5a0081c0288, 0xbaaee17fa23ebf76, 0x8b16fb203055ac76, 0xcf42894a5dce35ea,
    0x9a6bb0aa55653b2d, 0xe61acf033d1a45df, 0xab70fe17c79ac6ca, 0xff77b1fcbebcdc4f,
    0xbe5691ef416bd60c, 0x8dd01fad907ffc3c, 0xd3515c2831559a83, 0x9d71ac8fada6c9b5,
    0xea9c227723ee8bcb, 0xaecc49914078536d, 0x823c12795db6ce57, 0xc21094364dfb5637,
    0x9096ea6f3848984f, 0xd77485cb25823ac7, 0xa086cfcd97bf97f4, 0xef340a98172aace5,
    0xb23867fb2a35b28e, 0x84c8d4dfd2c63f3b, 0xc5dd44271ad3cdba, 0x936b9fcebb25c996,
    0xdbac6c247d62a584, 0xa3ab66580d5fdaf6, 0xf3e2f893dec3f126, 0xb5b5ada8aaff80b8,
    0x87625f056c7c4a8b, 0xc9bcff6034c13053, 0x964e858c91ba2655, 0xdff9772470297ebd,
    0xa6dfbd9fb8e5b88f, 0xf8a95fcf88747d94, 0xb94470938fa89bcf, 0x8a08f0f8bf0f156b,
    0xcdb02555653131b6, 0x993fe2c6d07b7fac, 0xe45c10c42a2b3b06, 0xaa242499697392d3,
    0xfd87b5f28300ca0e, 0xbce5086492111aeb, 0x8cbccc096f5088cc, 0xd1b71758e219652c,
    0x9c40000000000000, 0xe8d4a51000000000, 0xad78ebc5ac620000, 0x813f3978f8940984,
    0xc097ce7bc90715b3, 0x8f7e32ce7bea5c70, 0xd5d238a4abe98068, 0x9f4f2726179a2245,
    0xed63a231d4c4fb27, 0xb0de65388cc8ada8, 0x83c7088e1aab65db, 0xc45d1df942711d9a,
    0x924d692ca61be758, 0xda01ee641a708dea, 0xa26da3999aef774a, 0xf209787bb47d6b85,
    0xb454e4a179dd1877, 0x865b86925b9bc5c2, 0xc83553c5c8965d3d, 0x952ab45cfa97a0b3,
    0xde469fbd99a05fe3, 0xa59bc234db398c25, 0xf6c69a72a3989f5c, 0xb7dcbf5354e9bece,
    0x88fcf317f22241e2, 0xcc20ce9bd35c78a5, 0x98165af37b2153df, 0xe2a0b5dc971f303a,
    0xa8d9d1535ce3b396, 0xfb9b7cd9a4a7443c, 0xbb764c4ca7a44410, 0x8bab8eefb6409c1a,
    0xd01fef10a657842c, 0x9b10a4e5e9913129, 0xe7109bfba19c0c9d, 0xac2820d9623bf429,
    0x80444b5e7aa7cf85, 0xbf21e44003acdd2d, 0x8e679c2f5e44ff8f, 0xd433179d9c8cb841,
    0x9e19db92b4e31ba9, 0xeb96bf6ebadf77d9, 0xaf87023b9bf0ee6b,
    ]);
  }
  return 0;
}

function powerExponents(): usize {
  if (<i32>0.5 == 0) {
    return memory.data<i16>([
    -1220, -1193, -1166, -1140, -1113, -1087, -1060, -1034, -1007, -980, -954, -927, -901, -874, -847, -821,
    -794, -768, -741, -715, -688, -661, -635, -608, -582, -555, -529, -502, -475, -449, -422, -396,
    -369, -343, -316, -289, -263, -236, -210, -183, -157, -130, -103, -77, -50, -24, 3, 30,
    56, 83, 109, 136, 162, 189, 216, 242, 269, 295, 322, 348, 375, 402, 428, 455,
    481, 508, 534, 561, 588, 614, 641, 667, 694, 720, 747, 774, 800, 827, 853, 880,
    907, 933, 960, 986, 1013, 1039, 1066,
    ]);
  }
  return 0;
}

/** The high 64 bits of x × y, rounded (Grisu's DiyFp multiply: an error of at most half a unit). */
function mulHigh(x: u64, y: u64): u64 {
  const a = x >> 32;
  const b = x & 0xffffffff;
  const c = y >> 32;
  const d = y & 0xffffffff;
  const bc = b * c;
  const ad = a * d;
  const middle = ((b * d) >> 32) + (ad & 0xffffffff) + (bc & 0xffffffff) + (<u64>1 << 31);
  return a * c + (ad >> 32) + (bc >> 32) + (middle >> 32);
}

/**
 * Grisu3 on a finite v > 0: true with shortDigits × 10^shortExponent its
 * shortest, closest decimal; false where Grisu3 cannot tell (or v is 0,
 * NaN or infinite).
 */
export function shortest(v: f64): bool {
  if (!wasmBuild() || !(v > 0) || v == Infinity) return false;
  const bits = reinterpret<u64>(v);
  const biased = <i32>(bits >> 52);
  const mantissa = bits & 0xfffffffffffff;
  // v = f × 2^e.
  const f: u64 = biased == 0 ? mantissa : mantissa | (<u64>1 << 52);
  const e: i32 = (biased == 0 ? 1 : biased) - 1075;
  // The boundaries, halfway to the neighbouring doubles, on w's scale. The one below is nearer at a
  // power of two (its gap is half), except at the smallest normal, whose predecessor is as far.
  let s = <i32>clz(f);
  // (Shift counts as locals: a cast right after `<<` is more than Bun's TS parser takes.)
  const shift = <u64>s;
  const w = f << shift;
  const we = e - s;
  const plus = ((f << 1) + 1) << (shift - 1);
  const lowerCloser = mantissa == 0 && biased > 1;
  const minus = lowerCloser ? ((f << 2) - 1) << (shift - 2) : ((f << 1) - 1) << (shift - 1);
  // A cached 10^mk that scales w's exponent into [-60, -32], so the integral part fits 32 bits.
  const minExponent = -60 - (we + 64);
  const k = <i32>Math.ceil(<f64>(minExponent + 63) * 0.30102999566398114);
  const index = (k - FIRST_POWER - 1) / POWER_STEP + 1;
  if (index < 0 || index >= POWERS) return false;
  const cf = load<u64>(powerSignificands() + (<usize>index << 3));
  const ce = <i32>load<i16>(powerExponents() + (<usize>index << 1));
  if (ce < minExponent || ce > -32 - (we + 64)) return false;
  const mk = FIRST_POWER + POWER_STEP * index;
  return digitGen(mulHigh(minus, cf), mulHigh(w, cf), mulHigh(plus, cf), we + ce + 64, mk);
}

/**
 * Grisu3's digit generation between the scaled boundaries low and high
 * (each within a unit of the true product), at binary exponent e.
 */
function digitGen(low: u64, w: u64, high: u64, e: i32, mk: i32): bool {
  let unit: u64 = 1;
  const tooLow = low - unit;
  const tooHigh = high + unit;
  let unsafe = tooHigh - tooLow;
  const shift = <u64>(-e);
  const one: u64 = <u64>1 << shift;
  let integrals = <u32>(tooHigh >> shift);
  let fractionals = tooHigh & (one - 1);
  if (integrals == 0) return false;
  let divisor: u32 = 1;
  let kappa = 1;
  while (<u64>divisor * 10 <= <u64>integrals) {
    divisor *= 10;
    kappa++;
  }
  let digits: u64 = 0;
  let length = 0;
  while (kappa > 0) {
    digits = digits * 10 + <u64>(integrals / divisor);
    length++;
    integrals %= divisor;
    kappa--;
    const rest = (<u64>integrals << shift) + fractionals;
    if (rest < unsafe) return roundWeed(digits, length, tooHigh - w, unsafe, rest, <u64>divisor << shift, unit, kappa - mk);
    divisor /= 10;
  }
  // At most 17 digits: a longer run means the bounds above were wrong, not a longer answer.
  while (length < 18) {
    fractionals *= 10;
    unit *= 10;
    unsafe *= 10;
    digits = digits * 10 + (fractionals >> shift);
    length++;
    fractionals &= one - 1;
    kappa--;
    if (fractionals < unsafe) return roundWeed(digits, length, (tooHigh - w) * unit, unsafe, fractionals, one, unit, kappa - mk);
  }
  return false;
}

/**
 * Moves the last digit down while that brings the digits closer to w and
 * keeps them inside the interval; false where the error bounds leave more
 * than one candidate, or the digits too near the interval's ends.
 */
function roundWeed(digits: u64, length: i32, distance: u64, unsafe: u64, rest: u64, tenKappa: u64, unit: u64, exponent: i32): bool {
  const small = distance - unit;
  const big = distance + unit;
  while (rest < small && unsafe - rest >= tenKappa && (rest + tenKappa < small || small - rest >= rest + tenKappa - small)) {
    digits--;
    rest += tenKappa;
  }
  if (rest < big && unsafe - rest >= tenKappa && (rest + tenKappa < big || big - rest > rest + tenKappa - big)) return false;
  if (!(unit * 2 <= rest && rest <= unsafe - unit * 4)) return false;
  shortDigits = digits;
  shortLength = length;
  shortExponent = exponent;
  return true;
}
