/**
 * A running replication stream. After START_REPLICATION the stream reads
 * the connection's socket itself (socket.ts): raw bytes are copied into a
 * queue on arrival and decoded lazily — everything queued, in ONE
 * `pushBackend` call, when the consumer has finished the previous batch —
 * so `maxMessageSize` is checked at each frame's header before its bytes
 * are buffered, nothing aliases pg's buffers, and no per-message work of
 * pg's is paid.
 *
 * Backpressure counts the bytes received and not yet handed over: queued
 * bytes plus the rest of the decoded batch (pro rata by messages). At
 * `highWaterMark` the socket is paused; it resumes once the consumer has
 * worked its way down to `lowWaterMark`.
 *
 * Liveness, as PostgreSQL's walreceiver does it: a standby status update
 * every `statusIntervalMs` and whenever a keepalive reaching the consumer
 * asks for one; after half of `receiveTimeoutMs` with nothing received, a
 * status update asking for a reply; after all of it, a retryable
 * RECEIVE_TIMEOUT. At most one status update waits in the socket's write
 * buffer: a server that stops reading does not make the client's memory grow.
 *
 * Errors come in stream order: everything received before an ErrorResponse,
 * a frame the decoder rejects, or the connection's end is delivered first,
 * then the error is thrown.
 *
 * Views: a message yielded by the iteration is a view into the decoder's
 * memory, valid until the consumer asks for the next item (the next decode
 * happens only then). `transactions()` yields materialized objects instead.
 *
 * Reconnect (when `replicate()` gives a policy, see reconnect.ts): a
 * retryable error reached in stream order does not end the iteration. The
 * connection is closed, the decoder reset (views of the old batches go
 * stale; the server sends Relations again), the open transaction dropped
 * (it is not acknowledged and comes again whole), and after the backoff a
 * new connection streams from `lastAckedLsn`; the pull that met the error
 * waits for it. Transactions handed over before and sent again are marked
 * (`redelivering`, `Transaction.redelivered`).
 *
 * Created by `replicate()`; see there for an example.
 */
import type { Client } from "pg";
import type { PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { BackendMessage, PrimaryKeepalive, StandbyStatus, WalMessage } from "../walsender.ts";
import { AckTracker } from "../ack.ts";
import { isPgoutputError } from "../errors.ts";
import { parseLsn } from "../lsn.ts";
import { encodeStandbyStatusUpdate } from "../walsender.ts";
import type { NormalizedOptions, ReplicateOptions } from "./options.ts";
import { ReplicationError, fromErrorFields, fromPgError } from "./errors.ts";
import { copyDataFrame, copyDoneFrame, queryFrame } from "./frames.ts";
import { ByteQueue } from "./queue.ts";
import { startReading, stopReading, takeOver, type RawSocket } from "./socket.ts";
import { TransactionAssembler, type AssemblerOptions, type TransactionItem } from "./transactions.ts";
import type { HealthMonitor, ReplicationHealth, StreamProgress } from "./health.ts";
import { HEARTBEAT_PREFIX } from "./heartbeat.ts";
import { backoffDelay, cancellableSleep, type ReconnectPolicy } from "./reconnect.ts";
import { guardOf } from "./guard.ts";
import { PG_EPOCH_US } from "../values/calendar.ts";

/** What the message iteration yields: pgoutput messages (views), and keepalives when asked for. */
export type StreamItem = PgoutputMessage | PrimaryKeepalive;

/** Counters of a stream, for monitoring and tests. */
export interface ReplicationStats {
  /** Messages decoded from the socket: CopyData payloads (XLogData, keepalives) and other backend messages. */
  payloads: number;
  /** Socket bytes received after START_REPLICATION. */
  bytes: number;
  /** `pushBackend` calls. */
  batches: number;
  /** Bytes received and not yet handed over: queued, or decoded and not yet iterated. */
  bufferedBytes: number;
  /** The most bytes ever buffered at once (what backpressure bounds). */
  bufferedHighWater: number;
  /** Times the socket was paused for backpressure. */
  pauses: number;
  /** Standby status updates sent. */
  statusUpdates: number;
  /** Reconnects that succeeded (the counters above run on across them). */
  reconnects: number;
}

/** A new connection for a reconnect: connected, pg done with it, and the START_REPLICATION to send. */
export interface StreamConnection {
  client: Client;
  socket: RawSocket;
  command: string;
}

/** What `replicate()` hands the stream. */
export interface StreamSetup {
  client: Client;
  /** The connection's socket; the stream takes it over from pg at `start()`. */
  socket: RawSocket;
  decoder: PgoutputDecoder;
  options: NormalizedOptions;
  /** The position already confirmed: the later of the slot's confirmed_flush_lsn and startLsn. */
  start: bigint;
  /** PostgreSQL's server_version_num. */
  serverVersion: number;
  callbacks: Pick<ReplicateOptions, "onError" | "onStatus" | "onNotice" | "onReconnect" | "onReconnected">;
  /** The connection's passwords, kept out of error texts. */
  secrets: readonly string[];
  /** Slot health and heartbeats (health.ts); closed with the stream. */
  monitor?: HealthMonitor;
  /** How to reconnect after a retryable failure; absent, the failure ends the stream. */
  /** `connect` ends the connection it is opening when `signal` aborts (the attempt was given up on). */
  reconnect?: { policy: ReconnectPolicy; connect: (startLsn: bigint, signal: AbortSignal) => Promise<StreamConnection> };
}

/** The messages of one decode: a decoder's batch, or the messages decoded before a rejected frame. */
interface Items {
  readonly length: number;
  get(index: number): WalMessage;
}

type Phase = "starting" | "streaming" | "stopping" | "reconnecting" | "closed";

/** Below this much queued, a waiting consumer is woken only after a short gathering pause. */
const GATHER_BYTES = 64 << 10;

/** A pull step's answer when nothing is buffered yet. */
const WAIT = Symbol("wait");
const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });


