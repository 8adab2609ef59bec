// Redaction (bindings/redact.ts) and terminal safety (bindings/cli/terminal.ts):
// a password never survives, in any string form, raw or percent-encoded,
// parseable or not, while what identifies the target (user, host, database)
// stays; and text from outside loses its escape sequences and control
// characters before it reaches a terminal.

import { describe, expect, it } from "vitest";
import { connectionSecrets, redact } from "../bindings/redact.ts";
import { printable } from "../bindings/cli/terminal.ts";
import { ReplicationError, fromPgError } from "../bindings/pg/errors.ts";

const PASSWORDS = ["simple-pw", "p/w", "p@ss", "p:w", "50%off", "a?b", "p w x", "it's", 'dq"uote', "back\\slash", "all/@:%? '\\\"mix", "@@", "::"];

/** Each form a connection string may take, with `pw` written as a user would. */
function forms(pw: string): { name: string; text: string }[] {
  const kvQuoted = `'${pw.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  const kvBare = pw.replace(/\\/g, "\\\\").replace(/ /g, "\\ ");
  return [
    { name: "URL, percent-encoded", text: `postgres://alice:${encodeURIComponent(pw)}@db.example:5433/appdb` },
    { name: "URL, raw", text: `postgresql://alice:${pw}@db.example:5433/appdb` },
    { name: "URL that does not parse", text: `postgres://alice:${pw}@[db.example/appdb` },
    { name: "scheme-less", text: `alice:${pw}@db.example/appdb` },
    { name: "//, no scheme", text: `//alice:${pw}@db.example/appdb` },
    { name: "keyword/value, quoted", text: `host=db.example user=alice password=${kvQuoted} dbname=appdb` },
    { name: "keyword/value, bare", text: `host=db.example user=alice password = ${kvBare} dbname=appdb` },
    { name: "URL query parameter", text: `postgres://alice@db.example/appdb?password=${encodeURIComponent(pw)}` },
  ];
}

/** `pw` in none of its forms. */
function expectGone(out: string, pw: string): void {
  for (const form of new Set([pw, encodeURIComponent(pw), encodeURI(pw)])) {
    if (form.length >= 3) expect(out, `${form} in ${out}`).not.toContain(form);
  }
}

