// Packs the package the way `npm publish` would and proves the tarball works:
//   1. builds dist/ fresh (tsc -p tsconfig.build.json; build/release.wasm must exist: npm run build:wasm),
//   2. `npm pack`, then checks the file list (dist .js/.d.ts, release.wasm, README; nothing else),
//      that no development tooling came along (devkit/, test/, bench/ files; the test cluster
//      harness's Debian paths, template cache and user management outside bindings/cli/run-as.ts),
//      package.json (no runtime dependencies, every `exports` target present), and that the core
//      entry dist/index.js imports nothing outside the package (no bare or node: specifiers),
//   3. installs the tarball offline into an empty temporary project (test/consumer/) and runs
//      test/consumer/smoke.mjs there under Node, Node --jitless (no WebAssembly: the baseline),
//      Deno and Bun, and
//   4. type-checks test/consumer/consumer.ts against the installed package with strict
//      settings and skipLibCheck off, under NodeNext and Bundler resolution.
// Prints `N passed, N failed`; exit code 1 on any failure. KEEP=1 keeps the temporary directory.

import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => join(root, "node_modules", ".bin", name);
const tmp = mkdtempSync(join(tmpdir(), "pgoutput-wasm-pack-"));
let passed = 0;
let failed = 0;

function run(file, args, opts = {}) {
  return execFileSync(file, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...opts });
}

async function step(name, fn) {
  const t0 = performance.now();
  try {
    const note = await fn();
    passed++;
    console.log(`ok   ${name} (${Math.round(performance.now() - t0)} ms)${note ? `: ${note}` : ""}`);
  } catch (e) {
    failed++;
    // execFileSync's message already holds the child's stderr
    const detail = [e.message, e.stdout].filter(Boolean).join("\n").trim();
    console.log(`FAIL ${name}\n  ${detail.replace(/\n/g, "\n  ")}`);
  }
}

function assert(cond, message) {
  if (!cond) throw new Error(message);
}

/**
 * The import specifiers of ES modules (paths relative to the repository), as
 * V8 parses them: vm.SourceTextModule's dependencySpecifiers (static imports
 * and re-exports; needs --experimental-vm-modules, hence a child process),
 * plus any dynamic import() with a literal argument.
 */
function importsOf(paths) {
  const script = `
    import { readFileSync } from "node:fs";
    import { SourceTextModule } from "node:vm";
    const out = {};
    for (const p of JSON.parse(process.argv[1])) {
      const src = readFileSync(p, "utf8");
      const dynamic = [...src.replace(/\\/\\*[\\s\\S]*?\\*\\//g, "").replace(/\\/\\/.*$/gm, "").matchAll(/\\bimport\\(\\s*["']([^"']+)["']/g)].map((m) => m[1]);
      out[p] = [...new SourceTextModule(src, { identifier: p }).dependencySpecifiers, ...dynamic];
    }
    console.log(JSON.stringify(out));`;
  return JSON.parse(run(process.execPath, ["--experimental-vm-modules", "--no-warnings", "--input-type=module", "-e", script, JSON.stringify(paths)]));
}

let tarball;
let files = [];
const consumer = join(tmp, "consumer");

