/**
 * A running replication stream over a `pg` connection in CopyBoth mode:
 * queues the CopyData payloads `pg` emits, decodes them lazily — everything
 * queued, in ONE `decodeCopyData` call, when the consumer has finished the
 * previous batch — pauses the socket while the consumer is behind, answers
 * keepalives, reports acknowledgements on a timer, and turns server errors
 * and connection loss into `ReplicationError`s.
 *
 * Backpressure counts the bytes received and not yet handed over: queued
 * payloads plus the rest of the decoded batch. At `highWaterMark` the socket
 * is paused; it resumes once the consumer has worked its way down to
 * `lowWaterMark`. So memory holds about one high-water mark of payloads
 * (and the decoder's copy of the batch), however far behind the consumer is.
 *
 * Views: a message yielded by the iteration is a view into the decoder's
 * memory, valid until the consumer asks for the next item (the next decode
 * happens only then). `transactions()` yields materialized objects instead.
 *
 * Created by `replicate()`; see there for an example.
 */
import type { Client } from "pg";
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { PrimaryKeepalive, StandbyStatus, WalMessage } from "../walsender.ts";
import { AckTracker } from "../ack.ts";
import { parseLsn } from "../lsn.ts";
import { encodeStandbyStatusUpdate } from "../walsender.ts";
import type { CopyDataEvent, PgConnection } from "./client.ts";
import type { NormalizedOptions, ReplicateOptions } from "./options.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import { CopyDataQueue } from "./queue.ts";
import { TransactionAssembler, type AssemblerOptions, type TransactionItem } from "./transactions.ts";

/** What the message iteration yields: pgoutput messages (views), and keepalives when asked for. */
export type StreamItem = PgoutputMessage | PrimaryKeepalive;

/** Counters of a stream, for monitoring and tests. */
export interface ReplicationStats {
  /** CopyData payloads received. */
  payloads: number;
  /** Payload bytes received. */
  bytes: number;
  /** `decodeCopyData` calls. */
  batches: number;
  /** Payload bytes received and not yet handed over: queued, or decoded and not yet iterated. */
  bufferedBytes: number;
  /** The most bytes ever buffered at once (what backpressure bounds). */
  bufferedHighWater: number;
  /** Times the socket was paused for backpressure. */
  pauses: number;
  /** Standby status updates sent. */
  statusUpdates: number;
}

/** What `replicate()` hands the stream. */
export interface StreamSetup {
  client: Client;
  connection: PgConnection;
  decoder: PgoutputDecoder;
  options: NormalizedOptions;
  /** The position already confirmed: the later of the slot's confirmed_flush_lsn and startLsn. */
  start: bigint;
  /** PostgreSQL's server_version_num. */
  serverVersion: number;
  callbacks: Pick<ReplicateOptions, "onError" | "onStatus" | "onNotice">;
}

const TAG_XLOGDATA = 0x77; // 'w'
const TAG_KEEPALIVE = 0x6b; // 'k'

