/**
 * Keeps the benchmark suite from rotting: compiles the benches with tsc and
 * runs the quick mode (small proto1-text corpus, generated from PostgreSQL 15
 * if missing; maxTime 0.3 s) as a child process under plain node, as
 * `npm run bench:quick` does, then checks its JSON has every case ×
 * competitor with positive rates. Needs bindings/wasm-inline.ts (`npm run
 * build:wasm`, which `npm test` runs first). About 20-30 s on 2 cores.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

/**
 * The fields of bench/report.ts's BenchReport this test reads. Written out
 * rather than imported: tests do not import bench/ (the JSON file is the
 * contract between the two, and this checks it).
 */
interface BenchReport {
  unsupported: unknown[];
  corpus: { messages: number };
  machine: { node: string };
  results: { case: string; competitor: string; mbPerSec: number; messagesPerSec: number; rme: number }[];
  targets: { measured: unknown }[];
  git?: { commit: string; dirty: boolean };
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = fs.mkdtempSync(path.join(os.tmpdir(), "bench-quick-"));
afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

const EXPECTED: Record<string, string[]> = {
  kernel: ["wasm", "baseline", "pg-logical-replication", "js-walk"],
  lazy: ["wasm", "baseline", "pg-logical-replication"],
  full: ["wasm", "baseline", "pg-logical-replication"],
  compat: ["wasm", "baseline", "pg-logical-replication"],
  jsonl: ["wasm", "baseline", "js-formatter", "pg-logical-replication"],
};

it("bench:quick runs under plain node and reports every case × competitor", { timeout: 180_000 }, () => {
  execFileSync(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.bench.json"], { cwd: root, stdio: "pipe" });
  const stdout = execFileSync(
    process.execPath,
    ["--expose-gc", "build/bench/bench/suite.bench.js", "--quick", "--out", out],
    { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 170_000 },
  );
  expect(stdout).toContain("targets");
  const report = JSON.parse(fs.readFileSync(path.join(out, "proto1-text-pg15-small.json"), "utf8")) as BenchReport;
  expect(report.unsupported).toEqual([]);
  expect(report.corpus.messages).toBeGreaterThan(0);
  expect(report.machine.node).toBe(process.version);
  for (const [c, competitors] of Object.entries(EXPECTED)) {
    for (const competitor of competitors) {
      const row = report.results.find((r) => r.case === c && r.competitor === competitor);
      expect(row, `${c}/${competitor}`).toBeDefined();
      expect(row!.mbPerSec, `${c}/${competitor} MB/s`).toBeGreaterThan(0);
      expect(row!.messagesPerSec, `${c}/${competitor} msgs/s`).toBeGreaterThan(0);
      expect(Number.isFinite(row!.rme), `${c}/${competitor} rme`).toBe(true);
    }
  }
  expect(report.results).toHaveLength(Object.values(EXPECTED).flat().length);
  expect(report.targets.map((t) => t.measured)).not.toContain(null);
  expect(fs.readFileSync(path.join(out, "proto1-text-pg15-small.svg"), "utf8")).toMatch(/^<svg[\s\S]*<\/svg>\n$/);
});

it("the README generator refuses results measured on uncommitted changes, and names the commit of clean ones", { timeout: 60_000 }, () => {
  // Runs after the test above, from its report (and its compiled bench).
  const report = JSON.parse(fs.readFileSync(path.join(out, "proto1-text-pg15-small.json"), "utf8")) as BenchReport;
  const readme = (git: BenchReport["git"]) => {
    fs.writeFileSync(path.join(out, "proto1-text-pg15-small.json"), JSON.stringify({ ...report, git }));
    try {
      return { code: 0, text: execFileSync(process.execPath, ["build/bench/bench/readme.js", "--results", out, "proto1-text-pg15-small"], { cwd: root, encoding: "utf8", stdio: "pipe" }) };
    } catch (e) {
      const err = e as { status: number; stderr: string };
      return { code: err.status, text: err.stderr };
    }
  };
  const dirty = readme({ commit: "abc1234", dirty: true });
  expect(dirty.code).toBe(1);
  expect(dirty.text).toContain("measured at abc1234 with uncommitted changes");
  const outside = readme(undefined);
  expect(outside.code).toBe(1);
  expect(outside.text).toContain("not measured in a git checkout");
  const clean = readme({ commit: "abc1234", dirty: false });
  expect(clean.code).toBe(0);
  expect(clean.text).toContain("(commit abc1234)");
  expect(clean.text).toContain("## Benchmarks");
  // The targets table lives in the bench docs (bench/targets.md, written with --write), not on the README's page.
  expect(clean.text).toContain("[bench/targets.md](bench/targets.md)");
  expect(clean.text).not.toContain("| target | wanted |");
});
