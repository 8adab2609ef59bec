// The CLI (compiled from bindings/ as published) never prints a password
// and never lets a server drive the terminal. It runs with bad and
// unreachable connections in every string form — a URL (percent-encoded,
// raw, not parseable), scheme-less u:pw@host and //u:pw@host, keyword/value
// pairs, PGPASSWORD — against a closed port on 127.0.0.1 and a real
// PostgreSQL 18 (wrong password; the right one, with a quote, a backslash
// and a space, in keyword/value form streams). A tiny fake server answers
// the startup packet with an ErrorResponse full of escape sequences that
// also echoes the passwords, as a hostile server could.

import * as net from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type Cluster } from "../devkit/cluster/cluster.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";
import { closedPort } from "./support/closed-port.ts";
import { cliEnv, startCli, type CliRun } from "./support/run-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI_FOLDER = "cli-test-secrets";
const MAIN = join(ROOT, "build", CLI_FOLDER, "cli", "main.js");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Every password starts with a marker: no part of it may show, in any form.
const MARK = "Zq9Kx";
const SECRET = `${MARK}/@:%? 'w\\k"`;
const RIGHT = `${MARK}ok p'w\\d`;
const ENV_SECRET = `${MARK}env`;

/** A keyword/value value: quoted, with ' and \ escaped. */
const kv = (s: string) => `'${s.replace(/[\\']/g, (c) => `\\${c}`)}'`;

type Run = CliRun;

/** Runs the CLI; resolves once it is past `ready(stderr)` (then SIGINT) or exited. */
function run(args: string[], env: Record<string, string> = {}, opts: { until?: () => Promise<void> } = {}): Promise<Run> {
  const { child, exited } = startCli(MAIN, args, { env: cliEnv(env), stdin: "pipe" });
  if (opts.until !== undefined) opts.until().then(() => child.kill("SIGINT"), () => child.kill("SIGKILL"));
  return exited;
}

/** No password in any form, no control character but newlines. */
function expectClean(r: Run): string {
  const text = r.stderr;
  expect(text, text).not.toContain(MARK);
  expect(text).not.toContain(encodeURIComponent(MARK));
  expect(text).not.toContain("\x1b");
  expect(text).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
  return text;
}


