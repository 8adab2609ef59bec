/**
 * What a view reads of its batch (batch.ts's `TapeBatch`): the memory and
 * tape of one decode call, the relations its messages saw, and the check
 * that the decoder has not moved on. An interface of its own, so that the
 * views — which the batch creates — need not import the batch.
 */
import type { Relation } from "../relation.ts";
import type { ValueDecoder } from "../values/decoder.ts";
import type { RegionHost } from "../kernel/memory-layout.ts";

export interface BatchMemory {
  /** Memory as bytes; tape offsets index it directly. */
  readonly u8: Uint8Array;
  readonly dv: DataView;
  /** Memory as i32 words; record positions index it directly. */
  readonly t: Int32Array;
  /** Word position of message `index`'s record (0 <= index < length). */
  recordAt(index: number): number;
  /** The decoder's value parsers. */
  readonly values: ValueDecoder;
  /** Where a reader asks the decoder for a region of its memory (the JSON Lines writer's JSON area, kernel/json-area.ts). */
  readonly host?: RegionHost | undefined;
  /** The relation `oid` as message `index` saw it. */
  relationOf(index: number, oid: number): Relation | undefined;
  /** The relation the Relation message at `index` defined. */
  definedAt(index: number): Relation;
  /** Throws STALE_VIEW once the decoder has moved on. */
  live(): void;
}
