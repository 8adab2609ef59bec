/**
 * A fake walsender on 127.0.0.1, for what a real PostgreSQL will not do:
 * hostile frame lengths, silence after CopyBothResponse, not reading what
 * the client sends. It speaks just enough of the protocol for `replicate()`:
 * trust authentication, `SHOW server_version_num`, the slot query (one
 * existing pgoutput slot), then START_REPLICATION → CopyBothResponse and the
 * test's `scenario`, which owns the socket from there on.
 *
 * A test may keep the server silent after the startup packet, or answer a
 * query itself (`setup`). It records the client's standby status updates (replyRequested flag and
 * arrival time) while it reads, and answers CopyDone as a walsender does. Every loop in it is bounded by the bytes
 * the test asks it to send.
 */
import * as net from "node:net";
import { backend, backendFrame } from "../../devkit/encoder/walsender-encoder.ts";

const utf8 = new TextEncoder();

export interface StatusSeen {
  at: number;
  replyRequested: boolean;
}

export interface FakeWalsender {
  port: number;
  /** Status updates the client sent while the server was reading. */
  readonly statuses: StatusSeen[];
  /** Resolves with the server side of the replication connection once CopyBothResponse was sent. */
  readonly streaming: Promise<net.Socket>;
  close(): Promise<void>;
}

function cstring(s: string): Uint8Array {
  const b = utf8.encode(s);
  const out = new Uint8Array(b.length + 1);
  out.set(b);
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), (at += p.length));
  return out;
}

/** The slot query's row (bindings/pg/slot-state.ts, the columns of PostgreSQL 15): one idle pgoutput slot at 0/0. */
const SLOT_ROW: [string[], (string | null)[]] = [
  ["slot_name", "plugin", "slot_type", "database", "temporary", "active", "active_pid", "restart_lsn", "confirmed_flush_lsn", "current_lsn",
    "lag_bytes", "retained_bytes", "flush_lag_ms", "replay_lag_ms", "wal_status", "safe_wal_size"],
  ["s", "pgoutput", "logical", "postgres", "f", "f", null, "0/0", "0/0", "0/0", "0", "0", null, null, "reserved", null],
];

/** A RowDescription of text columns and one DataRow (null: SQL NULL), CommandComplete, ReadyForQuery. */
export function rows(names: string[], values: (string | null)[]): Uint8Array {
  const desc: Uint8Array[] = [new Uint8Array([0, names.length])];
  for (const n of names) {
    const f = new Uint8Array(18);
    const dv = new DataView(f.buffer);
    dv.setInt32(6, 25); // text
    dv.setInt16(10, -1);
    dv.setInt32(12, -1);
    desc.push(cstring(n), f);
  }
  const row: Uint8Array[] = [new Uint8Array([0, values.length])];
  for (const v of values) {
    if (v === null) {
      row.push(new Uint8Array([0xff, 0xff, 0xff, 0xff]));
      continue;
    }
    const b = utf8.encode(v);
    const len = new Uint8Array(4);
    new DataView(len.buffer).setInt32(0, b.length);
    row.push(len, b);
  }
  return concat([
    backendFrame("T", concat(desc)),
    backendFrame("D", concat(row)),
    backend.commandComplete("SELECT 1").bytes,
    backend.readyForQuery().bytes,
  ]);
}

/** What a test changes before streaming: a server silent after the startup packet, or its own answer to a query. */
export interface FakeSetup {
  silentStartup?: boolean;
  /** Answers `text` itself (returns true), or leaves it to the fake (false). */
  onQuery?: (text: string, socket: net.Socket) => boolean;
}

/** Starts the fake server; `scenario` runs once the client is streaming. */
export async function startFakeWalsender(
  scenario: (socket: net.Socket, server: FakeWalsender) => void | Promise<void>, setup: FakeSetup = {},
): Promise<FakeWalsender> {
  const statuses: StatusSeen[] = [];
  const sockets = new Set<net.Socket>();
  let resolveStreaming!: (s: net.Socket) => void;
  const streaming = new Promise<net.Socket>((r) => (resolveStreaming = r));
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    let buf: Uint8Array = new Uint8Array(0);
    let started = false;
    socket.on("data", (chunk: Uint8Array) => {
      buf = concat([buf, chunk]);
      for (;;) {
        if (!started) {
          // Startup packet: Int32 length, Int32 protocol, parameters.
          if (buf.length < 4) return;
          const n = new DataView(buf.buffer, buf.byteOffset).getInt32(0);
          if (buf.length < n) return;
          buf = buf.subarray(n);
          started = true;
          if (setup.silentStartup === true) return;
          const key = new Uint8Array(8);
          socket.write(concat([
            backendFrame("R", new Uint8Array(4)), // AuthenticationOk
            backendFrame("S", concat([cstring("server_version"), cstring("15.0")])),
            backendFrame("K", key),
            backend.readyForQuery().bytes,
          ]));
          continue;
        }
        if (buf.length < 5) return;
        const n = new DataView(buf.buffer, buf.byteOffset).getInt32(1);
        if (buf.length < 1 + n) return;
        const type = String.fromCharCode(buf[0]!);
        const body = buf.subarray(5, 1 + n);
        buf = buf.subarray(1 + n);
        if (type === "Q") {
          const text = new TextDecoder().decode(body.subarray(0, body.length - 1));
          if (setup.onQuery?.(text, socket) === true) continue;
          if (/server_version_num/.test(text)) socket.write(rows(["server_version_num"], ["150000"]));
          else if (/pg_replication_slots/.test(text)) socket.write(rows(...SLOT_ROW));
          else if (/^START_REPLICATION/.test(text)) {
            socket.write(backend.copyBothResponse().bytes);
            resolveStreaming(socket);
            void scenario(socket, fake);
          } else socket.write(concat([backend.errorResponse({ S: "ERROR", C: "42601", M: `fake walsender: ${text}` }).bytes, backend.readyForQuery().bytes]));
        } else if (type === "d" && body[0] === 0x72 /* 'r' */) {
          statuses.push({ at: Date.now(), replyRequested: body[33] === 1 });
        } else if (type === "c") {
          // The client's CopyDone: end the stream as a walsender does.
          socket.write(concat([backend.copyDone().bytes, backend.commandComplete("START_REPLICATION").bytes, backend.readyForQuery().bytes]));
        } else if (type === "X") {
          socket.end();
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const fake: FakeWalsender = {
    port: (server.address() as net.AddressInfo).port,
    statuses,
    streaming,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

/** A CopyData frame header declaring `payloadLength` bytes of payload (the payload itself not included). */
export function copyDataHeader(payloadLength: number): Uint8Array {
  const h = new Uint8Array(5);
  h[0] = 0x64;
  new DataView(h.buffer).setUint32(1, 4 + payloadLength);
  return h;
}

/** Writes `bytes` and waits for the socket to take them (the server's own backpressure); false once the client is gone. */
export function send(socket: net.Socket, bytes: Uint8Array): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    if (socket.write(bytes)) resolve(true);
    else socket.once("drain", () => resolve(true)).once("close", () => resolve(false));
  });
}
