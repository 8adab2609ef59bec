/**
 * A bar chart of a results file: MB/s per case and competitor, hand-written
 * SVG (no dependencies). Each case is scaled to its own fastest competitor
 * (the cases differ by 30×, which one scale would flatten), linear from 0;
 * each bar is labelled with its rate and its ratio to pg-logical-replication.
 *
 *   node build/bench/bench/chart.js bench/results/<corpus>.json...   # writes <corpus>.svg beside each
 */
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { BenchReport } from "./report.ts";

const COLORS: Record<string, string> = {
  wasm: "#6d28d9",
  baseline: "#0891b2",
  "pg-logical-replication": "#d97706",
  "js-walk": "#6b7280",
  "js-formatter": "#9ca3af",
};

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function renderChart(r: BenchReport): string {
  const cases = [...new Set(r.results.map((x) => x.case))];
  const competitors = [...new Set(r.results.map((x) => x.competitor))];
  const W = 860;
  const left = 80;
  const right = 150;
  const top = 78;
  const bar = 16;
  const gap = 4;
  const groupGap = 18;
  const plotW = W - left - right;

  const out: string[] = [];
  let y = top;
  const groups: string[] = [];
  for (const c of cases) {
    const rows = r.results.filter((x) => x.case === c);
    const max = Math.max(...rows.map((x) => x.mbPerSec));
    const h = rows.length * (bar + gap) - gap;
    groups.push(`<line x1="${left}" y1="${y - 3}" x2="${left}" y2="${y + h + 3}" stroke="#9ca3af"/>`);
    groups.push(`<text x="${left - 10}" y="${y + h / 2 + 5}" text-anchor="end" font-weight="bold">${esc(c)}</text>`);
    for (const row of rows) {
      const wBar = Math.max(1, (row.mbPerSec / max) * plotW);
      const ratio = row.vsPgLogicalReplication !== null && row.competitor !== "pg-logical-replication"
        ? ` (${row.vsPgLogicalReplication.toFixed(1)}× plr)` : "";
      groups.push(
        `<rect x="${left}" y="${y}" width="${wBar.toFixed(1)}" height="${bar}" fill="${COLORS[row.competitor] ?? "#999"}">` +
          `<title>${esc(`${c} / ${row.competitor}: ${row.mbPerSec.toFixed(1)} MB/s, ±${row.rme.toFixed(1)}%`)}</title></rect>`,
        `<text x="${(left + wBar + 5).toFixed(1)}" y="${y + bar - 4}" font-size="11">${row.mbPerSec.toFixed(row.mbPerSec < 100 ? 1 : 0)} MB/s${esc(ratio)}</text>`,
      );
      y += bar + gap;
    }
    y += groupGap - gap;
  }
  const H = y + 24;

  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${left}" y="22" font-size="15" font-weight="bold">pgoutput decoding throughput, MB/s of messages (higher is better)</text>`);
  const m = r.machine;
  out.push(`<text x="${left}" y="40" font-size="11" fill="#444">${esc(`${r.corpus.name}: ${(r.corpus.messageBytes / 1e6).toFixed(0)} MB, ${r.corpus.messages.toLocaleString("en")} messages · ${m.cpu}, ${m.cores} cores · Node ${m.node}`)}</text>`);
  // Legend.
  let lx = left;
  for (const c of competitors) {
    out.push(`<rect x="${lx}" y="50" width="12" height="12" fill="${COLORS[c] ?? "#999"}"/><text x="${lx + 16}" y="60" font-size="11">${esc(c)}</text>`);
    lx += 26 + c.length * 6.5;
  }
  out.push(...groups);
  out.push(`<text x="${left}" y="${H - 8}" font-size="10" fill="#666">${esc(`bars scaled per case; median of Benchmark.js samples; ${r.settings.runner}; plr = pg-logical-replication ${r.packages["pg-logical-replication"] ?? ""}`)}</text>`);
  out.push("</svg>");
  return out.join("\n") + "\n";
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const file of process.argv.slice(2)) {
    const report = JSON.parse(readFileSync(file, "utf8")) as BenchReport;
    const svg = file.replace(/\.json$/, "") + ".svg";
    writeFileSync(svg, renderChart(report));
    console.log(`wrote ${svg}`);
  }
}
