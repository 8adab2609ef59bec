/**
 * Memory while streaming a whole corpus, per backend and path:
 *
 *   node --expose-gc build/bench/bench/memory.bench.js [capture files...]
 *       [--variants proto1-text,...] [--scale default|small|<MB>] [--quick] [--out DIR]
 *
 * Each measurement runs in a fresh child process (so one run's heap and
 * wasm memory do not inflate the next one's RSS), under plain node with
 * `--expose-gc` and V8's default heap settings.
 *
 * 1. Streaming (`stream` children): the capture file is read with
 *    fs.createReadStream in 64 KB chunks (a fresh Buffer per chunk, as from
 *    a socket) and each chunk is pushed and consumed at once, on the lazy or
 *    the full path (cases.ts's lazyTouch/fullTouch). RSS and heapUsed are
 *    sampled every 50 ms. Reported: the baseline after setup and a full GC,
 *    the peak during the stream, growth = peak − baseline, and the heap
 *    retained after a final full GC. pg-logical-replication is streamed the
 *    same way for reference (it needs whole messages: a small framer cuts the
 *    chunks; its parse() is its full path).
 *
 * 2. Allocation (`alloc` children): bytes allocated on the JS heap per
 *    message. Method: after one warm-up pass, every chunk's push-and-touch is
 *    bracketed by `v8.getHeapStatistics().used_heap_size` reads. Between
 *    garbage collections, used size grows by exactly what was allocated
 *    (new-space bump allocation), so a window's delta is its allocation; a
 *    window during which a GC ran (seen by a PerformanceObserver on `gc`
 *    entries, or a negative delta) is discarded. The constant cost of the
 *    bracketing itself (the statistics object) is measured on empty windows
 *    and subtracted; a calibration allocates a known number of objects of
 *    known size to check the method. Off-heap memory (ArrayBuffer contents,
 *    wasm memory) is not counted here; the streaming RSS covers it. These
 *    children run with a 64 MB new space (`--min/max-semi-space-size=64`) so
 *    that fewer windows are discarded; the default gives the same figure.
 *    The calibration object measures 56 bytes on Node 20: 40 for the object
 *    (no pointer compression) and 16 for the allocation memento V8 places
 *    behind objects made from a literal's allocation site.
 */
import { spawnSync } from "node:child_process";
import { createReadStream, mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { PerformanceObserver, performance } from "node:perf_hooks";
import v8 from "node:v8";
import { PgoutputPlugin } from "pg-logical-replication";
import { BaselineDecoder, WasmDecoder } from "../bindings/index.ts";
import type { PgoutputDecoder, PgoutputMessage } from "../bindings/index.ts";
import { fullTouch, lazyTouch } from "./cases.ts";
import { CHUNK, loadInput } from "./input.ts";
import { machine, packages, repoRoot } from "./report.ts";

type Backend = "wasm" | "baseline" | "pg-logical-replication";
type PathName = "lazy" | "full";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    child: { type: "string" },
    file: { type: "string" },
    backend: { type: "string" },
    path: { type: "string" },
    quick: { type: "boolean", default: false },
    variants: { type: "string" },
    scale: { type: "string" },
    out: { type: "string" },
  },
});

const gc = (globalThis as { gc?: () => void }).gc;
const MB = 1024 * 1024;
let sink = 0;

function makeDecoder(backend: Backend): PgoutputDecoder {
  return backend === "wasm" ? new WasmDecoder() : new BaselineDecoder();
}

function touchOf(p: PathName): (m: PgoutputMessage) => number {
  return p === "lazy" ? lazyTouch : fullTouch;
}

// ------------------------------------------------------------------ children

interface Sample {
  /** Seconds since the stream started. */
  t: number;
  /** Message-file megabytes streamed so far. */
  mb: number;
  rssMB: number;
  heapMB: number;
}

interface StreamResult {
  kind: "stream";
  backend: Backend;
  path: PathName;
  seconds: number;
  fileMB: number;
  baseRssMB: number;
  peakRssMB: number;
  rssGrowthMB: number;
  baseHeapMB: number;
  peakHeapMB: number;
  /** Heap after the stream and a full GC, minus the baseline. */
  retainedHeapMB: number;
  /** process.resourceUsage().maxRSS at the end (whole process life). */
  maxRssMB: number;
  samples: Sample[];
}

