/**
 * What the connection guard (guard.ts) tells a PostgreSQL server from, and
 * the errors it fails a connection with, in words a user can act on: where
 * the connection is (`host:port`), what the server's first bytes say it is
 * (NOT_POSTGRES), where a silent connect stopped (CONNECT_FAILED), which
 * frame was refused (DECODE_ERROR caused by MESSAGE_TOO_LARGE or
 * INVALID_LENGTH).
 */
import { PgoutputError, type PgoutputErrorCode } from "../errors.ts";
import { ReplicationError } from "./errors.ts";
import { quotedBytes } from "../quoted-bytes.ts";

/** How many of the server's first bytes a NOT_POSTGRES error shows. */
export const SHOWN = 24;

/**
 * What the connection waits for while pg connects: the TCP connection, the
 * one-byte answer to SSLRequest, the TLS handshake, the first answer to the
 * startup message, then the rest (authentication, ParameterStatus,
 * BackendKeyData, ReadyForQuery).
 */
export type Awaiting = "tcp" | "sslResponse" | "tls" | "startup" | "rest";

/** What sets the wait of pg's own connect timeout, as a user sets it. */
export const PG_CONNECT_TIMEOUT = "connect_timeout in the connection string (pg's connectionTimeoutMillis)";

/** `host:port` of a connection (`[v6]:port`; a Unix socket by its path), for messages. */
export function endpointName(host: string, port: string | number): string {
  if (host.startsWith("/")) return `${host}/.s.PGSQL.${port}`;
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * Whether `tag` and `length` can begin a PostgreSQL server's answer to the
 * startup message: an authentication request or NegotiateProtocolVersion
 * (8 to 2000 bytes), or an ErrorResponse or NoticeResponse (at most 30000).
 * libpq's bounds (PQconnectPoll): past them it is not PostgreSQL's
 * protocol 3 talking.
 */
export function startupAnswer(tag: number, length: number): boolean {
  switch (tag) {
    case 0x52: // R Authentication*
    case 0x76: // v NegotiateProtocolVersion
      return length >= 8 && length <= 2000;
    case 0x45: // E ErrorResponse
    case 0x4e: // N NoticeResponse
      return length >= 4 && length <= 30000;
    default:
      return false;
  }
}

/** What a service's first bytes say it is, when they say it: ", as X does". */
function serviceOf(bytes: Uint8Array): string {
  const head = String.fromCharCode(...bytes.subarray(0, 5));
  if (head === "HTTP/") return ", as an HTTP server does";
  if (head.startsWith("SSH-")) return ", as an SSH server does";
  // A TLS record: content type 20-23, then the protocol version's major byte 3.
  if (bytes.length >= 2 && bytes[0]! >= 0x14 && bytes[0]! <= 0x17 && bytes[1] === 0x03) {
    return ", as a TLS server does (PostgreSQL has no separate TLS port: it starts TLS on its own port when asked, with sslmode=require)";
  }
  return "";
}

/** The names of the backend messages pg may be asked to buffer, for the error text. */
const NAMES: Record<string, string> = {
  D: "DataRow", d: "CopyData", E: "ErrorResponse", N: "NoticeResponse", T: "RowDescription", R: "Authentication",
  A: "NotificationResponse", S: "ParameterStatus", C: "CommandComplete", W: "CopyBothResponse", H: "CopyOutResponse",
};

/** A backend message by its tag, for messages: its name (when pg may be asked to buffer it) and tag byte. */
function backendKind(tag: number): string {
  const letter = String.fromCharCode(tag);
  return `${NAMES[letter] ?? "backend"} message (0x${tag.toString(16).padStart(2, "0")})`;
}

/** NOT_POSTGRES: `server` answered `question` with `seen`. */
export function notPostgresError(server: string, question: string, seen: Uint8Array): ReplicationError {
  return new ReplicationError(
    `${server} does not speak the PostgreSQL protocol: it answered ${question} with ${quotedBytes(seen)}${serviceOf(seen)}`,
    { code: "NOT_POSTGRES" },
  );
}

/**
 * The error of a connection that got no answer for `ms` ms while
 * connecting: where it was (the TCP connection, the SSLRequest, the TLS
 * handshake, the startup message, the rest of the startup), and `setting`,
 * what sets the wait.
 */
export function connectTimeoutError(server: string, awaiting: Awaiting, lastTag: number, ms: number, setting: string): ReplicationError {
  const what = {
    tcp: `no TCP connection to ${server} within ${ms} ms`,
    sslResponse: `${server} accepted the connection but did not answer the SSLRequest for ${ms} ms`,
    tls: `${server} accepted the connection but did not finish the TLS handshake within ${ms} ms`,
    startup: `${server} accepted the connection but sent nothing for ${ms} ms while connecting (awaiting the answer to the startup message)`,
    rest: `${server} stopped answering while connecting: nothing for ${ms} ms after ${lastTag < 0 ? "its first bytes" : `its ${backendKind(lastTag)}`} (awaiting the rest of the startup: authentication, then ReadyForQuery)`,
  }[awaiting];
  return new ReplicationError(`${what}; ${setting} sets how long to wait`, { code: "CONNECT_FAILED" });
}

/** A server that closed the connection before answering `question`: what pg says ("Connection terminated unexpectedly") says less, and is not kept as the cause. */
export function hangUpError(server: string, question: string): ReplicationError {
  return new ReplicationError(
    `${server} accepted the connection and closed it without answering ${question} (PostgreSQL answers, if only with an error: is this its port? A TLS-only service closes so)`,
    { code: "CONNECT_FAILED" },
  );
}

/** The refusal of a frame header: a body over `maxMessageSize`, or an impossible length; `offset` is that of the header in the connection. */
export function frameError(tag: number, length: number, offset: number, maxMessageSize: number): ReplicationError {
  const kind = backendKind(tag);
  const tooLarge = length >= 4;
  const code: PgoutputErrorCode = tooLarge ? "MESSAGE_TOO_LARGE" : "INVALID_LENGTH";
  const text = tooLarge
    ? `the server sent a ${kind} of ${length - 4} bytes, over maxMessageSize (${maxMessageSize}); bytes count from the connection's first`
    : `the server sent a ${kind} with an invalid length ${length}; bytes count from the connection's first`;
  // The offset is that of the length field.
  const cause = new PgoutputError(text, { code, field: "frameLength", offset: offset + 1 });
  return new ReplicationError(cause.message, { code: "DECODE_ERROR", cause });
}
