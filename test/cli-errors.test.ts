// What the CLI (compiled from bindings/ as published) says when it is
// pointed at the wrong thing, each as one line with a hint: a port where an
// HTTP, TLS or SSH service answers (named with host:port and what it sent,
// not as a decoder bug), a port that accepts and never answers (host:port,
// what was awaited, the setting that sets the wait, and that setting
// honoured), and against a real PostgreSQL 15: TLS asked of a server
// without it, a temporary slot whose name exists, an md5 role without a
// password. And "please report this" only for what the decoder rejected,
// from the errors replicate() really gives against a fake walsender.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import pg, { type ClientConfig } from "pg";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { backend, backendFrame, backendStream, wal } from "../devkit/encoder/walsender-encoder.ts";
import { replicate } from "../bindings/pg/index.ts";
import { explain } from "../bindings/cli/errors.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";
import { startFakeService, type FakeService, type ServiceKind } from "./support/fake-service.ts";
import { copyDataHeader, send, startFakeWalsender, type FakeWalsender } from "./support/fake-walsender.ts";
import { cliEnv, startCli, type CliRun } from "./support/run-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FOLDER = "cli-test-errors";
const MAIN = join(ROOT, "build", FOLDER, "cli", "main.js");
const REPORT = "please report this";
// No password file: whether a password "was given" must not depend on the machine's ~/.pgpass.
const scratch = mkdtempSync(join(tmpdir(), "pgoutputwasm-cli-errors-"));

type Run = CliRun;

const run = (args: string[]): Promise<Run> => startCli(MAIN, args, { env: cliEnv({ PGPASSFILE: join(scratch, "no-such-pgpass") }) }).exited;

/** One line on stderr, exit code 1, nothing on stdout; the line's message and hint. */
function oneLine(r: Run): { message: string; hint: string } {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).toBe("");
  const lines = r.stderr.split("\n");
  expect(lines, r.stderr).toHaveLength(2);
  const m = /^pgoutput-wasm: (.*) \(hint: (.*)\)$/.exec(lines[0]!);
  expect(m, r.stderr).not.toBeNull();
  return { message: m![1]!, hint: m![2]! };
}

let cluster: Cluster;

beforeAll(async () => {
  const compile = buildCli(FOLDER);
  [cluster] = await Promise.all([startCluster(15, { hba: ["host all alice 127.0.0.1/32 md5"] }), compile]);
  // Stored as md5, the password makes the server ask for md5 (a SCRAM one would make it ask for SCRAM).
  await cluster.query("SET password_encryption = 'md5'; CREATE ROLE alice LOGIN REPLICATION PASSWORD 'right'");
  await cluster.query("CREATE TABLE err_t (id int PRIMARY KEY); CREATE PUBLICATION p_err FOR TABLE err_t");
  await cluster.query("SELECT pg_create_logical_replication_slot('err_exists', 'pgoutput')");
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await removeCli(FOLDER);
  rmSync(scratch, { recursive: true, force: true });
});

const url = (user: string, port = cluster.port, query = "") => `postgres://${user}@127.0.0.1:${port}/postgres${query}`;

describe.concurrent("a port that is not PostgreSQL, or never answers", () => {
  const services: FakeService[] = [];
  afterAll(async () => {
    for (const s of services) await s.close();
  });
  const service = async (kind: ServiceKind) => {
    const s = await startFakeService(kind);
    services.push(s);
    return s;
  };
  const PORT_HINT = "is this the PostgreSQL port? Check the host and port in --connection; PostgreSQL's default port is 5432";

  for (const [kind, seen, as] of [
    ["http", `"HTTP/1.1 400 Bad Request"`, ", as an HTTP server does"],
    ["tls-record", `"\\x15\\x03\\x03\\x00\\x02\\x02F"`, ", as a TLS server does (PostgreSQL has no separate TLS port: it starts TLS on its own port when asked, with sslmode=require)"],
    ["ssh", `"SSH-2.0-OpenSSH_9.2p1 De"`, ", as an SSH server does"],
  ] as const) {
    it(`${kind}: named with host:port and what it sent; the hint asks about the port, not for a bug report`, async () => {
      const s = await service(kind);
      const { message, hint } = oneLine(await run(["tail", "-c", url("u", s.port), "--publication", "p"]));
      expect(message).toBe(`127.0.0.1:${s.port} does not speak the PostgreSQL protocol: it answered the startup message with ${seen}${as}`);
      expect(hint).toBe(PORT_HINT);
    });
  }

  it("sslmode=require to an HTTP server; slots to an SSH server: the same, from the SSLRequest and from the other command", async () => {
    const http = await service("http");
    const a = oneLine(await run(["tail", "-c", url("u", http.port, "?sslmode=require"), "--publication", "p"]));
    expect(a.message).toBe(`127.0.0.1:${http.port} does not speak the PostgreSQL protocol: it answered the SSLRequest with "HTTP/1.1 400 Bad Request", as an HTTP server does`);
    expect(a.hint).toBe(PORT_HINT);
    const ssh = await service("ssh");
    const b = oneLine(await run(["slots", "-c", url("u", ssh.port)]));
    expect(b.message).toMatch(new RegExp(`^127\\.0\\.0\\.1:${ssh.port} does not speak the PostgreSQL protocol: it answered the startup message with "SSH-2\\.0-`));
    expect(b.hint).toBe(PORT_HINT);
  });

  it("a TLS server, which hangs up on the plaintext startup message: said so, with host:port", async () => {
    const s = await service("tls");
    const { message, hint } = oneLine(await run(["tail", "-c", url("u", s.port), "--publication", "p"]));
    expect(message).toBe(`127.0.0.1:${s.port} accepted the connection and closed it without answering the startup message (PostgreSQL answers, if only with an error: is this its port? A TLS-only service closes so)`);
    expect(hint).toMatch(/check the host and port/);
  });

  it("a port that accepts and says nothing: host:port, what was awaited, connect_timeout (honoured: 1 s, not the default 15)", async () => {
    const s = await service("silent");
    const r = await run(["tail", "-c", url("u", s.port, "?connect_timeout=1"), "--publication", "p"]);
    const { message, hint } = oneLine(r);
    expect(message).toBe(`127.0.0.1:${s.port} accepted the connection but sent nothing for 1000 ms while connecting (awaiting the answer to the startup message); connect_timeout in the connection string (pg's connectionTimeoutMillis) sets how long to wait`);
    expect(hint).toMatch(/PostgreSQL \(not another service\) is up there and not overloaded/);
    expect(r.ms).toBeLessThan(10_000);
  });
});

