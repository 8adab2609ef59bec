/**
 * The `tables` option the JSON formats share: only changes of these tables,
 * each `schema.table` or a bare `table` (in any schema); `pg_catalog` is
 * the namespace PostgreSQL sends as "".
 */
import type { Relation } from "../relation.ts";

/** Whether a relation is wanted; `undefined` (no filter) for an empty list. */
export function tableFilter(tables: readonly string[] | undefined): ((rel: Relation | undefined) => boolean) | undefined {
  if (tables === undefined || tables.length === 0) return undefined;
  const qualified = new Set<string>();
  const bare = new Set<string>();
  for (const t of tables) (t.includes(".") ? qualified : bare).add(t);
  return (rel) => rel !== undefined && (bare.has(rel.name) || qualified.has(`${rel.namespace === "" ? "pg_catalog" : rel.namespace}.${rel.name}`));
}