/** Cuts a chunk stream into whole messages (for pg-logical-replication, which takes nothing else). */
function framer(onMessage: (m: Buffer) => void): (chunk: Buffer) => void {
  let carry: Buffer | null = null;
  return (chunk) => {
    const buf = carry === null ? chunk : Buffer.concat([carry, chunk]);
    let p = 0;
    while (p + 4 <= buf.length) {
      const len = buf.readUInt32BE(p);
      if (p + 4 + len > buf.length) break;
      onMessage(buf.subarray(p + 4, p + 4 + len));
      p += 4 + len;
    }
    carry = p < buf.length ? Buffer.from(buf.subarray(p)) : null;
  };
}

async function streamChild(file: string, backend: Backend, p: PathName): Promise<StreamResult> {
  let consume: (chunk: Buffer) => void;
  let finish: () => void;
  if (backend === "pg-logical-replication") {
    const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: ["corpus_pub"] });
    consume = framer((m) => {
      sink += plugin.parse(m).tag.length;
    });
    finish = () => {};
  } else {
    const d = makeDecoder(backend);
    const touch = touchOf(p);
    consume = (chunk) => {
      const batch = d.push(chunk);
      for (let i = 0; i < batch.length; i++) sink += touch(batch.get(i));
    };
    finish = () => d.end();
  }
  gc?.();
  gc?.();
  const base = process.memoryUsage();
  const samples: Sample[] = [];
  let peakRss = base.rss;
  let peakHeap = base.heapUsed;
  let bytes = 0;
  const t0 = performance.now();
  let next = t0;
  const sample = () => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
    samples.push({ t: (performance.now() - t0) / 1000, mb: bytes / MB, rssMB: m.rss / MB, heapMB: m.heapUsed / MB });
  };
  for await (const chunk of createReadStream(file, { highWaterMark: CHUNK })) {
    consume(chunk as Buffer);
    bytes += (chunk as Buffer).length;
    const now = performance.now();
    if (now >= next) {
      sample();
      next = now + 50;
    }
  }
  finish();
  sample();
  const seconds = (performance.now() - t0) / 1000;
  gc?.();
  gc?.();
  const after = process.memoryUsage();
  return {
    kind: "stream",
    backend,
    path: p,
    seconds,
    fileMB: bytes / MB,
    baseRssMB: base.rss / MB,
    peakRssMB: peakRss / MB,
    rssGrowthMB: (peakRss - base.rss) / MB,
    baseHeapMB: base.heapUsed / MB,
    peakHeapMB: peakHeap / MB,
    retainedHeapMB: (after.heapUsed - base.heapUsed) / MB,
    maxRssMB: process.resourceUsage().maxRSS / 1024,
    samples: thin(samples, 120),
  };
}

function thin<T>(xs: T[], n: number): T[] {
  if (xs.length <= n) return xs;
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(xs[Math.round((i * (xs.length - 1)) / (n - 1))]!);
  return out;
}

interface AllocResult {
  kind: "alloc";
  backend: Backend;
  path: PathName;
  bytesPerMessage: number;
  /** Median over windows of (bytes / messages). */
  medianWindowBytesPerMessage: number;
  windowsUsed: number;
  windowsDiscarded: number;
  messagesCounted: number;
  /** Bytes the bracketing itself allocates (subtracted). */
  overheadBytes: number;
  /** Calibration: measured bytes per `{ a, b }` object (56 on Node 20: 40-byte object + 16-byte allocation memento). */
  calibrationBytesPerObject: number;
}

const heapUsed = () => v8.getHeapStatistics().used_heap_size;

