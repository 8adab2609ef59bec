/**
 * pgoutput-wasm/pg: a logical replication client on `pg` (the package's one
 * dependency) — `replicate()` streams decoded pgoutput messages or whole
 * transactions from a slot, with backpressure, correct acknowledgements and
 * typed errors.
 *
 * @example
 * ```ts
 * import { replicate } from "pgoutput-wasm/pg";
 * const stream = await replicate({ connection: process.env.DATABASE_URL!, slot: "app_cdc", publications: "app" });
 * for await (const msg of stream) {
 *   if (msg.kind === "Insert") console.log(msg.relation?.name, msg.newTuple.toJSON());
 * }
 * ```
 */
export { replicate } from "./replicate.ts";
// Metrics in the Prometheus text exposition format (docs/metrics.md).
export {
  METRICS_CONTENT_TYPE, formatExposition, metricsText,
  type MetricFamily, type MetricLabels, type MetricSample, type MetricsSource,
} from "../metrics/exposition.ts";
export type { StreamMetricsOptions } from "./stream-metrics.ts";
export { ReplicationStream, type ReplicationStats, type StreamItem } from "./stream.ts";
export type { ReplicateOptions, SlotOptions, StreamingMode } from "./options.ts";
export type { AckMode } from "../ack.ts";
// Slot health, heartbeats, publications, reconnects.
export type { HealthOptions, ReplicationHealth, SlotLostEvent, StreamProgress } from "./health.ts";
export type { SlotState } from "./slot-state.ts";
export type { PublicationOptions, PublicationReport, PublicationTable } from "./publication.ts";
export { HEARTBEAT_PREFIX, type HeartbeatOptions } from "./heartbeat.ts";
// Schema changes and DDL capture.
export type { RelationChange, RelationChanged } from "../relation-changes.ts";
export { DDL_PREFIX, ddlCaptureInstalled, installDdlCapture, removeDdlCapture, type Ddl, type DdlCaptureOptions, type DdlObject } from "./ddl.ts";
export type { ReconnectOptions, ReconnectEvent, ReconnectedEvent } from "./reconnect.ts";
export { SnapshotReplication, type MaterializedSnapshotRow, type SnapshotComplete, type SnapshotItem, type SnapshotRow } from "./snapshot.ts";
export type { SnapshotOptions, SnapshotProgress, SnapshotReplicateOptions } from "./snapshot-options.ts";
export type { BackfillOptions, BackfillRun, BackfillStats } from "./backfill.ts";
export type { BackfillComplete, BackfillItem, BackfillProgress, BackfillRow } from "../backfill-items.ts";
export { ReplicationError, isReplicationError, type ReplicationErrorCode } from "./errors.ts";
export {
  TransactionAssembler,
  type AssemblerOptions,
  type LogicalMessage,
  type MaterializedMessage,
  type StreamBlock,
  type StreamEnd,
  type Transaction,
  type TransactionItem,
} from "./transactions.ts";
