/**
 * `npm run soak -- [--messages 10000000] [--backend wasm|baseline|both]
 *                  [--corpus FILE] [--chunk 65536] [--every 1000000]
 *                  [--warmup 1000000] [--max-growth-mib 32] [--json FILE]`
 *
 * Streams a capture (by default the small proto1-text bench corpus) through
 * a decoder over and over — push() in 64 KB chunks, as from a socket; every
 * message touched lazily (its kind; for a change, its relation's name and
 * first column) — until at least --messages messages went through, and
 * reports RSS and heap every --every messages and at the end. Memory must
 * stay flat: the RSS at the end (after a gc) may exceed the RSS after the
 * warm-up (after a gc) by at most --max-growth-mib, else the exit code is 1.
 *
 * Each backend runs in its own child process (RSS is per process). Runs as
 * tsc output under plain node with --expose-gc (see the `soak` script in
 * package.json).
 */
import { fork } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { gunzipSync } from "node:zlib";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";

const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "10000000" },
    backend: { type: "string", default: "both" },
    corpus: { type: "string" },
    chunk: { type: "string", default: "65536" },
    every: { type: "string", default: "1000000" },
    warmup: { type: "string", default: "1000000" },
    "max-growth-mib": { type: "string", default: "32" },
    json: { type: "string" },
    child: { type: "boolean", default: false },
  },
});

const MiB = 2 ** 20;
const mib = (n: number) => (n / MiB).toFixed(1);