/**
 * The send time (µs since 2000, as a number) of a keepalive asking for a
 * reply that ends `chunk`, if one does: `d`, length 22, `k`, walEnd,
 * sendTime, 1. The walsender asks when it has waited half its
 * `wal_sender_timeout` for a reply, and then has nothing else to send, so
 * such a keepalive ends what the socket delivers. Answering it on arrival
 * keeps the connection alive while the consumer is busy; a false match
 * costs one extra status update.
 */
function tailKeepalive(c: Uint8Array): number | undefined {
  const n = c.length;
  if (n < 23 || c[n - 1] !== 1 || c[n - 18] !== 0x6b || c[n - 19] !== 22 || c[n - 23] !== 0x64) return undefined;
  if (c[n - 22] !== 0 || c[n - 21] !== 0 || c[n - 20] !== 0) return undefined;
  const hi = ((c[n - 9]! << 24) | (c[n - 8]! << 16) | (c[n - 7]! << 8) | c[n - 6]!) >>> 0;
  const lo = ((c[n - 5]! << 24) | (c[n - 4]! << 16) | (c[n - 3]! << 8) | c[n - 2]!) >>> 0;
  return hi * 2 ** 32 + lo;
}

export class ReplicationStream implements AsyncIterable<StreamItem> {
  /** PostgreSQL's `server_version_num` (e.g. 150018). */
  readonly serverVersion: number;
  /** The slot streamed from. */
  readonly slotName: string;
  /** The decoder (its `relations` and `types` caches are the stream's). */
  readonly decoder: PgoutputDecoder;
  /** Resolves when the stream has ended: with the error that ended it, or `undefined` after `stop()`. Never rejects. */
  readonly closed: Promise<ReplicationError | undefined>;

