// The `decode` command (bindings/cli/main.ts), run as a child process on
// golden captures: gzipped and plain files and stdin (`-`), with each
// backend. The backends' outputs are byte-identical, with one JSON object per
// message (the message's toJSON(), as the library gives it), LSNs as X/Y
// strings; --stats prints the counts by kind to stderr; a corrupt capture
// makes it exit non-zero with a one-line error naming the error code and the
// byte offset.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, it, type ExpectStatic } from "vitest";
import { BaselineDecoder } from "../bindings/baseline/decoder.ts";
import type { PgoutputErrorCode } from "../bindings/errors.ts";
import type { PgoutputMessage } from "../bindings/messages.ts";
import { buildCli, removeCli } from "./support/build-cli.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FIXTURES = join(ROOT, "test", "fixtures");
const index = JSON.parse(readFileSync(join(FIXTURES, "index.json"), "utf8")) as {
  fixtures: { file: string; messageCount: number; tags: string }[];
};
const BACKENDS = ["wasm", "baseline"] as const;
type BackendName = (typeof BACKENDS)[number];

// The CLI compiled once (as published): a run under tsx spent most of its 2-4 s compiling the sources again.
const CLI_OUT = "cli-test-decode";
let main = "";
beforeAll(async () => {
  main = await buildCli(CLI_OUT);
}, 120_000);
afterAll(() => removeCli(CLI_OUT));

const tmp = mkdtempSync(join(tmpdir(), "pgoutputwasm-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

function cli(args: string[], stdin?: Uint8Array): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString("utf8") }));
    child.stdin.on("error", () => {}); // the CLI may exit before reading all of stdin
    child.stdin.end(stdin === undefined ? undefined : Buffer.from(stdin));
  });
}

function fixture(file: string) {
  const entry = index.fixtures.find((f) => f.file === file);
  if (entry === undefined) throw new Error(`no fixture ${file}`);
  const gz = readFileSync(join(FIXTURES, file));
  const raw = gunzipSync(gz);
  return { entry, path: join(FIXTURES, file), gz, raw };
}

/** Writes the capture ungzipped to the temporary directory. */
function plainCopy(file: string): string {
  const p = join(tmp, file.replace(/\.gz$/, ""));
  writeFileSync(p, fixture(file).raw);
  return p;
}

/** What the CLI should print: the library's toJSON() of every message, one per line. */
function expectedLines(raw: Uint8Array): string[] {
  const d = new BaselineDecoder();
  return [...(d.decodeFramed(new Uint8Array(raw)) as Iterable<PgoutputMessage>)].map((m) => JSON.stringify(m.toJSON()));
}

function countsByKind(tags: string): Record<string, number> {
  const TAG: Record<string, string> = {
    B: "Begin", C: "Commit", O: "Origin", M: "Message", R: "Relation", Y: "Type", I: "Insert", U: "Update", D: "Delete",
    T: "Truncate", S: "StreamStart", E: "StreamStop", c: "StreamCommit", A: "StreamAbort", b: "BeginPrepare", P: "Prepare",
    K: "CommitPrepared", r: "RollbackPrepared", p: "StreamPrepare",
  };
  const out: Record<string, number> = {};
  for (const t of tags.replace(/(.)\*(\d+)/g, (_, x: string, n: string) => x.repeat(Number(n)))) out[TAG[t]!] = (out[TAG[t]!] ?? 0) + 1;
  return out;
}

const LSN = /^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/;

function checkJsonLines(expect: ExpectStatic, stdout: Buffer, messageCount: number): Record<string, unknown>[] {
  const text = stdout.toString("utf8");
  expect(text.endsWith("\n")).toBe(true);
  const lines = text.slice(0, -1).split("\n");
  expect(lines.length).toBe(messageCount);
  const objects = lines.map((line, i) => {
    const o = JSON.parse(line) as unknown;
    expect(typeof o === "object" && o !== null && !Array.isArray(o), `line ${i + 1} is a JSON object`).toBe(true);
    return o as Record<string, unknown>;
  });
  for (const [i, o] of objects.entries()) {
    expect(typeof o.kind, `line ${i + 1} kind`).toBe("string");
    for (const [k, v] of Object.entries(o)) {
      if (!/(Lsn|^lsn)$/.test(k) || v === null) continue;
      expect(v, `line ${i + 1} ${o.kind as string}.${k}`).toMatch(LSN);
    }
  }
  return objects;
}

