/**
 * The streaming client against a fake walsender on 127.0.0.1, for what a
 * real server will not do: a CopyData declaring more than the client
 * accepts, silence after CopyBothResponse, a server that stops reading while
 * it floods keepalives. Each case asserts the typed outcome and that the
 * client's memory stays bounded (< 48 MiB growth). Loops are bounded by
 * count; the server is on loopback only.
 */
import { afterEach, describe, expect, it } from "vitest";
import pg from "pg";
import type * as net from "node:net";
import type { ClientConfig } from "pg";
import { replicate, type ReplicateOptions, type ReplicationStream } from "../bindings/pg/index.ts";
import { isPgoutputError } from "../bindings/errors.ts";
import { backend, backendStream, wal } from "../devkit/encoder/walsender-encoder.ts";
import { aliasStream, walPayloads } from "./support/alias-stream.ts";
import { WasmDecoder } from "../bindings/wasm/decoder.ts";
import { copyDataHeader, send, startFakeWalsender, type FakeWalsender } from "./support/fake-walsender.ts";
import { liveBytes } from "./support/memory.ts";
import { backend as runBackend, onceAcrossBackends } from "./support/backends.ts";

const MIB = 1 << 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let fake: FakeWalsender | undefined;
let stream: ReplicationStream | undefined;
afterEach(async () => {
  await stream?.stop().catch(() => {});
  await fake?.close();
  stream = undefined;
  fake = undefined;
});


async function connect(f: FakeWalsender, extra: Partial<ReplicateOptions> = {}): Promise<{ s: ReplicationStream; client: () => pg.Client }> {
  let client: pg.Client | undefined;
  const config: ClientConfig = { host: "127.0.0.1", port: f.port, user: "fake", database: "fake" };
  const s = await replicate({
    connection: () => (client = new pg.Client({ ...config, replication: "database" } as ClientConfig)),
    slot: "s",
    publications: "p",
    statusIntervalMs: 60_000,
    reconnect: false, // these tests assert the error that ends the stream
    ...extra,
  });
  stream = s;
  return { s, client: () => client! };
}

/** Iterates until the stream throws (or `limit` items); returns the error. */
async function drain(s: ReplicationStream, limit = 1e9): Promise<{ error: unknown; items: number }> {
  let items = 0;
  try {
    for await (const _ of s) if (++items >= limit) break;
  } catch (error) {
    return { error, items };
  }
  return { error: undefined, items };
}

// The runner runs this file once per backend (vitest.config.ts). The stream's own behaviour is the same on
// either: those tests are registered in one run only; the pooled-chunks test runs on the run's backend.
function once(name: string, test: () => Promise<void>, timeout?: number): void {
  if (onceAcrossBackends) it(name, test, timeout);
}

