/**
 * The NATS protocol, frame by frame, for a proxy that loses or holds back
 * chosen frames (delay-proxy.ts `fromClient` / `fromServer`): a PUB, HPUB,
 * MSG or HMSG frame is its line and its payload; every other frame
 * (CONNECT, INFO, SUB, PING, …) is one line. Frames are forwarded whole, in
 * order, except those `choose` drops or delays.
 */
import type { Rewriter } from "./delay-proxy.ts";

export interface Frame {
  /** PUB, HPUB, MSG or HMSG. */
  op: string;
  subject: string;
  /** The header block (HPUB, HMSG), as text. */
  headers: string;
  payload: Buffer;
}

/** `drop`: never forwarded; a number: forwarded after that many ms (later frames go on without it). */
export type Fate = "pass" | "drop" | number;

const CRLF = Buffer.from("\r\n");
const WITH_PAYLOAD = new Set(["PUB", "HPUB", "MSG", "HMSG"]);

/** A rewriter per connection; `choose` sees each frame with a payload in the order sent, across connections. */
export function frameFilter(choose: (f: Frame) => Fate): () => Rewriter {
  return () => {
    let pending: Buffer = Buffer.alloc(0);
    return (chunk, forward) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const out: Buffer[] = [];
      let at = 0;
      for (;;) {
        const eol = pending.indexOf(CRLF, at);
        if (eol < 0) break;
        const words = pending.subarray(at, eol).toString("latin1").split(" ");
        const op = words[0]!.toUpperCase();
        let end = eol + 2;
        let fate: Fate = "pass";
        if (WITH_PAYLOAD.has(op)) {
          const total = Number(words[words.length - 1]);
          const headerSize = op.startsWith("H") ? Number(words[words.length - 2]) : 0;
          if (pending.length < end + total + 2) break; // the payload is not all here yet
          const headers = pending.subarray(end, end + headerSize).toString("utf8");
          const payload = pending.subarray(end + headerSize, end + total);
          end += total + 2;
          fate = choose({ op, subject: words[1]!, headers, payload });
        }
        const frame = pending.subarray(at, end);
        if (fate === "pass") out.push(frame);
        else if (typeof fate === "number") {
          const late = Buffer.from(frame);
          setTimeout(() => forward(late), fate);
        }
        at = end;
      }
      pending = Buffer.from(pending.subarray(at));
      if (out.length > 0) forward(Buffer.concat(out));
    };
  };
}
