/**
 * Where column values get their JS types: pg's text parsers. pg-logical-
 * replication's PgoutputPlugin looks up `pg.types.getTypeParser(typeOid)` for
 * every column when the Relation message arrives; doing the same (with the
 * same `pg` instance) gives identical values — int8 and numeric as strings,
 * timestamps as `Date`, json parsed, arrays parsed, bytea as `Buffer`, and any
 * parser the application registered with `pg.types.setTypeParser`.
 *
 * `pg` is this package's dependency, and in a flat install the very `pg`
 * the application and pg-logical-replication use; it is loaded
 * (synchronously, with Node's `createRequire`) only when the first Relation
 * message needs it and no `typeParsers` source was given.
 */
import { createRequire } from "node:module";

/** A text parser: the column's text → its JS value. */
export type TypeParser = (text: string) => any;

/** Anything with pg's `getTypeParser`: `pg.types`, the `pg-types` module, or a client's type overrides. */
export interface TypeParserSource {
  getTypeParser(oid: number, format?: "text"): TypeParser;
}

let loaded: TypeParserSource | undefined;

/** `pg.types` of the `pg` package this package resolves (the one pg-logical-replication uses in a flat install). */
export function pgTypes(): TypeParserSource {
  if (loaded !== undefined) return loaded;
  let pg: { types?: TypeParserSource };
  try {
    pg = createRequire(import.meta.url)("pg") as { types?: TypeParserSource };
  } catch (e) {
    throw new Error(
      "pgoutput-wasm/pg-logical-replication: cannot load `pg` for its type parsers; install pg or pass the `typeParsers` option " +
        `(${e instanceof Error ? e.message : String(e)})`,
    );
  }
  if (typeof pg.types?.getTypeParser !== "function") {
    throw new Error("pgoutput-wasm/pg-logical-replication: the loaded `pg` has no types.getTypeParser; pass the `typeParsers` option");
  }
  return (loaded = pg.types);
}
