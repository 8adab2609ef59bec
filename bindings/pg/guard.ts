/**
 * Bounds on a connection while `pg` parses it: before START_REPLICATION on
 * the replication connection (the stream then reads the socket itself,
 * socket.ts), and for the whole life of the side and snapshot copy
 * connections.
 *
 * pg buffers a backend message of any declared length before anyone sees
 * it, throws from its socket listener (an uncaught exception: the process
 * ends) on a message it cannot parse, and waits for an answer forever. The
 * guard takes pg's 'data' listener off the socket and calls it itself:
 * - it walks the backend frame headers (`Byte1 tag, Int32 length`) and
 *   fails the connection at the header of a message whose body is over
 *   `maxMessageSize` or whose length is impossible; pg never sees those
 *   bytes, so nothing of the message is buffered;
 * - what pg's parser throws fails the connection instead of the process;
 * - the server's first answer — to the SSLRequest, or to the startup
 *   message — must be the PostgreSQL protocol (libpq's checks): an HTTP,
 *   TLS or SSH service on the port, or anything else, fails the connection
 *   with NOT_POSTGRES naming the host, the port and what it sent, instead
 *   of a frame length made of its text;
 * - nothing received for `receiveTimeoutMs` while pg waits for something
 *   (connecting, or a query outstanding) fails the connection: a stalled
 *   server or a half-open connection. As in the stream, time the socket is
 *   paused for backpressure does not count, and neither does an idle
 *   connection. Commands that may rightly wait longer (a slot waiting for
 *   running transactions, a DDL lock) run under `patiently()`.
 *
 * Failing destroys the socket with a `ReplicationError`, which pg hands to
 * the connect callback or to every pending query, so callers see it as the
 * query's error: DECODE_ERROR (its cause a PgoutputError: MESSAGE_TOO_LARGE
 * or INVALID_LENGTH with the length field's byte offset in the connection,
 * INVALID_VALUE for what pg could not parse), NOT_POSTGRES, CONNECT_FAILED
 * or RECEIVE_TIMEOUT (the last two retryable). While connecting, what pg
 * reports in its own words instead (its connectionTimeoutMillis, a server
 * that hangs up without a word) is said with what the guard saw:
 * `connectError()`.
 */
import type { Client } from "pg";
import { PgoutputError } from "../errors.ts";
import { ReplicationError } from "./errors.ts";
import type { ConnectionLimits } from "./defaults.ts";
import {
  PG_CONNECT_TIMEOUT, SHOWN, connectTimeoutError, endpointName, frameError, hangUpError, notPostgresError, startupAnswer, type Awaiting,
} from "./guard-errors.ts";

// The CLI's connections made without `replicate()`'s options take these, and it names endpoints so.
export { DEFAULT_LIMITS } from "./defaults.ts";
export { endpointName };

