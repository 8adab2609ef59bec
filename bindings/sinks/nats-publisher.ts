/**
 * Ordered, pipelined publishing into one JetStream stream, exactly once.
 *
 * Messages are published in the order given, many in flight, each with:
 * - `Nats-Msg-Id`: its id (the broker drops a second copy within its
 *   duplicate window);
 * - `Nats-Expected-Stream`: the stream (a subject that another stream
 *   takes is refused, never stored there);
 * - `Nats-Expected-Last-Sequence`: the stream sequence of the message
 *   before it. The n-th message not yet confirmed expects `lastSeq + n`,
 *   where `lastSeq` is the sequence of the last one confirmed.
 *
 * So the stream stores a message only right after its predecessor, and
 * what it holds is always a prefix of the order given: when one publish is
 * lost (a dropped frame, a timeout, a broker restart), every later one is
 * refused ("wrong last sequence") instead of being stored out of order, and
 * a message once stored is never stored again (its expected sequence has
 * passed), whatever the duplicate window. The proof needs one thing: this
 * publisher is the stream's only writer while it runs.
 *
 * After a refusal, a missing PubAck (`ackTimeoutMs`) or a disconnect, the
 * publisher resynchronizes: it stops publishing, asks the stream for its
 * last sequence, counts how many of the unconfirmed messages it now holds
 * (last sequence − `lastSeq`; the last of them is checked by its
 * `Nats-Msg-Id`), confirms those, and publishes the rest again, in order.
 * While the broker cannot be reached it retries with backoff; nothing is
 * confirmed that the stream does not hold. Replies of an earlier round are
 * ignored (each reply subject carries its round).
 *
 * Refusals that retrying will not fix (the stream full with discard new, a
 * message over a limit, no stream for a subject, the stream gone or gone
 * back) fail every write in progress with a SinkError naming the subject
 * and the remedy.
 */
import type { MsgHdrs, NatsConnection, JetStreamManager, Msg, Subscription, StreamInfo } from "nats";
import { SinkError } from "../pipeline/sink.ts";
import { subjectMatches } from "./nats-options.ts";
import { apiErrorCode, parsePubAck, readTop, STREAM_NOT_FOUND, WRONG_LAST_SEQUENCE, type PubAck, type StreamTop } from "./nats-stream.ts";

/** A message to publish. */
export interface OutMessage {
  subject: string;
  payload: Uint8Array;
  /** Its `Nats-Msg-Id`. */
  id: string;
  /** Further header lines, each `Name: value\r\n`. */
  headers: string;
}

interface PendingWrite {
  left: number;
  resolve(): void;
  reject(e: unknown): void;
}

interface Entry extends OutMessage {
  write: PendingWrite;
  sentAt: number;
}

const encoder = new TextEncoder();

/**
 * Header bytes made once per message: nats 2.29's publish reads only
 * `encode()` of the headers it is given, and its MsgHdrs builder costs more
 * per message than the rest of the publish (every set() rescans its keys).
 */
class EncodedHeaders {
  constructor(readonly bytes: Uint8Array) {}
  encode(): Uint8Array {
    return this.bytes;
  }
}

export interface PublisherOptions {
  stream: string;
  ackTimeoutMs: number;
  /** The server's max_payload (headers + payload), from its INFO. */
  maxPayload: number;
  /** Describes the target in messages (servers, no credentials). */
  target: string;
  /** A subject prefix of this publisher's own for the PubAcks (the client's createInbox()). */
  inbox: string;
}

