/**
 * `cloudevents`: each change as a CloudEvent 1.0 (docs/cli-output.md,
 * "cloudevents"), its `data` the change in the inner format (`data`:
 * `jsonl`, the default, or `debezium`), whose options it also takes.
 *
 * - structured mode (default): the event itself as one JSON object per
 *   line — `specversion`, `id` (the change id, `X/Y:N`), `source`, `type`
 *   (`postgresql.change.insert`, …), `subject` (`schema.table`), `time`
 *   (the commit time, RFC 3339 with µs), `datacontenttype`, the extension
 *   attributes `pgoutputlsn` (the transaction's commit LSN) and
 *   `pgoutputxid`, and `data`;
 * - binary mode: the record is the data alone, and the attributes are its
 *   headers (`ce-id`, …, `content-type`; records.ts `headers`), for sinks
 *   that carry headers: HTTP and NATS name them so (their CloudEvents
 *   bindings), docs/sinks.md says how a sink uses them.
 *
 * The inner format writes its records as it would alone (ids, keys,
 * skipping after a restart), through its pushBatch too (the kernel's whole
 * lines, pipeline/kernel-lines.ts); in structured mode each is then wrapped
 * in its envelope (Records.rewrite), whose text is made once per
 * transaction and relation.
 */
import { formatLsn } from "../lsn.ts";
import { timestampToISO } from "../time.ts";
import type { Format, FormatContext, FormatDefinition, FormatItem, FormatOptionSpec, FormatOptionValues } from "../pipeline/format.ts";
import type { Batch } from "../decoder.ts";
import type { RecordKind, RecordTransaction, Records } from "../pipeline/records.ts";
import type { Relation } from "../relation.ts";
import { debezium } from "./debezium.ts";
import { jsonl, jsonLinesWriter } from "./jsonl.ts";
import { CloudEventsLines } from "./cloudevents-lines.ts";
import { wrappedLines } from "../jsonl/writer.ts";

const INNER: Readonly<Record<string, FormatDefinition>> = { jsonl, debezium };

/** The CloudEvents `type` of each kind of record. */
const TYPES: Readonly<Record<RecordKind, string>> = {
  insert: "change.insert", update: "change.update", delete: "change.delete", truncate: "change.truncate",
  snapshot: "change.snapshot", tombstone: "change.tombstone", message: "message",
  begin: "transaction.begin", commit: "transaction.commit", prepare: "transaction.prepare",
  commitPrepared: "transaction.commit_prepared", rollbackPrepared: "transaction.rollback_prepared",
  relationChanged: "schema.relation_changed", ddl: "schema.ddl",
};

/** The JSON event format's media types (CloudEvents JSON Event Format §3, §4). */
const STRUCTURED = { record: "application/cloudevents+json", array: "application/cloudevents-batch+json" } as const;

/** Options of the inner formats that make no sense inside an event: indented JSON is not one event per line. */
const NOT_INSIDE = new Set(["pretty"]);

const OWN: Readonly<Record<string, FormatOptionSpec>> = {
  data: { type: "string", choices: Object.keys(INNER), description: "the change inside the event: jsonl (default) or debezium" },
  mode: { type: "string", choices: ["structured", "binary"], description: "structured (default): the event as JSON; binary: the data, the attributes as headers" },
  source: { type: "string", description: "the source attribute (default /postgresql/DATABASE/SLOT)" },
  "type-prefix": { type: "string", description: "the type attribute's first part (default postgresql: postgresql.change.insert)" },
};

/** Every inner format's options (their names do not clash: `tables` means the same in both). */
const INNER_OPTIONS: Readonly<Record<string, FormatOptionSpec>> = Object.fromEntries(
  Object.values(INNER).flatMap((f) => Object.entries(f.options).filter(([name]) => !NOT_INSIDE.has(name))),
);

const innerOf = (o: FormatOptionValues): FormatDefinition => INNER[(o.data as string | undefined) ?? "jsonl"]!;

/** The options meant for the inner format (`data`'s). */
function innerOptions(o: FormatOptionValues): FormatOptionValues {
  return Object.fromEntries(Object.entries(o).filter(([name]) => !Object.hasOwn(OWN, name)));
}

