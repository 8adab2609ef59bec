/**
 * Both kernels on one memory image: a KernelExports whose memory is a TS
 * kernel's (bindings/baseline/kernel.ts), and whose decode() first copies
 * that memory into a wasm instance, runs both kernels with the same
 * arguments, and compares the status, every result word, the tape words the
 * call wrote and the relation width table, word for word (jsonColumns: the
 * status, result words and output bytes; jsonLines: those, the line
 * entries and the line area's state). A TapeDecoder
 * driving it goes through every path the real decoders take (framings, push
 * with pending frames, tape and table growth and resume), so a test or fuzz
 * run with it checks the TS build against the wasm one on every call it makes.
 *
 * The wasm instance is scratch, shared by every twin in the process (each
 * call overwrites what it reads, and decode() resets the kernel's globals):
 * a fuzz run makes a decoder per case limit, and a wasm instance each would
 * exhaust the address space V8 reserves for wasm memories before GC frees
 * them. It is made with the WebAssembly.Instance of when this module loaded,
 * so memory trackers installed later (devkit/fuzz/fuzz.ts) do not count it.
 *
 * A difference throws KernelMismatch (not a PgoutputError), so the fuzz
 * suites report it as a foreign error.
 */
import type { DecoderOptions } from "../../bindings/decoder.ts";
import type { KernelExports } from "../../bindings/kernel/exports.ts";
import { TapeDecoder } from "../../bindings/kernel/decoder.ts";
import { createKernel } from "../../bindings/baseline/kernel.ts";
import { kernelModule } from "../../bindings/wasm/module.ts";
import { RESULT_WORDS, TABLE_CAPACITY, TABLE_HEADER_WORDS } from "../../bindings/tape.ts";
import { JF_AS_PORTABLE, JR_WORDS, JR_WRITTEN } from "../../bindings/jsonl-tape.ts";
import { JR_LINES, LE_WORDS, LS_STATE_BYTES } from "../../bindings/line-templates.ts";

const Instance = WebAssembly.Instance;
let scratch: KernelExports | undefined;

function wasmScratch(): KernelExports {
  return (scratch ??= new Instance(kernelModule(), {}).exports as unknown as KernelExports);
}

export class KernelMismatch extends Error {}

/** Kernel calls compared so far (all twins), so a test can assert it compared something. */
export const twinStats = { calls: 0, words: 0, json: 0 };

function words(buffer: ArrayBufferLike, at: number, n: number): Int32Array {
  return new Int32Array(buffer, at, n);
}

