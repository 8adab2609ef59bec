/**
 * Running `COPY ... TO STDOUT` on a `pg` client without a COPY package: a
 * "submittable" query (pg's extension point: `client.query(obj)` with a
 * `submit(connection)` method) that hands each CopyData payload to a
 * callback as pg parses it. The payload is a view of pg's parser buffer,
 * valid only during the call (the callback copies what it keeps).
 *
 * Backpressure: `pause()` stops reading the socket (pg parses no further
 * CopyData until `resume()`), so a consumer slower than the server bounds
 * what is buffered to one socket read.
 */
import type { Client } from "pg";

interface PgConnectionLike {
  query(text: string): void;
  stream: { pause(): unknown; resume(): unknown };
}

export interface CopyOutHandle {
  /** Resolves with the CommandComplete tag's row count after ReadyForQuery; rejects with the server's or the connection's error. */
  readonly done: Promise<number>;
  pause(): void;
  resume(): void;
}

/** Starts `command` (a COPY ... TO STDOUT) on `client`; `onData` gets each CopyData payload and may throw to fail the copy. */
export function copyOut(client: Client, command: string, onData: (payload: Uint8Array) => void): CopyOutHandle {
  let connection: PgConnectionLike | undefined;
  let paused = false;
  let failure: unknown;
  let rows = 0;
  let settle!: { resolve: (n: number) => void; reject: (e: unknown) => void };
  const done = new Promise<number>((resolve, reject) => (settle = { resolve, reject }));
  const submittable = {
    submit(con: PgConnectionLike): void {
      connection = con;
      con.query(command);
      if (paused) con.stream.pause();
    },
    handleCopyData(msg: { chunk: Uint8Array }): void {
      if (failure !== undefined) return; // the rest of a failed copy is read and dropped until ReadyForQuery
      try {
        onData(msg.chunk);
      } catch (e) {
        failure = e;
        settle.reject(e);
        // Reading on lets pg reach ReadyForQuery; the caller ends the connection anyway.
        if (paused) connection?.stream.resume();
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
  return {
    done,
    pause(): void {
      if (paused) return;
      paused = true;
      connection?.stream.pause();
    },
    resume(): void {
      if (!paused) return;
      paused = false;
      connection?.stream.resume();
    },
  };
}
