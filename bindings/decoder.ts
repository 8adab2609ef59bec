/**
 * The interface both backends implement: the wasm decoder (`WasmDecoder`)
 * and the pure-TS baseline (`BaselineDecoder`). Every test and bench runs
 * against both.
 *
 * A decoder is stateful, as the protocol requires: it keeps the relation
 * cache (Relation messages), the type cache (Type messages), and whether it
 * is inside a Stream Start / Stream Stop block (where change messages carry
 * an extra xid). Views it returns are valid until its next decode call.
 *
 * ## Errors
 * (Both backends report them from the same kernel checks:
 * bindings/kernel/decode.ts, built for wasm and for TS.) Validation is sequential:
 * the first field that is missing or invalid is reported, at the offset
 * where that field starts; a tuple's column count is compared with its
 * relation only once the whole message was read (so a truncated message is
 * INCOMPLETE even if its count is also wrong). Offsets are byte offsets in
 * the input of the call:
 * - `decode`: in the message;
 * - `decodeFramed`: in the framed bytes;
 * - `decodeBatch`: in the capture-format form of the list, as if every
 *   message were preceded by its 4-byte length (message i starts at
 *   4 * (i + 1) + the lengths of messages 0 .. i-1);
 * - `push`: in what the previous push left unfinished followed by this chunk;
 * - `decodeCopyData`: like `decodeBatch` (each payload counted as preceded by
 *   its 4-byte length); the pgoutput message of an XLogData starts 25 bytes
 *   after its payload's `w`;
 * - `pushBackend`: like `push`, in backend-protocol frames
 *   (`[type byte][Int32 length counting itself][body]`).
 * Frame-level errors: a declared length above `maxMessageSize` is
 * MESSAGE_TOO_LARGE at the length prefix (field `frameLength`); a length of
 * 0 is an INCOMPLETE message (field `tag`) at the offset where its tag would
 * be. Walsender payloads may exceed `maxMessageSize` by the 24-byte XLogData
 * header; a backend frame length below 4 is INVALID_LENGTH at the length
 * field. In a batch the messages before the failing one have updated the
 * decoder's state (and are on the error's `decoded`). A failing push also
 * drops everything after the fault (frame boundaries after it cannot be
 * trusted): the next push starts a new stream.
 *
 * @example
 * ```ts
 * const decoder = await createDecoder();
 * for (const row of rowsFromSqlSlotFunctions) {
 *   const msg = decoder.decode(row.data);
 *   if (msg.kind === "Insert") console.log(msg.relation?.name, msg.newTuple.toJSON());
 * }
 * ```
 */
import type { MessageKind, PgoutputMessage } from "./messages.ts";
import type { Relation } from "./relation.ts";
import type { WalMessage } from "./walsender.ts";
import type { ValueOptions } from "./values/options.ts";

/** A data type named by a Type (`Y`) message. */
export interface TypeInfo {
  typeId: number;
  namespace: string;
  typeName: string;
}

export interface DecoderOptions {
  /**
   * Largest message accepted, in bytes; a larger one is a `MESSAGE_TOO_LARGE`
   * error. PostgreSQL values reach 1 GB; default 1 GiB.
   */
  maxMessageSize?: number;
  /** How column values become JS values (`tuple.value()`): representations, per-type parsers, pg-types' getTypeParser, type knowledge. */
  values?: ValueOptions;
}

export interface DecodeOptions {
  /**
   * Decode as if inside (true) or outside (false) a streamed block,
   * overriding the decoder's tracked state — for messages decoded out of
   * order. The tracked state is left as the message sets it.
   */
  inStream?: boolean;
}

/** The messages of one decode call. Views are valid until the decoder's next call. */
export interface Batch<T extends { kind: string } = PgoutputMessage> extends Iterable<T> {
  /** Number of messages. */
  readonly length: number;
  /** Bytes of the input that were consumed (whole frames); the rest is an incomplete frame. */
  readonly consumed: number;
  /** The message at an index (a view). */
  get(index: number): T;
  /** The kind of the message at an index, without making a view. */
  kind(index: number): T["kind"];
  /** Every message copied out to plain objects. */
  materialize(): Record<string, unknown>[];
}

export interface PgoutputDecoder {
  /** Which implementation this is. */
  readonly backend: "wasm" | "baseline";
  /** Relations by OID, from the Relation messages seen so far. */
  readonly relations: ReadonlyMap<number, Relation>;
  /** Types by OID, from the Type messages seen so far. */
  readonly types: ReadonlyMap<number, TypeInfo>;
  /** Whether the decoder is inside a streamed block (Stream Start seen, Stream Stop not yet). Settable. */
  inStream: boolean;

  /** Decodes one pgoutput message (e.g. the `data` of one row of `pg_logical_slot_get_binary_changes`). */
  decode(message: Uint8Array, options?: DecodeOptions): PgoutputMessage;
  /** Decodes many messages in one pass. */
  decodeBatch(messages: readonly Uint8Array[]): Batch;
  /**
   * Decodes the capture format: repeated `[uint32 big-endian length][message]`.
   * Only whole frames are decoded; `consumed` tells where an incomplete last frame starts.
   */
  decodeFramed(bytes: Uint8Array): Batch;
  /**
   * Feeds a chunk of the capture format, split anywhere; returns the messages
   * completed by it. The decoder keeps an incomplete frame until the next push.
   */
  push(chunk: Uint8Array): Batch;
  /**
   * Decodes walsender CopyData payloads (as `pg` hands them over, one per
   * CopyData message): `w` XLogData, whose pgoutput message gets `walStart`,
   * `walEnd` and `sendTime`, and `k` primary keepalives. Error offsets count
   * as if each payload were preceded by its 4-byte length.
   */
  decodeCopyData(payloads: readonly Uint8Array[]): Batch<WalMessage>;
  /**
   * Feeds raw backend-protocol bytes received after START_REPLICATION, split
   * anywhere: CopyData frames (decoded as in `decodeCopyData`) and any other
   * backend message (ErrorResponse, CopyDone, ...) as a `BackendMessage`.
   * Keeps an unfinished frame until the next call. One decoder takes one
   * stream form: do not mix `push` and `pushBackend`.
   */
  pushBackend(chunk: Uint8Array): Batch<WalMessage>;
  /** Throws an `INCOMPLETE` error if a pushed frame is unfinished; then clears it. */
  end(): void;
  /** Forgets relations, types, stream state and any pushed partial frame. */
  reset(): void;
}
