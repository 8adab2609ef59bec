/**
 * The two iterations of a replication stream — messages (views) or whole
 * transactions (materialized) — and the acknowledgements iterating makes:
 * each `next()` tells the ack tracker the consumer is back (in `auto` mode,
 * what it was handed is confirmed), and each item handed over is observed
 * by it. A stream is iterated once, one way.
 *
 * Views: a message yielded by the message iteration is a view into the
 * decoder's memory, valid until the consumer asks for the next item (the
 * next decode happens only then). `transactions()` yields materialized
 * objects instead.
 *
 * What the socket delivered is read in stream order: keepalives (their
 * end of WAL counts as received, and is confirmed when idle; a reply is
 * sent when one is asked for), backend messages (an error is thrown once
 * everything before it was delivered, or reconnected from), the heartbeat
 * messages filtered out, the commit and keepalive times noted for
 * `progress`. Pulls run one after another (pulls.ts).
 */
import type { PgoutputMessage } from "../messages.ts";
import type { PrimaryKeepalive, WalMessage } from "../walsender.ts";
import type { BackfillItem } from "../backfill-items.ts";
import { BACKFILL_PREFIX } from "./backfill-chunk.ts";
import type { BackfillHook } from "./backfill.ts";
import { ReplicationError } from "./errors.ts";
import type { StreamProgress } from "./health.ts";
import { HEARTBEAT_PREFIX } from "./heartbeat.ts";
import type { Liveness } from "./liveness.ts";
import type { Reconnector } from "./reconnect.ts";
import type { Redelivery } from "./redelivery.ts";
import type { SocketReader } from "./socket-reader.ts";
import type { StreamCounters, StreamState } from "./stream-state.ts";
import { backendMessageError, type OnNotice } from "./copy-both.ts";
import { transactionEnd, type AckMessage, type AckTracker } from "../ack.ts";
import type { PgoutputDecoder } from "../decoder.ts";
import { TapeDecoder } from "../kernel/decoder.ts";
import { TransactionAssembler, type AssemblerOptions, type TransactionItem } from "./transactions.ts";
import { RelationShapes } from "../relation-changes.ts";
import type { Derived, MessageIteration, StreamItem } from "./stream-items.ts";
import type { RelationChanged } from "../relation-changes.ts";
import { ddlOf } from "./ddl.ts";
import { pastStop } from "./stop-at.ts";
import { Pulls, WAIT } from "./pulls.ts";

export type { Derived, MessageIteration, StreamItem } from "./stream-items.ts";

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/** The stream's parts the iteration reads from, and what it asks of the stream. */
export interface IterationParts {
  state: StreamState;
  /** Where the transactions and changes reached are counted. */
  stats: StreamCounters;
  tracker: AckTracker;
  reader: SocketReader;
  liveness: Liveness;
  reconnector: Reconnector;
  redelivery: Redelivery;
  /** Deliver the heartbeat messages (heartbeat.ts) instead of filtering them out. */
  deliverHeartbeats: boolean;
  derived: Derived;
  /** `stopAt` (stop-at.ts). */
  stopAt: bigint | undefined;
  onNotice: OnNotice;
  /** Ends the stream; returns the stream's error, for throwing. */
  fail: (error: ReplicationError) => ReplicationError;
  /** Breaking out of a loop stops the stream. */
  stop: () => Promise<void>;
  /** The stream's decoder: held streamed transactions are decoded again by a fork of it. */
  decoder: PgoutputDecoder;
}

