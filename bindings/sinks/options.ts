/**
 * A sink's options: the target URL's query parameters (`redis://h?maxlen=~1000`)
 * and, overriding them, the record given beside the target (CLI flags, a
 * library caller). One reading for every sink: each declares the names it
 * takes and their types; a value of the wrong type is a SinkError naming
 * the option. A sink whose URL's query belongs to the destination (a
 * webhook's) keeps the other parameters in the URL; the others refuse them,
 * so a typo is not silently ignored.
 *
 * Names are snake_case, as libpq's URL parameters (`connect_timeout`) are;
 * durations take a unit (`500ms`, `5s`, `2m`, `1h`; a bare number is
 * seconds) and are read as milliseconds.
 */
import { SinkError, type SinkOptionValues } from "../pipeline/sink.ts";

export interface SinkOptionSpec {
  readonly type: "string" | "integer" | "boolean" | "duration";
  /** The only values it takes (for a string). */
  readonly values?: readonly string[];
  readonly description: string;
}

type ValueOf<S extends SinkOptionSpec> = S["type"] extends "integer" | "duration" ? number : S["type"] extends "boolean" ? boolean : string;

export type OptionsOf<T extends Readonly<Record<string, SinkOptionSpec>>> = { -readonly [K in keyof T]?: ValueOf<T[K]> };

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** `500ms`, `5s`, `2m`, `1h` (a bare number is seconds), in milliseconds; undefined when it is none of these. */
export function durationMs(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  return m === null ? undefined : Math.round(Number(m[1]) * UNIT_MS[(m[2] ?? "s") as keyof typeof UNIT_MS]);
}

function value(sink: string, name: string, spec: SinkOptionSpec, raw: string | number | boolean): string | number | boolean {
  const bad = (what: string, hint?: string) => new SinkError(`${sink}: ${name}=${String(raw)} is not ${what}`, { sink, hint });
  switch (spec.type) {
    case "duration": {
      const ms = typeof raw === "number" ? raw * 1000 : durationMs(String(raw));
      if (ms === undefined || !Number.isFinite(ms) || ms < 0) throw bad("a duration", "write it as 500ms, 5s, 2m or 1h (a bare number is seconds)");
      return ms;
    }
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
      if (spec.values !== undefined && !spec.values.includes(s)) throw bad(`one of ${spec.values.join(", ")}`, `${spec.values.map((v) => `${name}=${v}`).join(" or ")}: ${spec.description}`);
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
  const unknown = (name: string) => new SinkError(`${sink}: unknown option ${name}`, { sink, hint: `the ${sink} sink takes ${Object.keys(spec).join(", ")}` });
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
