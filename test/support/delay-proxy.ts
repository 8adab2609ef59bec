/**
 * A TCP proxy on 127.0.0.1 in front of a local port that delays every chunk,
 * both ways, by `delayMs`: a real server behind a slow network. Chunks keep
 * their order (each direction is one timer queue). `fromClient` and
 * `fromServer` rewrite what each side sends (one rewriter per connection: it
 * may hold back a partial frame, drop or delay one), for a network that
 * loses a publish or its acknowledgement.
 */
import * as net from "node:net";

export interface DelayProxy {
  port: number;
  close(): Promise<void>;
}

/** Per connection: takes each chunk the client sent and forwards what it returns, through `forward` (now or later). */
export type Rewriter = (chunk: Buffer, forward: (bytes: Buffer) => void) => void;

export interface DelayProxyOptions {
  fromClient?: () => Rewriter;
  fromServer?: () => Rewriter;
}

export async function delayProxy(targetPort: number, delayMs: number, options: DelayProxyOptions = {}): Promise<DelayProxy> {
  const sockets = new Set<net.Socket>();
  const relay = (from: net.Socket, to: net.Socket, rewrite?: Rewriter) => {
    const send = (chunk: Buffer) => setTimeout(() => to.destroyed || to.write(chunk), delayMs);
    from.on("data", (chunk: Buffer) => (rewrite === undefined ? send(chunk) : rewrite(chunk, send)));
    from.on("end", () => setTimeout(() => to.end(), delayMs));
    from.on("close", () => setTimeout(() => to.destroy(), delayMs));
    from.on("error", () => to.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    }
    relay(client, upstream, options.fromClient?.());
    relay(upstream, client, options.fromServer?.());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
