// Copied as consumer.ts next to the installed package by scripts/pack-check.mjs (kept as .txt so the
// repository's own tsconfig, which includes test/, does not try to resolve "pgoutput-wasm").
// Type-checks against the installed package (strict, skipLibCheck off):
// the public surface a consumer uses, narrowed by `kind`.
import {
  BaselineDecoder, PgoutputError, WasmDecoder, createDecoder, formatLsn, isPgoutputError, parseLsn, timestampToISO,
  unchangedToast, wasmSupport,
  type Batch, type CreateDecoderOptions, type PgoutputDecoder, type PgoutputMessage, type WasmSupport,
} from "pgoutput-wasm";

const options: CreateDecoderOptions = { backend: "auto", onFallback: (reason: string) => console.warn(reason) };
const decoder: PgoutputDecoder = await createDecoder(options);
const backend: "wasm" | "baseline" = decoder.backend;
const support: WasmSupport = wasmSupport();
const why: string | undefined = support.supported ? undefined : support.reason;

function describe(msg: PgoutputMessage): string {
  switch (msg.kind) {
    case "Begin":
      return `begin ${msg.xid} ${formatLsn(msg.finalLsn)} ${timestampToISO(msg.commitTime)}`;
    case "Commit":
      return `commit ${formatLsn(msg.commitLsn)}`;
    case "Insert": {
      const name: string | null | typeof unchangedToast = msg.newTuple.text(0);
      return `insert into ${msg.relation?.name ?? msg.relationId}: ${String(name)}`;
    }
    case "Update":
      return msg.newTuple.text("body") === unchangedToast ? "unchanged TOAST" : "update";
    default:
      return msg.kind;
  }
}

const batch: Batch = decoder.decodeBatch([new Uint8Array([0x45])]);
for (const msg of batch) console.log(describe(msg));
try {
  decoder.decode(new Uint8Array([0x42]));
} catch (e) {
  if (isPgoutputError(e) && e.incomplete) console.log(e.code, e.offset);
  if (e instanceof PgoutputError) console.log(e.messageKind);
}
const wasm: WasmDecoder = await WasmDecoder.create({ maxMessageSize: 1 << 20 });
const base: BaselineDecoder = new BaselineDecoder();
const lsn: bigint = parseLsn("16/B374D848");
console.log(backend, why, wasm.backend, base.backend, lsn);
