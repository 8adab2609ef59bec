/**
 * The dual-package hazard: an application that loads the ES build and the
 * CommonJS build (dist/cjs/) has two copies of every module, so two
 * PgoutputError and ReplicationError classes. An error thrown by one copy
 * must pass the other's `instanceof` and type guard (bindings/brand.ts).
 *
 * A second copy here is the same source file under another module id (a
 * query string: vite loads it again). The packed builds side by side, under
 * Node with --no-experimental-require-module: test/consumer-cjs/require.js
 * (npm run test:pack).
 */
import { describe, expect, it } from "vitest";
import { PgoutputError, isPgoutputError } from "../bindings/errors.ts";
import { ReplicationError, isReplicationError } from "../bindings/pg/errors.ts";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";

/** The module at `path` once more, as a module of its own. */
const secondCopy = <T>(path: string): Promise<T> => import(/* @vite-ignore */ `${path}?second-copy`) as Promise<T>;

describe("two copies of the package in one process", async () => {
  const other = await secondCopy<typeof import("../bindings/errors.ts")>(new URL("../bindings/errors.ts", import.meta.url).pathname);
  const otherPg = await secondCopy<typeof import("../bindings/pg/errors.ts")>(new URL("../bindings/pg/errors.ts", import.meta.url).pathname);

  it("are two copies", () => {
    expect(other.PgoutputError).not.toBe(PgoutputError);
    expect(otherPg.ReplicationError).not.toBe(ReplicationError);
  });

  it("a decoder's PgoutputError is instanceof the other copy's class and passes its guard", () => {
    let thrown: unknown;
    try {
      new BaselineDecoder().decode(new Uint8Array([0x42])); // a Begin cut short
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(PgoutputError);
    expect(thrown instanceof other.PgoutputError).toBe(true);
    expect(other.isPgoutputError(thrown)).toBe(true);
    const made = new other.PgoutputError("x", { code: "INCOMPLETE" });
    expect(made instanceof PgoutputError && isPgoutputError(made)).toBe(true);
  });

  it("a ReplicationError is instanceof the other copy's class and passes its guard", () => {
    const e = new otherPg.ReplicationError("lost", { code: "CONNECTION_LOST" });
    expect(e instanceof ReplicationError && isReplicationError(e)).toBe(true);
    expect(e.retryable).toBe(true);
  });

  it("nothing else passes: other errors, the other class, look-alikes", () => {
    const pgError = new ReplicationError("x", { code: "CONNECTION_LOST" });
    const decodeError = new PgoutputError("x", { code: "INCOMPLETE" });
    for (const v of [new Error("x"), pgError, { code: "INCOMPLETE", name: "PgoutputError" }, null, undefined, "PgoutputError", Object.create(Error.prototype)]) {
      expect(v instanceof other.PgoutputError || isPgoutputError(v)).toBe(false);
    }
    for (const v of [new Error("x"), decodeError, { code: "CONNECTION_LOST", name: "ReplicationError" }]) {
      expect(v instanceof otherPg.ReplicationError || isReplicationError(v)).toBe(false);
    }
  });

  it("a subclass keeps the ordinary instanceof", () => {
    class Sub extends PgoutputError {}
    expect(new Sub("x", { code: "INCOMPLETE" })).toBeInstanceOf(Sub);
    expect(new PgoutputError("x", { code: "INCOMPLETE" }) instanceof Sub).toBe(false);
    expect(new Sub("x", { code: "INCOMPLETE" }) instanceof other.PgoutputError).toBe(true);
  });
});
