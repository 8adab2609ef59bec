/**
 * Slot health (`stream.health()`, the `health` and `heartbeat` options):
 * what the server says about the slot (slot-state.ts, read on the side
 * connection) next to what the stream itself knows — positions, counters,
 * the last commit's and keepalive's timestamps — and the rates since the
 * previous sample. Nothing is polled and no side connection is opened
 * unless `health()` is called, `health.intervalMs` or `heartbeat` is set.
 */
import type { ReplicationError } from "./errors.ts";
import { Heartbeat, type HeartbeatOptions, type HeartbeatStats } from "./heartbeat.ts";
import { lostReason, readSlotState, slotLostError, slotMissingError, type SlotState } from "./slot-state.ts";
import type { SideConnection } from "./side-connection.ts";

/** `replicate()`'s `health` option: sample `stream.health()` every `intervalMs` and pass it to `onHealth`. */
export interface HealthOptions {
  intervalMs: number;
}

/** Timestamps the stream records as messages reach the consumer. */
export interface StreamProgress {
  /** Commit time (µs since the Unix epoch) of the last commit reached, and when it was reached (ms). */
  lastCommitTime: bigint | undefined;
  lastCommitAt: number | undefined;
  /** Send time (µs since the Unix epoch) of the last keepalive reached, and when (ms). */
  lastKeepaliveTime: bigint | undefined;
  lastKeepaliveAt: number | undefined;
  /** Heartbeat messages filtered out of the stream. */
  heartbeatsFiltered: number;
}

/** When the last commit reached the consumer, how long after it committed (ms); `undefined` before the first. */
export function commitLagMs(p: StreamProgress): number | undefined {
  return p.lastCommitTime === undefined || p.lastCommitAt === undefined ? undefined : Math.max(0, p.lastCommitAt - Number(p.lastCommitTime / 1000n));
}

/** What the monitor reads of the stream. */
export interface HealthSource {
  readonly slotName: string;
  readonly lastAckedLsn: bigint;
  readonly lastReceivedLsn: bigint;
  /** The stream's counters (`ReplicationStats`) the samples report. */
  readonly stats: { readonly bytes: number; readonly payloads: number };
  readonly progress: StreamProgress;
}

export interface ReplicationHealth {
  /** When sampled (ms since the Unix epoch). */
  at: number;
  /**
   * The server's view of the slot (pg_replication_slots + pg_stat_replication +
   * pg_current_wal_lsn()): confirmed flush, current WAL, lag and retained bytes,
   * wal_status, safe_wal_size, invalidation_reason, conflicting, failover, active pid.
   */
  slot: SlotState;
  /** current WAL − the highest position this stream received, in bytes (what the walsender has not sent yet, or is in flight). */
  receiveLagBytes: bigint;
  /** The stream's own positions. */
  lastAckedLsn: bigint;
  lastReceivedLsn: bigint;
  /** When the last commit reached the consumer, how long after it committed (ms): the stream's delay behind the source. */
  commitLagMs: number | undefined;
  /** Milliseconds since the last keepalive's send time (a walsender that sends nothing else keeps sending these). */
  sinceKeepaliveMs: number | undefined;
  /** Why the slot is unusable (lostReason), when it is. */
  lost: string | undefined;
  /** Socket bytes and decoded messages received so far. */
  bytes: number;
  messages: number;
  /** Messages and bytes per second since the previous sample (or since the start). */
  messagesPerSecond: number;
  bytesPerSecond: number;
  heartbeats: (HeartbeatStats & { filtered: number }) | undefined;
}

/** What `onSlotLost` gets when `slot.onLost: "recreate"` replaced an invalidated slot. */
export interface SlotLostEvent {
  slot: string;
  /** The invalidation reason. */
  reason: string;
  /** The old slot's confirmed position: changes after it ... */
  lostFrom: bigint;
  /** ... and before the new slot's consistent point are lost. */
  lostTo: bigint;
}

export class HealthMonitor {
  readonly #side: SideConnection;
  readonly #serverVersion: number;
  readonly #onHealth: ((health: ReplicationHealth) => void) | undefined;
  /** Ends the stream (set by bind). */
  #fail: (e: ReplicationError) => void = () => {};
  #source: HealthSource | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #heartbeat: Heartbeat | undefined;
  #previous: { at: number; bytes: number; messages: number };
  #closed = false;