try {
  await step("build dist/ fresh", () => {
    assert(existsSync(join(root, "build/release.wasm")) && existsSync(join(root, "bindings/wasm-inline.ts")),
      "build/release.wasm or bindings/wasm-inline.ts is missing: run npm run build:wasm first");
    rmSync(join(root, "dist"), { recursive: true, force: true });
    run(bin("tsc"), ["-p", "tsconfig.build.json"]);
  });

  await step("npm pack", () => {
    // --ignore-scripts: dist/ was just built; `prepare` would run asc and tsc again.
    const [info] = JSON.parse(run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", tmp]));
    tarball = join(tmp, info.filename);
    files = info.files.map((f) => f.path);
    return `${info.filename}, ${files.length} files, ${(info.size / 1024).toFixed(1)} kB packed, ${(info.unpackedSize / 1024).toFixed(1)} kB unpacked`;
  });

  await step("tarball holds only dist .js/.d.ts, release.wasm, README, package.json", () => {
    const stray = files.filter((f) => !/^dist\/.+\.(js|d\.ts)$/.test(f) && !["build/release.wasm", "README.md", "package.json", "LICENSE"].includes(f));
    assert(stray.length === 0, `unexpected files: ${stray.join(", ")}`);
    for (const f of ["dist/index.js", "dist/index.d.ts", "build/release.wasm", "package.json"]) assert(files.includes(f), `missing ${f}`);
  });

  await step("no development tooling: no devkit/test/bench file, no cluster-harness code", () => {
    const tooling = files.filter((f) => /(^|\/)(devkit|test|tests|bench|scripts|fixtures)\//.test(f) || /\.(test|bench)\.(js|d\.ts)$/.test(f));
    assert(tooling.length === 0, `tooling files packed: ${tooling.join(", ")}`);
    // Strings that only the development harness (devkit/cluster/) or test libraries have. The
    // shipped embedded default runs PostgreSQL as an unprivileged user when root, so user
    // management may appear, but only in the one module that does it.
    const everywhere = ["/usr/lib/postgresql", "pgoutputwasm-template", "startCluster", "vitest", "fast-check"];
    const onlyIn = { runuser: "dist/cli/run-as.js", useradd: "dist/cli/run-as.js", setpriv: "dist/cli/run-as.js" };
    const found = [];
    for (const f of files.filter((f) => f.startsWith("dist/"))) {
      const text = readFileSync(join(root, f), "utf8");
      for (const word of everywhere) if (text.includes(word)) found.push(`${f}: ${word}`);
      for (const [word, home] of Object.entries(onlyIn)) if (f !== home && text.includes(word)) found.push(`${f}: ${word} (only ${home} may)`);
    }
    assert(found.length === 0, `harness code packed:\n${found.join("\n")}`);
    return `${files.length} files scanned`;
  });

  await step("package.json: no runtime dependencies; every exports target is in the tarball", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    assert(pkg.dependencies === undefined || Object.keys(pkg.dependencies).length === 0, `dependencies: ${JSON.stringify(pkg.dependencies)}`);
    const targets = [];
    const walk = (v) => (typeof v === "string" ? targets.push(v) : v && Object.values(v).forEach(walk));
    walk(pkg.exports);
    for (const t of [pkg.main, pkg.types, ...targets].filter(Boolean)) assert(files.includes(posix.normalize(t)), `exports/main/types target ${t} is not packed`);
    return Object.keys(pkg.exports).join(", ");
  });

  await step("dist/index.js imports nothing outside the package", () => {
    const seen = new Set();
    let queue = ["dist/index.js"];
    while (queue.length > 0) {
      const batch = [...new Set(queue)].filter((f) => !seen.has(f));
      queue = [];
      for (const file of batch) {
        seen.add(file);
        assert(files.includes(file), `${file} is imported but not packed`);
      }
      for (const [file, specs] of Object.entries(importsOf(batch))) {
        for (const spec of specs) {
          assert(spec.startsWith("./") || spec.startsWith("../"), `${file} imports ${spec}`);
          queue.push(posix.normalize(posix.join(posix.dirname(file), spec)));
        }
      }
    }
    return `${seen.size} modules, all relative`;
  });

  await step("install the tarball offline into an empty project", () => {
    cpSync(join(root, "test/consumer"), consumer, { recursive: true });
    // (consumer.ts is copied with the folder; the root tsconfig excludes test/consumer)
    run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball], { cwd: consumer });
    assert(existsSync(join(consumer, "node_modules/pgoutput-wasm/dist/index.js")), "not installed");
  });

  await step("Node: both backends and release.wasm from the installed package", () => run(process.execPath, ["smoke.mjs"], { cwd: consumer }).trim());
  await step("Node --jitless (no WebAssembly): createDecoder() falls back and says why", () =>
    run(process.execPath, ["--jitless", "--no-warnings", "smoke.mjs", "baseline"], { cwd: consumer }).trim());
  await step("Node with WebAssembly deleted before import: falls back", () =>
    run(process.execPath, ["--input-type=module", "-e", "delete globalThis.WebAssembly; process.argv = [process.execPath, 'smoke.mjs', 'baseline']; await import('./smoke.mjs');"], { cwd: consumer }).trim());
  await step("Deno: the installed package", () => run(bin("deno"), ["run", "--allow-read", "smoke.mjs"], { cwd: consumer }).trim());
  await step("Bun: the installed package", () => run(bin("bun"), ["smoke.mjs"], { cwd: consumer }).trim());

  for (const config of ["tsconfig.json", "tsconfig.bundler.json"]) {
    await step(`strict consumer type-check (${config}, skipLibCheck off)`, () => {
      run(bin("tsc"), ["-p", config], { cwd: consumer });
    });
  }
} finally {
  if (process.env.KEEP) console.log(`kept ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
}

console.log(`${passed} passed, ${failed} failed`);
if (failed > 0) process.exitCode = 1;
