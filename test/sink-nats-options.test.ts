/**
 * The NATS sink's configuration (bindings/sinks/nats-options.ts) without a
 * server: what a `nats://` target and its options mean, the subjects
 * records go to, and refusals that name the option and the remedy without
 * showing a credential.
 */
import { describe, expect, it } from "vitest";
import { describeTarget, natsOptions, subjectMatches, subjectPatterns, subjectToken, tableSubject } from "../bindings/sinks/nats-options.ts";
import { SinkError } from "../bindings/pipeline/sink.ts";
import { durationMs } from "../bindings/sinks/options.ts";
import { sinkFor } from "../bindings/sinks/index.ts";

function refusal(f: () => unknown): SinkError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(SinkError);
    return e as SinkError;
  }
  throw new Error("not refused");
}

describe("nats:// targets", () => {
  it("servers, credentials and defaults", () => {
    const o = natsOptions("nats://127.0.0.1");
    expect(o).toMatchObject({
      servers: ["127.0.0.1:4222"], subject: "{prefix}.{schema}.{table}", prefix: "cdc", mode: "change", create: false,
      storage: "file", duplicateWindowMs: 120_000, ackTimeoutMs: 5000, connectTimeoutMs: 15_000,
    });
    expect(o.stream).toBeUndefined();
    expect(natsOptions("nats://a:4333,b,[::1]:4444").servers).toEqual(["a:4333", "b:4222", "[::1]:4444"]);
    expect(natsOptions("nats://alice:p%40ss%3Aw@h")).toMatchObject({ user: "alice", pass: "p@ss:w" });
    const token = natsOptions("nats://s3cr3t-t0ken@h");
    expect([token.token, token.user, token.pass]).toEqual(["s3cr3t-t0ken", undefined, undefined]);
    expect(describeTarget(natsOptions("nats://alice:pw@h:1,h2:2"))).toBe("nats://h:1,h2:2");
  });

  it("query parameters, and options of the same names that win over them", () => {
    const o = natsOptions("nats://h?stream=ORDERS&subject=db.{table}&prefix=db&mode=transaction&create=true&storage=memory&duplicate_window=10m&ack_timeout=750ms&connect_timeout=2s&name=me");
    expect(o).toMatchObject({
      stream: "ORDERS", subject: "db.{table}", prefix: "db", mode: "transaction", create: true, storage: "memory",
      duplicateWindowMs: 600_000, ackTimeoutMs: 750, connectTimeoutMs: 2000, name: "me",
    });
    expect(natsOptions("nats://h?subject=a.{table}", { subject: "b.{table}", create: true, stream: undefined })).toMatchObject({ subject: "b.{table}", create: true });
    expect(durationMs("1.5")).toBe(1500);
    expect(durationMs("2h")).toBe(7_200_000);
    expect(durationMs("soon")).toBeUndefined();
  });

  it("refuses what it does not know, naming the option and the remedy, never the password", () => {
    const target = "nats://alice:hunter22@h";
    const cases: [string, RegExp, RegExp?][] = [
      [`${target}?strem=CDC`, /unknown option strem/, /stream, subject, prefix/],
      [`${target}?mode=batch`, /mode=batch/, /mode=change.*mode=transaction/],
      [`${target}?storage=disk`, /storage=disk/, /storage=file/],
      [`${target}?ack_timeout=soon`, /ack_timeout=soon is not a duration/, /5s/],
      [`${target}?create=maybe`, /create=maybe is not true or false/],
      [`${target}?stream=a.b`, /stream=a\.b is not a stream name/],
      [`${target}?subject=cdc..{table}`, /is not a NATS subject/, /tokens/],
      [`${target}?subject=cdc.*.{table}`, /is not a NATS subject/],
      [`${target}?subject=cdc.{db}.{table}`, /only \{prefix\}, \{schema\} and \{table\}/],
      ["http://h", /is not a nats:\/\/ URL/],
    ];
    for (const [t, message, hint] of cases) {
      const e = refusal(() => natsOptions(t));
      expect(e.message, t).toMatch(message);
      if (hint !== undefined) expect(e.hint, t).toMatch(hint);
      expect(`${e.message} ${e.hint ?? ""} ${e.details.target ?? ""}`).not.toContain("hunter22");
      expect(e.details.sink).toBe("nats");
    }
  });

  it("the registry hands nats:// targets to the NATS sink", () => {
    expect(sinkFor("nats://127.0.0.1:4222?stream=CDC").name).toBe("nats");
    expect(sinkFor("NATS://h").name).toBe("nats");
  });
});

describe("subjects", () => {
  it("one token per schema and table name: what a token cannot hold is percent-encoded, so no two tables share a subject", () => {
    expect(subjectToken("orders")).toBe("orders");
    expect(subjectToken("a.b")).toBe("a%2Eb");
    expect(subjectToken("a_b")).toBe("a_b");
    expect(subjectToken("50% off")).toBe("50%25%20off");
    expect(subjectToken("x*y>z\n\t")).toBe("x%2Ay%3Ez%0A%09");
    expect(subjectToken("naïve")).toBe("naïve");
    const o = { subject: "{prefix}.{schema}.{table}", prefix: "cdc" };
    expect(tableSubject(o, "public", "a.b")).toBe("cdc.public.a%2Eb");
    expect(tableSubject(o, "public.a", "b")).toBe("cdc.public%2Ea.b");
    expect(tableSubject({ subject: "db1.{table}.changes", prefix: "x" }, "s", "t")).toBe("db1.t.changes");
  });

  it("the patterns a stream must take, and NATS wildcard matching", () => {
    expect(subjectPatterns({ subject: "{prefix}.{schema}.{table}", prefix: "cdc" })).toEqual(["cdc.*.*", "cdc.message", "cdc.transaction"]);
    expect(subjectPatterns({ subject: "db.{schema}_{table}", prefix: "db" })).toEqual(["db.*", "db.message", "db.transaction"]);
    expect(subjectMatches("cdc.>", "cdc.public.t")).toBe(true);
    expect(subjectMatches("cdc.>", "cdc")).toBe(false);
    expect(subjectMatches("cdc.*.*", "cdc.public.t")).toBe(true);
    expect(subjectMatches("cdc.*.*", "cdc.message")).toBe(false);
    expect(subjectMatches("cdc.*", "cdc.message")).toBe(true);
    expect(subjectMatches("cdc.public.*", "cdc.other.t")).toBe(false);
    expect(subjectMatches("cdc.message", "cdc.message")).toBe(true);
  });
});
