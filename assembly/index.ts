// The wasm kernel's exports (asc's entry). decode(), jsonColumns() and
// jsonLines() are bindings/kernel/decode.ts, json-columns.ts and json-lines.ts, whose one source tsc also
// compiles into the pure-TS backend (bindings/baseline/kernel.ts), as it does
// text-timestamp.ts, the parse behind textTimestamp(); over linear memory
// here, with no imports, no allocation and no traps.
export { heapBase } from "../bindings/kernel/portable";
export { decode } from "../bindings/kernel/decode";
export { jsonColumns } from "../bindings/kernel/json-columns";
export { jsonLines } from "../bindings/kernel/json-lines";
export { textTimestamp } from "./values";
export { rowValues } from "./row-values";
