// The file sink (bindings/sinks/file.ts) on a real file system: what a
// write resolved for is in the file, in order, whether the writes come one
// at a time or many at once (group commit: those that arrive while a flush
// runs go together); a .gz file decompresses to exactly the bytes written,
// its trailer included; `truncate` replaces a file, the default appends;
// a failed write (ENOSPC on /dev/full) rejects with a SinkError, and so
// does every write after it.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { Records } from "../bindings/pipeline/records.ts";
import { SinkError } from "../bindings/pipeline/sink.ts";
import { fileSink } from "../bindings/sinks/file.ts";
import { openSink } from "../bindings/sinks/index.ts";

const dir = mkdtempSync(join(tmpdir(), "pgoutputwasm-file-sink-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A batch of one record holding `text`. */
function batch(text: string): Records {
  const r = new Records();
  r.bytes.str(text);
  r.end("insert");
  return r;
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i} ${"x".repeat((i * 37) % 500)}\n`);

describe("file sink", () => {
  it("writes one after another and many at once: the file holds every batch, in order", async () => {
    const path = join(dir, "many.jsonl");
    const sink = await openSink(`file:${path}`);
    const first = lines(5);
    for (const l of first) await sink.write(batch(l));
    const rest = lines(300).slice(5);
    const order: number[] = [];
    await Promise.all(rest.map((l, i) => sink.write(batch(l)).then(() => order.push(i))));
    expect(order).toEqual(rest.map((_, i) => i)); // resolved in the order written
    await sink.close();
    expect(readFileSync(path, "utf8")).toBe([...first, ...rest].join(""));
  });

  it(".gz: decompresses to exactly the bytes written, after each write (sync flush) and complete after close", async () => {
    const path = join(dir, "out.jsonl.gz");
    const sink = await fileSink(path);
    const all = lines(40);
    await sink.write(batch(all[0]!));
    // What a write resolved for can be read back before the file is closed (a crash next loses nothing acknowledged).
    const partial = gunzipSync(readFileSync(path), { finishFlush: 2 /* Z_SYNC_FLUSH */ }).toString();
    expect(partial).toBe(all[0]);
    await Promise.all(all.slice(1).map((l) => sink.write(batch(l))));
    await sink.close();
    expect(gunzipSync(readFileSync(path)).toString()).toBe(all.join("")); // the gzip trailer is there: no "unexpected end of file"
  });

  it("appends by default; truncate replaces", async () => {
    const path = join(dir, "kept.txt");
    writeFileSync(path, "before\n");
    const append = await fileSink(path);
    await append.write(batch("after\n"));
    await append.close();
    expect(readFileSync(path, "utf8")).toBe("before\nafter\n");
    const replace = await fileSink(path, { truncate: true });
    await replace.write(batch("only\n"));
    await replace.close();
    expect(readFileSync(path, "utf8")).toBe("only\n");
  });

  it("a write that fails rejects with a SinkError naming the file, and every write after it too", async () => {
    if (!existsSync("/dev/full")) return;
    const sink = await fileSink("/dev/full", { fsync: false });
    const results = await Promise.allSettled([sink.write(batch("a\n")), sink.write(batch("b\n"))]);
    const again = await sink.write(batch("c\n")).then(() => undefined, (e: unknown) => e);
    for (const r of [...results.map((x) => (x.status === "rejected" ? x.reason : undefined)), again]) {
      expect(r).toBeInstanceOf(SinkError);
      expect((r as SinkError).message).toMatch(/^file: cannot write \/dev\/full: .*ENOSPC/);
    }
    await sink.close();
  });

  it("a file that cannot be opened: a SinkError", async () => {
    await expect(fileSink(join(dir, "no", "such", "dir", "x.bin"))).rejects.toThrow(/^file: cannot open .*ENOENT/);
  });
});
