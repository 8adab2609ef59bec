/**
 * The life of a replication stream (stream.ts is its public face): its
 * parts wired together, and the phases they share (stream-state.ts).
 *
 * - starting: START_REPLICATION sent on the socket taken over from pg;
 *   the server's answer read until its CopyBothResponse (copy-both.ts).
 * - streaming: the socket's bytes queued (socket-reader.ts), liveness kept
 *   (liveness.ts), items read in stream order by the iteration
 *   (iteration.ts).
 * - stopping: a final status update and CopyDone sent, the server's answer
 *   read until its ReadyForQuery (or `stopTimeoutMs`).
 * - reconnecting (reconnect.ts): the connection let go, a new one taken,
 *   starting again.
 * - closed: the connection closed, `closed` resolved.
 *
 * The socket is lost (closed, failed, timed out) in stream order: the
 * consumer gets what was received first. The first failure ends the stream.
 */
import type { Client } from "pg";
import type { PgoutputDecoder } from "../decoder.ts";
import type { WalMessage } from "../walsender.ts";
import { AckTracker } from "../ack.ts";
import type { NormalizedOptions, ReplicateOptions } from "./options.ts";
import { ReplicationError, fromPgError } from "./errors.ts";
import { endClient, type PgModule, type ResolvedConnection } from "./client.ts";
import { copyDoneFrame, queryFrame } from "./frames.ts";
import type { RawSocket } from "./socket.ts";
import type { HealthMonitor } from "./health.ts";
import { Reconnector, type ReconnectHow, type StreamConnection } from "./reconnect.ts";
import { guardOf } from "./guard.ts";
import { SocketReader } from "./socket-reader.ts";
import { Liveness } from "./liveness.ts";
import { Redelivery } from "./redelivery.ts";
import { Iteration } from "./iteration.ts";
import { startAnswer, stopAnswered } from "./copy-both.ts";
import { newCounters, type StreamCounters, type StreamState } from "./stream-state.ts";

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
  reconnect?: ReconnectHow;
  /** Where to open other connections (a backfill's); absent, the stream opens none. */
  connection?: { target: ResolvedConnection; pg: PgModule | undefined };
}

export class Lifecycle {
  readonly state: StreamState = { phase: "starting", stopRequested: false, lost: undefined, error: undefined };
  readonly stats: StreamCounters = newCounters();
  readonly decoder: PgoutputDecoder;
  readonly tracker: AckTracker;
  readonly reader: SocketReader;
  readonly liveness: Liveness;
  readonly reconnector: Reconnector;
  readonly redelivery = new Redelivery();
  readonly iteration: Iteration;
  /** Resolves when the stream has ended: with the error that ended it, or `undefined` after `stop()`. Never rejects. */
  readonly closed: Promise<ReplicationError | undefined>;
  /** The current connection (replaced by a reconnect); its socket is the reader's. */
  #client: Client;
  readonly #options: NormalizedOptions;
  readonly #callbacks: StreamSetup["callbacks"];
  readonly #secrets: readonly string[];
  readonly #monitor: HealthMonitor | undefined;
  #stopping: Promise<void> | undefined;
  /** Resolves stop()'s wait for the server's ReadyForQuery (or the socket's end). */
  #stopped: (() => void) | undefined;
  #startWaiter: { resolve: () => void; reject: (e: ReplicationError) => void } | undefined;
  #resolveClosed!: (e: ReplicationError | undefined) => void;

  constructor(setup: StreamSetup) {
    const o = setup.options;
    const state = this.state;
    const stats = this.stats;
    const tracker = (this.tracker = new AckTracker({ mode: o.ack, start: setup.start }));
    this.#client = setup.client;
    this.decoder = setup.decoder;
    this.#options = o;
    this.#callbacks = setup.callbacks;
    this.#secrets = setup.secrets;
    this.#monitor = setup.monitor;
    const reader = (this.reader = new SocketReader(setup.socket, setup.decoder, o, state, stats));
    this.liveness = new Liveness(reader, o, state, stats, { status: () => tracker.status(), lose: (e) => this.lose(e), onStatus: setup.callbacks.onStatus });
    this.reconnector = new Reconnector(setup.reconnect, { receiveTimeoutMs: o.receiveTimeoutMs, secrets: setup.secrets }, state, stats, {
      lastAckedLsn: () => tracker.confirmed,
      outage: () => this.redelivery.outage(tracker.handedOver),
      detach: () => this.#detach(),
      attach: (conn) => this.#attach(conn),
      start: (command) => this.start(command),
      fail: (e) => void this.#fail(e),
      wakeUp: () => reader.wakeUp(),
      onReconnect: setup.callbacks.onReconnect,
      onReconnected: setup.callbacks.onReconnected,
    });
    this.iteration = new Iteration({
      state, stats, tracker, reader, liveness: this.liveness, reconnector: this.reconnector, redelivery: this.redelivery,
      deliverHeartbeats: o.deliverHeartbeats, derived: { relationChanges: o.relationChanges, ddl: o.ddl, userMessages: o.userMessages }, stopAt: o.stopAt,
      onNotice: setup.callbacks.onNotice, fail: (e) => this.#fail(e), stop: () => this.stop(),
      decoder: setup.decoder,
    });
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.#client.on("error", this.#onClientError);
    this.#client.on("end", this.#onClientEnd);
  }

