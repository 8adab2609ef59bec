/**
 * A webhook receiver on 127.0.0.1 for the HTTP sink's tests: it answers each
 * POST as the test says (a status, headers, a delay, or a cut connection),
 * keeps what it accepted, and reads the records back from the bodies with
 * their ids (`Change-Ids`), as a real receiver would.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
  /** ms since the receiver started. */
  readonly at: number;
}

/** What to answer: a status (with headers and body), or `"cut"` to close the connection without an answer. */
export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | "cut";

export interface Webhook {
  readonly url: string;
  /** Every request, answered 2xx or not, in arrival order. */
  readonly requests: Received[];
  /** The requests answered 2xx. */
  readonly accepted: Received[];
  /** The most requests that were open at once. */
  readonly mostAtOnce: number;
  close(): Promise<void>;
}

export async function startWebhook(answer: (req: Received, n: number) => Answer = () => ({ status: 200 })): Promise<Webhook> {
  const t0 = Date.now();
  const requests: Received[] = [];
  const accepted: Received[] = [];
  let open = 0;
  let most = 0;
  const server = http.createServer((req, res) => {
    open++;
    most = Math.max(most, open);
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(parts), at: Date.now() - t0 };
      const n = requests.push(r) - 1;
      const a = answer(r, n);
      const finish = () => {
        open--;
        if (a === "cut") return void req.socket.destroy();
        if (a.status >= 200 && a.status < 300) accepted.push(r);
        res.writeHead(a.status, a.headers);
        res.end(a.body ?? "");
      };
      if (a !== "cut" && a.delayMs !== undefined) setTimeout(finish, a.delayMs);
      else finish();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    requests,
    accepted,
    get mostAtOnce() {
      return most;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The ids a `Change-Ids` header lists, in order: runs `X/Y:a-b` and single ids `X/Y:a` (`snapshot:X/Y:a`). */
export function changeIds(header: string): string[] {
  const out: string[] = [];
  for (const run of header.split(",")) {
    const colon = run.lastIndexOf(":");
    const [first, last] = run.substring(colon + 1).split("-").map(Number);
    for (let i = first!; i <= (last ?? first!); i++) out.push(`${run.substring(0, colon)}:${i}`);
  }
  return out;
}

/** The elements of a JSON array as the text they were sent as (JSON.parse would round big integers). */
export function arrayElements(text: string): string[] {
  JSON.parse(text); // valid JSON, or this throws
  const out: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (--depth === 0 && i > start) out.push(text.substring(start, i));
    } else if (c === "," && depth === 1) {
      out.push(text.substring(start, i));
      start = i + 1;
    }
  }
  return out;
}

/** The records of an accepted request, with their ids: JSON Lines (a line each) or a JSON array (an element each). */
export function recordsOf(r: Received): { id: string; line: string }[] {
  const ids = changeIds(String(r.headers["change-ids"]));
  const text = r.body.toString("utf8");
  const lines = r.headers["content-type"] === "application/json" ? arrayElements(text) : text.split("\n").slice(0, -1);
  if (lines.length !== ids.length) throw new Error(`${lines.length} records under ${ids.length} ids`);
  return ids.map((id, i) => ({ id, line: lines[i]! }));
}
