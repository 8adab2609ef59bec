/**
 * `capture`: the messages as the server sent them, each
 * `[uint32 big-endian length][message bytes]` (its `bytes()`: the
 * XLogData payload after its 25-byte header) — the capture file that
 * `decode` and captureSource() read back, for bug reports and benchmarks.
 * Streamed blocks are kept as they came (raw); RelationChanged and Ddl
 * items are not recorded (reading the capture back derives them from the
 * messages, which are). A snapshot row is no
 * pgoutput message: it has no place in a capture, and is refused.
 */
import { isDerived, type Format, type FormatDefinition, type FormatItem } from "../pipeline/format.ts";
import type { Records } from "../pipeline/records.ts";

class CaptureFrames implements Format {
  readonly keepsMessages = true;

  push(item: FormatItem, out: Records): void {
    // Derived from the messages, which are recorded: decoding the capture derives them again.
    if (item.kind === "RelationChanged" || item.kind === "Ddl") return;
    if (item.kind === "SnapshotRow") throw new TypeError("the capture format records pgoutput messages, and a snapshot row is none: capture without --snapshot");
    const payload = item.bytes();
    const n = payload.length;
    const bytes = out.bytes;
    bytes.ensure(4 + n);
    bytes.buf[bytes.len] = n >>> 24;
    bytes.buf[bytes.len + 1] = (n >>> 16) & 0xff;
    bytes.buf[bytes.len + 2] = (n >>> 8) & 0xff;
    bytes.buf[bytes.len + 3] = n & 0xff;
    bytes.len += 4;
    bytes.bytes(payload);
    out.end("message", undefined, isDerived(item));
  }

  reset(): void {}
}

export const capture: FormatDefinition = {
  name: "capture",
  summary: "the messages' bytes, [uint32 big-endian length][message]... (decode reads it)",
  raw: true,
  options: {},
  values: (types) => (types === undefined ? {} : { types }),
  create: () => new CaptureFrames(),
};
