/**
 * The stream's side of its socket after START_REPLICATION: bytes in,
 * decoded items out. Raw bytes are copied into a queue on arrival
 * (queue.ts) and decoded lazily — everything queued, in ONE `pushBackend`
 * call, when the consumer has finished the previous batch — so
 * `maxMessageSize` is checked at each frame's header before its bytes are
 * buffered, nothing aliases pg's buffers, and no per-message work of pg's
 * is paid. On a socket of in-place reads (in-place-reads.ts: Node, no TLS)
 * nothing is queued: the reads land in the decoder's memory (kernel/receive.ts)
 * and one decode walks them there.
 *
 * Backpressure counts the bytes received and not yet handed over: queued
 * bytes plus the rest of the decoded batch (pro rata by messages). At
 * `highWaterMark` the socket is paused; it resumes once the consumer has
 * worked its way down to `lowWaterMark`.
 *
 * Gathering (`coalesceMs`): a consumer that keeps up with the server would
 * otherwise wake (and decode) once per few hundred bytes, and that per-read
 * cost, not decoding, is what its CPU goes to. So a waiting consumer is
 * woken only after a short pause in which the socket's handle is stopped
 * and the operating system gathers the walsender's small writes into one
 * large read; and a busy consumer with a batch's worth queued leaves the
 * rest in the kernel until it asks again (socket.ts: whoever stops the
 * handle restarts it).
 *
 * The reader also keeps the time silence counts from (`lastData`): a socket
 * paused or not read is not silent.
 */
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import type { WalMessage } from "../walsender.ts";
import { isPgoutputError } from "../errors.ts";
import { decoderInternals, TapeDecoder } from "../kernel/decoder.ts";
import { ReceiveArea } from "../kernel/receive.ts";
import { inPlaceReadsOf, type InPlaceReads } from "./in-place-reads.ts";
import { ReplicationError } from "./errors.ts";
import { ByteQueue } from "./queue.ts";
import { startReading, stopReading, takeOver, type RawSocket } from "./socket.ts";
import type { StreamCounters, StreamState } from "./stream-state.ts";

/** The messages of one decode: a decoder's batch, or the messages decoded before a rejected frame. */
interface Items {
  readonly length: number;
  get(index: number): WalMessage;
}

/** Below this much queued, a waiting consumer is woken only after a short gathering pause. */
const GATHER_BYTES = 64 << 10;

export interface ReaderOptions {
  highWaterMark: number;
  lowWaterMark: number;
  coalesceMs: number;
}

export class SocketReader {
  /** The connection's socket (replaced by a reconnect: `attach`). */
  socket: RawSocket;
  /** When the socket last delivered bytes, or was let read again: silence counts from here. */
  lastData = 0;
  readonly #decoder: PgoutputDecoder;
  readonly #options: ReaderOptions;
  readonly #state: StreamState;
  readonly #stats: Pick<StreamCounters, "payloads" | "bytes" | "batches" | "pauses" | "decodeMs">;
  readonly #queue = new ByteQueue();
  /** Where reads land in place (in-place-reads.ts), for a tape decoder; made at the first attach of a socket that reads so. */
  #area: ReceiveArea | undefined;
  /** The socket's in-place reads, while attached to one: then nothing is queued. */
  #inPlace: InPlaceReads | undefined;
  #onData: ((chunk: Uint8Array) => void) | undefined;
  #items: Items | undefined;
  #index = 0;
  /** Socket bytes behind #items, for the backpressure estimate. */
  #itemsBytes = 0;
  /** A rejected frame's error, thrown once the messages decoded before it were delivered. */
  #decodeError: ReplicationError | undefined;
  #bufferedHighWater = 0;
  /** Paused for backpressure. */
  #paused = false;
  /** Whether a gathering pause stopped the socket handle (see stopReading). */
  #handleStopped = false;
  /** The timer of a short pause that lets small reads gather (see wakeOrGather). */
  #gathering: ReturnType<typeof setTimeout> | undefined;
  /** Resolves the consumer's wait for more. */
  #wake: (() => void) | undefined;

  constructor(socket: RawSocket, decoder: PgoutputDecoder, options: ReaderOptions, state: StreamState, stats: StreamCounters) {
    this.socket = socket;
    this.#decoder = decoder;
    this.#options = options;
    this.#state = state;
    this.#stats = stats;
  }

