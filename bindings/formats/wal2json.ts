/**
 * `wal2json`: the JSON the wal2json output plugin writes, from pgoutput —
 * `format-version` 1 (one document per transaction, wal2json's default) or
 * 2 (one per change, with B/C records), with wal2json's options, defaults
 * and spellings (wal2json-options.ts), checked against the real plugin
 * (test/wal2json.test.ts). What pgoutput does not carry, and so differs or
 * is refused, is listed in docs/cli-output.md.
 *
 * @example
 * ```ts
 * const decoder = await createDecoder({ values: wal2json.values(types) });
 * const format = wal2json.create({ decoder }, { "format-version": "2", "include-xids": true });
 * ```
 */
import type { FormatDefinition } from "../pipeline/format.ts";
import { WAL2JSON_OPTIONS, wal2jsonSettings } from "./wal2json-options.ts";
import { Wal2jsonV1 } from "./wal2json-v1.ts";
import { Wal2jsonV2 } from "./wal2json-v2.ts";

export const wal2json: FormatDefinition = {
  name: "wal2json",
  summary: "the wal2json plugin's JSON (format-version 1 or 2, its options; docs/cli-output.md)",
  options: WAL2JSON_OPTIONS,
  check: (options) => {
    wal2jsonSettings(options);
  },
  // Values are written from the text the server sent; the catalog's knowledge names arrays of user types.
  values: (types) => (types === undefined ? {} : { types }),
  create: (context, options) => {
    const settings = wal2jsonSettings(options);
    return settings.version === 1 ? new Wal2jsonV1(settings, context.decoder.types, context.decoder) : new Wal2jsonV2(settings, context.decoder.types, context.decoder);
  },
};
