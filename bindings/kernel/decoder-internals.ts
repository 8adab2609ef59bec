/** What the pg-logical-replication drop-in's record path reads of a tape decoder (kernel/decoder.ts `decoderInternals()`). */
import type { RelationDefinition } from "../views/batch.ts";
import type { WalMessage } from "../walsender.ts";
import type { MemoryLayout } from "./memory-layout.ts";

/**
 * What the record path (compat/record.ts) uses of a decoder; not public
 * API. Made on the first `decoderInternals()` call.
 */
export interface DecoderInternals {
  /**
   * `decode()` without a batch or a view: the same copy, kernel call,
   * checks, errors and cache updates. The message's record starts at word
   * `memory.tape >> 2` of `memory.i32`; returns the Relation it defined,
   * if it is one. Valid until the decoder's next call.
   */
  decodeOne(message: Uint8Array): RelationDefinition | undefined;
  readonly memory: MemoryLayout;
  /** The view of the record at word `w`, as `decode()` would return it (`definition`: what decodeOne returned). */
  view(w: number, length: number, definition: RelationDefinition | undefined): WalMessage;
}

