/**
 * RESP2 (bindings/sinks/resp.ts), the Redis sink's wire protocol: replies
 * cut at every byte parse the same as whole; commands encode as the spec
 * says; bytes that are not RESP, or lengths past the bounds, are a
 * RespProtocolError, never a hang or unbounded buffering.
 */
import { describe, expect, it } from "vitest";
import { ByteSink } from "../bindings/jsonl/sink.ts";
import { command, RespError, RespParser, RespProtocolError, type RespReply } from "../bindings/sinks/resp.ts";

const enc = new TextEncoder();

/** Replies of every type, nested, with a multi-byte UTF-8 bulk and an empty array. */
const WIRE = enc.encode(
  "+OK\r\n-WRONGTYPE Operation against a key\r\n:42\r\n:-7\r\n$4\r\nhé!\r\n$-1\r\n*-1\r\n*0\r\n" +
    "*3\r\n$2\r\nok\r\n:3\r\n*2\r\n$0\r\n\r\n-ERR x\r\n" +
    `$${"x".repeat(70_000).length}\r\n${"x".repeat(70_000)}\r\n`,
);

function expectReplies(replies: RespReply[]): void {
  expect(replies.length).toBe(10);
  expect(replies[0]).toBe("OK");
  expect(replies[1]).toBeInstanceOf(RespError);
  expect((replies[1] as RespError).code).toBe("WRONGTYPE");
  expect(replies.slice(2, 8)).toEqual([42, -7, "hé!", null, null, []]);
  const nested = replies[8] as RespReply[];
  expect(nested.slice(0, 2)).toEqual(["ok", 3]);
  expect((nested[2] as RespReply[])[0]).toBe("");
  expect(((nested[2] as RespReply[])[1] as RespError).message).toBe("ERR x");
  expect(replies[9]).toBe("x".repeat(70_000));
}

describe("RespParser", () => {
  it("whole, and cut at every byte into two pieces", () => {
    expectReplies(new RespParser().push(WIRE));
    const head = WIRE.length - 70_010; // cut everywhere in the small replies, and a few places in the large bulk
    for (const at of [...Array.from({ length: head }, (_, i) => i + 1), WIRE.length - 3, WIRE.length - 1]) {
      const p = new RespParser();
      expectReplies([...p.push(WIRE.subarray(0, at)), ...p.push(WIRE.subarray(at))]);
    }
  });

  it("a byte at a time, from a buffer that is overwritten after each push (the socket's may be reused)", () => {
    const p = new RespParser();
    const scratch = new Uint8Array(1);
    const out: RespReply[] = [];
    for (const b of WIRE.subarray(0, WIRE.length - 70_010)) {
      scratch[0] = b;
      out.push(...p.push(scratch));
      scratch[0] = 0xff;
    }
    out.push(...p.push(WIRE.subarray(WIRE.length - 70_010)));
    expectReplies(out);
  });

  it("not RESP, bad lengths, lines without an end, nesting too deep: RespProtocolError", () => {
    const bad = (text: string) => () => new RespParser().push(enc.encode(text));
    expect(bad("HTTP/1.1 400 Bad Request\r\n")).toThrow(/not a RESP reply: it starts with "HTTP\/1.1 400/);
    expect(bad("$abc\r\n")).toThrow(RespProtocolError);
    expect(bad("$-5\r\n")).toThrow(/a length that is not one/);
    expect(bad(`$${2 ** 40}\r\n`)).toThrow(/a length that is not one/);
    expect(bad("$3\r\nabcd\r\n")).toThrow(/not followed by CRLF/);
    expect(bad(":1.5\r\n")).toThrow(/an integer reply that is not one/);
    expect(bad(`+${"a".repeat(70_000)}`)).toThrow(/longer than/);
    expect(bad("*1\r\n".repeat(9) + ":1\r\n")).toThrow(/nested deeper than 8/);
  });
});

describe("command()", () => {
  it("an array of bulk strings, lengths in bytes", () => {
    const out = new ByteSink();
    command(out, ["SET", "clé", new Uint8Array([0, 13, 10])]);
    expect(Buffer.from(out.buf.subarray(0, out.len)).toString("latin1")).toBe(
      "*3\r\n$3\r\nSET\r\n$4\r\ncl\xc3\xa9\r\n$3\r\n\x00\r\n\r\n",
    );
  });
});
