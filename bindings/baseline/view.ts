/**
 * What every baseline view shares: a lease that the decoder revokes at its
 * next call (so a view touched later throws `STALE_VIEW` instead of reading
 * reused memory), and for messages the message's bounds in the input.
 */
import type { PgoutputMessage } from "../messages.ts";
import { PgoutputError } from "../errors.ts";
import { materializeMessage, messageToJSON } from "../materialize.ts";
import { readString } from "../utf8.ts";
import { copyBytes } from "./bytes.ts";

/** One decode call's views are valid while its lease is live. */
export class Lease {
  live = true;
}

export function staleView(): PgoutputError {
  return new PgoutputError("view used after its decoder's next call (materialize() what must outlive it)", {
    code: "STALE_VIEW",
  });
}

/** Base of the message views: bytes(), materialize(), toJSON() and the staleness check. */
export abstract class MessageView {
  readonly #lease: Lease;
  readonly #bytes: Uint8Array;
  readonly #start: number;
  readonly #end: number;

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
