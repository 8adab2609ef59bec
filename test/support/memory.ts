import * as v8 from "node:v8";
import * as vm from "node:vm";

/** A full garbage collection (V8's gc(), exposed at run time), so memory figures start from live data. */
export const gc: () => void = (() => {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
})();

/** Live memory after a full collection: JS heap plus ArrayBuffers (what a client could have buffered). */
export function liveBytes(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}
