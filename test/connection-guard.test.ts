/**
 * The connection guard (bindings/pg/guard.ts): bounds on the connections
 * pg parses — the replication connection before START_REPLICATION, the
 * side and snapshot copy connections. Against a fake server on 127.0.0.1
 * (a real one does not send 2 GB rows or fall silent on cue): an oversized
 * answer is refused at its header with memory bounded (< 48 MiB), silence
 * while an answer is awaited is a retryable typed error, and what may
 * rightly be slow (patiently(), a copy paused for backpressure, an idle
 * connection) is not cut off. The frame walk itself is checked on a
 * stand-in socket, split at every byte.
 */
import { EventEmitter } from "node:events";
import * as net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import pg, { type Client, type ClientConfig } from "pg";
import { replicate, type ReplicateOptions } from "../bindings/pg/index.ts";
import { connectClient, resolveConnection } from "../bindings/pg/client.ts";
import { ConnectionGuard, guardOf, patiently } from "../bindings/pg/guard.ts";
import { copyOut } from "../bindings/pg/copy-out.ts";
import { isPgoutputError } from "../bindings/errors.ts";
import { backend, backendFrame } from "../devkit/encoder/walsender-encoder.ts";
import { rows, send, startFakeWalsender, type FakeSetup, type FakeWalsender } from "./support/fake-walsender.ts";
import { liveBytes } from "./support/memory.ts";
import { startFakeService, type FakeService, type ServiceKind } from "./support/fake-service.ts";

const MIB = 1 << 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let fake: FakeWalsender | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => {});
  await fake?.close();
  fake = undefined;
});

/** A backend message header declaring a body of `bodyLength` bytes (the body not included). */
function header(tag: string, bodyLength: number): Uint8Array {
  const h = new Uint8Array(5);
  h[0] = tag.charCodeAt(0);
  new DataView(h.buffer).setUint32(1, 4 + bodyLength);
  return h;
}

const base = (f: FakeWalsender): ClientConfig => ({ host: "127.0.0.1", port: f.port, user: "fake", database: "fake" });

/** A server that answers queries matching `pattern` with `bytes`. */
function answering(pattern: RegExp, bytes: Uint8Array): FakeSetup {
  return {
    onQuery: (text, socket) => {
      if (!pattern.test(text)) return false;
      socket.write(bytes);
      return true;
    },
  };
}

async function start(setup: FakeSetup): Promise<FakeWalsender> {
  fake = await startFakeWalsender(() => {}, setup);
  return fake;
}

async function replicateError(f: FakeWalsender, extra: Partial<ReplicateOptions> = {}): Promise<unknown> {
  try {
    const s = await replicate({ connection: base(f), slot: "s", publications: "p", reconnect: false, ...extra });
    await s.stop();
  } catch (e) {
    return e;
  }
  throw new Error("replicate() succeeded");
}

/** A plain guarded client of the fake server (as the side and copy connections are made). */
async function guarded(f: FakeWalsender, receiveTimeoutMs: number): Promise<Client> {
  const client = await connectClient(resolveConnection(base(f)), undefined, { replication: false, limits: { maxMessageSize: MIB, receiveTimeoutMs } });
  clients.push(client);
  return client;
}

/** Streams `total` bytes of 1 MiB writes until the client hangs up; the bytes the socket took. */
async function flood(socket: net.Socket, total: number): Promise<number> {
  const junk = new Uint8Array(MIB).fill(0x77);
  let sent = 0;
  for (let i = 0; i < total / MIB && (await send(socket, junk)); i++) sent += MIB;
  return sent;
}

