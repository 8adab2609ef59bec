/**
 * Finds every `.slice` in TypeScript source (comments skipped) with the
 * expression it is applied to, for test/no-buffer-slice.test.ts. The
 * receiver is read backwards over an identifier chain with its balanced
 * `(…)` / `[…]` groups; argument lists are shown as `(…)` so a key stays
 * stable when arguments change: `createHash("sha256").update(x).digest("hex")`
 * → `createHash(…).update(…).digest(…)`.
 */

export interface SliceUse {
  /** 1-based line of the `.slice`. */
  line: number;
  /** The receiver, arguments elided; a string literal receiver as `"…"`. */
  receiver: string;
  /** The source line, trimmed, for messages. */
  text: string;
}

/** Blanks out comments (keeping newlines and string contents, so positions and lines stay). */
export function stripComments(src: string): string {
  let out = "";
  let quote = "";
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (quote !== "") {
      out += c;
      if (c === "\\") out += src[++i] ?? "";
      else if (c === quote) quote = "";
      continue;
    }
    if (c === '"' || c === "'" || c === "`") {
      quote = c;
      out += c;
    } else if (c === "/" && src[i + 1] === "/") {
      while (i < src.length && src[i] !== "\n") i++;
      out += "\n";
    } else if (c === "/" && src[i + 1] === "*") {
      const end = src.indexOf("*/", i + 2);
      const stop = end < 0 ? src.length : end + 2;
      out += src.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop - 1;
    } else out += c;
  }
  return out;
}

const OPEN: Record<string, string> = { ")": "(", "]": "[" };

/** The receiver of the `.` at `dot`. */
export function receiverAt(code: string, dot: number): string {
  let i = dot - 1;
  const parts: string[] = [];
  for (;;) {
    const c = code[i];
    if (c === undefined) break;
    if (c === ")" || c === "]") {
      // Back to the matching opener.
      let depth = 0;
      let j = i;
      for (; j >= 0; j--) {
        const d = code[j]!;
        if (d === ")" || d === "]") depth++;
        else if (d === "(" || d === "[") depth--;
        if (depth === 0) break;
      }
      parts.unshift(c === ")" ? "(…)" : code.slice(j, i + 1));
      i = j - 1;
      if (OPEN[c] === "(" && !/[\w$]/.test(code[i] ?? "")) break; // a parenthesized expression: `(a ?? b).slice`
      continue;
    }
    if (c === "!" || c === "?") {
      // A non-null assertion or optional chain: `xs[i]!.slice`, `a?.slice`.
      parts.unshift(c);
      i--;
      continue;
    }
    if (c === '"' || c === "'" || c === "`") {
      parts.unshift('"…"');
      break;
    }
    const m = /[\w$#]+$/.exec(code.slice(Math.max(0, i - 200), i + 1));
    if (m === null) break;
    parts.unshift(m[0]);
    i -= m[0].length;
    if (code[i] !== ".") break;
    parts.unshift(".");
    i--;
  }
  return parts.join("").replace(/^\.+/, ""); // a spread's dots: `...xs.slice`
}

/** Every `.slice` of a source file. */
export function sliceUses(src: string): SliceUse[] {
  const code = stripComments(src);
  const lines = src.split("\n");
  const out: SliceUse[] = [];
  for (const m of code.matchAll(/\.\s*slice\b/g)) {
    const line = code.slice(0, m.index).split("\n").length;
    out.push({ line, receiver: receiverAt(code, m.index), text: lines[line - 1]!.trim() });
  }
  return out;
}
