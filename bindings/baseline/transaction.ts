/**
 * Transaction framing: Begin (`B`), Commit (`C`), Origin (`O`) and the
 * logical decoding Message (`M`). Each parse function starts after the tag
 * byte and reads the whole message.
 */
import type { Begin, Commit, Message, Origin } from "../messages.ts";
import type { ParseContext } from "./context.ts";
import type { Reader } from "./reader.ts";
import { type Lease, MessageView } from "./view.ts";

/** `B`: Int64 final LSN, Int64 commit time, Int32 xid. */
export function parseBegin(r: Reader, ctx: ParseContext): BeginView {
  const finalLsn = r.lsn("finalLsn");
  const commitTime = r.time("commitTime");
  const xid = r.u32("xid");
  r.done();
  return new BeginView(ctx.lease, r.bytes, r.start, r.end, finalLsn, commitTime, xid);
}

export class BeginView extends MessageView implements Begin {
  readonly #finalLsn: bigint;
  readonly #commitTime: bigint;
  readonly #xid: number;

  constructor(lease: Lease, bytes: Uint8Array, start: number, end: number, finalLsn: bigint, commitTime: bigint, xid: number) {
    super(lease, bytes, start, end);
    this.#finalLsn = finalLsn;
    this.#commitTime = commitTime;
    this.#xid = xid;
  }

  get kind(): "Begin" {
    this.live();
    return "Begin";
  }
  get finalLsn(): bigint {
    this.live();
    return this.#finalLsn;
  }
  get commitTime(): bigint {
    this.live();
    return this.#commitTime;
  }
  get xid(): number {
    this.live();
    return this.#xid;
  }
}

/** `C`: Int8 flags, Int64 commit LSN, Int64 end LSN, Int64 commit time. */
export function parseCommit(r: Reader, ctx: ParseContext): CommitView {
  const flags = r.u8("flags");
  const commitLsn = r.lsn("commitLsn");
  const endLsn = r.lsn("endLsn");
  const commitTime = r.time("commitTime");
  r.done();
  return new CommitView(ctx.lease, r.bytes, r.start, r.end, flags, commitLsn, endLsn, commitTime);
}

export class CommitView extends MessageView implements Commit {
  readonly #flags: number;
  readonly #commitLsn: bigint;
  readonly #endLsn: bigint;
  readonly #commitTime: bigint;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number,
    flags: number, commitLsn: bigint, endLsn: bigint, commitTime: bigint,
  ) {
    super(lease, bytes, start, end);
    this.#flags = flags;
    this.#commitLsn = commitLsn;
    this.#endLsn = endLsn;
    this.#commitTime = commitTime;
  }

  get kind(): "Commit" {
    this.live();
    return "Commit";
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

/** `O`: Int64 origin commit LSN, String origin name. */
export function parseOrigin(r: Reader, ctx: ParseContext): OriginView {
  const originLsn = r.lsn("originLsn");
  const nameOffset = r.string("name");
  const nameLength = r.stringLength;
  r.done();
  return new OriginView(ctx.lease, r.bytes, r.start, r.end, originLsn, nameOffset, nameLength);
}

export class OriginView extends MessageView implements Origin {
  readonly #originLsn: bigint;
  readonly #nameOffset: number;
  readonly #nameLength: number;

  constructor(lease: Lease, bytes: Uint8Array, start: number, end: number, originLsn: bigint, nameOffset: number, nameLength: number) {
    super(lease, bytes, start, end);
    this.#originLsn = originLsn;
    this.#nameOffset = nameOffset;
    this.#nameLength = nameLength;
  }

  get kind(): "Origin" {
    this.live();
    return "Origin";
  }
  get originLsn(): bigint {
    this.live();
    return this.#originLsn;
  }
  get name(): string {
    return this.text(this.#nameOffset, this.#nameLength);
  }
}

/** `M`: [xid], Int8 flags, Int64 LSN, String prefix, Int32 n, Byte n content. */
export function parseLogicalMessage(r: Reader, ctx: ParseContext): LogicalMessageView {
  const xid = ctx.inStream ? r.u32("xid") : undefined;
  const flags = r.u8("flags");
  const lsn = r.lsn("lsn");
  const prefixOffset = r.string("prefix");
  const prefixLength = r.stringLength;
  const n = r.i32("contentLength");
  if (n < 0) throw r.error("INVALID_LENGTH", "contentLength", r.pos - 4, `negative content length ${n}`);
  const contentOffset = r.take(n, "content");
  r.done();
  return new LogicalMessageView(
    ctx.lease, r.bytes, r.start, r.end, xid, flags, lsn, prefixOffset, prefixLength, contentOffset, n,
  );
}

export class LogicalMessageView extends MessageView implements Message {
  readonly #xid: number | undefined;
  readonly #flags: number;
  readonly #lsn: bigint;
  readonly #prefixOffset: number;
  readonly #prefixLength: number;
  readonly #contentOffset: number;
  readonly #contentLength: number;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number | undefined, flags: number,
    lsn: bigint, prefixOffset: number, prefixLength: number, contentOffset: number, contentLength: number,
  ) {
    super(lease, bytes, start, end);
    this.#xid = xid;
    this.#flags = flags;
    this.#lsn = lsn;
    this.#prefixOffset = prefixOffset;
    this.#prefixLength = prefixLength;
    this.#contentOffset = contentOffset;
    this.#contentLength = contentLength;
  }

  get kind(): "Message" {
    this.live();
    return "Message";
  }
  get xid(): number | undefined {
    this.live();
    return this.#xid;
  }
  get flags(): number {
    this.live();
    return this.#flags;
  }
  get transactional(): boolean {
    this.live();
    return (this.#flags & 1) !== 0;
  }
  get lsn(): bigint {
    this.live();
    return this.#lsn;
  }
  get prefix(): string {
    return this.text(this.#prefixOffset, this.#prefixLength);
  }
  /** A copy of the content. */
  get content(): Uint8Array {
    return this.copy(this.#contentOffset, this.#contentLength);
  }
  get contentText(): string {
    return this.text(this.#contentOffset, this.#contentLength);
  }
}
