/**
 * pgoutput-wasm/pg-logical-replication: a drop-in for pg-logical-replication's
 * `PgoutputPlugin` that decodes with pgoutput-wasm and emits the same message
 * objects (plus protocol 2+ streaming and two-phase messages, which the
 * original cannot decode). Differences: docs/compat-differences.md.
 *
 * @example
 * ```ts
 * import { LogicalReplicationService } from "pg-logical-replication";
 * import { PgoutputPlugin } from "pgoutput-wasm/pg-logical-replication"; // was: from "pg-logical-replication"
 * const service = new LogicalReplicationService({ connectionString });
 * service.on("data", (lsn, msg) => console.log(lsn, msg.tag));
 * await service.subscribe(new PgoutputPlugin({ protoVersion: 1, publicationNames: ["pub"] }), "slot");
 * ```
 */
export { PgoutputWasmPlugin, PgoutputWasmPlugin as PgoutputPlugin } from "./plugin.ts";
export type { PgoutputWasmPluginOptions, ReplicationQueryable } from "./plugin.ts";
export type { TypeParser, TypeParserSource } from "./type-parsers.ts";
// The message shapes, as pg-logical-replication names them (`Pgoutput.MessageInsert`, ...).
export type * as Pgoutput from "./types.ts";
