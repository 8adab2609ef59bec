/**
 * The cases every runtime runs: Node (vitest: node.test.ts), Deno
 * (cases.deno.ts), Bun (bun.ts) and Chromium (browser.ts, built by
 * tsconfig.browser.json). Only ES globals and the package's own sources —
 * no `node:` imports, no vitest — so the same file loads everywhere.
 *
 * Covered, through both backends: every message kind, batch / framed /
 * push input, errors with their offsets, stale views, the relation cache
 * and stream state; then the LSN and time helpers, the kernel's empty
 * import list, and createDecoder()'s choice of backend and its fallback.
 */
import {
  BaselineDecoder, WasmDecoder, compareLsn, createDecoder, formatLsn, isPgoutputError, parseLsn, timestampToDate, timestampToISO,
  unchangedToast, wasmSupport, type DecoderOptions, type MessageKind, type PgoutputDecoder, type PgoutputError, type PgoutputMessage,
} from "../../bindings/index.ts";
import { INVALID_LSN } from "../../bindings/lsn.ts";
import { MessageTag } from "../../bindings/messages.ts";
import { POSTGRES_EPOCH_US, fromPostgresTimestamp, toPostgresTimestamp } from "../../bindings/time.ts";
import { kernelModule } from "../../bindings/wasm/module.ts";
import { wasmBase64 } from "../../bindings/wasm-inline.ts";
import {
  encode, FIXTURE_PNG, fixtureOpening, fixtureRelations, fixtures, frame, framedOffset, MAX_LSN, MAX_U32, UNCHANGED, type Encoded, type Fixture,
} from "../../devkit/encoder/encoder.ts";
import { eq, ok, throws, type Case, type Cases } from "./harness.ts";

type Backend = "wasm" | "baseline";
const makers: Record<Backend, (o?: DecoderOptions) => Promise<PgoutputDecoder>> = {
  wasm: (o) => WasmDecoder.create(o),
  baseline: async (o) => new BaselineDecoder(o),
};

const { users, wide, empty } = fixtureRelations;
const png = FIXTURE_PNG;
const X = 2 ** 31 + 9;

/** A transaction-shaped stream with all 19 message kinds (the state each message needs comes before it). */
const STREAM: Encoded[] = [
  ...fixtureOpening(),
  encode.truncate({ options: 1, relationIds: [users.relationId, empty.relationId] }),
  encode.message({ transactional: true, lsn: 0x1001n, prefix: "app", content: "payload" }),
  encode.commit({ commitLsn: 0x1000n, endLsn: 0x1010n, commitTime: 1_700_000_000_000_002n }),
  encode.streamStart({ xid: X, firstSegment: true }),
  encode.relation({ ...wide, xid: X }),
  encode.insert({ xid: X, relation: wide, newTuple: ["東京", null] }),
  encode.update({ xid: X, relation: wide, oldTupleType: "O", oldTuple: ["東京", null], newTuple: ["x", UNCHANGED] }),
  encode.streamStop(),
  encode.streamCommit({ xid: X, commitLsn: 2n ** 63n, endLsn: MAX_LSN, commitTime: -1n }),
  encode.streamAbort({ xid: 5, subXid: 6 }),
  encode.streamAbort({ xid: 5, subXid: 5, abortLsn: 0x55n, abortTime: 1_000_000n }),
  encode.beginPrepare({ prepareLsn: 0x2000n, endLsn: 0x2010n, prepareTime: 1n, xid: 701, gid: "g1" }),
  encode.prepare({ prepareLsn: 0x2000n, endLsn: 0x2010n, prepareTime: 1n, xid: 701, gid: "g1" }),
  encode.commitPrepared({ commitLsn: 0x3000n, endLsn: 0x3010n, commitTime: 2n, xid: 701, gid: "g1" }),
  encode.rollbackPrepared({ prepareEndLsn: 1n, rollbackEndLsn: 2n, prepareTime: 3n, rollbackTime: 4n, xid: 702, gid: "g2" }),
  encode.streamPrepare({ prepareLsn: 7n, endLsn: 8n, prepareTime: 9n, xid: 9, gid: "g3" }),
];
const EXPECTED = STREAM.map((m) => m.expected);
const FRAMED = frame(STREAM);
const ALL_KINDS = Object.keys(MessageTag) as MessageKind[];

