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
/** The first slab's size; each next one doubles, up to SLAB_MAX (a small transaction costs a small slab). */
const SLAB_MIN = 4 << 10;
const SLAB_MAX = 1 << 20;
/** Bytes read from the file at a time (more when one entry is larger). */
const READ_BUFFER = 4 << 20;

let fileCounter = 0;
/** Files that could not be unlinked while open: removed at exit. */
const linked = new Set<string>();
let exitHooked = false;

/**
 * Entries are written as records into slabs: the full ones kept in memory,
 * or, once the log spilled, written to its file (the current slab is then
 * its write buffer). One record format in memory and on disk, one reader.
 */
export class HeldLog {
  readonly #budget: HeldBudget;
  /** Full slabs (memory only), each the bytes of whole records. */
  #slabs: Uint8Array[] = [];
  #slab: Uint8Array;
  #len = 0;
  /** Slab bytes counted in the budget. */
  #memory = 0;
  #file: { fd: number; path: string | undefined; size: number } | undefined;
  readonly #aborted = new Set<number>();
  #count = 0;
  #bytes = 0;
  #closed = false;

  constructor(budget: HeldBudget) {
    this.#budget = budget;
    this.#slab = new Uint8Array(0);
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

  /**
   * Adds an entry: `head` then `body`, copied (they may be views into memory
   * that is reused); `sub` is its subtransaction, 0 for an entry no abort removes.
   */
  add(head: Uint8Array, body: Uint8Array, sub: number): void {
    if (this.#closed) throw new TypeError("this held transaction was closed");
    const size = head.length + body.length;
    this.#count++;
    this.#bytes += size;
    if (this.#len + RECORD_HEADER + size > this.#slab.length) this.#nextSlab(RECORD_HEADER + size);
    const slab = this.#slab;
    const dv = new DataView(slab.buffer, slab.byteOffset + this.#len, RECORD_HEADER);
    dv.setUint32(0, size);
    dv.setUint32(4, sub >>> 0);
    slab.set(head, this.#len + RECORD_HEADER);
    slab.set(body, this.#len + RECORD_HEADER + head.length);
    this.#len += RECORD_HEADER + size;
    if (this.#file !== undefined && slab.length > SLAB_MAX) {
      // A write buffer grown for one large entry is not kept.
      this.#flush();
      this.#slab = new Uint8Array(SLAB_MAX);
    }
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
      for (const slab of [...this.#slabs, this.#slab.subarray(0, this.#len)]) yield* this.#records(slab, chunkBytes);
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
    this.#slabs = [];
    this.#slab = new Uint8Array(0);
    this.#len = 0;
    const file = this.#file;
    this.#file = undefined;
    if (file === undefined) return;
    fs.closeSync(file.fd);
    if (file.path !== undefined) {
      fs.rmSync(file.path, { force: true });
      linked.delete(file.path);
    }
  }

  /** The current slab is full: keep it (memory) or write it out (file), and start one that fits `need`. */
  #nextSlab(need: number): void {
    const budget = this.#budget;
    if (this.#file === undefined) {
      const size = Math.max(need, Math.min(SLAB_MAX, Math.max(SLAB_MIN, this.#slab.length * 2)));
      if (budget.used + size > budget.limit) this.#spill();
      else {
        if (this.#len > 0) this.#slabs.push(this.#slab.subarray(0, this.#len));
        this.#slab = new Uint8Array(size);
        this.#len = 0;
        this.#memory += size;
        budget.used += size;
        if (budget.used > budget.highWater) budget.highWater = budget.used;
        return;
      }
    }
    this.#flush();
    if (need > this.#slab.length) this.#slab = new Uint8Array(Math.max(need, SLAB_MAX));
  }

  /** Moves what is in memory to a new file; what comes later goes there too, through one slab. */
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
    const file = (this.#file = { fd, path: kept, size: 0 });
    budget.spills++;
    for (const slab of this.#slabs) {
      writeAll(fd, slab, file.size);
      file.size += slab.length;
    }
    this.#slabs = [];
    // The current slab stays as the write buffer: outside the budget from now on.
    budget.used -= this.#memory;
    this.#memory = 0;
    if (this.#slab.length < SLAB_MAX) {
      const buf = new Uint8Array(SLAB_MAX);
      buf.set(this.#slab.subarray(0, this.#len));
      this.#slab = buf;
    }
  }

  #flush(): void {
    const file = this.#file!;
    if (this.#len === 0) return;
    writeAll(file.fd, this.#slab.subarray(0, this.#len), file.size);
    file.size += this.#len;
    this.#len = 0;
  }

  /** The records of a region of whole records, in chunks. */
  *#records(region: Uint8Array, chunkBytes: number): Generator<Uint8Array[]> {
    let at = 0;
    while (at < region.length) {
      const chunk: Uint8Array[] = [];
      let bytes = 0;
      while (at < region.length) {
        const dv = new DataView(region.buffer, region.byteOffset + at, RECORD_HEADER);
        const len = dv.getUint32(0);
        if (chunk.length > 0 && bytes + len > chunkBytes) break;
        at += RECORD_HEADER;
        if (!this.#aborted.has(dv.getUint32(4))) {
          chunk.push(region.subarray(at, at + len));
          bytes += len;
        }
        at += len;
      }
      if (chunk.length > 0) yield chunk;
    }
  }

  /** The file's records: read a buffer of whole records at a time (grown for an entry larger than it). */
  *#fileChunks(chunkBytes: number): Generator<Uint8Array[]> {
    this.#flush();
    const { fd, size } = this.#file!;
    let buf = new Uint8Array(Math.max(READ_BUFFER, chunkBytes + RECORD_HEADER));
    for (let pos = 0; pos < size; ) {
      let have = 0;
      while (have < buf.length && pos + have < size) {
        const n = fs.readSync(fd, buf, have, buf.length - have, pos + have);
        if (n === 0) throw new Error("a held transaction's file ended early");
        have += n;
      }
      // The whole records in what was read.
      let whole = 0;
      while (whole + RECORD_HEADER <= have) {
        const len = new DataView(buf.buffer, buf.byteOffset + whole, RECORD_HEADER).getUint32(0);
        if (whole + RECORD_HEADER + len > have) break;
        whole += RECORD_HEADER + len;
      }
      if (whole === 0) {
        if (have < RECORD_HEADER) throw new Error("a held transaction's file ended inside an entry");
        const len = new DataView(buf.buffer, buf.byteOffset, RECORD_HEADER).getUint32(0);
        if (RECORD_HEADER + len <= buf.length) throw new Error("a held transaction's file ended inside an entry");
        buf = new Uint8Array(RECORD_HEADER + len);
        continue;
      }
      yield* this.#records(buf.subarray(0, whole), chunkBytes);
      pos += whole;
    }
  }
}

function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  for (let off = 0; off < bytes.length; ) off += fs.writeSync(fd, bytes, off, bytes.length - off, position + off);
}
