// `pgoutput-wasm tail`, end to end: the CLI (compiled from bindings/ with
// tsconfig.build.json, as it is published) runs as a child process against
// real PostgreSQL 15 and 18 clusters while the test writes changes; its JSON
// Lines are compared with what was written, values exact in the JSON text
// (int8 extremes, a 70-digit numeric, unchanged TOAST named). Every error the
// CLI explains gives its one-line message and hint and a non-zero exit.
// Ctrl-C (SIGINT) in the middle of a stream exits 0 and leaves the slot's
// confirmed_flush_lsn at the end of the last printed transaction: a second
// run starts exactly at the first transaction not printed. And the
// no-argument embedded demo runs to completion.

import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as net from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "pg";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { waitStreaming } from "./support/slot-streaming.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";
import { closedPort } from "./support/closed-port.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI_FOLDER = "cli-test-tail";
const MAIN = join(ROOT, "build", CLI_FOLDER, "cli", "main.js");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------ exact JSON

/** A JSON number, kept as its text. */
class Num {
  constructor(readonly text: string) {}
}

/** JSON.parse, but numbers stay exact (as `Num`): the CLI writes int8 and numeric with every digit. */
function parseExact(text: string): any {
  let i = 0;
  const ws = () => { while (i < text.length && " \t\r\n".includes(text[i]!)) i++; };
  const value = (): any => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const obj: Record<string, any> = {};
      ws();
      if (text[i] === "}") { i++; return obj; }
      for (;;) {
        ws();
        const k = value() as string;
        ws();
        i++; // :
        obj[k] = value();
        ws();
        if (text[i++] === "}") return obj;
      }
    }
    if (c === "[") {
      i++;
      const arr: any[] = [];
      ws();
      if (text[i] === "]") { i++; return arr; }
      for (;;) {
        arr.push(value());
        ws();
        if (text[i++] === "]") return arr;
      }
    }
    if (c === '"') {
      const start = i;
      i++;
      while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      i++;
      return JSON.parse(text.slice(start, i));
    }
    const m = /^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 400))!;
    i += m[0].length;
    return m[0] === "true" ? true : m[0] === "false" ? false : m[0] === "null" ? null : new Num(m[0]);
  };
  return value();
}

/** A column's value in a change line: numbers as their exact text. */
function col(line: any, name: string, field: "columns" | "identity" = "columns"): unknown {
  const c = (line[field] as { name: string; value: unknown }[] | undefined)?.find((x) => x.name === name);
  if (c === undefined) return undefined;
  return plain(c.value);
}

