/**
 * The format seam: what turns the messages of a replication stream into
 * records (records.ts). A format sees plain transactions only — Begin, its
 * changes, Commit (or BeginPrepare … Prepare, CommitPrepared,
 * RollbackPrepared) and non-transactional messages — because the pipeline
 * replays a streamed transaction as a plain one at its commit
 * (resequence.ts); snapshot rows come as `SnapshotRow` items. Views are
 * valid only during `push()`: whatever a format keeps past it, it copies.
 *
 * A format is one file that exports a `FormatDefinition`; its entry in
 * `FORMATS` (formats/index.ts) is all the CLI and the library need.
 */
import type { Batch, PgoutputDecoder } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import type { SnapshotRow } from "../snapshot-items.ts";
import type { ValueOptions, TypeKnowledge } from "../values/options.ts";
import type { Records } from "./records.ts";
import type { RelationChanged } from "../relation-changes.ts";
import type { Ddl } from "../pg/ddl.ts";

/**
 * What a format is fed: pgoutput messages (views), snapshot rows, and what
 * the pipeline derives from the messages (right after the Relation message
 * that changed a table: its RelationChanged; a DDL trigger's message: its
 * Ddl, in its place unless the format `keepsMessages`).
 */
export type FormatItem = PgoutputMessage | SnapshotRow | RelationChanged | Ddl;

/**
 * Whether a record of `item` is derived (change-id.ts): a RelationChanged,
 * or a Relation or Type message, which pgoutput sends again in each new
 * session (a restart sends them where the first run had none).
 */
export function isDerived(item: FormatItem): boolean {
  return item.kind === "RelationChanged" || item.kind === "Relation" || item.kind === "Type";
}

export interface Format {
  /** Writes the records `item` completes into `out` (bytes, then `out.end(kind)` per record). */
  push(item: FormatItem, out: Records): void;
  /** Also takes a DDL trigger's Message itself, before its Ddl item (formats that show the messages as sent). */
  readonly keepsMessages?: boolean;
  /** Forgets what it holds of an unfinished transaction (the source sends it again). */
  reset(): void;
  /**
   * Optional: the records of messages [from, to) of a decoded batch, as
   * push() would write them, without a view each (JSON Lines: whole lines
   * from the kernel); returns the index of the first message it did not
   * take (`from`: none), which the pipeline then push()es. The pipeline
   * calls it from a plain transaction's message (run.ts #takeRun), and
   * [from, to) may go on past the run: the format takes Begin, row changes
   * and Commit of plain transactions only, and stops at any other message
   * (a streamed row, a Relation, a Message, …). The pipeline sets each
   * transaction's context in `boundary(i)`, which the format calls for
   * each Begin it takes before any of its transaction's records, and for
   * each Commit after them.
   */
  pushBatch?(batch: Batch, from: number, out: Records, to: number, boundary: (index: number) => void): number;
}

/** A format option as the CLI shows it (`--option name=value`, or a flag of its own). */
export interface FormatOptionSpec {
  readonly type: "boolean" | "string" | "list";
  readonly description: string;
  /** The values a string option (or each element of a list) may take; any other is refused (formats/index.ts). */
  readonly choices?: readonly string[];
}

/** Option values: booleans, strings, or lists of strings (comma-separated on the command line). */
export type FormatOptionValues = Readonly<Record<string, boolean | string | readonly string[]>>;

/** What a format is made with. */
export interface FormatContext {
  /** The decoder the items come from: its `types` (Type messages) name user types. */
  readonly decoder: Pick<PgoutputDecoder, "types">;
  /** The database the stream comes from, when the caller knows it (Debezium's `source.db`, CloudEvents' `source`). */
  readonly database?: string;
  /** The replication slot it is read from, when known (CloudEvents' `source`). */
  readonly slot?: string;
}

export interface FormatDefinition {
  readonly name: string;
  /** One line for the CLI's help. */
  readonly summary: string;
  /** The messages as sent, streamed blocks included (no replay as plain transactions): for formats that show the stream itself. */
  readonly raw?: boolean;
  /** The options it takes; any other is refused (formats/index.ts). */
  readonly options: Readonly<Record<string, FormatOptionSpec>>;
  /**
   * Refuses (a TypeError that says why) option values it will not take, before
   * anything starts: run before the check against `options` (formats/index.ts),
   * so it may name a reason for an option it does not declare, and so it must
   * not trust a value's type.
   */
  check?(options: FormatOptionValues): void;
  /**
   * Whether, with these options, its records carry headers without which
   * they lose what they say (CloudEvents binary mode): only a sink whose
   * definition has `headers` takes them (the CLI refuses the others before
   * anything starts; sinks refuse them at the first batch, sink.ts
   * headersRefused).
   */
  headers?(options: FormatOptionValues): boolean;
  /**
   * The decoder's `values` option this format writes values with (`types`:
   * the server's catalog knowledge of enums and domains; `options`: the
   * format's, for a format whose values depend on one, such as CloudEvents'
   * `data`). A decoder made for the format must use it.
   */
  values(types?: Record<number, TypeKnowledge>, options?: FormatOptionValues): ValueOptions;
  create(context: FormatContext, options: FormatOptionValues): Format;
}
