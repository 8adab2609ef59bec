/**
 * Two-phase commit (protocol 3+): Begin Prepare (`b`), Prepare (`P`),
 * Commit Prepared (`K`), Rollback Prepared (`r`) and Stream Prepare (`p`).
 * Each ends with Int32 xid and String GID.
 */
import type { BeginPrepare, CommitPrepared, Prepare, RollbackPrepared, StreamPrepare } from "../messages.ts";
import type { ParseContext } from "./context.ts";
import type { Reader } from "./reader.ts";
import { type Lease, MessageView } from "./view.ts";

/** Members of every two-phase message: xid and the GID (decoded on first access). */
abstract class TwoPhaseView extends MessageView {
  readonly #xid: number;
  readonly #gidOffset: number;
  readonly #gidLength: number;

  constructor(lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number, gidOffset: number, gidLength: number) {
    super(lease, bytes, start, end);
    this.#xid = xid;
    this.#gidOffset = gidOffset;
    this.#gidLength = gidLength;
  }

  get xid(): number {
    this.live();
    return this.#xid;
  }
  get gid(): string {
    return this.text(this.#gidOffset, this.#gidLength);
  }
}

/** `b`: Int64 prepare LSN, Int64 end LSN, Int64 prepare time, Int32 xid, String GID. */
export function parseBeginPrepare(r: Reader, ctx: ParseContext): BeginPrepareView {
  const prepareLsn = r.lsn("prepareLsn");
  const endLsn = r.lsn("endLsn");
  const prepareTime = r.time("prepareTime");
  const xid = r.u32("xid");
  const gid = r.string("gid");
  r.done();
  return new BeginPrepareView(ctx.lease, r.bytes, r.start, r.end, xid, gid, r.stringLength, prepareLsn, endLsn, prepareTime);
}

export class BeginPrepareView extends TwoPhaseView implements BeginPrepare {
  readonly #prepareLsn: bigint;
  readonly #endLsn: bigint;
  readonly #prepareTime: bigint;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number, gidOffset: number, gidLength: number,
    prepareLsn: bigint, endLsn: bigint, prepareTime: bigint,
  ) {
    super(lease, bytes, start, end, xid, gidOffset, gidLength);
    this.#prepareLsn = prepareLsn;
    this.#endLsn = endLsn;
    this.#prepareTime = prepareTime;
  }

  get kind(): "BeginPrepare" {
    this.live();
    return "BeginPrepare";
  }
  get prepareLsn(): bigint {
    this.live();
    return this.#prepareLsn;
  }
  get endLsn(): bigint {
    this.live();
    return this.#endLsn;
  }
  get prepareTime(): bigint {
    this.live();
    return this.#prepareTime;
  }
}

/** Prepare and Stream Prepare share their layout: flags, prepare LSN, end LSN, prepare time, xid, GID. */
abstract class PreparedView extends TwoPhaseView {
  readonly #flags: number;
  readonly #prepareLsn: bigint;
  readonly #endLsn: bigint;
  readonly #prepareTime: bigint;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number, gidOffset: number, gidLength: number,
    flags: number, prepareLsn: bigint, endLsn: bigint, prepareTime: bigint,
  ) {
    super(lease, bytes, start, end, xid, gidOffset, gidLength);
    this.#flags = flags;
    this.#prepareLsn = prepareLsn;
    this.#endLsn = endLsn;
    this.#prepareTime = prepareTime;
  }

  get flags(): number {
    this.live();
    return this.#flags;
  }
  get prepareLsn(): bigint {
    this.live();
    return this.#prepareLsn;
  }
  get endLsn(): bigint {
    this.live();
    return this.#endLsn;
  }
  get prepareTime(): bigint {
    this.live();
    return this.#prepareTime;
  }
}

export class PrepareView extends PreparedView implements Prepare {
  get kind(): "Prepare" {
    this.live();
    return "Prepare";
  }
}

export class StreamPrepareView extends PreparedView implements StreamPrepare {
  get kind(): "StreamPrepare" {
    this.live();
    return "StreamPrepare";
  }
}

/** `P`: Int8 flags, Int64 prepare LSN, Int64 end LSN, Int64 prepare time, Int32 xid, String GID. */
export function parsePrepare(r: Reader, ctx: ParseContext): PrepareView {
  const flags = r.u8("flags");
  const prepareLsn = r.lsn("prepareLsn");
  const endLsn = r.lsn("endLsn");
  const prepareTime = r.time("prepareTime");
  const xid = r.u32("xid");
  const gid = r.string("gid");
  r.done();
  return new PrepareView(ctx.lease, r.bytes, r.start, r.end, xid, gid, r.stringLength, flags, prepareLsn, endLsn, prepareTime);
}

