/**
 * The side connection of a stream: a plain `pg` Client (no replication
 * attribute) for what the replication connection cannot do while it is in
 * CopyBoth mode — health queries, heartbeats. Opened lazily on the first
 * query (nothing is connected when no one asks), closed by `close()`, and
 * dropped after an error so that the next query opens a new one. Errors are
 * ReplicationErrors with the connection's passwords redacted.
 */
import type { Client, QueryResultRow } from "pg";
import { ReplicationError, fromPgError } from "./errors.ts";
import { connectClient, endClient, type PgModule, type ResolvedConnection } from "./client.ts";
import type { ConnectionLimits } from "./defaults.ts";

export class SideConnection {
  readonly #target: ResolvedConnection;
  readonly #pg: PgModule | undefined;
  readonly #limits: ConnectionLimits;
  #client: Promise<Client> | undefined;
  #closed = false;

  constructor(target: ResolvedConnection, pg: PgModule | undefined, limits: ConnectionLimits) {
    this.#target = target;
    this.#pg = pg;
    this.#limits = limits;
  }

  /** Whether a connection is open or being opened (for tests: nothing is opened unless asked). */
  get opened(): boolean {
    return this.#client !== undefined;
  }

  async query<R extends QueryResultRow>(sql: string): Promise<R[]> {
    if (this.#closed) throw new ReplicationError("the stream's side connection is closed", { code: "CONNECTION_LOST" });
    const pending = (this.#client ??= connectClient(this.#target, this.#pg, { replication: false, limits: this.#limits }));
    try {
      const client = await pending;
      if (this.#closed) throw new ReplicationError("the stream's side connection is closed", { code: "CONNECTION_LOST" });
      return (await client.query<R>(sql)).rows;
    } catch (e) {
      // A connection that failed once is not trusted again (unless the server just rejected the SQL).
      if (!(typeof (e as { severity?: unknown }).severity === "string" && (e as { code?: string }).code?.startsWith("08") !== true)) {
        if (this.#client === pending) this.#client = undefined;
        pending.then((c) => c.end(), () => {}).catch(() => {});
      }
      throw fromPgError(e, "side connection", "CONNECTION_LOST", this.#target.secrets);
    }
  }

  /** Closes the connection, if one was opened. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const pending = this.#client;
    this.#client = undefined;
    if (pending === undefined) return;
    try {
      await endClient(await pending);
    } catch {
      /* it never opened */
    }
  }
}