interface Sample {
  messages: number;
  seconds: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

interface Report {
  backend: string;
  node: string;
  corpus: string;
  corpusMessages: number;
  corpusBytes: number;
  chunk: number;
  messages: number;
  bytes: number;
  passes: number;
  seconds: number;
  messagesPerSecond: number;
  mbPerSecond: number;
  rssStart: number;
  rssAfterWarmup: number;
  rssPeak: number;
  rssEnd: number;
  heapUsedAfterWarmup: number;
  heapUsedEnd: number;
  heapUsedPeak: number;
  growth: number;
  flat: boolean;
  samples: Sample[];
}

function sample(messages: number, started: number): Sample {
  const m = process.memoryUsage();
  return {
    messages, seconds: (performance.now() - started) / 1000,
    rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers,
  };
}

function settle(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
}

/** The lazy touch: the kind; for a change its relation's name and its first column's text. */
function touch(m: PgoutputMessage): number {
  let n = m.kind.length;
  if (m.kind === "Insert" || m.kind === "Update" || m.kind === "Delete") {
    n += m.relation?.name.length ?? 0;
    const t = m.kind === "Delete" ? m.oldTuple : m.newTuple;
    if (t !== null && t.length > 0 && t.kind(0) === "text") n += (t.text(0) as string).length;
  }
  return n;
}

async function corpusBytes(): Promise<{ path: string; bytes: Uint8Array }> {
  let path = values.corpus;
  if (path === undefined) {
    const { ensureCorpus } = await import("../devkit/capture/corpus.ts");
    path = await ensureCorpus("proto1-text", { scale: "small" });
  }
  let bytes: Uint8Array = readFileSync(path);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  return { path, bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
}

function countFrames(b: Uint8Array): number {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let n = 0;
  for (let p = 0; p + 4 <= b.length; p += 4 + dv.getUint32(p)) n++;
  return n;
}

async function soak(backend: "wasm" | "baseline"): Promise<Report> {
  const target = Number(values.messages);
  const chunkSize = Number(values.chunk);
  const every = Number(values.every);
  const warmup = Math.min(Number(values.warmup), Math.floor(target / 2));
  const { path, bytes } = await corpusBytes();
  const corpusMessages = countFrames(bytes);
  const chunks: Uint8Array[] = [];
  for (let p = 0; p < bytes.length; p += chunkSize) chunks.push(bytes.subarray(p, Math.min(p + chunkSize, bytes.length)));

  settle();
  const rssStart = process.memoryUsage.rss();
  const d: PgoutputDecoder = backend === "wasm" ? await WasmDecoder.create() : new BaselineDecoder();
  const samples: Sample[] = [];
  const started = performance.now();
  let messages = 0;
  let passes = 0;
  let sink = 0;
  let nextReport = every;
  let warm: Sample | undefined;
  let rssPeak = 0;
  let heapPeak = 0;
  console.log(`soak ${backend}: ${path} (${corpusMessages} messages, ${mib(bytes.length)} MiB) pushed in ${chunkSize}-byte chunks until ${target.toLocaleString("en")} messages`);
  console.log("  messages     seconds  msgs/s     RSS MiB  heapUsed MiB  heapTotal MiB  external MiB");
  const line = (s: Sample, note = "") =>
    console.log(`  ${String(s.messages).padStart(11)} ${s.seconds.toFixed(1).padStart(8)} ${(s.messages / s.seconds).toFixed(0).padStart(9)} ${mib(s.rss).padStart(9)} ${mib(s.heapUsed).padStart(13)} ${mib(s.heapTotal).padStart(14)} ${mib(s.external).padStart(13)} ${note}`);
  while (messages < target) {
    for (const chunk of chunks) {
      const batch = d.push(chunk);
      for (const m of batch) sink += touch(m);
      messages += batch.length;
      if (warm === undefined && messages >= warmup) {
        settle();
        warm = sample(messages, started);
        line(warm, "(after warm-up, gc)");
      }
      if (messages >= nextReport) {
        const s = sample(messages, started);
        rssPeak = Math.max(rssPeak, s.rss);
        heapPeak = Math.max(heapPeak, s.heapUsed);
        samples.push(s);
        line(s);
        nextReport += every;
      }
    }
    passes++;
  }
  d.end();
  const seconds = (performance.now() - started) / 1000;
  settle();
  const end = sample(messages, started);
  line(end, "(end, gc)");
  rssPeak = Math.max(rssPeak, end.rss);
  heapPeak = Math.max(heapPeak, end.heapUsed);
  const maxGrowth = Number(values["max-growth-mib"]) * MiB;
  const growth = end.rss - warm!.rss;
  if (sink === 0) console.log("(nothing touched)");
  return {
    backend, node: process.version, corpus: path, corpusMessages, corpusBytes: bytes.length, chunk: chunkSize,
    messages, bytes: passes * bytes.length, passes, seconds,
    messagesPerSecond: messages / seconds, mbPerSecond: (passes * bytes.length) / MiB / seconds,
    rssStart, rssAfterWarmup: warm!.rss, rssPeak, rssEnd: end.rss,
    heapUsedAfterWarmup: warm!.heapUsed, heapUsedEnd: end.heapUsed, heapUsedPeak: heapPeak,
    growth, flat: growth < maxGrowth, samples,
  };
}

function summary(r: Report): string {
  return [
    `${r.backend}: ${r.messages.toLocaleString("en")} messages (${r.passes} passes, ${mib(r.bytes)} MiB) in ${r.seconds.toFixed(1)} s — ${Math.round(r.messagesPerSecond).toLocaleString("en")} msgs/s, ${r.mbPerSecond.toFixed(1)} MiB/s`,
    `  RSS: start ${mib(r.rssStart)} MiB, after warm-up ${mib(r.rssAfterWarmup)} MiB, peak ${mib(r.rssPeak)} MiB, end ${mib(r.rssEnd)} MiB (growth ${mib(r.growth)} MiB: ${r.flat ? "flat" : "NOT FLAT"})`,
    `  heapUsed: after warm-up ${mib(r.heapUsedAfterWarmup)} MiB, peak ${mib(r.heapUsedPeak)} MiB, end ${mib(r.heapUsedEnd)} MiB`,
  ].join("\n");
}

if (values.child) {
  const r = await soak(values.backend as "wasm" | "baseline");
  process.send!(r);
} else {
  const which = values.backend === "both" ? (["wasm", "baseline"] as const) : [values.backend as "wasm" | "baseline"];
  if (!which.every((b) => b === "wasm" || b === "baseline")) throw new Error("--backend wasm|baseline|both");
  if (values.corpus === undefined) {
    // Generate the corpus (if missing) once, before the children need it.
    const { ensureCorpus } = await import("../devkit/capture/corpus.ts");
    values.corpus = await ensureCorpus("proto1-text", { scale: "small" });
  }
  const reports: Report[] = [];
  for (const backend of which) {
    const args = process.argv.slice(2).filter((a, i, all) => a !== "--backend" && all[i - 1] !== "--backend" && !a.startsWith("--backend="));
    if (!args.includes("--corpus")) args.push("--corpus", values.corpus);
    const child = fork(new URL(import.meta.url), [...args, "--backend", backend, "--child"], { execArgv: process.execArgv });
    const report = await new Promise<Report>((resolve, reject) => {
      let got: Report | undefined;
      child.on("message", (m) => (got = m as Report));
      child.on("exit", (code) => (got !== undefined ? resolve(got) : reject(new Error(`soak ${backend} exited with ${code}`))));
    });
    reports.push(report);
  }
  console.log("");
  for (const r of reports) console.log(summary(r));
  if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(reports, null, 1) + "\n");
  if (reports.some((r) => !r.flat)) process.exitCode = 1;
}
