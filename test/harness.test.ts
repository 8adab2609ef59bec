// Proves the real-PostgreSQL harness (devkit/cluster, devkit/capture) without any decoder:
// the captured pgoutput messages have the expected tags in the expected order,
// and a few fixed-offset fields hold what the scenario says.

import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { decodeCapture, encodeCapture, type SlotRow } from "../devkit/capture/slot.ts";
import { scenarioByName, scenarios, type ScenarioResult } from "../devkit/capture/scenarios.ts";

const MAJORS: PgMajor[] = [15, 18];
const clusters = new Map<PgMajor, Cluster>();
const results = new Map<string, ScenarioResult>();

beforeAll(async () => {
  const t0 = performance.now();
  const started = await Promise.all(MAJORS.map((m) => startCluster(m)));
  for (const c of started) clusters.set(c.major, c);
  console.info(`started PostgreSQL ${started.map((c) => c.version).join(" and ")} in ${Math.round(performance.now() - t0)} ms`);
});

afterAll(async () => {
  await Promise.all([...clusters.values()].map((c) => c.stop()));
});

// ------------------------------------------------------------ byte helpers

const tagOf = (m: Uint8Array) => String.fromCharCode(m[0]!);
const tags = (rows: SlotRow[]) => rows.map((r) => tagOf(r.data)).join("");
/** Tags with runs of Insert collapsed to one. */
const squeezed = (rows: SlotRow[]) => tags(rows).replace(/I+/g, "I");
const withTag = (rows: SlotRow[], t: string) => rows.map((r) => r.data).filter((d) => tagOf(d) === t);
const view = (m: Uint8Array) => new DataView(m.buffer, m.byteOffset, m.byteLength);
const u32 = (m: Uint8Array, off: number) => view(m).getUint32(off);
const u16 = (m: Uint8Array, off: number) => view(m).getUint16(off);
const u64 = (m: Uint8Array, off: number) => view(m).getBigUint64(off);
const utf8 = (s: string) => new TextEncoder().encode(s);
const chr = (m: Uint8Array, off: number) => String.fromCharCode(m[off]!);

function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

function endsWithCString(m: Uint8Array, s: string): boolean {
  const b = utf8(s);
  if (m[m.length - 1] !== 0) return false;
  return contains(m.subarray(m.length - 1 - b.length), b);
}

/** Begin: Int64 final LSN, Int64 commit time, Int32 xid. */
const beginXids = (r: ScenarioResult) => withTag(r.rows, "B").map((m) => u32(m, 17));

