/**
 * The messages of one streamed transaction, held from its first block to its
 * StreamCommit: in memory while every log sharing a `HeldBudget` fits in it,
 * else in a temporary file of its own. So holding a transaction of any size
 * costs at most the budget (plus a write buffer per spilled log).
 *
 * The file is removed from the directory as soon as it is opened: it lives
 * only as long as its descriptor, which the kernel closes however the
 * process ends (an exception, a signal, kill -9), so no run leaves one
 * behind, with no hook or watchdog to rely on. (Where an open file cannot
 * be unlinked, Windows, it is removed on close and at exit.)
 *
 * Each entry is stored with the subtransaction that made it; a StreamAbort
 * of a subtransaction marks it aborted, and reading skips its entries
 * (PostgreSQL sends nothing more of a subtransaction it aborted).
 *
 * File format, repeated: [uint32 length][uint32 subXid, 0 for none][bytes].
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** Memory shared by the logs of one holder (a resequencer, an assembler). */
export class HeldBudget {
  /** Bytes held in memory now. */
  used = 0;
  /** The most reached. */
  highWater = 0;
  /** Logs that went to a file. */
  spills = 0;

  /**
   * @param limit bytes the logs may hold in memory together; a log that would pass it goes to a file.
   * @param dir where the files are made (default: the OS temp directory).
   */
  constructor(readonly limit: number, readonly dir: string = os.tmpdir()) {
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`a held memory limit must be a non-negative integer, not ${String(limit)}`);
  }
}

const RECORD_HEADER = 8;
/** Bytes gathered before a write to the file. */
const WRITE_BUFFER = 1 << 20;
/** Bytes read from the file at a time (more when one entry is larger). */
const READ_BUFFER = 4 << 20;

let fileCounter = 0;
/** Files that could not be unlinked while open: removed at exit. */
const linked = new Set<string>();
let exitHooked = false;

export class HeldLog {
  readonly #budget: HeldBudget;
  #items: Uint8Array[] = [];
  #subs: number[] = [];
  /** Bytes of #items, counted in the budget. */
  #memory = 0;
  #file: { fd: number; path: string | undefined; size: number; buf: Uint8Array; len: number } | undefined;
  readonly #aborted = new Set<number>();
  /** Entries, and their bytes, including those of aborted subtransactions. */
  #count = 0;
  #bytes = 0;
  #closed = false;

  constructor(budget: HeldBudget) {
    this.#budget = budget;
  }

  /** Entries added (aborted subtransactions' included). */
  get count(): number {
    return this.#count;
  }

  /** Bytes added. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Whether the log went to a file. */
  get spilled(): boolean {
    return this.#file !== undefined;
  }

