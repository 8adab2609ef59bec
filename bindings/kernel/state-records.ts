/**
 * The records that change a decoder's state: Relation and Type messages
 * (its caches) and Stream Start / Stop (whether it is inside a streamed
 * block). The decoder walks the tape for these alone (kernel/decoder.ts).
 */
import { Relation } from "../relation.ts";
import { copyBytes } from "../copy-bytes.ts";
import { FLAG_BACKEND, FLAG_KEEPALIVE } from "../tape.ts";
import { MessageTag } from "../messages.ts";

export const TAG_RELATION = MessageTag.Relation;
export const TAG_TYPE = MessageTag.Type;
export const TAG_STREAM_START = MessageTag.StreamStart;
export const TAG_STREAM_STOP = MessageTag.StreamStop;

/**
 * The tag of a record whose message changes the decoder's state (Relation,
 * Type, Stream Start, Stream Stop), from its head word; 0 for the others.
 * Keepalives and backend messages touch no cache (and a backend 'E' is no
 * Stream Stop).
 */
export function stateTag(head: number): number {
  const tag = head & ((FLAG_KEEPALIVE | FLAG_BACKEND) << 8) ? 0 : head & 0xff;
  return tag === TAG_RELATION || tag === TAG_TYPE || tag === TAG_STREAM_START || tag === TAG_STREAM_STOP ? tag : 0;
}

/** A Relation cache entry from a validated Relation record: a private copy of the message, offsets rebased to it. */
export function relationAt(u8: Uint8Array, t: Int32Array, off: number, length: number, body: number, relationId: number): Relation {
  const n = t[body + 4]!;
  const columns = new Int32Array(2 * n);
  for (let c = 0; c < n; c++) {
    columns[2 * c] = t[body + 5 + 2 * c]! - off;
    columns[2 * c + 1] = t[body + 6 + 2 * c]!;
  }
  const nameOffset = t[body + 2]! - off;
  const nameLength = t[body + 3]!;
  const bytes = copyBytes(u8, off, off + length);
  return new Relation(bytes, {
    relationId,
    namespaceOffset: t[body]! - off,
    namespaceLength: t[body + 1]!,
    nameOffset,
    nameLength,
    replicaIdentity: bytes[nameOffset + nameLength + 1]!,
    columns,
  });
}
