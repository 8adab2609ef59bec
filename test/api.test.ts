/**
 * The public API is what api/*.api.md says: each entry point's exported
 * names and their declarations, and the package's declarations they reach
 * (devkit/api/report.ts, from the declarations the build emits). A change
 * of the API — an export added or removed, a signature or option changed —
 * fails here until `npm run api` rewrote the report, so it shows in review.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { apiReports } from "../devkit/api/report.ts";

const root = new URL("../", import.meta.url);

describe("API report", () => {
  const reports = apiReports();

  it("one committed report per entry point, and none for an entry that is gone", () => {
    const committed = readdirSync(new URL("api/", root)).filter((f) => f.endsWith(".api.md")).map((f) => `api/${f}`).sort();
    expect(committed, "run `npm run api`").toEqual(reports.map((r) => r.file).sort());
  });

  for (const r of reports) {
    it(`${r.specifier}: ${r.file} is the API the sources declare`, () => {
      const path = new URL(r.file, root);
      const committed = existsSync(path) ? readFileSync(path, "utf8") : "";
      expect(r.text, `${r.file} differs from the declarations: run \`npm run api\`, review the change and commit it`).toBe(committed);
    });
  }
});
