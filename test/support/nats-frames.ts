/**
 * The client side of the NATS protocol, frame by frame, for a proxy that
 * loses or holds back chosen publishes (delay-proxy.ts `fromClient`): a
 * PUB/HPUB frame is its line and its payload; every other frame (CONNECT,
 * SUB, PING, …) is one line. Frames are forwarded whole, in order, except
 * those `choose` drops or delays.
 */
import type { Rewriter } from "./delay-proxy.ts";

export interface Publish {
  subject: string;
  /** The header block (HPUB), as text. */
  headers: string;
}

/** `drop`: never forwarded; a number: forwarded after that many ms (later frames go on without it). */
export type Fate = "pass" | "drop" | number;

const CRLF = Buffer.from("\r\n");

/** A rewriter per connection; `choose` sees each publish in the order sent, across connections. */
export function publishFilter(choose: (p: Publish) => Fate): () => Rewriter {
  return () => {
    let pending: Buffer = Buffer.alloc(0);
    return (chunk, forward) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const out: Buffer[] = [];
      let at = 0;
      for (;;) {
        const eol = pending.indexOf(CRLF, at);
        if (eol < 0) break;
        const line = pending.subarray(at, eol).toString("latin1");
        const words = line.split(" ");
        const op = words[0]!.toUpperCase();
        let end = eol + 2;
        let fate: Fate = "pass";
        if (op === "PUB" || op === "HPUB") {
          const total = Number(words[words.length - 1]);
          const headerSize = op === "HPUB" ? Number(words[words.length - 2]) : 0;
          if (pending.length < end + total + 2) break; // the payload is not all here yet
          const headers = pending.subarray(end, end + headerSize).toString("utf8");
          end += total + 2;
          fate = choose({ subject: words[1]!, headers });
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
