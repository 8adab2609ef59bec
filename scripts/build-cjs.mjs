// Writes dist/cjs/: the CommonJS build of the library entry points (package.json
// `exports`: `.`, `./pg`, `./pg-logical-replication`, `./pipeline`), from the ES build tsc wrote to dist/ (run after
// `tsc -p tsconfig.build.json`). The CommonJS build is for the runtimes and tools
// that cannot load an ES module with require(): Node before 20.19/22.12 or with
// --no-experimental-require-module, Jest, TypeScript's node10/node16 CommonJS.
//
// - Every module the entries reach (static imports, re-exports and dynamic
//   import() of relative files; not the CLI, which stays an ES module) is
//   transformed on its own by esbuild to CommonJS: one file per module, the same
//   tree as dist/, so the entries share their modules exactly as in the ES build.
//   No bundling: one copy of each module per build.
// - import() becomes require() (a CommonJS module's import() needs
//   --experimental-vm-modules under Jest), and `import.meta.url` the module's own
//   path (createRequire takes a path or a URL); any other import.meta is an error.
// - The declarations are tsc's, copied beside the modules: dist/cjs/package.json
//   says "type": "commonjs", so TypeScript reads them as CommonJS declarations.
import { build, transform } from "esbuild";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = join(root, "dist");
const out = join(dist, "cjs");
/** The library entry points, as package.json `exports` names them: each maps to dist/<entry> for import, dist/cjs/<entry> for require. */
const { exports } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const ENTRIES = Object.values(exports)
  .filter((e) => typeof e === "object")
  .map((e) => {
    const entry = e.require.default.replace(/^\.\/dist\/cjs\//, "");
    if (e.default.default !== `./dist/${entry}`) throw new Error(`package.json exports: ${e.require.default} is not the CommonJS build of ${e.default.default}`);
    return entry;
  });

for (const e of ENTRIES) if (!existsSync(join(dist, e))) throw new Error(`dist/${e} is missing: run tsc -p tsconfig.build.json first`);

// The module graph: esbuild resolves what a bundle of the entries would hold, packages left outside.
const { metafile } = await build({
  entryPoints: ENTRIES.map((e) => join(dist, e)),
  bundle: true,
  write: false,
  metafile: true,
  format: "esm",
  platform: "node",
  packages: "external",
  outdir: join(root, "build", "cjs-graph"),
  logLevel: "silent",
});
const modules = Object.keys(metafile.inputs).map((p) => relative(dist, join(root, p)).split("\\").join("/")).sort();
const outside = modules.filter((m) => m.startsWith("..") || m.startsWith("cjs/"));
if (outside.length > 0) throw new Error(`the entries reach files outside dist/: ${outside.join(", ")}`);

rmSync(out, { recursive: true, force: true });
let bytes = 0;
for (const m of modules) {
  const source = readFileSync(join(dist, m), "utf8");
  const result = await transform(source, {
    sourcefile: `dist/${m}`,
    format: "cjs",
    target: "es2022",
    platform: "node",
    supported: { "dynamic-import": false },
    define: { "import.meta.url": "__filename" },
    logLevel: "silent",
  });
  if (/\bimport\.meta\b/.test(result.code)) throw new Error(`dist/${m}: import.meta other than import.meta.url has no CommonJS equivalent`);
  const problems = result.warnings.map((w) => `dist/${m}: ${w.text}`);
  if (problems.length > 0) throw new Error(problems.join("\n"));
  mkdirSync(dirname(join(out, m)), { recursive: true });
  writeFileSync(join(out, m), result.code);
  bytes += result.code.length;
}

// The declarations: those of the modules above, and whatever they refer to (type-only modules
// have no code in the graph).
const declarations = new Set();
const queue = ENTRIES.map((e) => e.replace(/\.js$/, ".d.ts"));
while (queue.length > 0) {
  const d = queue.pop();
  if (declarations.has(d)) continue;
  if (!existsSync(join(dist, d))) throw new Error(`dist/${d} is missing`);
  declarations.add(d);
  const text = readFileSync(join(dist, d), "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, ""); // doc comments hold example imports
  for (const [, spec] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
    queue.push(posix.normalize(posix.join(posix.dirname(d), spec.replace(/\.(js|ts)$/, ".d.ts"))));
  }
}
for (const m of modules) declarations.add(m.replace(/\.js$/, ".d.ts"));
for (const d of declarations) cpSync(join(dist, d), join(out, d));

writeFileSync(join(out, "package.json"), `${JSON.stringify({ type: "commonjs" }, null, 2)}\n`);
console.log(`dist/cjs: ${modules.length} modules (${(bytes / 1024).toFixed(0)} kB), ${declarations.size} declarations`);
