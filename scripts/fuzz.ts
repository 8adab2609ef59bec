/**
 * `npm run fuzz -- [--cases 1000000] [--seed N] [--from 0] [--workers 2]
 *                  [--form decode,batch,framed,push,copydata,backend]
 *                  [--corpus FILE|none] [--out test/fuzz-regressions] [--keep 3] [--hang-ms 20000]`
 *
 * Mutation fuzzing of the golden captures and the small bench corpus
 * (devkit/fuzz/fuzz.ts): every case runs through the wasm decoder and the
 * baseline, which must agree exactly, and through the twin kernel (the wasm
 * kernel and its TS build compared word for word on every call,
 * test/support/twin-kernel.ts), throw nothing but PgoutputError, stay
 * within memory and time, and keep decoding afterwards.
 *
 * Runs as tsc output under plain node (see the `fuzz` script in package.json),
 * in worker threads. Each worker publishes the case it is on in shared
 * memory; a case that runs longer than --hang-ms is a hang: the worker is
 * terminated, the case saved, and a new worker goes on after it. A worker
 * that dies (a crash, an out-of-memory) has its case saved the same way.
 *
 * Failing cases are saved (at most --keep per failure signature and form) as
 * JSON under test/fuzz-regressions/ — the input in hex, with seed, case
 * number, form, source window and mutations — and replayed by
 * test/fuzz-regressions.test.ts. A case is also reproducible from its seed
 * and number alone (`--seed S --from N --cases 1`) given the same sources.
 *
 * Prints progress every few seconds and a summary; exits 1 if anything failed.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import { TwinDecoder } from "../test/support/twin-kernel.ts";
import {
  describeCase, FORMS, FuzzRunner, generateCase, loadCaptureSource, loadGoldenSources, minimize, saveCase, trackWasmMemory,
  type Failure, type Form, type Source,
} from "../devkit/fuzz/fuzz.ts";

/** The repository root: the first folder up from this file (scripts/, or build/scripts/scripts/ for the tsc output) with a package.json. */
const ROOT = (() => {
  let dir = fileURLToPath(new URL(".", import.meta.url));
  while (!existsSync(join(dir, "package.json")) && resolve(dir, "..") !== resolve(dir)) dir = resolve(dir, "..");
  return dir;
})();

interface WorkerInput {
  seed: number;
  keep: number;
  forms: Form[] | null;
  corpus: string | null;
  heartbeat: SharedArrayBuffer;
}
interface Job {
  from: number;
  to: number;
}
type WorkerMessage =
  | { type: "ready" }
  | { type: "failure"; index: number; failures: Failure[]; saved: unknown; minimized: unknown; description: string }
  | { type: "done"; job: Job; perForm: Record<string, number>; outcomes: Record<string, number> };

/** Heartbeat words per worker: [case being run, cases finished]. */
const HB_CASE = 0;
const HB_DONE = 1;

function loadSources(corpus: string | null): Source[] {
  const sources = loadGoldenSources(join(ROOT, "test", "fixtures"));
  if (corpus !== null) sources.push(loadCaptureSource(corpus));
  return sources;
}

function formOf(forms: Form[] | null, index: number): Form | undefined {
  return forms === null ? undefined : forms[index % forms.length];
}

// ---------------------------------------------------------------------------
// Worker: runs jobs of consecutive cases.

if (!isMainThread) {
  const input = workerData as WorkerInput;
  const hb = new Int32Array(input.heartbeat);
  const memory = trackWasmMemory();
  const sources = loadSources(input.corpus);
  const runner = new FuzzRunner(new WasmDecoder(), new BaselineDecoder(), {
    wasmMemory: memory.takePeak,
    limited: (maxMessageSize) => [new WasmDecoder({ maxMessageSize }), new BaselineDecoder({ maxMessageSize })],
    twin: (maxMessageSize) => new TwinDecoder({ maxMessageSize }),
  });
  const port = parentPort!;
  /** Failures minimized so far, per signature and form: only the first --keep are (the rest are not saved). */
  const minimized = new Map<string, number>();
  port.on("message", (job: Job) => {
    const perForm: Record<string, number> = {};
    for (let i = job.from; i < job.to; i++) {
      Atomics.store(hb, HB_CASE, i);
      const c = generateCase(sources, input.seed, i, formOf(input.forms, i));
      perForm[c.form] = (perForm[c.form] ?? 0) + 1;
      const failures = runner.run(c);
      if (failures.length > 0) {
        // a smaller case that fails the same way (first signature), if the main thread will keep it
        const key = `${failures[0]!.signature} | ${c.form}`;
        const n = minimized.get(key) ?? 0;
        minimized.set(key, n + 1);
        const small = n < input.keep ? minimize(runner, c, failures[0]!.signature) : c;
        const smallFailures = small === c ? failures : runner.run(small);
        port.postMessage({
          type: "failure", index: i, failures, saved: saveCase(c, failures),
          minimized: small === c ? null : { ...saveCase(small, smallFailures), minimized: true }, description: describeCase(c),
        } satisfies WorkerMessage);
      }
      Atomics.add(hb, HB_DONE, 1);
    }
    const outcomes = Object.fromEntries(runner.outcomes);
    runner.outcomes.clear();
    port.postMessage({ type: "done", job, perForm, outcomes } satisfies WorkerMessage);
  });
  port.postMessage({ type: "ready" } satisfies WorkerMessage);
} else {
  await main();
}

