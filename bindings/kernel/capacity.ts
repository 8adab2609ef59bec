/**
 * How large a tape decoder (either kernel) lays out its input region and tape for a call,
 * within what the kernel can address. The kernel's input positions and tape
 * offsets are i32, and the binding indexes the tape and the width table as
 * Int32Array words (`address >> 2`), so the whole layout
 * [result | input | tape | width table] must end at or below 2^31 bytes. A
 * call that needs more is refused here, as a typed OUT_OF_MEMORY, before any
 * memory grows and before anything is copied; the decoder keeps its layout
 * and stays usable.
 *
 * All arithmetic is plain (no `>>`, `|0`): sizes here can exceed 2^31, where
 * int32 operators wrap.
 */
import { PgoutputError } from "../errors.ts";

/** One past the last byte the kernel can address. */
export const ADDRESSABLE = 2 ** 31;

const PAGE = 65536;

/** Input region capacity in bytes, tape capacity in 4-byte words. */
export interface Capacities {
  readonly input: number;
  readonly tape: number;
}

/** Where the layout ends (exclusive): the tape starts 16-aligned after the input, the table after the tape. */
export function layoutEnd(inputStart: number, c: Capacities, tableBytes: number): number {
  return roundUp(inputStart + c.input, 16) + c.tape * 4 + tableBytes;
}

/** The error for a call whose input the kernel cannot address. */
export function unaddressable(inputBytes: number, needed: number): PgoutputError {
  return new PgoutputError(
    `an input of ${inputBytes} bytes needs ${needed} bytes of kernel memory, beyond the ${ADDRESSABLE} the kernel addresses (i32 offsets); decode it in smaller pieces`,
    { code: "OUT_OF_MEMORY", offset: 0 },
  );
}

/**
 * The capacities for a call that copies `bytes` of input and needs `words`
 * of tape (the tape is otherwise sized from the input, ~1 word per 4 bytes),
 * given the `current` ones; undefined when they already suffice. Never
 * smaller than the current input region (it may hold a pushed partial
 * frame). Rounds up generously, for a stream's varying chunks; near the
 * address limit it gives up the slack and sizes the tape to what is left
 * (it grows on demand: `grownTape`). Throws OUT_OF_MEMORY when even the
 * input alone does not fit.
 */
export function planCapacities(inputStart: number, bytes: number, words: number, current: Capacities, tableBytes: number): Capacities | undefined {
  const estimate = Math.floor(bytes / 4) + 1024;
  const tapeWords = Math.max(words, estimate);
  if (bytes <= current.input && tapeWords <= current.tape) return undefined;
  const generous = {
    input: Math.max(current.input, roundUp(bytes + bytes / 8, PAGE)),
    tape: Math.max(current.tape, roundUp(tapeWords, PAGE / 4)),
  };
  if (layoutEnd(inputStart, generous, tableBytes) <= ADDRESSABLE) return generous;
  const input = Math.max(current.input, roundUp(bytes, PAGE));
  const room = Math.floor((ADDRESSABLE - tableBytes - roundUp(inputStart + input, 16)) / 4);
  const tight = { input, tape: Math.max(words, 1024, Math.min(tapeWords, room)) };
  const end = layoutEnd(inputStart, tight, tableBytes);
  if (end > ADDRESSABLE) throw unaddressable(bytes, end);
  return tight;
}

/** The tape after a TAPE_FULL: doubled, or what is left below the address limit; OUT_OF_MEMORY when nothing is. */
export function grownTape(inputStart: number, current: Capacities, tableBytes: number, inputBytes: number): number {
  const doubled = { input: current.input, tape: current.tape * 2 };
  if (layoutEnd(inputStart, doubled, tableBytes) <= ADDRESSABLE) return doubled.tape;
  const room = Math.floor((ADDRESSABLE - tableBytes - roundUp(inputStart + current.input, 16)) / 4);
  if (room <= current.tape) throw unaddressable(inputBytes, layoutEnd(inputStart, doubled, tableBytes));
  return room;
}

function roundUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}
