/**
 * One connection to a Redis server: commands written in order, replies
 * handed to their callbacks in the same order (RESP answers a connection's
 * commands in the order it received them), so many commands can be in
 * flight — pipelined — on one socket.
 *
 * Nothing is queued, retried or re-sent here: when the connection ends,
 * `closed` resolves and the callbacks of the commands still waiting are
 * dropped; the owner (redis.ts) knows what was not confirmed and sends it
 * again, in its order, on a new connection. A server silent for
 * `replyTimeoutMs` while commands wait is taken for gone.
 */
import * as net from "node:net";
import * as tls from "node:tls";
import { RespParser, type RespReply } from "./resp.ts";

export interface RedisAddress {
  host: string;
  port: number;
  /** `rediss://`: TLS, verified against the default CA store. */
  tls: boolean;
}

export interface ConnectionOptions {
  connectTimeoutMs: number;
  replyTimeoutMs: number;
  /** Gives up a connect in progress. */
  signal?: AbortSignal;
}

export class RedisConnection {
  readonly #socket: net.Socket;
  readonly #parser = new RespParser();
  readonly #waiting: ((reply: RespReply) => void)[] = [];
  #head = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #replyTimeoutMs: number;
  #ended = false;
  #endClosed!: (reason: Error) => void;
  /** Resolves once the connection is unusable, with why. */
  readonly closed: Promise<Error>;

  private constructor(socket: net.Socket, replyTimeoutMs: number) {
    this.#socket = socket;
    this.#replyTimeoutMs = replyTimeoutMs;
    this.closed = new Promise((resolve) => (this.#endClosed = resolve));
    socket.on("data", (chunk: Buffer) => this.#data(chunk));
    socket.on("error", (e) => this.#end(e));
    socket.on("close", () => this.#end(new Error("the server closed the connection")));
  }

  /** Connects; rejects with the socket's error (ECONNREFUSED, a TLS failure) or after connectTimeoutMs. */
  static open(address: RedisAddress, o: ConnectionOptions): Promise<RedisConnection> {
    return new Promise((resolve, reject) => {
      const socket = address.tls
        ? tls.connect({ host: address.host, port: address.port, servername: net.isIP(address.host) === 0 ? address.host : undefined })
        : net.connect({ host: address.host, port: address.port });
      socket.setNoDelay(true);
      const timer = setTimeout(() => fail(Object.assign(new Error(`no connection after ${o.connectTimeoutMs} ms`), { code: "ETIMEDOUT" })), o.connectTimeoutMs);
      const abort = () => fail(new Error("closed"));
      const fail = (e: Error) => {
        clearTimeout(timer);
        o.signal?.removeEventListener("abort", abort);
        socket.destroy();
        reject(e);
      };
      if (o.signal?.aborted) return fail(new Error("closed"));
      o.signal?.addEventListener("abort", abort, { once: true });
      socket.once("error", fail);
      socket.once(address.tls ? "secureConnect" : "connect", () => {
        clearTimeout(timer);
        o.signal?.removeEventListener("abort", abort);
        socket.off("error", fail);
        socket.setKeepAlive(true, 30_000);
        resolve(new RedisConnection(socket, o.replyTimeoutMs));
      });
    });
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Commands waiting for their replies. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }

  /** Writes one or more whole commands; `onReply` gets each one's reply, in order (one callback per command). */
  send(bytes: Uint8Array, onReply: ((reply: RespReply) => void)[]): void {
    if (this.#ended) return;
    for (const f of onReply) this.#waiting.push(f);
    this.#socket.write(bytes);
    this.#arm();
  }

  /** Ends it (no more replies are delivered). */
  destroy(reason = new Error("closed")): void {
    this.#end(reason);
  }

  #arm(): void {
    if (this.#timer !== undefined || this.waiting === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.waiting > 0) this.#end(Object.assign(new Error(`no answer for ${this.#replyTimeoutMs / 1000} s`), { code: "ETIMEDOUT" }));
    }, this.#replyTimeoutMs);
    this.#timer.unref?.();
  }

  #data(chunk: Buffer): void {
    if (this.#ended) return;
    let replies: RespReply[];
    try {
      replies = this.#parser.push(chunk);
    } catch (e) {
      this.#end(e as Error);
      return;
    }
    if (replies.length > 0 && this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    for (const r of replies) {
      if (this.#head >= this.#waiting.length) {
        this.#end(new Error("the server sent a reply to no command"));
        return;
      }
      const f = this.#waiting[this.#head++]!;
      if (this.#head > 1024 && this.#head * 2 > this.#waiting.length) {
        this.#waiting.splice(0, this.#head);
        this.#head = 0;
      }
      f(r);
      if (this.#ended) return;
    }
    this.#arm();
  }

  #end(reason: Error): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#waiting.length = 0;
    this.#head = 0;
    this.#socket.destroy();
    this.#endClosed(reason);
  }
}
