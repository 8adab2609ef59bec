/**
 * The NATS sink's configuration (docs/sinks.md, "NATS JetStream"): one place
 * that reads a `nats://` target and its query parameters (and the same
 * names given as separate options, e.g. from CLI flags), and the subjects
 * that records go to.
 *
 * ```
 * nats://[user:password@|token@]host[:port][,host2[:port]…][?stream=CDC&subject=cdc.{schema}.{table}&mode=transaction&create=true…]
 * ```
 *
 * Subjects: a table's records go to `subject` (default
 * `{prefix}.{schema}.{table}`); logical decoding messages without a table to
 * `{prefix}.message`; transaction lines (B, C, P, K, R) and, with
 * `mode=transaction`, whole transactions to `{prefix}.transaction`.
 * Schema and table names become one subject token each: the characters a
 * token cannot hold (`.`, `*`, `>`, white space and control characters) and
 * `%` itself are percent-encoded, so two tables never share a subject.
 */
import { SinkError, type SinkOptionValues } from "../pipeline/sink.ts";
import { redact } from "../redact.ts";
import { readSinkOptions } from "./options.ts";

export interface NatsSinkOptions {
  /** `host:port` of each server to try. */
  servers: string[];
  user?: string;
  pass?: string;
  token?: string;
  /** The stream written; when absent, the one stream whose subjects take this sink's subjects. */
  stream?: string;
  /** Subject template of table records: `{prefix}`, `{schema}`, `{table}`. */
  subject: string;
  prefix: string;
  /** `change`: one message per record; `transaction`: one message per transaction (its JSON Lines). */
  mode: "change" | "transaction";
  /** Create the stream when it does not exist. */
  create: boolean;
  /** Storage of a created stream. */
  storage: "file" | "memory";
  /** Duplicate window of a created stream. */
  duplicateWindowMs: number;
  /** How long a PubAck may take before the sink asks the stream what it holds. */
  ackTimeoutMs: number;
  /** How long the first connection is retried before the sink gives up. */
  connectTimeoutMs: number;
  /** Client name the server shows (`nats server report connections`). */
  name: string;
}

const DEFAULTS = {
  subject: "{prefix}.{schema}.{table}",
  prefix: "cdc",
  mode: "change",
  create: false,
  storage: "file",
  duplicateWindowMs: 120_000,
  ackTimeoutMs: 5_000,
  connectTimeoutMs: 15_000,
  name: "pgoutput-wasm",
} as const;

/** Option names: the URL's query parameters and the `options` record take the same ones. */
export const NATS_OPTIONS = {
  stream: { type: "string", description: "the stream written (default: the one stream whose subjects take the sink's)" },
  subject: { type: "string", description: "a table's subject: a template of {prefix}, {schema}, {table} (default {prefix}.{schema}.{table})" },
  prefix: { type: "string", description: "what {prefix} stands for, and the start of the message and transaction subjects (default cdc)" },
  mode: { type: "string", values: ["change", "transaction"], description: "one message per change (default) or per transaction" },
  create: { type: "boolean", description: "make the stream when it does not exist" },
  storage: { type: "string", values: ["file", "memory"], description: "a created stream's storage (default file)" },
  duplicate_window: { type: "duration", description: "a created stream's duplicate window (default 2m)" },
  ack_timeout: { type: "duration", description: "how long a PubAck may take before the sink asks the stream what it holds (default 5s)" },
  connect_timeout: { type: "duration", description: "how long the first connection is retried (default 15s)" },
  name: { type: "string", description: "the client name the server shows (default pgoutput-wasm)" },
} as const;

const fail = (message: string, target: string, hint?: string) =>
  new SinkError(`nats: ${redact(message)}`, { sink: "nats", target: redact(target), hint });

