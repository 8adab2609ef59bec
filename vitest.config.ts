import { configDefaults, defineConfig } from "vitest/config";

/**
 * The shared suites: the runner runs each once per backend (the projects
 * `wasm` and `baseline`, PGOUTPUT_BACKEND in their env), the way
 * cjs-module-lexer runs one suite against its wasm and JS builds. The file
 * takes the run's backend from test/support/backends.ts (`backend`).
 * Everything else — no backend at all, or both compared — runs once, in `node`.
 */
const perBackend = [
  "test/aliasing.test.ts",
  "test/in-place-reads.test.ts",
  "test/bounded-copy.test.ts",
  "test/compat-fast-parsers.test.ts",
  "test/compat-parse.test.ts",
  "test/compat-record.test.ts",
  "test/conformance.test.ts",
  "test/encoder.test.ts",
  "test/errors.test.ts",
  "test/fixtures.test.ts",
  "test/format-cloudevents.test.ts",
  "test/format-debezium.test.ts",
  "test/isolation.test.ts",
  "test/layout.test.ts",
  "test/limits.test.ts",
  "test/pipeline.test.ts",
  "test/pipeline-runs.test.ts",
  "test/pipeline-stream-runs.test.ts",
  "test/pooled-buffer.test.ts",
  "test/raw-stream.test.ts",
  "test/replicate-hostile.test.ts",
  "test/replicate-integrity.test.ts",
  "test/row-readers.test.ts",
  "test/row-values.test.ts",
  "test/truncation.test.ts",
  "test/values-errors.test.ts",
  "test/walsender.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    // Two files at a time, on the 2 cores these machines have (vitest's default is cores - 1): most of the
    // suite waits on servers, brokers and timers (a broker stopped for 10 s, a background writer's 15 s),
    // and one file at a time took 1,171 s here; two take about 700.
    maxWorkers: 2,
    hookTimeout: 180_000,
    projects: [
      ...(["wasm", "baseline"] as const).map((name) => ({
        extends: true as const,
        test: { name, include: perBackend, env: { PGOUTPUT_BACKEND: name } },
      })),
      {
        extends: true as const,
        test: { name: "node", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, ...perBackend] },
      },
    ],
  },
});
