/**
 * The walsender's side of the streaming replication protocol, as a
 * decoder sees it after START_REPLICATION ... LOGICAL: CopyData payloads
 * ('w' XLogData carrying one pgoutput message, 'k' primary keepalive) and,
 * for callers that hand over raw socket bytes, the other backend messages
 * (ErrorResponse, CopyDone, ...). And the client's one message back: the
 * standby status update ('r').
 *
 * A pgoutput message that arrived in an XLogData also has `walStart`,
 * `walEnd` and `sendTime` (see `MessageBase`).
 */
import type { PgoutputMessage } from "./messages.ts";
import { formatLsn } from "./lsn.ts";
import { toPostgresTimestamp } from "./time.ts";
import { readString, toBase64 } from "./utf8.ts";
import { copyBytes } from "./copy-bytes.ts";

/** `k`: the server's keepalive. */
export class PrimaryKeepalive {
  readonly kind = "PrimaryKeepalive" as const;
  constructor(
    /** The current end of WAL on the server. */
    readonly walEnd: bigint,
    /** The server's clock at transmission, µs since the Unix epoch. */
    readonly sendTime: bigint,
    /** The server asks for a standby status update right away (else it may time the client out). */
    readonly replyRequested: boolean,
  ) {}
  materialize(): Record<string, unknown> {
    return { kind: this.kind, walEnd: this.walEnd, sendTime: this.sendTime, replyRequested: this.replyRequested };
  }
  toJSON(): Record<string, unknown> {
    return { kind: this.kind, walEnd: formatLsn(this.walEnd), sendTime: this.sendTime.toString(), replyRequested: this.replyRequested };
  }
}

/**
 * A backend-protocol message other than CopyData, seen when decoding raw
 * socket bytes: `E` ErrorResponse, `N` NoticeResponse, `c` CopyDone, `C`
 * CommandComplete, `Z` ReadyForQuery, `W` CopyBothResponse, ...
 */
export class BackendMessage {
  readonly kind = "BackendMessage" as const;
  constructor(
    /** The message type byte as a character. */
    readonly type: string,
    /** The message body (after the type and length), a copy. */
    readonly body: Uint8Array,
  ) {}
  /** For ErrorResponse and NoticeResponse: the fields by code (`S` severity, `C` SQLSTATE, `M` message, `D` detail, `H` hint, ...). */
  get fields(): Record<string, string> | undefined {
    return this.type === "E" || this.type === "N" ? noticeFields(this.body) : undefined;
  }
  materialize(): Record<string, unknown> {
    return { kind: this.kind, type: this.type, body: copyBytes(this.body, 0, this.body.length), ...(this.fields ? { fields: this.fields } : {}) };
  }
  toJSON(): Record<string, unknown> {
    return { kind: this.kind, type: this.type, body: toBase64(this.body), ...(this.fields ? { fields: this.fields } : {}) };
  }
}

/** Anything a replication stream can carry. */
export type WalMessage = PgoutputMessage | PrimaryKeepalive | BackendMessage;

/** The fields of an ErrorResponse / NoticeResponse body: (code byte, String)* then a zero byte. */
export function noticeFields(body: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  let p = 0;
  while (p < body.length && body[p] !== 0) {
    const code = String.fromCharCode(body[p]!);
    let q = p + 1;
    while (q < body.length && body[q] !== 0) q++;
    out[code] = readString(body, p + 1, q - p - 1);
    p = q + 1;
  }
  return out;
}

export interface StandbyStatus {
  /** The last WAL byte + 1 received and written to disk. */
  written: bigint;
  /** The last WAL byte + 1 flushed to disk: the server may free WAL before it. */
  flushed: bigint;
  /** The last WAL byte + 1 applied. */
  applied: bigint;
  /** The client's clock, µs since the Unix epoch (default: now). */
  clientTime?: bigint;
  /** Ask the server to reply immediately. */
  replyRequested?: boolean;
}

/** Encodes a standby status update: the CopyData payload `r` the client sends (34 bytes). */
export function encodeStandbyStatusUpdate(status: StandbyStatus): Uint8Array {
  const out = new Uint8Array(34);
  const dv = new DataView(out.buffer);
  out[0] = 0x72; // 'r'
  dv.setBigUint64(1, status.written);
  dv.setBigUint64(9, status.flushed);
  dv.setBigUint64(17, status.applied);
  // The protocol's clock counts from 2000-01-01, not the Unix epoch.
  dv.setBigInt64(25, toPostgresTimestamp(status.clientTime ?? BigInt(Date.now()) * 1000n));
  out[33] = status.replyRequested ? 1 : 0;
  return out;
}