describe("before START_REPLICATION: replicate() against a hostile or stalled server", () => {
  it("a DataRow declaring 2 GB in answer to SHOW: DECODE_ERROR at its header while 256 MiB follow, memory bounded", async () => {
    let sent = 0;
    let flooding: Promise<number> | undefined;
    const f = await start({
      onQuery: (text, socket) => {
        if (!/server_version_num/.test(text)) return false;
        flooding = send(socket, header("D", 2_000_000_000)).then(() => flood(socket, 256 * MIB));
        return true;
      },
    });
    const before = liveBytes();
    const error = await replicateError(f);
    sent = (await flooding) ?? 0;
    const growth = liveBytes() - before;
    expect(error).toMatchObject({ name: "ReplicationError", code: "DECODE_ERROR", retryable: false });
    const cause = (error as { cause: unknown }).cause;
    expect(isPgoutputError(cause) && cause.code).toBe("MESSAGE_TOO_LARGE");
    expect(isPgoutputError(cause) && cause.field).toBe("frameLength");
    expect((error as Error).message).toMatch(/DataRow message \(0x44\) of 2000000000 bytes, over maxMessageSize \(1073741824\)/);
    expect(growth).toBeLessThan(48 * MIB);
    expect(sent).toBeLessThan(256 * MIB);
    console.info(`${(error as Error).message}; the server sent ${(sent / MIB).toFixed(0)} MiB before the client closed; live memory growth ${(growth / MIB).toFixed(1)} MiB`);
  });

  it("maxMessageSize applies: a 2 MiB row in answer to the slot query with maxMessageSize 1 MiB", async () => {
    const f = await start(answering(/pg_replication_slots/, rows(["x"], ["y".repeat(2 * MIB)])));
    const error = await replicateError(f, { maxMessageSize: MIB });
    expect(error).toMatchObject({ code: "DECODE_ERROR" });
    expect((error as { cause: { code: string } }).cause.code).toBe("MESSAGE_TOO_LARGE");
  });

  it("a message length under 4 is DECODE_ERROR (INVALID_LENGTH), not left to pg", async () => {
    const f = await start(answering(/server_version_num/, new Uint8Array([0x44, 0, 0, 0, 2])));
    const error = await replicateError(f);
    expect(error).toMatchObject({ code: "DECODE_ERROR" });
    expect((error as { cause: { code: string } }).cause.code).toBe("INVALID_LENGTH");
  });

  it("a DataRow whose columns overrun it (pg's parser throws): DECODE_ERROR, not an uncaught exception", async () => {
    const f = await start(answering(/server_version_num/, backendFrame("D", new Uint8Array([0, 5, 0, 0]))));
    const error = await replicateError(f);
    expect(error).toMatchObject({ code: "DECODE_ERROR" });
    expect((error as Error).message).toMatch(/pg could not parse/);
  });

  it("a server silent after the startup packet: a retryable CONNECT_FAILED after receiveTimeoutMs", async () => {
    const f = await start({ silentStartup: true });
    const t0 = Date.now();
    const error = await replicateError(f, { receiveTimeoutMs: 600 });
    const ms = Date.now() - t0;
    expect(error).toMatchObject({ name: "ReplicationError", code: "CONNECT_FAILED", retryable: true });
    expect((error as Error).message).toMatch(/while connecting/);
    expect(ms).toBeGreaterThanOrEqual(550);
    expect(ms).toBeLessThan(5000);
  });

  it("a server that never answers SHOW: a retryable RECEIVE_TIMEOUT after receiveTimeoutMs", async () => {
    const f = await start({ onQuery: (text) => /server_version_num/.test(text) });
    const t0 = Date.now();
    const error = await replicateError(f, { receiveTimeoutMs: 600 });
    const ms = Date.now() - t0;
    expect(error).toMatchObject({ name: "ReplicationError", code: "RECEIVE_TIMEOUT", retryable: true });
    expect(ms).toBeGreaterThanOrEqual(550);
    expect(ms).toBeLessThan(5000);
  });

  it("receiveTimeoutMs 0: no timeout (the slow answer arrives)", async () => {
    const f = await start({
      onQuery: (text, socket) => {
        if (!/server_version_num/.test(text)) return false;
        setTimeout(() => socket.write(rows(["server_version_num"], ["150000"])), 700);
        return true;
      },
    });
    const s = await replicate({ connection: base(f), slot: "s", publications: "p", reconnect: false, receiveTimeoutMs: 0 });
    await s.stop();
    expect(s.error).toBeUndefined();
  });
});