export class OrderedPublisher {
  readonly #nc: NatsConnection;
  readonly #jsm: JetStreamManager;
  readonly #o: PublisherOptions;
  readonly #inbox: string;
  readonly #sub: Subscription;
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #streamHeader: string;
  /** Messages not yet confirmed from `#head` on, in order; `#ord0` is the ordinal of `#queue[0]`. */
  #queue: Entry[] = [];
  #head = 0;
  #ord0 = 0;
  /** How many from `#head` were published in this round. */
  #sent = 0;
  /** The stream sequence of the last message confirmed (or found at start). */
  #lastSeq = 0;
  #round = 0;
  #state: "ready" | "resyncing" | "failed" | "closed" = "ready";
  #failure: unknown;
  /** Rounds in a row that ended without a PubAck: the backoff before the next one. */
  #failures = 0;
  #idle: (() => void)[] = [];
  /** PubAcks received (for a status line's acks/s). */
  acked = 0;
  /** Rounds of resynchronization (a test can see that a lost publish was noticed). */
  resyncs = 0;
  /** Messages confirmed by reading the stream after their PubAck was lost (stored, unanswered). */
  recovered = 0;

  constructor(nc: NatsConnection, jsm: JetStreamManager, o: PublisherOptions, top: StreamTop) {
    this.#nc = nc;
    this.#jsm = jsm;
    this.#o = o;
    this.#lastSeq = top.seq;
    this.#streamHeader = `Nats-Expected-Stream: ${o.stream}\r\n`;
    this.#inbox = o.inbox;
    this.#sub = nc.subscribe(`${this.#inbox}.*.*`, { callback: (_err, m) => this.#reply(m) });
    const tick = Math.max(20, Math.min(500, o.ackTimeoutMs / 4));
    this.#timer = setInterval(() => this.#checkTimeout(), tick);
    this.#timer.unref?.();
    void this.#watch();
  }

