/**
 * JSON-safe forms of typed values, for JSON Lines output: bigint as a
 * decimal string (exact), bytes as base64, Date as ISO, the unchanged-TOAST
 * marker as `{"unchanged": true}`, arrays and plain objects (interval,
 * timetz) converted member by member.
 */
import { unchangedToast } from "../tuple.ts";
import { toBase64 } from "../utf8.ts";

export function toJsonValue(value: unknown): unknown {
  switch (typeof value) {
    case "bigint":
      return value.toString();
    case "number":
      // JSON has no NaN or Infinity: keep them as PostgreSQL spells them.
      return Number.isFinite(value) ? value : value > 0 ? "Infinity" : value < 0 ? "-Infinity" : "NaN";
    case "symbol":
      return value === unchangedToast ? { unchanged: true } : String(value);
    case "object": {
      if (value === null) return null;
      if (value instanceof Uint8Array) return { base64: toBase64(value) };
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
      if (Array.isArray(value)) return value.map(toJsonValue);
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = toJsonValue(v);
      return out;
    }
    default:
      return value;
  }
}