describe("not PostgreSQL, or silent: replicate() names the host and port, what it saw or awaited, and the setting", () => {
  let service: FakeService | undefined;
  afterEach(async () => {
    await service?.close();
    service = undefined;
  });
  const at = (s: FakeService) => `127.0.0.1:${s.port}`;
  /** replicate()'s error against `kind` on 127.0.0.1, connecting with `url` (the port filled in). */
  async function against(kind: ServiceKind, query = "", extra: Partial<ReplicateOptions> = {}): Promise<{ error: { code: string; retryable: boolean; message: string }; ms: number }> {
    service = await startFakeService(kind);
    const t0 = Date.now();
    try {
      const s = await replicate({ connection: `postgres://u@127.0.0.1:${service.port}/db${query}`, slot: "s", publications: "p", reconnect: false, ...extra });
      await s.stop();
    } catch (e) {
      return { error: e as { code: string; retryable: boolean; message: string }, ms: Date.now() - t0 };
    }
    throw new Error("replicate() succeeded");
  }

  it("an HTTP server: NOT_POSTGRES, not retried, its answer shown (not a CopyOutResponse of 1414811691 bytes)", async () => {
    const { error } = await against("http");
    expect(error).toMatchObject({ name: "ReplicationError", code: "NOT_POSTGRES", retryable: false });
    expect(error.message).toBe(`${at(service!)} does not speak the PostgreSQL protocol: it answered the startup message with "HTTP/1.1 400 Bad Request", as an HTTP server does`);
  });

  it("a TLS record in answer: NOT_POSTGRES naming TLS and sslmode", async () => {
    const { error } = await against("tls-record");
    expect(error).toMatchObject({ code: "NOT_POSTGRES", retryable: false });
    expect(error.message).toContain(`${at(service!)} does not speak the PostgreSQL protocol: it answered the startup message with "\\x15\\x03\\x03\\x00\\x02\\x02F", as a TLS server does (PostgreSQL has no separate TLS port: it starts TLS on its own port when asked, with sslmode=require)`);
  });

  it("a real TLS server (it hangs up on a plaintext hello): CONNECT_FAILED saying it closed without answering", async () => {
    const { error } = await against("tls");
    expect(error).toMatchObject({ code: "CONNECT_FAILED" });
    expect(error.message).toContain(`${at(service!)} accepted the connection and closed it without answering the startup message`);
  });

  it("an SSH server (its banner comes first): NOT_POSTGRES with the banner", async () => {
    const { error } = await against("ssh");
    expect(error).toMatchObject({ code: "NOT_POSTGRES" });
    expect(error.message).toContain(`it answered the startup message with "SSH-2.0-OpenSSH_9.2p1 De", as an SSH server does`);
  });

  it("sslmode=require: the SSLRequest's answer is checked too (HTTP, SSH), and a TLS server's hang-up is named", async () => {
    const http = await against("http", "?sslmode=require");
    expect(http.error).toMatchObject({ code: "NOT_POSTGRES" });
    expect(http.error.message).toContain(`${at(service!)} does not speak the PostgreSQL protocol: it answered the SSLRequest with "HTTP/1.1 400 Bad Request"`);
    await service!.close();
    const ssh = await against("ssh", "?sslmode=require");
    expect(ssh.error).toMatchObject({ code: "NOT_POSTGRES" });
    expect(ssh.error.message).toContain(`it answered the SSLRequest with "SSH-2.0-`);
    await service!.close();
    const tls = await against("tls", "?sslmode=require");
    expect(tls.error.message).toContain(`${at(service!)} accepted the connection and closed it without answering the SSLRequest`);
  });

  it("a port that accepts and never answers: CONNECT_FAILED after receiveTimeoutMs, naming what was awaited and receiveTimeoutMs", async () => {
    const { error, ms } = await against("silent", "", { receiveTimeoutMs: 600 });
    expect(error).toMatchObject({ code: "CONNECT_FAILED", retryable: true });
    expect(error.message).toMatch(new RegExp(`^${at(service!)} accepted the connection but sent nothing for \\d+ ms while connecting \\(awaiting the answer to the startup message\\); receiveTimeoutMs \\(600\\) sets how long to wait$`));
    expect(ms).toBeGreaterThanOrEqual(550);
    expect(ms).toBeLessThan(5000);
  });

  it("the same with connect_timeout=1 in the URL (pg's connectionTimeoutMillis, not pg's bare 'timeout expired'): that setting is named", async () => {
    const { error, ms } = await against("silent", "?connect_timeout=1");
    expect(error).toMatchObject({ code: "CONNECT_FAILED", retryable: true });
    expect(error.message).toBe(`${at(service!)} accepted the connection but sent nothing for 1000 ms while connecting (awaiting the answer to the startup message); connect_timeout in the connection string (pg's connectionTimeoutMillis) sets how long to wait`);
    expect(ms).toBeLessThan(5000);
  });

  it("sslmode=require to a silent port: it is the SSLRequest that went unanswered", async () => {
    const { error } = await against("silent", "?sslmode=require&connect_timeout=1");
    expect(error.message).toBe(`${at(service!)} accepted the connection but did not answer the SSLRequest for 1000 ms; connect_timeout in the connection string (pg's connectionTimeoutMillis) sets how long to wait`);
  });

  it("a server that stops after its authentication request: named with the last message it sent", async () => {
    const sockets = new Set<net.Socket>();
    const srv = net.createServer((socket) => {
      sockets.add(socket);
      socket.on("error", () => {});
      // AuthenticationCleartextPassword in answer to the startup message; nothing after the password.
      socket.once("data", () => socket.write(backendFrame("R", new Uint8Array([0, 0, 0, 3]))));
    });
    await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
    try {
      const port = (srv.address() as net.AddressInfo).port;
      const error = await replicate({ connection: `postgres://u:pw@127.0.0.1:${port}/db?connect_timeout=1`, slot: "s", publications: "p", reconnect: false })
        .then(() => { throw new Error("connected"); }, (e: Error) => e);
      expect(error).toMatchObject({ code: "CONNECT_FAILED" });
      expect(error.message).toBe(`127.0.0.1:${port} stopped answering while connecting: nothing for 1000 ms after its Authentication message (0x52) (awaiting the rest of the startup: authentication, then ReadyForQuery); connect_timeout in the connection string (pg's connectionTimeoutMillis) sets how long to wait`);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    }
  });
});

