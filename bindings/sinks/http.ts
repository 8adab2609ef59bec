/**
 * `http://`, `https://`: a webhook. Records are POSTed in batches, as JSON
 * Lines (default, `application/x-ndjson`) or a JSON array (`?format=array`,
 * `application/json`), one request at a time, in order. A batch is durable
 * once the receiver answered 2xx: the guarantee is the receiver's (it
 * answers after it stored the batch).
 *
 * Each request says what it holds: `Change-Ids` lists the change ids of its
 * records, in body order, as runs per transaction (`0/16B3748:0-12,0/16B3900:0`);
 * `Idempotency-Key` is derived from that list, so it is the same on every
 * retry of the request and differs for any other set of records. After a
 * restart the slot sends again from the last confirmed transaction end and
 * batches may be cut differently (other keys): a receiver deduplicates per
 * record by id — ids sort in commit order, so the last id stored, kept with
 * the data, is enough (docs/sinks.md).
 *
 * Retries, with exponential backoff and jitter: 5xx, 408, 429 (waiting what
 * `Retry-After` says, seconds or an HTTP date) and network failures
 * (refused, reset, timed out): never dropped, never confirmed before a 2xx.
 * Any other answer (a 4xx, a redirect) is a SinkError with the status and
 * the start of the body. Requests hold at most `batch_records` records and
 * `batch_bytes` bytes (one record larger than that goes alone).
 *
 * Records with headers on every one (records.ts `headers`: CloudEvents
 * binary mode's `ce-*` attributes and `content-type`) go one per request,
 * the payload the body and its headers the request's: the CloudEvents HTTP
 * binding's binary mode. Headers only some records have (Debezium's
 * key-change headers) have no place in a batch and are not sent. Records of a media type of their own (`Records.mediaType`,
 * CloudEvents structured mode) are sent as that type when one goes alone
 * (`application/cloudevents+json`) and as its array type with
 * `format=array` (`application/cloudevents-batch+json`, the batched mode).
 *
 * `https://user:password@host/...` sends Basic credentials; the password
 * (and tokens in the query) never appear in messages.
 */
import { createHash } from "node:crypto";
import type { Records } from "../pipeline/records.ts";
import { SinkError, type Sink, type SinkDefinition, type SinkOptionValues } from "../pipeline/sink.ts";
import { redact } from "../redact.ts";
import { Backoff, sleep, type RetryListener } from "./backoff.ts";
import { MeteredSink } from "./meter.ts";
import { readSinkOptions, type OptionsOf } from "./options.ts";
import { copyBytes } from "../copy-bytes.ts";

export const HTTP_OPTIONS = {
  format: { type: "string", values: ["jsonl", "array"], description: "the body: JSON Lines (default) or a JSON array of the records" },
  batch_records: { type: "integer", description: "records per request at most (default 1000)" },
  batch_bytes: { type: "integer", description: "body bytes per request at most (default 1 MiB; one larger record goes alone)" },
  timeout: { type: "duration", description: "how long to wait for an answer before the request is taken for lost and sent again (default 30s)" },
} as const;

export type HttpOptions = OptionsOf<typeof HTTP_OPTIONS>;

export interface HttpSinkHooks {
  /** Sent with every request (an `Authorization: Bearer ...` the URL cannot carry). */
  headers?: Record<string, string>;
  onRetry?: RetryListener;
}

/** The longest `Retry-After` honoured as given; a longer one is waited this long, then the request is tried again. */
const RETRY_AFTER_MAX_MS = 10 * 60_000;
/** The longest list of ids in one request's header: a request is cut before it. */
const IDS_HEADER_MAX = 4096;
/** How much of a refusing answer's body goes into the error. */
const BODY_SHOWN = 200;
const CLOSE_WAIT_MS = 2000;

interface Request {
  readonly body: Uint8Array<ArrayBuffer>;
  /** The content-type, and a record's own headers when it goes alone (CloudEvents binary mode). */
  readonly headers: Readonly<Record<string, string>>;
  readonly ids: string;
  readonly key: string;
  readonly records: number;
  readonly batch: { remaining: number; settled: boolean; resolve(): void; reject(e: unknown): void };
}

