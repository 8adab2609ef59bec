import * as net from "node:net";

/** A TCP port on 127.0.0.1 nobody listens on: bound, then closed (a connection to it is refused). */
export function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
}