export class Iteration {
  readonly #state: StreamState;
  readonly #stats: StreamCounters;
  readonly #tracker: AckTracker;
  readonly #reader: SocketReader;
  readonly #liveness: Liveness;
  readonly #reconnector: Reconnector;
  readonly #redelivery: Redelivery;
  readonly #deliverHeartbeats: boolean;
  #derived: Derived;
  readonly #stopAt: bigint | undefined;
  /** The stopAt position was reached: nothing more is handed over. */
  #stopReached = false;
  /** Set when reaching stopAt stopped the stream (auto acks): pulls wait for it. */
  #ending: Promise<void> | undefined;
  /** Shapes handed over (relation-changes.ts), and the item derived from the last message, handed over next. */
  readonly #shapes = new RelationShapes();
  #derivedNext: RelationChanged | undefined;
  /** The Message view the last Ddl item was made of. */
  #ddlMessage: PgoutputMessage | undefined;
  readonly #onNotice: OnNotice;
  readonly #fail: (error: ReplicationError) => ReplicationError;
  readonly #stop: () => Promise<void>;
  readonly #decoder: PgoutputDecoder;
  readonly #progress: StreamProgress = {
    lastCommitTime: undefined, lastCommitAt: undefined, lastKeepaliveTime: undefined, lastKeepaliveAt: undefined, heartbeatsFiltered: 0,
  };
  #claimed: string | undefined;
  /** The transaction iteration's assembler: what it holds is partial, forgotten on a new connection. */
  #assembler: TransactionAssembler | undefined;
  readonly #pulls: Pulls;
  /** The backfill running, if any: its items come before the stream's next message. */
  #backfill: BackfillHook | undefined;

  constructor(parts: IterationParts) {
    this.#state = parts.state;
    this.#stats = parts.stats;
    this.#tracker = parts.tracker;
    this.#reader = parts.reader;
    this.#liveness = parts.liveness;
    this.#reconnector = parts.reconnector;
    this.#redelivery = parts.redelivery;
    this.#deliverHeartbeats = parts.deliverHeartbeats;
    this.#derived = parts.derived;
    this.#stopAt = parts.stopAt;
    this.#onNotice = parts.onNotice;
    this.#fail = parts.fail;
    this.#stop = parts.stop;
    this.#decoder = parts.decoder;
    this.#pulls = new Pulls(() => this.#tracker.next(), () => this.#ending ?? this.#reader.wait());
  }

  /** A decoder like the stream's for replaying streamed transactions; a decoder of the user's own that cannot fork: the assembler's default. */
  #replayDecoder(): PgoutputDecoder | undefined {
    return this.#decoder instanceof TapeDecoder ? this.#decoder.fork() : undefined;
  }

  /** Timestamps of the last commit and keepalive reached, and the heartbeat messages filtered out (a copy). */
  get progress(): StreamProgress {
    return { ...this.#progress };
  }

  /** A backfill's items are interleaved from now on (undefined: none); only in the message iteration (its rows are views). */
  set backfill(hook: BackfillHook | undefined) {
    if (this.#claimed === "transactions") throw new ReplicationError("backfill: its rows come with the stream's message iteration; this stream is iterated by transactions()", { code: "INVALID_OPTION" });
    this.#backfill = hook;
  }

  /** A new connection starts over from what was confirmed: partial transactions are dropped (they come again whole). */
  restart(): void {
    this.#assembler?.reset();
    this.#shapes.confirmed(this.#tracker.confirmed);
    this.#shapes.rollback();
    this.#derivedNext = undefined;
  }

  /** The messages as sent, nothing derived (for a pipeline, which derives after replaying streamed transactions). Before iterating. */
  underived(): void {
    this.#derived = { relationChanges: false, ddl: false, userMessages: true };
  }

  /** Messages (views valid until the next `next()`), and keepalives when `keepalives`; `takeReady()`, `readyBatch()`, `skipReady()`: sources.ts's. */
  messages(keepalives: boolean): MessageIteration {
    this.#claim("messages");
    const step = (): IteratorResult<StreamItem> | typeof WAIT => {
      const item = this.#poll(keepalives);
      if (item === WAIT) return WAIT;
      if (item === undefined) return DONE;
      if (item.kind !== "PrimaryKeepalive" && item.kind !== "RelationChanged" && item.kind !== "BackfillRow" && item.kind !== "BackfillComplete") {
        const msg = item.kind === "Ddl" ? this.#ddlMessage! : item;
        this.#tracker.observe(msg, true);
        this.#redelivery.mark(msg);
        this.#ended(msg);
      }
      return { done: false, value: item };
    };
    return {
      next: () => this.#pulls.pull(step),
      takeReady: () => {
        if (this.#pulls.inFlight) return undefined; // a pull in flight is handed the next item
        this.#tracker.next();
        const r = step();
        return r === WAIT || r.done === true ? undefined : r.value;
      },
      readyBatch: () => {
        // Only where #poll would hand over the batch's next message as it is: nothing derived, interleaved or cut before it.
        if (
          this.#pulls.inFlight || this.#ending !== undefined || this.#state.stopRequested || this.#stopReached || this.#derivedNext !== undefined ||
          this.#backfill !== undefined || this.#stopAt !== undefined || this.#reconnector.running !== undefined
        ) return undefined;
        return this.#reader.current();
      },
      skipReady: (n) => this.#skipped(n),
      return: async (): Promise<IteratorResult<StreamItem>> => {
        await this.#stop();
        return { done: true, value: undefined };
      },
    };
  }

  /**
   * Whole transactions, materialized (see `ReplicationStream.transactions`).
   * A transaction over `maxTransactionBytes` comes in fragments: its end is
   * observed (and so acknowledged, in auto mode) with the final one only.
   */
  transactions(options: AssemblerOptions): AsyncIterableIterator<TransactionItem> {
    this.#claim("transactions");
    const assembler = (this.#assembler = new TransactionAssembler({ replayDecoder: this.#replayDecoder(), ddl: this.#derived.ddl, ...options }));
    const hand = (item: TransactionItem): IteratorResult<TransactionItem> => {
      if ("redelivered" in item) {
        if (this.#redelivery.redeliveredTransaction(item)) (item as { redelivered: boolean }).redelivered = true;
        if (!item.final || item.fragment > 0) this.#redelivery.fragment(item.lsn);
      }
      return { done: false, value: item };
    };
    const iterator: AsyncIterableIterator<TransactionItem> = {
      next: () => this.#pulls.pull((): IteratorResult<TransactionItem> | typeof WAIT => {
        const more = assembler.pull();
        if (more !== undefined) {
          // The rest of a streamed transaction: its end message is observed with the final fragment.
          if (more.final) this.#tracker.observe(more.end as unknown as AckMessage, true);
          return hand(more);
        }
        for (;;) {
          const msg = this.#poll(false);
          if (msg === WAIT) return WAIT; // the assembler keeps what it holds until the pull goes on
          if (msg === undefined) return DONE;
          if (msg.kind === "PrimaryKeepalive" || msg.kind === "BackfillRow" || msg.kind === "BackfillComplete") continue; // a backfill needs the message iteration
          if (msg.kind === "RelationChanged") {
            assembler.push(msg);
            continue;
          }
          // A Ddl stands for the trigger's message: the tracker sees that, and a held streamed transaction keeps its bytes.
          const message = msg.kind === "Ddl" ? this.#ddlMessage! : msg;
          const item = msg.kind === "Ddl" ? assembler.push(msg, message) : assembler.push(msg);
          const partial = item !== undefined && "final" in item && !item.final;
          // An end message whose transaction is not all handed over yet waits for its final fragment.
          if (!partial || transactionEnd(message) === undefined) this.#tracker.observe(message, item !== undefined);
          this.#ended(message);
          if (item === undefined) continue;
          return hand(item);
        }
      }),
      return: async (): Promise<IteratorResult<TransactionItem>> => {
        await this.#stop();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /**
   * The next pgoutput message in stream order (or keepalive, when
   * `keepalives`); `undefined` once stopped; WAIT when nothing is buffered.
   * Throws the stream's error after everything received before it was delivered.
   */
  #poll(keepalives: boolean): StreamItem | undefined | typeof WAIT {
    const state = this.#state;
    const reader = this.#reader;
    for (;;) {
      if (this.#ending !== undefined) return WAIT;
      if (state.stopRequested || this.#stopReached) return undefined;
      const derivedNext = this.#derivedNext;
      if (derivedNext !== undefined) {
        this.#derivedNext = undefined;
        return derivedNext;
      }
      if (this.#backfill !== undefined) {
        let b: BackfillItem | undefined;
        try {
          b = this.#backfill.take();
        } catch (e) {
          throw this.#fail(e as ReplicationError);
        }
        if (b !== undefined) return b;
      }
      if (this.#reconnector.running !== undefined) return WAIT;
      reader.resumeBelowLowWater();
      let item: WalMessage | undefined;
      try {
        item = reader.take();
      } catch (e) {
        throw this.#fail(e as ReplicationError);
      }
      if (item !== undefined) {
        if (item.kind === "PrimaryKeepalive") {
          const stopAt = this.#stopAt;
          // Between transactions (a keepalive may come inside one); a streamed transaction still open commits past it.
          if (stopAt !== undefined && item.walEnd >= stopAt && !this.#tracker.inPlainTransaction) {
            this.#tracker.keepalive(stopAt); // confirmed when idle, as any keepalive, but never past stopAt
            return this.#reachStop();
          }
          // In stream order: everything before it has been handed over.
          this.#tracker.keepalive(item.walEnd);
          this.#progress.lastKeepaliveTime = item.sendTime;
          this.#progress.lastKeepaliveAt = Date.now();
          this.#liveness.reached(item);
          if (keepalives) return item;
          continue;
        }
        if (item.kind === "BackendMessage") {
          const error = backendMessageError(item, this.#onNotice);
          if (error !== undefined) {
            if (this.#reconnector.retry(error)) return WAIT;
            throw this.#fail(error);
          }
          continue;
        }
        if (this.#stopAt !== undefined && pastStop(item, this.#stopAt)) return this.#reachStop();
        // Before the messages are filtered: the backfill sees every change, and takes its watermarks.
        if (this.#backfill?.observe(item) === true) continue;
        if (item.kind === "Message" && item.prefix === BACKFILL_PREFIX) continue; // another run's watermark (backfill-chunk.ts)
        if (item.kind === "Commit" || item.kind === "StreamCommit" || item.kind === "CommitPrepared") this.#committed(item.commitTime);
        else if (item.kind === "Message") {
          if (!this.#deliverHeartbeats && item.prefix === HEARTBEAT_PREFIX) {
            this.#progress.heartbeatsFiltered++; // heartbeat.ts: a non-transactional message, nothing to acknowledge
            continue;
          }
          const derived = this.#derived;
          const ddl = derived.ddl ? ddlOf(item) : undefined;
          if (ddl !== undefined) {
            this.#ddlMessage = item; // what the tracker and the redelivery see of it
            return ddl;
          }
          if (!derived.userMessages) continue; // pgoutput sends messages for `ddl`; a transactional one is no transaction end
        } else if (item.kind === "Relation") {
          if (this.#derived.relationChanges) this.#derivedNext = this.#shapes.observe(item);
        } else this.#counted(item.kind);
        return item;
      }
      if (state.error !== undefined) throw state.error;
      if (state.lost !== undefined) {
        if (this.#reconnector.retry(state.lost)) return WAIT;
        throw this.#fail(state.lost);
      }
      return WAIT;
    }
  }

  /**
   * The next `n` messages of the reader's batch (Begin, row changes and
   * Commit: Pipeline.#takeRun's run) were handed over without a view each:
   * what #poll and the message iteration's step do for each of them.
   */
  #skipped(n: number): void {
    const { batch, index } = this.#reader.current()!;
    this.#tracker.next();
    for (let i = index; i < index + n; i++) {
      const kind = batch.kind(i);
      if (kind !== "Begin" && kind !== "Commit") {
        this.#counted(kind);
        this.#redelivery.passed();
        continue;
      }
      const msg = batch.get(i) as PgoutputMessage & { kind: "Begin" | "Commit" };
      if (msg.kind === "Commit") this.#committed(msg.commitTime);
      this.#tracker.observe(msg, true);
      this.#redelivery.mark(msg);
      this.#ended(msg);
    }
    this.#reader.skip(n);
    this.#reader.resumeBelowLowWater();
  }

  /** A transaction's end reached: counted, and its time noted for `progress`. */
  #committed(commitTime: bigint): void {
    this.#progress.lastCommitTime = commitTime;
    this.#progress.lastCommitAt = Date.now();
    this.#stats.transactions++;
  }

  /** A row change reached (the other kinds count nothing). */
  #counted(kind: string): void {
    const stats = this.#stats;
    if (kind === "Insert") stats.inserts++;
    else if (kind === "Update") stats.updates++;
    else if (kind === "Delete") stats.deletes++;
    else if (kind === "Truncate") stats.truncates++;
  }

  /** stopAt reached: nothing more is handed over; with auto acks the stream stops (pulls wait for it), else the iteration is done. */
  #reachStop(): undefined | typeof WAIT {
    this.#stopReached = true;
    if (this.#tracker.mode !== "auto") return undefined;
    this.#ending = this.#stop().catch(() => {}).then(() => {
      this.#ending = undefined;
    });
    return WAIT;
  }

  /** A message handed over (or consumed by the assembler): the shapes learn where its transaction ended, and what is confirmed. */
  #ended(msg: PgoutputMessage): void {
    const end = transactionEnd(msg);
    if (end !== undefined) this.#shapes.ended(end);
    this.#shapes.confirmed(this.#tracker.confirmed);
  }

  #claim(how: string): void {
    if (this.#claimed !== undefined) throw new TypeError(`this replication stream is already iterated (${this.#claimed}); iterate it once`);
    this.#claimed = how;
  }
}
