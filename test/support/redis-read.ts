/**
 * What a Redis server holds, read for the sink tests independently of the
 * sink's own client: through redis-cli (`--json`), entries over a plain
 * socket (commands encoded here, replies through the RESP parser only), and,
 * while the server is down, from its append-only files (RESP commands).
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { promisify } from "node:util";
import { RespError, RespParser } from "../../bindings/sinks/resp.ts";

const run = promisify(execFile);

export async function redisCli(port: number, ...args: string[]): Promise<unknown> {
  const { stdout } = await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), "--json", ...args], { maxBuffer: 1 << 30 });
  return JSON.parse(stdout);
}

export interface StreamEntry {
  key: string;
  /** The entry id, `ms-seq`. */
  id: string;
  fields: Record<string, string>;
}

/**
 * Commands over a plain socket, encoded here and answered in order: for
 * reading many entries fast (redis-cli --json takes seconds for megabytes).
 */
async function ask(port: number, commands: string[][]): Promise<unknown[]> {
  const socket = net.connect(port, "127.0.0.1");
  const parser = new RespParser();
  const replies: unknown[] = [];
  try {
    return await new Promise((resolve, reject) => {
      socket.on("error", reject);
      // A server shutting down may take the connection and close it unanswered.
      socket.on("close", () => reject(new Error("closed before every answer came")));
      socket.setTimeout(10_000, () => reject(new Error("no answer for 10 s")));
      socket.on("data", (chunk: Buffer) => {
        try {
          replies.push(...parser.push(chunk));
        } catch (e) {
          reject(e);
        }
        if (replies.length < commands.length) return;
        // An error answer (LOADING while a restarted server reads its AOF, say) is no answer: it is not "no entries".
        const error = replies.find((r) => r instanceof RespError);
        if (error !== undefined) reject(new Error((error as RespError).message));
        else resolve(replies);
      });
      const bulk = (a: string) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
      socket.write(commands.map((c) => `*${c.length}\r\n${c.map(bulk).join("")}`).join(""));
    });
  } finally {
    socket.destroy();
  }
}

/** Every stream (key → its entries, in stream order). */
export async function readStreams(port: number): Promise<Map<string, StreamEntry[]>> {
  const keys = (await redisCli(port, "KEYS", "*")) as string[];
  const out = new Map<string, StreamEntry[]>();
  for (const key of keys.sort()) {
    if ((await redisCli(port, "TYPE", key)) !== "stream") continue;
    const entries: StreamEntry[] = [];
    // Pages of 1,000 entries: XRANGE from just after the last id read.
    for (let from = "-"; ; ) {
      const [page] = (await ask(port, [["XRANGE", key, from, "+", "COUNT", "1000"]])) as [string, string[]][][];
      for (const [id, kv] of page!) {
        const fields: Record<string, string> = {};
        for (let i = 0; i < kv.length; i += 2) fields[kv[i]!] = kv[i + 1]!;
        entries.push({ key, id, fields });
      }
      if (page!.length < 1000) break;
      from = `(${page![page!.length - 1]![0]}`;
    }
    out.set(key, entries);
  }
  return out;
}

/** An entry id as a [ms, seq] pair of bigints, for comparing. */
export function entryPosition(id: string): [bigint, bigint] {
  const [ms, seq] = id.split("-");
  return [BigInt(ms!), BigInt(seq!)];
}

export function compareEntryIds(a: string, b: string): number {
  const [a1, a2] = entryPosition(a);
  const [b1, b2] = entryPosition(b);
  return a1 < b1 ? -1 : a1 > b1 ? 1 : a2 < b2 ? -1 : a2 > b2 ? 1 : 0;
}

/** The greatest entry id in these streams, from the server (undefined when none); rejects when the server is down. */
export async function topEntryId(port: number, keys: readonly string[]): Promise<string | undefined> {
  const tops = (await ask(port, keys.map((k) => ["XREVRANGE", k, "+", "-", "COUNT", "1"]))) as [string, string[]][][];
  let top: string | undefined;
  for (const last of tops) if (last.length > 0 && (top === undefined || compareEntryIds(last[0]![0], top) > 0)) top = last[0]![0];
  return top;
}

/**
 * The greatest entry id the append-only files of a stopped server hold: what
 * it will hold when started again. Reads the incremental files (RESP); a
 * base file written by a rewrite (RDB) is not read, so this is for servers
 * started with automatic rewrites off.
 */
export function topEntryIdInAof(dir: string): string | undefined {
  const aofDir = path.join(dir, "appendonlydir");
  let top: string | undefined;
  for (const name of fs.readdirSync(aofDir).filter((n) => n.endsWith(".incr.aof")).sort()) {
    const parser = new RespParser();
    for (const cmd of parser.push(fs.readFileSync(path.join(aofDir, name)))) {
      if (!Array.isArray(cmd) || String(cmd[0]).toUpperCase() !== "XADD") continue;
      // XADD key [MAXLEN [~|=] N] id field value ...: the id is the first argument after the options that looks like one.
      const id = (cmd.slice(2) as string[]).find((a) => /^\d+-\d+$/.test(a));
      if (id !== undefined && (top === undefined || compareEntryIds(id, top) > 0)) top = id;
    }
  }
  return top;
}
