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
const KNOWN = ["stream", "subject", "prefix", "mode", "create", "storage", "duplicate_window", "ack_timeout", "connect_timeout", "name"] as const;

const fail = (message: string, target: string, hint?: string) =>
  new SinkError(`nats: ${redact(message)}`, { sink: "nats", target: redact(target), hint });

/** `500ms`, `5s`, `2m`, `1h` (a bare number is seconds). */
export function parseDuration(text: string, what: string, target: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null) throw fail(`${what}=${text} is not a duration`, target, "write it as 500ms, 5s, 2m or 1h");
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms" | "s" | "m" | "h"];
  return Math.round(Number(m[1]) * unit);
}

function parseBoolean(text: string, what: string, target: string): boolean {
  if (/^(1|true|yes|on)$/i.test(text)) return true;
  if (/^(0|false|no|off)$/i.test(text)) return false;
  throw fail(`${what}=${text} is not true or false`, target);
}

/** The target's parts; `options` (e.g. from CLI flags) override the query parameters of the same name. */
export function natsOptions(target: string, options: SinkOptionValues = {}): NatsSinkOptions {
  const m = /^nats:\/\/(?:([^@/?#]*)@)?([^/?#]*)\/?(?:\?([^#]*))?$/i.exec(target);
  if (m === null) throw fail(`${target} is not a nats:// URL`, target, "write nats://host:port?stream=NAME");
  const [, userinfo, hosts, query] = m;
  const params: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(query ?? "")) params[k] = v;
  for (const [k, v] of Object.entries(options)) if (v !== undefined) params[k] = String(v);
  for (const k of Object.keys(params)) {
    if (!(KNOWN as readonly string[]).includes(k)) throw fail(`unknown option ${k}`, target, `the nats sink takes ${KNOWN.join(", ")}`);
  }
  const servers = (hosts ?? "").split(",").filter((h) => h.length > 0).map((h) => (/:\d+$/.test(h) || h.endsWith("]") ? h : `${h}:4222`));
  if (servers.length === 0) servers.push("127.0.0.1:4222");
  const o: NatsSinkOptions = { ...DEFAULTS, servers };
  if (userinfo !== undefined && userinfo.length > 0) {
    const colon = userinfo.indexOf(":");
    if (colon < 0) o.token = decodeURIComponent(userinfo);
    else {
      o.user = decodeURIComponent(userinfo.slice(0, colon));
      o.pass = decodeURIComponent(userinfo.slice(colon + 1));
    }
  }
  if (params.stream !== undefined) {
    if (!/^[^\s.*>/\\]+$/.test(params.stream)) throw fail(`stream=${params.stream} is not a stream name`, target, "a stream name has no spaces, '.', '*', '>', '/' or '\\'");
    o.stream = params.stream;
  }
  if (params.prefix !== undefined) o.prefix = params.prefix;
  if (params.subject !== undefined) o.subject = params.subject;
  if (params.mode !== undefined) {
    if (params.mode !== "change" && params.mode !== "transaction") throw fail(`mode=${params.mode}`, target, "mode=change (one message per change, the default) or mode=transaction");
    o.mode = params.mode;
  }
  if (params.create !== undefined) o.create = parseBoolean(params.create, "create", target);
  if (params.storage !== undefined) {
    if (params.storage !== "file" && params.storage !== "memory") throw fail(`storage=${params.storage}`, target, "storage=file (the default) or storage=memory");
    o.storage = params.storage;
  }
  if (params.duplicate_window !== undefined) o.duplicateWindowMs = parseDuration(params.duplicate_window, "duplicate_window", target);
  if (params.ack_timeout !== undefined) o.ackTimeoutMs = Math.max(1, parseDuration(params.ack_timeout, "ack_timeout", target));
  if (params.connect_timeout !== undefined) o.connectTimeoutMs = parseDuration(params.connect_timeout, "connect_timeout", target);
  if (params.name !== undefined) o.name = params.name;
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