function plain(v: unknown): unknown {
  if (v instanceof Num) return v.text;
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

// ------------------------------------------------------------ running the CLI

/** The environment of the CLI: no PG* variables (they would select a server). */
function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PG")) env[k] = v;
  return { ...env, ...extra };
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A running CLI: its stdout lines as they come. */
class Cli {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  stderr = "";
  readonly exited: Promise<Run>;
  #partial = "";
  #waiters: (() => void)[] = [];

  constructor(args: string[], env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: cliEnv(env), stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    this.child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      const parts = (this.#partial + d).split("\n");
      this.#partial = parts.pop()!;
      this.lines.push(...parts);
      for (const w of this.#waiters.splice(0)) w();
    });
    this.child.stderr!.setEncoding("utf8").on("data", (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) => {
      this.child.on("close", (code, signal) => {
        for (const w of this.#waiters.splice(0)) w();
        resolve({ code, signal, stdout: out, stderr: this.stderr });
      });
    });
  }

  get parsed(): any[] {
    return this.lines.map(parseExact);
  }

  /** Waits until `pred(lines)` holds; fails on exit or timeout. */
  async until(pred: (lines: any[]) => boolean, timeoutMs = 30_000): Promise<any[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = this.parsed;
      if (pred(parsed)) return parsed;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`the CLI exited (${this.child.exitCode}) before the condition held; stderr: ${this.stderr}`);
      }
      if (Date.now() > deadline) throw new Error(`timed out with ${this.lines.length} lines; stderr: ${this.stderr}`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
}

/** Runs the CLI to its end. */
function run(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Run> {
  const c = new Cli(args, env);
  c.child.stdin!.end();
  const timer = setTimeout(() => c.child.kill("SIGKILL"), timeoutMs);
  return c.exited.finally(() => clearTimeout(timer));
}

// ------------------------------------------------------------ clusters

const clusters = new Map<PgMajor, Cluster>();
const cleanup: (() => Promise<unknown>)[] = [];
const HBA = ["host all pwuser 127.0.0.1/32 scram-sha-256"];

beforeAll(async () => {
  const compile = buildCli(CLI_FOLDER);
  const [c15, c18] = await Promise.all([startCluster(15, { hba: HBA }), startCluster(18, { hba: HBA }), compile]);
  clusters.set(15, c15);
  clusters.set(18, c18);
  for (const c of [c15, c18]) {
    await c.query(`
      CREATE TYPE mood AS ENUM ('ok', 'meh');
      CREATE TABLE cli_t (id int8 PRIMARY KEY, n numeric, f float8, ok bool, j jsonb, ts timestamptz, arr int4[], m mood, body text);
      ALTER TABLE cli_t ALTER body SET STORAGE EXTERNAL;
      CREATE TABLE cli_other (id int PRIMARY KEY);
      CREATE TABLE cli_seq (k int PRIMARY KEY);
      CREATE PUBLICATION p_cli FOR TABLE cli_t, cli_other;
      CREATE PUBLICATION p_seq FOR TABLE cli_seq;
      CREATE ROLE pwuser LOGIN REPLICATION PASSWORD 'secret';
      CREATE ROLE noreplic LOGIN;
    `);
  }
}, 120_000);

afterAll(async () => {
  for (const f of cleanup) await f().catch(() => {});
  for (const c of clusters.values()) await c.stop();
  await removeCli(CLI_FOLDER);
});

/** Runs statements in one transaction; returns its xid as pgoutput sends it (32 bits). */
async function tx(client: Client, ...statements: string[]): Promise<number> {
  await client.query("BEGIN");
  for (const s of statements) await client.query(s);
  const { rows } = await client.query<{ xid: string }>("SELECT (pg_current_xact_id()::text::numeric % 4294967296)::text AS xid");
  await client.query("COMMIT");
  return Number(rows[0]!.xid);
}

const BIG_NUMERIC = "12345678901234567890123456789012345678901234567890.000000000000000000001";
const TINY_NUMERIC = "-0.000000000000000000000000000001";
const BULK = 1500;

// ------------------------------------------------------------ changes, both servers

describe.concurrent("tail streams typed changes", () => {
  const variants = [
    { major: 15 as PgMajor, extra: ["--backend", "baseline"] },
    { major: 18 as PgMajor, extra: ["--binary"] },
  ];
  for (const { major, extra } of variants) {
    it(`PostgreSQL ${major} (${extra.join(" ")}): values exact, unchanged TOAST named, streamed, filtered, Ctrl-C exits 0 with everything acknowledged`, async () => {
      const c = clusters.get(major)!;
      const slot = `s_typed_${major}`;
      const tail = new Cli(["tail", "-c", c.connectionString, "--publication", "p_cli", "--slot", slot, "--create-slot", "--transactions", "--tables", "cli_t", ...extra]);
      cleanup.push(async () => tail.child.kill("SIGKILL"));
      await waitStreaming(c, slot);
      const w = await c.connect();
      try {
        const x1 = await tx(w, `INSERT INTO cli_t VALUES (9223372036854775807, '${BIG_NUMERIC}', 0.1, true, '{"a": [1, 2.5, "x"], "big": 12345678901234567890}',
          '2024-02-29 04:05:06.789012+05:30', '{1,NULL,3}', 'meh', repeat('x', 10000))`,
          `INSERT INTO cli_t VALUES (-9223372036854775808, '${TINY_NUMERIC}', -1.5e300, false, 'null', NULL, '{}', 'ok', 'short')`);
        const x2 = await tx(w, `UPDATE cli_t SET n = n + 1 WHERE id = 9223372036854775807`);
        const x3 = await tx(w, `INSERT INTO cli_other VALUES (1)`);
        const x4 = await tx(w, `DELETE FROM cli_t WHERE id = -9223372036854775808`);
        const x5 = await tx(w, `INSERT INTO cli_t (id, n, body) SELECT g, g / 7.0, 'row ' || g FROM generate_series(1, ${BULK}) g`);
        const x6 = await tx(w, `TRUNCATE cli_t`);
        const lines = await tail.until((ls) => ls.some((l) => l.action === "C" && l.xid.text === String(x6)));

        const of = (xid: number) => lines.filter((l) => l.xid instanceof Num && l.xid.text === String(xid));
        // Transaction 1: B, two inserts, C.
        const t1 = of(x1);
        expect(t1.map((l) => l.action)).toEqual(["B", "I", "I", "C"]);
        const [b1, i1, i2, c1] = t1;
        expect(b1.lsn).toBe(c1.lsn);
        expect(i1).toMatchObject({ schema: "public", table: "cli_t", timestamp: c1.timestamp });
        expect(i1.lsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
        expect(col(i1, "id")).toBe("9223372036854775807");
        expect(col(i1, "n")).toBe(BIG_NUMERIC);
        expect(col(i1, "f")).toBe("0.1");
        expect(col(i1, "ok")).toBe(true);
        expect(col(i1, "j")).toEqual({ a: ["1", "2.5", "x"], big: "12345678901234567890" });
        expect(col(i1, "ts")).toBe("2024-02-28T22:35:06.789012Z");
        expect(col(i1, "arr")).toEqual(["1", null, "3"]);
        expect(col(i1, "m")).toBe("meh");
        expect(col(i1, "body")).toBe("x".repeat(10000));
        expect(i1.columns.map((x: any) => x.type)).toEqual(["bigint", "numeric", "double precision", "boolean", "jsonb", "timestamp with time zone", "integer[]", "mood", "text"]);
        expect(col(i2, "id")).toBe("-9223372036854775808");
        expect(col(i2, "n")).toBe(TINY_NUMERIC);
        expect(col(i2, "f")).toBe("-1.5e+300");
        expect(col(i2, "j")).toBe(null); // JSON null
        expect(col(i2, "ts")).toBe(null);
        expect(col(i2, "arr")).toEqual([]);
        // The raw text holds every digit.
        expect(tail.lines.find((l) => l.includes('"value":9223372036854775807'))).toBeDefined();

        // Transaction 2: the update leaves body (TOASTed, unchanged) out and names it.
        const [u] = of(x2).filter((l) => l.action === "U");
        expect(u.unchanged).toEqual(["body"]);
        expect(col(u, "body")).toBeUndefined();
        expect(col(u, "n")).toBe(BIG_NUMERIC.replace(/^12345678901234567890123456789012345678901234567890/, "12345678901234567890123456789012345678901234567891"));
        expect(col(u, "id", "identity")).toBe("9223372036854775807");

        // Transaction 3 touched only cli_other: filtered out, and no B/C for it.
        expect(of(x3)).toEqual([]);
        expect(lines.some((l) => l.table === "cli_other")).toBe(false);

        // Transaction 4: the delete's identity is the key.
        const d = of(x4).find((l) => l.action === "D");
        expect(d.identity).toHaveLength(1);
        expect(col(d, "id", "identity")).toBe("-9223372036854775808");
        expect(d.columns).toBeUndefined();

        // Transaction 5: large enough to be streamed; printed whole at its commit.
        const t5 = of(x5);
        expect(t5[0]).toMatchObject({ action: "B", streamed: true });
        expect(t5[t5.length - 1]).toMatchObject({ action: "C", streamed: true });
        const ins = t5.filter((l) => l.action === "I");
        expect(ins).toHaveLength(BULK);
        expect(ins.map((l) => Number(col(l, "id")))).toEqual(Array.from({ length: BULK }, (_, k) => k + 1));
        expect(col(ins[6], "n")).toBe("1.00000000000000000000");

        // Transaction 6: truncate.
        expect(of(x6).map((l) => l.action)).toEqual(["B", "T", "C"]);
        expect(of(x6)[1]).toMatchObject({ schema: "public", table: "cli_t" });

        // Ctrl-C: exit 0, and the slot confirmed everything printed.
        tail.child.kill("SIGINT");
        const r = await tail.exited;
        expect(r.code, r.stderr).toBe(0);
        expect(r.stderr).toBe(""); // not a terminal: no status line, no summary
        const lastC = of(x6).find((l) => l.action === "C");
        const [s] = await c.query<{ lsn: string; active: boolean }>("SELECT confirmed_flush_lsn::text AS lsn, active FROM pg_replication_slots WHERE slot_name = $1", [slot]);
        expect(s!.active).toBe(false);
        expect(lsnValue(s!.lsn)).toBeGreaterThanOrEqual(lsnValue(lastC.nextlsn));
      } finally {
        await w.end();
      }
    });
  }
});

function lsnValue(text: string): bigint {
  const [hi, lo] = text.split("/");
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

// ------------------------------------------------------------ Ctrl-C mid-stream

describe("Ctrl-C", () => {
  it("leaves confirmed_flush_lsn at the end of the last printed transaction; the next run starts right after it", async () => {
    const c = clusters.get(18)!;
    const slot = "s_sigint";
    const tail = new Cli(["tail", "-c", c.connectionString, "--publication", "p_seq", "--slot", slot, "--create-slot", "--transactions"]);
    cleanup.push(async () => tail.child.kill("SIGKILL"));
    await waitStreaming(c, slot);
    // One row per transaction, k = 1, 2, 3, ..., until the CLI has exited.
    const w = await c.connect();
    let k = 0;
    let writing = true;
    const writer = (async () => {
      while (writing) {
        await w.query("INSERT INTO cli_seq VALUES ($1)", [++k]);
        await sleep(15);
      }
    })();
    try {
      await tail.until((ls) => ls.filter((l) => l.action === "C").length >= 8);
      tail.child.kill("SIGINT");
      const r = await tail.exited;
      expect(r.code, r.stderr).toBe(0);
      await sleep(100); // a few more transactions after the exit, not printed
      writing = false;
      await writer;
    } finally {
      writing = false;
      await w.end();
    }
    const lines = tail.lines.map(parseExact);
    // Only whole transactions end up acknowledged: the last C printed.
    const commits = lines.filter((l) => l.action === "C");
    const lastC = commits[commits.length - 1];
    // The transaction the stop cut, if any, may have its B and I printed without its C (lines are written as they
    // come, and never confirmed): it comes again whole. Every other one was printed whole.
    const whole = new Set(commits.map((l) => l.xid.text));
    const cut = lines.filter((l) => l.action === "I" && !whole.has(l.xid.text));
    expect(cut.length).toBeLessThanOrEqual(1);
    const printedK = lines.filter((l) => l.action === "I" && whole.has(l.xid.text)).map((l) => Number(col(l, "k")));
    const lastK = Math.max(...printedK);
    expect(printedK).toEqual(Array.from({ length: printedK.length }, (_, i) => i + 1));
    expect(k).toBeGreaterThan(lastK); // the writer went on
    const [s] = await c.query<{ lsn: string }>("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [slot]);
    const confirmed = lsnValue(s!.lsn);
    expect(confirmed).toBeGreaterThanOrEqual(lsnValue(lastC.nextlsn)); // not before it
    // Not beyond: the next transaction (not printed) comes again, and nothing printed does.
    const again = await run(["tail", "-c", c.connectionString, "--publication", "p_seq", "--slot", slot, "--transactions", "--max-messages", "3"]);
    expect(again.code, again.stderr).toBe(0);
    const next = again.stdout.trim().split("\n").map(parseExact);
    expect(next.map((l) => l.action)).toEqual(["B", "I", "C"]);
    expect(Number(col(next[1], "k"))).toBe(lastK + 1);
    expect(lsnValue(next[0].lsn)).toBeGreaterThanOrEqual(confirmed); // its commit starts at or after the confirmed position
    // In practice the position is exactly the printed transaction's end (a keepalive may only move it to WAL without changes).
    if (confirmed !== lsnValue(lastC.nextlsn)) console.warn(`confirmed ${s!.lsn} is past the last printed end ${lastC.nextlsn}, before the next commit ${next[0].lsn}`);
  });
});

describe("--ack", () => {
  it("manual: acknowledges the LSNs (or C lines) sent back on stdin; none: nothing", async () => {
    const c = clusters.get(15)!;
    const confirmed = async (slot: string) =>
      lsnValue((await c.query<{ lsn: string }>("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1", [slot]))[0]!.lsn);
    await c.query("SELECT pg_create_logical_replication_slot('s_manual', 'pgoutput'), pg_create_logical_replication_slot('s_none', 'pgoutput')");
    const start = await confirmed("s_manual");
    for (let k = 1001; k <= 1003; k++) await c.query("INSERT INTO cli_seq VALUES ($1)", [k]);
    const manual = new Cli(["tail", "-c", c.connectionString, "--publication", "p_seq", "--slot", "s_manual", "--transactions", "--ack", "manual"]);
    const none = new Cli(["tail", "-c", c.connectionString, "--publication", "p_seq", "--slot", "s_none", "--transactions", "--ack", "none"]);
    cleanup.push(async () => manual.child.kill("SIGKILL"), async () => none.child.kill("SIGKILL"));
    const lines = await manual.until((ls) => ls.filter((l) => l.action === "C").length === 3);
    const noneLines = await none.until((ls) => ls.filter((l) => l.action === "C").length === 3);
    // Hand back the second transaction's C line: confirmed moves exactly there.
    const c2 = lines.filter((l) => l.action === "C")[1];
    manual.child.stdin!.write(`${manual.lines[lines.indexOf(c2)]}\n`);
    const deadline = Date.now() + 10_000;
    while ((await confirmed("s_manual")) !== lsnValue(c2.nextlsn)) {
      if (Date.now() > deadline) throw new Error("manual ack not confirmed");
      await sleep(50);
    }
    manual.child.kill("SIGINT");
    none.child.kill("SIGINT");
    expect((await manual.exited).code).toBe(0);
    expect((await none.exited).code).toBe(0);
    expect(await confirmed("s_manual")).toBe(lsnValue(c2.nextlsn));
    // none: no transaction printed is acknowledged (the server may only skip WAL before the first one, which had nothing to send).
    const noneConfirmed = await confirmed("s_none");
    expect(noneConfirmed).toBeGreaterThanOrEqual(start);
    expect(noneConfirmed).toBeLessThanOrEqual(lsnValue(noneLines[0].lsn));
  });
});

// ------------------------------------------------------------ reconnect

describe("reconnect", () => {
  it("tail goes on after the walsender is terminated: the rows after it are printed, stderr tells, the status line counts it", async () => {
    const c = clusters.get(18)!;
    const slot = "s_reconnect";
    await c.query("CREATE TABLE cli_rc (k int PRIMARY KEY); CREATE PUBLICATION p_rc FOR TABLE cli_rc");
    const tail = new Cli(["tail", "-c", c.connectionString, "--publication", "p_rc", "--slot", slot, "--create-slot", "--progress"]);
    cleanup.push(async () => tail.child.kill("SIGKILL"));
    await waitStreaming(c, slot);
    await c.query("INSERT INTO cli_rc VALUES (1)");
    await tail.until((ls) => ls.some((l) => String(col(l, "k")) === "1"));
    const [{ pid }] = await c.query<{ pid: number }>("SELECT active_pid AS pid FROM pg_replication_slots WHERE slot_name = $1", [slot]);
    expect(await c.query("SELECT pg_terminate_backend($1) AS ok", [pid])).toEqual([{ ok: true }]);
    await c.query("INSERT INTO cli_rc VALUES (2)");
    const lines = await tail.until((ls) => ls.some((l) => String(col(l, "k")) === "2"));
    expect(lines.map((l) => String(col(l, "k")))).toEqual(["1", "2"]); // 1 was acknowledged once printed: not again
    expect(tail.stderr).toMatch(/tail: connection lost \(.*terminat.*\); reconnecting in \d+ ms \(attempt 1\)/);
    expect(tail.stderr).toMatch(/tail: reconnected after \d+ attempt\(s\), from \d+\/[0-9A-F]+/);
    // The plain status line (--progress, every 2 s) shows the count.
    for (let i = 0; i < 100 && !/\| reconnects 1\b/.test(tail.stderr); i++) await sleep(100);
    expect(tail.stderr).toMatch(/\| reconnects 1\b/);
    tail.child.kill("SIGINT");
    const r = await tail.exited;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/; 1 reconnect\n/); // the summary
  });
});

// ------------------------------------------------------------ errors

describe.concurrent("errors: one line with a hint, non-zero exit", () => {
  const expectError = (r: Run, code: number, ...parts: (string | RegExp)[]) => {
    expect(r.code, r.stderr).toBe(code);
    const text = r.stderr.trimEnd();
    expect(text.split("\n"), text).toHaveLength(1);
    expect(text).toMatch(/^pgoutput-wasm: /);
    expect(text).toContain("(hint: ");
    for (const p of parts) expect(text).toMatch(p);
    expect(r.stdout).toBe("");
  };
  const url = (major: PgMajor, user = "postgres", password?: string) => {
    const c = clusters.get(major)!;
    return `postgres://${user}${password === undefined ? "" : `:${password}`}@127.0.0.1:${c.port}/postgres`;
  };

  it("bad URL: exit code 2, like other bad options", async () => {
    expectError(await run(["tail", "-c", "postgres://[oops", "--publication", "p"]), 2, /invalid connection URL/);
    expectError(await run(["tail", "-c", "mysql://localhost/db", "--publication", "p"]), 2, /invalid connection URL.*postgres:\/\//);
  });

  it("a role that does not exist: a hint about the role, not pg_hba.conf", async () => {
    const r = await run(["tail", "-c", url(15, "nosuchrole"), "--publication", "p_cli"]);
    expectError(r, 1, /role "nosuchrole" does not exist at 127\.0\.0\.1:\d+/, /check the user name/, /CREATE ROLE nosuchrole LOGIN REPLICATION/);
    expect(r.stderr).not.toMatch(/pg_hba/);
  });

  it("a Unix-socket URL (postgresql://user@/db?host=/dir&port=N) streams; a wrong port names the socket", async () => {
    const c = clusters.get(18)!;
    const [{ dir }] = await c.query<{ dir: string }>("SELECT current_setting('unix_socket_directories') AS dir");
    expect(dir, "the test server listens on a socket in its temporary directory").toMatch(/^\//);
    const slot = "s_unix";
    const t = new Cli(["tail", "-c", `postgresql://postgres@/postgres?host=${encodeURIComponent(dir!)}&port=${c.port}`, "--publication", "p_seq", "--slot", slot, "--create-slot", "--max-messages", "1"]);
    cleanup.push(async () => t.child.kill("SIGKILL"));
    await waitStreaming(c, slot);
    // The walsender's client came over the socket: no client address.
    const [conn] = await c.query<{ addr: string | null }>("SELECT client_addr::text AS addr FROM pg_stat_replication WHERE pid = (SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1)", [slot]);
    expect(conn!.addr).toBe(null);
    await c.query("INSERT INTO cli_seq VALUES (424242)");
    const r = await t.exited;
    expect(r.code, r.stderr).toBe(0);
    expect(Number(col(parseExact(r.stdout.trim()), "k"))).toBe(424242);
    expectError(await run(["tail", "-c", `postgresql://postgres@/postgres?host=${encodeURIComponent(dir!)}&port=1`, "--publication", "p_seq"]), 1,
      /no PostgreSQL socket: .*\.s\.PGSQL\.1\b/, /check the directory/);
  });

  it("connection refused", async () => {
    const port = await closedPort();
    expectError(await run(["tail", "-c", `postgres://postgres@127.0.0.1:${port}/postgres`, "--publication", "p"]), 1, /connection refused at 127\.0\.0\.1:\d+/, /PGHOST/);
  });

  it("authentication failed (scram), and no password given", async () => {
    expectError(await run(["tail", "-c", url(15, "pwuser", "wrong"), "--publication", "p_cli"]), 1, /authentication failed/, /password/);
    expectError(await run(["tail", "-c", url(15, "pwuser"), "--publication", "p_cli"]), 1, /authentication failed/, /PGPASSWORD/);
    // The right password works, given by the PG* variables alone.
    const c = clusters.get(15)!;
    const ok = new Cli(["tail", "--publication", "p_cli", "--slot", "s_env", "--create-slot"], {
      PGHOST: "127.0.0.1", PGPORT: String(c.port), PGUSER: "pwuser", PGPASSWORD: "secret", PGDATABASE: "postgres",
    });
    cleanup.push(async () => ok.child.kill("SIGKILL"));
    await waitStreaming(c, "s_env");
    ok.child.kill("SIGINT");
    const r = await ok.exited;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
  });

  it("slot missing", async () => {
    expectError(await run(["tail", "-c", url(15), "--publication", "p_cli", "--slot", "no_such_slot"]), 1, /replication slot "no_such_slot" does not exist/, /--create-slot/);
  });

  it("slot in use", async () => {
    const c = clusters.get(15)!;
    const holder = new Cli(["tail", "-c", url(15), "--publication", "p_cli", "--slot", "s_busy", "--create-slot"]);
    cleanup.push(async () => holder.child.kill("SIGKILL"));
    await waitStreaming(c, "s_busy");
    expectError(await run(["tail", "-c", url(15), "--publication", "p_cli", "--slot", "s_busy"]), 1, /s_busy.*(in use|active)/, /another client/);
    holder.child.kill("SIGTERM");
    expect((await holder.exited).code).toBe(0);
  });

  it("publication missing", async () => {
    expectError(await run(["tail", "-c", url(18), "--publication", "p_cli,nope"]), 1, /publication "nope" does not exist/, /CREATE PUBLICATION/, /p_cli/);
  });

  it("wal_level not logical", async () => {
    const c = await startCluster(15, { settings: { wal_level: "replica" } });
    try {
      expectError(await run(["tail", "-c", c.connectionString, "--publication", "p"]), 1, /wal_level is replica/, /wal_level = logical/);
    } finally {
      await c.stop();
    }
  });

  it("insufficient privilege (no REPLICATION)", async () => {
    expectError(await run(["tail", "-c", url(18, "noreplic"), "--publication", "p_cli"]), 1, /insufficient privilege.*noreplic/, /ALTER ROLE noreplic REPLICATION/);
  });

  it("protocol version the server does not support", async () => {
    expectError(await run(["tail", "-c", url(15), "--publication", "p_cli", "--proto", "4"]), 1, /does not support pgoutput protocol version 4/, /--proto 3/);
    expectError(await run(["tail", "-c", url(15), "--publication", "p_cli", "--streaming", "parallel"]), 1, /protocol version 4/);
  });

  it("the walsender terminated mid-stream, with --no-reconnect", async () => {
    const c = clusters.get(18)!;
    const t = new Cli(["tail", "-c", url(18), "--publication", "p_seq", "--slot", "s_term", "--create-slot", "--no-reconnect"]);
    cleanup.push(async () => t.child.kill("SIGKILL"));
    await waitStreaming(c, "s_term");
    await c.query("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 's_term'");
    expectError(await t.exited, 1, /terminat/, /run the same command again/);
  });

  it("bad options: exit code 2", async () => {
    expectError(await run(["tail", "--streaming", "sometimes"]), 2, /--streaming must be off, on or parallel/);
    expectError(await run(["tail", "-c", url(15)]), 2, /--publication is required/);
    expectError(await run(["tail", "--no-such-option"]), 2, /no-such-option/);
  });
});

// ------------------------------------------------------------ the embedded demo

describe("no arguments: the embedded demo", () => {
  it("starts PostgreSQL 18, streams the demo workload and exits by itself, leaving nothing behind", async () => {
    // A temp directory and cache folder of its own, to see what the run leaves in them (other test
    // files start servers in the shared one meanwhile). The server's OS user, when we are root, must
    // be able to enter it.
    const scratch = mkdtempSync(join(tmpdir(), "pgoutputwasm-cli-tail-own-"));
    const runTmp = join(scratch, "tmp");
    const cache = join(scratch, "cache");
    mkdirSync(runTmp);
    chmodSync(scratch, 0o755);
    chmodSync(runTmp, 0o755);
    cleanup.push(async () => rmSync(scratch, { recursive: true, force: true }));
    const t0 = Date.now();
    const r = await run(["tail"], { TMPDIR: runTmp, XDG_CACHE_HOME: cache }, 45_000);
    const seconds = (Date.now() - t0) / 1000;
    expect(r.code, r.stderr).toBe(0);
    expect(readdirSync(runTmp)).toEqual([]); // its data directory (pgoutputwasm-pg18-*) and any binary copy are gone
    expect(existsSync(cache)).toBe(false); // and the CLI keeps nothing between runs
    expect(seconds).toBeLessThan(40);
    expect(r.stderr).toBe(""); // not a terminal: quiet
    const lines = r.stdout.trim().split("\n").map(parseExact);
    const actions = new Set(lines.map((l) => l.action));
    for (const a of ["I", "U", "D", "T", "M"]) expect(actions.has(a), a).toBe(true);
    const ids = lines.filter((l) => l.table === "account" && l.action === "I").map((l) => col(l, "id"));
    expect(ids).toEqual(expect.arrayContaining(["9223372036854775807", "-9223372036854775808"]));
    expect(lines.some((l) => l.action === "U" && l.unchanged?.[0] === "notes")).toBe(true);
    expect(lines.filter((l) => l.table === "ledger" && l.action === "I" && String(col(l, "memo")).startsWith("bulk row"))).toHaveLength(600);
    expect(lines.some((l) => String(col(l, "memo") ?? "").startsWith("rolled back"))).toBe(false);
    expect(col(lines[0], "balance")).toBe("123456789012345678901234567890.0123456789");

    // --follow keeps streaming after the demo; --progress shows the notes and the summary; afterwards the server is gone.
    const f = new Cli(["tail", "--pg", "18", "--follow", "--progress", "--tables", "demo.account"]);
    cleanup.push(async () => f.child.kill("SIGKILL"));
    await f.until(() => /demo workload done/.test(f.stderr));
    const port = Number(/127\.0\.0\.1:(\d+)/.exec(f.stderr)?.[1]);
    expect(port).toBeGreaterThan(0);
    const pgMod = await import("pg");
    const own = new pgMod.default.Client({ host: "127.0.0.1", port, user: "postgres", database: "postgres" });
    await own.connect();
    await own.query("INSERT INTO demo.account (id, owner) VALUES (77, 'after the demo')");
    await own.end();
    await f.until((ls) => ls.some((l) => col(l, "id") === "77"));
    f.child.kill("SIGINT");
    const p = await f.exited;
    expect(p.code, p.stderr).toBe(0);
    expect(p.stderr).toMatch(/tail: \d+ lines, \d+ transactions; \d+ messages .* acknowledged up to [0-9A-F]+\/[0-9A-F]+\n$/);
    expect(f.parsed.every((l) => l.table === "account" || l.action === "M")).toBe(true);
    const refused = await new Promise<boolean>((resolve) => {
      const sock = net.connect(port, "127.0.0.1");
      sock.once("connect", () => { sock.destroy(); resolve(false); });
      sock.once("error", () => resolve(true));
    });
    expect(refused).toBe(true);
  }, 60_000);
});