  constructor(
    side: SideConnection, serverVersion: number,
    options: { health: HealthOptions | undefined; heartbeat: Required<HeartbeatOptions> | undefined },
    callbacks: { onHealth?: ((health: ReplicationHealth) => void) | undefined },
  ) {
    this.#side = side;
    this.#serverVersion = serverVersion;
    this.#onHealth = callbacks.onHealth;
    this.#previous = { at: Date.now(), bytes: 0, messages: 0 };
    if (options.heartbeat !== undefined) this.#heartbeat = new Heartbeat(side, options.heartbeat);
    if (options.health !== undefined) {
      this.#timer = setInterval(() => void this.#sample(), options.health.intervalMs);
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** The stream to report on, and how to end it when the sampler finds the slot gone (set by the stream's constructor). */
  bind(source: HealthSource, fail: (e: ReplicationError) => void): void {
    this.#source = source;
    this.#fail = fail;
  }

  /** The heartbeats' counters so far, when heartbeats are on (a copy). */
  get heartbeats(): HeartbeatStats | undefined {
    return this.#heartbeat === undefined ? undefined : { ...this.#heartbeat.stats };
  }

  /** Whether the side connection was closed (the stream ended): a sample would open it again. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Whether the side connection was opened (for tests). */
  get sideOpened(): boolean {
    return this.#side.opened;
  }

  /**
   * One sample. Rejects with SLOT_MISSING when the slot is gone; a lost
   * slot is a sample with `lost` set (the interval sampler also ends the
   * stream with SLOT_LOST then).
   */
  async health(o: { rates?: boolean } = {}): Promise<ReplicationHealth> {
    const source = this.#source;
    if (source === undefined) throw new Error("health() before the stream started");
    const slot = await readSlotState((sql) => this.#side.query(sql), this.#serverVersion, source.slotName);
    if (slot === undefined) throw slotMissingError(source.slotName);
    const now = Date.now();
    const stats = source.stats;
    const p = source.progress;
    const seconds = Math.max(1e-3, (now - this.#previous.at) / 1000);
    const h: ReplicationHealth = {
      at: now,
      slot,
      receiveLagBytes: slot.currentWalLsn > source.lastReceivedLsn ? slot.currentWalLsn - source.lastReceivedLsn : 0n,
      lastAckedLsn: source.lastAckedLsn,
      lastReceivedLsn: source.lastReceivedLsn,
      commitLagMs: commitLagMs(p),
      sinceKeepaliveMs: p.lastKeepaliveTime === undefined ? undefined : Math.max(0, now - Number(p.lastKeepaliveTime / 1000n)),
      lost: lostReason(slot),
      bytes: stats.bytes,
      messages: stats.payloads,
      messagesPerSecond: (stats.payloads - this.#previous.messages) / seconds,
      bytesPerSecond: (stats.bytes - this.#previous.bytes) / seconds,
      heartbeats: this.#heartbeat === undefined ? undefined : { ...this.#heartbeat.stats, filtered: p.heartbeatsFiltered },
    };
    // A metrics collection (`rates: false`) does not restart the rates of the samples `onHealth` gets.
    if (o.rates !== false) this.#previous = { at: now, bytes: stats.bytes, messages: stats.payloads };
    return h;
  }

  async #sample(): Promise<void> {
    if (this.#closed || this.#source === undefined) return;
    let h: ReplicationHealth;
    try {
      h = await this.health();
    } catch (e) {
      const err = e as ReplicationError;
      if (err.code === "SLOT_MISSING") this.#fail(err);
      return; // a failed sample (side connection trouble) is skipped; the next one reopens it
    }
    if (this.#closed) return;
    try {
      this.#onHealth?.(h);
    } catch {
      /* a throwing callback must not stop the sampling */
    }
    if (h.lost !== undefined) this.#fail(slotLostError(h.slot.name, h.lost));
  }

  /** Stops sampling and heartbeats and closes the side connection. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#heartbeat?.stop();
    await this.#side.close();
  }
}
