/**
 * The replication stream's own per-message path, in process: no server and
 * no socket, so that what is measured is the client's — the reader's push
 * of each chunk, one decode per batch, and every `next()` through the pull,
 * the stream-order reading and the acknowledgement tracking.
 *
 *   npm run build:bench && node --expose-gc build/bench/bench/stream.bench.js [--mb 64] [--rounds 7]
 *
 * A `ReplicationStream` over a stand-in socket (pg's listener taken over,
 * writes dropped) is fed a prebuilt backlog: CopyData frames of XLogData,
 * transactions of 1,000 Inserts of about 260 bytes of pgoutput each, as in
 * replicate.bench.ts. The feeder hands over 1 MB in 64 KB chunks whenever the
 * consumer waits; the consumer reads each message's kind. Per backend: MB/s
 * (wall) and CPU seconds per GB, median and range of `--rounds` (after one
 * unmeasured round). replicate.bench.ts measures the same end to end, where
 * the walsender's pace and the reads the operating system gathers vary from
 * run to run; this is the figure for comparing two versions of the stream's
 * code: alternate processes of each checkout (in one process, two copies of
 * the stream drift apart by 10-20% even when they are the same code).
 */
import { pathToFileURL } from "node:url";
import type { Client } from "pg";
import { createDecoder } from "../bindings/create-decoder.ts";
import { ReplicationStream } from "../bindings/pg/stream.ts";
import { normalizeOptions } from "../bindings/pg/options.ts";
import { concat, encode } from "../devkit/encoder/encoder.ts";
import { backend, wal } from "../devkit/encoder/walsender-encoder.ts";
import { numberArg } from "./args.ts";

const CHUNK = 64 << 10;
const FEED = 1 << 20;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface Backlog {
  bytes: Uint8Array;
  messages: number;
}

/** The backlog: a Relation, then transactions of 1,000 Inserts until `mb` MB. */
export function backlog(mb: number): Backlog {
  const rel = {
    relationId: 16384, namespace: "public", relationName: "e2e",
    columns: [
      { name: "id", typeId: 23, isKey: true }, { name: "a", typeId: 23 }, { name: "b", typeId: 25 },
      { name: "c", typeId: 1184 }, { name: "d", typeId: 1700 },
    ],
  };
  const t = 1_700_000_000_000_000n;
  const h = { walStart: 0x1000n, walEnd: 0x1000n, sendTime: t };
  const frame = (m: Parameters<typeof wal.xlogData>[0]) => backend.copyData(wal.xlogData(m, h)).bytes;
  const b = "0123456789abcdef".repeat(12);
  const rows: Uint8Array[] = [frame(encode.begin({ finalLsn: 0x2000n, commitTime: t, xid: 700 }))];
  for (let i = 0; i < 1000; i++) rows.push(frame(encode.insert({ relation: rel, newTuple: [String(i), String(i * 7), b, "2024-01-01 00:00:00+00", String(i * 1.25)] })));
  rows.push(frame(encode.commit({ commitLsn: 0x2000n, endLsn: 0x2008n, commitTime: t })));
  const txn = concat(rows);
  const count = Math.max(1, Math.round((mb << 20) / txn.length));
  const parts = [frame(encode.relation(rel))];
  for (let i = 0; i < count; i++) parts.push(txn);
  return { bytes: concat(parts), messages: 1 + count * 1002 };
}

/** pg's side as far as the stream uses it: a socket whose one 'data' listener it takes over, a client it may end. */
function standIns(): { client: Client; socket: ConstructorParameters<typeof ReplicationStream>[0]["socket"]; emit: (chunk: Uint8Array) => void } {
  let data: ((chunk: Uint8Array) => void)[] = [() => {}];
  const socket = {
    writableLength: 0,
    listeners: () => [...data],
    on: (event: string, f: (chunk: Uint8Array) => void) => (event === "data" ? data.push(f) : undefined),
    removeListener: (event: string, f: unknown) => (event === "data" ? (data = data.filter((g) => g !== f)) : undefined),
    write: () => true,
    pause: () => {},
    resume: () => {},
    destroy: () => {},
  };
  const client = { on: () => client, removeListener: () => client, end: async () => {} } as unknown as Client;
  return { client, socket, emit: (chunk) => data.forEach((f) => f(chunk)) };
}

/** One stream draining `input`: its wall time and process CPU, in seconds. */
export async function streamRound(which: "wasm" | "baseline", input: Backlog): Promise<{ wall: number; cpu: number }> {
  const { client, socket, emit } = standIns();
  const options = normalizeOptions({ connection: "postgres://bench@127.0.0.1/bench", slot: "bench", publications: "bench", reconnect: false, stopTimeoutMs: 1 });
  const s = new ReplicationStream({
    client, socket, decoder: await createDecoder({ backend: which }), options, start: 0n, serverVersion: 150000, callbacks: {}, secrets: [],
  });
  const started = s.start("START_REPLICATION SLOT bench LOGICAL 0/0");
  emit(backend.copyBothResponse().bytes);
  await started;
  let at = 0;
  const feed = () => {
    const end = Math.min(input.bytes.length, at + FEED);
    for (; at < end; at += CHUNK) emit(input.bytes.subarray(at, Math.min(end, at + CHUNK)));
    if (at < input.bytes.length) setImmediate(feed);
  };
  (globalThis as { gc?: () => void }).gc?.(); // run with --expose-gc: the previous round's garbage is not this one's cost
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  setImmediate(feed);
  const messages = s[Symbol.asyncIterator]();
  let inserts = 0;
  for (let seen = 0; seen < input.messages; seen++) {
    const r = await messages.next();
    if (r.done === true) throw new Error(`the stream ended after ${seen} messages: ${String(s.error)}`);
    if (r.value.kind === "Insert") inserts++;
  }
  const wall = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(cpu0);
  await s.stop(); // not measured (nothing answers its CopyDone: stopTimeoutMs is short)
  if (inserts === 0) throw new Error("no Insert decoded");
  return { wall, cpu: (c.user + c.system) / 1e6 };
}

async function main(): Promise<void> {
  const mb = numberArg("mb", 64);
  const rounds = numberArg("rounds", 7);
  const input = backlog(mb);
  const gb = input.bytes.length / 1e9;
  const range = (xs: number[], digits: number) => `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)})`;
  for (const which of ["wasm", "baseline"] as const) {
    await streamRound(which, input);
    const r: { wall: number; cpu: number }[] = [];
    for (let i = 0; i < rounds; i++) r.push(await streamRound(which, input));
    console.log(
      `stream/${which}: ${(input.bytes.length / 1e6).toFixed(0)} MB, ${input.messages} messages: ` +
        `MB/s ${range(r.map((x) => input.bytes.length / 1e6 / x.wall), 0)}, CPU s/GB ${range(r.map((x) => x.cpu / gb), 2)}`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
