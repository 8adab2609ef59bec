// The client of test/large-transaction.test.ts's transactions() runs, in a
// process of its own so that its memory is the client's alone: node
// --expose-gc large-consumer.mjs '<json>' with { lib (the compiled
// bindings folder), connection, slot, publication, protoVersion,
// streaming, maxTransactionBytes, rows }. Reads the big transaction (ids
// 1..rows) and the marker after it (rows + 1), checks every id arrives
// once, and prints one JSON line of figures.
import * as fs from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";

const o = JSON.parse(process.argv[2]);
const { replicate } = await import(pathToFileURL(path.join(o.lib, "pg", "index.js")).href);

const vm = () => {
  const status = fs.readFileSync("/proc/self/status", "utf8");
  const kib = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(status)[1]) * 1024;
  return { rss: kib("VmRSS"), hwm: kib("VmHWM") };
};
const live = () => {
  globalThis.gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

const stream = await replicate({
  connection: o.connection, slot: o.slot, publications: o.publication, protoVersion: o.protoVersion,
  streaming: o.streaming, ack: "auto",
});
const live0 = live();
const rss0 = vm().rss;
const seen = new Uint8Array(o.rows + 2);
let changes = 0;
let duplicates = 0;
let liveMax = live0;
let fragments = 0;
let maxFragmentMessages = 0;
/** lastAckedLsn while a fragment of the big transaction before its final was being handled. */
const acksDuringFragments = [];
let bigEnd = 0n;
let streamed;
const t0 = performance.now();
for await (const item of stream.transactions({ maxTransactionBytes: o.maxTransactionBytes })) {
  if (item.kind !== "commit") continue;
  let marker = false;
  for (const m of item.messages) {
    if (m.kind !== "Insert") continue;
    const id = Number(m.newTuple[0].text);
    if (seen[id]) duplicates++;
    seen[id] = 1;
    changes++;
    if (id === o.rows + 1) marker = true;
  }
  if (!marker) {
    fragments++;
    streamed = item.streamed;
    maxFragmentMessages = Math.max(maxFragmentMessages, item.messages.length);
    if (!item.final) acksDuringFragments.push(stream.lastAckedLsn);
    else bigEnd = item.endLsn;
    liveMax = Math.max(liveMax, live());
  }
  if (marker) break;
}
const ackedAfter = stream.lastAckedLsn;
await stream.stop();
let missing = 0;
for (let id = 1; id <= o.rows + 1; id++) if (!seen[id]) missing++;
const end = vm();
console.log(JSON.stringify({
  changes, duplicates, missing, fragments, maxFragmentMessages, streamed,
  ackedBeforeFinal: acksDuringFragments.every((a) => a < bigEnd), ackedAfter: ackedAfter >= bigEnd,
  rss0, hwm: end.hwm, liveGrowth: liveMax - live0, seconds: (performance.now() - t0) / 1000,
}));
