/**
 * The source on a server of the user's (`--connection`, or the PG*
 * variables): what can be checked before streaming is checked on a side
 * connection first — the server version, wal_level, the REPLICATION
 * attribute, the publications, the slot, the protocol version — to give
 * one clear error, then replicate() streams; the side connection stays
 * open for the status line's lag.
 */
import { formatLsn } from "../lsn.ts";
import type { StreamingMode } from "../pg/options.ts";
import { TYPES_QUERY, typesFromCatalog, type CatalogTypeRow } from "../values/catalog.ts";
import { connectSide, connectionConfig } from "./connection.ts";
import { PRIMARY_REFUSED } from "../pg/standby.ts";
import { CliError, explain, protoUnsupported, publicationMissing, slotInUse, slotMissing, walLevel } from "./errors.ts";
import { maxProtocolVersion, PROTOCOL_SINCE, protocolNeeded } from "../layout.ts";
import type { Opening, Source } from "./opening.ts";

interface PreflightRow {
  version: number;
  database: string;
  wal_level: string;
  user: string;
  can_replicate: boolean | null;
  publications: string[];
}

interface SlotRow {
  slot_type: string;
  plugin: string | null;
  active: boolean;
  database: string | null;
}

const PREFLIGHT = `SELECT current_setting('server_version_num')::int AS version,
  current_database() AS database,
  current_setting('wal_level') AS wal_level,
  current_user AS "user",
  (SELECT rolreplication OR rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) AS can_replicate,
  ARRAY(SELECT pubname::text FROM pg_catalog.pg_publication ORDER BY 1) AS publications`;

export async function openConnected(o: Opening): Promise<Source> {
  const s = o.settings;
  const context = o.context;
  const { config, target, user, password } = connectionConfig(s.connection);
  context.target = target;
  context.user = user;
  context.password = password;
  const side = await connectSide(o.pg, config, context);
  o.defer(() => side.end());
  await o.check();

  // What can be checked before streaming, for one clear error.
  const pre = (await side.query<PreflightRow>(PREFLIGHT)).rows[0]!;
  context.user = pre.user;
  context.serverVersion = pre.version;
  if (pre.version < 100000) throw new CliError(`PostgreSQL ${Math.floor(pre.version / 100) / 100} has no pgoutput streaming this client supports`, "PostgreSQL 10 or later is needed (14+ for streaming, 15+ for two-phase)");
  if (pre.wal_level !== "logical") throw walLevel(`wal_level is ${pre.wal_level}`);
  if (pre.can_replicate === false) {
    throw new CliError(
      `insufficient privilege: role "${pre.user}" may not start logical replication`,
      `the role needs the REPLICATION attribute (ALTER ROLE ${pre.user} REPLICATION) and SELECT on the published tables`,
    );
  }
  const max = maxProtocolVersion(pre.version);
  const since = PROTOCOL_SINCE.streaming;
  const streaming: StreamingMode = s.streaming ?? (max >= since && (s.protoVersion ?? since) >= since ? "on" : "off");
  const proto = s.protoVersion ?? protocolNeeded(streaming, s.twoPhase);
  if (proto > max) throw protoUnsupported(proto, pre.version);
  context.protoVersion = proto;
  const missing = s.publications.filter((p) => !pre.publications.includes(p));
  if (missing.length > 0) {
    throw publicationMissing(`publication ${missing.map((m) => `"${m}"`).join(", ")} does not exist`, pre.publications);
  }
  let slotName = s.slot;
  let create = s.createSlot;
  let temporary = s.temporary;
  if (slotName === undefined) {
    // No slot named: a temporary one, gone with the connection (changes from now on).
    slotName = `pgoutput_wasm_${process.pid}_${Date.now().toString(36)}`;
    create = true;
    temporary = true;
  } else if (!temporary) {
    const slot = (await side.query<SlotRow>(
      "SELECT slot_type, plugin, active, database FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
      [slotName],
    )).rows[0];
    if (slot === undefined && !create) throw slotMissing(slotName);
    if (slot !== undefined) {
      if (slot.slot_type !== "logical" || slot.plugin !== "pgoutput") {
        throw new CliError(`replication slot "${slotName}" is a ${slot.slot_type} slot${slot.plugin ? ` of plugin ${slot.plugin}` : ""}, not a pgoutput one`, "name a pgoutput slot, or a new one with --create-slot");
      }
      if (slot.active) throw slotInUse(slotName);
    }
  }
  context.slot = slotName;
  const types = typesFromCatalog((await side.query<CatalogTypeRow>(TYPES_QUERY)).rows);
  const decoder = await o.decoder(types);
  await o.check();
  if (s.snapshot && slotName === s.slot && !temporary && !create) {
    throw new CliError(`--snapshot needs a new slot`, "add --create-slot (the slot must not exist yet), or leave out --slot for a temporary one");
  }
  const primary = s.primary === undefined ? undefined : connectionConfig(s.primary);
  const { stream, snapshot } = await o.replicate(config, decoder, {
    slot: { name: slotName, create, temporary, failover: s.failover },
    publications: s.publications,
    startLsn: s.startLsn,
    protoVersion: proto,
    streaming,
    messages: s.messages ?? s.backfill.length > 0,
    // Parsed (and its passwords remembered for redaction) as --connection is.
    primary: primary?.config,
    onNotice: (n) => {
      if (n.severity === "WARNING") o.hooks.note(`server warning: ${n.message}`);
    },
  }).catch((e: unknown) => {
    // The primary's refusal, explained for the primary's address and user, not --connection's.
    if (primary === undefined || !(e instanceof Error) || !e.message.startsWith(PRIMARY_REFUSED)) throw e;
    const x = explain(e, { ...context, target: primary.target, user: primary.user, password: primary.password });
    throw new CliError(`--primary: ${x.message}`, x.hint?.replace("--connection", "--primary"));
  });
  if (snapshot !== undefined) o.hooks.note(`snapshot of ${s.publications.join(", ")} (slot ${slotName}), then streaming from ${formatLsn(snapshot.consistentPoint)}`);
  else o.hooks.note(`streaming from ${target}, slot ${slotName}${temporary ? " (temporary)" : ""}, from ${stream.lastAckedLsn > 0n ? formatLsn(stream.lastAckedLsn) : "the slot's position"}`);
  return o.source({ stream, snapshot, database: pre.database, slot: slotName }, decoder, types, async (sql) => (await side.query<{ lsn: string | null }>(sql)).rows);
}
