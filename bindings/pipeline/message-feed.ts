/**
 * What a message of the source makes in the pipeline's batch: its
 * transaction context (the records' transaction, the acknowledgement at its
 * end), the format's records, and the items derived from it.
 *
 * Derived items (relation-changes.ts, pg/ddl.ts): the format is fed a
 * RelationChanged right after a Relation message that changed its table,
 * and (`ddl`) a Ddl for the DDL trigger's message, in the order the format
 * sees the messages — after the replay of streamed transactions, so an
 * aborted one changes nothing. They take a position in their transaction
 * like any record. The shapes compared with are those handed to the
 * format, put back to the confirmed position when the source starts over,
 * so a redelivered transaction has the same records. A process that starts
 * anew knows no shape: the first Relation of each table is the baseline,
 * except in the transaction the destination holds part of (the sink's
 * `delivered()`), where a first sight makes a RelationChanged with no
 * previous shape — so a schema change the first run found there is not
 * lost. A RelationChanged is a derived record (change-id.ts): it takes a
 * sub-position, so what a restart derives never moves a change's id; the
 * destination may get a RelationChanged the first run did not make, never
 * a change twice.
 */
import { transactionEnd } from "../ack.ts";
import { tagFieldOffset } from "../layout.ts";
import { MessageTag, type PgoutputMessage } from "../messages.ts";
import { H_OFFSET } from "../tape.ts";
import type { TapeBatch } from "../views/batch.ts";
import { ddlOf } from "../pg/ddl.ts";
import { RelationShapes } from "../relation-changes.ts";
import type { ChangePosition } from "./change-id.ts";
import type { Format } from "./format.ts";
import { NO_TRANSACTION, RecordTransaction, TransactionEnd, type Records } from "./records.ts";

/** Begin's and Commit's fields boundaryAt() reads. */
const BEGIN_LSN = tagFieldOffset(MessageTag.Begin, "finalLsn"), BEGIN_TIME = tagFieldOffset(MessageTag.Begin, "commitTime"), BEGIN_XID = tagFieldOffset(MessageTag.Begin, "xid");
const COMMIT_END_LSN = tagFieldOffset(MessageTag.Commit, "endLsn");

export interface MessageFeedOptions {
  format: Format;
  relationChanges?: boolean;
  ddl?: boolean;
  messages?: boolean;
}

export class MessageFeed {
  readonly #o: MessageFeedOptions;
  /** The shapes handed to the format (see the file's comment). */
  readonly #shapes = new RelationShapes();
  /** What the sink said its destination holds, at the start. */
  startedAt: ChangePosition | undefined;
  /** In the transaction the destination holds part of: first sights make RelationChanged items. */
  #baseline = false;

  constructor(options: MessageFeedOptions) {
    this.#o = options;
  }

  /** A message of a plain transaction (or outside one): its transaction context, the format (and what is derived from it), its end. */
  message(msg: PgoutputMessage, records: Records): void {
    const format = this.#o.format;
    switch (msg.kind) {
      case "Begin":
        this.#begin(msg, records);
        break;
      case "BeginPrepare":
        records.txn = new RecordTransaction(msg.xid, msg.prepareLsn, msg.prepareTime);
        this.#baseline = this.startedAt?.lsn === msg.prepareLsn;
        break;
      case "CommitPrepared":
        records.txn = new RecordTransaction(msg.xid, msg.commitLsn, msg.commitTime);
        break;
      case "RollbackPrepared":
        records.txn = new RecordTransaction(msg.xid, msg.rollbackEndLsn, msg.rollbackTime);
        break;
      case "Message": {
        const ddl = this.#o.ddl === true ? ddlOf(msg) : undefined;
        if (ddl !== undefined) {
          if (format.keepsMessages === true) format.push(msg, records);
          format.push(ddl, records);
          return;
        }
        if (this.#o.messages === false) return;
        if (!msg.transactional) records.txn = new RecordTransaction(undefined, msg.lsn, undefined);
        break;
      }
    }
    format.push(msg, records);
    if (msg.kind === "Relation" && this.#o.relationChanges !== false) {
      const changed = this.#shapes.observe(msg, this.#baseline);
      if (changed !== undefined) format.push(changed, records);
    }
    if (!this.#ended(msg, records) && msg.kind === "Message" && !msg.transactional) records.txn = NO_TRANSACTION;
  }

  /** A Begin or Commit whose records the format wrote from its batch (Format.pushBatch): what message() does around them. */
  boundary(msg: PgoutputMessage & { kind: "Begin" | "Commit" }, records: Records): void {
    if (msg.kind === "Begin") this.#begin(msg, records);
    else this.#ended(msg, records);
  }

  /**
   * boundary() of the plain Begin or Commit at `index` of a tape batch,
   * read from its bytes: no view, and the LSNs and time made bigints only
   * when something asks for them (RecordTransaction.ofHalves,
   * TransactionEnd). A transaction or two per row change make these most of
   * what the pipeline does per transaction.
   */
  boundaryAt(batch: TapeBatch, index: number, records: Records): void {
    const dv = batch.dv;
    const p = batch.t[batch.recordAt(index) + H_OFFSET]! + 1;
    if (batch.u8[p - 1] === MessageTag.Begin) {
      const l = p + BEGIN_LSN, c = p + BEGIN_TIME;
      const txn = RecordTransaction.ofHalves(dv.getUint32(p + BEGIN_XID), dv.getUint32(l), dv.getUint32(l + 4), dv.getInt32(c), dv.getUint32(c + 4));
      records.txn = txn;
      this.#baseline = this.startedAt !== undefined && this.startedAt.lsn === txn.lsn;
    } else {
      const e = p + COMMIT_END_LSN;
      this.#close(new TransactionEnd(records.length, dv.getUint32(e), dv.getUint32(e + 4)), records);
    }
  }

  #begin(msg: PgoutputMessage & { kind: "Begin" }, records: Records): void {
    records.txn = new RecordTransaction(msg.xid, msg.finalLsn, msg.commitTime);
    this.#baseline = this.startedAt?.lsn === msg.finalLsn;
  }

  /** A transaction's end, after its records: acknowledged once they are durable. Returns whether `msg` is one. */
  #ended(msg: PgoutputMessage, records: Records): boolean {
    const end = transactionEnd(msg);
    if (end === undefined) return false;
    this.#close({ after: records.length, lsn: end }, records);
    return true;
  }

  #close(ack: { readonly after: number; readonly lsn: bigint }, records: Records): void {
    records.acks.push(ack);
    records.txn = NO_TRANSACTION;
    if (this.#shapes.awaitingEnd) this.#shapes.ended(ack.lsn);
    this.#baseline = false;
  }

  /** A StreamAbort of a whole transaction ends it with no records: its position may be confirmed in turn. */
  abortEnd(msg: PgoutputMessage, records: Records): void {
    const end = transactionEnd(msg);
    if (end !== undefined) records.acks.push({ after: records.length, lsn: end });
  }

  /** The source starts over from what was confirmed: the shapes go back there. */
  restart(): void {
    this.#shapes.rollback();
    this.#baseline = false;
  }

  /** A transaction end was confirmed: the shapes up to it are kept through a restart. */
  confirmed(lsn: bigint): void {
    this.#shapes.confirmed(lsn);
  }
}
