/**
 * Taking the replication connection's socket over from `pg`.
 *
 * pg parses every backend message itself, buffers a message of any declared
 * length before anyone sees it, emits one event per message, and hands each
 * CopyData over as a view of a parser buffer it reuses. For the replication
 * stream none of that is wanted: once every query pg runs for us is done
 * (its parser holds no unfinished bytes then: the last ReadyForQuery
 * completed it), the stream removes pg's 'data' listener and reads the raw
 * socket bytes itself, into the decoder's `pushBackend` — which checks every
 * frame's declared length against `maxMessageSize` before buffering it.
 *
 * pg keeps the socket's 'close' and 'error' listeners (and so its own
 * `end` / `error` events); `client.end()` still closes the connection.
 */

import { inPlaceReadsOf } from "./in-place-reads.ts";

/** The socket under pg's Connection (a net.Socket or tls.TLSSocket), as far as the stream uses it. */
export interface RawSocket {
  listeners(event: "data"): Function[];
  removeListener(event: string, listener: (...args: never[]) => void): unknown;
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "drain", listener: () => void): unknown;
  write(bytes: Uint8Array): boolean;
  /** Bytes written and not yet handed to the operating system. */
  readonly writableLength: number;
  pause(): unknown;
  resume(): unknown;
  destroy(): unknown;
}

/**
 * Replaces pg's parser on `socket` with `onData`. Throws when pg is not
 * reading the socket the way this module knows (then nothing is changed).
 */
export function takeOver(socket: RawSocket, onData: (chunk: Uint8Array) => void): void {
  const pgListeners = socket.listeners("data");
  if (pgListeners.length !== 1) {
    throw new Error(`expected pg to have one 'data' listener on its socket, found ${pgListeners.length}`);
  }
  socket.removeListener("data", pgListeners[0] as (...args: never[]) => void);
  socket.on("data", onData);
}

/** The libuv stream handle under a net.Socket, as far as gathering uses it (Node's own pause() does the same with its `onread` option). */
interface StreamHandle {
  reading?: boolean;
  readStop?(): number;
  readStart?(): number;
}

function handleOf(socket: RawSocket): StreamHandle | undefined {
  const handle = (socket as unknown as { _handle?: StreamHandle | null })._handle;
  return handle != null && typeof handle.readStop === "function" && typeof handle.readStart === "function" ? handle : undefined;
}

/**
 * Pauses `socket` and stops its handle reading, so that what the server
 * sends meanwhile waits in the kernel and comes in one read later (pause()
 * alone goes on reading until 16 KiB are buffered; a socket of in-place
 * reads, whose pause() stops the handle itself, is only paused). Returns
 * whether the handle was stopped; then `startReading` must restart it.
 */
export function stopReading(socket: RawSocket): boolean {
  const handle = handleOf(socket);
  const reading = handle?.reading === true;
  socket.pause();
  if (!reading) return false;
  if (handle!.reading === true) {
    handle!.reading = false;
    handle!.readStop!();
  }
  return true;
}

/**
 * Restarts a handle `stopReading` stopped, then resumes the socket unless
 * `paused`. The handle is restarted here, not left to resume(): the
 * Readable only asks the socket to read when no read is pending, and one
 * that was pending when the handle stopped never completes. Left to
 * resume(), the socket then never reads again, and a closed connection goes
 * unnoticed until a write fails.
 */
export function startReading(socket: RawSocket, paused: boolean): void {
  // Node's resume() restarts the handle of a socket of in-place reads (`onread`), and pause() must keep it stopped.
  if (inPlaceReadsOf(socket) !== undefined) {
    if (!paused) socket.resume();
    return;
  }
  const handle = handleOf(socket);
  if (handle !== undefined && handle.reading === false && !(socket as unknown as { destroyed?: boolean }).destroyed) {
    handle.reading = true;
    const err = handle.readStart!();
    if (err < 0) socket.destroy();
  }
  if (!paused) socket.resume();
}