/** Runs both backends on the same input. */
async function both(args: (backend: BackendName) => string[], stdin?: Uint8Array): Promise<Record<BackendName, Run>> {
  const [wasm, baseline] = await Promise.all(BACKENDS.map((b) => cli(args(b), stdin)));
  return { wasm: wasm!, baseline: baseline! };
}

// Concurrent: each test spawns processes. Assertions use the test context's
// expect, so that failures land on the right test.
describe.concurrent("decode", () => {
  const inputs: { name: string; file: string; args: () => string[]; stdin?: () => Uint8Array }[] = [
    { name: "a gzipped file", file: "pg15-origin.bin.gz", args: () => [fixture("pg15-origin.bin.gz").path] },
    { name: "a gzipped file with streams and two-phase messages", file: "pg18-two-phase.bin.gz", args: () => [fixture("pg18-two-phase.bin.gz").path] },
    { name: "a plain file (protocol 4 Stream Abort)", file: "pg18-parallel-abort.bin.gz", args: () => [plainCopy("pg18-parallel-abort.bin.gz")] },
    { name: "a plain file with 100 KB messages (across 64 KB reads)", file: "pg15-toast-unchanged.bin.gz", args: () => [plainCopy("pg15-toast-unchanged.bin.gz")] },
    { name: "gzip on stdin", file: "pg15-messages.bin.gz", args: () => ["-"], stdin: () => fixture("pg15-messages.bin.gz").gz },
    { name: "plain bytes on stdin", file: "pg18-binary.bin.gz", args: () => ["-"], stdin: () => fixture("pg18-binary.bin.gz").raw },
  ];

  for (const input of inputs) {
    it(`${input.name} (${input.file}): both backends print the same JSON Lines`, async ({ expect }) => {
      const { entry, raw } = fixture(input.file);
      const args = input.args();
      const runs = await both((b) => ["decode", ...args, "--backend", b], input.stdin?.());
      for (const b of BACKENDS) {
        expect(runs[b].stderr, `${b} stderr`).toBe("");
        expect(runs[b].code, `${b} exit code`).toBe(0);
      }
      expect(runs.wasm.stdout.equals(runs.baseline.stdout), "wasm and baseline outputs are byte-identical").toBe(true);
      const objects = checkJsonLines(expect, runs.wasm.stdout, entry.messageCount);
      expect(objects.map((o) => o.kind)).toEqual(expectedLines(raw).map((l) => (JSON.parse(l) as { kind: string }).kind));
      expect(runs.wasm.stdout.toString("utf8").slice(0, -1).split("\n")).toEqual(expectedLines(raw));
    });
  }

  it("--stats prints the counts by kind to stderr, and the same stdout", async ({ expect }) => {
    const { entry, path, raw } = fixture("pg15-streaming.bin.gz");
    const [plain, stats] = await Promise.all([both((b) => ["decode", path, "--backend", b]), both((b) => ["decode", path, "--backend", b, "--stats"])]);
    const want = countsByKind(entry.tags);
    for (const b of BACKENDS) {
      expect(stats[b].code, `${b} exit code`).toBe(0);
      expect(stats[b].stdout.equals(plain[b].stdout), `${b}: --stats leaves stdout alone`).toBe(true);
      const lines = stats[b].stderr.trimEnd().split("\n");
      const head = /^(\d+) messages, (\d+) bytes read in [0-9.]+ s \((\w+)\)$/.exec(lines[0]!);
      expect(head, `${b} stats header: ${lines[0]}`).not.toBeNull();
      expect(Number(head![1])).toBe(entry.messageCount);
      expect(Number(head![2])).toBe(raw.length);
      expect(head![3]).toBe(b);
      const counts: Record<string, number> = {};
      for (const line of lines.slice(1)) {
        const m = /^\s+(\w+)\s+(\d+)$/.exec(line);
        expect(m, `${b} stats line ${JSON.stringify(line)}`).not.toBeNull();
        counts[m![1]!] = Number(m![2]);
      }
      expect(counts, `${b} counts by kind`).toEqual(want);
    }
    expect(plain.wasm.stdout.equals(plain.baseline.stdout)).toBe(true);
    checkJsonLines(expect, plain.wasm.stdout, entry.messageCount);
  });

  // ------------------------------------------------------------ corrupt input

  /** Frame start offsets of a capture. */
  function frameStarts(raw: Uint8Array): number[] {
    const v = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const out: number[] = [];
    for (let off = 0; off < raw.length; off += 4 + v.getUint32(off)) out.push(off);
    return out;
  }

  interface Corruption {
    name: string;
    code: PgoutputErrorCode;
    /** Bytes to write (the file is given to the CLI) and the offset the error must name (or a range). */
    make(): { bytes: Uint8Array; offset: number | [number, number]; gzip?: boolean };
  }

  const corruptions: Corruption[] = [
    {
      name: "an unknown message tag",
      code: "UNKNOWN_MESSAGE",
      make() {
        const raw = Buffer.from(fixture("pg15-origin.bin.gz").raw);
        const at = frameStarts(raw)[2]! + 4;
        raw[at] = 0x5a; // 'Z'
        return { bytes: raw, offset: at };
      },
    },
    {
      name: "a bad TupleData column kind (gzipped capture)",
      code: "INVALID_COLUMN_KIND",
      make() {
        const raw = Buffer.from(fixture("pg18-replica-identity.bin.gz").raw);
        const insert = frameStarts(raw).find((o) => raw[o + 4] === 0x49)! + 4; // 'I'
        const at = insert + 8; // tag, Int32 relation OID, 'N', Int16 column count, then the first column's kind
        raw[at] = 0x78; // 'x'
        return { bytes: gzipSync(raw), offset: at, gzip: true };
      },
    },
    {
      name: "a frame length beyond maxMessageSize",
      code: "MESSAGE_TOO_LARGE",
      make() {
        const raw = Buffer.from(fixture("pg18-replica-identity.bin.gz").raw);
        const at = frameStarts(raw)[3]!;
        raw.writeUInt32BE(0xfffffff0, at);
        return { bytes: raw, offset: at };
      },
    },
    {
      name: "a capture cut inside its last frame",
      code: "INCOMPLETE",
      make() {
        const raw = fixture("pg15-origin.bin.gz").raw;
        const last = frameStarts(raw).at(-1)!;
        return { bytes: raw.subarray(0, raw.length - 3), offset: [last, raw.length - 3] };
      },
    },
  ];

  for (const c of corruptions) {
    for (const backend of BACKENDS) {
      it(`${backend}: ${c.name} exits non-zero with one line naming ${c.code} and the byte offset`, async ({ expect }) => {
        const { bytes, offset, gzip } = c.make();
        const file = join(tmp, `corrupt-${backend}-${c.code}${gzip ? ".bin.gz" : ".bin"}`);
        writeFileSync(file, bytes);
        const run = await cli(["decode", file, "--backend", backend]);
        expect.soft(run.code, "exit code").not.toBe(0);
        expect.soft(run.code, "exit code").not.toBeNull();
        const text = run.stderr.trimEnd();
        expect.soft(text.length, "an error on stderr").toBeGreaterThan(0);
        expect.soft(text.split("\n"), `one line: ${JSON.stringify(run.stderr)}`).toHaveLength(1);
        expect.soft(text, "names the error code").toContain(c.code);
        const m = /\bbyte (\d+)\b/.exec(text);
        expect.soft(m, `names a byte offset: ${JSON.stringify(text)}`).not.toBeNull();
        if (m !== null) {
          const at = Number(m[1]);
          if (typeof offset === "number") expect.soft(at, `byte offset in ${JSON.stringify(text)}`).toBe(offset);
          else expect.soft(at >= offset[0] && at <= offset[1], `byte offset ${at} in [${offset[0]}, ${offset[1]}] (the unfinished frame): ${JSON.stringify(text)}`).toBe(true);
        }
      });
    }
  }
});

