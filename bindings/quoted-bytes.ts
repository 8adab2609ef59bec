/**
 * Bytes that came from outside (a server's first answer, a file's first
 * bytes) as a quoted, terminal-safe string for an error message: printable
 * ASCII as it is, `"` and `\` escaped, CR and LF as `\r` `\n`, every other
 * byte `\xNN`. A reader sees what was sent, and no byte of it reaches the
 * terminal raw.
 */
export function quotedBytes(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) {
    if (b === 0x22 || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else if (b === 0x0a) out += "\\n";
    else if (b === 0x0d) out += "\\r";
    else out += `\\x${b.toString(16).padStart(2, "0")}`;
  }
  return `"${out}"`;
}
