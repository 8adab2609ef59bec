/**
 * Liveness of a replication stream, as PostgreSQL's walreceiver does it: a
 * standby status update every `statusIntervalMs` (from the last one sent,
 * whatever sent it) and whenever a keepalive reaching the consumer asks for
 * one; after half of `receiveTimeoutMs` with nothing received, a status
 * update asking for a reply; after all of it, a retryable RECEIVE_TIMEOUT.
 * At most one status update waits in the socket's write buffer: a server
 * that stops reading does not make the client's memory grow.
 *
 * A keepalive asking for a reply that ends what the socket delivered is
 * answered on arrival (the walsender asks when it has waited half its
 * `wal_sender_timeout`, and then has nothing else to send), which keeps the
 * connection alive while the consumer is busy; reaching it later in stream
 * order sends no second reply.
 */
import type { AckPositions } from "../ack.ts";
import type { PrimaryKeepalive, StandbyStatus } from "../walsender.ts";
import { encodeStandbyStatusUpdate } from "../walsender.ts";
import { ReplicationError } from "./errors.ts";
import { copyDataFrame } from "./frames.ts";
import { PG_EPOCH_US } from "../values/calendar.ts";
import type { RawSocket } from "./socket.ts";
import type { SocketReader } from "./socket-reader.ts";
import type { StreamCounters, StreamState } from "./stream-state.ts";

/**
 * The send time (µs since 2000, as a number) of a keepalive asking for a
 * reply that ends `chunk`, if one does: `d`, length 22, `k`, walEnd,
 * sendTime, 1. A false match costs one extra status update.
 */
function tailKeepalive(c: Uint8Array): number | undefined {
  const n = c.length;
  if (n < 23 || c[n - 1] !== 1 || c[n - 18] !== 0x6b || c[n - 19] !== 22 || c[n - 23] !== 0x64) return undefined;
  if (c[n - 22] !== 0 || c[n - 21] !== 0 || c[n - 20] !== 0) return undefined;
  const hi = ((c[n - 9]! << 24) | (c[n - 8]! << 16) | (c[n - 7]! << 8) | c[n - 6]!) >>> 0;
  const lo = ((c[n - 5]! << 24) | (c[n - 4]! << 16) | (c[n - 3]! << 8) | c[n - 2]!) >>> 0;
  return hi * 2 ** 32 + lo;
}

/** What liveness asks of the stream. */
export interface LivenessHost {
  /** The positions to report. */
  status(): AckPositions;
  /** The server was silent for `receiveTimeoutMs`: the socket is given up on. */
  lose(error: ReplicationError): void;
  onStatus: ((status: Required<StandbyStatus>) => void) | undefined;
}

export interface LivenessOptions {
  statusIntervalMs: number;
  receiveTimeoutMs: number;
}

export class Liveness {
  readonly #reader: SocketReader;
  readonly #state: StreamState;
  readonly #host: LivenessHost;
  readonly #statusIntervalMs: number;
  readonly #receiveTimeoutMs: number;
  readonly #stats: Pick<StreamCounters, "statusUpdates" | "receiveTimeouts">;
  /** The receive timeout (and reading on after a gathering pause that outlasted a tick). */
  #timer: ReturnType<typeof setInterval> | undefined;
  /** The next periodic status update: `statusIntervalMs` after the last one sent, whatever sent it. */
  #statusTimer: ReturnType<typeof setTimeout> | undefined;
  /** A status update asking for a reply was sent for the current silence. */
  #pinged = false;
  /** Send times of keepalives answered on arrival, so that reaching them later sends no second reply. */
  readonly #answered = new Set<number>();
  /** A status update was due while another still waited in the write buffer. */
  #statusWanted = false;

  constructor(reader: SocketReader, options: LivenessOptions, state: StreamState, stats: StreamCounters, host: LivenessHost) {
    this.#reader = reader;
    this.#state = state;
    this.#host = host;
    this.#statusIntervalMs = options.statusIntervalMs;
    this.#receiveTimeoutMs = options.receiveTimeoutMs;
    this.#stats = stats;
  }

