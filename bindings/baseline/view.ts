/**
 * What every baseline view shares: a lease that the decoder revokes at its
 * next call (so a view touched later throws `STALE_VIEW` instead of reading
 * reused memory), and for messages the message's bounds in the input.
 */
import type { PgoutputMessage } from "../messages.ts";
import { PgoutputError } from "../errors.ts";
import { materializeMessage, messageToJSON } from "../materialize.ts";
import { readString } from "../utf8.ts";
import { copyBytes } from "../copy-bytes.ts";

/** One decode call's views are valid while its lease is live. */
export class Lease {
  live = true;
}

export function staleView(): PgoutputError {
  return new PgoutputError("view used after its decoder's next call (materialize() what must outlive it)", {
    code: "STALE_VIEW",
  });
}

/** The header of the XLogData a message came in: start LSN, end of WAL, send time (µs since the Unix epoch). */
export interface XLogDataHeader {
  readonly walStart: bigint;
  readonly walEnd: bigint;
  readonly sendTime: bigint;
}

/**
 * Base of the message views: bytes(), materialize(), toJSON(), the
 * staleness check, and the XLogData fields of a message that came in one.
 */
export abstract class MessageView {
  readonly #lease: Lease;
  readonly #bytes: Uint8Array;
  readonly #start: number;
  readonly #end: number;
  #xlog: XLogDataHeader | undefined = undefined;

  constructor(lease: Lease, bytes: Uint8Array, start: number, end: number) {
    this.#lease = lease;
    this.#bytes = bytes;
    this.#start = start;
    this.#end = end;
  }

  /** Throws `STALE_VIEW` once the decoder moved on; every getter starts with it. */
  protected live(): void {
    if (!this.#lease.live) throw staleView();
  }

  /** UTF-8 text of `length` bytes at `offset` of the input (after the staleness check). */
  protected text(offset: number, length: number): string {
    this.live();
    return readString(this.#bytes, offset, length);
  }

  /** A copy of `length` bytes at `offset` of the input (after the staleness check). */
  protected copy(offset: number, length: number): Uint8Array {
    this.live();
    return copyBytes(this.#bytes, offset, offset + length);
  }

  /** Marks the message as carried by an XLogData with this header (the decoder calls it once, after parsing). */
  setXLogData(header: XLogDataHeader): void {
    this.#xlog = header;
  }

  /** For a message that came in an XLogData: the WAL start of the data, else `undefined`. */
  get walStart(): bigint | undefined {
    this.live();
    return this.#xlog?.walStart;
  }

  /** For a message that came in an XLogData: the server's end of WAL, else `undefined`. */
  get walEnd(): bigint | undefined {
    this.live();
    return this.#xlog?.walEnd;
  }

  /** For a message that came in an XLogData: the server's clock at transmission (µs since the Unix epoch), else `undefined`. */
  get sendTime(): bigint | undefined {
    this.live();
    return this.#xlog?.sendTime;
  }

  /** A copy of the message's bytes, tag included. */
  bytes(): Uint8Array {
    return this.copy(this.#start, this.#end - this.#start);
  }

  materialize(): Record<string, unknown> {
    this.live();
    return materializeMessage(this as unknown as PgoutputMessage);
  }

  toJSON(): Record<string, unknown> {
    this.live();
    return messageToJSON(this as unknown as PgoutputMessage);
  }
}