/** Runs `fn`, which must throw a PgoutputError; returns it. */
function pgError(fn: () => unknown, label: string): PgoutputError {
  const e = throws(fn, label);
  ok(isPgoutputError(e), `${label}: expected a PgoutputError, got ${String(e)}`);
  return e;
}

function decodeFixture(d: PgoutputDecoder, f: Fixture): PgoutputMessage {
  d.reset();
  for (const s of f.setup) d.decode(s.bytes);
  return d.decode(f.message.bytes, f.options);
}

/** Decodes `bytes` pushed in two chunks split at `cut`; every message materialized. */
function pushSplit(d: PgoutputDecoder, bytes: Uint8Array, cut: number): Record<string, unknown>[] {
  d.reset();
  const out = d.push(bytes.subarray(0, cut)).materialize();
  out.push(...d.push(bytes.subarray(cut)).materialize());
  d.end();
  return out;
}

/** Replaces globalThis.WebAssembly (undefined: removes it) while `fn` runs. */
async function withWebAssembly(replacement: object | undefined, fn: () => Promise<void>): Promise<void> {
  const g = globalThis as Record<string, unknown>;
  const saved = Object.getOwnPropertyDescriptor(g, "WebAssembly");
  ok(saved !== undefined, "this runtime has no WebAssembly global to remove");
  if (replacement === undefined) delete g.WebAssembly;
  else Object.defineProperty(g, "WebAssembly", { value: replacement, configurable: true, writable: true });
  try {
    await fn();
  } finally {
    Object.defineProperty(g, "WebAssembly", saved);
  }
}

