/**
 * `jsonl`: one JSON object per change (docs/cli-output.md), the kernel
 * writing the columns (jsonl/writer.ts).
 */
import type { FormatContext, FormatDefinition, FormatOptionValues } from "../pipeline/format.ts";
import { changeValueOptions } from "../jsonl/json-text.ts";
import { JsonLinesWriter } from "../jsonl/writer.ts";

/** The format's writer for these option values. */
export function jsonLinesWriter(context: FormatContext, o: FormatOptionValues): JsonLinesWriter {
  return new JsonLinesWriter({
    transactions: o.transactions === true,
    tables: (o.tables as readonly string[] | undefined) ?? [],
    pretty: o.pretty === true,
    numbersAsStrings: o["numbers-as-strings"] === true,
    decoder: context.decoder,
  });
}

export const jsonl: FormatDefinition = {
  name: "jsonl",
  summary: "one JSON object per change, typed values, wal2json's field names (docs/cli-output.md)",
  options: {
    transactions: { type: "boolean", description: "B and C lines around each transaction's changes" },
    tables: { type: "list", description: "only these tables (schema.table, or table in any schema)" },
    pretty: { type: "boolean", description: "indented, one field per line" },
    "numbers-as-strings": { type: "boolean", description: "int8 and numeric as JSON strings" },
  },
  values: (types) => changeValueOptions(types),
  create: (context, o) => jsonLinesWriter(context, o),
};
