/**
 * `redis://` (`rediss://`): Redis Streams. Each change is an `XADD` with an
 * explicit id from its position, `<commit LSN as a decimal uint64>-<index>`,
 * into the stream of its table (`<prefix>:<schema>.<table>` by default); the
 * entries of a batch go as script calls pipelined on one connection
 * (redis-append.ts says why a script, redis-entries.ts what an entry holds).
 *
 * A batch is durable once every call covering it was answered: the server
 * answers after its writes are in its AOF and, with `appendfsync always`,
 * fsynced — so the guarantee is the server's persistence setting
 * (docs/sinks.md). A replay is harmless by construction: an id not newer
 * than its stream's last id is refused by the server itself, and counted
 * as already delivered.
 *
 * Retries: a lost connection, or an answer that says "not now" (LOADING,
 * BUSY, OOM, READONLY, NOSCRIPT, MISCONF...), leads to waiting (backoff)
 * and sending every unconfirmed call again, in the original order, on the
 * (new) connection; calls already applied find their entries there. Only
 * calls answered "ok" are confirmed; nothing is dropped. Answers that
 * retrying will not change (WRONGTYPE, NOAUTH, WRONGPASS, NOPERM, a
 * cluster's MOVED, unknown commands) are SinkErrors naming the stream and
 * the remedy (redis-errors.ts tells them apart).
 *
 * The client is RESP written here (resp.ts, redis-connection.ts), not
 * ioredis or node-redis: this sink needs to know exactly which commands
 * reached a connection that dropped, and to be the only one to send them
 * again, in its order. ioredis, asked not to re-send by itself
 * (autoResendUnfulfilledCommands: false), leaves the promises of the
 * commands in flight unsettled forever after a reconnect (tried on 6.0.0);
 * by default it re-sends them itself, behind which the sink's own resend of
 * an error reply would arrive out of order. One script call per chunk also
 * leaves nothing for a client's command API to do.
 */
import { createHash } from "node:crypto";
import type { ChangePosition } from "../pipeline/change-id.ts";
import type { Records } from "../pipeline/records.ts";
import { SinkError, headersRefused, type Sink, type SinkDefinition, type SinkOptionValues } from "../pipeline/sink.ts";
import { redact } from "../redact.ts";
import { Backoff, sleep, type RetryListener } from "./backoff.ts";
import { APPEND_SCRIPT, parsePositionText } from "./redis-append.ts";
import { RedisConnection } from "./redis-connection.ts";
import { EntryEncoder, type EncodedChunk } from "./redis-entries.ts";
import { TRANSIENT, hintFor } from "./redis-errors.ts";
import { expandKey, parseMaxlen, parseRedisTarget, type RedisTarget } from "./redis-target.ts";
import { command, RespError, RespProtocolError, type RespReply } from "./resp.ts";
import { ByteSink } from "../jsonl/sink.ts";
import { MeteredSink } from "./meter.ts";

/** How long close() waits for calls in flight on a working connection. */
const CLOSE_WAIT_MS = 2000;

interface Batch {
  remaining: number;
  settled: boolean;
  resolve(): void;
  reject(e: unknown): void;
}

interface Chunk extends EncodedChunk {
  readonly batch: Batch;
  done: boolean;
}

export interface RedisSinkHooks {
  /** A failed attempt that will be retried (the status line shows it). */
  onRetry?: RetryListener;
}

export class RedisStreamSink extends MeteredSink implements Sink {
  readonly #t: RedisTarget;
  readonly #hooks: RedisSinkHooks;
  readonly #positionKey: string;
  readonly #sha = createHash("sha1").update(APPEND_SCRIPT).digest("hex");
  #encoder!: EntryEncoder;
  readonly #pending: Chunk[] = [];
  #conn: RedisConnection | undefined;
  /** Counts the times everything unconfirmed was sent: an answer to an older sending only confirms. */
  #epoch = 0;
  /** A sending failed: chunks written meanwhile wait for the next one. */
  #retrying = false;
  #wake: (() => void) | undefined;
  #failure: SinkError | undefined;
  #closed = false;
  readonly #abort = new AbortController();
  readonly #backoff = new Backoff({ maxMs: 5000 });
  #delivered: ChangePosition | undefined;
  #loop: Promise<void> | undefined;
  #drained: (() => void) | undefined;
  readonly transactionEnds: boolean;
  readonly #layout: ConstructorParameters<typeof EntryEncoder>[0];

