/**
 * `npm run api`: rewrites api/<entry>.api.md from the sources (report.ts),
 * and removes a report whose entry point is gone. Commit what changed.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { apiReports } from "./report.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const reports = apiReports();
mkdirSync(join(root, "api"), { recursive: true });
for (const r of reports) writeFileSync(join(root, r.file), r.text);
for (const f of readdirSync(join(root, "api"))) if (f.endsWith(".api.md") && !reports.some((r) => r.file === `api/${f}`)) rmSync(join(root, "api", f));
for (const r of reports) console.log(`${r.file}: ${r.specifier}, ${/^## Exported \((\d+)\)/m.exec(r.text)![1]} exported names`);