describe("guarded plain connections (side and snapshot copy connections)", () => {
  const slowAnswer = (delayMs: number): FakeSetup => ({
    onQuery: (text, socket) => {
      if (!/^SELECT slow/.test(text)) return false;
      setTimeout(() => socket.destroyed || socket.write(rows(["v"], ["done"])), delayMs);
      return true;
    },
  });

  it("a query answered after the timeout fails with RECEIVE_TIMEOUT; under patiently() it succeeds", async () => {
    const f = await start(slowAnswer(1500));
    const impatient = await guarded(f, 500);
    await expect(impatient.query("SELECT slow")).rejects.toMatchObject({ name: "ReplicationError", code: "RECEIVE_TIMEOUT" });
    const patient = await guarded(f, 500);
    const result = await patiently(patient, () => patient.query("SELECT slow"));
    expect(result.rows).toEqual([{ v: "done" }]);
  });

  it("an idle connection is not timed out: a query long after the last one works", async () => {
    const f = await start(slowAnswer(0));
    const client = await guarded(f, 300);
    await sleep(1200);
    expect((await client.query("SELECT slow")).rows).toEqual([{ v: "done" }]);
  });

  it("a COPY paused for backpressure longer than the timeout is not cut off; the same silence unpaused is", async () => {
    // CopyOutResponse (text, 1 column), one row, then silence for `silentMs`, then the end of the COPY.
    const copy = (silentMs: number): FakeSetup => ({
      onQuery: (text, socket) => {
        if (!/^COPY/.test(text)) return false;
        socket.write(backendFrame("H", new Uint8Array([0, 0, 1, 0, 0])));
        socket.write(backendFrame("d", new TextEncoder().encode("row\n")));
        setTimeout(() => {
          if (socket.destroyed) return;
          socket.write(backendFrame("c", new Uint8Array(0)));
          socket.write(backend.commandComplete("COPY 1").bytes);
          socket.write(backend.readyForQuery().bytes);
        }, silentMs);
        return true;
      },
    });
    const f = await start(copy(2500));
    const client = await guarded(f, 1000);
    const payloads: string[] = [];
    const socket = (client as unknown as { connection: { stream: net.Socket } }).connection.stream;
    const handle = copyOut(client, "COPY t TO STDOUT", (p) => {
      payloads.push(Buffer.from(p).toString());
      socket.pause(); // the consumer is busy for 2.3 s, as the snapshot pauses its copy connections
      setTimeout(() => socket.resume(), 2300);
    });
    expect(await handle.done).toBe(1);
    expect(payloads).toEqual(["row\n"]);
    await fake!.close();

    const g = await start(copy(2500));
    const unpaused = await guarded(g, 1000);
    await expect(copyOut(unpaused, "COPY t TO STDOUT", () => {}).done).rejects.toMatchObject({ code: "RECEIVE_TIMEOUT" });
  });
});

