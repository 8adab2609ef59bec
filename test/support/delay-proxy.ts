/**
 * A TCP proxy on 127.0.0.1 in front of a local port that delays every chunk,
 * both ways, by `delayMs`: a real server behind a slow network. Chunks keep
 * their order (each direction is one timer queue).
 */
import * as net from "node:net";

export interface DelayProxy {
  port: number;
  close(): Promise<void>;
}

export async function delayProxy(targetPort: number, delayMs: number): Promise<DelayProxy> {
  const sockets = new Set<net.Socket>();
  const relay = (from: net.Socket, to: net.Socket) => {
    from.on("data", (chunk) => setTimeout(() => to.destroyed || to.write(chunk), delayMs));
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
    relay(client, upstream);
    relay(upstream, client);
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
