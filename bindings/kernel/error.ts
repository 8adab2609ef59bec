/**
 * Turns the kernel's numeric error report (result words, see tape.ts) into
 * a PgoutputError with the protocol's field names.
 */
import * as T from "../tape.ts";
import { PgoutputError, type PgoutputErrorCode } from "../errors.ts";
import { kindOfTag } from "../messages.ts";
import { KEEPALIVE, LAYOUTS, XLOGDATA } from "../layout.ts";

const CODES: Record<number, PgoutputErrorCode> = {
  [T.E_INCOMPLETE]: "INCOMPLETE",
  [T.E_UNKNOWN_MESSAGE]: "UNKNOWN_MESSAGE",
  [T.E_INVALID_COLUMN_KIND]: "INVALID_COLUMN_KIND",
  [T.E_INVALID_VALUE]: "INVALID_VALUE",
  [T.E_INVALID_LENGTH]: "INVALID_LENGTH",
  [T.E_TRAILING_BYTES]: "TRAILING_BYTES",
  [T.E_MESSAGE_TOO_LARGE]: "MESSAGE_TOO_LARGE",
  [T.E_COLUMN_COUNT_MISMATCH]: "COLUMN_COUNT_MISMATCH",
};

const MESSAGES: Record<PgoutputErrorCode, string> = {
  INCOMPLETE: "message cut short",
  UNKNOWN_MESSAGE: "unknown message tag",
  INVALID_COLUMN_KIND: "invalid TupleData column kind (expected n, u, t or b)",
  INVALID_VALUE: "invalid value",
  INVALID_LENGTH: "invalid length or count",
  TRAILING_BYTES: "bytes after the message's last field",
  MESSAGE_TOO_LARGE: "message larger than maxMessageSize",
  COLUMN_COUNT_MISMATCH: "tuple column count differs from its relation",
  UNKNOWN_COLUMN: "unknown column",
  WRONG_COLUMN_KIND: "wrong column kind",
  STALE_VIEW: "view used after its decoder moved on",
  OUT_OF_MEMORY: "out of memory",
};

/** Per tag, the layout's field name for each kernel field code (layout.ts): "finalLsn" for Begin's F_LSN, ... */
const LAYOUT_NAMES: Record<number, Record<number, string>> = {};
/** Codes no layout field has; then, for a message without the field, the first layout name of the code. */
const FIELDS: Record<number, string> = { [T.F_TAG]: "tag", [T.F_FRAME_LENGTH]: "frameLength", [T.F_END]: "end" };
for (const l of [...LAYOUTS, XLOGDATA, KEEPALIVE]) {
  const names: Record<number, string> = (LAYOUT_NAMES[l.tag] = {});
  for (const f of l.fields) {
    names[f.code] ??= f.name;
    FIELDS[f.code] ??= f.name;
  }
}
const COLUMN_FIELDS: Record<number, string> = {
  [T.F_COLUMN_FLAGS]: "flags", [T.F_COLUMN_NAME]: "name", [T.F_COLUMN_TYPE]: "typeId", [T.F_COLUMN_TYPMOD]: "typeModifier",
};
const TUPLE_FIELDS: Record<number, string> = {
  [T.F_TUPLE_COLUMN_KIND]: "kind", [T.F_TUPLE_COLUMN_LENGTH]: "length", [T.F_TUPLE_COLUMN_VALUE]: "value",
};

export function fieldName(tag: number, field: number, column: number, tuple: number): string {
  const tupleName = tuple === T.TUPLE_OLD ? "oldTuple" : "newTuple";
  if (field === T.F_TUPLE_COLUMN_COUNT) return `${tupleName}.columnCount`;
  if (field in TUPLE_FIELDS) return `${tupleName}.column[${column}].${TUPLE_FIELDS[field]}`;
  if (field in COLUMN_FIELDS) return `columns[${column}].${COLUMN_FIELDS[field]}`;
  return LAYOUT_NAMES[tag]?.[field] ?? FIELDS[field] ?? `field ${field}`;
}

/** What the report's words do not hold but its message should say: the input, for the sizes. */
export interface ErrorInput {
  /** The kernel memory the report's offsets point into. */
  memory: Uint8Array;
  /** decode(): the one message's length. Framed input: undefined (the frame header says it). */
  messageLength: number | undefined;
  /** Framed input: `[type][Int32 length counting itself]` headers (pushBackend) rather than `[uint32 length]`. */
  backendHeaders: boolean;
  maxMessageSize: number;
}

/** A tag byte for a message: 0x5a ("Z"), or just the hex when it is no printable ASCII. */
function tagText(tag: number): string {
  const hex = `0x${tag.toString(16).padStart(2, "0")}`;
  return tag >= 0x21 && tag <= 0x7e ? `${hex} (${JSON.stringify(String.fromCharCode(tag))})` : hex;
}

/**
 * The message of a report: the code's text, with the tag of an unknown message and the size of
 * one too large, built here once so that both backends (which write the same report) say the same.
 */
function reportText(code: PgoutputErrorCode, tag: number, offset: number, input: ErrorInput | undefined): string {
  if (code === "UNKNOWN_MESSAGE") return `${MESSAGES[code]} ${tagText(tag)}`;
  if (code === "MESSAGE_TOO_LARGE" && input !== undefined) {
    const limit = `larger than maxMessageSize (${input.maxMessageSize})`;
    if (input.messageLength !== undefined) return `message of ${input.messageLength} bytes ${limit}`;
    if (offset >= 0 && offset + 4 <= input.memory.length) {
      // The report points at the frame's length field (for backend headers, past the type byte).
      const m = input.memory;
      const declared = ((m[offset]! << 24) | (m[offset + 1]! << 16) | (m[offset + 2]! << 8) | m[offset + 3]!) >>> 0;
      return `frame of ${input.backendHeaders ? declared - 4 : declared} bytes ${limit}`;
    }
  }
  return MESSAGES[code];
}

/** The kernel's error report as a PgoutputError; `shift` maps kernel offsets to the caller's input. */
export function kernelError(result: Int32Array, r: number, shift: number, messageIndex: number | undefined, input?: ErrorInput): PgoutputError {
  const code = CODES[result[r + T.R_ERROR_CODE]!] ?? "INVALID_VALUE";
  const tag = result[r + T.R_ERROR_TAG]!;
  return new PgoutputError(reportText(code, tag, result[r + T.R_ERROR_OFFSET]!, input), {
    code,
    offset: result[r + T.R_ERROR_OFFSET]! - shift,
    messageKind: kindOfTag(tag),
    field: fieldName(tag, result[r + T.R_ERROR_FIELD]!, result[r + T.R_ERROR_COLUMN]!, result[r + T.R_ERROR_TUPLE]!),
    messageIndex,
  });
}

export { MESSAGES as ERROR_TEXT };
