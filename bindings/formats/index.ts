/**
 * The output formats, by name: one entry per format file. `formatOptions()`
 * checks option values against a format's declared options, so that an
 * option a format does not take is refused with its name, not ignored, and
 * so is a value outside an option's `choices` or a combination the format's
 * `check` refuses.
 */
import type { FormatDefinition, FormatOptionValues } from "../pipeline/format.ts";
import { capture } from "./capture.ts";
import { cloudevents } from "./cloudevents.ts";
import { debezium } from "./debezium.ts";
import { jsonl } from "./jsonl.ts";
import { messages } from "./messages.ts";
import { wal2json } from "./wal2json.ts";

export const FORMATS: Readonly<Record<string, FormatDefinition>> = { jsonl, messages, capture, wal2json, debezium, cloudevents };

/** The format named, or a TypeError that lists the known ones. */
export function formatNamed(name: string): FormatDefinition {
  const f = Object.hasOwn(FORMATS, name) ? FORMATS[name] : undefined;
  if (f === undefined) throw new TypeError(`unknown format ${JSON.stringify(name)}: one of ${Object.keys(FORMATS).join(", ")}`);
  return f;
}

/**
 * `values` checked against `format.options`, after the format's own
 * `check()` (run first: it may refuse an option with a reason, as wal2json
 * does for what the stream does not carry): a TypeError names an option it
 * does not take, a value of the wrong type or outside its choices, or a
 * combination the format refuses.
 */
export function formatOptions(format: FormatDefinition, values: FormatOptionValues): FormatOptionValues {
  format.check?.(values);
  for (const [name, value] of Object.entries(values)) {
    const spec = Object.hasOwn(format.options, name) ? format.options[name] : undefined;
    if (spec === undefined) {
      const known = Object.keys(format.options);
      throw new TypeError(`format ${format.name} has no option ${JSON.stringify(name)}${known.length > 0 ? ` (it takes ${known.join(", ")})` : ""}`);
    }
    const ok = spec.type === "boolean" ? typeof value === "boolean" : spec.type === "string" ? typeof value === "string" : Array.isArray(value);
    if (!ok) throw new TypeError(`format ${format.name}: option ${name} takes ${spec.type === "list" ? "a list" : `a ${spec.type}`}`);
    const choices = spec.choices;
    if (choices !== undefined) {
      for (const v of Array.isArray(value) ? value : [value]) {
        if (!choices.includes(v as string)) throw new TypeError(`format ${format.name}: option ${name} takes ${choices.join(", ")}, not ${JSON.stringify(v)}`);
      }
    }
  }
  return values;
}
