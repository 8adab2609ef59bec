/**
 * Entering and leaving CopyBoth mode, as the stream reads it: the server's
 * answer to START_REPLICATION (CopyBothResponse `W`, or an error), what a
 * backend message other than CopyData means while streaming (an error that
 * ends the stream, a notice, or nothing), and the answer to CopyDone (the
 * server's ReadyForQuery). Each reads decoded items with `take` (the socket
 * reader's), in stream order.
 */
import type { BackendMessage, WalMessage } from "../walsender.ts";
import type { ReplicateOptions } from "./options.ts";
import { ReplicationError, fromErrorFields } from "./errors.ts";

export type OnNotice = ReplicateOptions["onNotice"];

/** What a backend message other than CopyData means for the stream: an error that ends it, or nothing (a NoticeResponse goes to `onNotice`). */
export function backendMessageError(msg: BackendMessage, onNotice: OnNotice): ReplicationError | undefined {
  switch (msg.type) {
    case "E":
      return fromErrorFields(msg.fields ?? {}, "replication failed");
    case "N": {
      const f = msg.fields ?? {};
      onNotice?.({ severity: f.V ?? f.S, code: f.C, message: f.M ?? "" });
      return undefined;
    }
    case "c": // CopyDone, CommandComplete, ReadyForQuery: the server left CopyBoth mode
    case "C":
    case "Z":
      return new ReplicationError("the server ended the replication stream", { code: "STREAM_ENDED" });
    default: // ParameterStatus and the like
      return undefined;
  }
}

/**
 * Before CopyBothResponse: the server's answer to START_REPLICATION so far.
 * `streaming` once the CopyBothResponse came (what follows it stays for
 * the consumer), the error that fails the start, or `undefined` while more
 * must be read.
 */
export function startAnswer(take: () => WalMessage | undefined, onNotice: OnNotice): "streaming" | ReplicationError | undefined {
  try {
    for (let item = take(); item !== undefined; item = take()) {
      if (item.kind !== "BackendMessage") {
        return new ReplicationError(`the server sent ${item.kind} before entering CopyBoth mode`, { code: "DECODE_ERROR" });
      }
      if (item.type === "W") return "streaming";
      const error = backendMessageError(item, onNotice);
      if (error !== undefined) return error;
    }
  } catch (e) {
    return e as ReplicationError; // a frame the decoder rejected
  }
  return undefined;
}

/** After CopyDone: reads what the server still sends; true once its ReadyForQuery (or an ErrorResponse) came, or nothing more can be read. */
export function stopAnswered(take: () => WalMessage | undefined): boolean {
  try {
    for (let item = take(); item !== undefined; item = take()) {
      if (item.kind === "BackendMessage" && (item.type === "Z" || item.type === "E")) return true;
    }
  } catch {
    return true; // nothing more can be read
  }
  return false;
}
