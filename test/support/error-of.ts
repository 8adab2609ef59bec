import { isPgoutputError, type PgoutputError } from "../../bindings/errors.ts";

/** The PgoutputError `fn` throws; anything else it throws is rethrown, and not throwing fails. */
export function errorOf(fn: () => unknown): PgoutputError {
  try {
    fn();
  } catch (e) {
    if (isPgoutputError(e)) return e;
    throw e;
  }
  throw new Error("no error");
}