  /** START_REPLICATION is being sent on `socket`: the timers run. */
  start(socket: RawSocket): void {
    socket.on("drain", this.#onDrain);
    const timeout = this.#receiveTimeoutMs;
    const period = timeout > 0 ? Math.min(this.#statusIntervalMs, timeout / 4) : this.#statusIntervalMs;
    // Twice per period, so that timer drift never stretches a timeout by a whole period.
    this.#timer = setInterval(this.#tick, Math.max(10, period / 2));
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Streaming began: the first periodic status update is due an interval from now. */
  streaming(): void {
    this.#schedule();
  }

  /** Stops the timers (stop, failure, reconnect). */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#statusTimer !== undefined) clearTimeout(this.#statusTimer);
    this.#statusTimer = undefined;
  }

  /** Lets `socket` go (a reconnect): what was pending for it is forgotten. */
  detach(socket: RawSocket): void {
    this.stop();
    socket.removeListener("drain", this.#onDrain);
    this.#statusWanted = false;
    this.#pinged = false;
    this.#answered.clear();
  }

  /** Bytes arrived: the silence is over. */
  heard(): void {
    this.#pinged = false;
  }

  /** A chunk arrived while streaming: a keepalive asking for a reply at its end is answered now. */
  arrived(chunk: Uint8Array): void {
    const ping = tailKeepalive(chunk);
    if (ping === undefined) return;
    if (this.#answered.size >= 64) this.#answered.clear(); // keepalives the consumer has not reached yet
    this.#answered.add(ping);
    this.send(false);
  }

  /** A keepalive reached in stream order: answered if it asks and was not answered on arrival. */
  reached(keepalive: PrimaryKeepalive): void {
    if (keepalive.replyRequested && !this.#answered.delete(Number(keepalive.sendTime) - PG_EPOCH_US)) this.send(false);
  }

  /** Sends a standby status update; with one already waiting in the write buffer, only notes that another is due (unless `force`). */
  send(replyRequested: boolean, force = false): void {
    const state = this.#state;
    if ((state.phase !== "streaming" && !force) || state.lost !== undefined || state.error !== undefined) return;
    const socket = this.#reader.socket;
    if (!force && socket.writableLength > 0) {
      this.#statusWanted = true;
      return;
    }
    this.#statusWanted = false;
    const status: Required<StandbyStatus> = { ...this.#host.status(), clientTime: BigInt(Date.now()) * 1000n, replyRequested };
    socket.write(copyDataFrame(encodeStandbyStatusUpdate(status)));
    if (state.phase === "streaming") this.#schedule();
    this.#stats.statusUpdates++;
    this.#host.onStatus?.(status);
  }

  readonly #onDrain = (): void => {
    if (this.#statusWanted) this.send(false);
  };

  readonly #tick = (): void => {
    const now = Date.now();
    const reader = this.#reader;
    const state = this.#state;
    if (state.phase === "streaming") reader.readOnIfStopped();
    const timeout = this.#receiveTimeoutMs;
    if (timeout > 0 && !reader.resting && state.lost === undefined) {
      const silent = now - reader.lastData;
      if (silent >= timeout) {
        this.#stats.receiveTimeouts++;
        this.#host.lose(new ReplicationError(`nothing received from the server for ${silent} ms (receiveTimeoutMs ${timeout})`, { code: "RECEIVE_TIMEOUT" }));
        return;
      }
      if (silent >= timeout / 2 && !this.#pinged && state.phase === "streaming") {
        this.#pinged = true;
        this.send(true);
      }
    }
  };

  /** (Re)arms the periodic status update for `statusIntervalMs` from now: at every send and at the start. */
  #schedule(): void {
    if (this.#statusTimer !== undefined) clearTimeout(this.#statusTimer);
    this.#statusTimer = setTimeout(this.#statusDue, this.#statusIntervalMs);
    (this.#statusTimer as { unref?: () => void }).unref?.();
  }

  readonly #statusDue = (): void => {
    this.#statusTimer = undefined;
    this.send(false);
    // A status update held back by a full write buffer goes out on 'drain' (which re-arms the timer);
    // until then, look again an interval later.
    if (this.#statusTimer === undefined && this.#state.phase === "streaming") this.#schedule();
  };
}
