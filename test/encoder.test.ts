/**
 * The encoder against real PostgreSQL: every message of the golden captures
 * in test/fixtures (PostgreSQL 15 and 18, protocols 1-4), decoded by each
 * backend and built again by the encoder from the materialized value, must
 * give back the server's very bytes — and the encoder's expected value must
 * be what the backend materialized. So the encoder writes what the server
 * writes, not only what our reading of the docs says.
 */
import * as fs from "node:fs";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { backend } from "./support/backends.ts";
import { deepEqual, encodeValue, hex } from "../devkit/encoder/encoder.ts";

const dir = new URL("./fixtures/", import.meta.url);
const index = JSON.parse(fs.readFileSync(new URL("index.json", dir), "utf8")) as { fixtures: { file: string }[] };

function readCapture(file: string): Uint8Array[] {
  const bytes = gunzipSync(fs.readFileSync(new URL(file, dir)));
  const out: Uint8Array[] = [];
  for (let p = 0; p < bytes.length;) {
    const n = bytes.readUInt32BE(p);
    out.push(new Uint8Array(bytes.subarray(p + 4, p + 4 + n)));
    p += 4 + n;
  }
  return out;
}

describe(backend.name, () => {
  for (const { file } of index.fixtures) {
    it(`re-encodes ${file} byte for byte`, async () => {
      const d = await backend.create();
      const messages = readCapture(file);
      expect(messages.length).toBeGreaterThan(0);
      for (let i = 0; i < messages.length; i++) {
        const real = messages[i]!;
        const value = d.decode(real).materialize();
        const again = encodeValue(value);
        if (!deepEqual(again.bytes, real)) {
          expect(hex(again.bytes, 400), `${file} message ${i} (${value.kind}) re-encoded`).toBe(hex(real, 400));
        }
        if (!deepEqual(again.expected, value)) expect(value, `${file} message ${i}`).toEqual(again.expected);
      }
    });
  }
});