/** The time `Retry-After` asks for, in ms from now: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Whether record i comes right after position `last` of `txn` (a derived record, change-id.ts, is in no run). */
function follows(records: Records, i: number, txn: unknown, last: number): boolean {
  return records.txns[i] === txn && records.subs[i] === 0 && records.positions[i] === last + 1;
}

/** The ids of records [from, to) as runs per transaction: `0/16B3748:0-12,snapshot:0/1A2B3C:4`. */
export function idRuns(records: Records, from: number, to: number): string {
  const runs: string[] = [];
  let i = from;
  while (i < to) {
    const id = records.id(i);
    const first = records.positions[i]!;
    let last = first;
    if (records.subs[i] === 0) while (i + 1 < to && follows(records, i + 1, records.txns[i], last)) last = records.positions[++i]!;
    runs.push(last === first ? id : `${id}-${last}`);
    i++;
  }
  return runs.join(",");
}

export class HttpSink extends MeteredSink implements Sink {
  readonly #url: string;
  /** The URL as messages show it: no credentials, no token in the query. */
  readonly #shown: string;
  readonly #secrets: string[];
  readonly #headers: Record<string, string>;
  readonly #array: boolean;
  readonly #maxRecords: number;
  readonly #maxBytes: number;
  readonly #timeoutMs: number;
  readonly #onRetry: RetryListener | undefined;
  readonly #queue: Request[] = [];
  #running = false;
  #failure: SinkError | undefined;
  #closed = false;
  readonly #abort = new AbortController();
  readonly #backoff = new Backoff({ initialMs: 100, maxMs: 30_000 });
  #idle: (() => void) | undefined;

