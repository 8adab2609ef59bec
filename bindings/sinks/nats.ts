/**
 * `nats://…`: NATS JetStream (docs/sinks.md, "NATS JetStream"). Each record
 * (or, with `mode=transaction`, each transaction) is one message on its
 * table's subject, with the change id as `Nats-Msg-Id` and the
 * transaction's facts as `Pg-*` headers; a batch is durable once the
 * stream confirmed every message of it (its PubAck). A record's own
 * headers (records.ts: CloudEvents binary mode's `ce-*` attributes) follow
 * them, and records of a media type of their own (CloudEvents structured
 * mode) say it in `Content-Type`: the CloudEvents NATS binding.
 *
 * Exactly once in the stream, in commit order, beyond the duplicate window
 * (nats-publisher.ts): publishes are chained by expected last sequence, so
 * the stream holds a prefix of what was given and nothing twice; at start
 * (`delivered()`) the stream's last message says where it is, and the
 * pipeline skips what the slot sends again up to there. It rests on this
 * sink being the stream's only writer, with one slot feeding it, the same
 * format options across restarts (they decide the ids), and the stream
 * keeping its last sequence and last message (file storage, or replicas).
 *
 * The client is the `nats` package (2.29), an optional peer dependency
 * loaded only when this sink is made.
 */
import type { NatsConnection, JetStreamManager, StreamConfig } from "nats";
import type { Relation } from "../relation.ts";
import { formatLsn, parseLsn } from "../lsn.ts";
import { timestampToISO } from "../time.ts";
import { isRowId, parseChangeId, type ChangePosition } from "../pipeline/change-id.ts";
import type { RecordTransaction, Records } from "../pipeline/records.ts";
import { SinkError, type Sink, type SinkDefinition } from "../pipeline/sink.ts";
import { redact } from "../redact.ts";
import { concatBytes, copyBytes } from "../copy-bytes.ts";
import { metricsText } from "../metrics/exposition.ts";
import { SinkMeter } from "./meter.ts";
import {
  describeTarget, natsOptions, otherSubject, subjectPatterns, subjectToken, tableSubject, type NatsSinkOptions,
} from "./nats-options.ts";
import { headerLines, keyLine } from "./nats-headers.ts";
import { OrderedPublisher, type OutMessage } from "./nats-publisher.ts";
import { apiErrorCode, readTop, type StreamTop } from "./nats-stream.ts";

export { natsOptions, type NatsSinkOptions } from "./nats-options.ts";

type NatsModule = typeof import("nats");

const STREAM_NOT_FOUND = 10059;
const API_TIMEOUT_MS = 10_000;

/** The NATS sink with what a status line or a test reads of it. */
export interface NatsSink extends Sink {
  /** The stream written. */
  readonly stream: string;
  /** PubAcks received so far. */
  readonly acked: number;
  /** Messages published and not yet confirmed. */
  readonly pending: number;
  /** Times the sink asked the stream what it holds after a lost publish, a refusal or a disconnect. */
  readonly resyncs: number;
  /** Messages confirmed that way: stored, but their PubAck lost. */
  readonly recovered: number;
}

async function loadNats(): Promise<NatsModule> {
  try {
    return await import("nats");
  } catch (e) {
    throw new SinkError("nats: the nats sink needs the nats package (the NATS client)", {
      sink: "nats", hint: "npm install nats@2.29", cause: e,
    });
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Connects, retrying an unreachable server for `connectTimeoutMs`; refused credentials fail at once. */
async function connectNats(nats: NatsModule, o: NatsSinkOptions, secrets: string[]): Promise<NatsConnection> {
  const target = describeTarget(o);
  const deadline = Date.now() + o.connectTimeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await nats.connect({
        servers: o.servers, user: o.user, pass: o.pass, token: o.token, name: o.name,
        maxReconnectAttempts: -1, reconnectTimeWait: 250, reconnectJitter: 250,
        timeout: Math.max(1000, Math.min(5000, o.connectTimeoutMs)), pingInterval: 10_000, maxPingOut: 3,
      });
    } catch (e) {
      const code = (e as { code?: string }).code;
      const message = redact((e as Error).message, secrets);
      if (code === "AUTHORIZATION_VIOLATION" || code === "AUTHENTICATION_EXPIRED" || /authori[sz]ation|authentication/i.test(message)) {
        throw new SinkError(`nats: ${target} refused the credentials: ${message}`, {
          sink: "nats", target, hint: "check the user and password (nats://user:password@host) or the token (nats://token@host)",
        });
      }
      if (Date.now() >= deadline) {
        throw new SinkError(`nats: cannot reach ${target} (${message}) after ${Math.round(o.connectTimeoutMs / 1000)} s`, {
          sink: "nats", target, hint: "is nats-server running there, with JetStream on (-js)? connect_timeout= sets the wait",
        });
      }
      await sleep(Math.min(1000, 100 * 2 ** attempt));
    }
  }
}