/** A PostgreSQL ErrorResponse ('E') with these fields. */
function errorResponse(fields: Record<string, string>): Buffer {
  const body = Buffer.concat([
    ...Object.entries(fields).map(([k, v]) => Buffer.concat([Buffer.from(k), Buffer.from(v, "utf8"), Buffer.from([0])])),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write("E", 0);
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** A fake server: reads the startup packet, answers `reply`, hangs up. At most `limit` connections. */
async function hostileServer(reply: Buffer, limit = 4): Promise<{ port: number; close(): Promise<void> }> {
  let served = 0;
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((sock) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    sock.on("error", () => {});
    if (++served > limit) return void sock.destroy();
    let got = Buffer.alloc(0);
    sock.on("data", (d) => {
      got = Buffer.concat([got, d]);
      // The startup packet: int32 length, then that many bytes in all.
      if (got.length >= 4 && got.length >= got.readInt32BE(0)) sock.end(reply);
    });
    sock.setTimeout(10_000, () => sock.destroy());
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  return {
    port: (srv.address() as net.AddressInfo).port,
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      srv.close(() => r());
    }),
  };
}

let cluster: Cluster;

beforeAll(async () => {
  const compile = buildCli(CLI_FOLDER);
  [cluster] = await Promise.all([startCluster(18, { hba: ["host all kvuser 127.0.0.1/32 scram-sha-256"] }), compile]);
  await cluster.query(`
    CREATE TABLE sec_t (id int PRIMARY KEY);
    CREATE PUBLICATION p_sec FOR TABLE sec_t;
    CREATE ROLE kvuser LOGIN REPLICATION PASSWORD '${RIGHT.replace(/'/g, "''")}';
    GRANT SELECT ON sec_t TO kvuser;
  `);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await removeCli(CLI_FOLDER);
});

describe.concurrent("no password on stderr, whatever the form", () => {
  it("a closed port: URL (percent-encoded), keyword/value, PGPASSWORD", async () => {
    const port = await closedPort();
    for (const [args, env] of [
      [["-c", `postgres://alice:${encodeURIComponent(SECRET)}@127.0.0.1:${port}/appdb`], {}],
      [["-c", `host=127.0.0.1 port=${port} user=alice password=${kv(SECRET)} dbname=appdb`], {}],
      [["-c", `host = 127.0.0.1  port = ${port} user = alice password = ${kv(SECRET)}`], { PGPASSWORD: ENV_SECRET }],
      [[], { PGHOST: "127.0.0.1", PGPORT: String(port), PGUSER: "alice", PGPASSWORD: ENV_SECRET }],
    ] as const) {
      const r = await run(["tail", ...args, "--publication", "p"], env);
      expect(r.code, r.stderr).toBe(1);
      const text = expectClean(r);
      expect(text.trimEnd().split("\n")).toHaveLength(1);
      expect(text).toMatch(new RegExp(`^pgoutput-wasm: connection refused at 127\\.0\\.0\\.1:${port} \\(hint: `));
    }
  });

  it("strings that do not parse: raw URL, scheme-less, //, unknown keyword — the target still named", async () => {
    for (const [conn, message] of [
      [`postgres://alice:${SECRET}@127.0.0.1:1/appdb`, /invalid connection URL "postgres:\/\/alice:\*\*\*@127\.0\.0\.1:1\/appdb"/],
      [`postgres://alice:${SECRET}@[127.0.0.1/appdb`, /invalid connection URL "postgres:\/\/alice:\*\*\*@\[127\.0\.0\.1\/appdb"/],
      [`alice:${SECRET}@127.0.0.1/appdb`, /invalid connection URL "alice:\*\*\*@127\.0\.0\.1\/appdb"/],
      [`//alice:${SECRET}@127.0.0.1/appdb`, /invalid connection URL "\/\/alice:\*\*\*@127\.0\.0\.1\/appdb"/],
      [`host=127.0.0.1 user=alice password=${kv(SECRET)} sslcert=/x.pem`, /invalid connection string "host=127\.0\.0\.1 user=alice password=\*\*\* sslcert=\/x\.pem": unsupported connection parameter "sslcert"/],
      [`host=127.0.0.1 password=${kv(SECRET)} dbname='appdb`, /unterminated quoted value of "dbname"/],
    ] as const) {
      const r = await run(["tail", "-c", conn, "--publication", "p"], { PGPASSWORD: ENV_SECRET });
      expect(r.code, r.stderr).toBe(2); // a bad option, like the others
      const text = expectClean(r);
      expect(text.trimEnd().split("\n")).toHaveLength(1);
      expect(text).toMatch(message);
      expect(r.stdout).toBe("");
    }
  });

  it("a real server: keyword/value with a wrong password fails cleanly; the right one (quote, backslash, space) streams", async () => {
    const base = `host=127.0.0.1 port=${cluster.port} dbname=postgres user=kvuser`;
    const wrong = await run(["tail", "-c", `${base} password=${kv(SECRET)}`, "--publication", "p_sec"]);
    expect(wrong.code, wrong.stderr).toBe(1);
    expect(expectClean(wrong)).toMatch(/authentication failed at 127\.0\.0\.1:\d+: password authentication failed for user "kvuser"/);

    const url = await run(["tail", "-c", `postgres://kvuser:${encodeURIComponent(SECRET)}@127.0.0.1:${cluster.port}/postgres`, "--publication", "p_sec"]);
    expect(url.code, url.stderr).toBe(1);
    expect(expectClean(url)).toMatch(/authentication failed/);

    for (const [slot, conn] of [
      ["s_kv_ok", `${base} password=${kv(RIGHT)}`],
      ["s_url_ok", `postgres://kvuser:${encodeURIComponent(RIGHT)}@127.0.0.1:${cluster.port}/postgres?application_name=cli_secrets`],
    ] as const) {
      const ok = await run(["tail", "-c", conn, "--publication", "p_sec", "--slot", slot, "--create-slot", "--progress"], {}, {
        until: async () => {
          const deadline = Date.now() + 30_000;
          for (;;) {
            const rows = await cluster.query(
              `SELECT 1 FROM pg_replication_slots s JOIN pg_stat_activity a ON a.pid = s.active_pid
               WHERE s.slot_name = $1 AND a.query LIKE 'START_REPLICATION%' AND a.usename = 'kvuser'`, [slot]);
            if (rows.length > 0) return;
            if (Date.now() > deadline) throw new Error(`slot ${slot} not streaming`);
            await sleep(50);
          }
        },
      });
      expect(ok.code, ok.stderr).toBe(0);
      // --progress: the notes and the summary went through the same filter.
      expect(expectClean(ok)).toMatch(/tail: streaming from 127\.0\.0\.1:\d+, slot s_/);
    }
  });

  it("a hostile server: escape sequences and echoed passwords in its error never reach the terminal raw", async () => {
    const evil = "\x1b[31mred\x1b[0m \x1b]0;owned\x07\x1b[2J\x9b1m\x07 over\rwrite\r\n";
    const srv = await hostileServer(errorResponse({
      S: "FATAL", V: "FATAL", C: "28000",
      M: `${evil}no access for ${SECRET} / ${encodeURIComponent(SECRET)} / ${ENV_SECRET} ${evil}end`,
      D: `${evil}detail`, H: `${evil}hint`,
    }));
    try {
      const r = await run(["tail", "-c", `host=127.0.0.1 port=${srv.port} user=alice password=${kv(SECRET)}`, "--publication", "p"], { PGPASSWORD: ENV_SECRET });
      expect(r.code, r.stderr).toBe(1);
      const text = expectClean(r);
      expect(text).toMatch(/^pgoutput-wasm: connection rejected at 127\.0\.0\.1:\d+: red .*no access for \*\*\* \/ \*\*\* \/ \*\*\* .*end \(hint: /);
      expect(text).not.toContain("owned");
      expect(text.trimEnd().split("\n")).toHaveLength(1);
      // The bell, the CR and the C1 CSI are shown escaped, not acted on.
      expect(text).toContain("\\x07");
      expect(text).toContain("\\x0d");
    } finally {
      await srv.close();
    }
  });
});
