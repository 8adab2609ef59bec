// Plain Node, CommonJS, run by scripts/pack-check.mjs with --no-experimental-require-module (so that
// require() of an ES module fails, as on Node before 20.19/22.12): each library entry loads with
// require() and decodes the hand-built messages of ../consumer/wire.cjs. Then the dual-package
// hazard: the ES build loaded beside it (import()) is a second copy, and what crosses between the
// copies still works: errors are recognized by either copy's class and guard, and a decoder of one
// copy works in the other's plugin.
"use strict";
const assert = require("node:assert/strict");
const { messages, EXPECTED, summarize } = require("../consumer/wire.cjs");
const core = require("pgoutput-wasm");
const compat = require("pgoutput-wasm/pg-logical-replication");
const pg = require("pgoutput-wasm/pg");
const pipeline = require("pgoutput-wasm/pipeline");

/** pg-logical-replication's shape of the wire.cjs messages, from a plugin. */
function parseAll(plugin) {
  return messages.map((m) => plugin.parse(Buffer.from(m)));
}

async function main() {
  const done = [];
  for (const decoder of [await core.createDecoder(), new core.BaselineDecoder()]) {
    assert.equal(summarize(decoder.decodeBatch(messages), core), EXPECTED, decoder.backend);
  }
  done.push(`pgoutput-wasm: ${EXPECTED}`);

  const plugin = new compat.PgoutputPlugin({ protoVersion: 1, publicationNames: ["pub"] });
  const parsed = parseAll(plugin);
  assert.deepEqual(parsed.map((m) => m.tag), ["begin", "relation", "insert", "commit"]);
  assert.deepEqual({ ...parsed[2].new }, { id: 42, name: "Zoë" }); // int4 through pg's parser: a number
  assert.equal(parsed[0].commitLsn, "00000000/017864C0");
  done.push(`pg-logical-replication: ${parsed.map((m) => m.tag).join(",")}`);

  const assembler = new pg.TransactionAssembler();
  const items = [...new core.BaselineDecoder().decodeBatch(messages)].map((m) => assembler.push(m)).filter(Boolean);
  assert.equal(items.length, 1);
  assert.equal(items[0].kind, "commit");
  assert.equal(items[0].xid, 742);
  assert.deepEqual(items[0].messages.map((m) => m.kind), ["Relation", "Insert"]);
  done.push(`pgoutput-wasm/pg: a ${items[0].kind} of ${items[0].messages.length} messages`);

  const jsonl = new core.BaselineDecoder({ values: pipeline.changeValueOptions() });
  const lines = new TextDecoder().decode(pipeline.changesToJsonLines(jsonl.decodeBatch(messages), new pipeline.JsonLinesWriter({ decoder: jsonl })));
  const line = JSON.parse(lines);
  assert.deepEqual([line.action, line.table, line.columns.map((c) => c.value)], ["I", "users", [42, "Zoë"]]);
  done.push(`pgoutput-wasm/pipeline: ${line.action} ${line.table}`);

  // The ES build, beside the CommonJS one: a second copy of every module.
  const esm = await import("pgoutput-wasm");
  const esmCompat = await import("pgoutput-wasm/pg-logical-replication");
  const esmPg = await import("pgoutput-wasm/pg");
  assert.notEqual(esm.PgoutputError, core.PgoutputError, "import() gave the CommonJS copy: no second copy to check");
  let thrown;
  try {
    new core.BaselineDecoder().decode(new Uint8Array([0x42])); // a Begin cut short
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown instanceof core.PgoutputError && core.isPgoutputError(thrown));
  assert.ok(thrown instanceof esm.PgoutputError, "a CommonJS PgoutputError is not instanceof the ES PgoutputError");
  assert.ok(esm.isPgoutputError(thrown), "the ES isPgoutputError() refuses a CommonJS PgoutputError");
  assert.equal(thrown.incomplete, true);
  const esmError = new esmPg.ReplicationError("x", { code: "CONNECTION_LOST" });
  assert.ok(esmError instanceof pg.ReplicationError && pg.isReplicationError(esmError), "an ES ReplicationError is not recognized by the CommonJS copy");
  assert.ok(!(new Error("x") instanceof pg.ReplicationError) && !(thrown instanceof pg.ReplicationError) && !(esmError instanceof core.PgoutputError));
  assert.deepEqual(parseAll(new compat.PgoutputPlugin({ protoVersion: 1, publicationNames: ["pub"], decoder: await esm.createDecoder() })), parsed);
  assert.deepEqual(parseAll(new esmCompat.PgoutputPlugin({ protoVersion: 1, publicationNames: ["pub"], decoder: new core.BaselineDecoder() })), parsed);
  done.push("ES and CommonJS copies side by side: errors and decoders cross");
  console.log(done.join("; "));
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
