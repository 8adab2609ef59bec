/**
 * The Prometheus text exposition format (version 0.0.4, what every
 * Prometheus server scrapes), written here rather than through prom-client:
 * the figures already live in the stream, the pipeline and the sinks, so a
 * registry would only keep a second copy of each; prom-client is written
 * for Node (`pgoutput-wasm/pg` also runs in Deno and Bun), and registers a
 * metric once per registry by name, where two streams of one process each
 * bring their own families (merged here, by name, labels apart). The
 * format is small: per family a `# HELP` and a `# TYPE` line, then one line
 * per sample, `name{label="value"} value`. A prom-client user appends this
 * text to `register.metrics()`'s (families are distinct by name).
 *
 * Every source (`stream`, `snapshot`, `pipeline`, a sink) lists its
 * families (`collectMetrics()`); `metricsText()` writes any number of
 * sources as one exposition, merging families of the same name (two
 * streams: one family, one sample per slot), and refuses what a scraper
 * would reject: a bad name, a family of two types, a sample twice.
 * docs/metrics.md lists the metrics.
 */

/** What a scrape's HTTP answer says its body is. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Every metric's name begins with it. */
export const METRIC_PREFIX = "pgoutput_wasm_";

export type MetricLabels = Readonly<Record<string, string>>;

export interface MetricSample {
  readonly labels?: MetricLabels;
  readonly value: number | bigint;
}

/**
 * One metric family. A counter's name ends in `_total` and only grows
 * (within the life of its source); a gauge goes up and down. Units are
 * base units, in the name (`_bytes`, `_seconds`), as Prometheus asks.
 */
export interface MetricFamily {
  readonly name: string;
  readonly type: "counter" | "gauge";
  readonly help: string;
  readonly samples: readonly MetricSample[];
}

/** Something with metrics: a stream, a snapshot, a pipeline, a sink. */
export interface MetricsSource {
  collectMetrics(): readonly MetricFamily[] | Promise<readonly MetricFamily[]>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** The exposition of `sources`' families, in order, same names merged. A family with no samples is left out. */
export async function metricsText(...sources: readonly MetricsSource[]): Promise<string> {
  const lists = await Promise.all(sources.map((s) => s.collectMetrics()));
  return formatExposition(lists.flat());
}

/** The exposition of `families` (see the file's comment); throws a TypeError for what a scraper would refuse. */
export function formatExposition(families: readonly MetricFamily[]): string {
  const merged = new Map<string, { type: MetricFamily["type"]; help: string; lines: string[]; seen: Set<string> }>();
  for (const f of families) {
    if (!NAME.test(f.name)) throw new TypeError(`metric name ${JSON.stringify(f.name)} is not [a-zA-Z_:][a-zA-Z0-9_:]*`);
    let m = merged.get(f.name);
    if (m === undefined) merged.set(f.name, (m = { type: f.type, help: f.help, lines: [], seen: new Set() }));
    else if (m.type !== f.type) throw new TypeError(`metric ${f.name} is both a ${m.type} and a ${f.type}`);
    for (const s of f.samples) {
      const labels = labelText(f.name, s.labels);
      if (m.seen.has(labels)) throw new TypeError(`metric ${f.name}${labels} is given twice`);
      m.seen.add(labels);
      m.lines.push(`${f.name}${labels} ${valueText(s.value)}`);
    }
  }
  let out = "";
  for (const [name, m] of merged) {
    if (m.lines.length === 0) continue;
    out += `# HELP ${name} ${m.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${name} ${m.type}\n${m.lines.join("\n")}\n`;
  }
  return out;
}

/** `{a="x",b="y"}` in the order given (one order per source keeps a family's lines alike), or nothing. */
function labelText(metric: string, labels: MetricLabels | undefined): string {
  if (labels === undefined) return "";
  const parts: string[] = [];
  for (const [k, v] of Object.entries(labels)) {
    if (!LABEL.test(k) || k.startsWith("__")) throw new TypeError(`label name ${JSON.stringify(k)} of ${metric} is not [a-zA-Z_][a-zA-Z0-9_]* (or begins with __)`);
    parts.push(`${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  }
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/** Go's float syntax, which Prometheus parses: NaN, +Inf, -Inf; a bigint as its exact digits. */
function valueText(v: number | bigint): string {
  if (typeof v === "bigint") return v.toString();
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** A family in a few words: `family("pgoutput_wasm_x_total", "counter", "…", labels, value)` for a family of one sample. */
export function family(name: string, type: MetricFamily["type"], help: string, labels: MetricLabels, value: number | bigint | undefined | null): MetricFamily {
  return { name, type, help, samples: value === undefined || value === null ? [] : [{ labels, value }] };
}
