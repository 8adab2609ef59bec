/**
 * The replication-protocol commands the client sends, as text. Pure
 * functions, so the exact syntax per server version is testable without a
 * server.
 *
 * - CREATE_REPLICATION_SLOT: PostgreSQL 15 introduced the parenthesized
 *   option list (`(SNAPSHOT 'nothing', TWO_PHASE)`); 14 has the old word
 *   list (`NOEXPORT_SNAPSHOT TWO_PHASE`), 10-13 no TWO_PHASE at all.
 * - START_REPLICATION SLOT name LOGICAL X/Y (option 'value', ...): the
 *   pgoutput options; `publication_names` is a comma-separated list of
 *   (quoted) identifiers inside one string literal. The compat plugin
 *   builds its own option list (pg-logical-replication's spelling) and
 *   sends it through the same function.
 */
import { formatLsn } from "../lsn.ts";
import { ReplicationError } from "./errors.ts";

/** A double-quoted identifier (the replication grammar accepts them for slot names). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A single-quoted string literal ('' for a quote; backslashes are literal in the replication grammar). */
export function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** `CREATE_REPLICATION_SLOT` for a pgoutput slot, in the syntax of the server version (`server_version_num`). */
export function createSlotCommand(
  name: string,
  options: { temporary?: boolean; twoPhase?: boolean; failover?: boolean; exportSnapshot?: boolean },
  serverVersionNum: number,
): string {
  // An exported snapshot (initial snapshot, snapshot.ts) is importable until the connection runs its next command.
  const snapshot = options.exportSnapshot ? "export" : "nothing";
  const head = `CREATE_REPLICATION_SLOT ${quoteIdent(name)}${options.temporary ? " TEMPORARY" : ""} LOGICAL pgoutput`;
  if (options.failover) {
    // FAILOVER (PostgreSQL 17+): the slot is synchronized to standbys that have sync_replication_slots on.
    if (serverVersionNum < 170000) {
      throw new ReplicationError(`failover slots need PostgreSQL 17 or later; this server is ${Math.floor(serverVersionNum / 10000)}`, { code: "UNSUPPORTED_BY_SERVER" });
    }
    if (options.temporary) throw new ReplicationError("a temporary slot cannot be a failover slot", { code: "INVALID_OPTION" });
  }
  if (serverVersionNum >= 150000) {
    return `${head} (SNAPSHOT '${snapshot}'${options.twoPhase ? ", TWO_PHASE" : ""}${options.failover ? ", FAILOVER" : ""})`;
  }
  if (options.twoPhase && serverVersionNum < 140000) {
    throw new RangeError("two-phase slots need PostgreSQL 14 or later");
  }
  return `${head} ${options.exportSnapshot ? "EXPORT_SNAPSHOT" : "NOEXPORT_SNAPSHOT"}${options.twoPhase ? " TWO_PHASE" : ""}`;
}

/** What `streaming` may be: off, on (protocol 2+), or parallel (protocol 4, PostgreSQL 16+). */
export type StreamingMode = "off" | "on" | "parallel";

/** The pgoutput settings of a stream (from `replicate()`'s normalized options). */
export interface PgoutputSettings {
  protoVersion: 1 | 2 | 3 | 4;
  publications: readonly string[];
  streaming: StreamingMode;
  binary: boolean;
  messages: boolean;
  twoPhase: boolean;
  origin: "any" | "none" | undefined;
}

/** The pgoutput options of START_REPLICATION, in order, as [name, value]. */
export function pgoutputOptions(o: PgoutputSettings): [string, string][] {
  const out: [string, string][] = [
    ["proto_version", String(o.protoVersion)],
    ["publication_names", o.publications.map(quoteIdent).join(",")],
  ];
  // 'on'/'off' work on every version that knows the option (a boolean before 16).
  if (o.streaming !== "off") out.push(["streaming", o.streaming]);
  if (o.binary) out.push(["binary", "true"]);
  if (o.messages) out.push(["messages", "true"]);
  if (o.twoPhase) out.push(["two_phase", "true"]);
  if (o.origin !== undefined) out.push(["origin", o.origin]);
  return out;
}

/** A pgoutput option list, in the order sent: [name, value] (values are quoted here). */
export type PgoutputParams = readonly (readonly [name: string, value: string])[];

const LSN_TEXT = /^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}$/;

/**
 * `START_REPLICATION SLOT "name" LOGICAL X/Y (...)`: the one place its syntax
 * is written. `startLsn` as text is sent as given (pg-logical-replication's
 * plugin passes `0/00000000` and its output is matched byte for byte), after
 * checking it is an LSN, since it goes into the command unquoted. `options`:
 * replicate()'s normalized options, or a ready list (the compat plugin's
 * order and spelling).
 */
export function startReplicationCommand(
  slot: string,
  startLsn: bigint | string,
  options: Parameters<typeof pgoutputOptions>[0] | PgoutputParams,
): string {
  if (typeof startLsn === "string" && !LSN_TEXT.test(startLsn)) throw new Error(`not an LSN: ${JSON.stringify(startLsn)}`);
  const lsn = typeof startLsn === "bigint" ? formatLsn(startLsn) : startLsn;
  const params = isParams(options) ? options : pgoutputOptions(options);
  const list = params.map(([k, v]) => `${k} ${quoteLiteral(v)}`).join(", ");
  return `START_REPLICATION SLOT ${quoteIdent(slot)} LOGICAL ${lsn} (${list})`;
}

function isParams(options: Parameters<typeof pgoutputOptions>[0] | PgoutputParams): options is PgoutputParams {
  return Array.isArray(options);
}
