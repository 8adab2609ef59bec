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
import type { ChangePosition } from "./change-id.ts";
import type { Records } from "./records.ts";

export interface Sink {
  /** Short name for messages and metrics (`stdout`, `file`, `nats`, ...). */
  readonly name: string;
  /** Takes the batch; resolves once it is durable. */
  write(records: Records): Promise<void>;
  /** The last position the destination holds, when it can tell. */
  delivered?(): Promise<ChangePosition | undefined>;
  /** Waits for the writes in flight, then releases what it holds. */
  close(): Promise<void>;
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

export interface SinkDefinition {
  readonly name: string;
  /** The destinations it takes: URL schemes (`nats:`), or `-` for stdout. */
  readonly schemes: readonly string[];
  /** One line for the CLI's help. */
  readonly summary: string;
  /**
   * Opens the sink for `target`. `options` take the names of the target's
   * own settings (a URL's query parameters), e.g. from CLI flags, and win
   * over them; each sink parses both in one place.
   */
  create(target: string, options?: Readonly<Record<string, string>>): Promise<Sink>;
}