/** The socket under pg's Connection, as far as the guard uses it. */
interface GuardSocket {
  listeners(event: "data"): Function[];
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  removeListener(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  once(event: "close" | "secureConnect", listener: () => void): unknown;
  prependOnceListener?(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  isPaused?(): boolean;
  destroy(error?: Error): unknown;
}

/**
 * pg's internals the guard reads: its socket, how it asks for TLS, whether
 * it waits for the server (the names of pg 8.11 and of later 8.x), where
 * it connects and its own connect timeout.
 */
interface GuardedClient {
  connection?: { stream?: GuardSocket; ssl?: unknown; sslNegotiation?: string; once?(event: string, listener: () => void): unknown };
  host?: unknown;
  port?: unknown;
  _connectionTimeoutMillis?: unknown;
  _connecting?: boolean;
  _activeQuery?: unknown;
  activeQuery?: unknown;
  _queryQueue?: unknown[];
  queryQueue?: unknown[];
}

const HEADER = 5;
const guards = new WeakMap<object, ConnectionGuard>();

export class ConnectionGuard {
  readonly #client: GuardedClient;
  readonly #limits: ConnectionLimits;
  #socket: GuardSocket | undefined;
  /** pg's parser: the listener the guard took off the socket, and calls. */
  #parse: ((chunk: Uint8Array) => void) | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #lastData = Date.now();
  #patient = 0;
  /** Frame walk: header bytes seen of the current header, the header itself, body bytes left to skip, bytes read in all. */
  #headLength = 0;
  readonly #head = new Uint8Array(HEADER);
  #skip = 0;
  #offset = 0;
  #failure: ReplicationError | undefined;
  #awaiting: Awaiting = "tcp";
  /** The server's first bytes (for NOT_POSTGRES), and the tag of the last message header read (for a timeout while connecting). */
  readonly #first = new Uint8Array(SHOWN);
  #firstLength = 0;
  #lastTag = -1;

  private constructor(client: GuardedClient, limits: ConnectionLimits) {
    this.#client = client;
    this.#limits = limits;
  }

  /**
   * Guards `client` (not yet connected). The listener goes on once pg has
   * its final socket — at 'connect', or at 'sslconnect' after the TLS
   * upgrade — before the server has sent anything. A client without pg's
   * Connection (pg-native) is left unguarded.
   */
  static attach(client: Client, limits: ConnectionLimits): ConnectionGuard | undefined {
    const c = client as unknown as GuardedClient;
    const connection = c.connection;
    if (connection?.once === undefined) return undefined;
    const guard = new ConnectionGuard(c, limits);
    const ssl = Boolean(connection.ssl);
    const direct = connection.sslNegotiation === "direct";
    connection.once("connect", () => {
      guard.#awaiting = !ssl ? "startup" : direct ? "tls" : "sslResponse";
      // pg reads the SSLRequest's answer with a 'data' listener of its own: the guard's goes first.
      if (ssl && !direct) connection.stream?.prependOnceListener?.("data", guard.#onSslResponse);
    });
    connection.once(ssl ? "sslconnect" : "connect", () => guard.#install());
    guards.set(client, guard);
    if (limits.receiveTimeoutMs > 0) {
      guard.#timer = setInterval(() => guard.#check(), Math.max(10, limits.receiveTimeoutMs / 4));
      (guard.#timer as { unref?: () => void }).unref?.();
    }
    return guard;
  }

  /** Why the guard failed the connection, if it did. */
  get failure(): ReplicationError | undefined {
    return this.#failure;
  }

  /** Runs `command` with the receive timeout suspended (commands that may rightly wait long). */
  async patiently<T>(command: () => Promise<T>): Promise<T> {
    this.#patient++;
    try {
      return await command();
    } finally {
      this.#patient--;
      this.#lastData = Date.now();
    }
  }

  /** Takes the guard off and gives pg its listener back (the stream then takes the socket over from pg). */
  detach(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    const socket = this.#socket;
    this.#socket = undefined;
    guards.delete(this.#client);
    if (socket === undefined) return;
    socket.removeListener("data", this.#onData);
    if (this.#failure === undefined) socket.on("data", this.#parse!);
  }

  #install(): void {
    const socket = this.#client.connection?.stream;
    const pgListeners = socket?.listeners("data");
    if (socket === undefined || pgListeners?.length !== 1) {
      this.detach(); // not the pg this module knows: left as it is (and not timed: the guard would see no data)
      return;
    }
    this.#socket = socket;
    this.#parse = pgListeners[0] as (chunk: Uint8Array) => void;
    this.#lastData = Date.now();
    if (this.#client.connection?.ssl) {
      this.#awaiting = "tls";
      socket.once("secureConnect", () => {
        if (this.#awaiting === "tls") this.#awaiting = "startup";
      });
    }
    socket.removeListener("data", this.#parse);
    socket.on("data", this.#onData);
    socket.once("close", () => this.detach());
  }

  /** The server's one-byte answer to SSLRequest: `S` or `N` alone, or an ErrorResponse (`E`) from a server too old to know the request. */
  readonly #onSslResponse = (chunk: Uint8Array): void => {
    this.#lastData = Date.now();
    if (this.#failure !== undefined || chunk.length === 0) return;
    if (chunk[0] === 0x45 || (chunk.length === 1 && (chunk[0] === 0x53 || chunk[0] === 0x4e))) return;
    this.#fail(notPostgresError(this.#server, "the SSLRequest", chunk.subarray(0, SHOWN)));
  };

  readonly #onData = (chunk: Uint8Array): void => {
    this.#lastData = Date.now();
    if (this.#failure !== undefined) return;
    const n = chunk.length;
    if (this.#awaiting !== "rest") this.#awaiting = "rest";
    if (this.#firstLength < SHOWN) {
      const t = Math.min(SHOWN - this.#firstLength, n);
      this.#first.set(chunk.subarray(0, t), this.#firstLength);
      this.#firstLength += t;
    }
    let i = 0;
    while (i < n) {
      if (this.#skip > 0) {
        const t = Math.min(this.#skip, n - i);
        this.#skip -= t;
        i += t;
        continue;
      }
      let tag: number;
      let length: number;
      const at = this.#offset + i - this.#headLength;
      if (this.#headLength === 0 && n - i >= HEADER) {
        tag = chunk[i]!;
        length = ((chunk[i + 1]! << 24) | (chunk[i + 2]! << 16) | (chunk[i + 3]! << 8) | chunk[i + 4]!) >>> 0;
        i += HEADER;
      } else {
        while (this.#headLength < HEADER && i < n) this.#head[this.#headLength++] = chunk[i++]!;
        if (this.#headLength < HEADER) break;
        const h = this.#head;
        tag = h[0]!;
        length = ((h[1]! << 24) | (h[2]! << 16) | (h[3]! << 8) | h[4]!) >>> 0;
        this.#headLength = 0;
      }
      if (at === 0 && this.#client._connecting === true && !startupAnswer(tag, length)) {
        this.#fail(notPostgresError(this.#server, "the startup message", this.#first.subarray(0, this.#firstLength)));
        return;
      }
      if (length < 4 || length - 4 > this.#limits.maxMessageSize) {
        this.#fail(frameError(tag, length, at, this.#limits.maxMessageSize));
        return;
      }
      this.#lastTag = tag;
      this.#skip = length - 4;
    }
    this.#offset += n;
    try {
      this.#parse!(chunk);
    } catch (cause) {
      const error = new PgoutputError(`pg could not parse a message in the bytes read from here on: ${cause instanceof Error ? cause.message : String(cause)}`, {
        code: "INVALID_VALUE", field: "message", offset: this.#offset - n, cause,
      });
      this.#fail(new ReplicationError(error.message, { code: "DECODE_ERROR", cause: error }));
    }
  };

  /** `host:port` of the client, for messages. */
  get #server(): string {
    const { host, port } = this.#client;
    return typeof host === "string" && host !== "" && (typeof port === "number" || typeof port === "string") ? endpointName(host, port) : "the server";
  }

  /**
   * What `client.connect()` rejected with, said with what the guard saw: its
   * own failure if it failed the connection (pg may report the same event
   * in its words first), pg's connectionTimeoutMillis ("timeout expired")
   * as where the startup stopped, a server that hung up before any answer
   * as that; anything else as it is.
   */
  connectError(e: unknown): unknown {
    if (this.#failure !== undefined) return this.#failure;
    const message = e instanceof Error ? e.message : undefined;
    const ms = this.#client._connectionTimeoutMillis;
    if (message === "timeout expired" && typeof ms === "number" && ms > 0) return connectTimeoutError(this.#server, this.#awaiting, this.#lastTag, ms, PG_CONNECT_TIMEOUT);
    if (message === "Connection terminated unexpectedly" && (this.#awaiting === "startup" || this.#awaiting === "sslResponse")) {
      const question = this.#awaiting === "startup" ? "the startup message" : "the SSLRequest";
      return hangUpError(this.#server, question);
    }
    return e;
  }

  #check(): void {
    if (this.#failure !== undefined) return;
    const socket = this.#socket;
    const c = this.#client;
    if (socket?.isPaused?.() === true || this.#patient > 0) {
      this.#lastData = Date.now();
      return;
    }
    const active = "_activeQuery" in c ? c._activeQuery : c.activeQuery;
    const queue = "_queryQueue" in c ? c._queryQueue : c.queryQueue;
    const waiting = c._connecting === true || active != null || (queue?.length ?? 0) > 0;
    if (!waiting) {
      this.#lastData = Date.now();
      return;
    }
    const silent = Date.now() - this.#lastData;
    const ms = this.#limits.receiveTimeoutMs;
    if (silent < ms) return;
    this.#fail(c._connecting === true
      ? connectTimeoutError(this.#server, this.#awaiting, this.#lastTag, silent, `receiveTimeoutMs (${ms})`)
      : new ReplicationError(`nothing received from the server for ${silent} ms while waiting for an answer (receiveTimeoutMs ${ms})`, { code: "RECEIVE_TIMEOUT" }));
  }

  #fail(error: ReplicationError): void {
    this.#failure = error;
    const socket = this.#socket ?? this.#client.connection?.stream;
    // With the error, pg fails the connect or every pending query with it; without a socket yet, there is nothing to wait on.
    socket?.destroy(error);
    this.detach();
  }
}

/** The guard of `client`, if it has one. */
export function guardOf(client: object): ConnectionGuard | undefined {
  return guards.get(client);
}

/** `command` with `client`'s receive timeout suspended (see `ConnectionGuard.patiently`). */
export function patiently<T>(client: object, command: () => Promise<T>): Promise<T> {
  const guard = guards.get(client);
  return guard === undefined ? command() : guard.patiently(command);
}