/** The stream this sink writes: named, or the one whose subjects take its table subjects; made when asked. */
async function resolveStream(jsm: JetStreamManager, o: NatsSinkOptions, target: string): Promise<string> {
  const patterns = subjectPatterns(o);
  const remedy = (name: string) =>
    `create it (nats stream add ${name} --subjects '${patterns.join(",")}' --storage file), or add create=true to the URL`;
  if (o.stream !== undefined) {
    try {
      await jsm.streams.info(o.stream);
      return o.stream;
    } catch (e) {
      if (apiErrorCode(e) !== STREAM_NOT_FOUND) throw e;
      if (!o.create) throw new SinkError(`nats: no stream ${o.stream} on ${target} (for subjects ${patterns.join(", ")})`, { sink: "nats", target: o.stream, hint: remedy(o.stream) });
      return createStream(jsm, o, o.stream, patterns);
    }
  }
  const names = await (await jsm.streams.names(patterns[0])).next();
  if (names.length === 1) return names[0]!;
  if (names.length > 1) {
    throw new SinkError(`nats: several streams take ${patterns[0]}: ${names.join(", ")}`, { sink: "nats", target: patterns[0], hint: "name the one to write with stream=NAME" });
  }
  const name = o.prefix.toUpperCase().replace(/[^A-Z0-9_-]/g, "_");
  if (!o.create) throw new SinkError(`nats: no stream on ${target} takes ${patterns[0]}`, { sink: "nats", target: patterns[0], hint: remedy(name) });
  return createStream(jsm, o, name, patterns);
}

async function createStream(jsm: JetStreamManager, o: NatsSinkOptions, name: string, subjects: string[]): Promise<string> {
  const config: Partial<StreamConfig> = {
    name, subjects, storage: (o.storage === "memory" ? "memory" : "file") as StreamConfig["storage"],
    duplicate_window: o.duplicateWindowMs * 1_000_000, num_replicas: 1,
  };
  try {
    await jsm.streams.add(config);
  } catch (e) {
    throw new SinkError(`nats: cannot create stream ${name} (subjects ${subjects.join(", ")}): ${(e as Error).message}`, {
      sink: "nats", target: name, hint: /overlap/i.test((e as Error).message) ? "another stream takes some of these subjects: name it with stream=NAME, or change subject=/prefix=" : undefined, cause: e,
    });
  }
  return name;
}

/** Where the stream is, from its last message's id: `X/Y:N` (a change), `X/Y` (a transaction); a snapshot row's says nothing about changes. */
function positionOf(top: StreamTop, stream: string): ChangePosition | undefined {
  if (top.id === undefined) {
    if (top.subject === undefined) return undefined;
    throw new SinkError(`nats: the last message of stream ${stream} (sequence ${top.seq} on ${top.subject}) has no Nats-Msg-Id: this sink did not write it`, {
      sink: "nats", target: stream, hint: "the exactly-once guarantee needs this sink to be the stream's only writer: give it a stream of its own",
    });
  }
  if (isRowId(top.id)) return undefined;
  const change = parseChangeId(top.id);
  if (change !== undefined) return change;
  try {
    return { lsn: parseLsn(top.id), index: Number.MAX_SAFE_INTEGER };
  } catch {
    throw new SinkError(`nats: the last message of stream ${stream} (sequence ${top.seq} on ${top.subject}) has id ${JSON.stringify(top.id)}, not a change id: this sink did not write it`, {
      sink: "nats", target: stream, hint: "the exactly-once guarantee needs this sink to be the stream's only writer: give it a stream of its own",
    });
  }
}

/** Turns batches into messages: subjects and headers per record, or one message per transaction. */
class MessageMaker {
  readonly #o: NatsSinkOptions;
  readonly #tables = new WeakMap<Relation, { subject: string; header: string }>();
  readonly #messageSubject: string;
  readonly #transactionSubject: string;
  #txn: RecordTransaction | undefined;
  #txnHeaders = "";
  /** mode=transaction: the records of a transaction not finished in the last batch (copied: that batch is released). */
  #carry: { txn: RecordTransaction; parts: Uint8Array[]; count: number } | undefined;
  readonly #maxPayload: number;

  constructor(o: NatsSinkOptions, maxPayload: number) {
    this.#o = o;
    this.#messageSubject = otherSubject(o, "message");
    this.#transactionSubject = otherSubject(o, "transaction");
    this.#maxPayload = maxPayload;
  }