function backendCases(b: Backend): Cases {
  const make = makers[b];
  const cases: Cases = {};
  const fx = fixtures();

  cases[`${b}: reports its backend`] = async () => eq((await make()).backend, b, "backend");

  for (const kind of ALL_KINDS) {
    const mine = fx.filter((f) => f.message.kind === kind);
    cases[`${b}: decodes ${kind} (${mine.length} fixtures)`] = async () => {
      ok(mine.length > 0, `no fixture for ${kind}`);
      const d = await make();
      for (const f of mine) {
        const msg = decodeFixture(d, f);
        eq(msg.kind, kind, `${f.name}: kind`);
        eq(msg.materialize(), f.message.expected, `${f.name}: materialize()`);
        eq(msg.bytes(), f.message.bytes, `${f.name}: bytes()`);
        JSON.stringify(msg.toJSON()); // JSON-safe: would throw on a bigint
      }
    };
  }

  cases[`${b}: decodeBatch of a stream of every kind`] = async () => {
    const d = await make();
    const batch = d.decodeBatch(STREAM.map((m) => m.bytes));
    eq(batch.length, STREAM.length, "length");
    eq(new Set(Array.from({ length: batch.length }, (_, i) => batch.kind(i))).size, ALL_KINDS.length, "distinct kinds");
    eq(batch.materialize(), EXPECTED, "materialize()");
    eq([...batch].map((m) => m.materialize()), EXPECTED, "iterated");
  };

  cases[`${b}: decodeFramed, with an incomplete last frame`] = async () => {
    const d = await make();
    const whole = d.decodeFramed(FRAMED);
    eq(whole.consumed, FRAMED.length, "consumed");
    eq(whole.materialize(), EXPECTED, "whole");
    d.reset();
    const cut = framedOffset(STREAM, 5) + 2; // inside message 5
    const part = d.decodeFramed(FRAMED.subarray(0, cut));
    eq(part.length, 5, "messages before the cut");
    eq(part.consumed, framedOffset(STREAM, 5) - 4, "consumed up to the cut frame's length");
    eq(part.materialize(), EXPECTED.slice(0, 5), "part");
  };

  cases[`${b}: push() split at every byte`] = async () => {
    const d = await make();
    for (let cut = 0; cut <= FRAMED.length; cut++) eq(pushSplit(d, FRAMED, cut), EXPECTED, `split at ${cut}`);
    d.reset();
    d.push(FRAMED.subarray(0, 7));
    eq(pgError(() => d.end(), "end() with a partial frame").code, "INCOMPLETE", "end() code");
  };

  cases[`${b}: errors carry code, offset, kind, field and index; the decoder goes on`] = async () => {
    const d = await make();
    // an unknown tag as message 2 of a batch: offset counts the 4-byte length prefixes
    const list = [STREAM[0]!.bytes, STREAM[2]!.bytes, new Uint8Array([0x58, 1, 2]), STREAM[4]!.bytes];
    const e1 = pgError(() => d.decodeBatch(list), "unknown tag");
    eq([e1.code, e1.offset, e1.messageIndex, e1.incomplete], ["UNKNOWN_MESSAGE", framedOffset(list, 2), 2, false], "unknown tag");
    // a column kind byte that is none of n/u/t/b
    const bad = encode.insert({ relation: users, newTuple: ["1", "a", { raw: [0x78] }, null] });
    d.decode(encode.relation(users).bytes);
    const e2 = pgError(() => d.decode(bad.bytes), "bad column kind");
    eq([e2.code, e2.offset, e2.messageKind], ["INVALID_COLUMN_KIND", bad.offsets["newTuple.column[2]"], "Insert"], "bad column kind");
    ok(/newTuple\.column\[2\]/.test(e2.field ?? ""), `field names the column: ${e2.field}`);
    // a tuple narrower than its relation
    const narrow = encode.insert({ relation: users, newTuple: ["1"] });
    const e3 = pgError(() => d.decode(narrow.bytes), "narrow tuple");
    eq([e3.code, e3.offset], ["COLUMN_COUNT_MISMATCH", narrow.offsets["newTuple.count"]], "narrow tuple");
    // cut short: INCOMPLETE, flagged as such
    const begin = STREAM[0]!.bytes;
    const e4 = pgError(() => d.decode(begin.subarray(0, 12)), "truncated Begin");
    eq([e4.code, e4.incomplete, e4.messageKind], ["INCOMPLETE", true, "Begin"], "truncated Begin");
    // one byte too many
    const longer = new Uint8Array(begin.length + 1);
    longer.set(begin);
    const e5 = pgError(() => d.decode(longer), "trailing byte");
    eq([e5.code, e5.offset], ["TRAILING_BYTES", begin.length], "trailing byte");
    // and the decoder still works
    eq(d.decode(STREAM[4]!.bytes).materialize(), EXPECTED[4], "after errors");
  };

  cases[`${b}: stale views throw STALE_VIEW; materialized copies live on`] = async () => {
    const d = await make();
    d.decode(encode.relation(users).bytes);
    const ins = encode.insert({ relation: users, newTuple: ["1", "aaaa", png, null] });
    const view = d.decode(ins.bytes);
    ok(view.kind === "Insert", "an Insert");
    const tuple = view.newTuple;
    const copy = view.materialize();
    const batch = d.decodeBatch([ins.bytes, ins.bytes]);
    const first = batch.get(0);
    d.decode(encode.streamStop().bytes);
    for (const [what, fn] of [
      ["view.materialize()", () => view.materialize()], ["view.newTuple", () => view.newTuple],
      ["tuple.text()", () => tuple.text(1)], ["batch.get(1)", () => batch.get(1).materialize()], ["batch view", () => first.toJSON()],
    ] as const) {
      eq(pgError(fn, what).code, "STALE_VIEW", what);
    }
    eq(copy, ins.expected, "the copy");
  };

  cases[`${b}: relation cache, tuple access by name, unchanged TOAST, stream state`] = async () => {
    const d = await make();
    d.decode(encode.relation(users).bytes);
    eq(d.relations.get(users.relationId)?.name, "users", "relation name");
    const u = d.decode(encode.update({ relation: users, newTuple: ["7", "Bo", png, UNCHANGED] }).bytes);
    ok(u.kind === "Update", "an Update");
    eq([u.newTuple.text("id"), u.newTuple.text("name"), u.newTuple.bytes("photo"), u.newTuple.text("bio") === unchangedToast],
      ["7", "Bo", png, true], "columns");
    eq(d.inStream, false, "inStream before");
    d.decode(encode.streamStart({ xid: 3, firstSegment: true }).bytes);
    eq(d.inStream, true, "inStream after Stream Start");
    const si = d.decode(encode.insert({ xid: 3, relation: users, newTuple: ["1", null, null, null] }).bytes);
    ok(si.kind === "Insert", "an Insert");
    eq(si.xid, 3, "streamed xid");
    d.decode(encode.streamStop().bytes);
    eq(d.inStream, false, "inStream after Stream Stop");
    d.reset();
    eq(d.relations.size, 0, "relations after reset()");
  };

  return cases;
}

