/**
 * Opt-in DDL capture, as supabase/etl and pgstream do it: an event trigger
 * on `ddl_command_end` writes each DDL command into the WAL with
 * `pg_logical_emit_message(true, 'pgoutput-wasm.ddl', …)`. The message is
 * transactional: it is decoded in the transaction of the command, in commit
 * order, after the command's catalog change and before the transaction's
 * later changes; a rolled-back command leaves nothing. With
 * `ddl: { capture: true }` the stream turns those messages into `Ddl`
 * items (and pgoutput is asked for messages).
 *
 * The trigger is installed and removed only by explicit calls
 * (`installDdlCapture`, `removeDdlCapture`, or `pgoutput-wasm ddl install|remove`):
 * a stream never changes the database's schema by itself. Installing needs
 * a superuser (PostgreSQL's rule for event triggers). Event triggers do not
 * fire for shared objects (roles, databases, tablespaces), so `ALTER ROLE …
 * PASSWORD` is never captured; the command text is `current_query()`: the
 * whole query string the client sent, every statement of it. Below
 * wal_level logical the trigger lets commands run uncaptured, with a
 * WARNING, rather than fail them.
 *
 * @example
 * ```ts
 * import { installDdlCapture, replicate } from "pgoutput-wasm/pg";
 * await installDdlCapture({ connection });
 * const stream = await replicate({ connection, slot: "app_cdc", publications: "app", ddl: { capture: true } });
 * for await (const item of stream) if (item.kind === "Ddl") console.log(item.tag, item.command);
 * ```
 */
import type { Message } from "../messages.ts";
import { formatLsn } from "../lsn.ts";
import { ReplicationError } from "./errors.ts";
import { resolveConnection, type ConnectionOption, type PgModule } from "./client.ts";
import { SideConnection } from "./side-connection.ts";
import { DEFAULT_LIMITS } from "./defaults.ts";

/** The prefix of the messages the DDL trigger emits. */
export const DDL_PREFIX = "pgoutput-wasm.ddl";
/** The schema that holds the trigger's function, and the event trigger's name. */
export const DDL_SCHEMA = "pgoutput_wasm";
export const DDL_TRIGGER = "pgoutput_wasm_ddl";

/** One object a DDL command touched (a row of `pg_event_trigger_ddl_commands()`). */
export interface DdlObject {
  /** `table`, `table column`, `index`, `sequence`, … */
  readonly type: string;
  /** Its schema, when it has one. */
  readonly schema: string | null;
  /** `object_identity`: the schema-qualified name (`public.t`, `public.t.c`). */
  readonly identity: string;
}

/**
 * A DDL command captured by the trigger, in commit order (the transactional
 * message it came as is not delivered separately).
 */
export interface Ddl {
  readonly kind: "Ddl";
  /** The command tag (`ALTER TABLE`, `CREATE INDEX`, …). */
  readonly tag: string;
  /** The query text the client sent (`current_query()`). */
  readonly command: string;
  /** The objects it created or changed. */
  readonly objects: readonly DdlObject[];
  /** The role that ran it (`session_user`). */
  readonly user: string;
  /** The message's LSN. */
  readonly lsn: bigint;
  /** Inside a streamed transaction's block: its xid. */
  readonly xid: number | undefined;
  /** The message's WAL position (XLogData start), when it came in one. */
  readonly walStart: bigint | undefined;
  materialize(): Record<string, unknown>;
  toJSON(): Record<string, unknown>;
}

/** The Ddl item of a message the trigger emitted; `undefined` for any other message. Content that is not the trigger's JSON is kept as the command. */
export function ddlOf(msg: Message): Ddl | undefined {
  if (msg.prefix !== DDL_PREFIX || !msg.transactional) return undefined;
  const text = msg.contentText;
  let parsed: { tag?: unknown; command?: unknown; objects?: unknown; user?: unknown } = {};
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === "object") parsed = value as typeof parsed;
  } catch {
    parsed = { command: text };
  }
  const str = (v: unknown): string => (typeof v === "string" ? v : "");
  const objects: DdlObject[] = Array.isArray(parsed.objects)
    ? parsed.objects.filter((o): o is Record<string, unknown> => o !== null && typeof o === "object").map((o) => ({
        type: str(o.type), schema: typeof o.schema === "string" ? o.schema : null, identity: str(o.identity),
      }))
    : [];
  const fields = { tag: str(parsed.tag), command: str(parsed.command), objects, user: str(parsed.user), lsn: msg.lsn, xid: msg.xid, walStart: msg.walStart };
  const plain = (json: boolean): Record<string, unknown> => ({
    kind: "Ddl", ...fields, objects: objects.map((o) => ({ ...o })),
    lsn: json ? formatLsn(fields.lsn) : fields.lsn,
    walStart: json && fields.walStart !== undefined ? formatLsn(fields.walStart) : fields.walStart,
  });
  return { kind: "Ddl", ...fields, materialize: () => plain(false), toJSON: () => plain(true) };
}

