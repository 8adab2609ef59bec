/**
 * Streamed in-progress transactions (protocol 2+): Stream Start (`S`),
 * Stream Stop (`E`), Stream Commit (`c`) and Stream Abort (`A`). The decoder
 * tracks the in-stream state from S and E; these parsers only read.
 */
import type { StreamAbort, StreamCommit, StreamStart, StreamStop } from "../messages.ts";
import type { ParseContext } from "./context.ts";
import type { Reader } from "./reader.ts";
import { type Lease, MessageView } from "./view.ts";

/** `S`: Int32 xid, Int8 first-segment flag (1 for the xid's first segment). */
export function parseStreamStart(r: Reader, ctx: ParseContext): StreamStartView {
  const xid = r.u32("xid");
  const firstSegment = r.u8("firstSegment") === 1;
  r.done();
  return new StreamStartView(ctx.lease, r.bytes, r.start, r.end, xid, firstSegment);
}

export class StreamStartView extends MessageView implements StreamStart {
  readonly #xid: number;
  readonly #firstSegment: boolean;

  constructor(lease: Lease, bytes: Uint8Array, start: number, end: number, xid: number, firstSegment: boolean) {
    super(lease, bytes, start, end);
    this.#xid = xid;
    this.#firstSegment = firstSegment;
  }

  get kind(): "StreamStart" {
    this.live();
    return "StreamStart";
  }
  get xid(): number {
    this.live();
    return this.#xid;
  }
  get firstSegment(): boolean {
    this.live();
    return this.#firstSegment;
  }
}

/** `E`: no fields. */
export function parseStreamStop(r: Reader, ctx: ParseContext): StreamStopView {
  r.done();
  return new StreamStopView(ctx.lease, r.bytes, r.start, r.end);
}

export class StreamStopView extends MessageView implements StreamStop {
  get kind(): "StreamStop" {
    this.live();
    return "StreamStop";
  }
}

/** `c`: Int32 xid, Int8 flags, Int64 commit LSN, Int64 end LSN, Int64 commit time. */
export function parseStreamCommit(r: Reader, ctx: ParseContext): StreamCommitView {
  const xid = r.u32("xid");
  const flags = r.u8("flags");
  const commitLsn = r.lsn("commitLsn");
  const endLsn = r.lsn("endLsn");
  const commitTime = r.time("commitTime");
  r.done();
  return new StreamCommitView(ctx.lease, r.bytes, r.start, r.end, xid, flags, commitLsn, endLsn, commitTime);
}

export class StreamCommitView extends MessageView implements StreamCommit {
  readonly #xid: number;
  readonly #flags: number;
  readonly #commitLsn: bigint;
  readonly #endLsn: bigint;
  readonly #commitTime: bigint;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number,
    xid: number, flags: number, commitLsn: bigint, endLsn: bigint, commitTime: bigint,
  ) {
    super(lease, bytes, start, end);
    this.#xid = xid;
    this.#flags = flags;
    this.#commitLsn = commitLsn;
    this.#endLsn = endLsn;
    this.#commitTime = commitTime;
  }

  get kind(): "StreamCommit" {
    this.live();
    return "StreamCommit";
  }
  get xid(): number {
    this.live();
    return this.#xid;
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
 * `A`: Int32 xid, Int32 sub-xid, then with protocol 4 parallel streaming
 * Int64 abort LSN and Int64 abort time. Whether those are present is told by
 * the remaining length: none → absent, 16 bytes → present, anything between
 * → INCOMPLETE (in abortLsn or abortTime), more → TRAILING_BYTES.
 */
export function parseStreamAbort(r: Reader, ctx: ParseContext): StreamAbortView {
  const xid = r.u32("xid");
  const subXid = r.u32("subXid");
  let abortLsn: bigint | null = null;
  let abortTime: bigint | null = null;
  if (r.pos < r.end) {
    abortLsn = r.lsn("abortLsn");
    abortTime = r.time("abortTime");
  }
  r.done();
  return new StreamAbortView(ctx.lease, r.bytes, r.start, r.end, xid, subXid, abortLsn, abortTime);
}

export class StreamAbortView extends MessageView implements StreamAbort {
  readonly #xid: number;
  readonly #subXid: number;
  readonly #abortLsn: bigint | null;
  readonly #abortTime: bigint | null;

  constructor(
    lease: Lease, bytes: Uint8Array, start: number, end: number,
    xid: number, subXid: number, abortLsn: bigint | null, abortTime: bigint | null,
  ) {
    super(lease, bytes, start, end);
    this.#xid = xid;
    this.#subXid = subXid;
    this.#abortLsn = abortLsn;
    this.#abortTime = abortTime;
  }

  get kind(): "StreamAbort" {
    this.live();
    return "StreamAbort";
  }
  get xid(): number {
    this.live();
    return this.#xid;
  }
  get subXid(): number {
    this.live();
    return this.#subXid;
  }
  get abortLsn(): bigint | null {
    this.live();
    return this.#abortLsn;
  }
  get abortTime(): bigint | null {
    this.live();
    return this.#abortTime;
  }
}
