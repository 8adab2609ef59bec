/**
 * Run by test/row-readers.test.ts as `node --disallow-code-generation-from-strings --import tsx`:
 * the workload's digests with code generation refused, so through the
 * interpreted row readers. Prints one JSON object.
 */
import { createDecoderSync } from "../../bindings/create-decoder.ts";
import { PgoutputWasmPlugin } from "../../bindings/compat/plugin.ts";
import { generated } from "../../bindings/generated-code.ts";
import { compatDigest, decoderDigest, workload } from "./row-workload.ts";

const [seed, rows, backend] = process.argv.slice(2);
const messages = workload(Number(seed), Number(rows));
const refused = generated(() => new Function("return 1")) === undefined;
const b = backend as "wasm" | "baseline";
const plugin = new PgoutputWasmPlugin({ protoVersion: 1, publicationNames: ["p"], backend: b });
process.stdout.write(JSON.stringify({
  refused,
  decoder: decoderDigest(createDecoderSync({ backend: b }), messages),
  compat: compatDigest((x) => plugin.parse(x), messages),
}));