describe("a hostile or stalled walsender", () => {
  for (const [name, declared, limit] of [
    ["a CopyData declaring 2 GB, past the 1 GiB default", 2_000_000_000, undefined],
    ["a CopyData of 200 MiB with maxMessageSize 1 MiB", 200 * MIB, MIB],
  ] as const) {
    once(`${name}: refused at its header while 256 MiB follow, memory bounded`, async () => {
      let sent = 0;
      fake = await startFakeWalsender(async (socket) => {
        await send(socket, copyDataHeader(declared));
        const junk = new Uint8Array(MIB).fill(0x77);
        for (let i = 0; i < 256 && (await send(socket, junk)); i++) sent += junk.length;
      });
      const before = liveBytes();
      const { s } = await connect(fake, { maxMessageSize: limit, receiveTimeoutMs: 5000 });
      const { error } = await drain(s);
      const growth = liveBytes() - before;
      expect(error).toMatchObject({ name: "ReplicationError", code: "DECODE_ERROR", retryable: false });
      const cause = (error as { cause: unknown }).cause;
      expect(isPgoutputError(cause) && cause.code).toBe("MESSAGE_TOO_LARGE");
      expect(isPgoutputError(cause) && cause.field).toBe("frameLength");
      expect(growth).toBeLessThan(48 * MIB);
      expect(sent).toBeLessThan(256 * MIB); // the client hung up instead of reading it all
      console.info(`${name}: ${(error as Error).message}; server sent ${(sent / MIB).toFixed(0)} MiB before the client closed; live memory growth ${(growth / MIB).toFixed(1)} MiB`);
    });
  }

  once("silence after CopyBothResponse: a status update asking for a reply at half the receive timeout, a retryable RECEIVE_TIMEOUT at all of it", async () => {
    fake = await startFakeWalsender(() => {}); // says nothing, reads everything
    const before = liveBytes();
    const { s } = await connect(fake, { receiveTimeoutMs: 800 });
    const t0 = Date.now();
    const { error } = await drain(s);
    const ms = Date.now() - t0;
    expect(error).toMatchObject({ name: "ReplicationError", code: "RECEIVE_TIMEOUT", retryable: true });
    expect(ms).toBeGreaterThanOrEqual(750);
    expect(ms).toBeLessThan(2500);
    const pings = fake.statuses.filter((st) => st.replyRequested);
    expect(pings.length).toBe(1);
    expect(pings[0]!.at - t0).toBeGreaterThanOrEqual(350);
    expect(await s.closed).toBe(error);
    expect(liveBytes() - before).toBeLessThan(48 * MIB);
    // Counted, and so in the metrics (docs/metrics.md); a stream that ended reads nothing on the server for them.
    expect(s.stats.receiveTimeouts).toBe(1);
    expect(await s.metrics()).toMatch(/^pgoutput_wasm_receive_timeouts_total\{slot="[^"]*",publication="[^"]*"\} 1$/m);
  });

  once("a server that answers the ping keeps the stream alive through several receive timeouts", async () => {
    fake = await startFakeWalsender((socket) => {
      // Like a real walsender: a keepalive (no reply asked) in answer to a status update asking for one.
      socket.on("data", (chunk: Uint8Array) => {
        if (chunk.length >= 39 && chunk[0] === 0x64 && chunk[5] === 0x72 && chunk[38] === 1) {
          socket.write(backend.copyData(wal.keepalive({ walEnd: 100n, sendTime: BigInt(Date.now()) * 1000n, replyRequested: false })).bytes);
        }
      });
    });
    const { s } = await connect(fake, { receiveTimeoutMs: 400, keepalives: true });
    const seen = drain(s);
    await sleep(1500);
    expect(s.error).toBeUndefined();
    expect(fake.statuses.filter((st) => st.replyRequested).length).toBeGreaterThanOrEqual(3);
    await s.stop();
    expect((await seen).error).toBeUndefined();
  });

  once("each keepalive asking for a reply gets exactly one status update", async () => {
    const N = 200;
    fake = await startFakeWalsender(async (socket) => {
      for (let i = 0; i < N; i++) {
        await send(socket, backend.copyData(wal.keepalive({ walEnd: BigInt(1000 + i), sendTime: 1_700_000_000_000_000n + BigInt(i), replyRequested: true })).bytes);
        await sleep(i % 2); // some arrive alone, some together
      }
    });
    const { s } = await connect(fake, { keepalives: true, receiveTimeoutMs: 0 });
    const { items } = await drain(s, N);
    expect(items).toBe(N);
    await sleep(200);
    expect(fake.statuses.length).toBe(N + 1); // a reply each, and stop()'s final status update
  });

  once("a server that stops reading while it sends 300,000 keepalives asking for replies: at most one status update waits, memory bounded", async () => {
    const N = 300_000;
    let sentAll = false;
    fake = await startFakeWalsender(async (socket) => {
      socket.pause(); // reads nothing the client sends from now on
      const frame = (i: number) => backend.copyData(wal.keepalive({ walEnd: BigInt(i), sendTime: 1_700_000_000_000_000n + BigInt(i), replyRequested: true })).bytes;
      for (let i = 0; i < N; i += 1000) {
        const parts: Uint8Array[] = [];
        for (let k = i; k < i + 1000; k++) parts.push(frame(k));
        if (!(await send(socket, Buffer.concat(parts)))) return;
      }
      sentAll = true;
    });
    const before = liveBytes();
    const { s, client } = await connect(fake, { keepalives: true, receiveTimeoutMs: 0, stopTimeoutMs: 200 });
    const socket = (client() as unknown as { connection: { stream: net.Socket } }).connection.stream;
    let maxPending = 0;
    let items = 0;
    for await (const _ of s) {
      if (++items % 1000 === 0) maxPending = Math.max(maxPending, socket.writableLength);
      if (items >= N) break;
    }
    const growth = liveBytes() - before;
    expect(sentAll).toBe(true);
    expect(items).toBe(N);
    expect(maxPending).toBeLessThanOrEqual(39); // one CopyData status update
    expect(growth).toBeLessThan(48 * MIB);
    console.info(`300k keepalives, server not reading: ${s.stats.statusUpdates} status updates written, at most ${maxPending} bytes waiting, live memory growth ${(growth / MIB).toFixed(1)} MiB`);
  });

  const decoder = runBackend.name; // the run's backend
  it(`socket chunks that are views of one pooled Buffer, overwritten after each: what the consumer keeps never changes`, async () => {
    // The frames of a realistic stream (text and binary bytea/json/int8/numeric, TOAST, messages, a streamed block).
    const bytes = backendStream(walPayloads(aliasStream()).map((p) => backend.copyData(p.bytes)));
    const reference = new WasmDecoder().pushBackend(bytes.slice()).materialize().filter((m) => m.kind !== "PrimaryKeepalive");
    fake = await startFakeWalsender(() => {});
    const { s, client } = await connect(fake, { decoder, receiveTimeoutMs: 0, messages: true });
    const socket = (client() as unknown as { connection: { stream: net.Socket } }).connection.stream;
    // As pg's parser buffer: one Buffer, each chunk a view of it, rewritten after every 'data' event.
    const pool = Buffer.allocUnsafe(4096);
    for (let at = 0, k = 0; at < bytes.length; k++) {
      const n = Math.min(bytes.length - at, 1 + ((k * 977) % 700));
      pool.set(bytes.subarray(at, at + n));
      socket.emit("data", pool.subarray(0, n));
      pool.fill(0xff);
      at += n;
    }
    const kept: Record<string, unknown>[] = [];
    for await (const m of s) {
      if (!("materialize" in m)) continue; // no backfill runs here
      kept.push(m.materialize());
      pool.fill(0x00); // and again while the consumer reads
      if (kept.length === reference.length) break;
    }
    expect(kept).toEqual(reference);
  });

  once("a rejected frame after valid ones in the same socket chunk: the valid messages first, then DECODE_ERROR", async () => {
    const good = walPayloads(aliasStream()).slice(0, 8);
    const bad = wal.xlogData(new Uint8Array([0x3f, 1, 2, 3]), { walStart: 1n, walEnd: 1n, sendTime: 0n }); // '?': no such message
    const expected = good.filter((p) => p.message !== undefined).length;
    fake = await startFakeWalsender(async (socket) => {
      await send(socket, backendStream([...good.map((p) => backend.copyData(p.bytes)), backend.copyData(bad)]));
    });
    const { s } = await connect(fake, { receiveTimeoutMs: 0 });
    const { error, items } = await drain(s);
    expect(items).toBe(expected);
    expect(error).toMatchObject({ name: "ReplicationError", code: "DECODE_ERROR" });
    expect(isPgoutputError((error as { cause: unknown }).cause) && (error as { cause: { code: string } }).cause.code).toBe("UNKNOWN_MESSAGE");
  });
});