function firstDifference(a: Int32Array, b: Int32Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** A TS kernel and the shared wasm instance, compared on every decode(); textTimestamp too. */
export function twinKernel(makeTs: () => KernelExports = createKernel): KernelExports {
  const wasm = wasmScratch();
  const ts = makeTs();
  // Above both kernels' own data (the wasm kernel keeps its statics below its heapBase).
  const heapBase = Math.max(wasm.heapBase(), ts.heapBase());
  /** Makes the wasm memory from heapBase an exact copy of the TS kernel's (or of [from, to) of it). */
  function mirror(from = heapBase, to = Infinity): void {
    const src = ts.memory.buffer;
    const have = wasm.memory.buffer.byteLength;
    if (have < src.byteLength) wasm.memory.grow((src.byteLength - have) / 65536);
    const bytes = new Uint8Array(src);
    const at = Math.max(heapBase, from);
    if (at < bytes.length) new Uint8Array(wasm.memory.buffer).set(bytes.subarray(at, Math.min(to, bytes.length)), at);
  }
  /**
   * One call on both kernels, the wasm memory a copy of the TS one first: the
   * same status and the same `resultWords` result words, or a KernelMismatch
   * naming the call. Returns the status, the result words and the call's name.
   */
  function call(name: string, args: readonly number[], run: (k: KernelExports) => number, result: number, resultWords: number): { status: number; rw: Int32Array; what: string } {
    mirror();
    const sw = run(wasm);
    const st = run(ts);
    const what = `${name}(${args.join(", ")})`;
    if (sw !== st) throw new KernelMismatch(`${what}: status wasm ${sw}, ts ${st}`);
    const rw = words(wasm.memory.buffer, result, resultWords);
    const rt = words(ts.memory.buffer, result, resultWords);
    const r = firstDifference(rw, rt);
    if (r >= 0) throw new KernelMismatch(`${what}: result word ${r}: wasm ${rw[r]}, ts ${rt[r]}`);
    return { status: st, rw, what };
  }
  return {
    memory: ts.memory,
    heapBase: () => heapBase,
    decode(input, from, length, framing, tape, tapeFrom, tapeCapacity, state, maxMessage, result, widths) {
      const args = [input, from, length, framing, tape, tapeFrom, tapeCapacity, state, maxMessage, result, widths] as const;
      const { status: st, rw, what } = call("decode", args, (k) => k.decode(...args), result, RESULT_WORDS);
      // Both kernels wrote the same number of words (R_TAPE_USED agreed): compare all of them.
      const used = rw[1]!;
      const tw = words(wasm.memory.buffer, tape, used);
      const tt = words(ts.memory.buffer, tape, used);
      const t = firstDifference(tw, tt);
      if (t >= 0) throw new KernelMismatch(`${what}: tape word ${t}: wasm ${tw[t]}, ts ${tt[t]}`);
      let n = used + RESULT_WORDS;
      if (widths !== 0) {
        const size = TABLE_HEADER_WORDS + 2 * words(ts.memory.buffer, widths, 1)[TABLE_CAPACITY]!;
        const aw = words(wasm.memory.buffer, widths, size);
        const at = words(ts.memory.buffer, widths, size);
        const w = firstDifference(aw, at);
        if (w >= 0) throw new KernelMismatch(`${what}: width table word ${w}: wasm ${aw[w]}, ts ${at[w]}`);
        n += size;
      }
      twinStats.calls++;
      twinStats.words += n;
      return st;
    },
    textTimestamp(offset, length, withZone) {
      mirror(offset, offset + length); // all it reads
      const a = wasm.textTimestamp(offset, length, withZone);
      const b = ts.textTimestamp(offset, length, withZone);
      if (a !== b) throw new KernelMismatch(`textTimestamp(${offset}, ${length}, ${withZone}): wasm ${a}, ts ${b}`);
      return b;
    },
    // Both builds as the TS one can write (JF_AS_PORTABLE): the wasm build alone has u64, for some floats.
    jsonColumns(tuple, old, columns, from, flags, out, outCapacity, result) {
      const args = [tuple, old, columns, from, flags | JF_AS_PORTABLE, out, outCapacity, result] as const;
      const { status: st, rw, what } = call("jsonColumns", args, (k) => k.jsonColumns(...args), result, JR_WORDS);
      const written = rw[JR_WRITTEN]!;
      const bw = new Uint8Array(wasm.memory.buffer, out, written);
      const bt = new Uint8Array(ts.memory.buffer, out, written);
      for (let i = 0; i < written; i++) {
        if (bw[i] !== bt[i]) throw new KernelMismatch(`${what}: output byte ${i}: wasm ${bw[i]}, ts ${bt[i]}`);
      }
      twinStats.calls++;
      twinStats.json += written;
      return st;
    },
    jsonLines(records, count, flags, area, out, outCapacity, lines, linesCapacity, result) {
      mirror();
      const args = [records, count, flags | JF_AS_PORTABLE, area, out, outCapacity, lines, linesCapacity, result] as const;
      const sw = wasm.jsonLines(...args);
      const st = ts.jsonLines(...args);
      const what = `jsonLines(${args.join(", ")})`;
      if (sw !== st) throw new KernelMismatch(`${what}: status wasm ${sw}, ts ${st}`);
      const rw = words(wasm.memory.buffer, result, JR_WORDS);
      const rt = words(ts.memory.buffer, result, JR_WORDS);
      const r = firstDifference(rw, rt);
      if (r >= 0) throw new KernelMismatch(`${what}: result word ${r}: wasm ${rw[r]}, ts ${rt[r]}`);
      const regions: [string, number, number][] = [
        ["output byte", out, rt[JR_WRITTEN]!],
        ["line entry byte", lines, rt[JR_LINES]! * LE_WORDS * 4],
        ["line state byte", area, LS_STATE_BYTES],
      ];
      for (const [name, at, n] of regions) {
        const bw = new Uint8Array(wasm.memory.buffer, at, n);
        const bt = new Uint8Array(ts.memory.buffer, at, n);
        for (let i = 0; i < n; i++) if (bw[i] !== bt[i]) throw new KernelMismatch(`${what}: ${name} ${i}: wasm ${bw[i]}, ts ${bt[i]}`);
      }
      twinStats.calls++;
      twinStats.json += rt[JR_WRITTEN]!;
      return st;
    },
  };
}

/** A decoder over the twin kernel: decodes as both decoders do, and checks the kernels against each other on every call. */
export class TwinDecoder extends TapeDecoder {
  readonly backend = "baseline" as const;
  constructor(options: DecoderOptions = {}) {
    super(options, () => twinKernel());
  }

  fork(): TwinDecoder {
    return new TwinDecoder(this.options);
  }
}