/** `p`: the same layout as Prepare, for a streamed transaction. */
export function parseStreamPrepare(r: Reader, ctx: ParseContext): StreamPrepareView {
  const flags = r.u8("flags");
  const prepareLsn = r.lsn("prepareLsn");
  const endLsn = r.lsn("endLsn");
  const prepareTime = r.time("prepareTime");
  const xid = r.u32("xid");
  const gid = r.string("gid");
  r.done();
  return new StreamPrepareView(ctx.lease, r.bytes, r.start, r.end, xid, gid, r.stringLength, flags, prepareLsn, endLsn, prepareTime);
}

/** `K`: Int8 flags, Int64 commit LSN, Int64 end LSN, Int64 commit time, Int32 xid, String GID. */
export function parseCommitPrepared(r: Reader, ctx: ParseContext): CommitPreparedView {
  const flags = r.u8("flags");
  const commitLsn = r.lsn("commitLsn");
  const endLsn = r.lsn("endLsn");
  const commitTime = r.time("commitTime");
  const xid = r.u32("xid");
  const gid = r.string("gid");
  r.done();
  return new CommitPreparedView(ctx.lease, r.bytes, r.start, r.end, xid, gid, r.stringLength, flags, commitLsn, endLsn, commitTime);
}

export class CommitPreparedView extends TwoPhaseView implements CommitPrepared {
  readonly #flags: number;
  readonly #commitLsn: bigint;
  readonly #endLsn: bigint;
  readonly #commitTime: bigint;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number, gidOffset: number, gidLength: number,
    flags: number, commitLsn: bigint, endLsn: bigint, commitTime: bigint,
  ) {
    super(lease, bytes, start, end, xid, gidOffset, gidLength);
    this.#flags = flags;
    this.#commitLsn = commitLsn;
    this.#endLsn = endLsn;
    this.#commitTime = commitTime;
  }

  get kind(): "CommitPrepared" {
    this.live();
    return "CommitPrepared";
  }
  get flags(): number {
    this.live();
    return this.#flags;
  }
  get commitLsn(): bigint {
    this.live();
    return this.#commitLsn;
  }
  get endLsn(): bigint {
    this.live();
    return this.#endLsn;
  }
  get commitTime(): bigint {
    this.live();
    return this.#commitTime;
  }
}

/**
 * `r`: Int8 flags, Int64 prepare end LSN, Int64 rollback end LSN,
 * Int64 prepare time, Int64 rollback time, Int32 xid, String GID.
 */
export function parseRollbackPrepared(r: Reader, ctx: ParseContext): RollbackPreparedView {
  const flags = r.u8("flags");
  const prepareEndLsn = r.lsn("prepareEndLsn");
  const rollbackEndLsn = r.lsn("rollbackEndLsn");
  const prepareTime = r.time("prepareTime");
  const rollbackTime = r.time("rollbackTime");
  const xid = r.u32("xid");
  const gid = r.string("gid");
  r.done();
  return new RollbackPreparedView(
    ctx.lease, r.bytes, r.start, r.end, xid, gid, r.stringLength, flags, prepareEndLsn, rollbackEndLsn, prepareTime, rollbackTime,
  );
}

export class RollbackPreparedView extends TwoPhaseView implements RollbackPrepared {
  readonly #flags: number;
  readonly #prepareEndLsn: bigint;
  readonly #rollbackEndLsn: bigint;
  readonly #prepareTime: bigint;
  readonly #rollbackTime: bigint;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number, gidOffset: number, gidLength: number,
    flags: number, prepareEndLsn: bigint, rollbackEndLsn: bigint, prepareTime: bigint, rollbackTime: bigint,
  ) {
    super(lease, bytes, start, end, xid, gidOffset, gidLength);
    this.#flags = flags;
    this.#prepareEndLsn = prepareEndLsn;
    this.#rollbackEndLsn = rollbackEndLsn;
    this.#prepareTime = prepareTime;
    this.#rollbackTime = rollbackTime;
  }

  get kind(): "RollbackPrepared" {
    this.live();
    return "RollbackPrepared";
  }
  get flags(): number {
    this.live();
    return this.#flags;
  }
  get prepareEndLsn(): bigint {
    this.live();
    return this.#prepareEndLsn;
  }
  get rollbackEndLsn(): bigint {
    this.live();
    return this.#rollbackEndLsn;
  }
  get prepareTime(): bigint {
    this.live();
    return this.#prepareTime;
  }
  get rollbackTime(): bigint {
    this.live();
    return this.#rollbackTime;
  }
}
