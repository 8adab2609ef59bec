/**
 * A TCP proxy on 127.0.0.1 in front of a Redis server that sees each command
 * the client sends (RESP arrays of bulk strings, cut at their boundaries) and
 * may change it before it goes on: what a real server will not do on demand,
 * such as refusing one call of a pipeline while taking the ones behind it.
 * Replies pass unchanged, so they stay in order.
 */
import * as net from "node:net";

export interface RespProxy {
  port: number;
  /** Commands seen so far, by name (upper case), over every connection. */
  readonly seen: string[];
  close(): Promise<void>;
}

/** The end of the first whole command in `buf`, or -1 when it is not all there. */
function commandEnd(buf: Buffer): number {
  const line = (from: number): [number, number] | undefined => {
    const cr = buf.indexOf("\r\n", from);
    return cr < 0 ? undefined : [Number(buf.toString("latin1", from + 1, cr)), cr + 2];
  };
  if (buf.length === 0) return -1;
  if (buf[0] !== 0x2a) throw new Error(`not a RESP command: ${JSON.stringify(buf.toString("latin1", 0, 20))}`);
  const head = line(0);
  if (head === undefined) return -1;
  let [n, at] = head;
  for (; n > 0; n--) {
    const bulk = line(at);
    if (bulk === undefined) return -1;
    const end = bulk[1] + bulk[0] + 2;
    if (end > buf.length) return -1;
    at = end;
  }
  return at;
}

/** The i-th argument of a whole command, as text. */
export function argument(cmd: Buffer, i: number): string {
  let at = cmd.indexOf("\r\n") + 2;
  for (let k = 0; ; k++) {
    const cr = cmd.indexOf("\r\n", at);
    const len = Number(cmd.toString("latin1", at + 1, cr));
    if (k === i) return cmd.toString("utf8", cr + 2, cr + 2 + len);
    at = cr + 2 + len + 2;
  }
}

/**
 * `change(cmd, name, n)` gets every command (n counts the commands of that
 * name, from 0, over all connections) and returns what to send instead.
 */
export async function respProxy(targetPort: number, change: (cmd: Buffer, name: string, n: number) => Buffer = (c) => c): Promise<RespProxy> {
  const sockets = new Set<net.Socket>();
  const seen: string[] = [];
  const counts = new Map<string, number>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    let pending = Buffer.alloc(0);
    client.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (let end = commandEnd(pending); end > 0; end = commandEnd(pending)) {
        const cmd = pending.subarray(0, end);
        pending = pending.subarray(end);
        const name = argument(cmd, 0).toUpperCase();
        const n = counts.get(name) ?? 0;
        counts.set(name, n + 1);
        seen.push(name);
        upstream.write(change(Buffer.from(cmd), name, n));
      }
    });
    upstream.on("data", (chunk) => client.write(chunk));
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    seen,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The command with its second argument (an EVALSHA's SHA-1) replaced by one no script has: the server answers NOSCRIPT and runs nothing. */
export function unknownScript(cmd: Buffer): Buffer {
  const sha = argument(cmd, 1);
  const at = cmd.indexOf(sha);
  const out = Buffer.from(cmd);
  out.write("0".repeat(sha.length), at, "latin1");
  return out;
}
