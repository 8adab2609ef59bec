// Connection strings: both libpq forms parsed into a pg ClientConfig
// (bindings/pg/conninfo.ts), errors that name keywords but never values, and
// replicate() rejecting a string that does not parse with an INVALID_OPTION
// ReplicationError before it touches the network.

import { describe, expect, it } from "vitest";
import { ConnectionStringError, parseConnectionString } from "../bindings/pg/conninfo.ts";
import { ReplicationError } from "../bindings/pg/errors.ts";
import { replicate } from "../bindings/pg/replicate.ts";

const parse = parseConnectionString;

/** The ConnectionStringError `text` throws. */
function failure(text: string): ConnectionStringError {
  try {
    parse(text);
  } catch (e) {
    expect(e).toBeInstanceOf(ConnectionStringError);
    return e as ConnectionStringError;
  }
  throw new Error(`${text} parsed`);
}

describe("keyword/value strings", () => {
  it("bare and quoted values, backslash escapes, whitespace around =", () => {
    expect(parse(`host=localhost port=5432 dbname=app user=u password='p w\\'x'`)).toEqual({
      host: "localhost", port: 5432, database: "app", user: "u", password: "p w'x",
    });
    expect(parse(`  host = db.example  user =u   password= a\\ b\\\\c application_name='' dbname='my db'  `)).toEqual({
      host: "db.example", user: "u", password: "a b\\c", application_name: "", database: "my db",
    });
    // Quotes only open a value at its start; inside a bare value they are characters.
    expect(parse(`password=it's user=o'neil`)).toEqual({ password: "it's", user: "o'neil" });
    // The last one wins, as in libpq.
    expect(parse("port=1 port=2")).toEqual({ port: 2 });
  });

  it("options, sslmode, connect_timeout, client_encoding, hostaddr, fallback_application_name", () => {
    expect(parse(`options='-c wal_sender_timeout=0' sslmode=disable connect_timeout=7 client_encoding=UTF8 fallback_application_name=x`)).toEqual({
      options: "-c wal_sender_timeout=0", ssl: false, connectionTimeoutMillis: 7000, client_encoding: "UTF8", application_name: "x",
    });
    expect(parse("host=db hostaddr=10.0.0.1").host).toBe("10.0.0.1");
    expect(parse("sslmode=require").ssl).toEqual({ rejectUnauthorized: false });
    expect(parse("sslmode=verify-full").ssl).toBe(true);
    expect(parse("application_name=a fallback_application_name=b").application_name).toBe("a");
  });

  it("errors name the keyword, never a value", () => {
    const secret = "hunter2-secret";
    for (const [text, keyword, message] of [
      [`password=${secret} bogus=${secret}`, "bogus", /unsupported connection parameter "bogus"/],
      [`password='${secret}`, "password", /unterminated quoted value of "password"/],
      [`host=a ${secret}`, undefined, /missing "=" after "\(a malformed keyword\)"/],
      [`port=${secret}`, "port", /port must be a number/],
      [`sslmode=${secret}`, "sslmode", /sslmode must be/],
      [`host=a,b`, "host", /several hosts/],
    ] as const) {
      const e = failure(text);
      expect(e.message).toMatch(message);
      expect(e.keyword).toBe(keyword);
      expect(e.message).not.toContain(secret);
    }
  });
});

