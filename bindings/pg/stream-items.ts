import type { PgoutputMessage } from "../messages.ts";
import type { PrimaryKeepalive, WalMessage } from "../walsender.ts";
import type { Batch } from "../decoder.ts";
import type { BackfillItem } from "../backfill-items.ts";
import type { RelationChanged } from "../relation-changes.ts";
import type { Ddl } from "./ddl.ts";

/**
 * What the message iteration yields: pgoutput messages (views), keepalives
 * when asked for, a RelationChanged after a Relation message that changed
 * its table, Ddl items for the DDL trigger's messages, and a backfill's items.
 */
export type StreamItem = PgoutputMessage | PrimaryKeepalive | RelationChanged | Ddl | BackfillItem;

/** What the stream derives from the messages (on unless a pipeline asked for the messages alone: it derives them itself). */
export interface Derived {
  relationChanges: boolean;
  ddl: boolean;
  /** Deliver messages other than the DDL trigger's. */
  userMessages: boolean;
}

/** The message iteration, with the pipeline source's ways to take what is decoded already (pipeline/sources.ts). */
export type MessageIteration = AsyncIterator<StreamItem> & {
  takeReady(): StreamItem | undefined;
  readyBatch(): { readonly batch: Batch<WalMessage>; readonly index: number } | undefined;
  skipReady(n: number): void;
};