  /** Adds an entry (kept: the log takes ownership of `bytes`); `sub` is its subtransaction, 0 for an entry no abort removes. */
  add(bytes: Uint8Array, sub: number): void {
    if (this.#closed) throw new TypeError("this held transaction was closed");
    this.#count++;
    this.#bytes += bytes.length;
    const budget = this.#budget;
    if (this.#file === undefined && budget.used + bytes.length > budget.limit) this.#spill();
    if (this.#file !== undefined) {
      this.#write(bytes, sub);
      return;
    }
    this.#items.push(bytes);
    this.#subs.push(sub);
    this.#memory += bytes.length;
    budget.used += bytes.length;
    if (budget.used > budget.highWater) budget.highWater = budget.used;
  }

  /** StreamAbort of a subtransaction: its entries are skipped from now on. */
  abort(sub: number): void {
    this.#aborted.add(sub);
  }

  /**
   * The entries in order, without those of aborted subtransactions, in
   * chunks of about `chunkBytes`. A chunk's arrays are valid until the next
   * chunk is asked for (a spilled log reuses its read buffer).
   */
  *chunks(chunkBytes: number): Generator<Uint8Array[]> {
    if (this.#file === undefined) {
      const items = this.#items;
      const subs = this.#subs;
      for (let i = 0; i < items.length; ) {
        const chunk: Uint8Array[] = [];
        for (let bytes = 0; i < items.length && (chunk.length === 0 || bytes + items[i]!.length <= chunkBytes); i++) {
          if (this.#aborted.has(subs[i]!)) continue;
          chunk.push(items[i]!);
          bytes += items[i]!.length;
        }
        if (chunk.length > 0) yield chunk;
      }
      return;
    }
    yield* this.#fileChunks(chunkBytes);
  }

  /** Frees the memory and the file. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#budget.used -= this.#memory;
    this.#memory = 0;
    this.#items = [];
    this.#subs = [];
    const file = this.#file;
    this.#file = undefined;
    if (file === undefined) return;
    fs.closeSync(file.fd);
    if (file.path !== undefined) {
      fs.rmSync(file.path, { force: true });
      linked.delete(file.path);
    }
  }

  /** Moves what is in memory to a new file; what comes later goes there too. */
  #spill(): void {
    const budget = this.#budget;
    const name = path.join(budget.dir, `pgoutputwasm-held-${process.pid}-${++fileCounter}-${Date.now().toString(36)}`);
    const fd = fs.openSync(name, "wx+", 0o600);
    let kept: string | undefined;
    try {
      fs.unlinkSync(name);
    } catch {
      kept = name;
      linked.add(name);
      if (!exitHooked) {
        exitHooked = true;
        process.on("exit", () => {
          for (const p of linked) fs.rmSync(p, { force: true });
        });
      }
    }
    this.#file = { fd, path: kept, size: 0, buf: new Uint8Array(WRITE_BUFFER), len: 0 };
    budget.spills++;
    const items = this.#items;
    const subs = this.#subs;
    budget.used -= this.#memory;
    this.#memory = 0;
    this.#items = [];
    this.#subs = [];
    for (let i = 0; i < items.length; i++) this.#write(items[i]!, subs[i]!);
  }

  #write(bytes: Uint8Array, sub: number): void {
    const file = this.#file!;
    if (file.len + RECORD_HEADER + bytes.length > file.buf.length) this.#flush();
    const header = new DataView(file.buf.buffer, file.buf.byteOffset + file.len, RECORD_HEADER);
    header.setUint32(0, bytes.length);
    header.setUint32(4, sub >>> 0);
    file.len += RECORD_HEADER;
    if (RECORD_HEADER + bytes.length > file.buf.length) {
      this.#flush(); // the header alone; a large entry is written from its own bytes
      writeAll(file.fd, bytes, file.size);
      file.size += bytes.length;
      return;
    }
    file.buf.set(bytes, file.len);
    file.len += bytes.length;
  }

  #flush(): void {
    const file = this.#file!;
    if (file.len === 0) return;
    writeAll(file.fd, file.buf.subarray(0, file.len), file.size);
    file.size += file.len;
    file.len = 0;
  }

  *#fileChunks(chunkBytes: number): Generator<Uint8Array[]> {
    this.#flush();
    const file = this.#file!;
    let buf = new Uint8Array(Math.max(READ_BUFFER, chunkBytes + RECORD_HEADER));
    let pos = 0; // file position of buf[0]
    let have = 0; // valid bytes in buf
    let at = 0; // the next record's offset in buf
    const size = file.size;
    const fill = (): void => {
      // Keeps the unread tail, then reads after it.
      buf.copyWithin(0, at, have);
      pos += at;
      have -= at;
      at = 0;
      while (have < buf.length && pos + have < size) {
        const n = fs.readSync(file.fd, buf, have, buf.length - have, pos + have);
        if (n === 0) throw new Error("a held transaction's file ended early");
        have += n;
      }
    };
    fill();
    while (at < have) {
      const chunk: Uint8Array[] = [];
      let bytes = 0;
      for (;;) {
        if (at + RECORD_HEADER > have) {
          if (chunk.length > 0 || at === have && pos + have >= size) break;
          if (pos + have >= size) throw new Error("a held transaction's file ended inside an entry");
          fill();
          continue;
        }
        const dv = new DataView(buf.buffer, buf.byteOffset + at, RECORD_HEADER);
        const len = dv.getUint32(0);
        const sub = dv.getUint32(4);
        if (at + RECORD_HEADER + len > have) {
          if (chunk.length > 0) break; // the chunk's arrays must not move: read on at the next chunk
          if (pos + have >= size) throw new Error("a held transaction's file ended inside an entry");
          if (RECORD_HEADER + len > buf.length) {
            const bigger = new Uint8Array(RECORD_HEADER + len);
            bigger.set(buf.subarray(at, have));
            pos += at;
            have -= at;
            at = 0;
            buf = bigger;
          }
          fill();
          continue;
        }
        if (chunk.length > 0 && bytes + len > chunkBytes) break;
        at += RECORD_HEADER;
        if (!this.#aborted.has(sub)) {
          chunk.push(buf.subarray(at, at + len));
          bytes += len;
        }
        at += len;
      }
      if (chunk.length > 0) yield chunk;
      if (at >= have && pos + have < size) fill();
    }
  }
}

function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  for (let off = 0; off < bytes.length; ) off += fs.writeSync(fd, bytes, off, bytes.length - off, position + off);
}
