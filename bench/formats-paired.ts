/**
 * Every output format through the pipeline (`decode --format F -o …`
 * between its read and its write: pipelinePass), paired in one process:
 * per format, the kernel's whole lines (the source offers its batch:
 * Format.pushBatch where the format has it) against the same format's JS
 * path (push() per message), and pg-logical-replication's parse per
 * message, what its users pay before writing anything, in paired rounds
 * (paired-rounds.ts); printed: each entry's median input and output MB/s
 * and the median and range of its per-round ratios.
 *
 *   npm run build:bench
 *   node build/bench/bench/formats-paired.js [capture] [--rounds 7] [--formats jsonl,wal2json-v2,...] [--write]
 *
 * `--write`: also bench/results/formats.table.json, for the README (readme.ts).
 */
import { parseArgs } from "node:util";
import { makeCompetitors, pipelinePass, plrPass, type OutputCount } from "./competitors.ts";
import { loadInput } from "./input.ts";
import { WasmDecoder } from "../bindings/index.ts";
import { formatNamed, type FormatOptionValues } from "../bindings/pipeline/index.ts";
import { median, pairedRatio, pairedRounds } from "./paired-rounds.ts";
import { writeTable } from "./report.ts";

/** The formats measured: name, format, options. */
const FORMATS: [string, string, FormatOptionValues][] = [
  ["jsonl", "jsonl", {}],
  ["wal2json-v2", "wal2json", { "format-version": "2" }],
  ["wal2json-v2-all", "wal2json", { "format-version": "2", "include-xids": true, "include-timestamp": true, "include-lsn": true, "include-pk": true }],
  ["wal2json-v1", "wal2json", {}],
  ["cloudevents", "cloudevents", {}],
  ["debezium", "debezium", {}],
];

const { values: args, positionals } = parseArgs({
  allowPositionals: true, options: { rounds: { type: "string", default: "7" }, formats: { type: "string" }, write: { type: "boolean", default: false } },
});
const input = loadInput(positionals[0] ?? "bench/corpus/proto1-text-pg15-small.bin");
const only = args.formats?.split(",");
const c = makeCompetitors(input);

interface Entry { name: string; run: () => Promise<unknown> | void; out: OutputCount | undefined }
const entries: Entry[] = [{ name: "plr parse", run: () => void plrPass(c.plr, input.split, () => 1), out: undefined }];
for (const [name, format, options] of FORMATS) {
  if (only !== undefined && !only.includes(name)) continue;
  const values = formatNamed(format).values();
  for (const batches of [true, false]) {
    const d = new WasmDecoder({ values });
    const replay = new WasmDecoder({ values });
    const out: OutputCount = { bytes: 0 };
    entries.push({ name: `${name} ${batches ? "kernel" : "js"}`, run: () => pipelinePass(d, replay, input.chunks, out, format, options, batches), out });
  }
}

const rounds = Number(args.rounds);
const secs = await pairedRounds(entries.map((e) => e.run), rounds);
const ratio = (i: number, j: number) => pairedRatio(secs, i, j);
const mb = input.messageBytes / 1e6;
console.log(`${input.name}: ${mb.toFixed(1)} MB in; ${rounds} paired rounds, medians (ranges of per-round ratios)`);
const rows: string[][] = [];
for (let i = 0; i < entries.length; i++) {
  const { name, out } = entries[i]!;
  const s = median(secs[i]!);
  const outText = out === undefined ? "" : `, ${(out.bytes / 1e6 / s).toFixed(0).padStart(5)} MB/s out`;
  // A kernel entry's JS path is the entry after it.
  const vsJs = name.endsWith(" kernel") ? `; ÷ its js ${ratio(i, i + 1)}` : "";
  console.log(`${name.padEnd(22)} ${(mb / s).toFixed(0).padStart(6)} MB/s in${outText}; ÷ plr parse ${ratio(i, 0)}${vsJs}`);
  rows.push([name, (mb / s).toFixed(0), out === undefined ? "—" : (out.bytes / 1e6 / s).toFixed(0), ratio(i, 0), name.endsWith(" kernel") ? ratio(i, i + 1) : "—"]);
}
if (args.write) {
  writeTable("formats", {
    title: `Formats (${input.name})`,
    about: [
      "Every output format through the pipeline (`decode --format F -o …` between its read and its write), in one process: the",
      "kernel's whole lines (`kernel`: the format's pushBatch) against the same format's JS path (`js`: push() per message),",
      "and pg-logical-replication's parse() of every message. Paired rounds, medians; ratios are medians of per-round ratios (their range).",
      "Options: wal2json-v2 `format-version=2`, wal2json-v2-all also `include-xids`, `include-timestamp`, `include-lsn`, `include-pk`;",
      "wal2json-v1 the defaults; cloudevents structured, its data JSON Lines; debezium the defaults.",
    ],
    command: `node build/bench/bench/formats-paired.js bench/corpus/${input.name}.bin --rounds ${rounds} --write`,
    columns: ["entry", "MB/s in", "MB/s out", "÷ plr parse", "÷ its JS path"],
    rows,
    targets: [],
  });
}