/** A big-endian uint64 (an LSN) at `at`. */
function readU64(p: Uint8Array, at: number): bigint {
  const hi = ((p[at]! << 24) | (p[at + 1]! << 16) | (p[at + 2]! << 8) | p[at + 3]!) >>> 0;
  const lo = ((p[at + 4]! << 24) | (p[at + 5]! << 16) | (p[at + 6]! << 8) | p[at + 7]!) >>> 0;
  return (BigInt(hi) << 32n) | BigInt(lo);
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

  readonly #client: Client;
  readonly #connection: PgConnection;
  readonly #options: NormalizedOptions;
  readonly #callbacks: StreamSetup["callbacks"];
  readonly #tracker: AckTracker;
  readonly #queue = new CopyDataQueue();
  #batch: Batch<WalMessage> | undefined;
  #index = 0;
  /** Payload sizes of the batch (one message per payload), and the bytes of it not yet handed over. */
  #batchSizes: Int32Array = new Int32Array(0);
  #batchRemaining = 0;
  #bufferedHighWater = 0;
  #started = false;
  #paused = false;
  #stopRequested = false;
  #stopping: Promise<void> | undefined;
  #ended = false;
  #error: ReplicationError | undefined;
  #wake: (() => void) | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #claimed: string | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  #queryDone: Promise<void> = Promise.resolve();
  #startWaiter: { resolve: () => void; reject: (e: ReplicationError) => void } | undefined;
  #resolveClosed!: (e: ReplicationError | undefined) => void;
  readonly #stats = { payloads: 0, bytes: 0, batches: 0, pauses: 0, statusUpdates: 0 };

  /** Use `replicate()`. */
  constructor(setup: StreamSetup) {
    this.#client = setup.client;
    this.#connection = setup.connection;
    this.decoder = setup.decoder;
    this.#options = setup.options;
    this.#callbacks = setup.callbacks;
    this.serverVersion = setup.serverVersion;
    this.slotName = setup.options.slot.name;
    this.#tracker = new AckTracker({ mode: setup.options.ack, start: setup.start });
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.#connection.on("copyData", this.#onCopyData);
    this.#client.on("error", this.#onClientError);
    this.#client.on("end", this.#onClientEnd);
    this.#client.on("notice", this.#onNotice);
  }

  /** Sends START_REPLICATION; resolves once the server entered CopyBoth mode. Used by `replicate()`. */
  start(command: string): Promise<void> {
    const started = new Promise<void>((resolve, reject) => (this.#startWaiter = { resolve, reject }));
    this.#connection.once("replicationStart", () => {
      this.#started = true;
      this.#startWaiter?.resolve();
      this.#startWaiter = undefined;
      this.#timer = setInterval(() => this.#sendStatus(false), this.#options.statusIntervalMs);
      (this.#timer as { unref?: () => void }).unref?.();
    });
    this.#queryDone = this.#client.query(command).then(
      () => {
        if (!this.#stopRequested) this.#fail(new ReplicationError("the server ended the replication stream", { code: "STREAM_ENDED" }));
      },
      (e: unknown) => {
        if (!this.#stopRequested) this.#fail(fromPgError(e, "replication failed"));
      },
    );
    return started;
  }

  /**
   * The acknowledged position: flushed/applied in the status updates, never
   * moving backwards. Resume from here after an error.
   */
  get lastAckedLsn(): bigint {
    return this.#tracker.confirmed;
  }

  /** The highest WAL position received (written in the status updates). */
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
   * processed when `stop()` is called is not acknowledged by it: call
   * `ack()` first if it was. Idempotent.
   */
  stop(): Promise<void> {
    return (this.#stopping ??= this.#stop());
  }

  async #stop(): Promise<void> {
    this.#stopRequested = true;
    this.#wakeUp();
    this.#startWaiter?.reject(new ReplicationError("stopped before the stream started", { code: "CONNECTION_LOST" }));
    this.#startWaiter = undefined;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#queue.clear();
    if (this.#paused) this.#resume(); // the server's CopyDone must get through
    if (this.#error === undefined && this.#started && !this.#ended) {
      this.#sendStatus(false);
      this.#connection.endCopyFrom();
      let timeout: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.#queryDone,
        new Promise<void>((resolve) => (timeout = setTimeout(resolve, this.#options.stopTimeoutMs))),
      ]);
      clearTimeout(timeout);
    }
    await this.#client.end().catch(() => {});
    this.#finish();
  }

  /** Iterates pgoutput messages (views valid until the next `next()`); breaking out stops the stream. */
  [Symbol.asyncIterator](): AsyncIterator<StreamItem> {
    this.#claim("messages");
    return {
      next: () => this.#serialized(async (): Promise<IteratorResult<StreamItem>> => {
        this.#tracker.next();
        const item = await this.#nextWal(this.#options.keepalives);
        if (item === undefined) return { done: true, value: undefined };
        if (item.kind !== "PrimaryKeepalive") this.#tracker.observe(item, true);
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
    const iterator: AsyncIterableIterator<TransactionItem> = {
      next: () => this.#serialized(async (): Promise<IteratorResult<TransactionItem>> => {
        this.#tracker.next();
        for (;;) {
          const msg = await this.#nextWal(false);
          if (msg === undefined) return { done: true, value: undefined };
          if (msg.kind === "PrimaryKeepalive") continue;
          const item = assembler.push(msg);
          this.#tracker.observe(msg, item !== undefined);
          if (item !== undefined) return { done: false, value: item };
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

  /** Runs pulls one after another, as concurrent next() calls must not interleave. */
  #serialized<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.#chain.then(fn);
    this.#chain = p.catch(() => {});
    return p;
  }

  /**
   * The next pgoutput message in stream order (or keepalive, when `keepalives`):
   * from the current batch, else one decode of everything queued, else waits.
   * `undefined` once stopped; throws the stream's error after everything
   * received before it was delivered.
   */
  async #nextWal(keepalives: boolean): Promise<PgoutputMessage | PrimaryKeepalive | undefined> {
    for (;;) {
      if (this.#stopRequested) return undefined;
      if (this.#paused && this.#buffered() <= this.#options.lowWaterMark) this.#resume();
      const batch = this.#batch;
      if (batch !== undefined && this.#index < batch.length) {
        this.#batchRemaining -= this.#batchSizes[this.#index]!;
        const item = batch.get(this.#index++);
        if (item.kind === "PrimaryKeepalive") {
          // In stream order: everything before it has been handed over.
          if (this.#tracker.keepalive(item.walEnd) && item.replyRequested) this.#sendStatus(false);
          if (keepalives) return item;
          continue;
        }
        if (item.kind === "BackendMessage") continue; // not produced by decodeCopyData
        return item;
      }
      this.#batch = undefined;
      this.#batchRemaining = 0;
      if (this.#queue.length > 0) {
        try {
          this.#batch = this.#queue.drain((payloads) => {
            const sizes = new Int32Array(payloads.length);
            for (let i = 0; i < payloads.length; i++) sizes[i] = payloads[i]!.length;
            this.#batchSizes = sizes;
            this.#batchRemaining = this.#queue.bytes; // still counted until drain returns
            return this.decoder.decodeCopyData(payloads);
          });
        } catch (cause) {
          const error = new ReplicationError(`could not decode the stream: ${(cause as Error).message}`, { code: "DECODE_ERROR", cause });
          this.#fail(error);
          throw error;
        }
        this.#index = 0;
        this.#stats.batches++;
        continue;
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  readonly #onCopyData = (msg: CopyDataEvent): void => {
    if (this.#stopRequested || this.#error !== undefined) return;
    const p = msg.chunk;
    let reply = false;
    // Written = the last end of WAL received: read from the header now, before the payload waits in the queue.
    // (XLogData: 'w', walStart, walEnd, sendTime; a logical walsender sends the same LSN twice.)
    if (p[0] === TAG_XLOGDATA && p.length >= 25) {
      this.#tracker.received(readU64(p, 9));
    } else if (p[0] === TAG_KEEPALIVE && p.length >= 18) {
      this.#tracker.received(readU64(p, 1));
      reply = p[17] === 1;
    }
    this.#queue.push(p);
    this.#stats.payloads++;
    this.#stats.bytes += p.length;
    const buffered = this.#buffered();
    if (buffered > this.#bufferedHighWater) this.#bufferedHighWater = buffered;
    if (!this.#paused && buffered >= this.#options.highWaterMark) {
      this.#connection.stream.pause();
      this.#paused = true;
      this.#stats.pauses++;
    }
    // Answer at once, even when the consumer is behind, or the server may time us out.
    if (reply) this.#sendStatus(false);
    this.#wakeUp();
  };

  /** Bytes received and not yet handed over. */
  #buffered(): number {
    return this.#queue.bytes + this.#batchRemaining;
  }

  #resume(): void {
    this.#paused = false;
    this.#connection.stream.resume();
  }

  readonly #onClientError = (e: unknown): void => {
    if (!this.#stopRequested) this.#fail(fromPgError(e, "connection error"));
  };

  readonly #onClientEnd = (): void => {
    this.#ended = true;
    if (!this.#stopRequested) this.#fail(new ReplicationError("the connection closed", { code: "CONNECTION_LOST" }));
    this.#wakeUp();
  };

  readonly #onNotice = (n: { severity?: string; code?: string; message?: string }): void => {
    this.#callbacks.onNotice?.({ severity: n.severity, code: n.code, message: n.message ?? "" });
  };

  #sendStatus(replyRequested: boolean): void {
    if (!this.#started || this.#ended || this.#error !== undefined) return;
    const status: Required<StandbyStatus> = {
      ...this.#tracker.status(),
      clientTime: BigInt(Date.now()) * 1000n,
      replyRequested,
    };
    const bytes = encodeStandbyStatusUpdate(status);
    // pg's serializer copies with Buffer#copy, so hand it a Buffer.
    this.#connection.sendCopyFromChunk(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    this.#stats.statusUpdates++;
    this.#callbacks.onStatus?.(status);
  }

  /** The first failure ends the stream: later ones (the socket closing after a FATAL) are ignored. */
  #fail(error: ReplicationError): void {
    if (this.#error !== undefined || this.#stopRequested) return;
    this.#error = error;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#startWaiter?.reject(error);
    this.#startWaiter = undefined;
    if (this.#paused) this.#resume();
    // A failure before the start is replicate()'s rejection, not a stream error.
    if (this.#started) {
      try {
        this.#callbacks.onError?.(error);
      } catch {
        /* a throwing callback must not break the cleanup */
      }
    }
    void this.#client.end().catch(() => {}).then(() => this.#finish());
    this.#wakeUp();
  }

  #finish(): void {
    this.#ended = true;
    this.#connection.removeListener("copyData", this.#onCopyData as (...args: never[]) => void);
    this.#client.removeListener("notice", this.#onNotice);
    this.#resolveClosed(this.#error);
    this.#wakeUp();
  }
}