async function allocChild(file: string, backend: Backend, p: PathName): Promise<AllocResult> {
  const input = loadInput(file);
  const d = makeDecoder(backend);
  const touch = touchOf(p);
  const pass = (measure?: (i: number, run: () => number) => void) => {
    for (let c = 0; c < input.chunks.length; c++) {
      const chunk = input.chunks[c]!;
      const run = () => {
        const batch = d.push(chunk);
        let s = 0;
        for (let i = 0; i < batch.length; i++) s += touch(batch.get(i));
        sink += s;
        return batch.length;
      };
      if (measure) measure(c, run);
      else run();
    }
    d.end();
  };
  pass(); // warm-up: V8 tiers the code up before anything is counted
  pass();

  const gcs: { start: number; end: number }[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ start: e.startTime, end: e.startTime + e.duration });
  });
  obs.observe({ entryTypes: ["gc"] });

  // The bracketing's own allocation, from empty windows.
  const empty: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const h0 = heapUsed();
    const h1 = heapUsed();
    if (h1 >= h0) empty.push(h1 - h0);
  }
  const overhead = medianOf(empty);

  // Calibration: 1000 objects of two fields, kept in a preallocated array.
  const keep: unknown[] = new Array(1000).fill(null);
  const cal: number[] = [];
  for (let r = 0; r < 50; r++) {
    const h0 = heapUsed();
    for (let i = 0; i < 1000; i++) keep[i] = { a: i, b: r };
    const h1 = heapUsed();
    if (h1 >= h0) cal.push((h1 - h0 - overhead) / 1000);
  }

  gc?.();
  const windows: { bytes: number; messages: number; t0: number; t1: number }[] = [];
  pass((_c, run) => {
    const t0 = performance.now();
    const h0 = heapUsed();
    const messages = run();
    const h1 = heapUsed();
    const t1 = performance.now();
    windows.push({ bytes: h1 - h0 - overhead, messages, t0, t1 });
  });
  await new Promise((r) => setTimeout(r, 100)); // let the observer deliver the gc entries
  obs.disconnect();
  let bytes = 0;
  let messages = 0;
  let discarded = 0;
  const perWindow: number[] = [];
  for (const w of windows) {
    const hitGc = w.bytes < -overhead || gcs.some((g) => g.end >= w.t0 && g.start <= w.t1);
    if (hitGc) {
      discarded++;
      continue;
    }
    if (w.messages === 0) continue;
    bytes += w.bytes;
    messages += w.messages;
    perWindow.push(w.bytes / w.messages);
  }
  return {
    kind: "alloc",
    backend,
    path: p,
    bytesPerMessage: messages ? bytes / messages : NaN,
    medianWindowBytesPerMessage: medianOf(perWindow),
    windowsUsed: perWindow.length,
    windowsDiscarded: discarded,
    messagesCounted: messages,
    overheadBytes: overhead,
    calibrationBytesPerObject: medianOf(cal),
  };
}

