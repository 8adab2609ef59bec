/**
 * framedCopyLength (bindings/frame-walk.ts): how much of a framed input the
 * wasm decoder copies. It must stop right after the header of the first
 * frame the kernel refuses — over the limit, or (backend) a length below 4,
 * both read unsigned/signed exactly as the kernel does — wherever the input
 * is split between the pending bytes and the new chunk; otherwise it keeps
 * everything, an unfinished last frame included.
 */
import { describe, expect, it } from "vitest";
import { framedCopyLength } from "../bindings/frame-walk.ts";
import { concat, encode, frame } from "../devkit/encoder/encoder.ts";
import { backendFrame } from "../devkit/encoder/walsender-encoder.ts";

const LIMIT = 100;
const A = encode.begin({ finalLsn: 1n, commitTime: 2n, xid: 3 });
const B = encode.message({ transactional: false, lsn: 1n, prefix: "", content: new Uint8Array(LIMIT - 15) });

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
}

function backendHeader(length: number): Uint8Array {
  return concat([new Uint8Array([0x64]), u32(length >>> 0)]);
}

/** framedCopyLength at every split of `bytes` into head and tail gives `want`. */
function atEverySplit(bytes: Uint8Array, header: 4 | 5, limit: number, want: number): void {
  for (let s = 0; s <= bytes.length; s++) {
    const got = framedCopyLength(bytes.subarray(0, s), bytes.subarray(s), header, limit);
    if (got !== want) expect({ split: s, got }).toEqual({ split: s, got: want });
  }
}

describe("framedCopyLength, length-prefixed frames", () => {
  const good = frame([A, B, A]);

  it("keeps all of a stream of good frames (a frame of exactly the limit is good), and an unfinished last frame", () => {
    expect(B.bytes.length).toBe(LIMIT);
    atEverySplit(good, 4, LIMIT, good.length);
    const unfinished = concat([good, u32(LIMIT), new Uint8Array(10)]);
    atEverySplit(unfinished, 4, LIMIT, unfinished.length);
    atEverySplit(new Uint8Array(3), 4, LIMIT, 3); // not even a header
  });

  it("stops after the header of the first frame over the limit, even a length of 2^32 - 1", () => {
    for (const declared of [LIMIT + 1, 2 ** 31, 0xffff_ffff]) {
      const bytes = concat([good, u32(declared), new Uint8Array(500), u32(LIMIT + 1)]);
      atEverySplit(bytes, 4, LIMIT, good.length + 4);
    }
  });
});

describe("framedCopyLength, backend frames", () => {
  const good = concat([backendFrame("d", new Uint8Array(LIMIT)), backendFrame("Z", new Uint8Array([0x49]))]);

  it("keeps good frames: a body of exactly the limit, and the smallest length (4)", () => {
    const bytes = concat([good, backendFrame("c", new Uint8Array(0))]);
    atEverySplit(bytes, 5, LIMIT, bytes.length);
  });

  it("stops after the header of a frame over the limit or with a length below 4 (as a signed Int32)", () => {
    for (const declared of [4 + LIMIT + 1, 3, 0, -1, 2 ** 31, 0xffff_ffff]) {
      const bytes = concat([good, backendHeader(declared), new Uint8Array(500)]);
      atEverySplit(bytes, 5, LIMIT, good.length + 5);
    }
  });
});
