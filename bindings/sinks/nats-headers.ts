/**
 * What a record brings beyond the sink's own headers, as NATS header lines
 * (`Name: value\r\n`): its own headers (records.ts: CloudEvents binary
 * mode's `ce-*` attributes, Debezium's key-change headers) and its key
 * (`Pg-Key`). A line break cannot be in a header: a SinkError, not a
 * changed value.
 */
import { SinkError } from "../pipeline/sink.ts";

/** A record's own headers (records.ts: CloudEvents binary mode's `ce-*`, Debezium's key-change headers) as header lines. */
export function headerLines(headers: Readonly<Record<string, string>>, id: string): string {
  let text = "";
  for (const [name, value] of Object.entries(headers)) {
    if (/[\r\n]/.test(name + value) || !/^[!-9;-~]+$/.test(name)) throw new SinkError(`nats: record ${id}'s header ${JSON.stringify(name)} cannot be a NATS header (a line break, or a name with ':' or spaces)`, { sink: "nats" });
    text += `${name}: ${value}\r\n`;
  }
  return text;
}

const utf8 = new TextDecoder();

/** A record's key (records.ts `keyOf`: Debezium's key struct) as the `Pg-Key` header. */
export function keyLine(key: Uint8Array, id: string): string {
  const text = utf8.decode(key);
  if (/[\r\n]/.test(text)) throw new SinkError(`nats: record ${id}'s key has a line break, which a NATS header cannot hold`, { sink: "nats" });
  return `Pg-Key: ${text}\r\n`;
}