  constructor(target: RedisTarget, hooks: RedisSinkHooks = {}) {
    super("redis");
    this.#t = target;
    this.#hooks = hooks;
    const o = target.options;
    const prefix = o.prefix ?? "cdc";
    this.#positionKey = expandKey(o.position ?? "{prefix}:position", { prefix });
    this.transactionEnds = o.mode === "transaction";
    this.#layout = {
      mode: o.mode === "transaction" ? "transaction" : "change",
      prefix,
      keyTemplate: o.key ?? (o.mode === "transaction" ? "{prefix}:transactions" : "{prefix}:{schema}.{table}"),
      messagesKey: o.messages ?? "{prefix}:messages",
      entriesPerCall: Math.max(1, o.entries_per_call ?? 1000),
      maxTransactionBytes: o.max_transaction_bytes ?? 64 << 20,
      sha: this.#sha,
      positionKey: new TextEncoder().encode(this.#positionKey),
      maxlen: parseMaxlen(o.maxlen),
    };
    // Checks the templates now (a TypeError for a bad one) rather than at the first change.
    new EntryEncoder(this.#layout, "");
    expandKey(this.#layout.keyTemplate, { prefix, schema: "s", table: "t" });
  }

  /** Connects (retrying for connect_timeout), loads the script, reads the position key. */
  async start(): Promise<void> {
    const connectMs = this.#t.options.connect_timeout ?? 10_000;
    const deadline = Date.now() + connectMs;
    for (;;) {
      try {
        this.#conn = await this.#connect(true);
        break;
      } catch (e) {
        if (e instanceof SinkError) throw e;
        if (Date.now() >= deadline) {
          throw this.#error(`unreachable for ${connectMs / 1000} s: ${(e as Error).message}`, undefined, "is redis-server running there, and does it take connections from here?", e);
        }
        await this.#pause(e);
      }
    }
    this.#backoff.reset();
    this.#loop = this.#run();
  }

  async delivered(): Promise<ChangePosition | undefined> {
    return this.#delivered;
  }

  write(records: Records): Promise<void> {
    return this.meter.track(records, this.#write(records));
  }

  #write(records: Records): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(this.#error("written after close()"));
    const refused = headersRefused(records, "redis");
    if (refused !== undefined) return Promise.reject(refused);
    let encoded: EncodedChunk[];
    try {
      encoded = this.#encoder.encode(records);
    } catch (e) {
      const failure = e instanceof SinkError ? e : this.#error((e as Error).message, undefined, undefined, e);
      this.#fail(failure);
      return Promise.reject(failure);
    }
    if (encoded.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const batch: Batch = { remaining: encoded.length, settled: false, resolve, reject };
      const conn = this.#conn;
      for (const e of encoded) {
        const chunk: Chunk = { ...e, batch, done: false };
        this.#pending.push(chunk);
        if (conn !== undefined && !conn.ended && !this.#retrying) this.#send(conn, chunk);
      }
    });
  }

  async close(): Promise<void> {
    if (this.#pending.length > 0 && this.#failure === undefined && this.#conn?.ended === false && !this.#retrying) {
      await new Promise<void>((resolve) => {
        this.#drained = resolve;
        setTimeout(resolve, CLOSE_WAIT_MS).unref?.();
      });
    }
    this.#closed = true;
    this.#abort.abort();
    const left = this.#pending.splice(0);
    const e = this.#error(`closed with ${left.length} script call(s) not confirmed by the server`);
    for (const c of left) settle(c.batch, e);
    this.#conn?.destroy();
    this.#wake?.();
    await this.#loop; // it ends at once: its waits and a connect in progress end with the abort
  }

  /** Opens a connection: password, database, the script; the position key the first time. */
  async #connect(first: boolean): Promise<RedisConnection> {
    const t = this.#t;
    const conn = await RedisConnection.open(t.address, {
      connectTimeoutMs: t.options.connect_timeout ?? 10_000,
      replyTimeoutMs: t.options.timeout ?? 30_000,
      signal: this.#abort.signal,
    });
    // close() ends a handshake that waits for a silent server too.
    const ended = () => conn.destroy();
    this.#abort.signal.addEventListener("abort", ended, { once: true });
    try {
      const steps: [string, (string | Uint8Array)[]][] = [];
      if (t.password !== undefined) steps.push(["AUTH", t.user === undefined ? ["AUTH", t.password] : ["AUTH", t.user, t.password]]);
      if (t.db !== 0) steps.push(["SELECT", ["SELECT", String(t.db)]]);
      steps.push(["CLIENT SETNAME", ["CLIENT", "SETNAME", "pgoutput-wasm"]]);
      steps.push(["SCRIPT LOAD", ["SCRIPT", "LOAD", APPEND_SCRIPT]]);
      if (first) steps.push(["GET", ["GET", this.#positionKey]]);
      const replies = await this.#ask(conn, steps.map((s) => s[1]));
      for (let i = 0; i < steps.length; i++) {
        const r = replies[i]!;
        const step = steps[i]![0];
        if (!(r instanceof RespError)) continue;
        if (step === "CLIENT SETNAME") continue; // a name for CLIENT LIST only: an ACL may refuse it
        if (TRANSIENT.has(r.code) || /max number of clients/i.test(r.message)) throw new Error(r.message);
        throw this.#error(`${step}: ${r.message}`, step === "GET" ? this.#positionKey : undefined, hintFor(r.code, r.message, undefined));
      }
      const sha = replies[steps.findIndex((s) => s[0] === "SCRIPT LOAD")];
      if (sha !== this.#sha) throw this.#error(`SCRIPT LOAD answered ${JSON.stringify(sha)}, not the script's SHA-1 ${this.#sha}`);
      if (first) {
        const at = replies[replies.length - 1];
        const position = typeof at === "string" ? parsePositionText(at) : undefined;
        if (at !== null && position === undefined) {
          throw this.#error(`the position key ${this.#positionKey} holds ${JSON.stringify(String(at).substring(0, 40))}, not a position this sink wrote`, this.#positionKey, "choose another key with ?position=, or delete it if nothing else uses it");
        }
        this.#delivered = position;
        this.#encoder = new EntryEncoder(this.#layout, typeof at === "string" ? at : "");
      }
      return conn;
    } catch (e) {
      conn.destroy();
      if (this.#abort.signal.aborted) throw new Error("closed");
      if (e instanceof RespProtocolError) throw this.#error(`it does not answer as Redis: ${e.message}`, undefined, "is this the address of a Redis server?", e);
      throw e;
    } finally {
      this.#abort.signal.removeEventListener("abort", ended);
    }
  }

  /** Sends commands; resolves with their replies, or rejects when the connection ends first. */
  #ask(conn: RedisConnection, commands: (string | Uint8Array)[][]): Promise<RespReply[]> {
    const out = new ByteSink();
    for (const c of commands) command(out, c);
    return new Promise((resolve, reject) => {
      const replies: RespReply[] = [];
      void conn.closed.then(reject);
      conn.send(out.buf.subarray(0, out.len), commands.map(() => (r: RespReply) => {
        replies.push(r);
        if (replies.length === commands.length) resolve(replies);
      }));
    });
  }

  /** The loop that (re)connects and sends everything unconfirmed again, in order, until closed or failed. */
  async #run(): Promise<void> {
    while (this.#failure === undefined && !this.#closed) {
      let conn = this.#conn;
      if (conn === undefined || conn.ended) {
        this.#conn = undefined;
        try {
          conn = await this.#connect(false);
        } catch (e) {
          if (e instanceof SinkError) return this.#fail(e);
          await this.#pause(e);
          continue;
        }
        if (this.#closed) return conn.destroy();
        this.#conn = conn;
      }
      this.#retrying = false;
      this.#epoch++;
      for (const c of this.#pending) this.#send(conn, c);
      const asked = new Promise<void>((resolve) => (this.#wake = resolve));
      const reason = await Promise.race([conn.closed, asked]);
      this.#wake = undefined;
      if (this.#failure !== undefined || this.#closed) return;
      if (conn.ended) {
        await this.#pause(reason);
        continue;
      }
      // An answer asked for a retry: wait, load the script again (NOSCRIPT), send again on this connection.
      await this.#pause(this.#lastTransient);
      try {
        const [r] = await this.#ask(conn, [["SCRIPT", "LOAD", APPEND_SCRIPT]]);
        if (r instanceof RespError && !TRANSIENT.has(r.code)) return this.#fail(this.#error(`SCRIPT LOAD: ${r.message}`, undefined, hintFor(r.code, r.message, undefined)));
      } catch {
        /* the connection ended: the loop reconnects */
      }
    }
  }

  #lastTransient: unknown;

  async #pause(reason: unknown): Promise<void> {
    const delayMs = this.#backoff.next();
    const message = redact(reason instanceof Error ? reason.message : String(reason), [this.#t.password]);
    this.meter.retried();
    this.#hooks.onRetry?.({ sink: this.name, error: message, attempt: this.#backoff.attempts, delayMs });
    await sleep(delayMs, this.#abort.signal);
  }

  #send(conn: RedisConnection, chunk: Chunk): void {
    const epoch = this.#epoch;
    conn.send(chunk.command, [(r) => this.#answer(chunk, epoch, r)]);
  }

  #answer(c: Chunk, epoch: number, r: RespReply): void {
    if (this.#failure !== undefined || c.done) return;
    if (r instanceof RespError) return this.#refused(c, epoch, r.message, undefined);
    if (!Array.isArray(r) || typeof r[0] !== "string") return this.#fail(this.#error(`the append script answered ${JSON.stringify(r)}`));
    switch (r[0]) {
      case "ok":
        return this.#confirm(c);
      case "gap":
        if (epoch !== this.#epoch) return;
        if (this.#pending[0] === c) {
          // Everything before this chunk was confirmed, yet the position key is behind it: it was changed, or writes the server confirmed were lost.
          return this.#fail(this.#error(
            `the position key ${this.#positionKey} is at ${JSON.stringify(r[1])}, behind ${c.after}, which this server confirmed`,
            this.#positionKey,
            "another writer changed it, or the server lost writes it had confirmed (appendfsync other than always, a failover to a replica that lagged): check what the streams hold",
          ));
        }
        return this.#retry(epoch, "an earlier call was not applied");
      case "err":
        return this.#refused(c, epoch, String(r[3]), Number(r[1]) + Number(r[2]));
      default:
        return this.#fail(this.#error(`the append script answered ${JSON.stringify(r)}`));
    }
  }

  /** An error answer: entries before `entry` (if known) landed. */
  #refused(c: Chunk, epoch: number, message: string, entry: number | undefined): void {
    const code = new RespError(message).code;
    if (TRANSIENT.has(code)) {
      if (epoch !== this.#epoch) return;
      this.#lastTransient = new Error(message);
      // A replica does not become a primary by being asked again: reconnect (a moved address, a Sentinel's new primary behind it).
      if (code === "READONLY") this.#conn?.destroy(new Error(message));
      else this.#retry(epoch, message);
      return;
    }
    if (epoch !== this.#epoch) return; // an older sending's failure: the current one decides
    const stream = entry === undefined || c.entryKeys[entry] === undefined ? c.keys.map((k) => k.name).join(", ") : c.keys[c.entryKeys[entry]!]!.name;
    this.#fail(this.#error(`${message} (stream ${stream})`, stream, hintFor(code, message, stream)));
  }

  #retry(epoch: number, why: string): void {
    if (epoch !== this.#epoch || this.#retrying) return;
    this.#retrying = true;
    this.#lastTransient ??= new Error(why);
    this.#wake?.();
  }

  #confirm(c: Chunk): void {
    c.done = true;
    const i = this.#pending[0] === c ? 0 : this.#pending.indexOf(c);
    if (i >= 0) this.#pending.splice(i, 1);
    this.#backoff.reset();
    this.#lastTransient = undefined;
    if (--c.batch.remaining === 0) settle(c.batch);
    if (this.#pending.length === 0) this.#drained?.();
  }

  #fail(e: SinkError): void {
    if (this.#failure !== undefined) return;
    this.#failure = e;
    for (const c of this.#pending.splice(0)) settle(c.batch, e);
    this.#conn?.destroy();
    this.#abort.abort();
    this.#wake?.();
    this.#drained?.();
  }

  #error(message: string, stream?: string, hint?: string, cause?: unknown): SinkError {
    const clean = redact(`redis: ${this.#t.shown}: ${message}`, [this.#t.password]);
    return new SinkError(clean, { sink: "redis", target: stream ?? this.#t.shown, hint, cause });
  }
}

function settle(batch: Batch, error?: unknown): void {
  if (batch.settled) return;
  batch.settled = true;
  if (error === undefined) batch.resolve();
  else batch.reject(error);
}

/** Opens the sink: the target's options, then `options` over them (REDIS_OPTIONS). */
export async function redisSink(target: string, options?: SinkOptionValues, hooks?: RedisSinkHooks): Promise<RedisStreamSink> {
  const sink = new RedisStreamSink(parseRedisTarget(target, options), hooks);
  await sink.start();
  return sink;
}

export const redis: SinkDefinition = {
  name: "redis",
  schemes: ["redis:", "rediss:"],
  summary: "Redis Streams: XADD with ids from the change's position, one stream per table (redis://[:password@]host[:port][/db])",
  create: (target, options) => redisSink(target, options),
};