const sharedCases: Cases = {
  "wasm and baseline agree on every prefix of a stream": async () => {
    const w = await makers.wasm();
    const base = await makers.baseline();
    const outcome = (d: PgoutputDecoder, bytes: Uint8Array) => {
      d.reset();
      try {
        const batch = d.decodeFramed(bytes);
        return { consumed: batch.consumed, messages: batch.materialize() };
      } catch (e) {
        ok(isPgoutputError(e), `not a PgoutputError: ${String(e)}`);
        return { code: e.code, offset: e.offset, index: e.messageIndex };
      }
    };
    for (let n = 0; n <= FRAMED.length; n += 7) eq(outcome(w, FRAMED.subarray(0, n)), outcome(base, FRAMED.subarray(0, n)), `prefix ${n}`);
  },

  "LSN helpers": () => {
    eq(formatLsn(0x17864c0n), "0/17864C0", "formatLsn");
    eq(formatLsn(MAX_LSN), "FFFFFFFF/FFFFFFFF", "formatLsn max");
    eq(formatLsn(INVALID_LSN), "0/0", "INVALID_LSN");
    eq(parseLsn("16/b374d848"), 0x16_b374d848n, "parseLsn");
    for (const v of [0n, 1n, 0xffffffffn, 2n ** 32n, 2n ** 63n, MAX_LSN]) eq(parseLsn(formatLsn(v)), v, `round trip ${v}`);
    ok(throws(() => parseLsn("1/2/3")) instanceof SyntaxError, "parseLsn rejects junk");
    eq([compareLsn("0/10", "0/F"), compareLsn(0n, MAX_LSN), compareLsn("FFFFFFFF/FFFFFFFF", MAX_LSN)], [1, -1, 0], "compareLsn");
  },

  "time helpers": () => {
    eq(timestampToISO(1_700_000_000_123_456n), "2023-11-14T22:13:20.123456Z", "ISO");
    eq(timestampToISO(-1n), "1969-12-31T23:59:59.999999Z", "ISO before 1970");
    eq(timestampToDate(-1001n).getTime(), -2, "Date truncates toward -infinity");
    eq(toPostgresTimestamp(POSTGRES_EPOCH_US), 0n, "to the wire");
    eq(fromPostgresTimestamp(-1n), POSTGRES_EPOCH_US - 1n, "from the wire");
    eq(fromPostgresTimestamp(2n ** 63n - 1n), 2n ** 63n - 1n, "+infinity kept");
  },

  "the wasm kernel imports nothing": () => {
    const mod = kernelModule();
    eq(WebAssembly.Module.imports(mod), [], "imports");
    const exported = WebAssembly.Module.exports(mod).map((e) => e.name);
    ok(exported.includes("memory") && exported.includes("decode"), `exports memory and decode: ${exported.join(", ")}`);
  },

  "createDecoder() uses wasm where WebAssembly works": async () => {
    eq(wasmSupport(), { supported: true }, "wasmSupport()");
    const reasons: string[] = [];
    const d = await createDecoder({ onFallback: (r) => reasons.push(r) });
    eq([d.backend, reasons], ["wasm", []], "backend, fallback reasons");
    eq((await createDecoder({ backend: "baseline" })).backend, "baseline", "asked for the baseline");
  },

  "createDecoder() falls back to the baseline without WebAssembly, and says why": () =>
    withWebAssembly(undefined, async () => {
      const support = wasmSupport();
      ok(!support.supported && /not available/.test(support.reason), `wasmSupport(): ${JSON.stringify(support)}`);
      const reasons: string[] = [];
      const d = await createDecoder({ onFallback: (r) => reasons.push(r) });
      eq([d.backend, reasons], ["baseline", [support.reason]], "backend, fallback reasons");
      eq(d.decodeBatch(STREAM.map((m) => m.bytes)).materialize(), EXPECTED, "the baseline decodes");
      let refused: unknown;
      await createDecoder({ backend: "wasm" }).catch((e: unknown) => (refused = e));
      ok(refused instanceof Error && refused.message.includes(support.reason), `backend "wasm" is refused: ${String(refused)}`);
    }),

  "createDecoder() falls back when the kernel fails to load (e.g. a CSP refuses it)": async () => {
    const real = WebAssembly;
    const refuse = () => {
      throw new real.CompileError("refused to compile or instantiate WebAssembly (test)");
    };
    const policed = {
      validate: real.validate, Module: real.Module, Memory: real.Memory, CompileError: real.CompileError,
      compile: async () => refuse(), Instance: function Instance() { refuse(); },
    };
    await withWebAssembly(policed, async () => {
      eq(wasmSupport(), { supported: true }, "validation alone cannot tell");
      const reasons: string[] = [];
      const d = await createDecoder({ onFallback: (r) => reasons.push(r) });
      eq(d.backend, "baseline", "backend");
      ok(reasons.length === 1 && /failed to load.*refused/.test(reasons[0]!), `reason: ${reasons.join("; ")}`);
    });
  },

  "createDecoder({ wasm }) takes the kernel as bytes or a module": async () => {
    const text = atob(wasmBase64);
    const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0));
    for (const wasm of [bytes, await WebAssembly.compile(bytes)]) {
      const d = await createDecoder({ backend: "wasm", wasm });
      eq(d.decodeBatch(STREAM.map((m) => m.bytes)).materialize(), EXPECTED, "decodes");
    }
  },
};

/** Every shared case. */
export const cases: Cases = { ...backendCases("wasm"), ...backendCases("baseline"), ...sharedCases };

/**
 * A runtime-specific case: the package's `release.wasm` file, loaded the
 * runtime's way (readFile, Deno.readFile, Bun.file, compileStreaming),
 * decodes through `createDecoder({ wasm })`.
 */
export function releaseWasmCase(load: () => Promise<BufferSource | WebAssembly.Module>): Case {
  return async () => {
    const wasm = await load();
    const mod = wasm instanceof WebAssembly.Module ? wasm : await WebAssembly.compile(wasm);
    eq(WebAssembly.Module.imports(mod), [], "imports");
    const d = await createDecoder({ backend: "wasm", wasm: mod });
    eq(d.decodeBatch(STREAM.map((m) => m.bytes)).materialize(), EXPECTED, "decodes");
  };
}
