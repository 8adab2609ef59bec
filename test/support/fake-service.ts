/**
 * Services on 127.0.0.1 that are not PostgreSQL, for what a client meets
 * when it is pointed at the wrong port: an HTTP server (answers the first
 * bytes with a 400), a socket answering with a TLS alert record, a real TLS
 * server (node:tls, a throwaway certificate: it hangs up on a plaintext
 * hello), an SSH server (its banner first, before anything is asked), and a
 * port that accepts and never says anything. Each writes a fixed answer
 * once per connection: nothing loops.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import * as tls from "node:tls";

export type ServiceKind = "http" | "tls-record" | "tls" | "ssh" | "silent";

export interface FakeService {
  port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

const HTTP_400 = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nConnection: close\r\n\r\nBad Request";
/** A TLS alert record (type 21, TLS 1.2): fatal, protocol_version (70). */
const TLS_ALERT = new Uint8Array([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46]);
const SSH_BANNER = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n";

/** A self-signed certificate for 127.0.0.1, made with openssl in a temporary folder that is removed at once. */
function throwawayCertificate(): { key: Buffer; cert: Buffer } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pgoutputwasm-cert-"));
  try {
    const key = path.join(dir, "key.pem");
    const cert = path.join(dir, "cert.pem");
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"], { stdio: "ignore" });
    return { key: fs.readFileSync(key), cert: fs.readFileSync(cert) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function startFakeService(kind: ServiceKind): Promise<FakeService> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const serve = (socket: net.Socket): void => {
    accepted++;
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    if (kind === "ssh") socket.write(SSH_BANNER);
    if (kind === "http") socket.once("data", () => socket.end(HTTP_400));
    if (kind === "tls-record") socket.once("data", () => socket.end(TLS_ALERT));
    // silent, ssh: say nothing (more); tls: the TLS server itself hangs up on a hello that is not TLS.
  };
  const server = kind === "tls" ? tls.createServer(throwawayCertificate(), () => {}) : net.createServer(serve);
  if (kind === "tls") {
    server.on("connection", (socket: net.Socket) => serve(socket));
    server.on("tlsClientError", () => {});
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get accepted() {
      return accepted;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
