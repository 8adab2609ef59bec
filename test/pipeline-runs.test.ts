/**
 * The pipeline's whole-batch path (run.ts #takeRun, Format.pushBatch): a
 * capture source offers its decoded batch, and a format that has it (JSON
 * Lines, wal2json, CloudEvents of JSON Lines, Debezium) writes a plain transaction's
 * lines from the kernel with no view per message.
 * Everything a sink sees — the bytes, each record's id and kind, the
 * transaction ends to acknowledge and where they fall — must be what the
 * same pipeline makes one item at a time, on every fixture capture, in
 * every chunking, with each format's options, and when a limit cuts a run.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { formatNamed } from "../bindings/formats/index.ts";
import { Pipeline } from "../bindings/pipeline/run.ts";
import { captureSource, type PipelineSource } from "../bindings/pipeline/sources.ts";
import type { FormatOptionValues } from "../bindings/pipeline/format.ts";
import type { ChangePosition } from "../bindings/pipeline/change-id.ts";
import { backend } from "./support/backends.ts";
import { recording, type Recorded } from "./support/recording-sink.ts";

const index = JSON.parse(readFileSync(fileURLToPath(new URL("./fixtures/index.json", import.meta.url)), "utf8")) as { fixtures: { file: string }[] };
const names = index.fixtures.map((f) => f.file);

function chunked(bytes: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  return (async function* () {
    for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
  })();
}

/** `mostTransactions`: the most transactions one run took (a run takes every plain transaction the batch holds). */
type Seen = Recorded & { error: string | undefined; mostTransactions: number };

async function run(capture: Uint8Array, chunk: number, options: FormatOptionValues, batches: boolean, limit?: number, delivered?: ChangePosition, formatName = "jsonl"): Promise<Seen> {
  const definition = formatNamed(formatName);
  const decoder = await backend.create({ values: definition.values() });
  const replayDecoder = await backend.create({ values: definition.values() });
  const source: PipelineSource = captureSource(chunked(capture, chunk), decoder);
  if (!batches) delete (source as { readyBatch?: unknown }).readyBatch;
  const { seen: recorded, format, sink, runs } = recording(definition.create({ decoder }, options), delivered);
  const seen: Seen = Object.assign(recorded, { error: undefined, mostTransactions: 0 });
  try {
    await new Pipeline({ source, format, sink, replayDecoder, limit }).run();
  } catch (e) {
    seen.error = (e as Error).message;
  }
  seen.mostTransactions = runs.mostTransactions;
  return seen;
}

describe(`pipeline whole-batch path (${backend.name})`, () => {
  // Debezium's events carry the processing time (`ts_ms`): the same for both paths.
  beforeEach(() => void vi.spyOn(Date, "now").mockReturnValue(1_796_000_000_123));
  afterEach(() => void vi.restoreAllMocks());
  const variants: [string, string, FormatOptionValues][] = [
    ["jsonl", "default", {}], ["jsonl", "transactions", { transactions: true }], ["jsonl", "numbers-as-strings", { "numbers-as-strings": true }],
    ["wal2json", "version 2", { "format-version": "2" }],
    ["wal2json", "version 2, every field", { "format-version": "2", "include-xids": true, "include-timestamp": true, "include-lsn": true, "include-pk": true, "include-type-oids": true }],
    ["wal2json", "version 2, no transactions, numbers as strings", { "format-version": "2", "include-transaction": false, "include-xids": true, "numeric-data-types-as-string": true }],
    ["wal2json", "version 1", {}],
    ["cloudevents", "structured", { transactions: true }],
    ["wal2json", "version 1, every field, pretty", { "include-xids": true, "include-timestamp": true, "include-lsn": true, "include-pk": true, "pretty-print": true }],
    ["debezium", "default", {}],
  ];
  for (const name of names) {
    it(`${name}: the same records, ids and acknowledgements as one item at a time`, async () => {
      const capture = gunzipSync(readFileSync(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))));
      for (const [formatName, label, options] of variants) {
        const expected = await run(capture, 65536, options, false, undefined, undefined, formatName);
        expect(expected.fromBatches).toBe(0);
        for (const chunk of [65536, 97]) {
          const got = await run(capture, chunk, options, true, undefined, undefined, formatName);
          expect(got, `${formatName} ${label}, ${chunk}-byte chunks`).toEqual({ ...expected, fromBatches: got.fromBatches, mostTransactions: got.mostTransactions });
        }
      }
    });
  }

  it("a destination that holds the first half (a restart's redelivery): the same records taken back as one by one, in every run", async () => {
    for (const name of ["pg15-replica-identity.bin.gz", "pg18-wide.bin.gz"]) {
      const capture = gunzipSync(readFileSync(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))));
      const all = await run(capture, 65536, {}, false);
      const delivered = all.positions[Math.floor(all.positions.length / 2)]!;
      for (const chunk of [65536, 97]) {
        // Compared in the same chunking: a batch whose records were all taken back carries acknowledgements the sink never sees.
        const expected = await run(capture, chunk, {}, false, undefined, delivered);
        expect(expected.records.length, name).toBe(all.records.length - Math.floor(all.positions.length / 2) - 1);
        const got = await run(capture, chunk, {}, true, undefined, delivered);
        expect(got, `${name}, ${chunk}-byte chunks`).toEqual({ ...expected, fromBatches: got.fromBatches, mostTransactions: got.mostTransactions });
      }
    }
  });

  it("the path is taken: most messages of a capture of plain transactions come from batches; a limit cuts a run where one by one cuts", async () => {
    const capture = gunzipSync(readFileSync(fileURLToPath(new URL("./fixtures/pg15-wide.bin.gz", import.meta.url))));
    const all = await run(capture, 65536, {}, true);
    expect(all.fromBatches).toBeGreaterThan(all.records.length / 2);
    const small = await run(gunzipSync(readFileSync(fileURLToPath(new URL("./fixtures/pg15-replica-identity.bin.gz", import.meta.url)))), 65536, {}, true);
    expect(small.mostTransactions).toBeGreaterThan(1);
    for (const limit of [1, 2, 5, Math.floor(all.records.length / 2)]) {
      const expected = await run(capture, 65536, { transactions: true }, false, limit);
      const got = await run(capture, 65536, { transactions: true }, true, limit);
      expect(got.records).toHaveLength(limit);
      expect(got).toEqual({ ...expected, fromBatches: got.fromBatches, mostTransactions: got.mostTransactions });
    }
  });
});
