/**
 * What tsc needs to check the kernel source that asc also compiles
 * (portable.ts, decode.ts, json-columns.ts): AssemblyScript's types, all JS
 * numbers in the TS build, and the asc builtins of portable.ts's wasm
 * branches, which the TS build never runs (they do not exist in JS). Global
 * to every program that imports the kernel (portable.ts references this
 * file): nothing outside those wasm branches may call the builtins.
 */
type i8 = number;
type i16 = number;
type i32 = number;
type u8 = number;
type u16 = number;
type u32 = number;
type u64 = number;
type f32 = number;
type f64 = number;
type usize = number;
type bool = boolean;

declare function load<T>(ptr: usize, immOffset?: usize): T;
declare function store<T>(ptr: usize, value: T, immOffset?: usize): void;
declare function bswap<T>(value: T): T;
declare function reinterpret<T>(value: number): T;
declare function clz<T>(value: T): T;
declare namespace memory {
  function size(): i32;
  function copy(dst: usize, src: usize, n: usize): void;
  function data<T>(values: T[], align?: i32): usize;
  function data(size: i32, align?: i32): usize;
}
declare const __heap_base: usize;
declare function ctz<T>(value: T): T;
/** A 128-bit SIMD vector (a value only wasm has). */
type v128 = { readonly v128: never };
declare namespace v128 {
  function load(ptr: usize, immOffset?: usize, immAlign?: usize): v128;
  function store(ptr: usize, value: v128, immOffset?: usize, immAlign?: usize): void;
  function or(a: v128, b: v128): v128;
  function bitselect(v1: v128, v2: v128, c: v128): v128;
}
declare function i8x16(...lanes: i8[]): v128;
declare namespace i8x16 {
  function splat(x: i8): v128;
  function eq(a: v128, b: v128): v128;
  function lt_s(a: v128, b: v128): v128;
  function le_u(a: v128, b: v128): v128;
  function sub(a: v128, b: v128): v128;
  function replace_lane(v: v128, lane: u8, x: i8): v128;
  function bitmask(a: v128): i32;
}