  /** The current connection (replaced by a reconnect). */
  #client: Client;
  #socket: RawSocket;
  readonly #options: NormalizedOptions;
  readonly #callbacks: StreamSetup["callbacks"];
  readonly #secrets: readonly string[];
  readonly #tracker: AckTracker;
  readonly #queue = new ByteQueue();
  #phase: Phase = "starting";
  #items: Items | undefined;
  #index = 0;
  /** Socket bytes behind #items, for the backpressure estimate. */
  #itemsBytes = 0;
  /** A rejected frame's error, thrown once the messages decoded before it were delivered. */
  #decodeError: ReplicationError | undefined;
  /** Why the socket is gone (closed, failed, timed out): thrown once everything received before was delivered. */
  #lost: ReplicationError | undefined;
  /** The error that ended the stream. */
  #error: ReplicationError | undefined;
  #bufferedHighWater = 0;
  #paused = false;
  #stopRequested = false;
  #stopping: Promise<void> | undefined;
  /** Resolves stop()'s wait for the server's ReadyForQuery (or the socket's end). */
  #stopped: (() => void) | undefined;
  #wake: (() => void) | undefined;
  /** Liveness: the receive timeout, and reading on after a gathering pause that outlasted a tick. */
  #timer: ReturnType<typeof setInterval> | undefined;
  /** The next periodic status update: `statusIntervalMs` after the last one sent, whatever sent it. */
  #statusTimer: ReturnType<typeof setTimeout> | undefined;
  #lastData = 0;
  /** A status update asking for a reply was sent for the current silence. */
  #pinged = false;
  /** Send times of keepalives answered on arrival, so that reaching them later sends no second reply. */
  readonly #answered = new Set<number>();
  /** The timer of a short pause that lets small reads gather (see #wakeOrGather). */
  #gathering: ReturnType<typeof setTimeout> | undefined;
  /** Whether a gathering pause stopped the socket handle (see stopReading). */
  #handleStopped = false;
  /** A status update was due while another still waited in the write buffer. */
  #statusWanted = false;
  #claimed: string | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  /** Pulls (next() calls) not settled yet. */
  #inFlight = 0;
  #startWaiter: { resolve: () => void; reject: (e: ReplicationError) => void } | undefined;
  #resolveClosed!: (e: ReplicationError | undefined) => void;
  // Slot health (health.ts): what the monitor reads of the stream.
  readonly #monitor: HealthMonitor | undefined;
  readonly #progress: StreamProgress = {
    lastCommitTime: undefined, lastCommitAt: undefined, lastKeepaliveTime: undefined, lastKeepaliveAt: undefined, heartbeatsFiltered: 0,
  };
  readonly #stats = { payloads: 0, bytes: 0, batches: 0, pauses: 0, statusUpdates: 0, reconnects: 0 };
  // --- reconnect
  readonly #reconnect: StreamSetup["reconnect"];
  /** The running reconnect (pulls wait for it). */
  #reconnecting: Promise<void> | undefined;
  /** Cancels a backoff wait (stop()). */
  #cancelWait: (() => void) | undefined;
  /** What the iteration must forget on a new connection (the assembler's partial transactions). */
  #onRestart: (() => void) | undefined;
  /** The highest end handed over before the latest reconnect: a transaction ending at or before it is redelivered. */
  #redeliverEnd = 0n;
  /** The highest Begin finalLsn / BeginPrepare prepareLsn handed over, and its value at the latest reconnect. */
  #beginSeen = 0n;
  #redeliverBegin = 0n;
  #redelivering = false;
  /** The Commit / Prepare ending a redelivered span was handed over: the next message is outside it. */
  #spanEnded = false;

  /** Use `replicate()`. */
  constructor(setup: StreamSetup) {
    this.#client = setup.client;
    this.#socket = setup.socket;
    this.decoder = setup.decoder;
    this.#options = setup.options;
    this.#callbacks = setup.callbacks;
    this.#secrets = setup.secrets;
    this.serverVersion = setup.serverVersion;
    this.slotName = setup.options.slot.name;
    this.#reconnect = setup.reconnect;
    this.#tracker = new AckTracker({ mode: setup.options.ack, start: setup.start });
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.#client.on("error", this.#onClientError);
    this.#client.on("end", this.#onClientEnd);
    this.#monitor = setup.monitor;
    this.#monitor?.bind(this, (e) => this.#lose(e));
  }

  /**
   * The slot's health: the server's view of the slot (read on a side
   * connection, opened on the first call) with the stream's own counters.
   * Rejects with SLOT_MISSING when the slot is gone. See health.ts.
   */
  health(): Promise<ReplicationHealth> {
    if (this.#monitor === undefined) return Promise.reject(new ReplicationError("this stream has no health monitor", { code: "INVALID_OPTION" }));
    return this.#monitor.health();
  }

  /** Timestamps of the last commit and keepalive reached, and the heartbeat messages filtered out. */
  get progress(): StreamProgress {
    return { ...this.#progress };
  }

  /**
   * Message iteration: whether the transaction the consumer is in (from its
   * Begin / BeginPrepare to its Commit / Prepare) is one whose Begin was
   * handed over before the latest reconnect — delivered again, whole or
   * after a partial first delivery. Transactions use `redelivered` instead.
   */
  get redelivering(): boolean {
    return this.#redelivering;
  }

  /**
   * Takes the socket over from pg, sends START_REPLICATION and resolves once
   * the server entered CopyBoth mode. Used by `replicate()`, after the last
   * query it runs through pg.
   */
  start(command: string): Promise<void> {
    const started = new Promise<void>((resolve, reject) => (this.#startWaiter = { resolve, reject }));
    guardOf(this.#client)?.detach(); // from here on the stream bounds what it reads, and times silence itself
    takeOver(this.#socket, this.#onData);
    this.#socket.on("drain", this.#onDrain);
    this.#lastData = Date.now();
    const o = this.#options;
    const period = o.receiveTimeoutMs > 0 ? Math.min(o.statusIntervalMs, o.receiveTimeoutMs / 4) : o.statusIntervalMs;
    // Twice per period, so that timer drift never stretches a timeout by a whole period.
    this.#timer = setInterval(this.#tick, Math.max(10, period / 2));
    (this.#timer as { unref?: () => void }).unref?.();
    this.#socket.write(queryFrame(command));
    return started;
  }

  /**
   * The acknowledged position: flushed/applied in the status updates, never
   * moving backwards. Resume from here after an error.
   */
  get lastAckedLsn(): bigint {
    return this.#tracker.confirmed;
  }

  /** The highest WAL position decoded (written in the status updates). */
  get lastReceivedLsn(): bigint {
    return this.#tracker.written;
  }

  /** `auto` or `manual`. */
  get ackMode(): "auto" | "manual" {
    return this.#tracker.mode;
  }

  /** The error that ended the stream, if any. */
  get error(): ReplicationError | undefined {
    return this.#error;
  }

  /** Whether something received is not handed over yet: the next item needs no wait for the server. */
  get ready(): boolean {
    return (this.#items !== undefined && this.#index < this.#items.length) || this.#queue.bytes > 0;
  }

  /** Reconnects so far: when it changes, the stream started over from `lastAckedLsn`. */
  get generation(): number {
    return this.#stats.reconnects;
  }

  get stats(): ReplicationStats {
    return { ...this.#stats, bufferedBytes: this.#buffered(), bufferedHighWater: this.#bufferedHighWater };
  }

  /**
   * Confirms everything up to `lsn` — a transaction's `endLsn` (bigint or
   * `X/Y`), or a `Transaction` / end message with an `endLsn` — in either
   * ack mode. Clamped to what was received; never moves backwards. Reported
   * with the next status update (`sendStatus()` sends one now). Returns the
   * acknowledged position.
   */
  ack(lsn: bigint | string | { readonly endLsn?: bigint | undefined }): bigint {
    const at = typeof lsn === "bigint" ? lsn : typeof lsn === "string" ? parseLsn(lsn) : lsn.endLsn;
    if (at === undefined) throw new TypeError("ack() needs an LSN or an object with an endLsn");
    return this.#tracker.ack(at);
  }

  /** Sends a standby status update now (e.g. right after a manual `ack`). */
  sendStatus(replyRequested = false): void {
    this.#sendStatus(replyRequested);
  }

  /**
   * Ends the stream: a final status update with the acknowledged position,
   * CopyDone, waits (up to `stopTimeoutMs`) for the server to finish, closes
   * the connection. A pending `next()` returns `done`. The item being
   * processed when `stop()` is called is not acknowledged by it, nor by the
   * loop's last `next()` on its way out: call `ack()` first if it was
   * finished. From the call on, `lastAckedLsn` does not move: it is what the
   * final status update reported (when the stream is between connections,
   * none can be sent, and the slot's confirmed position may trail it; it
   * still never passes what the consumer finished). Idempotent.
   */
  stop(): Promise<void> {
    return (this.#stopping ??= this.#stop());
  }

  async #stop(): Promise<void> {
    this.#stopRequested = true;
    this.#tracker.freeze(); // lastAckedLsn from here on is what the final status update reports
    this.#cancelWait?.();
    this.#wakeUp();
    this.#startWaiter?.reject(new ReplicationError("stopped before the stream started", { code: "CONNECTION_LOST" }));
    this.#startWaiter = undefined;
    this.#clearTimers();
    this.#endGathering();
    if (this.#paused || this.#handleStopped) this.#resume(); // the server's answer must get through
    if (this.#phase === "streaming" && this.#error === undefined && this.#lost === undefined) {
      this.#phase = "stopping";
      this.#sendStatus(false, true); // what it carries is lastAckedLsn from here on (the tracker is frozen)
      this.#socket.write(copyDoneFrame());
      let timeout: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.#stopped = resolve;
        timeout = setTimeout(resolve, this.#options.stopTimeoutMs);
        this.#drainForStop(); // the answer may be queued already
      });
      clearTimeout(timeout);
    }
    await this.#reconnecting; // a connection it is opening is closed by it
    await this.#close();
  }

  /** Iterates pgoutput messages (views valid until the next `next()`); breaking out stops the stream. */
  [Symbol.asyncIterator](): AsyncIterator<StreamItem> {
    this.#claim("messages");
    const keepalives = this.#options.keepalives;
    return {
      next: () => this.#pull((): IteratorResult<StreamItem> | typeof WAIT => {
        const item = this.#poll(keepalives);
        if (item === WAIT) return WAIT;
        if (item === undefined) return DONE;
        if (item.kind !== "PrimaryKeepalive") {
          this.#tracker.observe(item, true);
          this.#markRedelivery(item);
        }
        return { done: false, value: item };
      }),
      return: async (): Promise<IteratorResult<StreamItem>> => {
        await this.stop();
        return { done: true, value: undefined };
      },
    };
  }

  /**
   * Iterates whole transactions, materialized (they outlive the decoder's
   * batches): streamed transactions assembled from their blocks, minus
   * aborted subtransactions (or, with `streams: "passthrough"`, their blocks
   * and ends as they come), non-transactional messages as `LogicalMessage`.
   * With `ack: "auto"` a transaction is acknowledged when the consumer asks
   * for the next item. A stream is iterated once: messages or transactions.
   */
  transactions(options: AssemblerOptions = {}): AsyncIterable<TransactionItem> {
    this.#claim("transactions");
    const assembler = new TransactionAssembler(options);
    this.#onRestart = () => assembler.reset();
    const iterator: AsyncIterableIterator<TransactionItem> = {
      next: () => this.#pull((): IteratorResult<TransactionItem> | typeof WAIT => {
        for (;;) {
          const msg = this.#poll(false);
          if (msg === WAIT) return WAIT; // the assembler keeps what it holds until the pull goes on
          if (msg === undefined) return DONE;
          if (msg.kind === "PrimaryKeepalive") continue;
          const item = assembler.push(msg);
          this.#tracker.observe(msg, item !== undefined);
          if (item === undefined) continue;
          if ("redelivered" in item && item.endLsn <= this.#redeliverEnd) (item as { redelivered: boolean }).redelivered = true;
          return { done: false, value: item };
        }
      }),
      return: async (): Promise<IteratorResult<TransactionItem>> => {
        await this.stop();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  #claim(how: string): void {
    if (this.#claimed !== undefined) throw new TypeError(`this replication stream is already iterated (${this.#claimed}); iterate it once`);
    this.#claimed = how;
  }

  /**
   * One `next()`: the consumer is back (in auto mode, what it was handed is
   * confirmed), then `step` until it gives a result, waiting for the socket
   * between tries. Pulls run one after another, as concurrent next() calls
   * must not interleave. When nothing is in flight and the item is already
   * decoded, the result is one resolved promise: no async function and no
   * chaining, which is what each message costs while the consumer keeps up.
   */
  #pull<T>(step: () => T | typeof WAIT): Promise<T> {
    if (this.#inFlight === 0) {
      this.#tracker.next();
      let r: T | typeof WAIT;
      try {
        r = step();
      } catch (e) {
        return Promise.reject(e);
      }
      if (r !== WAIT) return Promise.resolve(r);
      return this.#track(this.#waitFor(step));
    }
    return this.#track(this.#chain.then(() => {
      this.#tracker.next();
      return this.#waitFor(step);
    }));
  }

  async #waitFor<T>(step: () => T | typeof WAIT): Promise<T> {
    for (;;) {
      const r = step();
      if (r !== WAIT) return r;
      // Nothing queued: read what waited in the kernel while the consumer was busy.
      if (this.#handleStopped && this.#gathering === undefined && !this.#paused) this.#readOn();
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** Counts a pull in flight until it settles; later pulls chain after it. */
  #track<T>(p: Promise<T>): Promise<T> {
    this.#inFlight++;
    const settled = () => {
      this.#inFlight--;
    };
    this.#chain = p.then(settled, settled);
    return p;
  }

  /**
   * The next pgoutput message in stream order (or keepalive, when
   * `keepalives`); `undefined` once stopped; WAIT when nothing is buffered.
   * Throws the stream's error after everything received before it was delivered.
   */
  #poll(keepalives: boolean): PgoutputMessage | PrimaryKeepalive | undefined | typeof WAIT {
    for (;;) {
      if (this.#stopRequested) return undefined;
      if (this.#reconnecting !== undefined) return WAIT;
      if (this.#paused && this.#buffered() <= this.#options.lowWaterMark) this.#resume();
      let item: WalMessage | undefined;
      try {
        item = this.#take();
      } catch (e) {
        throw this.#fail(e as ReplicationError);
      }
      if (item !== undefined) {
        if (item.kind === "PrimaryKeepalive") {
          // In stream order: everything before it has been handed over.
          this.#tracker.keepalive(item.walEnd);
          this.#progress.lastKeepaliveTime = item.sendTime;
          this.#progress.lastKeepaliveAt = Date.now();
          if (item.replyRequested && !this.#answered.delete(Number(item.sendTime) - PG_EPOCH_US)) this.#sendStatus(false);
          if (keepalives) return item;
          continue;
        }
        if (item.kind === "BackendMessage") {
          const error = this.#backendMessage(item);
          if (error !== undefined) {
            if (this.#retry(error)) return WAIT;
            throw this.#fail(error);
          }
          continue;
        }
        if (item.kind === "Commit" || item.kind === "StreamCommit" || item.kind === "CommitPrepared") {
          this.#progress.lastCommitTime = item.commitTime;
          this.#progress.lastCommitAt = Date.now();
        } else if (item.kind === "Message" && !this.#options.deliverHeartbeats && item.prefix === HEARTBEAT_PREFIX) {
          this.#progress.heartbeatsFiltered++; // heartbeat.ts: a non-transactional message, nothing to acknowledge
          continue;
        }
        return item;
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#lost !== undefined) {
        if (this.#retry(this.#lost)) return WAIT;
        throw this.#fail(this.#lost);
      }
      return WAIT;
    }
  }

  /**
   * The next decoded item: from the current batch, else one decode of
   * everything queued. `undefined` when nothing is buffered. Throws a
   * rejected frame's DECODE_ERROR after the messages decoded before it.
   */
  #take(): WalMessage | undefined {
    for (;;) {
      const items = this.#items;
      if (items !== undefined && this.#index < items.length) return items.get(this.#index++);
      this.#items = undefined;
      if (this.#decodeError !== undefined) throw this.#decodeError;
      if (this.#queue.bytes === 0 || this.#error !== undefined) return undefined;
      const bytes = this.#queue.take();
      this.#itemsBytes = bytes.length;
      this.#index = 0;
      this.#stats.batches++;
      try {
        this.#items = this.decoder.pushBackend(bytes);
      } catch (cause) {
        // Deliver what decoded before the bad frame; nothing after it can be framed, so stop reading.
        const decoded = isPgoutputError(cause) ? cause.decoded : [];
        this.#items = { length: decoded.length, get: (i) => decoded[i]! };
        this.#decodeError = new ReplicationError(`could not decode the stream: ${(cause as Error).message}`, { code: "DECODE_ERROR", cause });
        this.#queue.clear();
        this.#socket.pause();
      }
      this.#stats.payloads += this.#items.length;
    }
  }

  /** What a backend message other than CopyData means for the stream: an error that ends it, or nothing. */
  #backendMessage(msg: BackendMessage): ReplicationError | undefined {
    switch (msg.type) {
      case "E":
        return fromErrorFields(msg.fields ?? {}, "replication failed");
      case "N": {
        const f = msg.fields ?? {};
        this.#callbacks.onNotice?.({ severity: f.V ?? f.S, code: f.C, message: f.M ?? "" });
        return undefined;
      }
      case "c": // CopyDone, CommandComplete, ReadyForQuery: the server left CopyBoth mode
      case "C":
      case "Z":
        return new ReplicationError("the server ended the replication stream", { code: "STREAM_ENDED" });
      default: // ParameterStatus and the like
        return undefined;
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  readonly #onData = (chunk: Uint8Array): void => {
    this.#lastData = Date.now();
    this.#pinged = false;
    if (this.#decodeError !== undefined || this.#phase === "closed") return;
    this.#queue.push(chunk);
    this.#stats.bytes += chunk.length;
    if (this.#phase === "starting") this.#scanStart();
    else if (this.#phase === "stopping") this.#drainForStop();
    else {
      const buffered = this.#buffered();
      if (buffered > this.#bufferedHighWater) this.#bufferedHighWater = buffered;
      if (!this.#paused && buffered >= this.#options.highWaterMark) {
        this.#socket.pause();
        this.#paused = true;
        this.#stats.pauses++;
      }
      const ping = tailKeepalive(chunk);
      if (ping !== undefined) {
        if (this.#answered.size >= 64) this.#answered.clear(); // keepalives the consumer has not reached yet
        this.#answered.add(ping);
        this.#sendStatus(false);
      }
      this.#wakeOrGather();
    }
  };

  /** Cancels a gathering pause (the socket reads on unless paused for backpressure). */
  #endGathering(): void {
    if (this.#gathering === undefined) return;
    clearTimeout(this.#gathering);
    this.#gathering = undefined;
    this.#readOn();
  }

  /**
   * Wakes a waiting consumer — or, when what is queued is small, first lets
   * more arrive: the socket is paused for `coalesceMs` so the operating
   * system gathers the walsender's small writes into one large read, and the
   * consumer wakes once for all of it. A consumer that keeps up with the
   * server otherwise wakes (and decodes) once per few hundred bytes, and that
   * per-read cost, not decoding, is what its CPU goes to.
   */
  #wakeOrGather(): void {
    if (this.#gathering !== undefined) return;
    const ms = this.#options.coalesceMs;
    if (ms > 0 && this.#wake === undefined) {
      // The consumer is busy with what it has. Once a batch's worth is queued, what the server sends
      // meanwhile waits in the kernel and comes in one read when the consumer asks again (#waitFor),
      // not in one small read per walsender write. Below that the socket is read on, so that a
      // keepalive asking for a reply is seen (and answered) at once.
      if (!this.#handleStopped && this.#queue.bytes >= GATHER_BYTES) this.#handleStopped = stopReading(this.#socket);
      return;
    }
    if (ms <= 0 || this.#wake === undefined || this.#queue.bytes >= GATHER_BYTES) {
      this.#wakeUp();
      return;
    }
    this.#handleStopped = stopReading(this.#socket);
    this.#gathering = setTimeout(() => {
      this.#gathering = undefined;
      if (this.#phase !== "closed") this.#readOn();
      this.#wakeUp();
    }, ms);
  }

  /**
   * Before CopyBothResponse: reads the server's answer to START_REPLICATION.
   * What follows the CopyBothResponse in the same batch stays for the consumer.
   */
  #scanStart(): void {
    try {
      for (let item = this.#take(); item !== undefined; item = this.#take()) {
        if (item.kind !== "BackendMessage") {
          throw new ReplicationError(`the server sent ${item.kind} before entering CopyBoth mode`, { code: "DECODE_ERROR" });
        }
        if (item.type === "W") {
          this.#phase = "streaming";
          this.#scheduleStatus();
          this.#startWaiter?.resolve();
          this.#startWaiter = undefined;
          return;
        }
        const error = this.#backendMessage(item);
        if (error !== undefined) {
          this.#fail(error);
          return;
        }
      }
    } catch (e) {
      this.#fail(e as ReplicationError);
    }
  }

  /** After CopyDone: everything the server still sends is read until its ReadyForQuery. */
  #drainForStop(): void {
    try {
      for (let item = this.#take(); item !== undefined; item = this.#take()) {
        if (item.kind === "BackendMessage" && (item.type === "Z" || item.type === "E")) {
          this.#stopped?.();
          return;
        }
      }
    } catch {
      this.#stopped?.(); // nothing more can be read
    }
  }

  readonly #onDrain = (): void => {
    if (this.#statusWanted) this.#sendStatus(false);
  };

  readonly #tick = (): void => {
    const now = Date.now();
    // A consumer busy for a whole tick gets no benefit from the socket left unread, and a keepalive
    // asking for a reply must be seen: read once (the next read stops again while it is still busy).
    if (this.#handleStopped && this.#gathering === undefined && !this.#paused && this.#phase === "streaming") this.#readOn();
    const timeout = this.#options.receiveTimeoutMs;
    if (timeout > 0 && !this.#paused && !this.#handleStopped && this.#lost === undefined) {
      const silent = now - this.#lastData;
      if (silent >= timeout) {
        this.#lose(new ReplicationError(`nothing received from the server for ${silent} ms (receiveTimeoutMs ${timeout})`, { code: "RECEIVE_TIMEOUT" }));
        return;
      }
      if (silent >= timeout / 2 && !this.#pinged && this.#phase === "streaming") {
        this.#pinged = true;
        this.#sendStatus(true);
      }
    }
  };

  /** (Re)arms the periodic status update for `statusIntervalMs` from now: called at every send and at the start. */
  #scheduleStatus(): void {
    if (this.#statusTimer !== undefined) clearTimeout(this.#statusTimer);
    this.#statusTimer = setTimeout(this.#statusDue, this.#options.statusIntervalMs);
    (this.#statusTimer as { unref?: () => void }).unref?.();
  }

  readonly #statusDue = (): void => {
    this.#statusTimer = undefined;
    this.#sendStatus(false);
    // A status update held back by a full write buffer goes out on 'drain' (which re-arms the timer);
    // until then, look again an interval later.
    if (this.#statusTimer === undefined && this.#phase === "streaming") this.#scheduleStatus();
  };

  #clearTimers(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#statusTimer !== undefined) clearTimeout(this.#statusTimer);
    this.#statusTimer = undefined;
  }

  /** Bytes received and not yet handed over: queued, plus the undelivered share of the current batch. */
  #buffered(): number {
    const items = this.#items;
    const rest = items === undefined || items.length === 0 ? 0 : Math.round((this.#itemsBytes * (items.length - this.#index)) / items.length);
    return this.#queue.bytes + rest;
  }

  #resume(): void {
    this.#paused = false;
    this.#lastData = Date.now(); // a paused socket was not silent
    if (this.#gathering === undefined) this.#readOn();
  }

  /** After a gathering pause: the handle reads again, and the socket flows unless paused for backpressure. */
  #readOn(): void {
    this.#lastData = Date.now(); // a socket not read was not silent
    if (this.#handleStopped) {
      this.#handleStopped = false;
      startReading(this.#socket, this.#paused);
    } else if (!this.#paused) this.#socket.resume();
  }

  readonly #onClientError = (e: unknown): void => {
    this.#lose(fromPgError(e, "connection error", "CONNECTION_LOST", this.#secrets));
  };

  readonly #onClientEnd = (): void => {
    this.#lose(new ReplicationError("the connection closed", { code: "CONNECTION_LOST" }));
  };

  /**
   * The socket is gone (or is given up on): before the start that is the
   * failure; after it, the consumer gets what was received first.
   */
  #lose(error: ReplicationError): void {
    if (this.#phase === "stopping") {
      this.#stopped?.();
      return;
    }
    if (this.#stopRequested || this.#lost !== undefined || this.#error !== undefined) return;
    this.#lost = error;
    this.#socket.destroy();
    if (this.#phase === "starting") this.#fail(error);
    else this.#wakeUp();
  }

  /** Sends a standby status update; with one already waiting in the write buffer, only notes that another is due (unless `force`). */
  #sendStatus(replyRequested: boolean, force = false): void {
    if ((this.#phase !== "streaming" && !force) || this.#lost !== undefined || this.#error !== undefined) return;
    if (!force && this.#socket.writableLength > 0) {
      this.#statusWanted = true;
      return;
    }
    this.#statusWanted = false;
    const status: Required<StandbyStatus> = {
      ...this.#tracker.status(),
      clientTime: BigInt(Date.now()) * 1000n,
      replyRequested,
    };
    this.#socket.write(copyDataFrame(encodeStandbyStatusUpdate(status)));
    if (this.#phase === "streaming") this.#scheduleStatus();
    this.#stats.statusUpdates++;
    this.#callbacks.onStatus?.(status);
  }

  /** The first failure ends the stream (later ones are ignored); returns the stream's error, for throwing. */
  #fail(error: ReplicationError): ReplicationError {
    if (this.#error !== undefined || this.#stopRequested) return this.#error ?? error;
    if (this.#phase === "starting" && this.#reconnecting !== undefined) {
      // A reconnect attempt failed to start: that attempt's failure, for #reconnectLoop to judge.
      this.#startWaiter?.reject(error);
      this.#startWaiter = undefined;
      return error;
    }
    this.#error = error;
    this.#clearTimers();
    this.#startWaiter?.reject(error);
    this.#startWaiter = undefined;
    // A failure before the start is replicate()'s rejection, not a stream error.
    if (this.#phase === "streaming" || this.#phase === "reconnecting") {
      try {
        this.#callbacks.onError?.(error);
      } catch {
        /* a throwing callback must not break the cleanup */
      }
    }
    void this.#close();
    this.#wakeUp();
    return error;
  }

  // --- reconnect

  /** Message iteration: keeps `redelivering` for the transaction the consumer is in. */
  #markRedelivery(m: PgoutputMessage): void {
    if (this.#spanEnded) {
      this.#spanEnded = false;
      this.#redelivering = false;
    }
    const kind = m.kind;
    if (kind === "Begin" || kind === "BeginPrepare") {
      const lsn = kind === "Begin" ? m.finalLsn : m.prepareLsn;
      this.#redelivering = lsn <= this.#redeliverBegin;
      if (lsn > this.#beginSeen) this.#beginSeen = lsn;
    } else if (kind === "Commit" || kind === "Prepare") this.#spanEnded = this.#redelivering;
  }

  /** Starts a reconnect for a retryable `error` when the policy allows; returns whether one runs (the pull waits for it). */
  #retry(error: ReplicationError): boolean {
    if (this.#reconnecting !== undefined) return true;
    if (this.#reconnect === undefined || !error.retryable || this.#stopRequested || this.#error !== undefined) return false;
    this.#reconnecting = this.#reconnectLoop(error)
      .catch((e: unknown) => this.#giveUp(fromPgError(e, "could not reconnect", "CONNECTION_LOST", this.#secrets)))
      .finally(() => {
        this.#reconnecting = undefined;
        this.#wakeUp();
      });
    return true;
  }

  async #reconnectLoop(cause: ReplicationError): Promise<void> {
    const { policy, connect } = this.#reconnect!;
    const since = Date.now();
    this.#redeliverEnd = this.#tracker.handedOver;
    this.#redeliverBegin = this.#beginSeen;
    await this.#detach();
    for (let attempt = 1; ; attempt++) {
      if (this.#stopRequested) return;
      if (attempt > policy.maxAttempts) return this.#giveUp(cause);
      const delayMs = backoffDelay(attempt, policy);
      this.#tell(() => this.#callbacks.onReconnect?.({ attempt, delayMs, cause }));
      if (this.#stopRequested) return; // stopped from the callback
      const wait = cancellableSleep(delayMs);
      this.#cancelWait = wait.cancel;
      await wait.done;
      this.#cancelWait = undefined;
      if (this.#stopRequested) return;
      const startLsn = this.lastAckedLsn;
      try {
        const conn = await this.#connectWithin(connect, startLsn);
        if (this.#stopRequested) {
          await conn.client.end().catch(() => {});
          return;
        }
        this.#attach(conn);
        await this.start(conn.command);
      } catch (e) {
        const error = fromPgError(e, "could not reconnect", "CONNECTION_LOST", this.#secrets);
        if (this.#stopRequested) return;
        if (this.#phase === "starting") await this.#detach();
        if (!error.retryable) return this.#giveUp(error);
        cause = error;
        continue;
      }
      this.#stats.reconnects++;
      this.#tell(() => this.#callbacks.onReconnected?.({ attempts: attempt, startLsn, downtimeMs: Date.now() - since }));
      return;
    }
  }

  /**
   * A new connection, given up on (a retryable CONNECT_FAILED) after
   * `receiveTimeoutMs`: a server that accepts the TCP connection and then
   * says nothing must not hold the reconnect forever. The connection being
   * opened is ended (the abort), or closed should it still come.
   */
  #connectWithin(connect: NonNullable<StreamSetup["reconnect"]>["connect"], startLsn: bigint): Promise<StreamConnection> {
    const ms = this.#options.receiveTimeoutMs;
    const abort = new AbortController();
    const attempt = connect(startLsn, abort.signal);
    if (ms <= 0) return attempt;
    let timer: ReturnType<typeof setTimeout> | undefined;
    attempt.then((conn) => (abort.signal.aborted ? conn.client.end().catch(() => {}) : undefined), () => {});
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new ReplicationError(`no connection within receiveTimeoutMs (${ms} ms)`, { code: "CONNECT_FAILED" }));
      }, ms);
    });
    return Promise.race([attempt, timeout]).finally(() => clearTimeout(timer));
  }

  /** A callback that throws must not break the reconnect. */
  #tell(call: () => void): void {
    try {
      call();
    } catch {
      /* the consumer's problem, not the stream's */
    }
  }

  /** Ends the stream with the error that made reconnecting hopeless. */
  #giveUp(error: ReplicationError): void {
    this.#reconnecting = undefined; // #fail ends the stream only outside a reconnect's start
    this.#fail(error);
  }

  /** A new connection becomes the stream's, in the state `start()` expects. */
  #attach(conn: StreamConnection): void {
    this.#client = conn.client;
    this.#socket = conn.socket;
    this.#lost = undefined;
    this.#phase = "starting";
    this.#client.on("error", this.#onClientError);
    this.#client.on("end", this.#onClientEnd);
  }

  /**
   * Lets the current connection go: its events and bytes no longer reach
   * the stream, what is queued or decoded from it is dropped, views of its
   * batches go stale (decoder reset), the open transaction is forgotten.
   */
  async #detach(): Promise<void> {
    this.#phase = "reconnecting";
    this.#clearTimers();
    if (this.#gathering !== undefined) clearTimeout(this.#gathering);
    this.#gathering = undefined;
    const client = this.#client;
    const socket = this.#socket;
    client.removeListener("error", this.#onClientError);
    client.removeListener("end", this.#onClientEnd);
    socket.removeListener("data", this.#onData);
    socket.removeListener("drain", this.#onDrain);
    this.#queue.clear();
    this.#items = undefined;
    this.#index = 0;
    this.#itemsBytes = 0;
    this.#paused = false;
    this.#handleStopped = false;
    this.#statusWanted = false;
    this.#pinged = false;
    this.#answered.clear();
    this.decoder.reset();
    this.#tracker.restart();
    this.#onRestart?.();
    let timeout: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([client.end().catch(() => {}), new Promise<void>((resolve) => (timeout = setTimeout(resolve, 1000)))]);
    clearTimeout(timeout);
    socket.destroy();
  }

  /** Closes the connection (Terminate, then the socket, which is destroyed if the server does not close it) and ends the stream. */
  async #close(): Promise<void> {
    if (this.#phase === "closed") return;
    this.#phase = "closed";
    this.#endGathering();
    this.#queue.clear();
    const monitor = this.#monitor?.close().catch(() => {});
    let timeout: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.#client.end().catch(() => {}),
      new Promise<void>((resolve) => (timeout = setTimeout(resolve, 1000))),
    ]);
    clearTimeout(timeout);
    this.#socket.destroy();
    await monitor;
    this.#resolveClosed(this.#error);
    this.#wakeUp();
  }
}
