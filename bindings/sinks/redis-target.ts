/**
 * What a `redis://` target says: where the server is
 * (`redis://[user[:password]@]host[:port][/db]`, `rediss://` for TLS), and
 * the sink's options as query parameters (docs/sinks.md, "Redis Streams").
 */
import type { SinkOptionValues } from "../pipeline/sink.ts";
import { redact } from "../redact.ts";
import type { RedisAddress } from "./redis-connection.ts";
import { readSinkOptions, type OptionsOf } from "./options.ts";

export const REDIS_OPTIONS = {
  key: { type: "string", description: "the stream of a change: a template of {prefix}, {schema}, {table} (default {prefix}:{schema}.{table}; mode=transaction: {prefix}:transactions)" },
  prefix: { type: "string", description: "what {prefix} stands for (default cdc)" },
  messages: { type: "string", description: "the stream of records without a table, logical decoding messages (default {prefix}:messages)" },
  position: { type: "string", description: "the key holding the last position written, read at start (default {prefix}:position)" },
  maxlen: { type: "string", description: "trim each stream to about (~N) or exactly (N) this many entries" },
  mode: { type: "string", values: ["change", "transaction"], description: "one entry per change (default) or per transaction" },
  timeout: { type: "duration", description: "how long without an answer before the connection is taken for lost (default 30s)" },
  connect_timeout: { type: "duration", description: "how long to reach the server at start, retrying (default 10s)" },
  entries_per_call: { type: "integer", description: "entries per script call (default 1000)" },
  max_transaction_bytes: { type: "integer", description: "mode=transaction: the largest transaction held for one entry (default 64 MiB)" },
} as const;

export type RedisOptions = OptionsOf<typeof REDIS_OPTIONS>;

export interface RedisTarget {
  readonly address: RedisAddress;
  readonly user: string | undefined;
  readonly password: string | undefined;
  readonly db: number;
  /** The target as it may be shown (no password). */
  readonly shown: string;
  readonly options: RedisOptions;
}

export function parseRedisTarget(target: string, given?: SinkOptionValues): RedisTarget {
  const shown = redact(target);
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new TypeError(`redis: ${JSON.stringify(shown)} is not a URL (redis://[user:password@]host[:port][/db])`);
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new TypeError(`redis: ${JSON.stringify(shown)} is not a redis:// or rediss:// URL`);
  const options = readSinkOptions("redis", url, given, REDIS_OPTIONS, { others: "refuse" });
  const path = url.pathname.replace(/^\//, "");
  if (!/^\d*$/.test(path)) throw new TypeError(`redis: the database in ${JSON.stringify(shown)} is not a number`);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1") || "127.0.0.1";
  return {
    address: { host, port: url.port === "" ? 6379 : Number(url.port), tls: url.protocol === "rediss:" },
    user: url.username === "" ? undefined : decodeURIComponent(url.username),
    password: url.password === "" ? undefined : decodeURIComponent(url.password),
    db: path === "" ? 0 : Number(path),
    shown: `${url.protocol}//${host.includes(":") ? `[${host}]` : host}:${url.port === "" ? 6379 : url.port}${path === "" ? "" : `/${path}`}`,
    options,
  };
}

/** Expands a key template; `{schema}` and `{table}` only where a table is known. */
export function expandKey(template: string, values: { prefix: string; schema?: string; table?: string }): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => {
    const v = name === "prefix" ? values.prefix : name === "schema" ? values.schema : name === "table" ? values.table : undefined;
    if (v === undefined) throw new TypeError(`redis: the key template ${JSON.stringify(template)} has ${whole}, which is not known here (it takes {prefix}${values.table === undefined ? "" : ", {schema}, {table}"})`);
    return v;
  });
}

/** `maxlen=1000` (exact) or `maxlen=~1000` (about: whole nodes trimmed, cheaper) → the script's form. */
export function parseMaxlen(text: string | undefined): string {
  if (text === undefined || text === "") return "";
  const m = /^(~|=)?(\d+)$/.exec(text);
  if (m === null) throw new TypeError(`redis: option maxlen=${JSON.stringify(text)} is not a count (1000) or an approximate one (~1000)`);
  return `${m[1] ?? "="}${m[2]}`;
}
