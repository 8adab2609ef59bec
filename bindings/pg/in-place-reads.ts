/**
 * The replication connection's socket, made by the stream so that, once it
 * streams, the operating system's reads land in the decoder's memory
 * (kernel/receive.ts) and are decoded there: no copy into a queue, no copy
 * into the kernel. Node's `onread` option reads into a buffer the socket is
 * given, and asks for the next one after each read.
 *
 * Before the stream takes the socket over, `pg` reads it: each read is
 * handed to the socket's 'data' listeners (pg's parser, the connection
 * guard) as a copy, since pg keeps what it is handed.
 *
 * The buffer a socket was given is where its next read lands, whenever that
 * comes: so it must stay valid memory. A decode that changes the memory (it
 * grew, or a fresh instance took over) gives the socket a buffer in the new
 * memory at once (`decode()`), before the event loop can read again; a
 * decode that only moved bytes within the memory leaves the old buffer,
 * which still lies inside the input region (ReceiveArea.landed copies what
 * lands there). While the area is full, reads land in a scratch buffer and
 * are copied (`#held`): reading goes on until the stream's `highWaterMark`,
 * as with a queue.
 *
 * Only for plain TCP or Unix-socket connections under Node (`usable()`):
 * TLS decrypts in Node's own buffers, and other runtimes' sockets are not
 * Node's. Elsewhere the stream copies as before (socket-reader.ts). Opt-in
 * (`inPlaceReads`): it takes less of the consumer's own CPU, yet on a
 * loopback walsender the copying reader streams faster
 * (bench/replicate.bench.ts pairs the two).
 */
import * as net from "node:net";
import type { Batch } from "../decoder.ts";
import type { ReceiveArea } from "../kernel/receive.ts";
import type { WalMessage } from "../walsender.ts";
import { ByteQueue } from "./queue.ts";

/** The buffer of reads that do not land in the area: pg's, and those of a full area (Node's own read size). */
const SCRATCH = 64 << 10;

/** The libuv handle's method that re-points its reads (what `onread` uses under the hood). */
interface UserBufferHandle {
  useUserBuffer?(buffer: Uint8Array): void;
}

/** Whether in-place reads work here: Node's own sockets (not Bun's or Deno's emulation of them). */
function usable(): boolean {
  const versions = (globalThis as { process?: { versions?: Record<string, string | undefined> } }).process?.versions;
  return versions?.node !== undefined && versions.bun === undefined && versions.deno === undefined;
}

const made = new WeakMap<object, InPlaceReads>();

/** The in-place reads of `socket`, if `useInPlaceReads` made it. */
export function inPlaceReadsOf(socket: object): InPlaceReads | undefined {
  return made.get(socket);
}

/**
 * Gives a pg Client, made and not yet connected, a socket of in-place
 * reads instead of the plain one pg made — unless its connection asks for
 * TLS, or pg's socket is not Node's `net.Socket` (another runtime, a
 * `stream` of the user's), or the runtime is not Node.
 */
export function useInPlaceReads(client: unknown): void {
  const connection = (client as { connection?: { stream?: unknown; ssl?: unknown } }).connection;
  const plain = connection?.stream;
  if (connection === undefined || connection.ssl || !usable() || !(plain instanceof net.Socket) || plain.connecting || plain.destroyed) return;
  connection.stream = new InPlaceReads().socket;
}

export class InPlaceReads {
  readonly socket: net.Socket;
  /** Where reads land while pg reads the socket, or while the area is full. */
  readonly #scratch = new Uint8Array(SCRATCH);
  /** The buffer the socket's next read lands in: the scratch, or a view of the area's memory (its `buffer` stays that memory's, detached or not). */
  #armed: Uint8Array = this.#scratch;
  #area: ReceiveArea | undefined;
  #onLanded: ((bytes: Uint8Array) => void) | undefined;
  /**
   * Reads that came while the area was full (a consumer behind by more than
   * the area holds; `highWaterMark` bounds them as it bounds a queue):
   * copied here, and into the area at the next decode.
   */
  readonly #held = new ByteQueue();

  constructor() {
    // `onread` is Node's (v12.14+) but not in @types/node's constructor options.
    const onread = { buffer: () => this.#next(), callback: (n: number) => this.#read(n) };
    this.socket = new net.Socket({ onread } as net.SocketConstructorOpts);
    made.set(this.socket, this);
  }

  /** From here on reads land in `area`, and `onLanded` sees each (pg's 'data' listener no longer does). */
  land(area: ReceiveArea, onLanded: (bytes: Uint8Array) => void): void {
    this.#area = area;
    this.#onLanded = onLanded;
  }

  /** The stream lets the socket go: reads land in the scratch again, seen by nobody, and the decoder's memory is not touched. */
  release(): void {
    this.#area = undefined;
    this.#onLanded = undefined;
    this.#held.clear();
    this.#point(this.#scratch);
  }

  /** Bytes received and not decoded yet. */
  get received(): number {
    return this.#area!.fresh + this.#held.bytes;
  }

  /** Decodes what was received (ReceiveArea.decode), then gives the socket a buffer in the memory as it is now, should it have changed. */
  decode(): Batch<WalMessage> {
    const area = this.#area!;
    try {
      return area.decode(this.#held.bytes > 0 ? this.#held.take() : undefined);
    } finally {
      if (this.#armed !== this.#scratch && this.#armed.buffer !== area.buffer) this.#point(this.#next());
    }
  }

  /** Gives the handle `buffer` for its next read now (not at the end of a read, as `onread` does). */
  #point(buffer: Uint8Array): void {
    const handle = (this.socket as unknown as { _handle?: UserBufferHandle | null })._handle;
    this.#armed = buffer;
    if (typeof handle?.useUserBuffer === "function") handle.useUserBuffer(buffer);
  }

  /** `onread`'s next buffer: the area's room, or the scratch. */
  #next(): Uint8Array {
    const area = this.#area;
    this.#armed = area === undefined || area.full || this.#held.bytes > 0 ? this.#scratch : area.offer();
    return this.#armed;
  }

  /** `onread`'s callback: `n` bytes are in the armed buffer. */
  #read(n: number): void {
    const armed = this.#armed;
    const area = this.#area;
    if (area === undefined) {
      this.socket.emit("data", Buffer.from(armed.subarray(0, n)));
      return;
    }
    let bytes: Uint8Array;
    if (armed === this.#scratch && (this.#held.bytes > 0 || n > area.room)) {
      bytes = armed.subarray(0, n);
      this.#held.push(bytes);
    } else {
      try {
        bytes = area.landed(armed, n);
      } catch (e) {
        // Thrown from a socket callback it would end the process: it ends the connection instead.
        this.socket.destroy(e as Error);
        return;
      }
    }
    this.#onLanded!(bytes);
  }
}
