/**
 * The one error type of the streaming client. Every way a replication
 * stream fails — bad options, a server ErrorResponse (slot in use, slot or
 * publication missing, the walsender terminated), the connection lost, the
 * server ending the stream on its own, bytes the decoder rejects — is a
 * `ReplicationError` with a stable `code`, the server's SQLSTATE when there
 * is one, and the underlying error as `cause`. A `retryable` one is
 * reconnected from by the stream itself unless `reconnect: false`; then:
 *
 * @example
 * ```ts
 * try {
 *   for await (const msg of stream) handle(msg);
 * } catch (e) {
 *   if (e instanceof ReplicationError && e.retryable) {
 *     stream = await replicate({ ...options, startLsn: stream.lastAckedLsn });
 *   } else throw e;
 * }
 * ```
 */
import { redact } from "../redact.ts";
import { brandClass } from "../brand.ts";

export type ReplicationErrorCode =
  /** The options are inconsistent (e.g. `streaming: "parallel"` with protocol 3) or the slot is unusable. */
  | "INVALID_OPTION"
  /** The connection could not be opened (retryable: a server starting up, overloaded, or gone for a moment). */
  | "CONNECT_FAILED"
  /**
   * What answered is not a PostgreSQL server: its first bytes (to the
   * startup message or the SSLRequest) are not the protocol — an HTTP, TLS
   * or SSH service on the port, or anything else. The message names the
   * host and port and shows those bytes. Not retryable: the same address
   * will answer the same way; the connection settings need fixing.
   */
  | "NOT_POSTGRES"
  /** The server sent an ErrorResponse (`sqlstate` tells which: 55006 slot in use, 42704 missing slot/publication, 57P01 terminated, ...). */
  | "SERVER_ERROR"
  /** The connection closed or failed without a server error. */
  | "CONNECTION_LOST"
  /** The server ended the replication stream without being asked (e.g. while shutting down). */
  | "STREAM_ENDED"
  /** Nothing arrived for `receiveTimeoutMs`, not even an answer to a status update asking for one (a stalled server or a half-open connection). */
  | "RECEIVE_TIMEOUT"
  /** The decoder rejected the bytes (`cause` is the `PgoutputError`; MESSAGE_TOO_LARGE for a frame over `maxMessageSize`). */
  | "DECODE_ERROR"
  // Slot health (health.ts, slot-state.ts): none of these is retryable.
  /** The slot was invalidated (wal_status lost, an invalidation reason): the changes since its position are gone; the message says what to do. */
  | "SLOT_LOST"
  /** The slot does not exist (`sqlstate` 42704 when the server said so). */
  | "SLOT_MISSING"
  /** The server is too old for an option asked for (e.g. `slot.failover` before PostgreSQL 17). */
  | "UNSUPPORTED_BY_SERVER"
  /**
   * The initial snapshot (`snapshot` option) failed or was stopped before its
   * last row: the slot's snapshot was never completed, so streaming from that
   * slot would miss rows. Recovery: drop the slot (the client drops it when it
   * still can; `slotDropped` in the message says) and start again with a new one.
   */
  | "SNAPSHOT_INCOMPLETE";

export interface ReplicationErrorDetails {
  code: ReplicationErrorCode;
  /** SQLSTATE of a server error. */
  sqlstate?: string;
  /** Severity of a server error: ERROR, FATAL, PANIC. */
  severity?: string;
  /** DETAIL of a server error. */
  detail?: string;
  /** HINT of a server error. */
  hint?: string;
  cause?: unknown;
}

export class ReplicationError extends Error {
  readonly code: ReplicationErrorCode;
  readonly sqlstate: string | undefined;
  readonly severity: string | undefined;
  readonly detail: string | undefined;
  readonly hint: string | undefined;

  /** The message, detail and hint are redacted (`redact()`): a server or `pg` may echo a connection string. */
  constructor(message: string, details: ReplicationErrorDetails) {
    super(redact(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.name = "ReplicationError";
    this.code = details.code;
    this.sqlstate = details.sqlstate;
    this.severity = details.severity;
    this.detail = details.detail === undefined ? undefined : redact(details.detail);
    this.hint = details.hint === undefined ? undefined : redact(details.hint);
  }

  /**
   * Whether reconnecting (from `lastAckedLsn`) may succeed: a lost
   * connection, a receive timeout, a stream the server ended, connection-class (08) and
   * operator-intervention (57: terminated, shutting down) SQLSTATEs, and a
   * slot still held by a dying walsender (55006).
   */
  get retryable(): boolean {
    if (this.code === "CONNECTION_LOST" || this.code === "STREAM_ENDED" || this.code === "CONNECT_FAILED" || this.code === "RECEIVE_TIMEOUT") return true;
    if (this.code !== "SERVER_ERROR" || this.sqlstate === undefined) return false;
    return this.sqlstate.startsWith("08") || this.sqlstate.startsWith("57") || this.sqlstate === "55006";
  }
}

// `instanceof ReplicationError` holds for one of the other build too (brand.ts).
brandClass(ReplicationError, "ReplicationError");

/** Type guard for errors of the streaming client (of either build, ES or CommonJS). */
export function isReplicationError(e: unknown): e is ReplicationError {
  return e instanceof ReplicationError;
}

/** The fields of pg's DatabaseError that matter here. */
interface ServerErrorLike extends Error {
  code?: string;
  severity?: string;
  detail?: string;
  hint?: string;
}

/**
 * Classifies an error from `pg`: a DatabaseError (it has a SQLSTATE `code`)
 * becomes SERVER_ERROR, anything else `fallback` (CONNECTION_LOST by default).
 * `secrets` (the connection's passwords) are removed from the texts.
 */
export function fromPgError(
  e: unknown, context: string, fallback: ReplicationErrorCode = "CONNECTION_LOST", secrets: readonly string[] = [],
): ReplicationError {
  if (e instanceof ReplicationError) return e;
  const err = e as ServerErrorLike;
  // A DatabaseError has a severity; Node's socket errors have codes too (EPIPE, ECONNRESET).
  const sqlstate = typeof err?.severity === "string" && typeof err.code === "string" && /^[0-9A-Z]{5}$/.test(err.code) ? err.code : undefined;
  const message = redact(`${context}: ${err instanceof Error ? err.message : String(e)}`, secrets);
  const clean = (text: string | undefined) => (typeof text === "string" ? redact(text, secrets) : undefined);
  if (sqlstate !== undefined) {
    return new ReplicationError(message, {
      code: "SERVER_ERROR",
      sqlstate,
      severity: err.severity,
      detail: clean(err.detail),
      hint: clean(err.hint),
      cause: e,
    });
  }
  return new ReplicationError(message, { code: fallback, cause: e });
}

/**
 * An ErrorResponse the stream read from the socket itself (its fields by
 * code: `S`/`V` severity, `C` SQLSTATE, `M` message, `D` detail, `H` hint)
 * as a SERVER_ERROR.
 */
export function fromErrorFields(fields: Readonly<Record<string, string>>, context: string): ReplicationError {
  return new ReplicationError(`${context}: ${fields.M ?? "error without a message"}`, {
    code: "SERVER_ERROR",
    sqlstate: fields.C,
    severity: fields.V ?? fields.S,
    detail: fields.D,
    hint: fields.H,
  });
}
