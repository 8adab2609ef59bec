/** The messages of one decode call, as a list of views sharing the call's lease. */
import type { Batch } from "../decoder.ts";
import type { PgoutputMessage } from "../messages.ts";
import { type Lease, staleView } from "./view.ts";

/** What a batch holds: pgoutput message views, or (walsender streams) keepalives and backend messages too. */
interface Item {
  readonly kind: string;
  materialize(): Record<string, unknown>;
}

export class BaselineBatch<T extends Item = PgoutputMessage> implements Batch<T> {
  readonly #lease: Lease;
  readonly #messages: T[];
  readonly #consumed: number;

  constructor(lease: Lease, messages: T[], consumed: number) {
    this.#lease = lease;
    this.#messages = messages;
    this.#consumed = consumed;
  }

  get length(): number {
    this.#live();
    return this.#messages.length;
  }

  get consumed(): number {
    this.#live();
    return this.#consumed;
  }

  get(index: number): T {
    this.#live();
    const m = this.#messages[index];
    if (m === undefined) throw new RangeError(`message index ${index} out of range 0..${this.#messages.length - 1}`);
    return m;
  }

  kind(index: number): T["kind"] {
    return this.get(index).kind;
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let i = 0; i < this.#messages.length; i++) yield this.get(i);
  }

  materialize(): Record<string, unknown>[] {
    this.#live();
    return this.#messages.map((m) => m.materialize());
  }

  #live(): void {
    if (!this.#lease.live) throw staleView();
  }
}
