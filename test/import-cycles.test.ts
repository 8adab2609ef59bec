/**
 * No import circle in `bindings/` (issue 21): not at run time (a module
 * evaluated before one it needs, as `pg/options.ts` → `pg/publication.ts`
 * → `pg/guard.ts` → `pg/options.ts` was), and not through type imports
 * either (two files that can only be read together). devkit/import-cycles.ts
 * finds them; `npx tsx devkit/import-cycles.ts` prints them.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { importCycles, importsOf, readSources } from "../devkit/import-cycles.ts";
import { tsxChildEnv } from "./support/tsx-child.ts";

const BINDINGS = fileURLToPath(new URL("../bindings", import.meta.url));

describe("import circles", () => {
  it("bindings/ has none, run-time or type-only", () => {
    const sources = readSources(BINDINGS);
    expect(sources.size).toBeGreaterThan(50);
    expect(importCycles(sources).map((c) => `${c.runtime ? "run-time" : "type-only"}: ${c.files.join(", ")}`)).toEqual([]);
  });

  it("pg/options.ts loads as the first module of a process (inside its old loop it read guard.ts's constant before it existed)", () => {
    // Native ESM (tsx, one file at a time), not vitest's module runner: an uninitialized binding is a ReferenceError there.
    const tsx = tsxChildEnv();
    let r: SpawnSyncReturns<string>;
    try {
      r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e",
        'const m = await import("./bindings/pg/options.ts"); console.log(typeof m.normalizeOptions);'], { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8", env: tsx.env });
    } finally {
      tsx.remove();
    }
    expect(r.stderr).not.toMatch(/ReferenceError/);
    expect(r.stdout.trim()).toBe("function");
  });

  it("the check finds a circle and tells run-time from type-only", () => {
    const sources = new Map([
      ["a.ts", 'import { b } from "./b.ts";\nexport const a = 1;'],
      ["b.ts", 'import type { A } from "./sub/c.ts";\nexport const b = 2;'],
      ["sub/c.ts", 'export type { a } from "../a.ts";\n// import { b } from "../b.ts";\nexport type A = number;'],
      ["d.ts", 'import { x } from "./e.ts";'],
      ["e.ts", 'const m = await import("./d.ts");\nexport const x = 1;'],
      ["f.ts", 'import { type G } from "./g.ts";'], // kept as `import {} from "./g.ts"` under verbatimModuleSyntax
      ["g.ts", 'export type G = import("./f.ts").F;'],
    ]);
    const cycles = importCycles(sources).map((c) => ({ files: c.files, runtime: c.runtime }));
    expect(cycles).toEqual([
      { files: ["a.ts", "b.ts", "sub/c.ts"], runtime: false },
      { files: ["d.ts", "e.ts"], runtime: true },
      { files: ["f.ts", "g.ts"], runtime: false },
    ]);
  });

  it("reads imports from the syntax, not from comments or strings", () => {
    expect(importsOf('/* import { a } from "./a.ts"; */ const s = \'import "./b.ts"\';\nimport "./c.ts";')).toEqual([{ specifier: "./c.ts", kind: "runtime" }]);
    expect(importsOf('export * from "./x.ts"; export type * from "./y.ts"; import z from "node:fs";')).toEqual([
      { specifier: "./x.ts", kind: "runtime" },
      { specifier: "./y.ts", kind: "type" },
    ]);
  });
});