describe("decode --format NAME: any format of the registry, with its options", () => {
  /** The library's pipeline over the same capture, with this format. */
  const library = async (raw: Buffer, name: string, options: Record<string, string | boolean>): Promise<Buffer> => {
    const { Pipeline } = await import("../bindings/pipeline/run.ts");
    const { captureSource } = await import("../bindings/pipeline/sources.ts");
    const { formatNamed, formatOptions } = await import("../bindings/formats/index.ts");
    const { createDecoder } = await import("../bindings/create-decoder.ts");
    const format = formatNamed(name);
    const checked = formatOptions(format, options);
    const decoder = await createDecoder({ values: format.values(undefined, checked) });
    const parts: Buffer[] = [];
    await new Pipeline({
      source: captureSource((async function* () { yield raw; })(), decoder),
      format: format.create({ decoder }, checked),
      sink: { name: "memory", write: async (r) => void parts.push(Buffer.from(r.bytes.buf.subarray(0, r.bytes.len))), close: async () => {} },
      replayDecoder: await createDecoder({ values: format.values(undefined, checked) }),
      writePartial: true,
    }).run();
    return Buffer.concat(parts);
  };

  it("--format wal2json -o format-version=1|2 equals the library's pipeline over the same capture; --changes is --format jsonl", async ({ expect }) => {
    const { path, raw } = fixture("pg15-streaming.bin.gz");
    for (const version of ["1", "2"]) {
      const run = await cli(["decode", path, "--format", "wal2json", "-o", `format-version=${version}`]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout.length).toBeGreaterThan(1000);
      expect(run.stdout.equals(await library(raw, "wal2json", { "format-version": version })), `format-version ${version}`).toBe(true);
    }
    const changes = await cli(["decode", path, "--changes"]);
    const jsonl = await cli(["decode", path, "--format", "jsonl"]);
    expect(changes.stdout.equals(jsonl.stdout)).toBe(true);
    expect(changes.stdout.equals(await library(raw, "jsonl", {}))).toBe(true);
    const both = await cli(["decode", path, "--changes", "--format", "wal2json"]);
    expect(both.code).toBe(2);
    const refused = await cli(["decode", path, "--tables", "t"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/format messages has no option "tables"/);
  });

  it("--format debezium and cloudevents: the library's events (but the processing time); binary mode refused on stdout; options of the other inner format refused", async ({ expect }) => {
    const { path, raw } = fixture("pg18-replica-identity.bin.gz");
    // ts_ms, ts_us, ts_ns of an event (not its source's) are when it was written: the one field two runs differ in.
    const events = (text: string | Buffer) =>
      text.toString().trim().split("\n").map((line) => {
        const e = JSON.parse(line) as (Record<string, unknown> & { data?: Record<string, unknown> }) | null; // null: a tombstone
        for (const o of [e, e?.data]) if (o != null) for (const k of ["ts_ms", "ts_us", "ts_ns"]) delete o[k];
        return e;
      });
    const cases: [string, string[], Record<string, string | boolean>][] = [
      ["debezium", ["-o", "transaction-metadata", "-o", "tombstones"], { "transaction-metadata": true, tombstones: true }],
      ["cloudevents", ["-o", "data=debezium", "-o", "decimal-handling=double"], { data: "debezium", "decimal-handling": "double" }],
    ];
    for (const [name, flags, options] of cases) {
      const run = await cli(["decode", path, "--format", name, ...flags]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      const got = events(run.stdout);
      expect(got.length).toBeGreaterThan(5);
      expect(got).toEqual(events(await library(raw, name, options)));
    }
    const binary = await cli(["decode", path, "--format", "cloudevents", "-o", "mode=binary"]);
    expect(binary.code).toBe(2);
    expect(binary.stdout.length).toBe(0);
    expect(binary.stderr).toMatch(/--format cloudevents with these options puts what each record says in headers, which stdout has no place for \(hint: write to a sink that carries them: nats:\/\/, http:\/\/, https:\/\/\)/);
    const other = await cli(["decode", path, "--format", "cloudevents", "-o", "tombstones"]);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/option tombstones is debezium's: it applies with -o data=debezium, not data=jsonl/);
  });
});
