/**
 * What the CLI prints on stderr that came from outside — server errors,
 * details, notices, pg's and Node's messages, the user's connection string —
 * goes through `outside()`: passwords removed (`redact()`, with the
 * connection's passwords remembered here) and control characters made
 * harmless (`printable()`), so a hostile server cannot recolor the terminal,
 * move the cursor, retitle the window or fake a line.
 */
import { connectionSecrets, redact } from "../redact.ts";

/** The passwords of this run's connection (one process, one connection). */
const secrets = new Set<string>();

/** Remembers the passwords in a connection string (parsed or not) and any given directly. */
export function rememberSecrets(connection: string | undefined, ...passwords: (string | undefined)[]): void {
  if (connection !== undefined) for (const s of connectionSecrets(connection)) secrets.add(s);
  for (const p of passwords) if (typeof p === "string" && p.length > 0) secrets.add(p);
}

/** `redact()` with this run's passwords. */
export function redactCli(text: string): string {
  return redact(text, secrets);
}

// Whole escape sequences, removed: CSI (ESC [ ... final byte, or the C1 CSI),
// OSC / DCS / SOS / PM / APC strings up to BEL or ST, and two-byte escapes.
const ESCAPES =
  /\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]|[\x1b][\]P^_X][\s\S]*?(?:\x07|\x1b\\|$)|[\x9d\x90\x98\x9e\x9f][\s\S]*?(?:\x07|\x9c|$)|\x1b[ -/]*[0-~]/g;

// What is left of C0 (but tab and newline), DEL, C1, and the bidirectional
// overrides that reorder what is shown: escaped, visibly.
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` safe to write to a terminal: escape sequences removed, other control characters as `\xNN` / `\uNNNN`. */
export function printable(text: string): string {
  return text.replace(ESCAPES, "").replace(CONTROLS, (c) => {
    const n = c.charCodeAt(0);
    return n <= 0xff ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u${n.toString(16).padStart(4, "0")}`;
  });
}

/** Outside text for stderr: redacted, then printable. */
export function outside(text: string): string {
  return printable(redactCli(text));
}
