// End to end against real PostgreSQL 15 and 18: every capture scenario
// (devkit/capture/scenarios.ts) is run once per server, and its captured
// messages are decoded by each backend twice — one message at a time with
// decode() and all at once with decodeBatch() — and the decoded content is
// checked against what the scenario recorded from the server (relations
// against pg_class, column values against SELECT ...::text, xids, LSNs,
// commit times, ...; see devkit/capture/expect-scenario.ts). Both paths must
// materialize to the same objects, and both backends to the same objects and
// the same JSON.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PgoutputDecoder } from "../bindings/decoder.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import { backends, type Backend } from "./support/backends.ts";
import { startCluster, type Cluster, type PgMajor } from "../devkit/cluster/cluster.ts";
import { ScenarioChecker } from "../devkit/capture/expect-scenario.ts";
import { scenarios, type ScenarioResult } from "../devkit/capture/scenarios.ts";

const MAJORS: PgMajor[] = [15, 18];
const clusters = new Map<PgMajor, Cluster>();
const captures = new Map<string, Promise<ScenarioResult>>();

beforeAll(async () => {
  const t0 = performance.now();
  const started = await Promise.allSettled(MAJORS.map((m) => startCluster(m)));
  for (const s of started) if (s.status === "fulfilled") clusters.set(s.value.major, s.value);
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) throw failed.reason;
  console.info(`started PostgreSQL ${[...clusters.values()].map((c) => c.version).join(" and ")} in ${Math.round(performance.now() - t0)} ms`);
  // Start every capture now: scenarios queue per cluster, so the two servers work in parallel.
  for (const c of clusters.values()) {
    for (const s of scenarios) {
      if (!s.majors.includes(c.major)) continue;
      const p = s.run(c);
      p.catch(() => {}); // reported by the test that awaits it
      captures.set(`${c.major}/${s.name}`, p);
    }
  }
});

afterAll(async () => {
  await Promise.allSettled(captures.values());
  await Promise.all([...clusters.values()].map((c) => c.stop()));
});

function capture(major: PgMajor, name: string): Promise<ScenarioResult> {
  const p = captures.get(`${major}/${name}`);
  if (p === undefined) throw new Error(`no capture ${major}/${name} (cluster not started?)`);
  return p;
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

interface Decoded {
  materialized: Record<string, unknown>[];
  json: string[];
}

/** decode() one message at a time, checking each view while it is live. */
function decodeOneByOne(decoder: PgoutputDecoder, r: ScenarioResult, checker: ScenarioChecker): Decoded {
  const out: Decoded = { materialized: [], json: [] };
  r.rows.forEach((row, i) => {
    const m = decoder.decode(row.data);
    checker.feed(m, i);
    expect(sameBytes(m.bytes(), row.data), `message #${i} bytes()`).toBe(true);
    out.materialized.push(m.materialize());
    out.json.push(JSON.stringify(m.toJSON()));
  });
  checker.finish(decoder);
  return out;
}

/** decodeBatch() of every message at once. */
function decodeAllAtOnce(decoder: PgoutputDecoder, r: ScenarioResult, checker: ScenarioChecker): Decoded {
  const batch = decoder.decodeBatch(r.rows.map((x) => x.data));
  expect(batch.length).toBe(r.rows.length);
  const out: Decoded = { materialized: [], json: [] };
  const kinds: string[] = [];
  const viewKinds: string[] = [];
  let i = 0;
  for (const m of batch as Iterable<PgoutputMessage>) {
    checker.feed(m, i);
    expect(sameBytes(m.bytes(), r.rows[i]!.data), `message #${i} bytes()`).toBe(true);
    kinds.push(batch.kind(i));
    viewKinds.push(m.kind);
    out.materialized.push(m.materialize());
    out.json.push(JSON.stringify(m.toJSON()));
    i++;
  }
  expect(i).toBe(r.rows.length);
  expect(kinds).toEqual(viewKinds);
  expect(batch.materialize()).toEqual(out.materialized);
  checker.finish(decoder);
  return out;
}

async function decodeBoth(backend: Backend, r: ScenarioResult) {
  const common = { scenario: r.name, major: r.major, expected: r.expected, rows: r.rows };
  const one = decodeOneByOne(await backend.create(), r, new ScenarioChecker({ ...common, label: `pg${r.major} ${r.name} ${backend.name} decode()` }));
  const all = decodeAllAtOnce(await backend.create(), r, new ScenarioChecker({ ...common, label: `pg${r.major} ${r.name} ${backend.name} decodeBatch()` }));
  return { one, all };
}

describe.each(MAJORS)("PostgreSQL %i", (major) => {
  for (const s of scenarios.filter((x) => x.majors.includes(major))) {
    describe(s.name, () => {
      for (const backend of backends) {
        it(`${backend.name}: decode() and decodeBatch() give the recorded content`, async () => {
          const r = await capture(major, s.name);
          expect(r.rows.length).toBeGreaterThan(0);
          const { one, all } = await decodeBoth(backend, r);
          expect(all.materialized).toEqual(one.materialized);
          expect(all.json).toEqual(one.json);
        });
      }

      it("wasm and baseline decode identically", async () => {
        const r = await capture(major, s.name);
        const [a, b] = await Promise.all(
          backends.map(async (backend) => {
            const d = await backend.create();
            const batch = d.decodeBatch(r.rows.map((x) => x.data));
            return { name: backend.name, materialized: batch.materialize(), json: [...batch].map((m) => JSON.stringify(m.toJSON())) };
          }),
        );
        expect(a!.materialized, `${a!.name} vs ${b!.name}`).toEqual(b!.materialized);
        expect(a!.json, `${a!.name} vs ${b!.name}`).toEqual(b!.json);
      });
    });
  }
});
