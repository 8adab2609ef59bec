// Runs the portable cases in headless Chromium (Debian's `chromium`, driven
// by playwright-core): serves the repository on 127.0.0.1 with node:http,
// opens test/portable/browser.html (the cases, built by tsconfig.browser.json
// into build/browser/) and two fallback pages — nowasm.html (WebAssembly
// removed before the package loads) and csp.html (served with a
// Content-Security-Policy that forbids compiling wasm) — and importmap.html
// (the package build, dist/, loaded through an import map), and prints
// `N passed, N failed`. Exit code 1 on any failure.
//
// Usage: tsc -p tsconfig.browser.json && tsc -p tsconfig.build.json && node test/portable/browser.run.mjs
// Environment: CHROMIUM (default /usr/bin/chromium).

import { createReadStream, existsSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = fileURLToPath(new URL("../../", import.meta.url));
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";

const MIME = {
  ".html": "text/html; charset=utf-8",
  ".js": "application/javascript; charset=utf-8",
  ".mjs": "application/javascript; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".wasm": "application/wasm",
};
// Scripts from this origin only: no 'wasm-unsafe-eval', so compiling wasm is refused.
const CSP_PAGES = { "/test/portable/csp.html": "script-src 'self'" };

function serve() {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    const file = normalize(join(root, path));
    if (!file.startsWith(root) || file.split(sep).includes("node_modules") || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    const headers = { "content-type": MIME[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" };
    if (CSP_PAGES[path]) headers["content-security-policy"] = CSP_PAGES[path];
    res.writeHead(200, headers);
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** Opens a page and waits for the `window.__results` it sets. */
async function resultsOf(browser, url) {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  try {
    await page.goto(url);
    await page.waitForFunction(() => globalThis.__results !== undefined, undefined, { timeout: 30_000 });
    return { results: await page.evaluate(() => globalThis.__results), problems };
  } catch (e) {
    return { results: undefined, problems: [...problems, String(e)] };
  } finally {
    await page.close();
  }
}

const server = await serve();
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath,
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
let passed = 0;
let failed = 0;
const fail = (what, detail) => {
  failed++;
  console.log(`FAIL ${what}\n  ${detail}`);
};
try {
  console.log(`chromium ${browser.version()}:`);

  const main = await resultsOf(browser, `${base}/test/portable/browser.html`);
  if (main.results === undefined) fail("browser.html", main.problems.join("\n  "));
  else {
    for (const f of main.results.failures) console.log(`FAIL ${f.name}\n  ${f.error.replace(/\n/g, "\n  ")}`);
    passed += main.results.passed;
    failed += main.results.failed;
  }

  for (const [page, reason] of [["nowasm.html", /not available/], ["csp.html", /failed to load/]]) {
    const { results: r, problems } = await resultsOf(browser, `${base}/test/portable/${page}`);
    const what = `${page}: createDecoder() falls back to the baseline`;
    if (r === undefined) fail(what, problems.join("\n  "));
    else if (r.backend !== "baseline" || r.reasons?.length !== 1 || !reason.test(r.reasons[0]) || r.decoded?.kind !== "Begin" ||
      r.decoded.finalLsn !== "0/17864C0") fail(what, JSON.stringify(r));
    else {
      passed++;
      console.log(`${page}: baseline (${r.reasons[0]})`);
    }
  }

  {
    const what = "importmap.html: the package build (dist/) through an import map, inlined and release.wasm kernels";
    const { results: r, problems } = await resultsOf(browser, `${base}/test/portable/importmap.html`);
    const want = "wasm Begin 0/17864C0 742";
    if (r === undefined || r.inlined !== want || r["release.wasm"] !== want) fail(what, r === undefined ? problems.join("\n  ") : JSON.stringify(r));
    else {
      passed++;
      console.log(`importmap.html: ${r.inlined}`);
    }
  }
} finally {
  await browser.close();
  server.close();
}
console.log(`${passed} passed, ${failed} failed`);
if (failed > 0) process.exitCode = 1;
