/**
 * A sink's options: the target URL's query parameters (`redis://h?maxlen=~1000`)
 * and, overriding them, the record given beside the target (CLI flags, a
 * library caller). One reading for every sink: each declares the names it
 * takes and their types; a value of the wrong type is a TypeError naming
 * the option. A sink whose URL's query belongs to the destination (a
 * webhook's) keeps the other parameters in the URL; the others refuse them,
 * so a typo is not silently ignored.
 */
import type { SinkOptionValues } from "../pipeline/sink.ts";

export interface SinkOptionSpec {
  readonly type: "string" | "integer" | "boolean";
  /** The only values it takes (for a string). */
  readonly values?: readonly string[];
  readonly description: string;
}

type ValueOf<S extends SinkOptionSpec> = S["type"] extends "integer" ? number : S["type"] extends "boolean" ? boolean : string;

export type OptionsOf<T extends Readonly<Record<string, SinkOptionSpec>>> = { -readonly [K in keyof T]?: ValueOf<T[K]> };

function value(sink: string, name: string, spec: SinkOptionSpec, raw: string | number | boolean): string | number | boolean {
  const bad = (what: string) => new TypeError(`${sink}: option ${name}=${JSON.stringify(String(raw))} is not ${what}`);
  switch (spec.type) {
    case "integer": {
      const n = typeof raw === "number" ? raw : /^\d+$/.test(String(raw)) ? Number(raw) : Number.NaN;
      if (!Number.isSafeInteger(n) || n < 0) throw bad("a whole number");
      return n;
    }
    case "boolean": {
      if (typeof raw === "boolean") return raw;
      const s = String(raw).toLowerCase();
      if (["", "1", "true", "yes", "on"].includes(s)) return true;
      if (["0", "false", "no", "off"].includes(s)) return false;
      throw bad("true or false");
    }
    default: {
      const s = String(raw);
      if (spec.values !== undefined && !spec.values.includes(s)) throw bad(`one of ${spec.values.join(", ")}`);
      return s;
    }
  }
}

/**
 * The options `spec` declares, from `url`'s query and `given`; `url` loses
 * the parameters read. `others: "refuse"` makes any other parameter (or
 * given name) a TypeError that lists the names taken.
 */
export function readSinkOptions<T extends Readonly<Record<string, SinkOptionSpec>>>(
  sink: string,
  url: URL,
  given: SinkOptionValues | undefined,
  spec: T,
  o: { others: "refuse" | "keep" },
): OptionsOf<T> {
  const out: Record<string, string | number | boolean> = {};
  const unknown = (name: string) => new TypeError(`${sink}: no option ${JSON.stringify(name)}; it takes ${Object.keys(spec).join(", ")}`);
  for (const name of [...new Set(url.searchParams.keys())]) {
    const s = spec[name];
    if (s === undefined) {
      if (o.others === "refuse") throw unknown(name);
      continue;
    }
    out[name] = value(sink, name, s, url.searchParams.get(name)!);
    url.searchParams.delete(name);
  }
  for (const [name, raw] of Object.entries(given ?? {})) {
    if (raw === undefined) continue;
    const s = spec[name];
    if (s === undefined) throw unknown(name);
    out[name] = value(sink, name, s, raw);
  }
  return out as OptionsOf<T>;
}
