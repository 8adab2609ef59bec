/**
 * Running `COPY ... TO STDOUT` on a `pg` client without a COPY package: a
 * "submittable" query (pg's extension point: `client.query(obj)` with a
 * `submit(connection)` method) that hands each CopyData payload to a
 * callback as pg parses it. The payload is a view of pg's parser buffer,
 * valid only during the call (the callback copies what it keeps).
 *
 * Backpressure is the caller's: pausing the connection's socket stops pg
 * parsing further CopyData until it is resumed (the snapshot pauses the
 * socket, not the copy, since a pause may outlast one COPY).
 */
import type { Client } from "pg";

interface PgConnectionLike {
  query(text: string): void;
}

export interface CopyOutHandle {
  /** Resolves with the CommandComplete tag's row count after ReadyForQuery; rejects with the server's or the connection's error. */
  readonly done: Promise<number>;
}

/** Starts `command` (a COPY ... TO STDOUT) on `client`; `onData` gets each CopyData payload and may throw to fail the copy. */
export function copyOut(client: Client, command: string, onData: (payload: Uint8Array) => void): CopyOutHandle {
  let failure: unknown;
  let rows = 0;
  let settle!: { resolve: (n: number) => void; reject: (e: unknown) => void };
  const done = new Promise<number>((resolve, reject) => (settle = { resolve, reject }));
  const submittable = {
    submit(con: PgConnectionLike): void {
      con.query(command);
    },
    handleCopyData(msg: { chunk: Uint8Array }): void {
      if (failure !== undefined) return; // the rest of a failed copy is read and dropped until ReadyForQuery
      try {
        onData(msg.chunk);
      } catch (e) {
        failure = e;
        settle.reject(e);
      }
    },
    handleCommandComplete(msg: { text?: string }): void {
      const m = /^COPY (\d+)$/.exec(msg.text ?? "");
      rows = m ? Number(m[1]) : 0;
    },
    handleReadyForQuery(): void {
      if (failure !== undefined) settle.reject(failure);
      else settle.resolve(rows);
    },
    handleError(err: unknown): void {
      settle.reject(failure ?? err);
    },
    // Not sent for COPY TO; present because pg may call them on any active query.
    handleRowDescription(): void {},
    handleDataRow(): void {},
    handleEmptyQuery(): void {},
    handlePortalSuspended(): void {},
    handleCopyInResponse(): void {},
  };
  client.query(submittable as never);
  return { done };
}
