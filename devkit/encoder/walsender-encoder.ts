/**
 * Test-support encoder for the walsender side of a replication stream:
 * CopyData payloads (`w` XLogData wrapping a pgoutput message, `k` primary
 * keepalive) and raw backend-protocol frames (`[type][Int32 length counting
 * itself][body]`: CopyData `d`, ErrorResponse `E`, NoticeResponse `N`,
 * CopyDone `c`, CommandComplete `C`, ReadyForQuery `Z`, CopyBothResponse `W`).
 *
 * Like `encoder.ts`, every builder returns the bytes with the value a
 * decoder's `materialize()` must give for them, and the offsets where fields
 * start. Times are µs since the Unix epoch (written as µs since 2000-01-01).
 *
 * @example
 * ```ts
 * const w = wal.xlogData(encode.begin({...}), { walStart: 1n, walEnd: 2n, sendTime: 3n });
 * const k = wal.keepalive({ walEnd: 2n, sendTime: 3n, replyRequested: true });
 * decoder.decodeCopyData([w.bytes, k.bytes]).materialize(); // [w.expected, k.expected]
 * const raw = backendStream([backend.copyBothResponse(), backend.copyData(w), backend.copyDone()]);
 * ```
 */
import { concat, toWireTime, Writer, type Encoded } from "./encoder.ts";

/** The XLogData header fields (times in µs since the Unix epoch). */
export interface XLogHeader {
  walStart: bigint;
  walEnd: bigint;
  sendTime: bigint;
}

export interface KeepaliveDesc {
  walEnd: bigint;
  sendTime: bigint;
  replyRequested: boolean;
}

/** A built walsender payload or backend frame. */
export interface WalEncoded {
  readonly kind: string;
  readonly bytes: Uint8Array;
  readonly expected: Record<string, unknown>;
  /** Field start offsets in `bytes` (for an XLogData also `message`, and the wrapped message's fields as `message.<name>`). */
  readonly offsets: Readonly<Record<string, number>>;
}

/** Bytes before the pgoutput message in an XLogData payload. */
export const XLOGDATA_PREFIX = 25;
/** Bytes of a keepalive payload. */
export const KEEPALIVE_LENGTH = 18;

export const wal = {
  /** `w` XLogData around one pgoutput message (an `Encoded`, or raw bytes with no meaningful expected value). */
  xlogData(message: Encoded | Uint8Array, h: XLogHeader): WalEncoded {
    const m = message instanceof Uint8Array ? message : message.bytes;
    const w = new Writer().char("w").mark("walStart").u64(h.walStart).mark("walEnd").u64(h.walEnd);
    w.mark("sendTime").i64(toWireTime(h.sendTime)).mark("message").raw(m);
    const offsets: Record<string, number> = { ...w.offsets };
    if (!(message instanceof Uint8Array)) {
      for (const [k, v] of Object.entries(message.offsets)) offsets[`message.${k}`] = XLOGDATA_PREFIX + v;
    }
    const expected = message instanceof Uint8Array ? {} : { ...message.expected, walStart: h.walStart, walEnd: h.walEnd, sendTime: h.sendTime };
    return { kind: message instanceof Uint8Array ? "XLogData" : message.kind, bytes: w.finish(), expected, offsets };
  },

  /** `k` primary keepalive; `replyByte` overrides the Byte1 (any non-zero means requested). */
  keepalive(d: KeepaliveDesc, replyByte?: number): WalEncoded {
    const w = new Writer().char("k").mark("walEnd").u64(d.walEnd).mark("sendTime").i64(toWireTime(d.sendTime));
    w.mark("replyRequested").u8(replyByte ?? (d.replyRequested ? 1 : 0));
    return {
      kind: "PrimaryKeepalive",
      bytes: w.finish(),
      expected: { kind: "PrimaryKeepalive", walEnd: d.walEnd, sendTime: d.sendTime, replyRequested: d.replyRequested },
      offsets: w.offsets,
    };
  },
};

// ---------------------------------------------------------------------------
// Backend-protocol frames

const utf8 = new TextEncoder();

/** A backend message frame: type byte, Int32 length (counting itself), body. */
export function backendFrame(type: string, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + body.length);
  out[0] = type.charCodeAt(0);
  new DataView(out.buffer).setInt32(1, 4 + body.length);
  out.set(body, 5);
  return out;
}

/** The body of an ErrorResponse / NoticeResponse: (code byte, String)* then a zero byte. */
export function noticeBody(fields: Readonly<Record<string, string>>): Uint8Array {
  const w = new Writer();
  for (const [code, value] of Object.entries(fields)) w.char(code).cstring(value);
  return w.u8(0).finish();
}

/** A built backend frame with the value its decoded form must materialize to. */
export interface BackendEncoded {
  readonly kind: string;
  readonly bytes: Uint8Array;
  /** Expected materialize() values, in order (one per frame; a CopyData gives its payload's). */
  readonly expected: Record<string, unknown>;
}

function other(type: string, body: Uint8Array, fields?: Record<string, string>): BackendEncoded {
  return {
    kind: "BackendMessage",
    bytes: backendFrame(type, body),
    expected: { kind: "BackendMessage", type, body, ...(fields ? { fields } : {}) },
  };
}

export const backend = {
  /** `d` CopyData carrying a walsender payload. */
  copyData(payload: WalEncoded | Uint8Array): BackendEncoded {
    const p = payload instanceof Uint8Array ? payload : payload.bytes;
    return {
      kind: payload instanceof Uint8Array ? "CopyData" : payload.kind,
      bytes: backendFrame("d", p),
      expected: payload instanceof Uint8Array ? {} : payload.expected,
    };
  },
  /** `W` CopyBothResponse: Int8 overall format, Int16 column count, Int16 format per column (0 columns for replication). */
  copyBothResponse(format = 0, columnFormats: readonly number[] = []): BackendEncoded {
    const w = new Writer().u8(format).i16(columnFormats.length);
    for (const f of columnFormats) w.i16(f);
    return other("W", w.finish());
  },
  /** `E` ErrorResponse. */
  errorResponse(fields: Record<string, string>): BackendEncoded {
    return other("E", noticeBody(fields), fields);
  },
  /** `N` NoticeResponse. */
  noticeResponse(fields: Record<string, string>): BackendEncoded {
    return other("N", noticeBody(fields), fields);
  },
  /** `c` CopyDone. */
  copyDone(): BackendEncoded {
    return other("c", new Uint8Array(0));
  },
  /** `C` CommandComplete with its tag (e.g. `START_REPLICATION`). */
  commandComplete(tag: string): BackendEncoded {
    return other("C", concat([utf8.encode(tag), new Uint8Array([0])]));
  },
  /** `Z` ReadyForQuery with the transaction status (`I` idle). */
  readyForQuery(status = "I"): BackendEncoded {
    return other("Z", new Uint8Array([status.charCodeAt(0)]));
  },
  /** Any other message type with a given body. */
  other(type: string, body: Uint8Array): BackendEncoded {
    return other(type, body);
  },
};

/** Concatenates backend frames into the raw bytes of a stream. */
export function backendStream(frames: readonly (BackendEncoded | Uint8Array)[]): Uint8Array {
  return concat(frames.map((f) => (f instanceof Uint8Array ? f : f.bytes)));
}

/** Offset of frame `index`'s type byte in `backendStream(frames)`. */
export function backendOffset(frames: readonly (BackendEncoded | Uint8Array)[], index: number): number {
  let p = 0;
  for (let i = 0; i < index; i++) {
    const f = frames[i]!;
    p += f instanceof Uint8Array ? f.length : f.bytes.length;
  }
  return p;
}