  /** Messages not confirmed yet. */
  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /** Publishes `messages` after those given before; resolves once the stream holds all of them. */
  publish(messages: readonly OutMessage[]): Promise<void> {
    if (this.#state === "failed") return Promise.reject(this.#failure);
    if (this.#state === "closed") return Promise.reject(this.#closedError(messages.length));
    if (messages.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const write: PendingWrite = { left: messages.length, resolve, reject };
      for (const m of messages) {
        const e = m as Entry;
        e.write = write;
        e.sentAt = 0;
        this.#queue.push(e);
      }
      this.#pump();
    });
  }

  /** Resolves when nothing is in flight (or the publisher failed or closed). */
  idle(): Promise<void> {
    if (this.pending === 0 || this.#state === "failed" || this.#state === "closed") return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Whether the broker is being waited for (resynchronizing). */
  get waiting(): boolean {
    return this.#state === "resyncing";
  }

  /** Fails what is not confirmed and stops; the connection is the caller's. */
  close(): void {
    if (this.#state === "closed") return;
    const unconfirmed = this.pending;
    const wasFailed = this.#state === "failed";
    this.#state = "closed";
    clearInterval(this.#timer);
    this.#sub.unsubscribe();
    if (!wasFailed && unconfirmed > 0) this.#rejectAll(this.#closedError(unconfirmed));
    this.#wakeIdle();
  }

  #closedError(n: number): SinkError {
    return new SinkError(`nats: closed with ${n} message(s) the stream ${this.#o.stream} had not confirmed`, {
      sink: "nats", target: this.#o.target, hint: "they are sent again from the slot at the next start",
    });
  }

  /** Publishes what is not in flight yet, each expecting the sequence of the one before. */
  #pump(): void {
    if (this.#state !== "ready") return;
    const nc = this.#nc;
    const now = Date.now();
    const prefix = `${this.#inbox}.${this.#round}.`;
    while (this.#head + this.#sent < this.#queue.length) {
      const i = this.#head + this.#sent;
      const e = this.#queue[i]!;
      const expected = this.#lastSeq + this.#sent;
      const head = encoder.encode(`NATS/1.0\r\nNats-Msg-Id: ${e.id}\r\n${this.#streamHeader}Nats-Expected-Last-Sequence: ${expected}\r\n${e.headers}\r\n`);
      if (head.length + e.payload.length > this.#o.maxPayload) {
        this.#fail(new SinkError(
          `nats: ${e.subject} (id ${e.id}) is ${head.length + e.payload.length} bytes with its headers, over the server's max_payload of ${this.#o.maxPayload}`,
          { sink: "nats", target: e.subject, hint: "raise max_payload in nats-server's configuration (at most 64 MB; stream max_msg_size too), or, with mode=transaction, use mode=change" },
        ));
        return;
      }
      e.sentAt = now;
      try {
        nc.publish(e.subject, e.payload, { reply: prefix + (this.#ord0 + i), headers: new EncodedHeaders(head) as unknown as MsgHdrs });
      } catch (err) {
        // The connection is closed for good (a reconnect buffers instead of throwing).
        this.#fail(new SinkError(`nats: cannot publish to ${e.subject}: ${(err as Error).message}`, { sink: "nats", target: e.subject, cause: err }));
        return;
      }
      this.#sent++;
    }
  }

  #reply(m: Msg): void {
    if (this.#state !== "ready") return;
    const s = m.subject;
    const dot = s.lastIndexOf(".");
    const round = Number(s.slice(s.lastIndexOf(".", dot - 1) + 1, dot));
    if (round !== this.#round) return;
    const i = Number(s.slice(dot + 1)) - this.#ord0 - this.#head;
    if (i < 0 || i >= this.#sent) return;
    const e = this.#queue[this.#head + i]!;
    if (m.data.length === 0 && m.headers?.code === 503) {
      // No responders: no stream takes the subject, or JetStream is not up (yet).
      void this.#resync(e.subject);
      return;
    }
    let pa: PubAck;
    try {
      pa = parsePubAck(m.data);
    } catch {
      void this.#resync();
      return;
    }
    if (pa.error !== undefined) {
      if (pa.error.err_code === WRONG_LAST_SEQUENCE) void this.#resync();
      else this.#fail(this.#refused(e, pa.error, pa.stream));
      return;
    }
    if (pa.stream !== this.#o.stream || pa.seq !== this.#lastSeq + i + 1) {
      void this.#resync();
      return;
    }
    // Stored in order: every message before it is stored too.
    this.#failures = 0;
    this.#confirm(i + 1);
  }

  #refused(e: Entry, error: { code: number; err_code: number; description: string }, stream: string | undefined): SinkError {
    const d = error.description;
    const hint = /maximum bytes/i.test(d)
      ? "the stream is full and discards new messages: raise its max_bytes, or let it discard old ones (discard: old)"
      : /maximum messages/i.test(d)
        ? "the stream is full and discards new messages: raise its max_msgs (or max_msgs_per_subject), or let it discard old ones (discard: old)"
        : /message size exceeds/i.test(d)
          ? "raise the stream's max_msg_size (or use mode=change with mode=transaction)"
          : /expected stream does not match/i.test(d)
            ? `another stream (${stream ?? "?"}) takes ${e.subject}: give this sink a stream whose subjects take all of its subjects (stream=NAME)`
            : /insufficient resources/i.test(d)
              ? "the server has no room for the stream: free disk space or raise its JetStream limits"
              : undefined;
    return new SinkError(`nats: stream ${stream ?? this.#o.stream} refused ${e.subject} (id ${e.id}): ${d} (err_code ${error.err_code})`, {
      sink: "nats", target: e.subject, hint,
    });
  }

  #confirm(n: number): void {
    const q = this.#queue;
    for (let k = 0; k < n; k++) {
      const e = q[this.#head++]!;
      this.#lastSeq++;
      if (--e.write.left === 0) e.write.resolve();
    }
    this.#sent = Math.max(0, this.#sent - n); // a resync confirms what it found with nothing in flight
    this.acked += n;
    if (this.#head > 4096 && this.#head * 2 > q.length) {
      this.#queue = q.slice(this.#head);
      this.#ord0 += this.#head;
      this.#head = 0;
    }
    if (this.pending === 0) this.#wakeIdle();
  }

  #checkTimeout(): void {
    if (this.#state !== "ready" || this.#sent === 0) return;
    const oldest = this.#queue[this.#head]!;
    if (Date.now() - oldest.sentAt > this.#o.ackTimeoutMs) void this.#resync();
  }

  /** A disconnect: the publishes in flight may be lost; find out at once rather than at their timeout. */
  async #watch(): Promise<void> {
    for await (const s of this.#nc.status()) {
      if (this.#state === "closed") return;
      if (s.type === "disconnect" && this.#sent > 0) void this.#resync();
    }
  }

  /** See the file's comment. `noResponders`: the subject a publish got no responders for. */
  async #resync(noResponders?: string): Promise<void> {
    if (this.#state !== "ready") return;
    this.#state = "resyncing";
    this.#round++;
    this.#sent = 0;
    this.resyncs++;
    for (let attempt = 0; ; attempt++) {
      const wait = this.#failures + attempt;
      if (wait > 0) await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** Math.min(wait, 7)) * (0.5 + Math.random() / 2)));
      if (this.#state !== "resyncing") return;
      let info: StreamInfo;
      let top: StreamTop;
      try {
        info = await this.#jsm.streams.info(this.#o.stream);
        if (this.#state !== "resyncing") return;
        top = await readTop(this.#jsm, this.#o.stream, info);
      } catch (e) {
        if (this.#state !== "resyncing") return;
        if (apiErrorCode(e) === STREAM_NOT_FOUND) {
          this.#fail(new SinkError(`nats: stream ${this.#o.stream} no longer exists`, { sink: "nats", target: this.#o.stream, hint: "create it again (or add create=true); the slot was not advanced past what it confirmed", cause: e }));
          return;
        }
        continue; // unreachable, restarting, JetStream not up yet: try again
      }
      if (this.#state !== "resyncing") return;
      const stored = top.seq - this.#lastSeq;
      if (stored < 0) {
        this.#fail(new SinkError(`nats: stream ${this.#o.stream} went back from sequence ${this.#lastSeq} to ${top.seq}: it lost messages it had confirmed`, {
          sink: "nats", target: this.#o.stream, hint: "was it purged, deleted and made again, or kept in memory across a restart? Use file storage (or replicas) and give this sink a stream of its own",
        }));
        return;
      }
      if (stored > this.pending || (stored > 0 && top.id !== this.#queue[this.#head + stored - 1]!.id)) {
        this.#fail(new SinkError(`nats: stream ${this.#o.stream} holds messages this sink did not write (sequence ${top.seq}${top.subject === undefined ? "" : ` on ${top.subject}`}, id ${top.id ?? "none"})`, {
          sink: "nats", target: this.#o.stream, hint: "the exactly-once guarantee needs this sink to be the stream's only writer: give it a stream of its own",
        }));
        return;
      }
      if (stored > 0) {
        this.recovered += stored;
        this.#confirm(stored);
      } else this.#failures++;
      if (noResponders !== undefined && !info.config.subjects.some((p) => subjectMatches(p, noResponders))) {
        this.#fail(new SinkError(`nats: no stream takes ${noResponders}; stream ${this.#o.stream} takes ${info.config.subjects.join(", ")}`, {
          sink: "nats", target: noResponders, hint: `add the sink's subjects to stream ${this.#o.stream} (e.g. nats stream edit ${this.#o.stream} --subjects '…'), or set subject=/prefix= to subjects it takes`,
        }));
        return;
      }
      this.#state = "ready";
      this.#pump();
      return;
    }
  }

  #fail(e: unknown): void {
    if (this.#state === "failed" || this.#state === "closed") return;
    this.#state = "failed";
    this.#failure = e;
    this.#rejectAll(e);
    this.#wakeIdle();
  }

  #rejectAll(e: unknown): void {
    const seen = new Set<PendingWrite>();
    for (let i = this.#head; i < this.#queue.length; i++) {
      const w = this.#queue[i]!.write;
      if (!seen.has(w)) {
        seen.add(w);
        w.reject(e);
      }
    }
    this.#queue = [];
    this.#head = 0;
    this.#sent = 0;
  }

  #wakeIdle(): void {
    const idle = this.#idle;
    this.#idle = [];
    for (const f of idle) f();
  }
}
