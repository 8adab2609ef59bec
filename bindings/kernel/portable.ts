/// <reference path="./asc.d.ts" />
/**
 * What the kernel (decode.ts, json-columns.ts) reads and writes memory with,
 * and the integer operations whose meaning differs between its two builds:
 * asc compiles the kernel to wasm over linear memory (assembly/index.ts),
 * tsc to the pure-TS backend over a LinearMemory's typed arrays
 * (bindings/baseline/kernel.ts), from the same source. Each function has
 * one body per build behind `if (<i32>0.5 == 0)`: asc converts the cast (0,
 * so true) and drops the other branch before checking it; tsc erases the
 * cast, and V8 folds `0.5 == 0` to false. It is spelled out in each function
 * because V8 loads a module constant on every call instead (that cost the
 * TS build 5% of its kernel and JSON Lines speed).
 *
 * The kernel source keeps to what means the same in both: i32 arithmetic
 * that cannot overflow (it compares by subtraction where a sum could), no
 * cast that changes a value (tsc erases casts), and memory only through
 * here. For tsc the types (i32, usize, ...) are number and asc's builtins
 * are declared (asc.d.ts).
 */

// The TS build's memory: views of the calling kernel's LinearMemory, set by
// useMemory before each call. No initializer: asc would compile it into the
// wasm (a start function that allocates).
let bytes!: Uint8Array;
let words!: Int32Array;
let view!: DataView;

/** The TS build: the memory the next kernel call reads and writes. Not in the wasm build. */
export function useMemory(u8: Uint8Array, i32: Int32Array, dv: DataView): void {
  bytes = u8;
  words = i32;
  view = dv;
}

export function loadU8(addr: usize): i32 {
  if (<i32>0.5 == 0) return <i32>load<u8>(addr);
  return bytes[addr]!;
}

export function storeU8(addr: usize, v: i32): void {
  if (<i32>0.5 == 0) store<u8>(addr, <u8>v);
  else bytes[addr] = v;
}

/** A big-endian Int16 (the protocol's byte order), sign-extended. */
export function loadI16BE(addr: usize): i32 {
  if (<i32>0.5 == 0) return <i32><i16>bswap<u16>(load<u16>(addr));
  return view.getInt16(addr);
}

/** A big-endian Int32 (the protocol's byte order). */
export function loadI32BE(addr: usize): i32 {
  if (<i32>0.5 == 0) return <i32>bswap<u32>(load<u32>(addr));
  return view.getInt32(addr);
}

/** A little-endian i32 word at any address (the binding's tables, the result words). */
export function loadI32(addr: usize): i32 {
  if (<i32>0.5 == 0) return load<i32>(addr);
  return view.getInt32(addr, true);
}

export function storeI32(addr: usize, v: i32): void {
  if (<i32>0.5 == 0) store<i32>(addr, v);
  else view.setInt32(addr, v, true);
}

/** A big-endian 64-bit integer's bits (the wasm build's only: the TS build has no u64 and gets 0). */
export function loadU64BE(addr: usize): u64 {
  if (<i32>0.5 == 0) return bswap<u64>(load<u64>(addr));
  return 0;
}

/** A big-endian IEEE 754 double (float8's binary form). */
export function loadF64BE(addr: usize): f64 {
  if (<i32>0.5 == 0) return reinterpret<f64>(bswap<u64>(load<u64>(addr)));
  return view.getFloat64(addr);
}

/** A big-endian IEEE 754 single (float4's binary form), as the double it is. */
export function loadF32BE(addr: usize): f64 {
  if (<i32>0.5 == 0) return <f64>reinterpret<f32>(bswap<u32>(load<u32>(addr)));
  return view.getFloat32(addr);
}

/** An i32 word at a 4-aligned address (the tape, the width table): the TS build reads it as an Int32Array element. */
export function loadWord(addr: usize): i32 {
  if (<i32>0.5 == 0) return load<i32>(addr);
  return words[addr >>> 2]!;
}

export function storeWord(addr: usize, v: i32): void {
  if (<i32>0.5 == 0) store<i32>(addr, v);
  else words[addr >>> 2] = v;
}

/** memory[dst, dst + n) = memory[src, src + n). In TS a loop below 16 bytes, where copyWithin's call costs more. */
export function memoryCopy(dst: usize, src: usize, n: usize): void {
  if (<i32>0.5 == 0) memory.copy(dst, src, n);
  else if (n < 16) for (let k: usize = 0; k < n; k++) bytes[dst + k] = bytes[src + k]!;
  else bytes.copyWithin(dst, src, src + n);
}

/**
 * The first index in [i, end) whose byte a JSON string cannot hold as it
 * is: below 0x20, '"', '\\' or 0x80 and above (an escape or a UTF-8
 * sequence to check); `end` if none. The JSON string writer's runs of plain
 * ASCII, most of a row's text, were its time scanned byte by byte: the wasm
 * build tests 16 bytes per step (a signed i8 below 0x20 is a control or
 * 0x80..0xff), only while all 16 are before `end` (never a load past the
 * value, so never past memory's end), then byte by byte.
 */
