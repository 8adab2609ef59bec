/**
 * Both kernels on one memory image: a KernelExports whose memory is a wasm
 * instance's, and whose decode() first copies that memory into a TS kernel
 * (bindings/baseline/kernel.ts), runs both with the same arguments, and
 * compares the status, every result word, the tape words the call wrote and
 * the relation width table, word for word. A TapeDecoder driving it goes
 * through every path the real decoders take (framings, push with pending
 * frames, tape and table growth and resume), so a test or fuzz run with it
 * checks the TS port against the kernel on every call it makes.
 *
 * A difference throws KernelMismatch (not a PgoutputError), so the fuzz
 * suites report it as a foreign error.
 */
import type { DecoderOptions } from "../../bindings/decoder.ts";
import type { KernelExports } from "../../bindings/kernel/exports.ts";
import { TapeDecoder } from "../../bindings/kernel/decoder.ts";
import { createKernel } from "../../bindings/baseline/kernel.ts";
import { instantiate, kernelModule } from "../../bindings/wasm/module.ts";
import { RESULT_WORDS, TABLE_CAPACITY, TABLE_HEADER_WORDS } from "../../bindings/tape.ts";

export class KernelMismatch extends Error {}

/** Kernel calls compared so far (all twins), so a test can assert it compared something. */
export const twinStats = { calls: 0, words: 0 };

function words(buffer: ArrayBufferLike, at: number, n: number): Int32Array {
  return new Int32Array(buffer, at, n);
}

function firstDifference(a: Int32Array, b: Int32Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** A wasm instance and a TS kernel, compared on every decode(); textTimestamp too. */
export function twinKernel(makeTs: () => KernelExports = createKernel): KernelExports {
  const wasm = instantiate(kernelModule());
  const ts = makeTs();
  const tsMemory = ts.memory;
  /** Makes the TS kernel's memory an exact copy of the wasm memory. */
  function mirror(from = 0, to = Infinity): void {
    const src = wasm.memory.buffer;
    const have = tsMemory.buffer.byteLength;
    if (have < src.byteLength) tsMemory.grow((src.byteLength - have) / 65536);
    const bytes = new Uint8Array(src);
    new Uint8Array(tsMemory.buffer).set(bytes.subarray(Math.max(0, from), Math.min(to, bytes.length)), Math.max(0, from));
  }
  return {
    memory: wasm.memory,
    heapBase: () => wasm.heapBase(),
    decode(input, from, length, framing, tape, tapeFrom, tapeCapacity, state, maxMessage, result, widths) {
      mirror();
      const args = [input, from, length, framing, tape, tapeFrom, tapeCapacity, state, maxMessage, result, widths] as const;
      const sw = wasm.decode(...args);
      const st = ts.decode(...args);
      const what = `decode(${args.join(", ")})`;
      if (sw !== st) throw new KernelMismatch(`${what}: status wasm ${sw}, ts ${st}`);
      const rw = words(wasm.memory.buffer, result, RESULT_WORDS);
      const rt = words(tsMemory.buffer, result, RESULT_WORDS);
      const r = firstDifference(rw, rt);
      if (r >= 0) throw new KernelMismatch(`${what}: result word ${r}: wasm ${rw[r]}, ts ${rt[r]}`);
      // Both kernels wrote the same number of words (R_TAPE_USED agreed): compare all of them.
      const used = rw[1]!;
      const tw = words(wasm.memory.buffer, tape, used);
      const tt = words(tsMemory.buffer, tape, used);
      const t = firstDifference(tw, tt);
      if (t >= 0) throw new KernelMismatch(`${what}: tape word ${t}: wasm ${tw[t]}, ts ${tt[t]}`);
      let n = used + RESULT_WORDS;
      if (widths !== 0) {
        const size = TABLE_HEADER_WORDS + 2 * words(wasm.memory.buffer, widths, 1)[TABLE_CAPACITY]!;
        const aw = words(wasm.memory.buffer, widths, size);
        const at = words(tsMemory.buffer, widths, size);
        const w = firstDifference(aw, at);
        if (w >= 0) throw new KernelMismatch(`${what}: width table word ${w}: wasm ${aw[w]}, ts ${at[w]}`);
        n += size;
      }
      twinStats.calls++;
      twinStats.words += n;
      return sw;
    },
    textTimestamp(offset, length, withZone) {
      mirror(offset, offset + length); // all it reads
      const a = wasm.textTimestamp(offset, length, withZone);
      const b = ts.textTimestamp(offset, length, withZone);
      if (a !== b) throw new KernelMismatch(`textTimestamp(${offset}, ${length}, ${withZone}): wasm ${a}, ts ${b}`);
      return a;
    },
  };
}

/** A decoder over the twin kernel: decodes as the wasm decoder does, and checks the TS kernel on every call. */
export class TwinDecoder extends TapeDecoder {
  readonly backend = "wasm" as const;
  constructor(options: DecoderOptions = {}) {
    super(options, () => twinKernel());
  }
}