/** The SQL that installs the trigger (one transaction; run again, it replaces the function). */
export const INSTALL_DDL_SQL = `BEGIN;
CREATE SCHEMA IF NOT EXISTS ${DDL_SCHEMA};
CREATE OR REPLACE FUNCTION ${DDL_SCHEMA}.emit_ddl() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $fn$
BEGIN
  -- Never make a DDL command fail: below wal_level logical it runs uncaptured, with a warning. (Not an
  -- EXCEPTION block: its subtransaction would let the message sort after the next change of the transaction.)
  IF pg_catalog.current_setting('wal_level') <> 'logical' THEN
    RAISE WARNING 'pgoutput-wasm: DDL not captured: wal_level is not logical';
    RETURN;
  END IF;
  PERFORM pg_catalog.pg_logical_emit_message(true, '${DDL_PREFIX}', pg_catalog.json_build_object(
    'tag', tg_tag,
    'command', pg_catalog.current_query(),
    'user', session_user,
    'objects', (SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_object(
      'type', c.object_type, 'schema', c.schema_name, 'identity', c.object_identity)), '[]'::json)
      FROM pg_catalog.pg_event_trigger_ddl_commands() c)
  )::text);
END
$fn$;
DROP EVENT TRIGGER IF EXISTS ${DDL_TRIGGER};
CREATE EVENT TRIGGER ${DDL_TRIGGER} ON ddl_command_end EXECUTE FUNCTION ${DDL_SCHEMA}.emit_ddl();
COMMIT`;

/** The SQL that removes it (nothing else in the schema is dropped: RESTRICT). */
export const REMOVE_DDL_SQL = `BEGIN;
DROP EVENT TRIGGER IF EXISTS ${DDL_TRIGGER};
DROP FUNCTION IF EXISTS ${DDL_SCHEMA}.emit_ddl();
DROP SCHEMA IF EXISTS ${DDL_SCHEMA} RESTRICT;
COMMIT`;

/** Where to install or remove the trigger: the database the slot streams from. */
export interface DdlCaptureOptions {
  connection: ConnectionOption;
  /** The `pg` module, when it cannot be imported dynamically. */
  pg?: PgModule;
}

/** Whether the trigger is installed in the connection's database. */
export async function ddlCaptureInstalled(options: DdlCaptureOptions): Promise<boolean> {
  const rows = await run(options, `SELECT 1 FROM pg_catalog.pg_event_trigger WHERE evtname = '${DDL_TRIGGER}'`, "check DDL capture");
  return rows.length > 0;
}

/**
 * Installs the event trigger (idempotent). Rejects with a ReplicationError:
 * SERVER_ERROR with sqlstate 42501 when the role is not a superuser.
 */
export async function installDdlCapture(options: DdlCaptureOptions): Promise<void> {
  await run(options, INSTALL_DDL_SQL, "install DDL capture");
}

/** Removes the event trigger and its function (idempotent). */
export async function removeDdlCapture(options: DdlCaptureOptions): Promise<void> {
  await run(options, REMOVE_DDL_SQL, "remove DDL capture");
}

async function run(options: DdlCaptureOptions, sql: string, what: string): Promise<unknown[]> {
  if (options === null || typeof options !== "object" || options.connection === undefined) {
    throw new ReplicationError(`${what}: connection is required`, { code: "INVALID_OPTION" });
  }
  const side = new SideConnection(resolveConnection(options.connection), options.pg, DEFAULT_LIMITS);
  try {
    return await side.query(sql);
  } catch (e) {
    if (e instanceof ReplicationError) e.message = e.message.replace(/^side connection/, what);
    throw e;
  } finally {
    await side.close();
  }
}
