// Hand-built pgoutput messages (Begin, Relation, Insert, Commit) and what a decoder must make of
// them, for the consumer checks of scripts/pack-check.mjs: smoke.mjs (ES module, under Node, Deno
// and Bun) and ../consumer-cjs/require.js (CommonJS). CommonJS itself so that both can load it.
"use strict";

// A tiny big-endian writer: just enough for Begin, Relation, Insert, Commit.
function bytes(...parts) {
  const out = [];
  for (const [type, v] of parts) {
    if (type === "c") out.push(v.charCodeAt(0));
    else if (type === "u8") out.push(v);
    else if (type === "i16") out.push((v >> 8) & 0xff, v & 0xff);
    else if (type === "i32") out.push((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);
    else if (type === "i64") for (let s = 56n; s >= 0n; s -= 8n) out.push(Number((BigInt.asUintN(64, v) >> s) & 0xffn));
    else if (type === "str") out.push(...new TextEncoder().encode(v), 0);
    else if (type === "text") {
      const b = new TextEncoder().encode(v); // a TupleData text column: 't', Int32 length, bytes
      out.push(0x74, (b.length >>> 24) & 0xff, (b.length >>> 16) & 0xff, (b.length >>> 8) & 0xff, b.length & 0xff, ...b);
    }
  }
  return new Uint8Array(out);
}
const PG_EPOCH = 946_684_800_000_000n;
const begin = bytes(["c", "B"], ["i64", 0x17864c0n], ["i64", 1_700_000_000_123_456n - PG_EPOCH], ["i32", 742]);
const relation = bytes(["c", "R"], ["i32", 16384], ["str", "public"], ["str", "users"], ["c", "d"], ["i16", 2],
  ["u8", 1], ["str", "id"], ["i32", 23], ["i32", -1], ["u8", 0], ["str", "name"], ["i32", 25], ["i32", -1]);
const insert = bytes(["c", "I"], ["i32", 16384], ["c", "N"], ["i16", 2], ["text", "42"], ["text", "Zoë"]);
const commit = bytes(["c", "C"], ["u8", 0], ["i64", 0x17864c0n], ["i64", 0x17864f0n], ["i64", 1_700_000_000_123_456n - PG_EPOCH]);


const EXPECTED = "Begin 742 0/17864C0 2023-11-14T22:13:20.123456Z | Relation | Insert users 42 Zoë | Commit";

/** The messages of a batch decoded from [begin, relation, insert, commit], as one line to compare with EXPECTED. */
function summarize(batch, { formatLsn, timestampToISO }) {
  const seen = [];
  for (const msg of batch) {
    if (msg.kind === "Begin") seen.push(`Begin ${msg.xid} ${formatLsn(msg.finalLsn)} ${timestampToISO(msg.commitTime)}`);
    else if (msg.kind === "Insert") seen.push(`Insert ${msg.relation?.name} ${msg.newTuple.text("id")} ${msg.newTuple.text("name")}`);
    else seen.push(msg.kind);
  }
  return seen.join(" | ");
}

module.exports = { begin, relation, insert, commit, messages: [begin, relation, insert, commit], EXPECTED, summarize };