  constructor(target: string, options?: SinkOptionValues, hooks: HttpSinkHooks = {}) {
    super("http");
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      throw new TypeError(`http: ${JSON.stringify(redact(target))} is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError(`http: ${JSON.stringify(redact(target))} is not an http:// or https:// URL`);
    const o: HttpOptions = readSinkOptions("http", url, options, HTTP_OPTIONS, { others: "keep" });
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    this.#secrets = [password, url.password].filter((s) => s !== "");
    this.#headers = { ...hooks.headers };
    if (user !== "" || password !== "") this.#headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    for (const v of Object.values(hooks.headers ?? {})) this.#secrets.push(v);
    url.username = "";
    url.password = "";
    this.#url = url.href;
    this.#shown = redact(url.href);
    this.#array = o.format === "array";
    this.#maxRecords = Math.max(1, o.batch_records ?? 1000);
    this.#maxBytes = Math.max(1, o.batch_bytes ?? 1 << 20);
    this.#timeoutMs = o.timeout ?? 30_000;
    this.#onRetry = hooks.onRetry;
  }

  write(records: Records): Promise<void> {
    return this.meter.track(records, this.#write(records));
  }

  #write(records: Records): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(this.#error("written after close()"));
    return new Promise((resolve, reject) => {
      const batch = { remaining: 0, settled: false, resolve, reject };
      const requests = this.#cut(records, batch);
      batch.remaining = requests.length;
      if (requests.length === 0) return resolve();
      this.#queue.push(...requests);
      if (!this.#running) void this.#run();
    });
  }

  async close(): Promise<void> {
    if (this.#queue.length > 0 && this.#failure === undefined) {
      await new Promise<void>((resolve) => {
        this.#idle = resolve;
        setTimeout(resolve, CLOSE_WAIT_MS).unref?.();
      });
    }
    this.#closed = true;
    this.#abort.abort();
    const e = this.#error(`closed with ${this.#queue.length} request(s) not answered 2xx`);
    for (const r of this.#queue.splice(0)) settle(r.batch, e);
  }

  /** The requests for a batch, cut by records, bytes and the length of the ids header. */
  #cut(records: Records, batch: Request["batch"]): Request[] {
    const out: Request[] = [];
    const runLength = (idLength: number, first: number, last: number) => idLength + (last === first ? 0 : 1 + String(last).length);
    let from = 0;
    while (from < records.length) {
      let to = from;
      let bytes = this.#array ? 2 : 0;
      let idsLength = 0;
      let run: { txn: unknown; first: number; last: number; idLength: number } | undefined;
      let own: Readonly<Record<string, string>> | undefined;
      while (to < records.length && to - from < this.#maxRecords) {
        // With headers on every record (binary mode: the body is the data), a record goes alone.
        own = records.headers === undefined ? undefined : records.headersOf(to);
        if (own !== undefined) {
          if (to === from) to++;
          break;
        }
        const size = records.ends[to]! - records.start(to);
        const txn = records.txns[to]!;
        const position = records.positions[to]!;
        const extends_ = run !== undefined && follows(records, to, run.txn, run.last);
        const idLength = extends_ ? run!.idLength : records.id(to).length;
        const nextLength = extends_
          ? idsLength - runLength(run!.idLength, run!.first, run!.last) + runLength(idLength, run!.first, position)
          : idsLength + (to > from ? 1 : 0) + idLength;
        if (to > from && (bytes + size > this.#maxBytes || nextLength > IDS_HEADER_MAX)) break;
        if (extends_) run!.last = position;
        else run = records.subs[to] === 0 ? { txn, first: position, last: position, idLength } : undefined;
        idsLength = nextLength;
        bytes += size;
        to++;
      }
      const ids = idRuns(records, from, to);
      const alone = own !== undefined && to === from + 1;
      const body = alone ? copyBytes(records.payloadOf(from)) : this.#body(records, from, to);
      const headers = alone ? own! : { "content-type": this.#contentType(records, to - from) };
      out.push({ body, headers, ids, key: createHash("sha256").update(ids).digest("hex").substring(0, 32), records: to - from, batch });
      from = to;
    }
    return out;
  }

  /** JSON Lines, or a JSON array; a record's own media type when it goes alone, its array type for an array. */
  #contentType(records: Records, n: number): string {
    const media = records.mediaType;
    if (this.#array) return media?.array ?? "application/json";
    return media !== undefined && n === 1 ? media.record : "application/x-ndjson";
  }

  #body(records: Records, from: number, to: number): Uint8Array<ArrayBuffer> {
    const buf = records.bytes.buf;
    if (!this.#array) return buf.subarray(records.start(from), records.ends[to - 1]); // the batch's own bytes: it is ours until the write settles
    let n = 2;
    for (let i = from; i < to; i++) n += records.payloadOf(i).length + 1;
    const out = new Uint8Array(n - (to > from ? 1 : 0));
    let p = 0;
    out[p++] = 0x5b; // [
    for (let i = from; i < to; i++) {
      if (i > from) out[p++] = 0x2c; // ,
      const b = records.payloadOf(i);
      out.set(b, p);
      p += b.length;
    }
    out[p++] = 0x5d; // ]
    return out;
  }

  /** Sends the queue's requests one at a time, each until it is answered 2xx or refused for good. */
  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (this.#queue.length > 0 && this.#failure === undefined && !this.#closed) {
        const r = this.#queue[0]!;
        const outcome = await this.#attempt(r);
        if (this.#closed || this.#failure !== undefined) return;
        if (outcome === "done") {
          this.#queue.shift();
          this.#backoff.reset();
          if (--r.batch.remaining === 0) settle(r.batch);
          continue;
        }
        if (outcome instanceof SinkError) return this.#fail(outcome);
        const delayMs = outcome.delayMs ?? this.#backoff.next();
        this.meter.retried();
        this.#onRetry?.({ sink: this.name, error: outcome.error, attempt: this.#backoff.attempts || 1, delayMs });
        await sleep(delayMs, this.#abort.signal);
      }
    } finally {
      this.#running = false;
      if (this.#queue.length === 0) this.#idle?.();
    }
  }

  /** One POST: done, to be retried (after `delayMs` if the server said), or refused. */
  async #attempt(r: Request): Promise<"done" | SinkError | { error: string; delayMs?: number }> {
    let res: Response;
    try {
      res = await fetch(this.#url, {
        method: "POST",
        headers: { ...this.#headers, ...r.headers, "idempotency-key": r.key, "change-ids": r.ids, "change-count": String(r.records) },
        body: r.body,
        redirect: "manual",
        signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(this.#timeoutMs)]),
      });
    } catch (e) {
      if (this.#closed) return { error: "closed" };
      const err = e as Error & { cause?: { code?: string; message?: string } };
      const why = err.name === "TimeoutError" ? `no answer in ${this.#timeoutMs / 1000} s` : (err.cause?.code ?? err.cause?.message ?? err.message);
      return { error: this.#clean(`POST ${this.#shown}: ${why}`) };
    }
    const status = res.status;
    if (status >= 200 && status < 300) {
      await res.body?.cancel().catch(() => {});
      return "done";
    }
    const start = await bodyStart(res);
    const said = `${status}${res.statusText === "" ? "" : ` ${res.statusText}`}${start === "" ? "" : `: ${start}`}`;
    if (status >= 500 || status === 408 || status === 429) {
      const after = retryAfterMs(res.headers.get("retry-after"));
      return { error: this.#clean(`POST ${this.#shown} answered ${said}`), delayMs: after === undefined ? undefined : Math.min(after, RETRY_AFTER_MAX_MS) };
    }
    const where = res.headers.get("location");
    return this.#error(
      `POST ${this.#shown} answered ${said}`,
      status >= 300 && status < 400 ? `the endpoint moved${where === null ? "" : ` to ${this.#clean(where)}`}: give that URL` : hintFor(status),
    );
  }

  #fail(e: SinkError): void {
    this.#failure ??= e;
    for (const r of this.#queue.splice(0)) settle(r.batch, this.#failure);
    this.#idle?.();
  }

  #clean(text: string): string {
    return redact(text, this.#secrets);
  }

  #error(message: string, hint?: string): SinkError {
    return new SinkError(this.#clean(`http: ${message}`), { sink: "http", target: this.#shown, hint });
  }
}

function hintFor(status: number): string | undefined {
  switch (status) {
    case 400:
    case 422:
      return "the receiver refused the records it was sent: see its answer";
    case 401:
    case 403:
      return "check the credentials (https://user:password@host/..., or the headers given)";
    case 404:
    case 405:
      return "check the URL's path: the receiver takes no POST there";
    case 413:
      return "the receiver takes smaller requests: lower batch_bytes (and batch_records)";
    case 415:
      return "the receiver wants another body: format=array sends application/json";
    default:
      return undefined;
  }
}

/** The first characters of an answer's body, on one line (the rest is not read). */
async function bodyStart(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  if (reader === undefined) return "";
  let text = "";
  const decoder = new TextDecoder();
  try {
    while (text.length < BODY_SHOWN) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    /* what was read is enough */
  } finally {
    await reader.cancel().catch(() => {});
  }
  text = text.replace(/\s+/g, " ").trim();
  return text.length > BODY_SHOWN ? `${text.substring(0, BODY_SHOWN)}…` : text;
}

function settle(batch: Request["batch"], error?: unknown): void {
  if (batch.settled) return;
  batch.settled = true;
  if (error === undefined) batch.resolve();
  else batch.reject(error);
}

/** Opens the sink: nothing is sent before the first batch. */
export async function httpSink(target: string, options?: SinkOptionValues, hooks?: HttpSinkHooks): Promise<HttpSink> {
  return new HttpSink(target, options, hooks);
}

export const http: SinkDefinition = {
  name: "http",
  schemes: ["http:", "https:"],
  headers: true,
  summary: "a webhook: POSTs batches as JSON Lines (or ?format=array), Idempotency-Key and Change-Ids headers, retried on 5xx/429",
  create: (target, options) => httpSink(target, options),
};