  /** Takes the socket over from pg, sends START_REPLICATION; resolves once the server entered CopyBoth mode. */
  start(command: string): Promise<void> {
    const started = new Promise<void>((resolve, reject) => (this.#startWaiter = { resolve, reject }));
    guardOf(this.#client)?.detach(); // from here on the stream bounds what it reads, and times silence itself
    const socket = this.reader.socket;
    this.reader.attach(socket, this.#onData);
    this.liveness.start(socket);
    socket.write(queryFrame(command));
    return started;
  }

  /** See `ReplicationStream.stop`. Idempotent. */
  stop(): Promise<void> {
    return (this.#stopping ??= this.#stop());
  }

  async #stop(): Promise<void> {
    const state = this.state;
    state.stopRequested = true;
    this.tracker.freeze(); // lastAckedLsn from here on is what the final status update reports
    this.reconnector.cancel();
    this.reader.wakeUp();
    this.#startWaiter?.reject(new ReplicationError("stopped before the stream started", { code: "CONNECTION_LOST" }));
    this.#startWaiter = undefined;
    this.liveness.stop();
    this.reader.release(); // the server's answer must get through
    if (state.phase === "streaming" && state.error === undefined && state.lost === undefined) {
      state.phase = "stopping";
      this.liveness.send(false, true); // what it carries is lastAckedLsn from here on (the tracker is frozen)
      this.reader.socket.write(copyDoneFrame());
      let timeout: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.#stopped = resolve;
        timeout = setTimeout(resolve, this.#options.stopTimeoutMs);
        this.#drainForStop(); // the answer may be queued already
      });
      clearTimeout(timeout);
    }
    await this.reconnector.running; // a connection it is opening is closed by it
    await this.#close();
  }

  /**
   * The socket is gone (or is given up on): before the start that is the
   * failure; after it, the consumer gets what was received first.
   */
  lose(error: ReplicationError): void {
    const state = this.state;
    if (state.phase === "stopping") {
      this.#stopped?.();
      return;
    }
    if (state.stopRequested || state.lost !== undefined || state.error !== undefined) return;
    state.lost = error;
    this.reader.socket.destroy();
    if (state.phase === "starting") this.#fail(error);
    else this.reader.wakeUp();
  }

  readonly #onData = (chunk: Uint8Array): void => {
    this.liveness.heard();
    const phase = this.state.phase;
    if (this.reader.failed || phase === "closed") return;
    this.reader.push(chunk);
    if (phase === "starting") this.#scanStart();
    else if (phase === "stopping") this.#drainForStop();
    else {
      this.reader.backpressure();
      this.liveness.arrived(chunk);
      this.reader.wakeOrGather();
    }
  };

  /** Before CopyBothResponse: the server's answer to START_REPLICATION (what follows the CopyBothResponse stays for the consumer). */
  #scanStart(): void {
    const answer = startAnswer(this.#take, this.#callbacks.onNotice);
    if (answer === "streaming") {
      this.state.phase = "streaming";
      this.liveness.streaming();
      this.#startWaiter?.resolve();
      this.#startWaiter = undefined;
    } else if (answer !== undefined) this.#fail(answer);
  }

  /** After CopyDone: everything the server still sends is read until its ReadyForQuery. */
  #drainForStop(): void {
    if (stopAnswered(this.#take)) this.#stopped?.();
  }

  readonly #take = (): WalMessage | undefined => this.reader.take();

  readonly #onClientError = (e: unknown): void => {
    this.lose(fromPgError(e, "connection error", "CONNECTION_LOST", this.#secrets));
  };

  readonly #onClientEnd = (): void => {
    this.lose(new ReplicationError("the connection closed", { code: "CONNECTION_LOST" }));
  };

  /** The first failure ends the stream (later ones are ignored); returns the stream's error, for throwing. */
  #fail(error: ReplicationError): ReplicationError {
    const state = this.state;
    if (state.error !== undefined || state.stopRequested) return state.error ?? error;
    if (state.phase === "starting" && this.reconnector.running !== undefined) {
      // A reconnect attempt failed to start: that attempt's failure, for the reconnect loop to judge.
      this.#startWaiter?.reject(error);
      this.#startWaiter = undefined;
      return error;
    }
    state.error = error;
    this.liveness.stop();
    this.#startWaiter?.reject(error);
    this.#startWaiter = undefined;
    // A failure before the start is replicate()'s rejection, not a stream error.
    if (state.phase === "streaming" || state.phase === "reconnecting") {
      try {
        this.#callbacks.onError?.(error);
      } catch {
        /* a throwing callback must not break the cleanup */
      }
    }
    void this.#close();
    this.reader.wakeUp();
    return error;
  }

  /** A new connection becomes the stream's, in the state `start()` expects. */
  #attach(conn: StreamConnection): void {
    this.#client = conn.client;
    this.reader.socket = conn.socket;
    this.state.lost = undefined;
    this.state.phase = "starting";
    this.#client.on("error", this.#onClientError);
    this.#client.on("end", this.#onClientEnd);
  }

  /**
   * Lets the current connection go: its events and bytes no longer reach
   * the stream, what is queued or decoded from it is dropped, views of its
   * batches go stale (decoder reset), the open transaction is forgotten.
   */
  async #detach(): Promise<void> {
    this.state.phase = "reconnecting";
    const client = this.#client;
    const socket = this.reader.socket;
    client.removeListener("error", this.#onClientError);
    client.removeListener("end", this.#onClientEnd);
    this.liveness.detach(socket);
    this.reader.detach();
    this.decoder.reset();
    this.tracker.restart();
    this.iteration.restart();
    await endClient(client, socket);
  }

  /** Closes the connection (Terminate, then the socket, which is destroyed if the server does not close it) and ends the stream. */
  async #close(): Promise<void> {
    if (this.state.phase === "closed") return;
    this.state.phase = "closed";
    this.reader.close();
    const monitor = this.#monitor?.close().catch(() => {});
    await endClient(this.#client, this.reader.socket);
    await monitor;
    this.#resolveClosed(this.state.error);
    this.reader.wakeUp();
  }
}
