/**
 * `pgoutput-wasm ddl install|remove|status -c URL`: the event trigger of
 * DDL capture (bindings/pg/ddl.ts), installed and removed only by this
 * explicit command (or the library's installDdlCapture / removeDdlCapture),
 * never by a stream. `tail --ddl` then writes the commands it captured.
 */
import { DDL_PREFIX, DDL_SCHEMA, DDL_TRIGGER, INSTALL_DDL_SQL, REMOVE_DDL_SQL } from "../pg/ddl.ts";
import type { Command } from "./command.ts";
import { connectSide, connectionConfig, loadPg } from "./connection.ts";
import { explain, usage, type ErrorContext } from "./errors.ts";
import { CONNECTION, type FlagValues } from "./flags.ts";

const ACTIONS = ["install", "remove", "status"] as const;

export const ddl: Command = {
  name: "ddl",
  synopsis: "install|remove|status [options]",
  summary: "install or remove the event trigger that captures DDL for tail --ddl",
  examples: ["npx pgoutput-wasm ddl install -c postgres://postgres@db/app"],
  description: `install: creates the schema ${DDL_SCHEMA}, its function emit_ddl() and the event
trigger ${DDL_TRIGGER} (ON ddl_command_end) in the connection's database. Each
DDL command then writes its tag, text (current_query()), role and objects into
the WAL with pg_logical_emit_message(true, '${DDL_PREFIX}', ...): in the
command's transaction, so it comes in commit order, and not at all when
rolled back. Needs a superuser (event triggers do). Commands on shared
objects (roles, databases, tablespaces) fire no event trigger.
remove: drops the trigger, the function and the schema (if nothing else is in it).
status: says whether the trigger is installed.
Run install again to update it; both are idempotent.`,
  sections: [{ title: "options", flags: [CONNECTION] }],
  positionals: true,
  notes: "Exit code 0, 1 on errors (one line with a hint), 2 for bad options.",
  run: ddlCommand,
};

async function ddlCommand(values: FlagValues, args: string[]): Promise<number> {
  const action = args[0] as (typeof ACTIONS)[number] | undefined;
  if (args.length !== 1 || !ACTIONS.includes(action!)) {
    throw usage(action === undefined ? "ddl needs install, remove or status" : `ddl takes install, remove or status, not ${JSON.stringify(args.join(" "))}`);
  }
  const { config, target, user, password } = connectionConfig(values.connection as string | undefined);
  const context: ErrorContext = { target, user, password };
  const pg = await loadPg();
  const client = await connectSide(pg, config, context);
  try {
    if (action === "status") {
      const rows = (await client.query(`SELECT evtenabled FROM pg_catalog.pg_event_trigger WHERE evtname = '${DDL_TRIGGER}'`)).rows;
      process.stdout.write(rows.length === 0 ? "DDL capture is not installed\n" : `DDL capture is installed (event trigger ${DDL_TRIGGER})\n`);
      return 0;
    }
    await client.query(action === "install" ? INSTALL_DDL_SQL : REMOVE_DDL_SQL);
    process.stdout.write(action === "install"
      ? `DDL capture installed: event trigger ${DDL_TRIGGER}; stream it with tail --ddl\n`
      : "DDL capture removed\n");
    return 0;
  } catch (e) {
    throw explain(e, context);
  } finally {
    await client.end().catch(() => {});
  }
}
