/**
 * A replication stream's metrics (`stream.metrics()`), and a snapshot's
 * (`snapshot.metrics()`), as Prometheus families (metrics/exposition.ts):
 * the stream's own counters (stream-state.ts), its progress and positions,
 * and — read on the side connection for each collection, as an exporter
 * reads pg_stat_* per scrape — the server's view of the slot (health.ts).
 * Every sample is labelled with the slot and the publication(s): one
 * series per stream, whatever flows through it. docs/metrics.md lists them.
 */
import { family, type MetricFamily, type MetricLabels } from "../metrics/exposition.ts";
import { commitLagMs, type ReplicationHealth, type StreamProgress } from "./health.ts";
import type { HeartbeatStats } from "./heartbeat.ts";
import type { SnapshotProgress } from "./snapshot-options.ts";
import type { ReplicationStats } from "./stream-state.ts";

/** `collectMetrics()` / `metrics()` options. */
export interface StreamMetricsOptions {
  /**
   * Read the server's view of the slot (lag, WAL retained) on the side
   * connection, opened on the first call. Default true; false leaves the
   * slot's gauges out and opens nothing.
   */
  slot?: boolean;
  /** How long that read may take before the slot's gauges are left out of this collection (default 5000 ms). */
  slotTimeoutMs?: number;
}

/** What a stream's families are made of. */
export interface StreamFigures {
  labels: MetricLabels;
  stats: ReplicationStats;
  progress: StreamProgress;
  lastReceivedLsn: bigint;
  lastAckedLsn: bigint;
  heartbeats: HeartbeatStats | undefined;
  /** The slot sample: `undefined` when not asked for, `null` when it failed. */
  health: ReplicationHealth | null | undefined;
}

/** The labels of a stream's samples. */
export function streamLabels(slot: string, publications: readonly string[]): MetricLabels {
  return { slot, publication: publications.join(",") };
}

const P = "pgoutput_wasm_";

export function streamFamilies(f: StreamFigures): MetricFamily[] {
  const l = f.labels;
  const s = f.stats;
  const counter = (name: string, help: string, value: number | bigint) => family(P + name, "counter", help, l, value);
  const gauge = (name: string, help: string, value: number | bigint | undefined | null) => family(P + name, "gauge", help, l, value);
  const lag = commitLagMs(f.progress);
  const out: MetricFamily[] = [
    counter("received_bytes_total", "Socket bytes received from the walsender after START_REPLICATION.", s.bytes),
    counter("received_messages_total", "Messages decoded from the replication connection (XLogData, keepalives, other backend messages).", s.payloads),
    counter("received_transactions_total", "Transactions reached in stream order (Commit, StreamCommit, CommitPrepared); a redelivered one counts again.", s.transactions),
    {
      name: `${P}received_changes_total`, type: "counter",
      help: "Row changes reached in stream order, by operation (insert, update, delete, truncate).",
      samples: (["insert", "update", "delete", "truncate"] as const).map((operation) => ({
        labels: { ...l, operation }, value: s[`${operation}s`],
      })),
    },
    counter("decode_seconds_total", "Time spent in the decoder's batch calls (the kernel's walk of what was received).", s.decodeMs / 1000),
    counter("decode_batches_total", "Decoder batch calls (one per batch of received bytes).", s.batches),
    counter("status_updates_total", "Standby status updates sent to the server.", s.statusUpdates),
    counter("backpressure_pauses_total", "Times the socket was paused because the consumer fell behind (highWaterMark).", s.pauses),
    counter("reconnects_total", "Reconnects that succeeded.", s.reconnects),
    counter("receive_timeouts_total", "Connections given up on because nothing was received for receiveTimeoutMs.", s.receiveTimeouts),
    counter("heartbeats_sent_total", "Heartbeat WAL messages written on the side connection.", f.heartbeats?.sent ?? 0),
    counter("heartbeat_failures_total", "Heartbeat queries that failed (best effort: the stream goes on).", f.heartbeats?.failed ?? 0),
    counter("heartbeats_filtered_total", "Heartbeat messages received and filtered out of the stream.", f.progress.heartbeatsFiltered),
    gauge("buffered_bytes", "Bytes received and not yet handed to the consumer.", s.bufferedBytes),
    gauge("last_received_lsn", "The highest WAL position decoded, as a byte position.", f.lastReceivedLsn),
    gauge("last_acked_lsn", "The acknowledged WAL position (flushed in the status updates), as a byte position.", f.lastAckedLsn),
    gauge("commit_lag_seconds", "How long after it committed the last transaction reached the consumer.", lag === undefined ? undefined : lag / 1000),
    gauge("last_commit_timestamp_seconds", "Commit time of the last transaction reached, in seconds since the Unix epoch.",
      f.progress.lastCommitTime === undefined ? undefined : Number(f.progress.lastCommitTime) / 1e6),
  ];
  if (f.health === undefined) return out;
  out.push(gauge("slot_up", "1 when the server's view of the slot was read for this collection, 0 when that failed.", f.health === null ? 0 : 1));
  const h = f.health;
  if (h === null) return out;
  const slot = h.slot;
  out.push(
    gauge("slot_lag_bytes", "WAL the slot's consumer has not confirmed: the server's current WAL position minus confirmed_flush_lsn.", slot.lagBytes),
    gauge("slot_lag_seconds", "pg_stat_replication.flush_lag of the slot's walsender (0 once it caught up); absent while no walsender streams from it.",
      slot.active ? (slot.flushLagMs ?? 0) / 1000 : undefined),
    gauge("wal_retained_bytes", "WAL the slot makes the server keep: the current WAL position minus restart_lsn.", slot.retainedBytes),
    gauge("slot_safe_wal_size_bytes", "WAL that can still be written before the slot is in danger of losing what it needs (max_slot_wal_keep_size).", slot.safeWalSize),
    gauge("receive_lag_bytes", "The server's current WAL position minus the highest position this stream received.", h.receiveLagBytes),
    gauge("slot_active", "1 while a walsender streams from the slot.", slot.active ? 1 : 0),
    gauge("slot_lost", "1 once the slot was invalidated (wal_status lost, conflicting, invalidation_reason).", h.lost === undefined ? 0 : 1),
  );
  return out;
}

/** A snapshot's families (its stream's are added by the snapshot). */
export function snapshotFamilies(labels: MetricLabels, p: SnapshotProgress): MetricFamily[] {
  return [
    family(`${P}snapshot_rows_total`, "counter", "Rows copied by the initial snapshot.", labels, p.rows),
    family(`${P}snapshot_bytes_total`, "counter", "COPY bytes received by the initial snapshot.", labels, p.bytes),
    family(`${P}snapshot_tables_copied_total`, "counter", "Tables the initial snapshot finished copying.", labels, p.tablesDone),
    family(`${P}snapshot_tables`, "gauge", "Tables in the initial snapshot.", labels, p.tables),
    family(`${P}snapshot_estimated_rows`, "gauge", "Rows the initial snapshot expects, from pg_class.reltuples (0 for tables never analyzed).", labels, p.estimatedRows),
  ];
}

/** The slot sample for a collection: `undefined` when not asked for, `null` when it failed or took too long. */
export async function sampleSlot(health: (() => Promise<ReplicationHealth>) | undefined, o: StreamMetricsOptions): Promise<ReplicationHealth | null | undefined> {
  if (o.slot === false || health === undefined) return undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), o.slotTimeoutMs ?? 5000)));
  try {
    return await Promise.race([health(), late]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
