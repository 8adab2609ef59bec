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
 * INVALID_VALUE for what pg could not parse), CONNECT_FAILED or
 * RECEIVE_TIMEOUT (both retryable).
 */
import type { Client } from "pg";
import { PgoutputError, type PgoutputErrorCode } from "../errors.ts";
import { ReplicationError } from "./errors.ts";
import { MAX_MESSAGE_SIZE } from "../limits.ts";
import { RECEIVE_TIMEOUT_MS } from "./options.ts";

export interface ConnectionLimits {
  /** The largest backend message body accepted, in bytes. */
  maxMessageSize: number;
  /** Silence allowed while an answer is awaited, in ms; 0 turns the timeout off. */
  receiveTimeoutMs: number;
}

/** The socket under pg's Connection, as far as the guard uses it. */
interface GuardSocket {
  listeners(event: "data"): Function[];
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  removeListener(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  once(event: "close", listener: () => void): unknown;
  isPaused?(): boolean;
  destroy(error?: Error): unknown;
}

/** pg's internals the guard reads: its socket, and whether it waits for the server (the names of pg 8.11 and of later 8.x). */
interface GuardedClient {
  connection?: { stream?: GuardSocket; ssl?: unknown; once?(event: string, listener: () => void): unknown };
  _connecting?: boolean;
  _activeQuery?: unknown;
  activeQuery?: unknown;
  _queryQueue?: unknown[];
  queryQueue?: unknown[];
}

/** The limits of the stream's options (a decoder passed in without `maxMessageSize` keeps its own; its connections get the ceiling). */
export function connectionLimits(o: { maxMessageSize: number | undefined; receiveTimeoutMs: number }): ConnectionLimits {
  return { maxMessageSize: o.maxMessageSize ?? MAX_MESSAGE_SIZE, receiveTimeoutMs: o.receiveTimeoutMs };
}

/** `replicate()`'s defaults, for connections made without its options (the CLI's preflight and `slots`). */
export const DEFAULT_LIMITS: ConnectionLimits = Object.freeze({ maxMessageSize: MAX_MESSAGE_SIZE, receiveTimeoutMs: RECEIVE_TIMEOUT_MS });

const HEADER = 5;
const guards = new WeakMap<object, ConnectionGuard>();

/** The names of the backend messages pg may be asked to buffer, for the error text. */
const NAMES: Record<string, string> = {
  D: "DataRow", d: "CopyData", E: "ErrorResponse", N: "NoticeResponse", T: "RowDescription", R: "Authentication",
  A: "NotificationResponse", S: "ParameterStatus", C: "CommandComplete", W: "CopyBothResponse", H: "CopyOutResponse",
};

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
    connection.once(connection.ssl ? "sslconnect" : "connect", () => guard.#install());
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
    socket.removeListener("data", this.#parse);
    socket.on("data", this.#onData);
    socket.once("close", () => this.detach());
  }

  readonly #onData = (chunk: Uint8Array): void => {
    this.#lastData = Date.now();
    if (this.#failure !== undefined) return;
    const n = chunk.length;
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
      if (length < 4 || length - 4 > this.#limits.maxMessageSize) {
        this.#fail(this.#frameError(tag, length, at));
        return;
      }
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

  #frameError(tag: number, length: number, offset: number): ReplicationError {
    const letter = String.fromCharCode(tag);
    const kind = `${NAMES[letter] ?? "backend"} message (0x${tag.toString(16).padStart(2, "0")})`;
    const tooLarge = length >= 4;
    const code: PgoutputErrorCode = tooLarge ? "MESSAGE_TOO_LARGE" : "INVALID_LENGTH";
    const text = tooLarge
      ? `the server sent a ${kind} of ${length - 4} bytes, over maxMessageSize (${this.#limits.maxMessageSize}); bytes count from the connection's first`
      : `the server sent a ${kind} with an invalid length ${length}; bytes count from the connection's first`;
    // The offset is that of the length field.
    const cause = new PgoutputError(text, { code, field: "frameLength", offset: offset + 1 });
    return new ReplicationError(cause.message, { code: "DECODE_ERROR", cause });
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
      ? new ReplicationError(`no answer from the server while connecting for ${silent} ms (receiveTimeoutMs ${ms})`, { code: "CONNECT_FAILED" })
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
