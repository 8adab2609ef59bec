/**
 * `messages`: every pgoutput message as sent, one JSON object each (its
 * `toJSON()`: LSNs as `X/Y`, 64-bit numbers as strings, tuple columns as
 * `{kind, text}` / `{kind, base64}`); with `values`, also the typed column
 * values by column name (`newValues`, `oldValues`). Streamed blocks are
 * shown as they came, not replayed. What the pipeline derives comes right
 * after the message it was derived from: a RelationChanged after its
 * Relation, a Ddl after the DDL trigger's Message (`kind` "RelationChanged",
 * "Ddl", their `toJSON()`). `decode` without `--changes`.
 */
import type { PgoutputMessage } from "../messages.ts";
import type { Tuple } from "../tuple.ts";
import { isDerived, type Format, type FormatDefinition, type FormatItem } from "../pipeline/format.ts";
import type { Records } from "../pipeline/records.ts";
import { toJsonValue } from "../values/json.ts";
import { lineText } from "../jsonl/json-text.ts";

/** The message's JSON with typed column values added: by column name (by position when the relation is unknown), unchanged TOAST as `{"unchanged": true}`. */
function withValues(msg: PgoutputMessage): Record<string, unknown> {
  const json = msg.toJSON();
  if (msg.kind === "Insert" || msg.kind === "Update") json.newValues = tupleJson(msg.newTuple);
  if ((msg.kind === "Update" || msg.kind === "Delete") && msg.oldTuple !== null) json.oldValues = tupleJson(msg.oldTuple);
  return json;
}

function tupleJson(t: Tuple): unknown {
  return toJsonValue(t.relation !== undefined ? t.toObject() : t.values());
}

class MessageLines implements Format {
  readonly keepsMessages = true;

  constructor(readonly values: boolean, readonly pretty: boolean) {}

  push(item: FormatItem, out: Records): void {
    if (item.kind === "SnapshotRow") return;
    const derived = item.kind === "RelationChanged" || item.kind === "Ddl";
    const obj = derived || !this.values ? item.toJSON() : withValues(item);
    out.bytes.str((this.pretty ? lineText(obj, true, false) : JSON.stringify(obj)) + "\n");
    out.end(item.kind === "RelationChanged" ? "relationChanged" : item.kind === "Ddl" ? "ddl" : "message", item.kind === "RelationChanged" ? item.relation : undefined, isDerived(item));
  }

  reset(): void {}
}

export const messages: FormatDefinition = {
  name: "messages",
  summary: "every pgoutput message as sent, one JSON object each",
  raw: true,
  options: {
    values: { type: "boolean", description: "add typed column values (newValues, oldValues)" },
    pretty: { type: "boolean", description: "indented, one field per line" },
  },
  values: (types) => (types === undefined ? {} : { types }),
  create: (_context, o) => new MessageLines(o.values === true, o.pretty === true),
};
