/**
 * A table's state in a backfill: where it got to (the last key handed
 * over, the keys to read again, done), as `BackfillProgress` to resume
 * from, and where its key columns are in the stream's relation.
 */
import type { BackfillProgress } from "../backfill-items.ts";
import type { Relation } from "../relation.ts";
import type { BackfillTable } from "./backfill-catalog.ts";
import { keyText } from "./backfill-keys.ts";

export interface TableState {
  table: BackfillTable;
  lastKey: readonly string[] | null;
  /** Keys to read again, by key string of their texts. */
  reread: Map<string, readonly string[]>;
  done: boolean;
  rows: number;
  chunks: number;
  /** Positions of the key columns in the stream's relation (by name), cached per Relation object. */
  live: { relation: Relation; positions: number[] | undefined } | undefined;
}

/** A table's state to start with: after its `progress` from an earlier backfill, if any. */
export function tableState(table: BackfillTable, progress: BackfillProgress | undefined): TableState {
  const reread = new Map((progress?.reread ?? []).map((k) => [keyText(k), [...k]] as const));
  return { table, lastKey: progress?.lastKey ?? null, reread, done: progress?.done === true, rows: 0, chunks: 0, live: undefined };
}

export function progressOf(state: TableState, lastKey: readonly string[] | null, reread: readonly (readonly string[])[], done: boolean): BackfillProgress {
  return { table: state.table.qualified, lastKey, reread: reread.map((k) => [...k]), done };
}

/** Positions of the key's columns in the stream's Relation (by name), or undefined when one is missing. */
export function livePositions(state: TableState, relation: Relation): number[] | undefined {
  if (state.live?.relation !== relation) {
    const names = relation.columns.map((c) => c.name);
    const positions = state.table.key.map((k) => names.indexOf(k.name));
    state.live = { relation, positions: positions.some((p) => p < 0) ? undefined : positions };
  }
  return state.live.positions;
}
