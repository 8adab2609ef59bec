/**
 * The API report: for each library entry point (jsr.json `exports`, which
 * names their sources), every exported name with its declaration as a
 * consumer's TypeScript sees it, and then every declaration of the package
 * those reach without exporting it (a base class, an option type): together,
 * the whole surface a user can touch. Committed as api/<entry>.api.md;
 * `npm run api` rewrites the files, and test/api.test.ts fails, with a diff,
 * when they differ from what the sources declare — so every change of the
 * public API shows in review.
 *
 * How: the repository's tsc (the build's, tsconfig.build.json) emits the
 * declarations the package ships into a temporary folder; TypeScript 5's
 * compiler API (the `typescript-5` alias: TS 7 has none) then walks each
 * entry's exports in a program over those declarations, served from memory.
 * Declarations are printed without comments, names sorted, so a report
 * changes only when the API does.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript-5";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Where the emitted declarations appear to be (nothing is written there): inside the repository, so `pg` and `@types/node` resolve. */
const VIRTUAL = join(ROOT, "build", "api-declarations");

export interface EntryReport {
  /** The specifier a consumer imports (`pgoutput-wasm/pg`). */
  specifier: string;
  /** The report's file, relative to the repository (`api/pg.api.md`). */
  file: string;
  text: string;
}

/**
 * The declarations alone, as a NodeNext project reads them. Without Node's and the DOM's types: the
 * report prints declarations as written and follows only the package's own names, and parsing those
 * libraries would take most of the time.
 */
const OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ["lib.es2022.d.ts"],
  types: [],
  strict: true,
  skipLibCheck: true,
  noEmit: true,
};

/** The entry points: jsr.json maps each export to its source (package.json to the build of it). */
function entries(): { key: string; source: string }[] {
  const jsr = JSON.parse(readFileSync(join(ROOT, "jsr.json"), "utf8")) as { exports: Record<string, string> };
  return Object.entries(jsr.exports).map(([key, source]) => ({ key, source: join(ROOT, source) }));
}

/** The report of every entry point. */
export function apiReports(): EntryReport[] {
  const list = entries();
  const declarations = emitDeclarations();
  const dtsOf = (source: string) => join(VIRTUAL, relative(join(ROOT, "bindings"), source)).replace(/\.ts$/, ".d.ts");
  const program = declarationProgram(declarations, list.map((e) => dtsOf(e.source)));
  const checker = program.getTypeChecker();
  const name = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { name: string }).name;
  const entryFiles = list.map(({ key, source }) => {
    const file = program.getSourceFile(dtsOf(source));
    if (file === undefined) throw new Error(`no declarations for ${source}`);
    return { key, source, file, specifier: key === "." ? name : `${name}/${key.slice(2)}` };
  });
  // Which entry exports each declaration: a type another entry exports is named there, not printed again.
  const exportedBy = new Map<ts.Symbol, string>();
  for (const e of entryFiles) for (const s of exportsOf(checker, e.file)) if (!exportedBy.has(s)) exportedBy.set(s, e.specifier);
  return entryFiles.map(({ key, source, file, specifier }) => {
    const slug = key === "." ? "index" : key.slice(2).replace(/\//g, "-");
    return { specifier, file: `api/${slug}.api.md`, text: entryReport(checker, file, specifier, relative(ROOT, source), exportedBy) };
  });
}

/** The declarations an entry exports (a namespace export's members too). */
function exportsOf(checker: ts.TypeChecker, file: ts.SourceFile): ts.Symbol[] {
  const out: ts.Symbol[] = [];
  for (const e of checker.getExportsOfModule(checker.getSymbolAtLocation(file)!)) {
    const target = resolve(checker, e);
    out.push(target);
    if (target.declarations?.[0] !== undefined && ts.isSourceFile(target.declarations[0])) {
      for (const m of checker.getExportsOfModule(target)) out.push(resolve(checker, m));
    }
  }
  return out;
}

