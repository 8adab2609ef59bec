/**
 * The backends: the wasm decoder and the pure-TS baseline.
 *
 * The runner picks the backend, not the test file: vitest.config.ts runs the
 * shared suites (`perBackend` there) once per backend, as the projects
 * `wasm` and `baseline`, each setting PGOUTPUT_BACKEND. Such a file uses
 * `backend`, the ONE backend of the current run. Files that compare the two
 * (differential*, property, kernel-tape, ...) or test one backend's own
 * behaviour use `backends` / `backendNamed` explicitly and run in one
 * project only.
 */
import type { DecoderOptions, PgoutputDecoder } from "../../bindings/decoder.ts";
import { BaselineDecoder } from "../../bindings/baseline/decoder.ts";
import { WasmDecoder } from "../../bindings/wasm/decoder.ts";

export type BackendName = "wasm" | "baseline";

export interface Backend {
  name: BackendName;
  create(options?: DecoderOptions): Promise<PgoutputDecoder>;
}

const wasm: Backend = { name: "wasm", create: (options) => WasmDecoder.create(options) };
const baseline: Backend = { name: "baseline", create: async (options) => new BaselineDecoder(options) };

/** Both backends, for the files that compare them. */
export const backends: Backend[] = [wasm, baseline];

export function backendNamed(name: BackendName): Backend {
  return name === "wasm" ? wasm : baseline;
}

const chosen = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.PGOUTPUT_BACKEND;

/**
 * The backend of this run, chosen by the runner (PGOUTPUT_BACKEND, set per
 * vitest project). Outside a per-backend project, `create` throws: the file
 * belongs in `perBackend` in vitest.config.ts.
 */
export const backend: Backend =
  chosen === "wasm" || chosen === "baseline"
    ? backendNamed(chosen)
    : {
        name: "wasm",
        create: () => {
          throw new Error(`PGOUTPUT_BACKEND is ${JSON.stringify(chosen)}: this suite runs per backend (vitest.config.ts, perBackend)`);
        },
      };

/**
 * True in exactly one per-backend run (the wasm project): a per-backend file
 * registers its tests that use no backend, or both, only `if (onceAcrossBackends)`,
 * so they run once, not once per backend.
 */
export const onceAcrossBackends: boolean = chosen === "wasm";