/** A header value as the HTTP binding (and NATS') wants it: space, `"`, `%` and what is not printable ASCII percent-encoded as UTF-8. */
export function headerValue(text: string): string {
  return /^[\x21\x23\x24\x26-\x7e]*$/.test(text) ? text : Array.from(new TextEncoder().encode(text), (b) => (b > 0x20 && b < 0x7f && b !== 0x22 && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`)).join("");
}

export interface CloudEventsOptions {
  /** The format of `data` (made by the caller). */
  inner: Format;
  /**
   * In structured mode: `inner` is JSON Lines whose kernel lines carry the
   * envelope already (jsonl/writer.ts `wrappedLines`, cloudevents-lines.ts),
   * so its pushBatch's records are the events.
   */
  enveloped?: boolean;
  binary?: boolean;
  /** The `source` attribute. */
  source: string;
  /** The `type` attribute's first part (default `postgresql`). */
  typePrefix?: string;
}

export class CloudEvents implements Format {
  readonly #inner: Format;
  readonly #binary: boolean;
  readonly #source: string;
  readonly #types: Readonly<Record<string, string>>;
  /** `{"specversion":"1.0","id":` is written per event; this is `,"source":…` after it. */
  readonly #sourceJson: string;
  readonly #headers: (records: Records, i: number) => Readonly<Record<string, string>>;
  readonly #wrap: (from: number, records: Records) => void;
  readonly #enveloped: boolean;
  /** The envelope's attributes after `subject` of the last transaction wrapped (`time`, `pgoutputlsn`, `pgoutputxid`). */
  #lastTxn: RecordTransaction | undefined;
  #txnText = "";
  /** `,"subject":…` per relation. */
  readonly #subjects = new WeakMap<Relation, string>();

  constructor(options: CloudEventsOptions) {
    this.#inner = options.inner;
    this.#binary = options.binary === true;
    this.#source = options.source;
    this.#types = typesOf(options.typePrefix);
    this.#sourceJson = sourceJson(this.#source);
    this.#enveloped = options.enveloped === true && !this.#binary;
    this.#headers = (records, i) => this.#attributeHeaders(records, i);
    this.#wrap = (from, out) => {
      if (this.#binary) out.headers = this.#headers;
      else {
        out.mediaType = STRUCTURED;
        if (out.length > from) out.rewrite(from, (i, body) => this.#envelope(out, i, body));
      }
    };
  }

  push(item: FormatItem, out: Records): void {
    const from = out.length;
    this.#inner.push(item, out);
    this.#wrap(from, out);
  }

  /** The inner format's pushBatch (Format.pushBatch), its records wrapped as push() wraps them. */
  pushBatch(batch: Batch, from: number, out: Records, to: number, boundary: (index: number) => void): number {
    if (this.#inner.pushBatch === undefined) return from;
    const first = out.length;
    const taken = this.#inner.pushBatch(batch, from, out, to, boundary);
    // The kernel's lines wrote the events themselves (cloudevents-lines.ts).
    if (this.#enveloped) out.mediaType = STRUCTURED;
    else this.#wrap(first, out);
    return taken;
  }

  reset(): void {
    this.#inner.reset();
  }

  /** Record i as a structured event: the attributes, then the inner record as `data` (none for a tombstone). */
  #envelope(records: Records, i: number, body: Uint8Array): void {
    const kind = records.kinds[i]!;
    const txn = records.txns[i]!;
    const rel = records.relations[i];
    const out = records.bytes;
    // An id of `X/Y:N` (N a number) needs no escape.
    out.str(`{"specversion":"1.0","id":"${records.id(i)}"${this.#sourceJson},"type":"${this.#types[kind]}"`);
    if (rel !== undefined) {
      let subject = this.#subjects.get(rel);
      if (subject === undefined) this.#subjects.set(rel, (subject = `,"subject":${subjectJson(rel)}`));
      out.str(subject);
    }
    if (txn !== this.#lastTxn) {
      this.#lastTxn = txn;
      this.#txnText = `${txn.time !== undefined ? `,"time":"${timestampToISO(txn.time)}"` : ""}${txn.lsn > 0n ? `,"pgoutputlsn":"${formatLsn(txn.lsn)}"` : ""}${txn.xid !== undefined ? `,"pgoutputxid":"${txn.xid}"` : ""}`;
    }
    out.str(this.#txnText);
    if (kind !== "tombstone") {
      out.str(`,"datacontenttype":"application/json","data":`);
      const end = body.length > 0 && body[body.length - 1] === 0x0a ? body.length - 1 : body.length;
      out.bytes(body, 0, end);
    }
    out.str("}\n");
  }

  /** Binary mode: record i's attributes as `ce-` headers, and its data's `content-type`. */
  #attributeHeaders(records: Records, i: number): Readonly<Record<string, string>> {
    const kind = records.kinds[i]!;
    const txn = records.txns[i]!;
    const rel = records.relations[i];
    const h: Record<string, string> = {
      "ce-specversion": "1.0", "ce-id": headerValue(records.id(i)), "ce-source": headerValue(this.#source), "ce-type": this.#types[kind]!,
    };
    if (rel !== undefined) h["ce-subject"] = headerValue(subjectOf(rel));
    if (txn.time !== undefined) h["ce-time"] = timestampToISO(txn.time);
    if (txn.lsn > 0n) h["ce-pgoutputlsn"] = formatLsn(txn.lsn);
    if (txn.xid !== undefined) h["ce-pgoutputxid"] = String(txn.xid);
    if (kind !== "tombstone") h["content-type"] = "application/json";
    return h;
  }
}

/** `schema.table` (`pg_catalog`, which PostgreSQL sends as "", by its name). */
const subjectOf = (rel: Relation): string => `${rel.namespace === "" ? "pg_catalog" : rel.namespace}.${rel.name}`;
const subjectJson = (rel: Relation): string => JSON.stringify(subjectOf(rel));
const sourceJson = (source: string): string => `,"source":${JSON.stringify(source)}`;

/** The `type` attribute of each kind of record, with its first part. */
const typesOf = (prefix: string | undefined): Readonly<Record<string, string>> =>
  Object.fromEntries(Object.entries(TYPES).map(([kind, t]) => [kind, `${prefix ?? "postgresql"}.${t}`]));

/** The default `source`: `/postgresql/DATABASE/SLOT`, the parts known (percent-encoded). */
function defaultSource(context: FormatContext): string {
  const parts = ["postgresql", context.database, context.slot].filter((p): p is string => p !== undefined && p !== "");
  return `/${parts.map((p) => encodeURIComponent(p)).join("/")}`;
}

export const cloudevents: FormatDefinition = {
  name: "cloudevents",
  summary: "CloudEvents 1.0, structured (JSON) or binary (headers); data in jsonl or debezium (docs/cli-output.md)",
  options: { ...OWN, ...INNER_OPTIONS },
  check: (o) => {
    // Run before the options' own check: a data outside its choices, or an option no format takes, is left to it.
    if (o.data !== undefined && (typeof o.data !== "string" || !Object.hasOwn(INNER, o.data))) return;
    const inner = innerOf(o);
    for (const name of Object.keys(innerOptions(o))) {
      const owner = Object.values(INNER).find((f) => Object.hasOwn(f.options, name));
      if (owner !== undefined && !Object.hasOwn(inner.options, name)) {
        throw new TypeError(`format cloudevents: option ${name} is ${owner.name}'s: it applies with -o data=${owner.name}, not data=${inner.name}`);
      }
    }
    inner.check?.(innerOptions(o));
    if (typeof o.source === "string" && o.source.trim() === "") throw new TypeError("format cloudevents: source must not be empty (a URI-reference: /postgresql/app/slot)");
  },
  values: (types, options) => innerOf(options ?? {}).values(types),
  headers: (o) => o.mode === "binary",
  create: (context, o) => {
    const source = (o.source as string | undefined) ?? defaultSource(context);
    const typePrefix = o["type-prefix"] as string | undefined;
    const binary = o.mode === "binary";
    // Structured events of JSON Lines: the kernel's lines write the envelope too.
    const enveloped = !binary && innerOf(o) === jsonl;
    const inner = enveloped
      ? wrappedLines(jsonLinesWriter(context, innerOptions(o)), (lines) => new CloudEventsLines(lines, sourceJson(source), typesOf(typePrefix), subjectJson))
      : innerOf(o).create(context, innerOptions(o));
    return new CloudEvents({ inner, enveloped, binary, source, typePrefix });
  },
};
