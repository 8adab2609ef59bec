/**
 * The stream's in-place reads (pg/in-place-reads.ts over kernel/receive.ts)
 * on a real loopback socket, against what `pushBackend` gives for a copy of
 * the same bytes. A local server stands in for the walsender: what is
 * tested is where the operating system's reads land while the area grows,
 * moves its bytes, fills and changes memory, which a real server's pace
 * does not choose. The stream mixes small frames with messages of 2 and
 * 5 MB (the area and the decoder's memory grow mid-stream: the socket must
 * be re-pointed), and the consumer is slow now and then, so that reads land
 * while its batch is live, fill the area and are held. Every message of a
 * batch is read only after more reads landed.
 */
import { once } from "node:events";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import type { Batch } from "../bindings/decoder.ts";
import { decoderInternals, type TapeDecoder } from "../bindings/kernel/decoder.ts";
import { ReceiveArea } from "../bindings/kernel/receive.ts";
import { InPlaceReads } from "../bindings/pg/in-place-reads.ts";
import type { WalMessage } from "../bindings/walsender.ts";
import { encode } from "../devkit/encoder/encoder.ts";
import { backend as be, backendStream, wal } from "../devkit/encoder/walsender-encoder.ts";
import { backend } from "./support/backends.ts";

const json = (m: WalMessage): unknown => JSON.parse(JSON.stringify(m.toJSON(), (_k, v) => (typeof v === "bigint" ? `${v}n` : v)));

/** CopyBothResponse, 3000 XLogData messages of 10-1200 bytes (two of 2 and 5 MB among them), keepalives, CopyDone. */
function stream(): Uint8Array {
  const frames: Uint8Array[] = [be.copyBothResponse().bytes];
  for (let i = 0; i < 3000; i++) {
    const size = i === 1000 ? 2 << 20 : i === 2000 ? 5 << 20 : 10 + ((i * 7919) % 1200);
    const content = new Uint8Array(size).fill(i & 0xff);
    const message = encode.message({ transactional: false, lsn: BigInt(i), prefix: `m${i}`, content });
    frames.push(be.copyData(wal.xlogData(message, { walStart: BigInt(i), walEnd: BigInt(i + 1), sendTime: 1_700_000_000_000_000n }).bytes).bytes);
    if (i % 97 === 0) frames.push(be.copyData(wal.keepalive({ walEnd: BigInt(i), sendTime: 1_700_000_000_000_000n, replyRequested: false }).bytes).bytes);
  }
  frames.push(be.copyDone().bytes);
  return backendStream(frames);
}

/** Serves `bytes` once, in writes of 1 byte to 300 KB, 2 ms apart, each after the last was taken by the kernel. */
async function serve(bytes: Uint8Array): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer(async (socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    for (let at = 0, i = 0; at < bytes.length && !socket.destroyed; i++) {
      const n = [1, 300_000, 4096, 17, 65536, 150_000, 5][i % 7]!;
      if (!socket.write(bytes.subarray(at, at + n))) await once(socket, "drain");
      at += n;
      // Paced, so that the consumer decodes before the large messages come: the area grows for them mid-stream.
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    socket.end();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, "close");
    },
  };
}

describe(`${backend.name}: in-place socket reads`, () => {
  it("decode what a copied pushBackend decodes, while the area grows, moves, fills and changes memory", async () => {
    const bytes = stream();
    const want = [...(await backend.create()).pushBackend(bytes.slice())].map(json);
    const decoder = (await backend.create()) as TapeDecoder;
    const area = new ReceiveArea(decoderInternals(decoder));
    const reads = new InPlaceReads();
    const server = await serve(bytes);
    const got: unknown[] = [];
    let landed = 0;
    let full = 0;
    let memories = 0;
    let memory: ArrayBufferLike | undefined;
    reads.land(area, (chunk) => {
      landed += chunk.length;
      if (area.full) full++;
    });
    try {
      const socket = reads.socket;
      const closed = once(socket, "close");
      socket.connect(server.port, "127.0.0.1");
      let live: Batch<WalMessage> | undefined;
      let ended = false;
      void closed.then(() => (ended = true));
      for (let round = 0; !ended || reads.received > 0 || live !== undefined; round++) {
        // A consumer that is slow now and then: reads land meanwhile, after the live batch's bytes.
        await new Promise((resolve) => setTimeout(resolve, round % 10 === 0 ? 20 : 1));
        if (live !== undefined) for (const m of live) got.push(json(m));
        live = reads.received > 0 ? reads.decode() : undefined;
        if (area.buffer !== memory) memories++;
        memory = area.buffer;
        if (round > 20_000) throw new Error("the stream did not end");
      }
      await closed;
    } finally {
      reads.socket.destroy();
      await server.close();
    }
    expect(landed).toBe(bytes.length);
    expect(got.length).toBe(want.length);
    expect(got).toEqual(want);
    // The memory changed under the socket (it must have been re-pointed), and reads came while the area was full.
    expect(memories).toBeGreaterThan(1);
    expect(full).toBeGreaterThan(0);
  }, 60_000);

  it("a frame whose header is split between the area and the reads held aside is sized from its own bytes, not from what memory held", async () => {
    const bytes = stream().subarray(0, 200_000);
    const want = [...(await backend.create()).pushBackend(bytes.slice())].map(json);
    const internals = decoderInternals((await backend.create()) as TapeDecoder);
    const area = new ReceiveArea(internals);
    // Memory past the landed bytes holds old bytes (here 0x3f: read as a length, a frame of 1 GB).
    area.offer().fill(0x3f);
    area.landed(bytes.subarray(0, 1), 1);
    const got = [...area.decode(bytes.subarray(1))].map(json);
    const capacity = internals.memory.inputCapacity;
    expect(got).toEqual(want.slice(0, got.length));
    expect(got.length).toBeGreaterThan(100);
    expect(capacity).toBeLessThan(8 << 20);
  });
});
