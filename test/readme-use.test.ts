/**
 * The README's first example ("## Use") run as a user runs it: its code
 * block, as written, in a project that imports the package by name (Node's
 * self-reference resolves `pgoutput-wasm` to this package's dist/), against
 * a real PostgreSQL 15 set up with the SQL its first lines give. It must
 * print the begin, the inserted row and the unchanged-TOAST line its comments
 * promise.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The first code block of the README section `heading`, and the SQL its `// Set up once (SQL):` comment gives. */
function example(heading: string): { code: string; sql: string } {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf(`\n${heading}\n`));
  const code = /```js\n([\s\S]*?)```/.exec(section)![1]!;
  const setup = /^\/\/ Set up once \(SQL\):([\s\S]*?)\n(?!\/\/)/m.exec(code)![1]!;
  return { code, sql: setup.replace(/^\/\/\s*/gm, " ").trim() };
}

let cluster: Cluster;
// Inside the package, so that `import "pgoutput-wasm"` is the package itself (its dist/); removed after.
const dir = mkdtempSync(join(ROOT, ".tmp-readme-"));

beforeAll(async () => {
  // dist/ as `npm run build` makes it (the test command builds it only after vitest, for the runtimes).
  if (!existsSync(join(ROOT, "dist", "index.js"))) {
    const tsc = spawnSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], { cwd: ROOT, encoding: "utf8" });
    if (tsc.status !== 0) throw new Error(`tsc -p tsconfig.build.json: ${tsc.stdout}${tsc.stderr}`);
  }
  cluster = await startCluster(15);
}, 180_000);
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function node(file: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { cwd: dir, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString("utf8")));
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("README: Use", () => {
  it("the example runs as written against PostgreSQL 15 set up as it says, and prints what it promises", async () => {
    const { code, sql } = example("## Use");
    expect(sql).toMatch(/CREATE TABLE docs/);
    const admin = new pg.Client({ connectionString: cluster.connectionString });
    await admin.connect();
    try {
      // One statement at a time, as psql sends them (a slot cannot be made in a transaction that wrote).
      for (const statement of sql.split(";").map((t) => t.trim()).filter(Boolean)) await admin.query(statement);
      // Flushed at commit, as a server's default is (the test clusters run with synchronous_commit off, and the slot function reads only what is flushed).
      await admin.query("SET synchronous_commit = on");
      // A body too large to be stored inline (random bytes do not compress), then an update that leaves it alone.
      await admin.query("INSERT INTO docs VALUES (1, 'first', (SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 400)))");
      await admin.query("UPDATE docs SET title = 'second' WHERE id = 1");
    } finally {
      await admin.end();
    }
    const file = join(dir, "use.mjs");
    writeFileSync(file, code);
    const r = await node(file, { DATABASE_URL: cluster.connectionString });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^begin \d+ [0-9A-F]+\/[0-9A-F]+ \d{4}-\d\d-\d\dT[\d:.]+Z$/);
    expect(lines[1]).toBe("docs 1 {");
    expect(r.stdout).toMatch(/^ {2}id: 1,\n {2}title: 'first',\n {2}body: '[0-9a-f]{64}/m); // typed: id a number
    expect(lines).toContain("body not sent (unchanged TOAST)");
  }, 120_000);
});
