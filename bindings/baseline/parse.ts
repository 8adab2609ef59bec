/**
 * Reads one whole pgoutput message: its tag byte picks the parse function.
 * The reader must be pointed at the message; state changes other than the
 * caches (the in-stream flag) are left to the decoder.
 */
import { kindOfTag, MessageTag, type PgoutputMessage } from "../messages.ts";
import type { ParseContext } from "./context.ts";
import type { Reader } from "./reader.ts";
import { parseDelete, parseInsert, parseTruncate, parseUpdate } from "./changes.ts";
import { parseRelation, parseType } from "./schema.ts";
import { parseStreamAbort, parseStreamCommit, parseStreamStart, parseStreamStop } from "./streaming.ts";
import { parseBegin, parseCommit, parseLogicalMessage, parseOrigin } from "./transaction.ts";
import {
  parseBeginPrepare, parseCommitPrepared, parsePrepare, parseRollbackPrepared, parseStreamPrepare,
} from "./two-phase.ts";

export function parseMessage(r: Reader, ctx: ParseContext): PgoutputMessage {
  const p = r.pos;
  if (p >= r.end) throw r.error("INCOMPLETE", "tag", p, "empty message");
  const tag = r.bytes[p]!;
  const kind = kindOfTag(tag);
  if (kind === undefined) throw r.error("UNKNOWN_MESSAGE", "tag", p, `unknown message tag 0x${tag.toString(16)}`);
  r.kind = kind;
  r.pos = p + 1;
  switch (tag) {
    case MessageTag.Begin: return parseBegin(r, ctx);
    case MessageTag.Commit: return parseCommit(r, ctx);
    case MessageTag.Origin: return parseOrigin(r, ctx);
    case MessageTag.Message: return parseLogicalMessage(r, ctx);
    case MessageTag.Relation: return parseRelation(r, ctx);
    case MessageTag.Type: return parseType(r, ctx);
    case MessageTag.Insert: return parseInsert(r, ctx);
    case MessageTag.Update: return parseUpdate(r, ctx);
    case MessageTag.Delete: return parseDelete(r, ctx);
    case MessageTag.Truncate: return parseTruncate(r, ctx);
    case MessageTag.StreamStart: return parseStreamStart(r, ctx);
    case MessageTag.StreamStop: return parseStreamStop(r, ctx);
    case MessageTag.StreamCommit: return parseStreamCommit(r, ctx);
    case MessageTag.StreamAbort: return parseStreamAbort(r, ctx);
    case MessageTag.BeginPrepare: return parseBeginPrepare(r, ctx);
    case MessageTag.Prepare: return parsePrepare(r, ctx);
    case MessageTag.CommitPrepared: return parseCommitPrepared(r, ctx);
    case MessageTag.RollbackPrepared: return parseRollbackPrepared(r, ctx);
    case MessageTag.StreamPrepare: return parseStreamPrepare(r, ctx);
    default: throw r.error("UNKNOWN_MESSAGE", "tag", p, `no parser for tag 0x${tag.toString(16)}`); // unreachable
  }
}
