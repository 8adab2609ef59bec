/**
 * A large framed input is never copied past the first frame the decoder
 * refuses by its header (decodeFramed, push, pushBackend), in both backends:
 * a 128 MiB chunk whose frame declares more than maxMessageSize (1 KiB) is
 * MESSAGE_TOO_LARGE, and neither the wasm memory nor the process RSS grows
 * by anything like the chunk. Covered: the refused frame first, deep in the
 * chunk after 4 MiB of good frames, with its header split between the
 * pending bytes of a push and the next chunk, and a backend length below 4.
 *
 * The chunk is one Buffer.alloc: its zero pages cost no RSS until written,
 * so copying it (into wasm memory, or a baseline copy) would show.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { PgoutputError } from "../bindings/errors.ts";
import { backend } from "./support/backends.ts";
import { encode, frame } from "../devkit/encoder/encoder.ts";
import { trackWasmMemory } from "../devkit/fuzz/fuzz.ts";
import { backend as be, wal } from "../devkit/encoder/walsender-encoder.ts";
import { errorOf } from "./support/error-of.ts";

const MiB = 2 ** 20;
const LIMIT = 1024;
const CHUNK = 128 * MiB;
/** Growth allowed for a call whose kept input is at most GOOD_BYTES: far below the chunk. */
const GROWTH = 24 * MiB;
const GOOD_BYTES = 4 * MiB;
const H = { walStart: 1n, walEnd: 2n, sendTime: 3n };

/** A Message of 1,000 bytes: under the limit. */
const GOOD = encode.message({ transactional: false, lsn: 1n, prefix: "", content: new Uint8Array(985) });
const GOOD_FRAME = frame([GOOD]);
const GOOD_BACKEND = be.copyData(wal.xlogData(GOOD, H)).bytes;
const BEGIN = encode.begin({ finalLsn: 1n, commitTime: 2n, xid: 3 });

let memory: ReturnType<typeof trackWasmMemory>;
let chunk: Buffer;
beforeAll(() => {
  memory = trackWasmMemory();
  chunk = Buffer.alloc(CHUNK);
});
afterAll(() => memory.restore());


/** Fills the chunk's start with `count` copies of `frameBytes`, then `header`; returns where the header starts. */
function layOut(frameBytes: Uint8Array, count: number, header: Uint8Array): number {
  chunk.fill(0);
  const at = count * frameBytes.length;
  if (count > 0) chunk.fill(frameBytes, 0, at);
  chunk.set(header, at);
  return at;
}

function lengthHeader(length: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, length);
  return b;
}

function backendHeader(length: number): Uint8Array {
  const b = new Uint8Array(5);
  b[0] = 0x64; // 'd'
  new DataView(b.buffer).setInt32(1, length);
  return b;
}

/** A backend frame declaring a body one byte over what a walsender payload may be. */
const BACKEND_OVER = backendHeader(4 + LIMIT + 1 + 24 + 1);

/** Runs `fn` and checks that neither the wasm memory nor the RSS grew by more than GROWTH. */
function bounded<T>(name: string, fn: () => T): T {
  memory.takePeak();
  const rss = process.memoryUsage.rss();
  const out = fn();
  const grown = process.memoryUsage.rss() - rss;
  expect(grown, `${name}: RSS grew ${(grown / MiB).toFixed(1)} MiB`).toBeLessThan(GROWTH);
  expect(memory.takePeak(), `${name}: the largest wasm memory grown to`).toBeLessThan(GROWTH);
  return out;
}

function shape(e: PgoutputError) {
  return { code: e.code, offset: e.offset, field: e.field, messageIndex: e.messageIndex, decoded: e.decoded.length };
}

function stillWorks(d: PgoutputDecoder): void {
  d.reset();
  expect(d.decodeFramed(frame([BEGIN])).materialize()).toEqual([BEGIN.expected]);
  expect(d.push(frame([BEGIN])).materialize()).toEqual([BEGIN.expected]);
  d.end();
}

