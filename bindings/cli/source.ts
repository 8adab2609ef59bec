/**
 * Where `tail` and `capture` read from: a server given by `--connection`
 * (or the PG* environment variables; connected-source.ts), or — with
 * neither — an embedded throwaway PostgreSQL with the demo schema and a
 * demo workload running while the stream is read (embedded-source.ts).
 * Either way replicate() streams with `ack: "manual"`: the pipeline
 * acknowledges a transaction once its sink made it durable.
 */
import { loadPg } from "./connection.ts";
import { openConnected } from "./connected-source.ts";
import { openEmbedded } from "./embedded-source.ts";
import { explain, type ErrorContext } from "./errors.ts";
import { Interrupted, Opening, type Source, type SourceHooks } from "./opening.ts";
import type { SourceSettings } from "./settings.ts";

export { Interrupted, type Source, type SourceHooks } from "./opening.ts";

/** Opens the source the settings name; on failure everything started is stopped, and the error explained. */
export async function openSource(s: SourceSettings, hooks: SourceHooks): Promise<Source> {
  const pg = await loadPg();
  const context: ErrorContext = { slot: s.slot, publications: s.publications, protoVersion: s.protoVersion };
  const opening = new Opening(s, hooks, pg, context);
  try {
    return await (s.mode === "embedded" ? openEmbedded(opening) : openConnected(opening));
  } catch (e) {
    await opening.close();
    if (e instanceof Interrupted) throw e;
    throw explain(e, context);
  }
}