  /** Takes the socket over from pg: its bytes go to `onData` (which queues them with `push`). */
  attach(socket: RawSocket, onData: (chunk: Uint8Array) => void): void {
    this.socket = socket;
    const listener = (chunk: Uint8Array): void => {
      this.lastData = Date.now();
      onData(chunk);
    };
    takeOver(socket, listener);
    const reads = inPlaceReadsOf(socket);
    const decoder = this.#decoder;
    if (reads !== undefined && decoder instanceof TapeDecoder) {
      this.#area ??= new ReceiveArea(decoderInternals(decoder));
      reads.land(this.#area, listener);
      this.#inPlace = reads;
    }
    this.#onData = listener;
    this.lastData = Date.now();
  }

  /** Lets the socket go (a reconnect): its bytes no longer arrive, and what was queued or decoded from it is dropped. */
  detach(): void {
    this.#clearGathering();
    if (this.#onData !== undefined) this.socket.removeListener("data", this.#onData);
    this.#inPlace?.release();
    this.#inPlace = undefined;
    this.#area?.reset();
    this.#queue.clear();
    this.#items = undefined;
    this.#index = 0;
    this.#itemsBytes = 0;
    this.#paused = false;
    this.#handleStopped = false;
  }

  /** The stream ended: a gathering pause is cancelled, and what is queued dropped. */
  close(): void {
    this.endGathering();
    this.#inPlace?.release();
    this.#inPlace = undefined;
    this.#queue.clear();
  }

  /** A frame was rejected: what arrives after it cannot be framed. */
  get failed(): boolean {
    return this.#decodeError !== undefined;
  }

  /** Whether something received is not handed over yet. */
  get ready(): boolean {
    return (this.#items !== undefined && this.#index < this.#items.length) || this.#received() > 0;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Paused, or left unread by a gathering pause: time that is not silence. */
  get resting(): boolean {
    return this.#paused || this.#handleStopped;
  }

  get bufferedHighWater(): number {
    return this.#bufferedHighWater;
  }

  /** Bytes received and not yet handed over: queued, plus the undelivered share of the current batch. */
  buffered(): number {
    const items = this.#items;
    const rest = items === undefined || items.length === 0 ? 0 : Math.round((this.#itemsBytes * (items.length - this.#index)) / items.length);
    return this.#received() + rest;
  }

  /** Bytes received and not decoded yet. */
  #received(): number {
    return this.#inPlace === undefined ? this.#queue.bytes : this.#inPlace.received;
  }

  /** Queues a copy of `chunk` (a chunk that landed in place is there already). */
  push(chunk: Uint8Array): void {
    if (this.#inPlace === undefined) this.#queue.push(chunk);
    this.#stats.bytes += chunk.length;
  }

  /** After a push while streaming: the high-water figure, and the pause at `highWaterMark`. */
  backpressure(): void {
    const buffered = this.buffered();
    if (buffered > this.#bufferedHighWater) this.#bufferedHighWater = buffered;
    if (!this.#paused && buffered >= this.#options.highWaterMark) {
      this.socket.pause();
      this.#paused = true;
      this.#stats.pauses++;
    }
  }

  /** Before a pull step: a paused socket resumes once the consumer is down to `lowWaterMark`. */
  resumeBelowLowWater(): void {
    if (this.#paused && this.buffered() <= this.#options.lowWaterMark) this.resume();
  }

  /**
   * The next decoded item: from the current batch, else one decode of
   * everything queued. `undefined` when nothing is buffered. Throws a
   * rejected frame's DECODE_ERROR after the messages decoded before it.
   */
  take(): WalMessage | undefined {
    for (;;) {
      const items = this.#items;
      if (items !== undefined && this.#index < items.length) return items.get(this.#index++);
      this.#items = undefined;
      if (this.#decodeError !== undefined) throw this.#decodeError;
      const received = this.#received();
      if (received === 0 || this.#state.error !== undefined) return undefined;
      this.#itemsBytes = received;
      this.#index = 0;
      this.#stats.batches++;
      const started = performance.now();
      const inPlace = this.#inPlace;
      try {
        this.#items = inPlace === undefined ? this.#decoder.pushBackend(this.#queue.take()) : inPlace.decode();
      } catch (cause) {
        // Deliver what decoded before the bad frame; nothing after it can be framed, so stop reading.
        const decoded = isPgoutputError(cause) ? cause.decoded : [];
        this.#items = { length: decoded.length, get: (i) => decoded[i]! };
        this.#decodeError = new ReplicationError(`could not decode the stream: ${(cause as Error).message}`, { code: "DECODE_ERROR", cause });
        this.#queue.clear();
        this.socket.pause();
      }
      this.#stats.decodeMs += performance.now() - started;
      this.#stats.payloads += this.#items.length;
    }
  }

  /**
   * The decoded batch the next `take()` reads from, and its index, when it
   * has items left: a pipeline's format takes a run of them whole
   * (Format.pushBatch), then `skip()`s past them. Not the messages decoded
   * before a rejected frame (an array, not a batch).
   */
  current(): { readonly batch: Batch<WalMessage>; readonly index: number } | undefined {
    const items = this.#items;
    return items !== undefined && this.#decodeError === undefined && this.#index < items.length ? { batch: items as Batch<WalMessage>, index: this.#index } : undefined;
  }

  /** Passes over `n` items of the current batch (see current()). */
  skip(n: number): void {
    this.#index += n;
  }

  /** Waits for the next wake-up, first reading what waited in the kernel while the consumer was busy. */
  wait(): Promise<void> {
    this.readOnIfStopped();
    return new Promise<void>((resolve) => (this.#wake = resolve));
  }

  /** Wakes a waiting consumer. */
  wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /**
   * After a push while streaming: wakes a waiting consumer — or, when what
   * is queued is small, first lets more arrive: the socket is paused for
   * `coalesceMs` so that the consumer wakes once for all of it.
   */
  wakeOrGather(): void {
    if (this.#gathering !== undefined) return;
    const ms = this.#options.coalesceMs;
    if (ms > 0 && this.#wake === undefined) {
      // The consumer is busy with what it has. Once a batch's worth is queued, what the server sends
      // meanwhile waits in the kernel and comes in one read when the consumer asks again (wait()),
      // not in one small read per walsender write. Below that the socket is read on, so that a
      // keepalive asking for a reply is seen (and answered) at once.
      if (!this.#handleStopped && this.#received() >= GATHER_BYTES) this.#handleStopped = stopReading(this.socket);
      return;
    }
    if (ms <= 0 || this.#wake === undefined || this.#received() >= GATHER_BYTES) {
      this.wakeUp();
      return;
    }
    this.#handleStopped = stopReading(this.socket);
    this.#gathering = setTimeout(() => {
      this.#gathering = undefined;
      if (this.#state.phase !== "closed") this.#readOn();
      this.wakeUp();
    }, ms);
  }

  /**
   * A handle stopped while the consumer was busy, and no gathering pause
   * running: read again (a consumer busy for a whole tick gets no benefit
   * from the socket left unread, and a keepalive asking for a reply must be seen).
   */
  readOnIfStopped(): void {
    if (this.#handleStopped && this.#gathering === undefined && !this.#paused) this.#readOn();
  }

  /** Ends a gathering pause or a backpressure pause at once (stop(): the server's answer must get through). */
  release(): void {
    this.endGathering();
    if (this.resting) this.resume();
  }

  /** Cancels a gathering pause (the socket reads on unless paused for backpressure). */
  endGathering(): void {
    if (this.#gathering === undefined) return;
    this.#clearGathering();
    this.#readOn();
  }

  resume(): void {
    this.#paused = false;
    this.lastData = Date.now(); // a paused socket was not silent
    if (this.#gathering === undefined) this.#readOn();
  }

  #clearGathering(): void {
    if (this.#gathering !== undefined) clearTimeout(this.#gathering);
    this.#gathering = undefined;
  }

  /** After a gathering pause: the handle reads again, and the socket flows unless paused for backpressure. */
  #readOn(): void {
    this.lastData = Date.now(); // a socket not read was not silent
    if (this.#handleStopped) {
      this.#handleStopped = false;
      startReading(this.socket, this.#paused);
    } else if (!this.#paused) this.socket.resume();
  }
}