describe(`${backend.name}: a 128 MiB chunk with a frame over maxMessageSize 1 KiB`, () => {
  const count = Math.floor(GOOD_BYTES / GOOD_FRAME.length);

  it("decodeFramed: refused at the first frame, and after 4 MiB of good frames", async () => {
    const d = await backend.create({ maxMessageSize: LIMIT });
    layOut(GOOD_FRAME, 0, lengthHeader(LIMIT + 1));
    const first = bounded("first", () => errorOf(() => d.decodeFramed(chunk)));
    expect(shape(first)).toEqual({ code: "MESSAGE_TOO_LARGE", offset: 0, field: "frameLength", messageIndex: 0, decoded: 0 });

    const at = layOut(GOOD_FRAME, count, lengthHeader(0xffff_ffff));
    const deep = bounded("deep", () => errorOf(() => d.decodeFramed(chunk)));
    expect(shape(deep)).toEqual({ code: "MESSAGE_TOO_LARGE", offset: at, field: "frameLength", messageIndex: count, decoded: count });
    expect(deep.decoded[count - 1]!.materialize()).toEqual(GOOD.expected);
    stillWorks(d);
  }, 60_000);

  it("push: the refused header split between the pending bytes and the chunk, and deep after a pending partial frame", async () => {
    const d = await backend.create({ maxMessageSize: LIMIT });
    // 2 of the 4 header bytes pending: the kernel cannot judge them yet.
    const over = lengthHeader(LIMIT + 1);
    layOut(GOOD_FRAME, 0, over);
    expect(d.push(over.subarray(0, 2)).length).toBe(0);
    const split = bounded("split header", () => errorOf(() => d.push(chunk.subarray(2))));
    expect(shape(split)).toEqual({ code: "MESSAGE_TOO_LARGE", offset: 0, field: "frameLength", messageIndex: 0, decoded: 0 });

    // 3 good frames and half of a 4th pending; the chunk completes it, has more good frames, then the refused header.
    d.reset();
    const at = layOut(GOOD_FRAME, count, over);
    const cut = 3 * GOOD_FRAME.length + 500;
    expect(d.push(chunk.subarray(0, cut)).length).toBe(3);
    const deep = bounded("deep", () => errorOf(() => d.push(chunk.subarray(cut))));
    // Offsets count from the pending frame's start, where this call's input begins.
    const pendingStart = 3 * GOOD_FRAME.length;
    expect(shape(deep)).toEqual({
      code: "MESSAGE_TOO_LARGE", offset: at - pendingStart, field: "frameLength", messageIndex: count - 3, decoded: count - 3,
    });
    stillWorks(d);
  }, 60_000);

  it("pushBackend: refused at a split header, deep after good CopyData frames, and at a length below 4", async () => {
    const d = await backend.create({ maxMessageSize: LIMIT });
    layOut(GOOD_BACKEND, 0, BACKEND_OVER);
    expect(d.pushBackend(BACKEND_OVER.subarray(0, 3)).length).toBe(0);
    const split = bounded("split header", () => errorOf(() => d.pushBackend(chunk.subarray(3))));
    expect(shape(split)).toEqual({ code: "MESSAGE_TOO_LARGE", offset: 1, field: "frameLength", messageIndex: 0, decoded: 0 });

    const n = Math.floor(GOOD_BYTES / GOOD_BACKEND.length);
    for (const [header, code] of [[BACKEND_OVER, "MESSAGE_TOO_LARGE"], [backendHeader(3), "INVALID_LENGTH"]] as const) {
      d.reset();
      const at = layOut(GOOD_BACKEND, n, header);
      const cut = GOOD_BACKEND.length + 7;
      expect(d.pushBackend(chunk.subarray(0, cut)).length).toBe(1);
      const deep = bounded(code, () => errorOf(() => d.pushBackend(chunk.subarray(cut))));
      expect(shape(deep)).toEqual({
        code, offset: at + 1 - GOOD_BACKEND.length, field: "frameLength", messageIndex: n - 1, decoded: n - 1,
      });
      expect(deep.decoded[0]!.materialize()).toEqual(wal.xlogData(GOOD, H).expected);
    }
    stillWorks(d);
  }, 60_000);
});
