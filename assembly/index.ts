// The wasm kernel's exports (asc's entry). decode() and jsonColumns() are
// bindings/kernel/decode.ts and json-columns.ts, whose one source tsc also
// compiles into the pure-TS backend (bindings/baseline/kernel.ts); over
// linear memory here, with no imports, no allocation and no traps.
export { heapBase } from "../bindings/kernel/portable";
export { decode } from "../bindings/kernel/decode";
export { jsonColumns } from "../bindings/kernel/json-columns";
export { textTimestamp } from "./values";