describe("URLs", () => {
  it("postgres:// and postgresql://, percent-decoded parts", () => {
    expect(parse("postgres://u:p%2Fw%40x%3A%25%3F%20y@db.example:5433/app")).toEqual({
      user: "u", password: "p/w@x:%? y", host: "db.example", port: 5433, database: "app",
    });
    expect(parse("postgresql://alice@localhost/app")).toEqual({ user: "alice", host: "localhost", database: "app" });
    expect(parse("postgres://localhost")).toEqual({ host: "localhost" });
  });

  it("a raw @ or : in the password: the last @ ends it", () => {
    expect(parse("postgres://u:p@ss:w@127.0.0.1:1/db")).toMatchObject({ user: "u", password: "p@ss:w", host: "127.0.0.1", port: 1 });
    expect(parse("postgres://u:50%off@h/db").password).toBe("50%off"); // not percent-encoding: literal
  });

  it("IPv6, query parameters as keywords, a socket directory", () => {
    expect(parse("postgres://[::1]:5432/db")).toEqual({ host: "::1", port: 5432, database: "db" });
    expect(parse("postgres:///db?host=/var/run/postgresql&port=5433")).toEqual({ database: "db", host: "/var/run/postgresql", port: 5433 });
    expect(parse("postgres://%2Fvar%2Frun%2Fpostgresql/db")).toEqual({ host: "/var/run/postgresql", database: "db" });
    // A user and no host before the path, the socket directory as a parameter (libpq's documented form).
    expect(parse("postgresql://u@/db?host=/path")).toEqual({ user: "u", database: "db", host: "/path" });
    expect(parse("postgres://h/db?sslmode=verify-full&application_name=my%20app&options=-c%20x%3D1")).toEqual({
      host: "h", database: "db", ssl: true, application_name: "my app", options: "-c x=1",
    });
    expect(parse("postgres://h/db?ssl=true").ssl).toBe(true);
  });

  it("errors: scheme, raw / in a password, port, unknown parameter; no value shown", () => {
    expect(failure("mysql://u:pw@h/db").message).toMatch(/postgres:\/\//);
    const raw = failure("postgres://u:sec/ret@h/db");
    expect(raw.message).toMatch(/percent-encoded/);
    expect(raw.message).not.toContain("sec");
    expect(failure("postgres://h:99999/db").message).toMatch(/port/);
    expect(failure("postgres://h/db?frobnicate=secretvalue").message).toMatch(/"frobnicate"/);
    expect(failure("postgres://h/db?frobnicate=secretvalue").message).not.toContain("secretvalue");
    for (const text of ["u:pw@host", "//u:pw@host/db", "", "just words"]) {
      expect(failure(text).message).toMatch(/expected a postgres:\/\/ URL or keyword\/value/);
    }
  });
});

describe("replicate() with a connection string that does not parse", () => {
  const secret = "s3cr/et@pw";
  for (const connection of [
    `postgres://u:${secret}@[oops/db`,
    `u:${secret}@127.0.0.1/db`,
    `//u:${secret}@127.0.0.1/db`,
    `host=127.0.0.1 password='${secret}' nonsense=1`,
    `mysql://u:${secret}@127.0.0.1/db`,
  ]) {
    it(JSON.stringify(connection.replace(secret, "…")), async () => {
      const e = await replicate({ connection, slot: "s", publications: "p" }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ReplicationError);
      expect((e as ReplicationError).code).toBe("INVALID_OPTION");
      expect((e as ReplicationError).message).toMatch(/^invalid connection string: /);
      expect((e as ReplicationError).message).not.toContain("s3cr");
    });
  }

  it("also a ClientConfig's connectionString", async () => {
    const e = await replicate({ connection: { connectionString: `postgres://u:${secret}@h:0/db` }, slot: "s", publications: "p" }).catch((x: unknown) => x);
    expect(e).toMatchObject({ name: "ReplicationError", code: "INVALID_OPTION" });
    expect((e as Error).message).not.toContain("s3cr");
  });

  it("a string that parses reaches the network: a closed port is CONNECT_FAILED, the message without the password", async () => {
    const e = await replicate({ connection: `host=127.0.0.1 port=1 user=u password='${secret}' connect_timeout=5`, slot: "s", publications: "p" }).catch((x: unknown) => x);
    expect(e).toMatchObject({ name: "ReplicationError", code: "CONNECT_FAILED" });
    expect((e as Error).message).not.toContain("s3cr");
  });
});
