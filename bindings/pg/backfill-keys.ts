/**
 * A backfill's keys, compared between a chunk's rows and the stream's
 * changes: as the bytes of their columns (keyString), as the texts a chunk
 * is bounded and read again by (keyTexts), and the map key of those texts
 * (keyText).
 */
import type { Tuple } from "../tuple.ts";

/**
 * A row's key as one string of its columns' bytes (text or binary, as
 * sent: the chunk is copied in the stream's format, so equal keys are equal
 * bytes); undefined when a key column is unchanged TOAST.
 */
export function keyString(tuple: Tuple, positions: readonly number[]): string | undefined {
  let out = "";
  for (const p of positions) {
    const kind = tuple.kind(p);
    if (kind === "unchanged") return undefined;
    if (kind === "null") {
      out += "n;";
      continue;
    }
    const bytes = tuple.bytes(p) as Uint8Array;
    let s = "";
    for (let i = 0; i < bytes.length; i += 4096) s += String.fromCharCode(...bytes.subarray(i, i + 4096));
    out += `${bytes.length}:${s}`;
  }
  return out;
}

/** A key's column texts from a live row: as sent in text format; in binary, from values whose JS text is a valid input of the type. */
export function keyTexts(tuple: Tuple, positions: readonly number[]): string[] | undefined {
  const out: string[] = [];
  for (const p of positions) {
    const kind = tuple.kind(p);
    if (kind === "text") out.push(tuple.text(p) as string);
    else if (kind === "binary") {
      const v = tuple.value(p);
      if (typeof v !== "number" && typeof v !== "bigint" && typeof v !== "string" && typeof v !== "boolean") return undefined;
      out.push(String(v));
    } else return undefined;
  }
  return out;
}

/** The map key of a key's texts. */
export function keyText(texts: readonly string[]): string {
  return JSON.stringify(texts);
}