function medianOf(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

// ------------------------------------------------------------------- parent

function runChild(kind: "stream" | "alloc", file: string, backend: Backend, p: PathName): StreamResult | AllocResult {
  const self = fileURLToPath(import.meta.url);
  // Allocation runs get a 64 MB new space so that fewer windows see a GC (the figure is the same, with fewer discards).
  const flags = kind === "alloc" ? ["--max-semi-space-size=64", "--min-semi-space-size=64"] : [];
  const r = spawnSync(process.execPath, ["--expose-gc", ...flags, self, "--child", kind, "--file", file, "--backend", backend, "--path", p], {
    encoding: "utf8",
    maxBuffer: 64 * MB,
  });
  if (r.status !== 0) throw new Error(`memory child ${kind} ${backend} ${p} failed: ${r.stderr}`);
  const line = r.stdout.trim().split("\n").pop()!;
  return JSON.parse(line) as StreamResult | AllocResult;
}

async function parent(): Promise<void> {
  const quick = args.quick!;
  let files = positionals;
  if (files.length === 0) {
    const { ensureCorpus } = await import("../devkit/capture/corpus.ts");
    const variants = (args.variants ?? "proto1-text").split(",");
    files = [];
    for (const v of variants) files.push(await ensureCorpus(v as Parameters<typeof ensureCorpus>[0], { scale: args.scale ?? (quick ? "small" : "default") }));
  }
  const outDir = path.resolve(args.out ?? path.join(repoRoot(), "bench", "results"));
  mkdirSync(outDir, { recursive: true });
  for (const file of files) {
    const input = loadInput(file);
    const name = input.name;
    const corpusMB = input.messageBytes / 1e6;
    console.log(`memory: ${name}, ${corpusMB.toFixed(1)} MB of messages, ${input.messages} messages`);
    const stream: StreamResult[] = [];
    const alloc: AllocResult[] = [];
    const runs: [Backend, PathName][] = [["wasm", "lazy"], ["wasm", "full"], ["baseline", "lazy"], ["baseline", "full"]];
    for (const [b, p] of runs) {
      const s = runChild("stream", file, b, p) as StreamResult;
      stream.push(s);
      console.log(`  stream ${b}/${p}: ${s.seconds.toFixed(1)} s, RSS ${s.baseRssMB.toFixed(0)} → peak ${s.peakRssMB.toFixed(0)} MB (growth ${s.rssGrowthMB.toFixed(1)} MB), heap ${s.baseHeapMB.toFixed(1)} → peak ${s.peakHeapMB.toFixed(1)} MB, retained ${s.retainedHeapMB.toFixed(2)} MB`);
    }
    if (input.info?.options.streaming === undefined) {
      const s = runChild("stream", file, "pg-logical-replication", "full") as StreamResult;
      stream.push(s);
      console.log(`  stream pg-logical-replication (reference): ${s.seconds.toFixed(1)} s, RSS growth ${s.rssGrowthMB.toFixed(1)} MB, heap peak ${s.peakHeapMB.toFixed(1)} MB`);
    }
    for (const [b, p] of runs) {
      const a = runChild("alloc", file, b, p) as AllocResult;
      alloc.push(a);
      console.log(`  alloc ${b}/${p}: ${a.bytesPerMessage.toFixed(1)} B/message (median window ${a.medianWindowBytesPerMessage.toFixed(1)}; ${a.windowsUsed} windows, ${a.windowsDiscarded} discarded for GC; calibration ${a.calibrationBytesPerObject.toFixed(1)} B per 2-field object)`);
    }
    const targets = stream
      .filter((s) => s.backend !== "pg-logical-replication")
      .map((s) => ({
        name: `RSS growth, ${s.backend}/${s.path}`,
        targetMB: 64,
        measuredMB: s.rssGrowthMB,
        met: s.rssGrowthMB < 64,
      }));
    console.log(`targets (RSS growth < 64 MB over the ${corpusMB.toFixed(0)} MB corpus${corpusMB < 150 ? "; small corpus: not the 190 MB the target names" : ""}):`);
    for (const t of targets) console.log(`  ${t.name.padEnd(32)} ${t.measuredMB.toFixed(1).padStart(7)} MB  ${t.met ? "met" : "NOT met"}`);
    const report = {
      corpus: { name, messages: input.messages, messageBytes: input.messageBytes, frameBytes: input.frameBytes },
      machine: machine(),
      packages: packages(),
      date: new Date().toISOString(),
      method: {
        stream: "fresh child per run (node --expose-gc, default heap flags); fs.createReadStream in 64 KB chunks; process.memoryUsage() every 50 ms; growth = peak RSS − RSS after setup and full GC",
        alloc: "v8.getHeapStatistics().used_heap_size before/after each chunk's push + touch after two warm-up passes (64 MB new space); windows that saw a GC (PerformanceObserver 'gc') discarded; bracketing overhead subtracted; bytesPerMessage = sum of window bytes / sum of window messages",
      },
      stream,
      alloc,
      targets,
    };
    const out = path.join(outDir, `${name}.memory.json`);
    writeFileSync(out, JSON.stringify(report, null, 2) + "\n");
    console.log(`wrote ${out}`);
  }
}

if (args.child !== undefined) {
  const file = args.file!;
  const backend = args.backend as Backend;
  const p = args.path as PathName;
  const result = args.child === "stream" ? await streamChild(file, backend, p) : await allocChild(file, backend, p);
  process.stdout.write(JSON.stringify(result) + "\n");
  if (sink === 0.5) console.error(sink);
} else {
  await parent();
}
