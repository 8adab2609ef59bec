/**
 * What a JetStream stream tells the NATS sink: where it is (its last
 * sequence and message), what a PubAck says, and the API error codes the
 * publisher acts on.
 */
import type { JetStreamManager, StreamInfo } from "nats";

/** What the stream holds last. */
export interface StreamTop {
  seq: number;
  /** The last message's `Nats-Msg-Id` (`undefined`: the stream is empty, or it has none). */
  id: string | undefined;
  subject: string | undefined;
}

export interface PubAck {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: { code: number; err_code: number; description: string };
}

const decoder = new TextDecoder();

/** The server's PubAck: the common `{"stream":"S", "seq":N}` read directly (one is parsed per message), anything else as JSON. */
export function parsePubAck(data: Uint8Array): PubAck {
  const text = decoder.decode(data);
  const m = /^\{"stream":"([^"\\]*)",\s*"seq":(\d+)\}$/.exec(text);
  return m === null ? (JSON.parse(text) as PubAck) : { stream: m[1], seq: Number(m[2]) };
}

export const WRONG_LAST_SEQUENCE = 10071;
export const STREAM_NOT_FOUND = 10059;

/** The JetStream API error code of a failed request (`err_code`), if it has one. */
export function apiErrorCode(e: unknown): number | undefined {
  return (e as { api_error?: { err_code?: number } } | undefined)?.api_error?.err_code;
}

/** The stream's last sequence and, when it has one, its last message's id and subject. */
export async function readTop(jsm: JetStreamManager, stream: string, info?: StreamInfo): Promise<StreamTop> {
  const si = info ?? (await jsm.streams.info(stream));
  const seq = si.state.last_seq;
  if (seq === 0 || si.state.messages === 0) return { seq, id: undefined, subject: undefined };
  try {
    const m = await jsm.streams.getMessage(stream, { seq });
    return { seq, id: m.header?.get("Nats-Msg-Id") || undefined, subject: m.subject };
  } catch (e) {
    // The last message was removed (max_age, a purge of its subject): nothing to tell it by.
    if (/no message found/i.test((e as Error).message)) return { seq, id: undefined, subject: undefined };
    throw e;
  }
}