describe("redact()", () => {
  for (const pw of PASSWORDS) {
    for (const { name, text } of forms(pw)) {
      it(`${name}: ${JSON.stringify(pw)}`, () => {
        // By pattern alone, and with the string's own secrets (as the CLI and
        // replicate() do). Not by pattern alone: a scheme-less one with a space,
        // which in free text cannot be told from "ERROR: a b@c".
        const patternOnly = name === "scheme-less" && /\s/.test(pw) ? [] : [redact(text)];
        for (const out of [...patternOnly, redact(text, connectionSecrets(text))]) {
          expect(out).toContain("***");
          expect(out).toContain("alice");
          expect(out).toContain("db.example");
          // Patterns alone may hide too much of an odd raw URL; with the secrets, the database stays.
          if (out !== redact(text)) expect(out).toContain("appdb");
        }
        const out = redact(text, connectionSecrets(text));
        expectGone(out, pw);
        // The password does not survive inside a longer message either.
        const msg = redact(`could not connect with ${text}: connection refused`, connectionSecrets(text));
        expectGone(msg, pw);
        expect(msg).toMatch(/connection refused$/);
      });
    }
  }

  it("short passwords by pattern too", () => {
    expect(redact("postgres://u:x@h/db")).toBe("postgres://u:***@h/db");
    expect(redact("u:x@h")).toBe("u:***@h");
    expect(redact("host=h password=x user=u")).toBe("host=h password=*** user=u");
  });

  it("NATS URLs: user:password and a token", () => {
    expect(redact("nats://alice:s3cr%2Ft@127.0.0.1:4222?stream=CDC")).toBe("nats://alice:***@127.0.0.1:4222?stream=CDC");
    expect(redact("cannot reach nats://t0k3n-abc@h:4222,h2:4222 (refused)")).toBe("cannot reach nats://***@h:4222,h2:4222 (refused)");
    expect(redact("tls://t0k3n@h")).toBe("tls://***@h");
    expect(redact("nats://h:4222?stream=CDC")).toBe("nats://h:4222?stream=CDC");
  });

  it("a known secret anywhere, in every form: raw, percent-encoded, JSON-escaped", () => {
    const pw = 'se/cr"et pw';
    for (const form of [pw, encodeURIComponent(pw), JSON.stringify(pw).slice(1, -1)]) {
      const out = redact(`FATAL: no such database "${form}" (echoed)`, [pw]);
      expect(out).toBe(`FATAL: no such database "***" (echoed)`);
    }
  });

  it("PGPASSWORD never appears", () => {
    const saved = process.env.PGPASSWORD;
    process.env.PGPASSWORD = "env-secret-42";
    try {
      expect(redact("server said: env-secret-42 is wrong")).toBe("server said: *** is wrong");
      const e = new ReplicationError("could not connect: env-secret-42", { code: "CONNECT_FAILED", detail: "env-secret-42", hint: "x env-secret-42" });
      expect(`${e.message} ${e.detail} ${e.hint}`).not.toContain("env-secret-42");
    } finally {
      if (saved === undefined) delete process.env.PGPASSWORD;
      else process.env.PGPASSWORD = saved;
    }
  });

  it("fromPgError removes the connection's passwords from message, detail and hint", () => {
    const err = Object.assign(new Error('password "t0ps3cret" rejected'), { code: "28P01", severity: "FATAL", detail: "t0ps3cret", hint: "t0ps3cret" });
    const e = fromPgError(err, "could not connect", "CONNECT_FAILED", ["t0ps3cret"]);
    expect(e.code).toBe("SERVER_ERROR");
    expect(e.message).toBe('could not connect: password "***" rejected');
    expect([e.detail, e.hint]).toEqual(["***", "***"]);
  });

  it("sink URLs: passwords in redis://, rediss://, nats://, https:// and tokens in their query", () => {
    expect(redact("redis: cannot reach redis://:s3cret-pw@127.0.0.1:6379/2")).toBe("redis: cannot reach redis://:***@127.0.0.1:6379/2");
    expect(redact("rediss://app:s3cret-pw@cache.example:6380")).toBe("rediss://app:***@cache.example:6380");
    expect(redact("nats://u:s3cret-pw@127.0.0.1:4222?stream=CDC")).toBe("nats://u:***@127.0.0.1:4222?stream=CDC");
    expect(redact("POST https://hook:s3cret-pw@hooks.example/in failed")).toBe("POST https://hook:***@hooks.example/in failed");
    for (const name of ["token", "access_token", "api_key", "apikey", "api-key", "key", "secret", "sig", "signature", "code", "X-Amz-Signature", "X-Amz-Credential"]) {
      const out = redact(`https://hooks.example/in?format=array&${name}=tok%2Fen.12345&batch=1#frag answered 401`);
      expect(out, name).toBe(`https://hooks.example/in?format=array&${name}=***&batch=1#frag answered 401`);
    }
    expect(redact("https://hooks.example/in?token=abc123 answered 500")).toBe("https://hooks.example/in?token=*** answered 500");
  });

  it("leaves ordinary messages alone", () => {
    for (const text of [
      "ERROR: x@y happened",
      "connection refused at 127.0.0.1:5432 (hint: check the host and port)",
      'replication slot "s" does not exist',
      "tail: streaming from db:5432, slot s (temporary), from 0/16B3748",
      "PostgreSQL 18.4 at postgres://postgres@127.0.0.1:5555/postgres (temporary)",
      'password authentication failed for user "pwuser"',
      "redis: 127.0.0.1:6379: WRONGTYPE Operation against a key holding the wrong kind of value (stream cdc:public.t)",
      "http: POST https://hooks.example/in?format=array answered 400 Bad Request",
    ]) {
      expect(redact(text)).toBe(text);
    }
  });
});

describe("printable()", () => {
  it("removes escape sequences: CSI colors and cursor moves, OSC titles, C1 CSI", () => {
    expect(printable("\x1b[31mred\x1b[0m")).toBe("red");
    expect(printable("a\x1b[2J\x1b[1;1Hb")).toBe("ab");
    expect(printable("\x1b]0;owned\x07title")).toBe("title");
    expect(printable("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\")).toBe("link");
    expect(printable("x\x9b31my")).toBe("xy");
    expect(printable("\x1bcreset")).toBe("reset");
  });

  it("escapes other control characters visibly; keeps tab, newline and ordinary text", () => {
    expect(printable("bell\x07 cr\r nul\x00 del\x7f c1\x85 rlo\u202e")).toBe("bell\\x07 cr\\x0d nul\\x00 del\\x7f c1\\x85 rlo\\u202e");
    expect(printable("tab\tnew\nline é 日本 🐘")).toBe("tab\tnew\nline é 日本 🐘");
    expect(printable("lone \x1b")).not.toContain("\x1b");
  });

  it("leaves no ESC, whatever the input", () => {
    let all = "";
    for (let c = 0; c < 0x100; c++) all += `\x1b${String.fromCharCode(c)}x\x1b[${String.fromCharCode(c)}`;
    const out = printable(all);
    expect(out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });
});