describe("the frame walk, split at every byte", () => {
  /** A stand-in for pg's Client and Connection: `feed` plays the socket's reads. */
  function standIn(maxMessageSize: number, o: { connecting?: boolean; receiveTimeoutMs?: number; connected?: boolean } = {}) {
    const stream = Object.assign(new EventEmitter(), {
      destroyed: undefined as Error | undefined,
      destroy(error?: Error) {
        this.destroyed = error;
      },
      isPaused: () => false,
    });
    const parsed: Uint8Array[] = [];
    stream.on("data", (chunk: Uint8Array) => parsed.push(chunk)); // pg's parser
    const connection = Object.assign(new EventEmitter(), { stream, ssl: false });
    const client = { connection, host: "db.example", port: 6543, _connecting: o.connecting ?? false, _activeQuery: null, _queryQueue: [] };
    const guard = ConnectionGuard.attach(client as unknown as Client, { maxMessageSize, receiveTimeoutMs: o.receiveTimeoutMs ?? 0 })!;
    if (o.connected !== false) connection.emit("connect");
    const seen = () => Buffer.concat(parsed);
    return { guard, stream, seen, feed: (chunk: Uint8Array) => stream.emit("data", chunk) };
  }

  const messages = [
    backend.readyForQuery().bytes,
    rows(["a", "b"], ["x".repeat(300), null]),
    backendFrame("d", new Uint8Array(100).fill(1)),
    backendFrame("c", new Uint8Array(0)),
  ];
  const valid = new Uint8Array(messages.reduce((n, m) => n + m.length, 0));
  messages.reduce((at, m) => (valid.set(m, at), at + m.length), 0);

  it("valid messages cut into two or three pieces anywhere: never refused", () => {
    for (let a = 0; a <= valid.length; a++) {
      for (const b of [a, Math.min(valid.length, a + 1), Math.min(valid.length, a + 3), valid.length]) {
        const { stream, feed, guard, seen } = standIn(400);
        feed(valid.subarray(0, a));
        feed(valid.subarray(a, b));
        feed(valid.subarray(b));
        expect(stream.destroyed, `cut at ${a}, ${b}`).toBeUndefined();
        expect(guard.failure).toBeUndefined();
        expect(seen().equals(valid)).toBe(true); // pg got every byte, in order
      }
    }
  });

  it("an oversized header after valid messages, cut anywhere: refused with its offset", () => {
    const bad = new Uint8Array(valid.length + 5 + 10);
    bad.set(valid);
    bad.set(header("D", 401), valid.length);
    for (let a = 0; a <= bad.length; a++) {
      const { stream, feed, seen } = standIn(400);
      feed(bad.subarray(0, a));
      feed(bad.subarray(a));
      expect(seen().length, `cut at ${a}`).toBeLessThanOrEqual(valid.length + 4); // pg never gets the whole header
      const error = stream.destroyed as unknown as { code: string; cause: { code: string; offset: number; field: string } } | undefined;
      expect(error?.code, `cut at ${a}`).toBe("DECODE_ERROR");
      expect(error!.cause).toMatchObject({ code: "MESSAGE_TOO_LARGE", field: "frameLength", offset: valid.length + 1 });
    }
  });

  it("a message of exactly maxMessageSize is accepted; one byte more is not", () => {
    const ok = standIn(100);
    ok.feed(header("d", 100));
    ok.feed(new Uint8Array(100));
    ok.feed(backend.readyForQuery().bytes);
    expect(ok.stream.destroyed).toBeUndefined();
    const over = standIn(100);
    over.feed(header("d", 101));
    expect(over.stream.destroyed).toMatchObject({ code: "DECODE_ERROR" });
  });

  it("while connecting, the first message must answer the startup message: a real startup cut anywhere passes, an HTTP answer cut anywhere is NOT_POSTGRES", () => {
    const startup = Buffer.concat([
      backendFrame("R", new Uint8Array([0, 0, 0, 0])), // AuthenticationOk
      backendFrame("S", new TextEncoder().encode("server_version\u000015.0\u0000")),
      backend.readyForQuery().bytes,
    ]);
    const http = new TextEncoder().encode("HTTP/1.1 400 Bad Request\r\n\r\n");
    for (let a = 0; a <= startup.length; a++) {
      const ok = standIn(400, { connecting: true });
      ok.feed(startup.subarray(0, a));
      ok.feed(startup.subarray(a));
      expect(ok.stream.destroyed, `cut at ${a}`).toBeUndefined();
      expect(ok.seen().equals(startup)).toBe(true);
    }
    for (let a = 0; a <= http.length; a++) {
      const bad = standIn(400, { connecting: true });
      bad.feed(http.subarray(0, a));
      bad.feed(http.subarray(a));
      expect(bad.stream.destroyed, `cut at ${a}`).toMatchObject({ code: "NOT_POSTGRES" });
      // What it shows: the bytes the guard had when the first header was whole (at least those five).
      expect(bad.stream.destroyed!.message).toMatch(/^db\.example:6543 does not speak the PostgreSQL protocol: it answered the startup message with "HTTP\/[^"]*", as an HTTP server does$/);
      expect(bad.seen().length).toBeLessThan(5); // pg never got the header
    }
    // Not connecting (a stand-in for a connection past its startup): the same bytes are just frames.
    const later = standIn(400);
    later.feed(backend.readyForQuery().bytes);
    expect(later.stream.destroyed).toBeUndefined();
  });

  it("no TCP connection within receiveTimeoutMs: CONNECT_FAILED naming the host, the port and the setting", async () => {
    const { stream } = standIn(400, { connecting: true, connected: false, receiveTimeoutMs: 60 });
    for (let i = 0; i < 100 && stream.destroyed === undefined; i++) await sleep(20);
    expect(stream.destroyed).toMatchObject({ code: "CONNECT_FAILED" });
    expect(stream.destroyed!.message).toMatch(/^no TCP connection to db\.example:6543 within \d+ ms; receiveTimeoutMs \(60\) sets how long to wait$/);
  });

  it("a socket pg does not read the known way (two 'data' listeners) is left as it is", () => {
    const stream = Object.assign(new EventEmitter(), { destroy() {}, isPaused: () => false });
    stream.on("data", () => {});
    stream.on("data", () => {});
    const connection = Object.assign(new EventEmitter(), { stream, ssl: false });
    const client = { connection, _connecting: false, _activeQuery: {}, _queryQueue: [] };
    ConnectionGuard.attach(client as unknown as Client, { maxMessageSize: 10, receiveTimeoutMs: 1000 });
    connection.emit("connect");
    expect(stream.listenerCount("data")).toBe(2);
    expect(guardOf(client)).toBeUndefined(); // detached: no frame walk, no timer
  });

  it("after detach() (the stream took the socket over) nothing is walked", () => {
    const { guard, stream, feed, seen } = standIn(10);
    guard.detach();
    feed(header("d", 1000));
    expect(stream.destroyed).toBeUndefined();
    expect(stream.listenerCount("data")).toBe(1); // pg's own again
    expect(seen().length).toBe(5);
  });
});

it("at START_REPLICATION the guard is gone: the stream's reader is the socket's only 'data' listener", async () => {
  const f = await start({});
  let client: pg.Client | undefined;
  const s = await replicate({
    connection: () => (client = new pg.Client({ ...base(f), replication: "database" } as ClientConfig)),
    slot: "s", publications: "p", reconnect: false,
  });
  try {
    const socket = (client as unknown as { connection: { stream: net.Socket } }).connection.stream;
    expect(socket.listenerCount("data")).toBe(1); // the stream's own reader only
  } finally {
    await s.stop();
  }
});