export function plainEnd(i: i32, end: i32): i32 {
  if (<i32>0.5 == 0) {
    const space = i8x16.splat(0x20);
    const quote = i8x16.splat(0x22);
    const backslash = i8x16.splat(0x5c);
    while (end - i >= 16) {
      const v = v128.load(<usize>i);
      const special = i8x16.bitmask(v128.or(i8x16.lt_s(v, space), v128.or(i8x16.eq(v, quote), i8x16.eq(v, backslash))));
      if (special != 0) return i + ctz(special);
      i += 16;
    }
    while (i < end) {
      const c = <i32>load<u8>(<usize>i);
      if (c < 0x20 || c == 0x22 || c == 0x5c || c >= 0x80) break;
      i++;
    }
    return i;
  }
  while (i < end) {
    const c = bytes[i]!;
    if (c < 0x20 || c == 0x22 || c == 0x5c || c >= 0x80) break;
    i++;
  }
  return i;
}

/**
 * memory[dst, dst + n) = memory[src, src + n) for buffers that do not
 * overlap, where memory up to `writable` may be overwritten and up to
 * `readable` read: the wasm build moves a short run (most of a row's
 * values and column names) as two 16-byte loads and stores, as V8 makes
 * every memory.copy a call into C. Else memoryCopy.
 */
export function copyShort(dst: usize, src: usize, n: usize, writable: usize, readable: usize): void {
  if (<i32>0.5 == 0) {
    if (n <= 32 && dst + 32 <= writable && src + 32 <= readable) {
      const a = v128.load(src);
      const b = v128.load(src + 16);
      v128.store(dst, a);
      v128.store(dst + 16, b);
      return;
    }
  }
  memoryCopy(dst, src, n);
}

/**
 * Whether memory[p, p + 16) is `DDDD-DD-DD DD:DD` (D an ASCII digit), an
 * ISO timestamp text up to its minutes; if so it is copied to dst with a
 * `T` for the space (timestampISO()'s shape). The wasm build checks the 16
 * bytes at once, against the digits and the separators' places.
 */
export function isoMinutes(p: usize, dst: usize): bool {
  if (<i32>0.5 == 0) {
    const v = v128.load(p);
    const digits = i8x16.le_u(i8x16.sub(v, i8x16.splat(0x30)), i8x16.splat(9));
    const separators = i8x16.eq(v, i8x16(0, 0, 0, 0, 0x2d, 0, 0, 0x2d, 0, 0, 0x20, 0, 0, 0x3a, 0, 0));
    const ok = v128.bitselect(separators, digits, i8x16(0, 0, 0, 0, -1, 0, 0, -1, 0, 0, -1, 0, 0, -1, 0, 0));
    if (i8x16.bitmask(ok) != 0xffff) return false;
    v128.store(dst, i8x16.replace_lane(v, 10, 0x54));
    return true;
  }
  for (let i: usize = 0; i < 16; i++) {
    const c = bytes[p + i]!;
    const separator = i == 4 || i == 7 ? 0x2d : i == 10 ? 0x20 : i == 13 ? 0x3a : 0;
    if (separator != 0 ? c != separator : c < 0x30 || c > 0x39) return false;
    bytes[dst + i] = i == 10 ? 0x54 : c;
  }
  return true;
}

/** The memory's size in bytes. */
export function memoryBytes(): u64 {
  if (<i32>0.5 == 0) return <u64>memory.size() << 16;
  return bytes.length;
}

/** Where the binding may lay out memory: 16-aligned, above the wasm build's statics and above address 0 (0 is "no table"). */
export function heapBase(): usize {
  if (<i32>0.5 == 0) return (__heap_base + 15) & ~15;
  return 16;
}

/** Whether this is the wasm build: what needs u64 arithmetic (shortest.ts) runs only there. */
export function wasmBuild(): bool {
  if (<i32>0.5 == 0) return true;
  return false;
}

/** 24 bytes of static memory for a number's digits (a float's 17, an int8's 19; the wasm build's only: the TS build never writes them). */
export function floatScratch(): usize {
  if (<i32>0.5 == 0) return memory.data(24);
  return 0;
}

/** v rounded to the nearest float32, as a double (Math.fround). */
export function fround(v: f64): f64 {
  if (<i32>0.5 == 0) return <f64><f32>v;
  return Math.fround(v);
}

/** a * b modulo 2^32. */
export function imul(a: i32, b: i32): i32 {
  if (<i32>0.5 == 0) return a * b;
  return Math.imul(a, b);
}

/** a / b rounded toward zero (asc's i32 division), for b > 0. */
export function divI32(a: i32, b: i32): i32 {
  if (<i32>0.5 == 0) return a / b;
  return (a / b) | 0;
}

/** An i32 taken as unsigned 32-bit, as a double (exact). */
export function u32AsF64(v: i32): f64 {
  if (<i32>0.5 == 0) return <f64><u32>v;
  return v >>> 0;
}

/** a > b, both taken as unsigned 32-bit. */
export function gtU32(a: i32, b: i32): bool {
  if (<i32>0.5 == 0) return <u32>a > <u32>b;
  return a >>> 0 > b >>> 0;
}
