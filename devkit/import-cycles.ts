// Import circles among the modules of a source folder (`bindings/` by
// default): the strongly connected components of its relative-import graph.
//
// Both kinds of edge count. A run-time edge (`import { x }`, `export … from`,
// `import "…"`, `import(…)`) is a module that must be evaluated before the
// importer; a type edge (`import type`, `export type … from`) disappears from
// the JS but still means the two files can only be understood together. With
// `verbatimModuleSyntax`, `import { type A }` keeps an (empty) run-time import,
// so it is a run-time edge.
//
//   npx tsx devkit/import-cycles.ts [folder]    (prints each circle; exits 1 if any)

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript-5";

export type EdgeKind = "runtime" | "type";

/** One circle: its files (relative to the folder scanned, sorted) and the edges inside it. */
export interface ImportCycle {
  files: string[];
  /** `true` when following run-time edges alone already goes round. */
  runtime: boolean;
  edges: { from: string; to: string; kind: EdgeKind }[];
}

/** The relative imports of one file's text: specifier and kind (from the syntax tree, so comments and strings do not count). */
export function importsOf(text: string, fileName = "file.ts"): { specifier: string; kind: EdgeKind }[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: { specifier: string; kind: EdgeKind }[] = [];
  const add = (node: ts.Node | undefined, kind: EdgeKind) => {
    if (node !== undefined && ts.isStringLiteralLike(node) && node.text.startsWith(".")) out.push({ specifier: node.text, kind });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) add(node.moduleSpecifier, node.importClause?.isTypeOnly === true ? "type" : "runtime");
    else if (ts.isExportDeclaration(node)) add(node.moduleSpecifier, node.isTypeOnly ? "type" : "runtime");
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression, node.isTypeOnly ? "type" : "runtime");
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal, "type");
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0], "runtime");
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(path);
    return e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The `.ts` files under `root` (paths relative to it) and their text. */
export function readSources(root: string): Map<string, string> {
  const base = resolve(root);
  return new Map(tsFiles(base).map((f) => [relative(base, f), readFileSync(f, "utf8")]));
}

/** The import graph of `sources` (path → text): file → file → kind, for imports of files among them. */
export function importGraph(sources: ReadonlyMap<string, string>): Map<string, Map<string, EdgeKind>> {
  const graph = new Map<string, Map<string, EdgeKind>>();
  for (const [file, text] of sources) {
    const edges = new Map<string, EdgeKind>();
    for (const { specifier, kind } of importsOf(text, file)) {
      const target = join(dirname(file), specifier.replace(/\.js$/, ".ts"));
      if (!sources.has(target)) continue; // outside the folder (or not a .ts file)
      if (edges.get(target) !== "runtime") edges.set(target, kind);
    }
    graph.set(file, edges);
  }
  return graph;
}

/** Strongly connected components (Tarjan) of `graph` restricted to the edges `keep` accepts, larger than one file or a self-import. */
function components(graph: Map<string, Map<string, EdgeKind>>, keep: (k: EdgeKind) => boolean): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const [w, kind] of graph.get(v) ?? []) {
      if (!keep(kind)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      scc.push(w);
      if (w === v) break;
    }
    const self = graph.get(v)?.get(v);
    if (scc.length > 1 || (self !== undefined && keep(self))) found.push(scc.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** Every import circle among `sources` (path → text), type edges included; each says whether its run-time edges alone go round. */
export function importCycles(sources: ReadonlyMap<string, string>): ImportCycle[] {
  const graph = importGraph(sources);
  const runtime = components(graph, (k) => k === "runtime").map((c) => c.join("\n"));
  return components(graph, () => true).map((files) => {
    const inside = new Set(files);
    const edges = files.flatMap((from) => [...graph.get(from)!].filter(([to]) => inside.has(to)).map(([to, kind]) => ({ from, to, kind })));
    const runs = runtime.some((r) => r.split("\n").every((f) => inside.has(f)));
    return { files, runtime: runs, edges };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = process.argv[2] ?? join(dirname(new URL(import.meta.url).pathname), "..", "bindings");
  const cycles = importCycles(readSources(root));
  for (const c of cycles) {
    console.log(`${c.runtime ? "run-time" : "type-only"} circle: ${c.files.join(", ")}`);
    for (const e of c.edges) console.log(`  ${e.from} → ${e.to}${e.kind === "type" ? " (type)" : ""}`);
  }
  console.log(`${cycles.length} import circle(s) under ${relative(process.cwd(), root) || "."}`);
  process.exitCode = cycles.length > 0 ? 1 : 0;
}