  messages(r: Records): OutMessage[] {
    return this.#o.mode === "transaction" ? this.#transactions(r) : this.#changes(r, 0, r.length, []);
  }

  /** `Pg-Commit-Lsn`, `Pg-Xid`, `Pg-Commit-Time` of a transaction (made once per transaction). */
  #transactionHeaders(txn: RecordTransaction): string {
    if (txn === this.#txn) return this.#txnHeaders;
    let h = txn.ordered ? `Pg-Commit-Lsn: ${formatLsn(txn.lsn)}\r\n` : "";
    if (txn.xid !== undefined) h += `Pg-Xid: ${txn.xid}\r\n`;
    if (txn.time !== undefined) h += `Pg-Commit-Time: ${timestampToISO(txn.time)}\r\n`;
    this.#txn = txn;
    this.#txnHeaders = h;
    return h;
  }

  #table(rel: Relation): { subject: string; header: string } {
    let t = this.#tables.get(rel);
    if (t === undefined) {
      t = { subject: tableSubject(this.#o, rel.namespace, rel.name), header: `Pg-Table: ${subjectToken(rel.namespace)}.${subjectToken(rel.name)}\r\n` };
      this.#tables.set(rel, t);
    }
    return t;
  }

  #changes(r: Records, from: number, to: number, out: OutMessage[]): OutMessage[] {
    // Runs of records of one transaction, kind and table share their subject and headers (made once per run).
    let last: { txn: RecordTransaction; kind: string; rel: Relation | undefined; subject: string; headers: string } | undefined;
    for (let i = from; i < to; i++) {
      const rel = r.relations[i];
      const kind = r.kinds[i]!;
      const txn = r.txns[i]!;
      if (last === undefined || last.txn !== txn || last.kind !== kind || last.rel !== rel) {
        const media = r.mediaType === undefined ? "" : `Content-Type: ${r.mediaType.record}\r\n`;
        const txnHeaders = this.#transactionHeaders(txn) + media;
        if (rel !== undefined) {
          const t = this.#table(rel);
          last = { txn, kind, rel, subject: t.subject, headers: `${txnHeaders}Pg-Operation: ${kind}\r\n${t.header}` };
        } else {
          last = { txn, kind, rel, subject: kind === "message" || kind === "ddl" ? this.#messageSubject : this.#transactionSubject, headers: `${txnHeaders}Pg-Operation: ${kind}\r\n` };
        }
      }
      const own = r.headersOf(i);
      const key = r.keyOf(i);
      let headers = own === undefined ? last.headers : last.headers + headerLines(own, r.id(i));
      if (key !== undefined) headers += keyLine(key, r.id(i));
      out.push({ subject: last.subject, payload: r.payloadOf(i), id: r.id(i), headers });
    }
    return out;
  }

  /**
   * One message per finished transaction (its JSON Lines); snapshot rows one
   * each. A transaction a batch does not finish (the pipeline cuts a large
   * one into several) is copied and waits for the batch that does: that one
   * follows, holding the rest of it, or only its end (`transactionEnds`).
   */
  #transactions(r: Records): OutMessage[] {
    const out: OutMessage[] = [];
    const n = r.length;
    if (r.headers !== undefined || (n > 0 && r.headersOf(0) !== undefined)) {
      throw new SinkError("nats: mode=transaction sends a transaction as one message, which has no place for each record's own headers (CloudEvents binary mode)", {
        sink: "nats", target: describeTarget(this.#o), hint: "use mode=change (the default), or a format whose records have no headers of their own",
      });
    }
    const lastEnd = r.acks.length > 0 ? r.acks[r.acks.length - 1]!.after : -1;
    const carry = this.#carry;
    this.#carry = undefined;
    if (carry !== undefined && (n === 0 || r.txns[0]!.lsn !== carry.txn.lsn)) out.push(this.#transactionMessage(carry.txn, carry.parts, carry.count));
    let i = 0;
    while (i < n) {
      const txn = r.txns[i]!;
      let j = i + 1;
      while (j < n && r.txns[j] === txn) j++;
      if (!txn.ordered) {
        this.#changes(r, i, j, out);
        i = j;
        continue;
      }
      const bytes = r.bytes.buf.subarray(r.start(i), r.ends[j - 1]);
      const before = i === 0 && carry !== undefined && carry.txn.lsn === txn.lsn ? carry : undefined;
      const parts = [...(before?.parts ?? []), bytes];
      const count = (before?.count ?? 0) + (j - i);
      if (j === n && lastEnd !== n) {
        // Not finished in this batch: kept (copied) until the batch that ends it.
        parts[parts.length - 1] = copyBytes(bytes);
        this.#carry = { txn, parts, count };
        this.#checkSize(txn, parts);
        break;
      }
      out.push(this.#transactionMessage(txn, parts, count));
      i = j;
    }
    return out;
  }

  #transactionMessage(txn: RecordTransaction, parts: Uint8Array[], count: number): OutMessage {
    const payload = parts.length === 1 ? parts[0]! : concatBytes(parts);
    return {
      subject: this.#transactionSubject, payload, id: formatLsn(txn.lsn),
      headers: `${this.#transactionHeaders(txn)}Pg-Operation: transaction\r\nPg-Changes: ${count}\r\n`,
    };
  }

  /** A transaction that cannot fit in one message fails as soon as it is known, not once it is all held. */
  #checkSize(txn: RecordTransaction, parts: Uint8Array[]): void {
    const size = parts.reduce((a, p) => a + p.length, 0);
    if (size <= this.#maxPayload) return;
    this.#carry = undefined;
    throw new SinkError(`nats: transaction ${formatLsn(txn.lsn)} is over ${size} bytes, more than the server's max_payload of ${this.#maxPayload}`, {
      sink: "nats", target: this.#transactionSubject, hint: "use mode=change (one message per change), or raise max_payload in nats-server's configuration (at most 64 MB)",
    });
  }
}

/** Opens the sink: connects, finds (or makes) the stream, reads what it holds. */
export async function natsSink(o: NatsSinkOptions, secrets: string[] = []): Promise<NatsSink> {
  const nats = await loadNats();
  const all = [...secrets, o.pass, o.token].filter((s): s is string => s !== undefined);
  const target = describeTarget(o);
  const nc = await connectNats(nats, o, all);
  let publisher: OrderedPublisher;
  let stream: string;
  let top: StreamTop;
  try {
    let jsm: JetStreamManager;
    try {
      // API requests (stream info, last message, creation) wait at least 10 s: a busy server answers late, and at start a timeout is not retried.
      jsm = await nc.jetstreamManager({ timeout: Math.max(o.ackTimeoutMs, API_TIMEOUT_MS) });
    } catch (e) {
      throw new SinkError(`nats: ${target} has no JetStream: ${redact((e as Error).message, all)}`, { sink: "nats", target, hint: "start nats-server with JetStream on (-js, and -sd DIR for file storage)", cause: e });
    }
    stream = await resolveStream(jsm, o, target);
    top = await readTop(jsm, stream);
    positionOf(top, stream); // a foreign last message fails here, before anything is written
    publisher = new OrderedPublisher(nc, jsm, { stream, ackTimeoutMs: o.ackTimeoutMs, maxPayload: nc.info?.max_payload ?? 1 << 20, target, inbox: nats.createInbox() }, top);
    const maker = new MessageMaker(o, nc.info?.max_payload ?? 1 << 20);
    let closed = false;
    const meter = new SinkMeter("nats");
    // A retry here is a resynchronization round: the publishes not confirmed are sent again after a backoff.
    const collect = () => ((meter.retries = publisher.resyncs), meter.collectMetrics());
    return {
      name: "nats",
      transactionEnds: o.mode === "transaction",
      stream,
      get acked() {
        return publisher.acked;
      },
      get pending() {
        return publisher.pending;
      },
      get resyncs() {
        return publisher.resyncs;
      },
      get recovered() {
        return publisher.recovered;
      },
      write(records: Records): Promise<void> {
        let messages: OutMessage[];
        try {
          messages = maker.messages(records);
        } catch (e) {
          return meter.track(records, Promise.reject(e));
        }
        return meter.track(records, publisher.publish(messages));
      },
      metrics: () => metricsText({ collectMetrics: collect }),
      collectMetrics: collect,
      async delivered(): Promise<ChangePosition | undefined> {
        if (publisher.pending === 0) top = await readTop(jsm, stream);
        return positionOf(top, stream);
      },
      async close(): Promise<void> {
        if (closed) return;
        closed = true;
        // What is in flight while the broker answers gets its PubAcks; a broker being waited for is not waited for here (the pipeline drained already).
        if (!publisher.waiting) await Promise.race([publisher.idle(), sleep(o.ackTimeoutMs)]);
        publisher.close();
        await nc.close().catch(() => {});
      },
    };
  } catch (e) {
    await nc.close().catch(() => {});
    if (e instanceof SinkError) throw e;
    throw new SinkError(`nats: ${target}: ${redact((e as Error).message, all)}`, { sink: "nats", target, cause: e });
  }
}

export const nats: SinkDefinition = {
  name: "nats",
  schemes: ["nats:"],
  headers: true,
  summary: "NATS JetStream, exactly once per change id, in commit order (nats://host:4222?stream=NAME&subject=cdc.{schema}.{table})",
  create: (target, options) => natsSink(natsOptions(target, options)),
};