// ---------------------------------------------------------------------------
// Main thread: hands out jobs, watches for hangs, saves failures, reports.

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      cases: { type: "string", default: "1000000" },
      seed: { type: "string" },
      from: { type: "string", default: "0" },
      workers: { type: "string", default: String(Math.max(1, Math.min(4, availableParallelism()))) },
      form: { type: "string" },
      corpus: { type: "string" },
      out: { type: "string", default: join(ROOT, "test", "fuzz-regressions") },
      keep: { type: "string", default: "3" },
      "hang-ms": { type: "string", default: "20000" },
      "job-size": { type: "string", default: "2000" },
    },
  });
  const cases = Number(values.cases);
  const seed = values.seed !== undefined ? Number(values.seed) >>> 0 : (Date.now() ^ (process.pid << 16)) >>> 0;
  const from = Number(values.from);
  const workers = Math.max(1, Number(values.workers));
  const keep = Number(values.keep);
  const hangMs = Number(values["hang-ms"]);
  const jobSize = Math.max(1, Number(values["job-size"]));
  const forms = values.form === undefined ? null : (values.form.split(",") as Form[]);
  if (forms !== null && forms.some((f) => !(FORMS as readonly string[]).includes(f))) throw new Error(`--form: one of ${FORMS.join(", ")}`);
  if (!Number.isSafeInteger(cases) || cases < 1 || !Number.isSafeInteger(from) || from < 0) throw new Error("--cases and --from must be integers");

  let corpus: string | null = null;
  if (values.corpus !== "none") {
    if (values.corpus !== undefined) corpus = resolve(values.corpus);
    else {
      const { ensureCorpus } = await import("../devkit/capture/corpus.ts");
      corpus = await ensureCorpus("proto1-text", { scale: "small" });
    }
  }
  const sources = loadSources(corpus);
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });

  console.log(`fuzz: seed ${seed}, cases ${from}..${from + cases - 1}, ${workers} workers, forms ${forms?.join(",") ?? "all"}`);
  console.log(`sources: ${sources.length} (${sources.reduce((s, x) => s + x.messages.length, 0)} messages; corpus ${corpus ?? "none"})`);
  console.log(`saving failures to ${out}`);

  const jobs: Job[] = [];
  for (let i = from; i < from + cases; i += jobSize) jobs.push({ from: i, to: Math.min(from + cases, i + jobSize) });
  const perForm: Record<string, number> = {};
  const outcomes: Record<string, number> = {};
  const bySignature = new Map<string, { count: number; saved: string[]; first: string }>();
  const savedPerKey = new Map<string, number>();
  let failedCases = 0;
  let done = 0;
  let peakRss = 0;
  const started = performance.now();

  const record = (index: number, failures: Failure[], saved: unknown, description: string, form: string) => {
    failedCases++;
    let path: string | undefined;
    for (const f of failures) {
      const key = `${f.signature} | ${form}`;
      const n = savedPerKey.get(key) ?? 0;
      if (n < keep && path === undefined) {
        path = join(out, `seed-${seed}-case-${index}.json`);
        writeFileSync(path, JSON.stringify(saved, null, 1) + "\n");
      }
      if (path !== undefined) savedPerKey.set(key, n + 1);
      const g = bySignature.get(f.signature) ?? { count: 0, saved: [], first: `${description} :: ${f.detail}` };
      g.count++;
      if (path !== undefined && g.saved.length < 10) g.saved.push(path);
      bySignature.set(f.signature, g);
    }
  };

  await new Promise<void>((resolveAll, rejectAll) => {
    let active = 0;
    const spawn = (resume?: Job) => {
      const heartbeat = new SharedArrayBuffer(8);
      const hb = new Int32Array(heartbeat);
      const w = new Worker(new URL(import.meta.url), { workerData: { seed, keep, forms, corpus, heartbeat } satisfies WorkerInput });
      active++;
      let job: Job | undefined;
      let lastCase = -1;
      let lastDone = 0;
      let lastChange = performance.now();
      let finished = false;
      const next = () => {
        job = jobs.shift();
        if (job === undefined) {
          finished = true;
          void w.terminate();
          return;
        }
        Atomics.store(hb, HB_CASE, job.from);
        lastChange = performance.now();
        w.postMessage(job);
      };
      const watch = setInterval(() => {
        const now = performance.now();
        const current = Atomics.load(hb, HB_CASE);
        const d = Atomics.load(hb, HB_DONE);
        if (current !== lastCase || d !== lastDone) {
          lastCase = current;
          lastDone = d;
          lastChange = now;
        } else if (job !== undefined && now - lastChange > hangMs) {
          clearInterval(watch);
          finished = true;
          const c = generateCase(sources, seed, current, formOf(forms, current));
          const failure = { signature: "hang", detail: `no progress for ${hangMs} ms` };
          console.log(`HANG at case ${current}: ${describeCase(c)}`);
          record(current, [failure], saveCase(c, [failure]), describeCase(c), c.form);
          void w.terminate().then(() => {
            if (job!.to > current + 1) jobs.unshift({ from: current + 1, to: job!.to });
            spawn();
          });
        }
      }, 250);
      w.on("message", (m: WorkerMessage) => {
        if (m.type === "ready") {
          if (resume !== undefined) {
            job = resume;
            w.postMessage(job);
          } else next();
        } else if (m.type === "failure") {
          const form = (m.saved as { form: string }).form;
          record(m.index, m.failures, m.minimized ?? m.saved, m.description, form);
        } else {
          done += m.job.to - m.job.from;
          for (const [f, n] of Object.entries(m.perForm)) perForm[f] = (perForm[f] ?? 0) + n;
          for (const [f, n] of Object.entries(m.outcomes)) outcomes[f] = (outcomes[f] ?? 0) + n;
          next();
        }
      });
      w.on("error", (e) => {
        if (finished) return;
        clearInterval(watch);
        finished = true;
        const current = Atomics.load(hb, HB_CASE);
        const c = generateCase(sources, seed, current, formOf(forms, current));
        const failure = { signature: `worker died: ${e.name}`, detail: String(e) };
        console.log(`CRASH at case ${current}: ${String(e)} — ${describeCase(c)}`);
        record(current, [failure], saveCase(c, [failure]), describeCase(c), c.form);
        if (job !== undefined && job.to > current + 1) jobs.unshift({ from: current + 1, to: job.to });
        spawn();
      });
      w.on("exit", () => {
        clearInterval(watch);
        active--;
        if (active === 0 && jobs.length === 0) resolveAll();
      });
      void rejectAll;
    };
    for (let i = 0; i < Math.min(workers, jobs.length); i++) spawn();

    const progress = setInterval(() => {
      const rss = process.memoryUsage.rss();
      peakRss = Math.max(peakRss, rss);
      const s = (performance.now() - started) / 1000;
      console.log(`  ${done.toLocaleString("en")} / ${cases.toLocaleString("en")} cases, ${s.toFixed(0)} s, ${(done / s).toFixed(0)} cases/s, ${failedCases} failing, RSS ${(rss / 2 ** 20).toFixed(0)} MiB`);
    }, 5000);
    const stop = () => clearInterval(progress);
    process.once("beforeExit", stop);
    const check = setInterval(() => {
      if (active === 0 && jobs.length === 0) {
        clearInterval(check);
        stop();
      }
    }, 200);
  });

  const seconds = (performance.now() - started) / 1000;
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
  console.log("");
  console.log(`summary: seed ${seed}, ${done.toLocaleString("en")} cases in ${seconds.toFixed(1)} s (${(done / seconds).toFixed(0)} cases/s), peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
  console.log(`  by form: ${Object.entries(perForm).map(([f, n]) => `${f} ${n}`).join(", ")}`);
  const runs = Object.values(outcomes).reduce((a, b) => a + b, 0);
  console.log(`  how cases ended (wasm, first error): ${Object.entries(outcomes).sort((a, b) => b[1] - a[1]).map(([f, n]) => `${f} ${(100 * n / runs).toFixed(1)}%`).join(", ")}`);
  if (bySignature.size === 0) {
    console.log("  no failures");
    return;
  }
  console.log(`  ${failedCases} failing cases:`);
  for (const [sig, g] of [...bySignature].sort((a, b) => b[1].count - a[1].count)) {
    console.log(`  - ${sig}: ${g.count}×`);
    console.log(`      e.g. ${g.first.slice(0, 400)}`);
    for (const p of g.saved) console.log(`      saved ${p}`);
  }
  process.exitCode = 1;
}
