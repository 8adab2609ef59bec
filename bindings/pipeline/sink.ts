/**
 * The sink seam: where records go, and the one contract acknowledgements
 * rest on. `write(records)` resolves only once every record of the batch is
 * durable at the destination (written and flushed, or accepted by the
 * broker); the pipeline confirms a transaction's end to the slot only after
 * the batches holding its records, and every batch before them, resolved
 * (run.ts). So whatever a crash interrupts is sent again, and the
 * destination, given each record's id, can drop what it already has.
 *
 * Rules a sink follows:
 * - resolve a write only when its records are durable; reject only for a
 *   failure that retrying will not fix (the pipeline then stops without
 *   acknowledging that batch), with a `SinkError` that names the sink, the
 *   destination and the remedy;
 * - retry what can succeed later (a broker restarting) itself, with backoff;
 * - several writes may be in flight: keep the records of one subject in
 *   order, even across a retry;
 * - own the batch from `write()` until the write settles (the pipeline does
 *   not touch it meanwhile), and keep no view of it afterwards;
 * - `delivered()` (optional): where the destination already is, read from
 *   it at start and after a reconnect, so that redeliveries are skipped
 *   even when the destination's own deduplication has forgotten them.
 *
 * A sink is one file that exports a `SinkDefinition`; its entry in `SINKS`
 * (sinks/index.ts) is all the CLI and the library need.
 */
import type { MetricFamily } from "../metrics/exposition.ts";
import type { ChangePosition } from "./change-id.ts";
import type { Records } from "./records.ts";

export interface Sink {
  /** Short name for messages and metrics (`stdout`, `file`, `nats`, ...). */
  readonly name: string;
  /** Takes the batch; resolves once it is durable. */
  write(records: Records): Promise<void>;
  /**
   * Also hand over batches that hold only transaction ends (no records):
   * for a sink that gathers a transaction's records, which may come in
   * several batches, into one message, and must see where it ends.
   */
  readonly transactionEnds?: boolean;
  /** The last position the destination holds, when it can tell. */
  delivered?(): Promise<ChangePosition | undefined>;
  /** Waits for the writes in flight, then releases what it holds. */
  close(): Promise<void>;
  /** Its metrics (in flight, acknowledged, retries, permanent errors) in the Prometheus text format; every sink of `SINKS` has them (sinks/meter.ts). */
  metrics?(): Promise<string>;
  /** The same as families, for `metricsText()` with other sources. */
  collectMetrics?(): readonly MetricFamily[];
}

/** A sink failure that retrying will not fix. */
export class SinkError extends Error {
  override readonly name = "SinkError";
  constructor(
    message: string,
    readonly details: { sink: string; target?: string; hint?: string; cause?: unknown },
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
  }

  get hint(): string | undefined {
    return this.details.hint;
  }
}

/**
 * Options given beside the target (CLI flags, a library caller's record):
 * the same names as the target URL's query parameters, which they override
 * (sinks/options.ts reads both).
 */
export type SinkOptionValues = Readonly<Record<string, string | number | boolean | undefined>>;

/**
 * A SinkError for a sink that has no place for the headers every record
 * carries (`Records.headers`: CloudEvents binary mode, whose attributes are
 * only in them): written without them, the records would lose what they
 * say. `undefined` when the records have none.
 */
export function headersRefused(records: Records, sink: string): SinkError | undefined {
  if (records.headers === undefined) return undefined;
  return new SinkError(`${sink}: the records carry their attributes in headers (cloudevents mode=binary), which ${sink} has no place for`, {
    sink, hint: "use -o mode=structured (the default) here, or a sink that carries headers: nats://, http(s)://",
  });
}

export interface SinkDefinition {
  readonly name: string;
  /** The destinations it takes: URL schemes (`nats:`), or `-` for stdout. */
  readonly schemes: readonly string[];
  /** One line for the CLI's help. */
  readonly summary: string;
  /** It carries each record's headers (Records.headersOf): a format whose records need them may write to it. */
  readonly headers?: boolean;
  create(target: string, options?: SinkOptionValues): Promise<Sink>;
}
