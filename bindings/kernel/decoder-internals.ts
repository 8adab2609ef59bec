/** What the pg-logical-replication drop-in's record path and the stream's in-place reads (receive.ts) use of a tape decoder (kernel/decoder.ts `decoderInternals()`). */
import type { Batch } from "../decoder.ts";
import type { RelationDefinition } from "../views/batch.ts";
import type { WalMessage } from "../walsender.ts";
import type { MemoryLayout } from "./memory-layout.ts";

/**
 * What the record path (compat/record.ts) and receive.ts use of a decoder; not public
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
  readonly maxMessageSize: number;
  /**
   * Starts a decode call that keeps bytes [from, from + keep) of memory
   * (the views of the last call go stale; a large idle memory may be given
   * back for a fresh instance): returns where those bytes are now.
   */
  begin(from: number, keep: number): number;
  /** Decodes backend frames in place at memory [from, from + length), after `begin` (`pushBackend` without its copy). */
  decodeBackend(from: number, length: number): Batch<WalMessage>;
  /** The view of the record at word `w`, as `decode()` would return it (`definition`: what decodeOne returned). */
  view(w: number, length: number, definition: RelationDefinition | undefined): WalMessage;
}

