/**
 * JSON.parse that keeps each number as its exact text (`{ $number: "1.50" }`),
 * so two documents compare equal only when every digit is the same
 * (numerics of a thousand digits, bigints past 2^53, `1.50` vs `1.5`).
 */

export interface RawNumber {
  $number: string;
}

export type RawJsonValue = null | boolean | string | RawNumber | RawJsonValue[] | { [key: string]: RawJsonValue };

export function parseRawJson(text: string): RawJsonValue {
  let i = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at ${i} in ${JSON.stringify(text.slice(Math.max(0, i - 20), i + 20))}`);
  };
  const space = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  /** The members of an object or array, from its opening character to `close`, separated by commas. */
  const members = (close: "}" | "]", member: () => void): void => {
    i++;
    space();
    if (text[i] === close) {
      i++;
      return;
    }
    for (;;) {
      member();
      space();
      if (text[i] === ",") i++;
      else if (text[i] === close) {
        i++;
        return;
      } else fail(`expected , or ${close}`);
    }
  };
  const value = (): RawJsonValue => {
    space();
    const c = text[i];
    if (c === "{") {
      const out: { [key: string]: RawJsonValue } = {};
      members("}", () => {
        space();
        if (text[i] !== '"') fail("expected a key");
        const key = string();
        space();
        if (text[i++] !== ":") fail("expected :");
        out[key] = value();
      });
      return out;
    }
    if (c === "[") {
      const out: RawJsonValue[] = [];
      members("]", () => out.push(value()));
      return out;
    }
    if (c === '"') return string();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i));
    if (m === null) return fail("unexpected character");
    i += m[0].length;
    return { $number: m[0] };
  };
  const string = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    if (i >= text.length) fail("unterminated string");
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const out = value();
  space();
  if (i !== text.length) fail("trailing text");
  return out;
}
