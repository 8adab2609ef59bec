/**
 * Code made at run time (`new Function`): the row builders and readers made
 * once per relation. Where code generation is refused (a
 * Content-Security-Policy without 'unsafe-eval', `node
 * --disallow-code-generation-from-strings`) every such maker falls back to
 * its plain interpreted form; the refusal is remembered after the first.
 */

let allowed: boolean | undefined;

/** `make()`'s result, or `undefined` where code generation is refused (its EvalError). Other errors are bugs and propagate. */
export function generated<T>(make: () => T): T | undefined {
  if (allowed === false) return undefined;
  try {
    const made = make();
    allowed = true;
    return made;
  } catch (e) {
    if (!(e instanceof EvalError)) throw e;
    allowed = false;
    return undefined;
  }
}
