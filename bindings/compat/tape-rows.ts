/**
 * The drop-in's rows, read straight from a TUPLE of the tape (tape.ts: its
 * column count, then each column's kind-byte offset). The relation's
 * compiled reader (row-code.ts) does it where there is one; this loop does
 * the same where code generation is refused: each text value through the
 * column's fast parser (pg-defaults.ts) or its type parser, binary values
 * copied once per row into memory the plugin owns (slab.ts), then the
 * relation's row builder (rows.ts). Both paths use it: a record (record.ts)
 * and a tuple view (convert.ts, through rawTuple).
 */
import { KIND_BINARY as KIND_B, KIND_TEXT as KIND_T, KIND_UNCHANGED as KIND_U } from "../tape.ts";
import { readString } from "../utf8.ts";
import { NOT_FAST } from "./fast-parsers.ts";
import type { RowPlan } from "./relations.ts";
import { Slab } from "./slab.ts";
import { tupleEnd } from "./row-code.ts";
import type * as T from "./types.ts";

/** The kernel memory a tuple is read from: bytes, and the tape as words. */
export interface TapeWords {
  u8: Uint8Array;
  dv: DataView;
  t: Int32Array;
}

export class TapeRows {
  readonly #slab = new Slab();
  /** The column values of the row being built (one array, refilled per row). */
  readonly #values: unknown[] = [];

  /** A row from the TUPLE at tape word `w`; an unchanged TOASTed column takes `fallback`'s value (the old row), else `undefined`. */
  row(mem: TapeWords, w: number, plan: RowPlan, fallback: T.Row | null | undefined): T.Row {
    const { u8, dv, t } = mem;
    const { names, parsers, fast } = plan;
    const n = t[w]!;
    if (plan.read !== undefined && n === names.length) return plan.read(u8, dv, t, w, fallback, this.#slab);
    const vals = this.#values;
    let copy: Uint8Array | undefined;
    let shift = 0;
    for (let i = 0; i < n; i++) {
      const p = t[w + 1 + i]!;
      const k = u8[p];
      if (k === KIND_T) {
        const len = dv.getInt32(p + 1);
        const f = fast[i];
        let v: unknown = NOT_FAST;
        if (f !== undefined) v = f(u8, p + 5, len);
        vals[i] = v === NOT_FAST ? parsers[i]!(readString(u8, p + 5, len)) : v;
      } else if (k === KIND_B) {
        const len = dv.getInt32(p + 1);
        if (copy === undefined) {
          shift = this.#slab.copy(u8, p, tupleEnd(u8, dv, t, w)) - p;
          copy = this.#slab.held;
        }
        const from = p + 5 + shift;
        vals[i] = copy.subarray(from, from + len);
      } else if (k === KIND_U) {
        vals[i] = fallback?.[names[i]!];
      } else {
        vals[i] = null;
      }
    }
    // The kernel checked the tuple's width against the relation's; a converter fed another decoder's
    // relations could still disagree, and then gets pg-logical-replication's row of the first n columns.
    if (n === names.length) return plan.build(vals);
    const row: T.Row = Object.create(null);
    for (let i = 0; i < n; i++) row[names[i]!] = vals[i];
    return row;
  }

  /** The key columns of a key TUPLE at word `w` (the others are NULL placeholders there); a NULL key value becomes `undefined`. */
  key(mem: TapeWords, w: number, plan: RowPlan): T.Row {
    const row = this.row(mem, w, plan, undefined);
    const { names, keys } = plan;
    const vals = this.#values;
    for (let j = 0; j < keys.length; j++) {
      const v = row[names[keys[j]!]!];
      vals[j] = v === null ? undefined : v;
    }
    return plan.buildKey(vals);
  }
}