async function run(major: PgMajor, name: string): Promise<ScenarioResult> {
  const c = clusters.get(major)!;
  const r = await scenarioByName(name).run(c);
  results.set(`${major}/${name}`, r);
  expect(r.rows.length).toBeGreaterThan(0);
  expect(r.major).toBe(major);
  for (const row of r.rows) {
    expect(Object.getPrototypeOf(row.data)).toBe(Uint8Array.prototype);
    expect(row.lsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
  }
  return r;
}

// ------------------------------------------------------------------- tests

describe.each(MAJORS)("PostgreSQL %i", (major) => {
  it("runs a cluster set up for logical decoding", async () => {
    const c = clusters.get(major)!;
    expect(Number.parseInt(c.version, 10)).toBe(major);
    expect(c.connectionString).toBe(`postgres://postgres@127.0.0.1:${c.port}/postgres`);
    const [s] = await c.query<{ wal_level: string; mem: string; prep: string }>(
      "SELECT current_setting('wal_level') AS wal_level, current_setting('logical_decoding_work_mem') AS mem, current_setting('max_prepared_transactions') AS prep",
    );
    expect(s).toEqual({ wal_level: "logical", mem: "64kB", prep: "16" });
    const repl = await c.connect({ replication: "database" });
    try {
      const res = await repl.query("IDENTIFY_SYSTEM");
      expect(res.rows[0].dbname).toBe("postgres");
    } finally {
      await repl.end();
    }
  });

  it("replica-identity", async () => {
    const r = await run(major, "replica-identity");
    expect(tags(r.rows)).toBe("BRIIRIIRIIRIIC" + "BUUUUUC" + "BDDDC");
    // Byte after the relation OID: N (no old tuple), K (old key), O (old row).
    expect(withTag(r.rows, "U").map((m) => chr(m, 5))).toEqual(["N", "K", "O", "N", "K"]);
    expect(withTag(r.rows, "D").map((m) => chr(m, 5))).toEqual(["K", "O", "K"]);
    expect(beginXids(r)).toEqual(r.expected.transactions.map((t: { xid: number }) => t.xid));
    // Relation: [Int32 oid] namespace\0 name\0 then the replica identity byte.
    const ri = withTag(r.rows, "R").map((m) => {
      const afterNs = m.indexOf(0, 5) + 1;
      const afterName = m.indexOf(0, afterNs) + 1;
      return chr(m, afterName);
    });
    expect(ri).toEqual(["d", "f", "i", "n"]);
  });

  it("toast-unchanged", async () => {
    const r = await run(major, "toast-unchanged");
    expect(tags(r.rows)).toBe("BRIRIC" + "BUUC" + "BDDC");
    for (const m of withTag(r.rows, "I")) expect(m.length).toBeGreaterThan(100_000);
    const [updDefault, updFull] = withTag(r.rows, "U");
    expect(chr(updDefault!, 5)).toBe("N");
    expect(chr(updDefault!, updDefault!.length - 1)).toBe("u"); // big column: unchanged TOAST
    expect(chr(updFull!, 5)).toBe("O");
    expect(updFull!.length).toBeGreaterThan(100_000); // the old row carries the value
    expect(chr(updFull!, updFull!.length - 1)).toBe("u");
    expect(r.expected.big.length).toBe(102_400);
  });

  it("truncate", async () => {
    const r = await run(major, "truncate");
    expect(tags(r.rows).replace(/R/g, "")).toBe("BIIIIIIC" + "BTC".repeat(4));
    const ts = withTag(r.rows, "T");
    // Int32 nrels, Int8 options, Int32 oid x nrels
    expect(ts.map((m) => u32(m, 1))).toEqual([2, 1, 2, 1]);
    expect(ts.map((m) => m[5])).toEqual([1, 2, 3, 0]);
    const rel = r.expected.relations as Record<string, { oid: number }>;
    const want = r.expected.transactions.slice(1).map((t: { changes: { relations: string[] }[] }) => t.changes[0]!.relations.map((n) => rel[n]!.oid));
    expect(ts.map((m) => Array.from({ length: u32(m, 1) }, (_, i) => u32(m, 6 + 4 * i)))).toEqual(want);
  });

  it("messages", async () => {
    const r = await run(major, "messages");
    expect(tags(r.rows)).toBe("BRIMC" + "M" + "M" + "BMMC");
    const ms = withTag(r.rows, "M");
    expect(ms.map((m) => m[1])).toEqual([1, 0, 0, 1, 1]); // transactional flag
    const expected = r.expected.messages as { prefix: string; contentHex: string }[];
    ms.forEach((m, i) => {
      const e = expected[i]!;
      expect(contains(m, utf8(`${e.prefix}\0`))).toBe(true);
      const content = Buffer.from(e.contentHex, "hex");
      expect(Buffer.from(m.subarray(m.length - content.length)).equals(content)).toBe(true);
      expect(u32(m, m.length - content.length - 4)).toBe(content.length);
    });
    expect(expected[1]!.contentHex).toBe("ff00fe80c328"); // not UTF-8, with a NUL
  });

  it("origin", async () => {
    const r = await run(major, "origin");
    expect(tags(r.rows)).toBe("BORIC" + "BIC");
    const [o] = withTag(r.rows, "O");
    expect(u64(o!, 1)).toBe(0xfedcba9876543210n);
    expect(endsWithCString(o!, r.expected.originName)).toBe(true);
  });

  it("enum-domain", async () => {
    const r = await run(major, "enum-domain");
    expect(tags(r.rows)).toBe("BYYYRIIC" + "BUC");
    const ys = withTag(r.rows, "Y");
    expect(ys.map((m) => u32(m, 1))).toEqual(r.expected.types.map((t: { oid: number }) => t.oid));
    expect(endsWithCString(ys[2]!, "int4")).toBe(true); // the domain, under its base type's name
  });

  it("streaming", async () => {
    const r = await run(major, "streaming");
    const e = r.expected;
    const t = squeezed(r.rows);
    const m = /^((?:S[RI]+E)+A(?:S[RI]+E)+c)(.*)$/.exec(t);
    expect(m, t).not.toBeNull();
    if (major === 15) expect(m![2]).toMatch(/^(S[RI]+E)+A$/);
    else expect(m![2]).toBe(""); // PG 18 skips the transaction known to be aborted
    expect(e.abortedIsStreamed).toBe(major === 15);
    const aborts = withTag(r.rows, "A");
    expect(aborts.every((a) => a.length === 9)).toBe(true); // no v4 fields
    expect([u32(aborts[0]!, 1), u32(aborts[0]!, 5)]).toEqual([e.committed.xid, e.committed.subxid]);
    if (major === 15) expect([u32(aborts[1]!, 1), u32(aborts[1]!, 5)]).toEqual([e.aborted.xid, e.aborted.xid]);
    // Stream Start: Int32 xid, Int8 first-segment flag.
    const starts = withTag(r.rows, "S").map((s) => [u32(s, 1), s[5]]);
    expect(starts[0]).toEqual([e.committed.xid, 1]);
    expect(starts.filter(([x, first]) => x === e.committed.xid && first === 1)).toHaveLength(1);
    // Inserts in a stream: [Int32 xid] of the subtransaction that made them.
    const xids = withTag(r.rows, "I").map((i) => u32(i, 1));
    for (const range of e.committed.rows as { from: number; to: number; xid: number }[]) {
      expect(xids.filter((x) => x === range.xid)).toHaveLength(range.to - range.from + 1);
    }
    expect(xids.filter((x) => x === e.committed.subxid).length).toBeGreaterThan(0);
  });

  it("two-phase", async () => {
    const r = await run(major, "two-phase");
    // Begin Prepare, Prepare, Commit Prepared; then Rollback Prepared; then a streamed prepare.
    expect(squeezed(r.rows)).toMatch(/^bRIPKbIPr(S[RI]+E)+pK$/);
    const prepared = r.expected.prepared as { gid: string; xid: number }[];
    const gidTagged = r.rows.map((x) => x.data).filter((d) => "bPKrp".includes(tagOf(d)));
    expect(gidTagged.map((d) => tagOf(d)).join("")).toBe("bPKbPrpK");
    const gidOrder = [0, 0, 0, 1, 1, 1, 2, 2];
    gidTagged.forEach((d, i) => expect(endsWithCString(d, prepared[gidOrder[i]!]!.gid)).toBe(true));
  });

  // Protocol 4 needs PostgreSQL 16+: the case exists only for the servers that have it.
  if (major >= 16) it("parallel-abort (protocol 4)", async () => {
    const r = await run(major, "parallel-abort");
    expect(squeezed(r.rows)).toMatch(/^(S[RI]+E)+A(S[RI]+E)+c$/);
    const [a] = withTag(r.rows, "A");
    expect(a!.length).toBe(25); // Int32 xid, Int32 subxid, Int64 abort LSN, Int64 abort time
    expect([u32(a!, 1), u32(a!, 5)]).toEqual([r.expected.xid, r.expected.subxid]);
  });

  it("binary", async () => {
    const r = await run(major, "binary");
    expect(tags(r.rows)).toBe("BRIIIC" + "BUDC");
    const [first, , nulls] = withTag(r.rows, "I");
    // Insert: tag, Int32 oid, 'N', Int16 ncols, then per column a kind byte.
    expect(chr(first!, 8)).toBe("b");
    expect(u32(first!, 9)).toBe(4); // int4 in binary: 4 bytes
    expect(Buffer.from(first!.subarray(13, 17)).toString("hex")).toBe(r.expected.binary[0].new[0]);
    expect(Buffer.from(nulls!.subarray(8)).toString("latin1")).toBe("b\0\0\0\x04\xff\xff\xff\xfdnnnn");
  });

  it("unicode", async () => {
    const r = await run(major, "unicode");
    expect(tags(r.rows)).toBe("BRIIRIIC" + "BUUC");
    const [rel, zero] = withTag(r.rows, "R");
    expect(contains(rel!, utf8(`${r.expected.schema}\0таблица_😀\0`))).toBe(true);
    expect(contains(rel!, utf8("名前\0"))).toBe(true);
    expect(u16(zero!, zero!.length - 2)).toBe(0); // zero columns
    const zeroInserts = withTag(r.rows, "I").filter((m) => m.length === 8);
    expect(zeroInserts).toHaveLength(2);
    expect(contains(withTag(r.rows, "I")[0]!, utf8("日本語 😀 ü"))).toBe(true);
  });

  it("wide", async () => {
    const r = await run(major, "wide");
    expect(tags(r.rows)).toBe("BRIIC" + "BDC");
    for (const m of withTag(r.rows, "I")) expect(u16(m, 6)).toBe(1600);
    const [d] = withTag(r.rows, "D");
    expect(chr(d!, 5)).toBe("K");
    expect(u16(d!, 6)).toBe(1600);
    expect(r.expected.relations.wide_t.columns).toHaveLength(1600);
  });

  it("serializes scenarios started together on one cluster", async () => {
    const c = clusters.get(major)!;
    const [a, b, d] = await Promise.all([scenarioByName("two-phase").run(c), scenarioByName("streaming").run(c), scenarioByName("origin").run(c)]);
    // Each capture holds only its own transactions (no foreign empty streams or prepares).
    expect(squeezed(a.rows)).toMatch(/^bRIPKbIPr(S[RI]+E)+pK$/);
    expect(squeezed(b.rows)).toMatch(major === 15 ? /^(S[RI]+E)+A(S[RI]+E)+c(S[RI]+E)+A$/ : /^(S[RI]+E)+A(S[RI]+E)+c$/);
    expect(tags(d.rows)).toBe("BORICBIC");
  });
});

describe("capture format", () => {
  it("round-trips, plain and gzipped", () => {
    const msgs = [new Uint8Array([0x42, 1, 2]), new Uint8Array(0), new Uint8Array(70_000).fill(7)];
    const enc = encodeCapture(msgs);
    expect(enc.length).toBe(3 * 4 + 3 + 70_000);
    expect(Array.from(enc.subarray(0, 7))).toEqual([0, 0, 0, 3, 0x42, 1, 2]);
    expect(decodeCapture(enc).map((m) => m.length)).toEqual([3, 0, 70_000]);
    const gz = gzipSync(enc);
    const dec = decodeCapture(new Uint8Array(gz.buffer, gz.byteOffset, gz.byteLength));
    expect(dec.map((m) => Buffer.from(m).toString("hex"))).toEqual(msgs.map((m) => Buffer.from(m).toString("hex")));
    expect(Object.getPrototypeOf(dec[0]!)).toBe(Uint8Array.prototype);
    expect(() => decodeCapture(enc.subarray(0, 9))).toThrow(/truncated/);
  });

  it("round-trips every captured scenario", () => {
    expect(results.size).toBe(scenarios.reduce((n, s) => n + s.majors.filter((m) => MAJORS.includes(m)).length, 0));
    for (const r of results.values()) {
      const msgs = r.rows.map((x) => x.data);
      const back = decodeCapture(gzipSync(encodeCapture(msgs)));
      expect(back.length).toBe(msgs.length);
      expect(back.every((m, i) => Buffer.from(m).equals(msgs[i]!))).toBe(true);
    }
  });
});