/** The target's parts; `options` (e.g. from CLI flags) override the query parameters of the same name. */
export function natsOptions(target: string, options: SinkOptionValues = {}): NatsSinkOptions {
  const m = /^nats:\/\/(?:([^@/?#]*)@)?([^/?#]*)\/?(?:\?([^#]*))?$/i.exec(target);
  if (m === null) throw fail(`${target} is not a nats:// URL`, target, "write nats://host:port?stream=NAME");
  const [, userinfo, hosts, query] = m;
  // The query alone: a list of servers is no URL host.
  const p = readSinkOptions("nats", new URL(`nats:?${query ?? ""}`), options, NATS_OPTIONS, { others: "refuse" });
  const servers = (hosts ?? "").split(",").filter((h) => h.length > 0).map((h) => (/:\d+$/.test(h) || h.endsWith("]") ? h : `${h}:4222`));
  if (servers.length === 0) servers.push("127.0.0.1:4222");
  const o: NatsSinkOptions = {
    ...DEFAULTS,
    servers,
    ...(p.stream !== undefined && { stream: p.stream }),
    ...(p.prefix !== undefined && { prefix: p.prefix }),
    ...(p.subject !== undefined && { subject: p.subject }),
    ...(p.mode !== undefined && { mode: p.mode as NatsSinkOptions["mode"] }),
    ...(p.create !== undefined && { create: p.create }),
    ...(p.storage !== undefined && { storage: p.storage as NatsSinkOptions["storage"] }),
    ...(p.duplicate_window !== undefined && { duplicateWindowMs: p.duplicate_window }),
    ...(p.ack_timeout !== undefined && { ackTimeoutMs: Math.max(1, p.ack_timeout) }),
    ...(p.connect_timeout !== undefined && { connectTimeoutMs: p.connect_timeout }),
    ...(p.name !== undefined && { name: p.name }),
  };
  if (userinfo !== undefined && userinfo.length > 0) {
    const colon = userinfo.indexOf(":");
    if (colon < 0) o.token = decodeURIComponent(userinfo);
    else {
      o.user = decodeURIComponent(userinfo.slice(0, colon));
      o.pass = decodeURIComponent(userinfo.slice(colon + 1));
    }
  }
  if (o.stream !== undefined && !/^[^\s.*>/\\]+$/.test(o.stream)) throw fail(`stream=${o.stream} is not a stream name`, target, "a stream name has no spaces, '.', '*', '>', '/' or '\\'");
  // Every subject this sink can make must be valid: check the templates with sample names.
  for (const s of [tableSubject(o, "s", "t"), otherSubject(o, "message")]) {
    if (!validSubject(s)) throw fail(`subject ${s} (from subject=${o.subject}, prefix=${o.prefix}) is not a NATS subject`, target, "tokens separated by '.', none empty, no spaces, '*' or '>'");
  }
  if (/\{(?!prefix\}|schema\}|table\})[^}]*\}/.test(o.subject)) throw fail(`subject=${o.subject}: only {prefix}, {schema} and {table} are replaced`, target);
  return o;
}

/** A schema or table name as one subject token (see the file's comment). */
export function subjectToken(name: string): string {
  return /^[^\s.*>%\x00-\x1f\x7f]+$/.test(name) ? name : name.replace(/[\s.*>%\x00-\x1f\x7f]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

export function tableSubject(o: Pick<NatsSinkOptions, "subject" | "prefix">, schema: string, table: string): string {
  return o.subject.replace(/\{(prefix|schema|table)\}/g, (_, k: string) => (k === "prefix" ? o.prefix : subjectToken(k === "schema" ? schema : table)));
}

/** Where records without a table go: `message` (logical decoding messages) or `transaction` (transaction lines, whole transactions). */
export function otherSubject(o: Pick<NatsSinkOptions, "prefix">, what: "message" | "transaction"): string {
  return `${o.prefix}.${what}`;
}

/** The subjects a stream must take for this sink: each template token with a name in it becomes `*`. */
export function subjectPatterns(o: Pick<NatsSinkOptions, "subject" | "prefix">): string[] {
  const table = o.subject.replace(/\{prefix\}/g, o.prefix).split(".").map((t) => (/\{(schema|table)\}/.test(t) ? "*" : t)).join(".");
  return [...new Set([table, otherSubject(o, "message"), otherSubject(o, "transaction")])];
}

export function validSubject(s: string): boolean {
  return s.split(".").every((t) => t.length > 0 && !/[\s*>]/.test(t));
}

/** Whether a stream subject (wildcards `*`, `>`) takes `subject`. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return s.length > i;
    if (i >= s.length || (p[i] !== "*" && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

/** What may be shown of the target: the servers, without credentials. */
export function describeTarget(o: Pick<NatsSinkOptions, "servers">): string {
  return `nats://${o.servers.join(",")}`;
}
