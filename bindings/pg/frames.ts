/**
 * The frontend messages the stream writes on the socket itself once it has
 * taken the connection over from `pg` (see socket.ts): Query for
 * START_REPLICATION, CopyData for standby status updates, CopyDone to end
 * the stream. Each is `[type byte][Int32 length counting itself][body]`.
 */

const encoder = new TextEncoder();

function frame(type: number, bodyLength: number): { bytes: Uint8Array; body: number } {
  const bytes = new Uint8Array(5 + bodyLength);
  bytes[0] = type;
  new DataView(bytes.buffer).setInt32(1, 4 + bodyLength);
  return { bytes, body: 5 };
}

/** `Q` Query: the SQL text and its terminating zero byte. */
export function queryFrame(sql: string): Uint8Array {
  const text = encoder.encode(sql);
  const { bytes, body } = frame(0x51, text.length + 1);
  bytes.set(text, body);
  return bytes;
}

/** `d` CopyData around a payload (a standby status update). */
export function copyDataFrame(payload: Uint8Array): Uint8Array {
  const { bytes, body } = frame(0x64, payload.length);
  bytes.set(payload, body);
  return bytes;
}

/** `c` CopyDone. */
export function copyDoneFrame(): Uint8Array {
  return frame(0x63, 0).bytes;
}