describe.concurrent("a real PostgreSQL 15: hints for what people meet first", () => {
  it("sslmode=require to a server with ssl = off", async () => {
    const { message, hint } = oneLine(await run(["tail", "-c", url("postgres", cluster.port, "?sslmode=require"), "--publication", "p_err"]));
    expect(message).toBe(`the server at 127.0.0.1:${cluster.port} does not accept TLS (its ssl setting is off), and the connection asks for it`);
    expect(hint).toMatch(/sslmode=disable/);
  });

  it("--temporary with the name of a slot that exists (42710)", async () => {
    const { message, hint } = oneLine(await run(["tail", "-c", url("postgres"), "--publication", "p_err", "--slot", "err_exists", "--temporary"]));
    expect(message).toBe(`replication slot "err_exists" already exists`);
    expect(hint).toBe("to stream from it, leave out --temporary; or name another --slot, or drop it: SELECT pg_drop_replication_slot('err_exists')");
  });

  it("an md5 role without a password: none was given (as for SCRAM); with a wrong one: check it", async () => {
    const none = oneLine(await run(["tail", "-c", url("alice"), "--publication", "p_err"]));
    expect(none.message).toBe(`authentication failed for alice at 127.0.0.1:${cluster.port}: the server asks for a password and none was given`);
    expect(none.hint).toMatch(/PGPASSWORD/);
    const wrong = oneLine(await run(["tail", "-c", url("alice:wrong"), "--publication", "p_err"]));
    expect(wrong.message).toMatch(/^authentication failed at 127\.0\.0\.1:\d+: password authentication failed for user "alice"$/);
    expect(wrong.hint).toMatch(/^check the user and password/);
  });
});

describe("please report this: only for what the decoder rejected", () => {
  let fake: FakeWalsender | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });
  const config = (f: FakeWalsender): ClientConfig => ({ host: "127.0.0.1", port: f.port, user: "fake", database: "fake" });

  /** The error replicate() ends with against `fake` (connecting or streaming). */
  async function errorOf(f: FakeWalsender): Promise<unknown> {
    try {
      const s = await replicate({
        connection: () => new pg.Client({ ...config(f), replication: "database" } as ClientConfig),
        slot: "s", publications: "p", reconnect: false, receiveTimeoutMs: 5000,
      });
      try {
        for await (const _ of s) { /* until the error */ }
      } finally {
        await s.stop();
      }
    } catch (e) {
      return e;
    }
    throw new Error("no error");
  }

  it("an unknown pgoutput message in XLogData: the report hint", async () => {
    const bad = wal.xlogData(new Uint8Array([0x3f, 1, 2, 3]), { walStart: 1n, walEnd: 1n, sendTime: 0n });
    fake = await startFakeWalsender(async (socket) => void (await send(socket, backendStream([backend.copyData(bad)]))));
    const error = await errorOf(fake);
    expect(error).toMatchObject({ code: "DECODE_ERROR", cause: { code: "UNKNOWN_MESSAGE" } });
    expect(explain(error).hint).toMatch(REPORT);
  });

  it("a CopyData declaring 2 GB, a DataRow declaring 2 GB before START_REPLICATION, a row pg cannot parse: not a decoder question", async () => {
    fake = await startFakeWalsender(async (socket) => void (await send(socket, copyDataHeader(2_000_000_000))));
    const frame = await errorOf(fake);
    await fake.close();
    const header = new Uint8Array([0x44, 0x7f, 0xff, 0xff, 0xff]);
    fake = await startFakeWalsender(() => {}, { onQuery: (text, socket) => /server_version_num/.test(text) && socket.write(header) });
    const guarded = await errorOf(fake);
    await fake.close();
    fake = await startFakeWalsender(() => {}, {
      onQuery: (text, socket) => /server_version_num/.test(text) && socket.write(backendFrame("D", new Uint8Array([0, 5, 0, 0]))), // 5 columns, none there
    });
    const unparsed = await errorOf(fake);
    for (const [name, error, cause] of [["stream frame", frame, "MESSAGE_TOO_LARGE"], ["guarded frame", guarded, "MESSAGE_TOO_LARGE"], ["pg's parser", unparsed, "INVALID_VALUE"]] as const) {
      expect(error, name).toMatchObject({ code: "DECODE_ERROR", cause: { code: cause } });
      const hint = explain(error).hint;
      expect(hint, name).not.toMatch(REPORT);
      expect(hint, name).toMatch(/no PostgreSQL server sends these bytes: is this the PostgreSQL port/);
    }
  });
});
