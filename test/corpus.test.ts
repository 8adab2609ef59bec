/**
 * The benchmark corpus generator (devkit/capture/corpus.ts): generates the small
 * proto1-text corpus from PostgreSQL 15 into a temporary folder and checks
 * the capture file against its sidecar and the workload mix it promises.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureCorpus, sidecarPath, type CorpusInfo } from "../devkit/capture/corpus.ts";

/** What the sidecar counts, counted again from the file. */
interface Walk extends Pick<CorpusInfo, "messages" | "bytes" | "frameBytes" | "countsByTag" | "cellsByKind"> {
  /** Update messages whose new tuple has at least one 'u' column. */
  updatesWithUnchanged: number;
}

/** Walks the [uint32 BE length][message] frames and the TupleData of I/U/D (proto 1: no xid fields). */
function walk(buf: Uint8Array): Walk {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const w: Walk = { messages: 0, bytes: 0, frameBytes: buf.length, countsByTag: {}, cellsByKind: {}, updatesWithUnchanged: 0 };
  let off = 0;
  while (off < buf.length) {
    if (off + 4 > buf.length) throw new Error(`truncated length prefix at ${off}`);
    const len = view.getUint32(off, false);
    const start = off + 4;
    const end = start + len;
    if (len === 0 || end > buf.length) throw new Error(`bad frame of ${len} bytes at ${off}`);
    const tag = String.fromCharCode(buf[start]!);
    w.countsByTag[tag] = (w.countsByTag[tag] ?? 0) + 1;
    w.messages++;
    w.bytes += len;
    if (tag === "I" || tag === "U" || tag === "D") {
      let p = start + 5; // tag, relation OID
      let unchanged = false;
      while (p < end) {
        const marker = String.fromCharCode(buf[p]!);
        expect("NKO").toContain(marker);
        p++;
        const n = view.getUint16(p, false);
        p += 2;
        for (let i = 0; i < n; i++) {
          const kind = String.fromCharCode(buf[p]!);
          p++;
          w.cellsByKind[kind] = (w.cellsByKind[kind] ?? 0) + 1;
          if (kind === "u" && marker === "N") unchanged = true;
          if (kind === "t" || kind === "b") p += 4 + view.getUint32(p, false);
          else if (kind !== "n" && kind !== "u") throw new Error(`unknown column kind ${kind} in ${tag} at ${start}`);
        }
      }
      if (p !== end) throw new Error(`${tag} message at ${start}: TupleData ends at ${p}, the frame at ${end}`);
      if (tag === "U" && unchanged) w.updatesWithUnchanged++;
    }
    off = end;
  }
  return w;
}

describe("benchmark corpus (small, proto1-text, PostgreSQL 15)", () => {
  let dir: string;
  let file: string;
  let info: CorpusInfo;
  let bytes: Uint8Array;
  let walked: Walk;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "pgoutputwasm-corpus-"));
    file = await ensureCorpus("proto1-text", { scale: "small", major: 15, out: dir, log: () => {} });
    info = JSON.parse(fs.readFileSync(sidecarPath(file), "utf8")) as CorpusInfo;
    bytes = new Uint8Array(fs.readFileSync(file));
    walked = walk(bytes);
  }, 120_000);

  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("writes <variant>-pg<major>-<scale>.bin and its JSON sidecar", () => {
    expect(path.basename(file)).toBe("proto1-text-pg15-small.bin");
    expect(fs.existsSync(path.join(dir, "proto1-text-pg15-small.json"))).toBe(true);
    expect(info).toMatchObject({ variant: "proto1-text", major: 15, scale: "small" });
    expect(info.serverVersion).toMatch(/^15\./);
    expect(info.options).toMatchObject({ proto_version: "1", messages: "true" });
    expect(Number.isNaN(Date.parse(info.generatedAt))).toBe(false);
    expect(info.seconds).toBeGreaterThan(0);
  });

  it("is a sequence of length-prefixed pgoutput messages matching the sidecar", () => {
    expect(walked.frameBytes).toBe(info.frameBytes);
    expect(walked.messages).toBe(info.messages);
    expect(walked.bytes).toBe(info.bytes);
    expect(walked.frameBytes).toBe(walked.bytes + 4 * walked.messages);
    expect(walked.countsByTag).toEqual(info.countsByTag);
    expect(walked.cellsByKind).toEqual(info.cellsByKind);
  });

  it("has the size of the small scale: about 3 MB of message bytes", () => {
    expect(info.bytes).toBeGreaterThanOrEqual(2_000_000);
    expect(info.bytes).toBeLessThanOrEqual(4_500_000);
  });

  it("holds every kind of message the workloads make", () => {
    for (const tag of ["B", "C", "R", "Y", "O", "I", "U", "D", "T", "M"]) {
      expect(walked.countsByTag[tag] ?? 0, `messages with tag ${tag}`).toBeGreaterThan(0);
    }
    // Proto 1, not streamed: no Stream Start/Stop/Commit/Abort, no binary values.
    for (const tag of ["S", "E", "c", "A"]) expect(walked.countsByTag[tag]).toBeUndefined();
    expect(walked.cellsByKind.b).toBeUndefined();
    expect(walked.cellsByKind.t).toBeGreaterThan(0);
    expect(walked.cellsByKind.n).toBeGreaterThan(0);
  });

  it("has unchanged TOASTed columns ('u') in Update messages", () => {
    expect(walked.cellsByKind.u).toBeGreaterThan(0);
    expect(walked.updatesWithUnchanged).toBeGreaterThan(0);
  });

  it("commits every OLTP statement in its own transaction", () => {
    expect(walked.countsByTag.B).toBe(walked.countsByTag.C);
    // Each OLTP unit is one single-row transaction; the others add more.
    expect(walked.countsByTag.B).toBeGreaterThan(info.unitsByWorkload.oltp);
    expect(walked.countsByTag.B).toBeLessThanOrEqual(info.transactions);
  });

  it("keeps the byte mix near 40% wide / 25% OLTP / 25% documents / 10% the rest", () => {
    const total = Object.values(info.bytesByWorkload).reduce((a, b) => a + b, 0);
    expect(total).toBe(info.bytes);
    const share = (w: keyof CorpusInfo["bytesByWorkload"]) => info.bytesByWorkload[w] / total;
    expect(share("wide")).toBeGreaterThan(0.3);
    expect(share("wide")).toBeLessThan(0.5);
    expect(share("oltp")).toBeGreaterThan(0.15);
    expect(share("oltp")).toBeLessThan(0.35);
    expect(share("docs")).toBeGreaterThan(0.15);
    expect(share("docs")).toBeLessThan(0.35);
    expect(share("misc")).toBeGreaterThan(0.04);
    expect(share("misc")).toBeLessThan(0.16);
  });

  it("reuses an existing corpus instead of generating it again", async () => {
    const mtime = fs.statSync(file).mtimeMs;
    const again = await ensureCorpus("proto1-text", { scale: "small", major: 15, out: dir, log: () => {} });
    expect(again).toBe(file);
    expect(fs.statSync(file).mtimeMs).toBe(mtime);
  });
});
