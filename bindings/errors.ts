/**
 * The one error type of the decoder. Every failure to decode — truncated
 * input, a corrupt length, an unknown tag, a tuple that does not match its
 * relation, a view touched after its memory was reused — is a
 * `PgoutputError` carrying a stable `code`, the byte `offset` where it was
 * found, the message kind and field being read, and `incomplete` when the
 * input was merely cut short (more bytes may fix it).
 *
 * @example
 * ```ts
 * try { decoder.decode(bytes); }
 * catch (e) { if (isPgoutputError(e) && e.incomplete) waitForMore(); else throw e; }
 * ```
 */
import type { MessageKind } from "./messages.ts";
import type { WalMessage } from "./walsender.ts";
import { brandClass } from "./brand.ts";

export type PgoutputErrorCode =
  /** The message ended before a field it must contain. */
  | "INCOMPLETE"
  /** The first byte is no pgoutput message tag. */
  | "UNKNOWN_MESSAGE"
  /** A TupleData column kind byte other than `n`, `u`, `t`, `b`. */
  | "INVALID_COLUMN_KIND"
  /**
   * A byte that must be one of a few values is not (e.g. `N`/`K`/`O` submessage, replica identity),
   * or a column value does not parse as its type (`tuple.value()`: see `column`, `typeId`, `format`, `cause`).
   */
  | "INVALID_VALUE"
  /** A length or count is negative or beyond what a message may hold. */
  | "INVALID_LENGTH"
  /** The message has bytes after its last field. */
  | "TRAILING_BYTES"
  /** A message is larger than the decoder's `maxMessageSize`. */
  | "MESSAGE_TOO_LARGE"
  /** A tuple's column count differs from its relation's. */
  | "COLUMN_COUNT_MISMATCH"
  /** A column name that the relation does not have, or name access without a known relation. */
  | "UNKNOWN_COLUMN"
  /** An accessor that does not fit the column (e.g. `text()` of a binary column). */
  | "WRONG_COLUMN_KIND"
  /** A view was used after its decoder decoded something else. */
  | "STALE_VIEW"
  /** The wasm memory could not grow to hold the input. */
  | "OUT_OF_MEMORY";

export interface PgoutputErrorDetails {
  code: PgoutputErrorCode;
  /** Byte offset in the input the decoder was given (for a batch: in the whole batch). */
  offset?: number;
  /** Kind of the message being decoded, when known. */
  messageKind?: MessageKind;
  /** The protocol field being read, e.g. `finalLsn` or `newTuple.column[3].length`. */
  field?: string;
  /** Index of the message within its batch. */
  messageIndex?: number;
  /** True when the input was cut short and more bytes could complete it. */
  incomplete?: boolean;
  /** A value error: index of the column whose value failed to parse. */
  column?: number;
  /** A value error: that column's name, when the relation is known. */
  columnName?: string;
  /** A value error: the type OID the value was parsed as. */
  typeId?: number;
  /** A value error: the column's format. */
  format?: "text" | "binary";
  /** What was thrown underneath (a user parser's error, `JSON.parse`'s SyntaxError). */
  cause?: unknown;
}

export class PgoutputError extends Error {
  readonly code: PgoutputErrorCode;
  readonly offset: number | undefined;
  readonly messageKind: MessageKind | undefined;
  readonly field: string | undefined;
  readonly messageIndex: number | undefined;
  readonly incomplete: boolean;
  readonly column: number | undefined;
  readonly columnName: string | undefined;
  readonly typeId: number | undefined;
  readonly format: "text" | "binary" | undefined;
  /**
   * For an error in a batch (decodeBatch, decodeFramed, push, ...): the
   * messages decoded before the failing one, as views valid until the
   * decoder's next call. They were applied to the decoder's state.
   */
  decoded: readonly WalMessage[] = [];
  /** The message and details as given, before `describe` appended the location. */
  readonly #reason: string;
  readonly #details: PgoutputErrorDetails;

  constructor(message: string, details: PgoutputErrorDetails) {
    super(describe(message, details), details.cause !== undefined ? { cause: details.cause } : undefined);
    this.#reason = message;
    this.#details = details;
    this.name = "PgoutputError";
    this.code = details.code;
    this.offset = details.offset;
    this.messageKind = details.messageKind;
    this.field = details.field;
    this.messageIndex = details.messageIndex;
    this.incomplete = details.incomplete ?? details.code === "INCOMPLETE";
    this.column = details.column;
    this.columnName = details.columnName;
    this.typeId = details.typeId;
    this.format = details.format;
  }

  /**
   * The same error with more details (its message rebuilt from them): how a
   * value error learns the column and type it happened in, as it passes up
   * from the parser through the value decoder to the tuple.
   */
  withDetails(more: Omit<PgoutputErrorDetails, "code">): PgoutputError {
    const details: PgoutputErrorDetails = { ...this.#details };
    for (const [k, v] of Object.entries(more)) if (v !== undefined) (details as unknown as Record<string, unknown>)[k] = v;
    return new PgoutputError(this.#reason, details);
  }
}

function describe(message: string, d: PgoutputErrorDetails): string {
  const where: string[] = [];
  if (d.messageKind !== undefined) where.push(d.messageKind);
  if (d.messageIndex !== undefined) where.push(`message #${d.messageIndex}`);
  if (d.field !== undefined) where.push(`field ${d.field}`);
  if (d.column !== undefined) where.push(`column ${d.column}${d.columnName !== undefined ? ` ${JSON.stringify(d.columnName)}` : ""}`);
  if (d.typeId !== undefined) where.push(`type ${d.typeId}${d.format !== undefined ? ` ${d.format}` : ""}`);
  if (d.offset !== undefined) where.push(`byte ${d.offset}`);
  return where.length > 0 ? `${message} (${where.join(", ")})` : message;
}

// `instanceof PgoutputError` holds for one of the other build too (brand.ts).
brandClass(PgoutputError, "PgoutputError");

/** Type guard: true for errors thrown by this package's decoders (of either build, ES or CommonJS). */
export function isPgoutputError(e: unknown): e is PgoutputError {
  return e instanceof PgoutputError;
}