/** The build's declarations of bindings/ (tsc -p tsconfig.build.json), by their virtual path. */
function emitDeclarations(): Map<string, string> {
  const dir = mkdtempSync(join(tmpdir(), "pgoutput-wasm-api-"));
  try {
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const args = ["-p", join(ROOT, "tsconfig.build.json"), "--emitDeclarationOnly", "--sourceMap", "false", "--outDir", dir];
    execFileSync(process.execPath, [tsc, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    const out = new Map<string, string>();
    for (const f of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
      if (f.endsWith(".d.ts")) out.set(join(VIRTUAL, f), readFileSync(join(dir, f), "utf8"));
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A program over the emitted declarations (served from memory), everything else from disk. */
function declarationProgram(files: Map<string, string>, roots: string[]): ts.Program {
  const options = OPTIONS;
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const dirs = new Set<string>();
  for (const f of files.keys()) for (let d = dirname(f); d.startsWith(VIRTUAL); d = dirname(d)) dirs.add(d);
  host.fileExists = (f) => files.has(f) || (!f.startsWith(VIRTUAL) && ts.sys.fileExists(f));
  host.readFile = (f) => files.get(f) ?? (f.startsWith(VIRTUAL) ? undefined : ts.sys.readFile(f));
  host.directoryExists = (d) => dirs.has(d) || (!d.startsWith(VIRTUAL) && ts.sys.directoryExists(d));
  host.getSourceFile = (f, language, onError) => {
    const text = files.get(f);
    return text === undefined ? getSourceFile(f, language, onError) : ts.createSourceFile(f, text, language, true);
  };
  return ts.createProgram(roots, options, host);
}

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });

/** The statement a declaration is printed as (a variable's whole `declare const` statement). */
function statementOf(decl: ts.Declaration): ts.Node {
  if (ts.isVariableDeclaration(decl)) return decl.parent.parent;
  return decl;
}

/** A declaration as a consumer reads it: no comments, no `export`/`declare` noise, one blank-free block. */
function printed(node: ts.Node): string {
  const text = printer.printNode(ts.EmitHint.Unspecified, node, node.getSourceFile());
  return text.replace(/^export (declare )?/, "").replace(/^declare /, "");
}

/** Whether a symbol is declared by this package (in the emitted declarations), not by pg, Node or the DOM. */
function ours(symbol: ts.Symbol): boolean {
  return (symbol.declarations ?? []).some((d) => d.getSourceFile().fileName.startsWith(VIRTUAL));
}

function resolve(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

/** The package's declarations `node` refers to by name (types, base classes, `typeof` queries). */
function referenced(checker: ts.TypeChecker, ...args: [...nodes: ts.Node[], into: Set<ts.Symbol>]): void {
  const into = args.pop() as Set<ts.Symbol>;
  for (const node of args as ts.Node[]) referencedBy(checker, node, into);
}

function referencedBy(checker: ts.TypeChecker, node: ts.Node, into: Set<ts.Symbol>): void {
  const visit = (n: ts.Node): void => {
    let name: ts.Node | undefined;
    if (ts.isTypeReferenceNode(n)) name = n.typeName;
    else if (ts.isExpressionWithTypeArguments(n)) name = n.expression;
    else if (ts.isTypeQueryNode(n)) name = n.exprName;
    if (name !== undefined) {
      const at = checker.getSymbolAtLocation(ts.isQualifiedName(name) ? name.right : ts.isPropertyAccessExpression(name) ? name.name : name);
      if (at !== undefined) {
        const s = resolve(checker, at);
        if (!(s.flags & ts.SymbolFlags.TypeParameter) && ours(s)) into.add(s);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(node);
}

/** Where a symbol is declared, relative to bindings/ (`pg/stream.ts`). */
function home(symbol: ts.Symbol): string {
  const f = symbol.declarations?.[0]?.getSourceFile().fileName ?? "";
  return posix.normalize(relative(VIRTUAL, f).split("\\").join("/")).replace(/\.d\.ts$/, ".ts");
}

function declarationsText(symbol: ts.Symbol): string {
  const seen = new Set<ts.Node>();
  const parts: string[] = [];
  for (const d of symbol.declarations ?? []) {
    if (ts.isSourceFile(d)) continue;
    const s = statementOf(d);
    if (seen.has(s)) continue;
    seen.add(s);
    parts.push(printed(s));
  }
  return parts.join("\n");
}

function section(title: string, body: string): string {
  return `### ${title}\n\n\`\`\`ts\n${body}\n\`\`\`\n`;
}

function entryReport(checker: ts.TypeChecker, file: ts.SourceFile, specifier: string, source: string, exportedBy: Map<ts.Symbol, string>): string {
  const moduleSymbol = checker.getSymbolAtLocation(file)!;
  const exports = checker.getExportsOfModule(moduleSymbol).slice().sort((a, b) => cmp(a.name, b.name));
  const exported = new Set(exportsOf(checker, file));
  const reached = new Set<ts.Symbol>();
  const out: string[] = [
    `# API report: \`${specifier}\``,
    "",
    `What \`import … from "${specifier}"\` offers (${source}). Generated by \`npm run api\``,
    "(devkit/api/report.ts) from the declarations TypeScript emits; test/api.test.ts fails when this",
    "file differs from them, so every change of the public API shows here in review.",
    "",
    `## Exported (${exports.length})`,
    "",
  ];
  for (const e of exports) {
    const target = resolve(checker, e);
    const decl = target.declarations?.[0];
    if (decl !== undefined && ts.isSourceFile(decl)) {
      // `export type * as Name from "./module.ts"`: a namespace of that module's exports.
      const names = checker.getExportsOfModule(target).map((s) => s.name).sort(cmp);
      for (const s of checker.getExportsOfModule(target)) referenced(checker, ...(resolve(checker, s).declarations ?? []).filter((d) => !ts.isSourceFile(d)).map(statementOf), reached);
      out.push(section(e.name, `namespace ${e.name} { ${names.join(", ")} } // the exports of ${home(target)}`));
      continue;
    }
    if (target.name !== e.name && target.name !== "default") {
      out.push(section(e.name, `${e.name} = ${target.name}`));
      continue;
    }
    out.push(section(e.name, declarationsText(target)));
    for (const d of target.declarations ?? []) referenced(checker, statementOf(d), reached);
  }
  // What the exports lead to without exporting it, transitively: another entry's exports are named, the rest printed.
  const internal: ts.Symbol[] = [];
  const elsewhere = new Map<string, string[]>();
  const queue = [...reached];
  const done = new Set<ts.Symbol>();
  while (queue.length > 0) {
    const s = queue.pop()!;
    if (done.has(s) || exported.has(s)) continue;
    done.add(s);
    const other = exportedBy.get(s);
    if (other !== undefined) {
      elsewhere.set(other, [...(elsewhere.get(other) ?? []), s.name]);
      continue;
    }
    internal.push(s);
    const more = new Set<ts.Symbol>();
    for (const d of s.declarations ?? []) if (!ts.isSourceFile(d)) referenced(checker, statementOf(d), more);
    queue.push(...more);
  }
  internal.sort((a, b) => cmp(a.name, b.name) || cmp(home(a), home(b)));
  if (elsewhere.size > 0) {
    out.push(`## Reached from the exports, exported by another entry point`, "");
    for (const [other, names] of [...elsewhere].sort((a, b) => cmp(a[0], b[0]))) out.push(`- \`${other}\`: ${names.sort(cmp).join(", ")}`);
    out.push("");
  }
  out.push(`## Reached from the exports, not exported (${internal.length})`, "");
  if (internal.length === 0) out.push("None.", "");
  for (const s of internal) out.push(section(`${s.name} (${home(s)})`, declarationsText(s)));
  return `${out.join("\n").trimEnd()}\n`;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
